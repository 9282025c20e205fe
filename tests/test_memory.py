"""Fits read X block by block: no full-size temporary, at most one mapped copy (issue 26).

tracemalloc sees numpy's allocations. A fit may hold, besides O(q**2)
statistics, a few blocks of rows (each about ``BLOCK_BYTES`` = 4 MiB of X,
:func:`skdp.utils._rows.block_rows_for`) and a few vectors of one float per
row; with declared bounds, DP-GD and AdaSSP also keep one clipped and
rescaled copy of X. The bound below is that budget: 3 blocks and 6 per-row
vectors (about 0.55 times X here), plus the copy where there is one. A
full-size temporary (a second copy of X, as ``X / norm_bound`` used to be)
exceeds it. benchmarks/memory.py prints the ratios at 10^6 x 20.
"""

import tracemalloc
import warnings

import numpy as np
import pytest
from sklearn.base import is_regressor

from skdp.decomposition import DPPCA
from skdp.linear_model import AdaSSPRegressor, DPLinearRegressionGD
from skdp.preprocessing import DPStandardScaler
from skdp.utils._rows import BLOCK_BYTES

N, P = 200_000, 20
BOUNDS = dict(bounds_X=(-6.0, 6.0), bounds_y=(-10.0, 10.0))
FLOWS = [
    ("DPLinearRegressionGD(declared)", lambda: DPLinearRegressionGD(n_iter=30, **BOUNDS), 1),
    ("DPLinearRegressionGD(private)", lambda: DPLinearRegressionGD(n_iter=30), 0),
    ("DPLinearRegressionGD(norm_bound)", lambda: DPLinearRegressionGD(n_iter=30, norm_bound=8.0),
     0),
    ("AdaSSPRegressor(declared)", lambda: AdaSSPRegressor(**BOUNDS), 1),
    ("AdaSSPRegressor(private)", lambda: AdaSSPRegressor(), 0),
    ("DPStandardScaler(declared)", lambda: DPStandardScaler(bounds=(-6.0, 6.0)), 0),
    ("DPStandardScaler(private)", lambda: DPStandardScaler(), 0),
    ("DPPCA", lambda: DPPCA(n_components=3), 0),
]


@pytest.mark.parametrize("name,make,copies", FLOWS, ids=[f[0] for f in FLOWS])
def test_peak_memory_is_blocks_plus_at_most_one_copy(name, make, copies):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, P))
    y = X @ np.full(P, 0.1) + rng.normal(size=N)
    est = make().set_params(random_state=0)
    tracemalloc.start()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y) if is_regressor(est) else est.fit(X)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    budget = copies * X.nbytes + 3 * BLOCK_BYTES + 6 * 8 * N
    assert peak <= budget, f"{name}: peak {peak / X.nbytes:.2f} x X, budget {budget / X.nbytes:.2f}"
