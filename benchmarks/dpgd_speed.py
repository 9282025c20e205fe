"""Cost of DP-GD: time per iteration vs the two matrix-vector products, and peak memory.

Run: python benchmarks/dpgd_speed.py [--n N] [--p P]

One DP-GD iteration needs X @ theta and X.T @ w; everything else (residuals,
clip factors, noise) is O(n + p). Times are medians over repeats measured in
the same run; peak memory is tracked with tracemalloc (numpy reports its
allocations to it) relative to the size of X.
"""

import argparse
import time
import tracemalloc

import numpy as np
from _common import linear_data, print_table

from skdp.linear_model import DPLinearRegressionGD


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--p", type=int, default=50)
    args = parser.parse_args()
    X, y, _ = linear_data(args.n, args.p)
    theta, w = np.zeros(args.p), np.ones(args.n)

    def two_matvecs():
        return X @ theta, X.T @ w

    reps = 15
    mv = []
    for _ in range(reps):
        t = time.perf_counter()
        two_matvecs()
        mv.append(time.perf_counter() - t)
    iters = 40
    est = DPLinearRegressionGD(n_iter=iters, burn_in=10, population_share=0.0, random_state=0)
    fits = []
    for _ in range(3):
        t = time.perf_counter()
        est.fit(X, y)
        fits.append((time.perf_counter() - t) / iters)
    tracemalloc.start()
    est.fit(X, y)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    per_iter, base = float(np.median(fits)), float(np.median(mv))
    title = f"DP-GD cost, n = {args.n}, p = {args.p} (fit_intercept=True, whole fit / {iters} iterations)"
    print_table(title,
                ["quantity", "value"],
                [["two matvecs (ms)", 1e3 * base], ["one DP-GD iteration (ms)", 1e3 * per_iter],
                 ["ratio (target <= 1.5)", per_iter / base],
                 ["size of X (MB)", X.nbytes / 2**20], ["peak extra memory in fit (MB)", peak / 2**20],
                 ["(X + peak extra) / X (target <= 1.5)", (X.nbytes + peak) / X.nbytes]])


if __name__ == "__main__":
    main()
