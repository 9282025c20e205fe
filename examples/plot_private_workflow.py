"""A private workflow end to end: scale, reduce, tune, fit, report intervals, count the budget
===========================================================================================


A clinic's table (20,000 patients; a synthetic stand-in with realistic
columns) goes through the steps of a usual analysis, every one of them
private and charged to one ledger: standardisation, a principal-component
look at the features, a tuned regression with confidence intervals, and
the budget spent. The bounds come from the table's data dictionary, never
from its values. The figure compares the private coefficients and 95%
intervals with non-private least squares.
Run: python examples/plot_private_workflow.py  (writes private_workflow.png)
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from _output import figure_path  # noqa: E402

from skdp.accounting import BudgetAccountant  # noqa: E402
from skdp.decomposition import DPPCA  # noqa: E402
from skdp.linear_model import DPLinearRegressionGD  # noqa: E402
from skdp.model_selection import DPGridSearchCV  # noqa: E402
from skdp.preprocessing import DPStandardScaler  # noqa: E402

# %%
# The table and its data dictionary (public: units and admissible ranges).
rng = np.random.default_rng(0)
n = 20_000
age = rng.uniform(20, 85, n)
bmi = np.clip(rng.normal(27, 5, n), 15, 50)
bp = 90 + 0.4 * age + 0.8 * (bmi - 27) + rng.normal(0, 12, n)
glucose = 85 + 0.3 * age + 1.5 * (bmi - 27) + rng.gamma(2.0, 8.0, n)
cost = 200 + 12 * age + 40 * bmi + 6 * bp + 9 * glucose + rng.normal(0, 400, n)
X = pd.DataFrame({"age": age, "bmi": bmi, "bp": bp, "glucose": glucose})
y = pd.Series(cost, name="cost")
bounds_X = ([18, 15, 60, 40], [90, 50, 220, 300])     # from the data dictionary
bounds_y = (0, 8000)

ledger = BudgetAccountant(epsilon=4.0, delta=1e-5)    # the whole analysis

# %%
# 1. Scale: private means and standard deviations (epsilon 0.5).
scaler = DPStandardScaler(epsilon=0.5, delta=1e-6, bounds=bounds_X, accountant=ledger,
                          random_state=0).set_output(transform="pandas").fit(X)
print("private means:", scaler.mean_.round(1), " non-private:", X.mean().to_numpy().round(1))

# %%
# 2. Reduce: how many directions carry the features (epsilon 0.5, on the scaled table).
pca = DPPCA(n_components=4, epsilon=0.5, delta=1e-6, norm_bound=6.0, accountant=ledger,
            random_state=0).fit(scaler.transform(X))
print("explained variance ratio:", pca.explained_variance_ratio_.round(3))

# %%
# 3. Tune and fit: the search's epsilon (2) covers every candidate's fit, its
# noisy validation score, the choice and the refit on all rows. The score is
# the squared residual clipped at loss_bound, here a residual of 1,000.
model = DPLinearRegressionGD(bounds_X=bounds_X, bounds_y=bounds_y)
search = DPGridSearchCV(model, {"clip_norm": [0.2, 2.0, 20.0]}, epsilon=2.0, delta=1e-6,
                        loss_bound=1000.0**2, accountant=ledger, random_state=0).fit(X, y)
print("chosen:", search.best_params_, " noisy validation scores:",
      search.cv_results_["mean_test_score"].round(0))

# %%
# 4. Report: coefficients, standard errors, t, p and 95% intervals for the
# least-squares solution of this table (Brown et al. 2024), on the original scale.
table = search.best_estimator_.summary(alpha=0.05)
ols = np.linalg.lstsq(np.column_stack([X, np.ones(n)]), y, rcond=None)[0]
table.insert(0, "OLS (not private)", ols)
print(table.round(2).to_string())

# %%
# 5. The budget: every step charged the ledger; composed exactly in Gaussian DP.
eps, delta = ledger.spent()
print(f"spent epsilon = {eps:.2f} at delta = {delta:g} of epsilon = 4;",
      ", ".join(c.label for c in ledger.ledger))

fig, ax = plt.subplots(figsize=(6, 3.5))
lo, hi = table.columns[-2], table.columns[-1]
names = [c for c in table.index if c != "intercept"]
pos = np.arange(len(names))
ax.errorbar(pos, table.loc[names, "coef"],
            yerr=[table.loc[names, "coef"] - table.loc[names, lo],
                  table.loc[names, hi] - table.loc[names, "coef"]],
            fmt="o", capsize=3, label="private, 95% interval")
ax.plot(pos + 0.1, table.loc[names, "OLS (not private)"], "x", color="black", label="OLS")
ax.set_xticks(pos, names)
ax.set_ylabel("cost per unit")
ax.set_title(f"Private workflow: epsilon {eps:.2f} in all")
ax.legend()
fig.tight_layout()
fig.savefig(figure_path("private_workflow.png"), dpi=110)
