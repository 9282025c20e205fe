"""Synthetic data of the papers' experiments, shared by tests, benchmarks and examples."""

from skdp.datasets._synthetic import make_power_law_regression, make_sparse_logistic

__all__ = ["make_power_law_regression", "make_sparse_logistic"]
