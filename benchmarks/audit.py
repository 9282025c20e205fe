"""Empirical privacy audit of every estimator, with more trials than the tests.

Run: python benchmarks/audit.py [--calibration 2000 --test 20000] [--secure]

The scenarios (neighbouring datasets, the scalar of the output) are the
ones of ``tests/audit/scenarios.py``; the statistics are in
``skdp/utils/_audit.py``. Each row: the claim (epsilon at delta, mu), the
high-confidence lower bounds, and tightness = mu_lb / mu, the share of the
claimed privacy loss the audit can see. The last rows audit DP-GD (one
step, and the default fit with all its releases, its steps at half their
noise: true mu 1.8x the claim), the Gram-matrix release and JME with half
their noise: they must fail. The
confidence is 1 - 1e-3 for the whole table, as in the tests. With
``--secure`` every fit runs in secure mode (exact discrete Gaussian grid
releases, OS entropy instead of the trial seeds), against the zCDP claim.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from _common import print_table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "audit"))
from scenarios import SCENARIOS, Scenario, quiet  # noqa: E402

import skdp.linear_model._dpgd as dpgd_module  # noqa: E402
import skdp.mechanisms._gram as gram_module  # noqa: E402
import skdp.moments._streaming as streaming_module  # noqa: E402
from skdp.accounting import budget_mu  # noqa: E402
from skdp.mechanisms import secure_mode  # noqa: E402
from skdp.utils._audit import audit  # noqa: E402


def _broken(scenario, module, name, wrap):
    real = getattr(module, name)

    def run(neighbour, seed):
        setattr(module, name, wrap(real))
        try:
            return scenario.run(neighbour, seed)
        finally:
            setattr(module, name, real)
    return Scenario(f"BROKEN {scenario.name}", run, scenario.epsilon, scenario.delta)


def _half_noise(real):
    return lambda value, std, rng, **kw: real(value, np.asarray(std) / 2.0, rng, **kw)


def _half_second(real):
    def stds(*args, **kwargs):
        s1, s2, lam = real(*args, **kwargs)
        return s1, s2 / 2.0, lam
    return stds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calibration", type=int, default=2000)
    parser.add_argument("--test", type=int, default=20000)
    parser.add_argument("--secure", action="store_true", help="run every fit in secure mode")
    args = parser.parse_args()
    by_name = {s.name: s for s in SCENARIOS}
    broken = [
        _broken(by_name["DPLinearRegressionGD"], dpgd_module, "gaussian_release", _half_noise),
        _broken(by_name["DPLinearRegressionGD(all releases)"], dpgd_module, "gaussian_release",
                _half_noise),
        _broken(by_name["private_gram"], gram_module, "symmetric_release", _half_noise),
        _broken(by_name["StreamingMomentEstimator(jme, both moments)"], streaming_module,
                "jme_noise_stds", _half_second),
    ]
    alpha = 1e-3 / (2 * len(SCENARIOS))
    rows = []
    for s in SCENARIOS + broken:
        t = time.perf_counter()
        run = quiet(s.run)
        if args.secure:
            with secure_mode():
                mu = budget_mu(s.epsilon, s.delta)
                r = audit(lambda neighbour, seed: run(neighbour, None),
                          n_calibration=args.calibration, n_test=args.test, alpha=alpha,
                          delta=s.delta)
        else:
            mu = s.mu
            r = audit(run, n_calibration=args.calibration, n_test=args.test, alpha=alpha,
                      delta=s.delta)
        verdict = "FAIL" if (r.mu_lb > mu or r.epsilon_lb > s.epsilon) else "pass"
        rows.append((s.name, s.epsilon, s.delta, round(mu, 3), round(r.epsilon_lb, 3),
                     round(r.mu_lb, 3), round(r.mu_lb / mu, 2), verdict,
                     round(time.perf_counter() - t, 1)))
    mode = ", secure mode (zCDP claim)" if args.secure else ""
    print_table(f"Privacy audit{mode}: {args.test} test + {args.calibration} calibration trials "
                "per dataset, confidence 1 - 1e-3 for the table",
                ["estimator", "epsilon", "delta", "mu", "epsilon_lb", "mu_lb", "tightness",
                 "verdict", "seconds"], rows)


if __name__ == "__main__":
    main()
