"""Confidence intervals of DPLinearRegressionGD against OLS, as epsilon grows
==========================================================================


Private coefficients with 95% batched-means intervals on scikit-learn's
diabetes data (features rescaled by the public constant sqrt(442) from the
data set's documentation), beside the non-private least-squares fit.
Run: python examples/plot_dpgd_intervals.py  (writes dpgd_intervals.png)
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from _output import figure_path  # noqa: E402
from sklearn.datasets import load_diabetes  # noqa: E402
from sklearn.linear_model import LinearRegression  # noqa: E402

from skdp.linear_model import DPLinearRegressionGD  # noqa: E402

data = load_diabetes(as_frame=True)
X = data.data * np.sqrt(442.0)
y = (data.target - 185.5) / 160.5
ols = LinearRegression().fit(X, y)

fig, ax = plt.subplots(figsize=(8, 4))
pos = np.arange(X.shape[1])
for k, eps in enumerate([1.0, 4.0, 16.0]):
    reg = DPLinearRegressionGD(epsilon=eps, random_state=0).fit(X, y)
    table = reg.summary().iloc[:-1]  # without the intercept
    ax.errorbar(pos + 0.2 * k - 0.2, table["coef"],
                yerr=[table["coef"] - table["[0.025"], table["0.975]"] - table["coef"]],
                fmt="o", capsize=2, label=f"epsilon = {eps:g}")
    print(f"epsilon = {eps:g}: mean interval width "
          f"{(table['0.975]'] - table['[0.025']).mean():.3f}")
ax.plot(pos, ols.coef_, "kx", label="OLS (not private)")
ax.set_xticks(pos, X.columns)
ax.axhline(0, color="grey", lw=0.5)
ax.set_title("DPLinearRegressionGD: 95% intervals shrink as epsilon grows")
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(figure_path("dpgd_intervals.png"), dpi=110)
