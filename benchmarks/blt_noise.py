"""BLT noise against the exact square-root factorization: error, per-step cost, memory.

Run: python benchmarks/blt_noise.py [--steps 100000]

Part 0: the banded square root (the square root's first coefficients
only) for the same running sums: a band of width b is near-optimal only for
streams of about b steps, so it needs O(n) memory to match the square root.

Part 1 (exact, no sampling): the error of releasing running sums of a
stream of n steps with the matrix mechanism, for unit sensitivity and unit
mu. For a noise-shaping C the noise of the release at step t has variance
``sens(C)**2 * ||row t of E_1 C^{-1}||**2``; the table prints the root mean
over the steps and the value at the last step, as ratios to the exact
square root of the prefix-sum matrix with horizon n (whose sensitivity
grows with n). The BLT rows use the sensitivity of an unbounded stream:
their guarantee holds however long the stream runs.

Part 2: ``StreamingMomentEstimator.partial_fit`` one row per call (d = 5,
JME): the time of a call at several points of the stream, and the size of
the secret noise state, for 'blt' and the exact 'sqrt' (which keeps every
past draw).
"""

import argparse
import time

import numpy as np
from _common import print_table
from scipy.signal import lfilter

from skdp.mechanisms import (
    CorrelatedNoise,
    blt_parameters,
    blt_sensitivity_factor,
    make_rng,
    toeplitz_coefficients,
)
from skdp.moments import StreamingMomentEstimator


def prefix_errors(kind, n, nu=None):
    """(root mean over steps, last step) of the running-sum noise, unit sensitivity."""
    if kind == "sqrt":
        c = toeplitz_coefficients(n)
        sens2 = np.sum(c**2)
        prefix = np.cumsum(np.cumsum(toeplitz_coefficients(n, inverse=True)) ** 2)
    elif kind == "identity":
        sens2, prefix = 1.0, np.arange(1, n + 1, dtype=float)
    else:
        sens2 = blt_sensitivity_factor(*blt_parameters(nu)) ** 2
        prefix = CorrelatedNoise("blt", 1, make_rng(0), nu=nu).prefix_variances(0, n)
    return np.sqrt(sens2 * prefix.mean()), np.sqrt(sens2 * prefix[-1])


def banded_errors(n, band):
    """Running-sum errors of the banded square root (first ``band`` coefficients of C)."""
    c = toeplitz_coefficients(n)[:band]
    sens2 = np.sum(c**2)  # a banded Toeplitz C: every column holds the band
    impulse = np.zeros(n)
    impulse[0] = 1.0
    h = lfilter([1.0], c, impulse)  # first column of C^{-1}
    prefix = np.cumsum(np.cumsum(h) ** 2)
    return np.sqrt(sens2 * prefix.mean()), np.sqrt(sens2 * prefix[-1])


def banded_table():
    n = 10_000
    ref = prefix_errors("sqrt", n)
    rows = []
    for band in (16, 64, 256, 1024):
        rmse, last = banded_errors(n, band)
        rows.append([band, rmse / ref[0], last / ref[1]])
    print_table(f"Part 0: banded square root (Kalinin & Lampert 2024) for running sums, n = {n}: "
                "error / exact square root's", ["band", "RMSE ratio", "last-step ratio"], rows)


def accuracy_table():
    rows = []
    for n in (1_000, 10_000, 100_000):
        ref = prefix_errors("sqrt", n)
        for label, kind, nu in [("exact sqrt, horizon n", "sqrt", None),
                                ("BLT tuned for n (nu = 1/n)", "blt", 1.0 / n),
                                ("BLT default (nu = 1/10,000)", "blt", 1e-4),
                                ("independent (identity)", "identity", None)]:
            rmse, last = prefix_errors(kind, n, nu)
            buffers = len(blt_parameters(nu)[0]) if kind == "blt" else "-"
            rows.append([n, label, buffers, rmse / ref[0], last / ref[1]])
    print_table("Part 1: running-sum error / exact square root's (1.00 = as good)",
                ["steps n", "noise", "buffers", "RMSE ratio", "last-step ratio"], rows)


def cost_table(total_steps):
    d = 5
    X = np.random.default_rng(0).normal(size=(total_steps, d)) / 3
    checkpoints = sorted({1_000, 10_000, total_steps // 2, total_steps})
    rows = []
    for shaping, limit in (("blt", total_steps), ("sqrt", min(total_steps, 30_000))):
        est = StreamingMomentEstimator(norm_bound=1.0, noise_shaping=shaping,
                                       n_steps=total_steps, random_state=0)
        done = 0
        for point in checkpoints:
            if point > limit:
                rows.append([shaping, point, "(not run)", "-"])
                continue
            for row in X[done:point - 200]:
                est.partial_fit(row[None])
            t = time.perf_counter()
            for row in X[point - 200:point]:
                est.partial_fit(row[None])
            per_call = (time.perf_counter() - t) / 200
            done = point
            noise = est._state["noise1"], est._state["noise2"]
            state = sum(getattr(nz, "_buffers").buffers.nbytes if shaping == "blt"
                        else nz._z.nbytes for nz in noise)
            rows.append([shaping, point, 1e3 * per_call, state / 1024])
    print_table(f"Part 2: partial_fit, one row per call, d = {d} (JME)",
                ["noise", "call #", "ms per call", "noise state (KiB)"], rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=100_000)
    args = parser.parse_args()
    banded_table()
    accuracy_table()
    cost_table(args.steps)


if __name__ == "__main__":
    main()
