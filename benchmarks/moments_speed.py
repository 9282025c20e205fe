"""Cost of StreamingMomentEstimator: time against drawing its Gaussians, and memory.

Run: python benchmarks/moments_speed.py [--repeats 5]

Identity-shaped JME must draw n (d + d^2) standard normals; everything else
(outer products, scaling, the workload's running sums, storing every
release) should cost less than that again. Times are medians of alternating
runs in one process. Memory is the peak traced by tracemalloc during ``fit``
relative to the n (d + d^2) releases it must keep. The second table shows
correlated shapings on a longer stream, fitted at once (FFT) and row by row.
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


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    n, d = 5000, 64
    X = np.random.default_rng(0).normal(size=(n, d)) / (2 * np.sqrt(d))
    est = StreamingMomentEstimator(random_state=0)
    rng = np.random.default_rng(1)
    draws, fits = [], []
    for _ in range(args.repeats):
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
    print_table(f"Identity JME, n = {n}, d = {d} (medians of {args.repeats})",
                ["quantity", "value"],
                [["draw n(d + d^2) normals (s)", b], ["fit (s)", a], ["ratio (target <= 2)", a / b],
                 ["releases kept (MB)", kept / 2**20], ["peak traced in fit (MB)", peak / 2**20],
                 ["peak / releases", peak / kept]])
    rows = []
    for shaping, kw, n_long, d_long in [("identity", {}, 100_000, 8), ("nu", {"nu": 0.05}, 100_000, 8),
                                         ("sqrt", {"n_steps": 100_000}, 100_000, 8),
                                         ("workload_sqrt", {"n_steps": 2000}, 2000, 8)]:
        Xl = np.random.default_rng(2).normal(size=(n_long, d_long)) / (2 * np.sqrt(d_long))
        make = lambda: StreamingMomentEstimator(noise_shaping=shaping, random_state=0, **kw)  # noqa: E731
        whole = median_time(lambda: make().fit(Xl), 1)
        tracemalloc.start()
        make().fit(Xl)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        m = 500
        stream = make().partial_fit(Xl[: n_long - m])
        t = time.perf_counter()
        for row in Xl[n_long - m:]:
            stream.partial_fit(row[None, :])
        per_row = (time.perf_counter() - t) / m
        rows.append([shaping, n_long, d_long, whole, peak / 2**20, 1e3 * per_row])
    print_table("Correlated noise on long streams (JME)",
                ["shaping", "n", "d", "fit (s)", "peak MB", "one more row at t ~ n (ms)"], rows)


if __name__ == "__main__":
    main()
