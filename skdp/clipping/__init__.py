"""Clipping: rows, per-example gradients of linear models, DP-STAT thresholds.

Nothing here draws a bound from the data: bounds are parameters, and the one
data-dependent threshold (DP-STAT) is paid for with budget. The one
diagnostic that looks at the data without noise, :func:`clipping_report`,
is off unless you ask for it and warns when you do.
"""

from skdp.clipping._clip import (
    clip_factors,
    clip_rows,
    clipped_gradient_sum,
    clipped_gradients,
    clipped_residuals,
    gradient_clip_factors,
    logistic_loss_residuals,
    scale_from_second_moment,
    scale_then_privatize,
    squared_loss_residuals,
)
from skdp.clipping._dp_stat import dp_stat, dp_stat_n_levels
from skdp.clipping._private_quantile import (
    effective_quantile,
    geometric_grid,
    private_norm_quantile,
    private_quantiles,
    quantile_statistics,
    search_noise_std,
)
from skdp.clipping._report import ClippingReport, clipping_report

__all__ = [
    "ClippingReport",
    "clip_factors",
    "clip_rows",
    "clipped_gradient_sum",
    "clipped_gradients",
    "clipped_residuals",
    "clipping_report",
    "dp_stat",
    "dp_stat_n_levels",
    "effective_quantile",
    "geometric_grid",
    "gradient_clip_factors",
    "logistic_loss_residuals",
    "private_norm_quantile",
    "private_quantiles",
    "quantile_statistics",
    "scale_from_second_moment",
    "scale_then_privatize",
    "search_noise_std",
    "squared_loss_residuals",
]
