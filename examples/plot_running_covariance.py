"""A stream's running private covariance: independent, BLT and exact square-root noise
===================================================================================


Every ``partial_fit`` call of :class:`skdp.density.PrivateGaussianDensity` is
one step of a stream (here 2,000 calls of 5 rows, d = 3, epsilon = 1), and a
private mean and covariance are released after each. The noise of the
releases is correlated across steps by the matrix mechanism: independent
noise ('identity') pays for every release in full; the exact square root of
the prefix-sum matrix ('sqrt') is near-optimal but keeps every past draw;
the buffered-linear-Toeplitz approximation ('blt', the default) matches it
with about 20 buffers. The plot shows the Frobenius error of each release
against the true running covariance.
Run: python examples/plot_running_covariance.py  (writes running_covariance.png)
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from _output import figure_path  # noqa: E402

from skdp.density import PrivateGaussianDensity  # noqa: E402

# %%
# A stream of 2,000 calls of 5 rows inside the unit ball.
rng = np.random.default_rng(0)
calls, rows, d = 2000, 5, 3
stream = 0.2 + 0.25 * rng.standard_normal((calls * rows, d))
stream /= np.maximum(1.0, np.linalg.norm(stream, axis=1))[:, None]
seen = rows * np.arange(1, calls + 1)[:, None]
mean = np.cumsum(stream, axis=0)[rows - 1::rows] / seen
second = np.cumsum(stream[:, :, None] * stream[:, None, :], axis=0)[rows - 1::rows]
cov = second / seen[:, :, None] - mean[:, :, None] * mean[:, None, :]

# %%
# The same stream with three noise shapings; the error after every call.
fig, ax = plt.subplots(figsize=(6, 4))
for shaping in ("identity", "blt", "sqrt"):
    errors = []
    dens = PrivateGaussianDensity(epsilon=1.0, norm_bound=1.0, noise_shaping=shaping,
                                  n_steps=calls, random_state=0)
    for block, target in zip(np.split(stream, calls), cov):
        dens.partial_fit(block)
        errors.append(np.linalg.norm(dens.covariance_ - target))
    ax.loglog(np.arange(1, calls + 1), errors, label=shaping)
    print(f"{shaping:>8}: covariance error after {calls} calls: {errors[-1]:.4f}")
ax.set_xlabel("calls (5 rows each)")
ax.set_ylabel("Frobenius error of the release")
ax.set_title("Running private covariance, epsilon = 1")
ax.legend()
fig.tight_layout()
fig.savefig(figure_path("running_covariance.png"), dpi=110)
