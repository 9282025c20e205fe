"""Correlated noise (nu-DP-FTRL) against independent noise (DP-SGD), Choquette-Choo et al. 2024
============================================================================================


Streaming linear regression with eigenvalues k^-1.5 in d = 20: one pass,
batch 1, the same (epsilon, delta), excess risk along a learning-rate grid.
Run: python examples/plot_correlated_noise.py  (writes correlated_noise.png)
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from _output import figure_path  # noqa: E402

from skdp.datasets import make_power_law_regression  # noqa: E402
from skdp.linear_model import DPSGDRegressor  # noqa: E402

X, y, theta, h = make_power_law_regression(5_000, 20, random_state=0)
lrs = [1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2]
fig, ax = plt.subplots(figsize=(6, 4))
for noise, nu in (("independent", 0.0), ("nu", 0.0), ("nu", 0.01)):
    risks = []
    for lr in lrs:
        w = DPSGDRegressor(epsilon=2.0, noise=noise, nu=nu, batch_size=1, learning_rate=lr,
                           fit_intercept=False, random_state=0).fit(X, y).coef_
        risks.append(0.5 * np.sum(h * (w - theta) ** 2))
    label = "independent (DP-SGD)" if noise == "independent" else f"nu-DP-FTRL, nu = {nu:g}"
    ax.loglog(lrs, risks, "o-", label=label)
    print(f"{label:>24}: best excess risk {min(risks):.4g}")
ax.set_xlabel("learning rate")
ax.set_ylabel("excess risk")
ax.set_title("One private pass, epsilon = 2")
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(figure_path("correlated_noise.png"), dpi=110)
