"""Issue 15 checks that span the regression estimators."""

import numpy as np
import pytest

from skdp.linear_model import DPAMBSSGDRegressor


def test_dp_ambssgd_on_too_few_rows_names_the_estimator_to_use():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 3))
    with pytest.raises(ValueError, match="Too few rows.*use DPLinearRegressionGD"):
        DPAMBSSGDRegressor(random_state=0).fit(X, X.sum(axis=1))
