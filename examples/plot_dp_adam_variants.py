"""The private second moments of DP-Adam (Ganesh et al. 2025, Kalinin et al. 2025) on a logistic regression
========================================================================================================


Each variant trains DPSGDClassifier with Adam at the same budget; the plot
shows the test log-loss after each epoch (every epoch is a fresh fit with
one more pass, each paying for all its passes).
Run: python examples/plot_dp_adam_variants.py  (writes dp_adam_variants.png)
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from _output import figure_path  # noqa: E402
from sklearn.metrics import log_loss  # noqa: E402

from skdp.linear_model import DPSGDClassifier  # noqa: E402
from skdp.optim import PRIVATE_MOMENTS  # noqa: E402

rng = np.random.default_rng(0)
coef = np.array([2.0, -1.0, 0.5, 0.0, 0.0, 1.0])
X = rng.standard_normal((12_000, 6)) * np.array([1.0, 1.0, 1.0, 5.0, 0.2, 1.0])
y = (X @ coef + rng.logistic(size=12_000) > 0).astype(int)
X_train, y_train, X_test, y_test = X[:10_000], y[:10_000], X[10_000:], y[10_000:]

fig, ax = plt.subplots(figsize=(6, 4))
epochs = [1, 2, 4, 8]
for moments in PRIVATE_MOMENTS:
    losses = []
    for e in epochs:
        clf = DPSGDClassifier(epsilon=1.0, classes=[0, 1], optimizer="adam",
                              private_moments=moments, noise="nu", batch_size=100, epochs=e,
                              learning_rate=0.05, random_state=0).fit(X_train, y_train)
        losses.append(log_loss(y_test, clf.predict_proba(X_test)))
    ax.plot(epochs, losses, "o-", label=moments)
    print(f"{moments:>22}: test log-loss " + " ".join(f"{v:.3f}" for v in losses))
ax.set_xlabel("epochs (the budget, epsilon = 1, covers all of them)")
ax.set_ylabel("test log-loss")
ax.set_title("DP-Adam: how the second moment is made private")
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(figure_path("dp_adam_variants.png"), dpi=110)
