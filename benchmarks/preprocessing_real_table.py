"""The private scaler, PCA and density on statsmodels' randhie table, against their non-private twins.

Run: python benchmarks/preprocessing_real_table.py [--seed 0] [--pca-seeds 10]

randhie's 9 covariates (20,190 rows; several 0/1, ``disea`` heavy-tailed).
``DPStandardScaler`` at epsilon 1 with private bounds, against the
table's means and standard deviations; ``DPPCA`` (epsilon 1 and 10) on
the standardised table, the smallest cosine of the principal angles
between its top-k subspace and non-private PCA's (k = 2, 3, 5; median and
smallest over ``--pca-seeds`` seeds, and how many fits warned that the
components are not separated from the noise); and
``PrivateGaussianDensity`` (epsilon 1) on the standardised table, its
mean log-likelihood of the table against the non-private Gaussian's. The
quick start quotes these numbers.
"""

import argparse
import warnings

import numpy as np
import statsmodels.api as sm
from _common import print_table
from scipy.linalg import subspace_angles
from scipy.stats import multivariate_normal

from skdp.decomposition import DPPCA
from skdp.density import PrivateGaussianDensity
from skdp.preprocessing import DPStandardScaler


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pca-seeds", type=int, default=10)
    args = parser.parse_args()
    frame = sm.datasets.randhie.load_pandas().exog.astype(float)
    X = frame.to_numpy()
    mean, sd = X.mean(0), X.std(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scaler = DPStandardScaler(epsilon=1.0, random_state=args.seed).fit(X)
    rows = [[f"scaler: mean error / sd, {c}", abs(m - t) / s]
            for c, m, t, s in zip(frame.columns, scaler.mean_, mean, sd)]
    rows += [[f"scaler: scale / sd - 1, {c}", sc / s - 1]
             for c, sc, s in zip(frame.columns, scaler.scale_, sd)]
    Z = (X - mean) / sd
    vectors = np.linalg.eigh(np.cov(Z.T))[1]
    for eps in (1.0, 10.0):
        for k in (2, 3, 5):
            cosines, warned = [], 0
            for seed in range(args.pca_seeds):
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    pca = DPPCA(n_components=k, epsilon=eps, random_state=seed).fit(Z)
                warned += any("not separated" in str(w.message) for w in caught)
                cosines.append(np.cos(subspace_angles(vectors[:, -k:], pca.components_.T)).min())
            rows.append([f"DPPCA top-{k} cosine, epsilon {eps:g}: median, smallest, warned",
                         f"{np.median(cosines):.3f}, {min(cosines):.3f}, {warned} of "
                         f"{args.pca_seeds}"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        density = PrivateGaussianDensity(epsilon=1.0, random_state=args.seed).fit(Z)
    nonprivate = multivariate_normal(Z.mean(0), np.cov(Z.T, bias=True)).logpdf(Z).mean()
    rows += [["PrivateGaussianDensity mean log-likelihood, epsilon 1", density.score(Z)],
             ["non-private Gaussian mean log-likelihood", nonprivate]]
    print_table(f"randhie, seed {args.seed}", ["quantity", "value"], rows)


if __name__ == "__main__":
    main()
