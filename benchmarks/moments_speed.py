"""Cost of the moment releases: one release against numpy, a release per row against its draws.

Run: python benchmarks/moments_speed.py [--repeats 5]

Table 1: ``fit`` of a table (one release) against the non-private
computation of the same statistics (``X.mean(0)`` and ``X.T @ X / n``), with
a declared bound and with the private bound (one more pass over the rows).
Table 2: ``release='per_row'`` (a release after every row, every release
kept): identity-shaped JME must draw n (d + d^2) standard normals;
everything else (outer products, scaling, the workload's running sums,
storing every release) should cost less than that again. Memory is the
peak traced by tracemalloc during ``fit`` relative to the n (d + d^2)
releases it keeps. Times are medians of alternating runs in one process.
Per-step costs of correlated noise on long streams: benchmarks/blt_noise.py.
"""

import argparse
import time
import tracemalloc

import numpy as np
from _common import print_table

from skdp.moments import StreamingMomentEstimator


def median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def one_release(repeats):
    n, d = 1_000_000, 10
    X = np.random.default_rng(0).normal(size=(n, d))
    rows = []
    numpy_time = median_time(lambda: (X.mean(axis=0), X.T @ X / n), repeats)
    for label, kw in [("declared bound", {"norm_bound": 8.0}), ("private bound", {})]:
        est = StreamingMomentEstimator(workload="average", random_state=0, **kw)
        t = median_time(lambda: est.fit(X), repeats)
        rows.append([label, numpy_time, t, t / numpy_time])
    print_table(f"Table 1: fit, one release of mean and second moment, n = {n:,}, d = {d} "
                f"(medians of {repeats})", ["bound", "numpy (s)", "skdp fit (s)", "ratio"], rows)


def per_row(repeats):
    n, d = 5000, 64
    X = np.random.default_rng(0).normal(size=(n, d)) / (2 * np.sqrt(d))
    est = StreamingMomentEstimator(release="per_row", store_history=True, norm_bound=1.0,
                                   noise_shaping="identity", random_state=0)
    rng = np.random.default_rng(1)
    draws, fits = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        rng.standard_normal((n, d))
        rng.standard_normal((n, d, d))
        t1 = time.perf_counter()
        est.fit(X)
        t2 = time.perf_counter()
        draws.append(t1 - t0)
        fits.append(t2 - t1)
    tracemalloc.start()
    est.fit(X)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    kept = n * (d + d * d) * 8
    a, b = float(np.median(fits)), float(np.median(draws))
    print_table(f"Table 2: identity JME, a release per row, n = {n}, d = {d} (medians of "
                f"{repeats})", ["quantity", "value"],
                [["draw n(d + d^2) normals (s)", b], ["fit (s)", a], ["ratio (target <= 2)", a / b],
                 ["releases kept (MB)", kept / 2**20], ["peak traced in fit (MB)", peak / 2**20],
                 ["peak / releases", peak / kept]])


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    one_release(args.repeats)
    per_row(args.repeats)


if __name__ == "__main__":
    main()
