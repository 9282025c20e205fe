"""DP-GD's population intervals against least squares, in the suite's clipping-bias cells.

Run: python benchmarks/population_intervals.py [--seeds 30]

Where least squares leans on rows the private fit clips, the default
(``target='empirical'``) intervals cover the clipped fit's solution and
miss least squares by the clipping bias (the suite's silent cells at
epsilon 10). ``conf_int(target='population')`` adds the sampling noise
(a private HC1 sandwich) to the privacy noise: it estimates the population
parameter, so it is about as wide as the OLS HC1 interval. This measures
how often it covers the table's least-squares coefficients in those
cells: it does where the clipping bias is small against the sampling
noise, and not where a few rows dominate least squares.

Columns: pooled coverage and worst coefficient (nominal 90%, against the
least-squares coefficients) and median width over the OLS HC1 width, for
the default intervals and the population ones.
"""

import argparse
import warnings

import numpy as np
from _common import print_table
from interval_suite import ALPHA, TABLES, prepare, reference

from skdp.linear_model import DPLinearRegressionGD

#: The suite's cells at epsilon 10 whose pooled or worst coverage misses by clipping bias.
CELLS = [("Chem97", "bounds"), ("CPS1988", "std"), ("k401ksubs", "std"), ("MedExp", "std"),
         ("CreditCard", "std"), ("weather", "std"), ("movies", "std"), ("diamonds", "std")]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=30)
    parser.add_argument("--epsilon", type=float, default=10.0)
    args = parser.parse_args()
    rows = []
    for name, flow in CELLS:
        X, y, kw = prepare(*TABLES[name][1](), flow)
        ls, hc1 = reference(X, y)
        hits = {"empirical": [], "population": []}
        widths = {"empirical": [], "population": []}
        for seed in range(args.seeds):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                reg = DPLinearRegressionGD(epsilon=args.epsilon, random_state=seed, **kw).fit(X, y)
            for target in hits:
                ci = reg.conf_int(ALPHA, target=target)
                hits[target].append((ci[:, 0] <= ls) & (ls <= ci[:, 1]))
                widths[target].append(np.diff(ci, axis=1).ravel() / hc1)
        row = [name, flow, len(y)]
        for target in hits:
            h = np.array(hits[target])
            row += [h.mean(), h.mean(0).min(), float(np.median(widths[target]))]
        rows.append(row)
    print_table(f"DP-GD at epsilon {args.epsilon:g}, {args.seeds} seeds: intervals against least "
                "squares", ["table", "flow", "n", "cov", "worst", "w/HC1", "pop cov", "pop worst",
                            "pop w/HC1"], rows)


if __name__ == "__main__":
    main()
