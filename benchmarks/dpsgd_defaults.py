"""DPSGDRegressor / DPSGDClassifier at their defaults, against DP-GD and a non-private fit.

Run: python benchmarks/dpsgd_defaults.py [--seeds 3]

Regression: x ~ N(0, I_p), theta* on the unit sphere, noise sd 1, intercept
fitted, delta 1e-6; error ``||coef - theta*||`` averaged over seeds, and its
ratio to DPLinearRegressionGD's at its defaults (targets of issue 26: within
1.5x at epsilon 10 for n >= 10^4, within 2x at epsilon 1 for n >= 10^5).
Classification: scikit-learn's breast-cancer table (569 rows, 30 features),
standardised with the training part's statistics (not private: a stand-in
for public scaling constants), 70/30 splits, epsilon 1, test accuracy.
"""

import argparse
import warnings

import numpy as np
from _common import linear_data, print_table
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skdp.linear_model import DPLinearRegressionGD, DPSGDClassifier, DPSGDRegressor

SETTINGS = [(1_000, 10), (10_000, 10), (10_000, 50), (100_000, 10), (100_000, 100),
            (1_000_000, 20)]


def error(make, X, y, theta, seeds):
    return float(np.mean([np.linalg.norm(make(s).fit(X, y).coef_ - theta) for s in range(seeds)]))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rows = []
    for n, p in SETTINGS:
        X, y, theta = linear_data(n, p)
        for eps in (1.0, 10.0):
            gd = error(lambda s: DPLinearRegressionGD(epsilon=eps, random_state=s), X, y, theta,
                       args.seeds)
            sgd = DPSGDRegressor(epsilon=eps, random_state=0).fit(X, y)
            err = error(lambda s: DPSGDRegressor(epsilon=eps, random_state=s), X, y, theta,
                        args.seeds)
            rows.append([n, p, eps, sgd.batch_size_, sgd.n_iter_, gd, err, err / gd])
    print_table(f"DPSGDRegressor defaults against DPLinearRegressionGD ({args.seeds} seeds)",
                ["n", "p", "epsilon", "batch", "epochs", "DP-GD error", "DP-SGD error",
                 "ratio"], rows)
    X, y = load_breast_cancer(return_X_y=True)
    acc = {"DPSGDClassifier (epsilon 1)": [], "LogisticRegression (not private)": []}
    for seed in range(10):
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=seed)
        scaler = StandardScaler().fit(Xtr)
        Xtr, Xte = scaler.transform(Xtr), scaler.transform(Xte)
        clf = DPSGDClassifier(epsilon=1.0, classes=[0, 1], random_state=seed).fit(Xtr, ytr)
        acc["DPSGDClassifier (epsilon 1)"].append(clf.score(Xte, yte))
        acc["LogisticRegression (not private)"].append(
            LogisticRegression(max_iter=1000).fit(Xtr, ytr).score(Xte, yte))
    print_table("Breast cancer, test accuracy over 10 splits",
                ["estimator", "accuracy"], [[k, float(np.mean(v))] for k, v in acc.items()])


if __name__ == "__main__":
    main()
