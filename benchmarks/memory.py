"""Peak extra memory of a fit, relative to the size of X, in every flow.

Run: python benchmarks/memory.py [--n N] [--p P]

tracemalloc sees every numpy allocation made during the fit (X itself is
allocated before and does not count). Reads that go block by block keep a
few MB of temporaries; a fit on declared bounds keeps one clipped and
rescaled copy of X, which DP-GD's steps read hundreds of times (mapping each
block anew at every step would cost more time than the copy costs memory).
Target (issue 26): at most 1.2 times X in every flow at 10^6 x 20.
"""

import argparse
import tracemalloc
import warnings

from _common import linear_data, print_table
from sklearn.base import is_regressor

from skdp.decomposition import DPPCA
from skdp.linear_model import AdaSSPRegressor, DPLinearRegressionGD
from skdp.preprocessing import DPStandardScaler

BOUNDS = dict(bounds_X=(-6.0, 6.0), bounds_y=(-10.0, 10.0))
FLOWS = {
    "DPLinearRegressionGD, declared bounds": lambda: DPLinearRegressionGD(**BOUNDS),
    "DPLinearRegressionGD, private bounds": lambda: DPLinearRegressionGD(),
    "DPLinearRegressionGD, norm_bound": lambda: DPLinearRegressionGD(norm_bound=8.0),
    "AdaSSPRegressor, declared bounds": lambda: AdaSSPRegressor(**BOUNDS),
    "AdaSSPRegressor, private bounds": lambda: AdaSSPRegressor(),
    "DPStandardScaler, declared bounds": lambda: DPStandardScaler(bounds=(-6.0, 6.0)),
    "DPStandardScaler, private bounds": lambda: DPStandardScaler(),
    "DPPCA": lambda: DPPCA(n_components=3),
}


def peak_ratio(make, X, y) -> float:
    est = make().set_params(random_state=0)
    supervised = is_regressor(est)
    tracemalloc.start()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if supervised:
            est.fit(X, y)
        else:
            est.fit(X)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / X.nbytes


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--p", type=int, default=20)
    args = parser.parse_args()
    X, y, _ = linear_data(args.n, args.p)
    rows = [[name, peak_ratio(make, X, y)] for name, make in FLOWS.items()]
    print_table(f"Peak extra memory of one fit / size of X (n = {args.n:,}, p = {args.p}, "
                f"X = {X.nbytes / 2**20:.0f} MiB)", ["flow", "peak / X"], rows)


if __name__ == "__main__":
    main()
