"""DP-GD against LinearRegression when another process keeps one core busy.

Run: python benchmarks/dpgd_contention.py [--n 1000000] [--p 20] [--runs 7]

A busy process (a pure-Python loop, bounded in time) occupies one core while
LinearRegression and DPLinearRegressionGD (defaults, epsilon 1) fit the same
table alternately, each DP-GD fit right after a LinearRegression fit. The
table shows every run's time ratio and the median (target of issue 23: median
at most 2, no run above 3). Without the busy process the two fits share both
cores; with it, BLAS threads that wait for a busy core make many small calls
slow (DP-GD makes a few thousand per fit), unless the step loop keeps BLAS to
one thread.
"""

import argparse
import multiprocessing as mp
import time

import numpy as np
from _common import linear_data, print_table
from sklearn.linear_model import LinearRegression

from skdp.linear_model import DPLinearRegressionGD


def _burn(seconds: float) -> None:
    end = time.monotonic() + seconds
    x = 0
    while time.monotonic() < end:
        x += 1


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--p", type=int, default=20)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    X, y, _ = linear_data(args.n, args.p)
    rows = []
    for busy in (False, True):
        burner = None
        if busy:
            burner = mp.get_context("spawn").Process(target=_burn, args=(600.0,), daemon=True)
            burner.start()
            time.sleep(0.5)
        ratios = []
        try:
            for r in range(args.runs):
                t = time.perf_counter()
                LinearRegression().fit(X, y)
                t_ols = time.perf_counter() - t
                t = time.perf_counter()
                DPLinearRegressionGD(epsilon=1.0, random_state=r).fit(X, y)
                t_dp = time.perf_counter() - t
                ratios.append(t_dp / t_ols)
                rows.append(["one core busy" if busy else "idle", r, t_ols, t_dp, t_dp / t_ols])
        finally:
            if burner is not None:
                burner.terminate()
                burner.join()
        rows.append(["one core busy" if busy else "idle", "median", "-", "-",
                     float(np.median(ratios))])
    print_table(f"DP-GD / LinearRegression fit time, n = {args.n:,}, p = {args.p}",
                ["machine", "run", "LinearRegression (s)", "DP-GD (s)", "ratio"], rows)


if __name__ == "__main__":
    main()
