"""Synthetic data of Brown et al. 2024 (x ~ N(0, I_p), theta* on the unit sphere) and table printing."""

import numpy as np


def linear_data(n, p, sigma=1.0, seed=0):
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=p)
    theta /= np.linalg.norm(theta)
    X = rng.normal(size=(n, p))
    y = X @ theta + sigma * rng.normal(size=n)
    return X, y, theta


def print_table(title, header, rows):
    print(f"\n{title}")
    widths = [max(len(str(h)), *(len(_fmt(r[i])) for r in rows)) for i, h in enumerate(header)]
    print("  ".join(str(h).rjust(w) for h, w in zip(header, widths)))
    for r in rows:
        print("  ".join(_fmt(v).rjust(w) for v, w in zip(r, widths)))


def _fmt(v):
    return f"{v:.4g}" if isinstance(v, float) else str(v)
