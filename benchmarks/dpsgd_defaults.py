"""DPSGDRegressor / DPSGDClassifier at their defaults, against DP-GD and a non-private fit.

Run: python benchmarks/dpsgd_defaults.py [--seeds 3] [--part regression|classification]

Regression: x ~ N(0, I_p), theta* on the unit sphere, noise sd 1, intercept
fitted, delta 1e-6; error ``||coef - theta*||`` averaged over seeds, and its
ratio to DPLinearRegressionGD's at its defaults (targets of issue 26: within
1.5x at epsilon 10 for n >= 10^4, within 2x at epsilon 1 for n >= 10^5).
Classification: scikit-learn's breast-cancer table (569 rows, 30 features),
70/30 splits, epsilon 1, test accuracy, three ways: standardised with the
training part's statistics (not private: a stand-in for public scaling
constants); fully private with ``bounds_X`` from the ranges the table's
documentation publishes (its DESCR, rounded outward to two digits: a data
dictionary; the DESCR's own rounding leaves values of 5 columns just
outside, which are clipped); and fully private as a Pipeline of
DPStandardScaler (the same bounds, epsilon 0.5) and DPSGDClassifier
(epsilon 0.5). The majority class
is 0.63 of the rows.
"""

import argparse
import re
import warnings

import numpy as np
from _common import linear_data, print_table
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skdp.linear_model import DPLinearRegressionGD, DPSGDClassifier, DPSGDRegressor
from skdp.preprocessing import DPStandardScaler

SETTINGS = [(1_000, 10), (10_000, 10), (10_000, 50), (100_000, 10), (100_000, 100),
            (1_000_000, 20)]


def documented_ranges(descr: str):
    """The (min, max) table of the breast-cancer DESCR, rounded outward to two digits."""
    rows = [line.split()[-2:] for line in descr.splitlines()
            if re.search(r"\):\s+[-\d.]+\s+[-\d.]+\s*$", line)]
    values = np.array(rows, dtype=float)
    unit = 10.0 ** (np.floor(np.log10(np.abs(values) + 1e-300)) - 1)
    return np.floor(values[:, 0] / unit[:, 0]) * unit[:, 0], np.ceil(values[:, 1] / unit[:, 1]) * unit[:, 1]


def error(make, X, y, theta, seeds):
    return float(np.mean([np.linalg.norm(make(s).fit(X, y).coef_ - theta) for s in range(seeds)]))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--part", default="all", choices=["all", "regression", "classification"])
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    if args.part != "classification":
        regression(args.seeds)
    if args.part != "regression":
        classification()


def regression(seeds):
    rows = []
    for n, p in SETTINGS:
        X, y, theta = linear_data(n, p)
        for eps in (1.0, 10.0):
            gd = error(lambda s: DPLinearRegressionGD(epsilon=eps, random_state=s), X, y, theta,
                       seeds)
            sgd = DPSGDRegressor(epsilon=eps, random_state=0).fit(X, y)
            err = error(lambda s: DPSGDRegressor(epsilon=eps, random_state=s), X, y, theta,
                        seeds)
            rows.append([n, p, eps, sgd.batch_size_, sgd.n_iter_, gd, err, err / gd])
    print_table(f"DPSGDRegressor defaults against DPLinearRegressionGD ({seeds} seeds)",
                ["n", "p", "epsilon", "batch", "epochs", "DP-GD error", "DP-SGD error",
                 "ratio"], rows)


def classification():
    table = load_breast_cancer()
    X, y = table.data, table.target
    bounds = documented_ranges(table.DESCR)
    assert bounds[0].shape == (X.shape[1],)
    acc = {"DPSGDClassifier, scaled by the training rows (not private)": [],
           "DPSGDClassifier, bounds_X from the documented ranges": [],
           "DPStandardScaler + DPSGDClassifier (epsilon 0.5 each)": [],
           "LogisticRegression (not private)": []}
    for seed in range(10):
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=seed)
        private = [DPSGDClassifier(epsilon=1.0, classes=[0, 1], bounds_X=bounds, random_state=seed),
                   make_pipeline(DPStandardScaler(epsilon=0.5, bounds=bounds, random_state=seed),
                                 DPSGDClassifier(epsilon=0.5, classes=[0, 1], random_state=seed))]
        scores = [model.fit(Xtr, ytr).score(Xte, yte) for model in private]
        scaler = StandardScaler().fit(Xtr)
        Xtr, Xte = scaler.transform(Xtr), scaler.transform(Xte)
        clf = DPSGDClassifier(epsilon=1.0, classes=[0, 1], random_state=seed).fit(Xtr, ytr)
        scores = [clf.score(Xte, yte)] + scores + [
            LogisticRegression(max_iter=1000).fit(Xtr, ytr).score(Xte, yte)]
        for key, score in zip(acc, scores):
            acc[key].append(score)
    print_table("Breast cancer, test accuracy over 10 splits",
                ["estimator", "accuracy"], [[k, float(np.mean(v))] for k, v in acc.items()])


if __name__ == "__main__":
    main()
