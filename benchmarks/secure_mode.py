"""What secure mode costs: fit time with exact discrete Gaussian grid releases against the default.

Run: python benchmarks/secure_mode.py [--runs 7]

Each estimator fits the same table at its defaults (epsilon 1), default
mode and secure mode alternately, `--runs` times; the table gives the
median times and the median of the per-run ratios (target of issue 25: at
most 5 for DPLinearRegressionGD at 10^5 x 10 and PrivateGaussianDensity at
10^5 x 5). The first secure fit also fills the sampler's pool; it is
included. The last two rows release one small step at a time (DP-SGD's
steps, a stream's rows), where secure mode costs most.
"""

import argparse
import time

import numpy as np
from _common import linear_data, print_table

from skdp.density import PrivateGaussianDensity
from skdp.linear_model import DPLinearRegressionGD, DPSGDRegressor
from skdp.mechanisms import secure_mode
from skdp.moments import StreamingMomentEstimator


def _time(fit):
    start = time.perf_counter()
    fit()
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    X, y, _ = linear_data(100_000, 10)
    cases = [
        ("DPLinearRegressionGD, 100,000 x 10", lambda: DPLinearRegressionGD().fit(X, y)),
        ("PrivateGaussianDensity, 100,000 x 5", lambda: PrivateGaussianDensity().fit(X[:, :5])),
        # One release per step: the history's C x and a grid draw each time.
        ("DPSGDRegressor (nu noise), 100,000 x 10", lambda: DPSGDRegressor().fit(X, y)),
        ("StreamingMomentEstimator per row, 20,000 x 5",
         lambda: StreamingMomentEstimator(release="per_row").fit(X[:20_000, :5])),
    ]
    rows = []
    for name, fit in cases:
        fit()  # warm up imports and caches
        plain, secure = [], []
        for _ in range(args.runs):
            plain.append(_time(fit))
            with secure_mode():
                secure.append(_time(fit))
        ratios = np.array(secure) / np.array(plain)
        rows.append([name, float(np.median(plain)), float(np.median(secure)),
                     float(np.median(ratios)), float(ratios.max())])
    print_table(f"Secure mode / default fit time, median of {args.runs} alternating runs",
                ["estimator", "default (s)", "secure (s)", "median ratio", "max ratio"], rows)


if __name__ == "__main__":
    main()
