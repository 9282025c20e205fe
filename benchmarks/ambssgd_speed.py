"""Cost of one DP-AMBSSGD pass against a non-private mini-batch SGD pass.

Run: python benchmarks/ambssgd_speed.py [--repeats 7]

The non-private pass does what a careful numpy user would: shuffle once,
then for each of the same T steps gather the step's rows, compute the
residuals and the mean gradient (intercept included) and update. DP-AMBSSGD
additionally sorts the stat sample's residuals for DP-STAT, computes row
norms and clip factors, and draws noise. Both are timed alternately in the
same run; the table shows medians and their ratio.
"""

import argparse
import time

import numpy as np
from _common import linear_data, print_table

from skdp.linear_model import DPAMBSSGDRegressor


def plain_pass(X, y, n_steps, learning_rate, rng):
    n, p = X.shape
    perm = rng.permutation(n)
    k = n // n_steps
    w = np.zeros(p + 1)
    tail = np.zeros(p + 1)
    for t in range(n_steps):
        rows = perm[t * k:(t + 1) * k]
        Xt = X[rows]
        r = Xt @ w[:p] + w[p] - y[rows]
        w[:p] -= learning_rate * (Xt.T @ r) / k
        w[p] -= learning_rate * r.sum() / k
        if t >= n_steps // 2:
            tail += w
    return tail / (n_steps - n_steps // 2)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    rows = []
    for n, d in [(100_000, 10), (100_000, 50), (1_000_000, 10), (1_000_000, 50)]:
        X, y, _ = linear_data(n, d)
        est = DPAMBSSGDRegressor(random_state=0)
        est.fit(X, y)  # warm-up; fixes T
        T = est.n_iter_
        dp, plain = [], []
        for r in range(args.repeats):
            t0 = time.perf_counter()
            est.fit(X, y)
            t1 = time.perf_counter()
            plain_pass(X, y, T, 0.5, np.random.default_rng(r))
            t2 = time.perf_counter()
            dp.append(t1 - t0)
            plain.append(t2 - t1)
        a, b = float(np.median(dp)), float(np.median(plain))
        rows.append([n, d, T, est.stat_size_ + est.batch_size_, 1e3 * b, 1e3 * a, a / b])
    print_table(f"One pass, medians of {args.repeats} alternating runs (target ratio <= 2)",
                ["N", "d", "T", "rows/step", "non-private (ms)", "DP-AMBSSGD (ms)", "ratio"], rows)


if __name__ == "__main__":
    main()
