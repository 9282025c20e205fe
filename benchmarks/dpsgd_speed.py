"""Cost of one DPSGDRegressor / DPSGDClassifier epoch against non-private mini-batch SGD.

Run: python benchmarks/dpsgd_speed.py [--repeats 5]

The non-private epoch does what a careful numpy user would: shuffle once
(one gather of the rows), then for each batch compute the residuals and the
mean gradient (intercept included) and take an SGD step. The private fit
additionally validates the input, computes row norms, clip factors and the
per-step sums, draws the noise (for 'nu': one FFT convolution over the
whole epoch) and, for Adam, keeps two moments. Both are timed alternately
in the same run; the table shows medians and their ratio (target <= 3).
"""

import argparse
import time

import numpy as np
from _common import linear_data, print_table
from scipy.special import expit

from skdp.linear_model import DPSGDClassifier, DPSGDRegressor


def plain_epoch(X, y, batch_size, learning_rate, rng, logistic=False):
    n, p = X.shape
    order = rng.permutation(n)
    X, y = X[order], y[order]
    w = np.zeros(p + 1)
    for start in range(0, n, batch_size):
        Xb, yb = X[start:start + batch_size], y[start:start + batch_size]
        z = Xb @ w[:p] + w[p]
        r = (expit(z) if logistic else z) - yb
        w[:p] -= learning_rate * (Xb.T @ r) / Xb.shape[0]
        w[p] -= learning_rate * r.sum() / Xb.shape[0]
    return w


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rows = []
    pp = "post_processing"
    configs = [("regressor", "sgd", pp, "independent", 1), ("regressor", "sgd", pp, "nu", 1),
               ("regressor", "sgd", pp, "nu", 16), ("regressor", "sgd", pp, "nu", 64),
               ("regressor", "sgd", pp, "nu", 256), ("regressor", "adam", pp, "nu", 64),
               ("regressor", "adam", "bias_correction", "nu", 64),
               ("regressor", "adam", "jme", "nu", 64),
               ("regressor", "adagrad", "scale_then_privatize", "nu", 64),
               ("classifier", "sgd", pp, "nu", 64), ("classifier", "adam", "jme", "nu", 64)]
    for n, d in [(100_000, 20)]:
        X, y, _ = linear_data(n, d)
        labels = (y > 0).astype(int)
        for kind, optimizer, moments, noise, b in configs:
            kw = dict(optimizer=optimizer, private_moments=moments, noise=noise, batch_size=b,
                      random_state=0)
            if kind == "regressor":
                est = DPSGDRegressor(**kw)
                target = y
            else:
                est = DPSGDClassifier(classes=[0, 1], **kw)
                target = labels
            dp, plain = [], []
            for r in range(args.repeats):
                t0 = time.perf_counter()
                est.fit(X, target)
                t1 = time.perf_counter()
                plain_epoch(X, target, b, 0.01, np.random.default_rng(r), kind == "classifier")
                t2 = time.perf_counter()
                dp.append(t1 - t0)
                plain.append(t2 - t1)
            a, c = float(np.median(dp)), float(np.median(plain))
            rows.append([kind, optimizer, moments, noise, b, n, d, 1e3 * c, 1e3 * a, a / c])
    print_table(f"One epoch, medians of {args.repeats} alternating runs (target ratio <= 3)",
                ["model", "optimizer", "moments", "noise", "batch", "N", "d", "non-private (ms)",
                 "private (ms)", "ratio"], rows)


if __name__ == "__main__":
    main()
