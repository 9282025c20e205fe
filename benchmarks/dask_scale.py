"""The Dask engine at scale: driver memory, rows per second, DP-GD on persisted data.

Run: python benchmarks/dask_scale.py [--rows 20000000] [--gd-rows 4000000]

Part 1: one-pass estimators on a 2e7 x 10 Dask array generated lazily
(1.6 GB, chunks of 5e5 rows), on a LocalCluster of 2 worker processes. The
driver's memory growth is its resident set size after the fit minus before
(peak sampled every 50 ms); rows per second against the in-memory fit of a
2e6-row numpy table, and against one plain Dask pass over the generated
rows (``X.T @ X``). The Dask time includes generating the rows twice (the
validation pass and the release; three times with a private bound), which
a table read from storage would replace by reading it.

Part 2: DPLinearRegressionGD on 4e6 x 10 rows persisted on the 2 workers
against the same fit in memory (the data identical, the same seed).
"""

import argparse
import threading
import time

import numpy as np
import psutil
from _common import print_table

from skdp.decomposition import DPPCA
from skdp.density import PrivateGaussianDensity
from skdp.linear_model import AdaSSPRegressor, DPLinearRegressionGD
from skdp.moments import StreamingMomentEstimator
from skdp.preprocessing import DPStandardScaler


class PeakRSS:
    """Peak resident set size of this process while the block runs."""

    def __enter__(self):
        self.proc = psutil.Process()
        self.start = self.peak = self.proc.memory_info().rss
        self._stop = False
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def _watch(self):
        while not self._stop:
            self.peak = max(self.peak, self.proc.memory_info().rss)
            time.sleep(0.05)

    def __exit__(self, *exc):
        self._stop = True
        self._thread.join()
        self.growth_mb = (self.peak - self.start) / 2**20


ESTIMATORS = [
    ("StreamingMomentEstimator", lambda: StreamingMomentEstimator(workload="average",
                                                                  norm_bound=10.0,
                                                                  random_state=0)),
    ("PrivateGaussianDensity", lambda: PrivateGaussianDensity(random_state=0)),
    ("DPStandardScaler", lambda: DPStandardScaler(bounds=(-10.0, 10.0), random_state=0)),
    ("DPPCA", lambda: DPPCA(n_components=3, norm_bound=10.0, random_state=0)),
]


def one_pass(rows, client):
    import dask.array as da

    d = 10
    X = da.random.default_rng(0).normal(size=(rows, d), chunks=(500_000, d))
    small = np.random.default_rng(1).normal(size=(2_000_000, d))
    t = time.perf_counter()
    (X.T @ X).compute()  # one plain pass: generate the rows and sum their outer products
    floor = rows / (time.perf_counter() - t) / 1e6
    print(f"A plain Dask pass (X.T @ X of the generated rows): {floor:.2f} Mrows/s")
    out = []
    for name, make in ESTIMATORS:
        t = time.perf_counter()
        make().fit(small)
        mem_rate = small.shape[0] / (time.perf_counter() - t)
        with PeakRSS() as rss:
            t = time.perf_counter()
            make().fit(X)
            elapsed = time.perf_counter() - t
        out.append([name, rows, rss.growth_mb, rows / elapsed / 1e6, mem_rate / 1e6])
    print_table(f"Part 1: one release from a lazily generated {rows:,} x {d} Dask array "
                f"({rows * d * 8 / 2**30:.1f} GB), 2 worker processes",
                ["estimator", "rows", "driver growth (MB)", "Mrows/s dask", "Mrows/s numpy"],
                out)


def dpgd(rows, client):
    import dask.array as da

    d = 10
    # Generated on the workers (as a table read from storage would be), then
    # the same values brought into memory for the in-memory fit.
    Xd = da.random.default_rng(0).normal(size=(rows, d), chunks=(rows // 8, d))
    yd = Xd @ np.linspace(1, -1, d) + da.random.default_rng(1).normal(size=rows,
                                                                       chunks=rows // 8)
    Xd, yd = Xd.persist(), yd.persist()
    X, y = Xd.compute(), yd.compute()
    out = []
    for name, make in [("DPLinearRegressionGD", lambda: DPLinearRegressionGD(random_state=0)),
                       ("AdaSSPRegressor", lambda: AdaSSPRegressor(random_state=0))]:
        t = time.perf_counter()
        ref = make().fit(X, y)
        t_mem = time.perf_counter() - t
        t = time.perf_counter()
        got = make().fit(Xd, yd)
        t_dask = time.perf_counter() - t
        diff = float(np.max(np.abs(got.coef_ - ref.coef_) / np.maximum(np.abs(ref.coef_), 1e-12)))
        out.append([name, rows, t_mem, t_dask, t_dask / t_mem, diff])
    print_table(f"Part 2: {rows:,} x {d} rows persisted on 2 workers against in memory",
                ["estimator", "rows", "in memory (s)", "dask (s)", "ratio", "max rel diff"], out)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--gd-rows", type=int, default=4_000_000)
    args = parser.parse_args()
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        one_pass(args.rows, client)
        dpgd(args.gd_rows, client)


if __name__ == "__main__":
    main()
