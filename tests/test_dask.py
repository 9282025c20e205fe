"""The Dask engine: the same releases from partitions, on a two-process LocalCluster.

Marked ``dask``; they run in the default suite when Dask and distributed are
installed (the test extra installs them) and take about 15 s, most of it
starting the cluster once for the module.
"""

import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

from skdp.accounting import BudgetAccountant  # noqa: E402
from skdp.decomposition import DPPCA  # noqa: E402
from skdp.density import PrivateGaussianDensity  # noqa: E402
from skdp.linear_model import DPAMBSSGDRegressor, DPSGDClassifier, DPSGDRegressor  # noqa: E402
from skdp.moments import StreamingMomentEstimator  # noqa: E402
from skdp.preprocessing import DPStandardScaler  # noqa: E402

pytestmark = pytest.mark.dask


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


def _table(n=40_000, d=4, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d)) * [1.0, 2.0, 0.5, 3.0] + [1, 0, -1, 2]


# Each factory makes an estimator whose default path reads the data more
# than once (private bound, then the release).
RELEASES = {
    "StreamingMomentEstimator": (lambda: StreamingMomentEstimator(workload="average",
                                                                  random_state=0),
                                 ("first_moment_", "second_moment_", "norm_bound_")),
    "PrivateGaussianDensity": (lambda: PrivateGaussianDensity(random_state=0),
                               ("location_", "covariance_")),
    "DPStandardScaler": (lambda: DPStandardScaler(random_state=0), ("mean_", "scale_")),
    "DPPCA": (lambda: DPPCA(n_components=2, random_state=0), ("components_",
                                                              "explained_variance_")),
}


@pytest.mark.parametrize("name", list(RELEASES))
def test_same_release_as_in_memory_on_a_cluster(client, name):
    # Same seed, same release, up to the order of floating-point sums.
    X = _table()
    make, attrs = RELEASES[name]
    ref = make().fit(X)
    got = make().fit(da.from_array(X, chunks=(7_000, 4)))
    for attr in attrs:
        np.testing.assert_allclose(getattr(got, attr), getattr(ref, attr), rtol=1e-6, atol=1e-12)
    assert got.privacy_spent_ == ref.privacy_spent_


def test_dataframes_keep_feature_names_and_weights_work(client):
    X = pd.DataFrame(_table(), columns=["age", "bmi", "bp", "s1"])
    w = pd.Series(np.random.default_rng(1).uniform(0, 2, size=len(X)))
    ddf = dd.from_pandas(X, npartitions=5)
    dw = dd.from_pandas(w, npartitions=5)
    ref = PrivateGaussianDensity(max_weight=2.0, random_state=0).fit(X, sample_weight=w)
    got = PrivateGaussianDensity(max_weight=2.0, random_state=0).fit(ddf, sample_weight=dw)
    assert list(got.feature_names_in_) == list(X.columns)
    np.testing.assert_allclose(got.covariance_, ref.covariance_, rtol=1e-6)
    scaler = DPStandardScaler(random_state=0).set_output(transform="pandas").fit(ddf)
    assert list(scaler.transform(X.iloc[:3]).columns) == list(X.columns)


def test_a_stream_larger_than_a_partition_goes_one_partition_per_step(client):
    X = _table(60_000)
    Xd = da.from_array(X, chunks=(10_000, 4))
    stream = StreamingMomentEstimator(norm_bound=8.0, random_state=0).partial_fit(Xd)
    ref = StreamingMomentEstimator(norm_bound=8.0, random_state=0)
    for block in np.split(X, 6):
        ref.partial_fit(block)
    assert stream.n_steps_seen_ == 6 and stream.n_samples_seen_ == 60_000
    np.testing.assert_array_equal(stream.first_moment_, ref.first_moment_)
    y = X @ np.ones(4) + 0.1 * np.random.default_rng(2).normal(size=len(X))
    reg = DPAMBSSGDRegressor(random_state=0).partial_fit(Xd, da.from_array(y, chunks=10_000))
    mem = DPAMBSSGDRegressor(random_state=0)
    for a, b in zip(np.split(X, 6), np.split(y, 6)):
        mem.partial_fit(a, b)
    np.testing.assert_allclose(reg.coef_, mem.coef_, rtol=1e-9)


def test_bad_partitions_raise_before_any_charge(client):
    acc = BudgetAccountant(epsilon=5.0, delta=1e-5)
    X = _table(20_000)
    X[13_500, 1] = np.nan
    with pytest.raises(ValueError, match="Partition 2 contains NaN"):
        PrivateGaussianDensity(accountant=acc).fit(da.from_array(X, chunks=(5_000, 4)))
    unknown = da.from_array(_table(1000), chunks=(500, 4))
    unknown = unknown[unknown[:, 0] > -100]  # a boolean mask: chunk sizes become unknown
    with pytest.raises(ValueError, match="unknown chunk sizes"):
        DPStandardScaler(accountant=acc).fit(unknown)
    frame = dd.from_pandas(pd.DataFrame(_table(1000)), npartitions=4)
    target = dd.from_pandas(pd.Series(np.zeros(900)), npartitions=4)
    from skdp.utils._validation import validate_private

    class Probe:
        _accepts_dask = True

    with pytest.raises(ValueError, match=r"Partition \d of X has 250 rows but that of y has 225"):
        validate_private(Probe(), frame, target)
    with pytest.raises(TypeError, match="does not read Dask"):
        DPSGDRegressor().fit(da.from_array(_table(1000), chunks=500), da.zeros(1000, chunks=500))
    assert acc.ledger == []


def test_skdp_imports_and_works_without_dask():
    code = ("import sys; sys.modules['dask'] = None; sys.modules['distributed'] = None\n"
            "import numpy as np, skdp.density, skdp.preprocessing\n"
            "X = np.random.default_rng(0).normal(size=(5000, 3))\n"
            "skdp.density.PrivateGaussianDensity(random_state=0).fit(X)\n"
            "skdp.preprocessing.DPStandardScaler(random_state=0).fit(X)\n"
            "print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr


STREAMS = {
    "DPSGDRegressor": (lambda acc: DPSGDRegressor(accountant=acc, random_state=0), "y"),
    "DPSGDClassifier": (lambda acc: DPSGDClassifier(classes=[0, 1], accountant=acc,
                                                    random_state=0), "labels"),
    "DPAMBSSGDRegressor": (lambda acc: DPAMBSSGDRegressor(accountant=acc, random_state=0), "y"),
    "DPStandardScaler": (lambda acc: DPStandardScaler(accountant=acc, random_state=0), None),
    "StreamingMomentEstimator": (lambda acc: StreamingMomentEstimator(
        norm_bound=8.0, accountant=acc, random_state=0), None),
    "PrivateGaussianDensity": (lambda acc: PrivateGaussianDensity(
        norm_bound=8.0, accountant=acc, random_state=0), None),
}


@pytest.mark.parametrize("name", list(STREAMS))
def test_partial_fit_checks_every_partition_before_the_first_release(client, name):
    # Issue 22, item 6: a NaN in the last partition used to fail the stream
    # after the earlier partitions were released; the retry released them
    # again with no new charge.
    from skdp.mechanisms import record_releases

    make, target = STREAMS[name]
    X = _table(8_000)
    y = None if target is None else (X[:, 0] > 1).astype(int) if target == "labels" else X[:, 0]
    bad = X.copy()
    bad[7_900, 2] = np.nan
    acc = BudgetAccountant(epsilon=5.0, delta=1e-5)
    est = make(acc)
    chunks = (2_000, 4)
    args = (da.from_array(bad, chunks=chunks),) + (
        () if y is None else (da.from_array(y, chunks=2_000),))
    with record_releases() as log, pytest.raises(ValueError, match="Partition 3 contains NaN"):
        est.partial_fit(*args)
    assert log == [] and acc.ledger == []
    good = (da.from_array(X, chunks=chunks),) + args[1:]
    with record_releases() as log:
        est.partial_fit(*good)
    assert len(acc.ledger) == 1
    assert est.privacy_spent_.mu == pytest.approx(acc.spent_mu)



@pytest.mark.parametrize("name", list(STREAMS))
def test_a_partial_fit_interrupted_between_partitions_ends_the_stream(client, name,
                                                                      monkeypatch, fail_on_call):
    # An interrupt (or a lost worker) while reading the third partition left the
    # stream open after two partitions were released: the natural retry released
    # them again with no new charge (the review of session 22).
    import skdp.utils._dask as dask_module

    make, target = STREAMS[name]
    X = _table(8_000)
    y = None if target is None else (X[:, 0] > 1).astype(int) if target == "labels" else X[:, 0]
    args = (da.from_array(X, chunks=(2_000, 4)),) + (
        () if y is None else (da.from_array(y, chunks=2_000),))
    est = make(BudgetAccountant(epsilon=5.0, delta=1e-5))
    real = dask_module.compute
    # The fourth read: the checks, partitions 0 and 1, then partition 2.
    fail_on_call(dask_module, "compute", 4, KeyboardInterrupt)
    with pytest.raises(KeyboardInterrupt):
        est.partial_fit(*args)
    # The retry is refused before any partition is read (it read them all before).
    retry_reads = []

    def counted(*collections):
        retry_reads.append(1)
        return real(*collections)

    monkeypatch.setattr(dask_module, "compute", counted)
    with pytest.raises(ValueError, match="failed after it began drawing"):
        est.partial_fit(*args)
    assert retry_reads == []


def test_dask_partial_fit_passes_the_weights_of_each_partition(client):
    # The scaler's Dask partial_fit passed the weights as y (ignored).
    X = _table(8_000)
    w = np.random.default_rng(1).uniform(0.0, 2.0, size=8_000)
    dask_fit = DPStandardScaler(bounds=(-10, 10), max_weight=2.0, random_state=0).partial_fit(
        da.from_array(X, chunks=(2_000, 4)), sample_weight=da.from_array(w, chunks=2_000))
    mem = DPStandardScaler(bounds=(-10, 10), max_weight=2.0, random_state=0)
    for i in range(0, 8_000, 2_000):
        mem.partial_fit(X[i:i + 2_000], sample_weight=w[i:i + 2_000])
    np.testing.assert_allclose(dask_fit.mean_, mem.mean_, rtol=1e-9)
    np.testing.assert_allclose(dask_fit.scale_, mem.scale_, rtol=1e-9)


@pytest.mark.parametrize("name", list(RELEASES))
def test_releases_recompose_to_the_claim_on_a_cluster(client, name):
    # The release log (skdp.mechanisms.record_releases) sees the driver's
    # draws: on a cluster as in memory, they recompose to privacy_spent_.
    from skdp.mechanisms import composed_mu, record_releases

    X = _table(20_000)
    make, _ = RELEASES[name]
    with record_releases() as log:
        est = make().fit(da.from_array(X, chunks=(5_000, 4)))
    assert composed_mu(log) == pytest.approx(est.privacy_spent_.mu, rel=1e-9)


def test_a_stream_keeps_its_weight_bound_for_dask_weights():
    # A stream started without weights has noise for rows of weight 1; Dask weights
    # skipped that bound (only max_weight was checked), so a row could count up to
    # max_weight times more than the noise allows. Every partition is now checked
    # against it before any of them is released.
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(40, 2))
    w = np.ones(30)
    w[25] = 2.0  # in [0, max_weight], above the stream's bound of 1
    with dask.config.set(scheduler="synchronous"):
        for dask_X in (False, True):
            sc = DPStandardScaler(bounds=(0.0, 1.0), max_weight=5.0, random_state=0)
            sc.partial_fit(X[:10])
            rows = da.from_array(X[10:], chunks=(10, 2)) if dask_X else X[10:]
            with pytest.raises(ValueError, match="weight"):
                sc.partial_fit(rows, sample_weight=da.from_array(w, chunks=10))
            assert sc.n_samples_seen_ == 10  # nothing of the call was released


def test_a_later_dask_call_whose_rows_all_weigh_zero_runs():
    # As in memory: after the stream's charge, refusing a call whose rows all weigh 0
    # (and running its neighbour) would single it out.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 2))
    y = X @ [1.0, -1.0]
    with dask.config.set(scheduler="synchronous"):
        est = DPSGDRegressor(clip_norm=1.0, random_state=0)
        est.partial_fit(X, y, sample_weight=np.ones(2000))
        est.partial_fit(X[:20], y[:20], sample_weight=da.zeros(20, chunks=10))
        sc = DPStandardScaler(bounds=(-4.0, 4.0), random_state=0)
        sc.partial_fit(X, sample_weight=np.ones(2000))
        sc.partial_fit(da.from_array(X[:20], chunks=(10, 2)), sample_weight=da.zeros(20, chunks=10))
    assert np.all(np.isfinite(est.coef_)) and np.all(np.isfinite(sc.mean_))


def test_a_regressor_s_label_that_is_not_a_number_fails_before_any_release():
    # The first pass checked object labels for None and NaN only: "n/a" in the last
    # partition failed after the charge and 13 releases.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4000, 2))
    y = (X @ [1.0, -1.0]).astype(object)
    y[3900] = "n/a"
    acc = BudgetAccountant(epsilon=5.0, delta=1e-5)
    est = DPSGDRegressor(accountant=acc, random_state=0)
    with dask.config.set(scheduler="synchronous"), pytest.raises(ValueError, match="not numbers"):
        est.partial_fit(da.from_array(X, chunks=(1000, 2)), y)
    assert acc.ledger == []


def test_weights_partitioned_unlike_x_are_aligned_not_refused_after_the_charge():
    # The weights are checked before the charge but aligned with X's partitions
    # only in the sums after it, where partitions of other sizes raised: the
    # budget was spent for nothing. They are rechunked now.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4000, 3))
    w = rng.uniform(0.0, 2.0, size=4000)
    chunks = ((999, 1001, 1000, 1000),)
    with dask.config.set(scheduler="synchronous"):
        a = DPStandardScaler(max_weight=2.0, bounds=(-5.0, 5.0), random_state=0).fit(
            da.from_array(X, chunks=(1000, 3)), sample_weight=da.from_array(w, chunks=chunks))
    b = DPStandardScaler(max_weight=2.0, bounds=(-5.0, 5.0), random_state=0).fit(
        X, sample_weight=w)
    np.testing.assert_allclose(a.mean_, b.mean_, rtol=1e-9, atol=1e-12)


def test_a_short_last_partition_fails_before_the_first_is_released():
    # DP-AMBSSGD's later calls need one step's rows; a short last partition used to
    # fail after 140 releases of the earlier ones (and a retry would repeat them).
    from skdp.mechanisms import record_releases
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4100, 3))
    y = X @ [1.0, -1.0, 0.5] + rng.normal(size=4100)
    acc = BudgetAccountant(epsilon=5.0, delta=1e-5)
    est = DPAMBSSGDRegressor(accountant=acc, random_state=0)
    with dask.config.set(scheduler="synchronous"), record_releases() as log, \
            pytest.raises(ValueError, match="fewer than one step"):
        est.partial_fit(da.from_array(X, chunks=((2000, 2000, 100), 3)),
                        da.from_array(y, chunks=((2000, 2000, 100),)))
    assert log == [] and acc.ledger == []
    # A stream under way keeps its first call's variant: set_params(variant='ssgd')
    # since then skipped the check (an 'ssgd' stream has no step size), and the
    # stream released the earlier partitions before failing (session 19 review).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.partial_fit(X[:2000], y[:2000])
    est.set_params(variant="ssgd")
    seen = est.n_samples_seen_
    with dask.config.set(scheduler="synchronous"), record_releases() as log, \
            pytest.raises(ValueError, match="fewer than one step"):
        est.partial_fit(da.from_array(X, chunks=((2000, 2000, 100), 3)),
                        da.from_array(y, chunks=((2000, 2000, 100),)))
    assert log == [] and est.n_samples_seen_ == seen


def test_a_classifier_s_label_check_runs_on_every_partition_before_the_first_release():
    # check_classification_targets ran per call, so a partition whose labels it
    # refuses (continuous, here 0.5 alone) failed after the earlier ones were released.
    from skdp.mechanisms import record_releases
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 2))
    y = np.zeros(3000)
    y[2000:] = 0.5  # the first two partitions hold one label each, which passes
    est = DPSGDClassifier(classes=[0.0, 0.5], random_state=0)
    with dask.config.set(scheduler="synchronous"), record_releases() as log, \
            pytest.raises(ValueError, match="label type"):
        est.partial_fit(da.from_array(X, chunks=(1000, 2)), da.from_array(y, chunks=1000))
    assert log == []


@pytest.mark.parametrize("name", ["dpsgd", "moments", "density"])
def test_partitions_past_the_horizon_fail_before_the_first_is_released(name):
    # A fixed horizon (n_steps) was checked one partition at a time, so the stream
    # failed after the earlier partitions were released (and a retry fed them again).
    from skdp.mechanisms import record_releases
    rng = np.random.default_rng(0)
    X = rng.normal(size=(350, 2))
    y = X @ [1.0, -1.0]
    acc = BudgetAccountant(epsilon=5.0, delta=1e-5)
    chunks = (100, 100, 150)
    if name == "dpsgd":  # 10 + 10 + 15 steps of 10 rows against a horizon of 30
        est = DPSGDRegressor(clip_norm=1.0, batch_size=10, noise="nu", nu=0.1, n_steps=30,
                             accountant=acc, random_state=0)
        args = (da.from_array(X, chunks=(chunks, 2)), da.from_array(y, chunks=(chunks,)))
    else:  # method='pp': one step per row, 350 against a horizon of 300
        kind = StreamingMomentEstimator if name == "moments" else PrivateGaussianDensity
        est = kind(method="pp", noise_shaping="sqrt", n_steps=300, norm_bound=4.0,
                   accountant=acc, random_state=0)
        args = (da.from_array(X, chunks=(chunks, 2)),)
    with dask.config.set(scheduler="synchronous"), record_releases() as log, \
            pytest.raises(ValueError, match="Nothing was released"):
        est.partial_fit(*args)
    assert log == [] and acc.ledger == []


def test_an_empty_partition_is_no_call():
    # A filter can leave a partition empty; as a call it raised "0 sample(s)" after the
    # earlier partitions were released. It holds no rows: the stream skips it.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    y = X @ [1.0, -1.0]
    fits = []
    for chunks in ((100, 0, 200), (100, 200)):
        est = DPSGDRegressor(clip_norm=1.0, batch_size=10, random_state=0)
        with dask.config.set(scheduler="synchronous"):
            est.partial_fit(da.from_array(X, chunks=(chunks, 2)), da.from_array(y, chunks=(chunks,)))
        fits.append(est.coef_)
    np.testing.assert_array_equal(fits[0], fits[1])


def test_after_a_per_row_fit_each_partition_is_one_step():
    # fit(release='per_row') takes a step per row, but partial_fit one per call: the
    # horizon check must count partitions, not rows (it refused 100 + 2 steps of 150).
    X = np.random.default_rng(0).normal(size=(200, 2)) / 3
    est = StreamingMomentEstimator(release="per_row", noise_shaping="sqrt", n_steps=150,
                                   norm_bound=1.0, random_state=0).fit(X[:100])
    with dask.config.set(scheduler="synchronous"):
        est.partial_fit(da.from_array(X[100:], chunks=(50, 2)))
    assert est.n_steps_seen_ == 102


# -- a review of the Dask path (session 18): failures after the charge ----------------

def test_a_one_column_y_frame_is_read_as_y_and_two_columns_fail_before_the_charge():
    # df[["y"]] (a one-column DataFrame) reached the Gram as a 2-D y and failed after
    # the charge; in memory it is flattened with a DataConversionWarning.
    from sklearn.exceptions import DataConversionWarning

    from skdp.linear_model import AdaSSPRegressor, DPLinearRegressionGD

    X = _table(2000)[:, :3]
    frame = dd.from_pandas(pd.DataFrame(np.c_[X, X.sum(axis=1)], columns=[*"abc", "y"]),
                           npartitions=4)
    with dask.config.set(scheduler="synchronous"):
        with pytest.warns(DataConversionWarning, match="column-vector"):
            flat = AdaSSPRegressor(random_state=0).fit(frame[list("abc")], frame[["y"]])
        same = AdaSSPRegressor(random_state=0).fit(frame[list("abc")], frame["y"])
        np.testing.assert_array_equal(flat.coef_, same.coef_)
        acc = BudgetAccountant(epsilon=5.0, delta=1e-5)
        with pytest.raises(ValueError, match="y must be 1-D"):
            DPLinearRegressionGD(accountant=acc).fit(frame[list("ab")], frame[["c", "y"]])
    assert acc.ledger == []


def test_chunks_that_declare_more_rows_than_they_hold_fail_before_the_charge():
    # n is public and sets the noise: it used to come from the declared chunks, so a
    # partition of 999 rows declared as 1,000 gave a density divided by the wrong n,
    # and a moments stream failed after the charge.
    X = _table(3999)[:, :2]
    parts = [dask.delayed(lambda a: a)(X[i * 1000:(i + 1) * 1000]) for i in range(4)]
    wrong = da.concatenate([da.from_delayed(p, shape=(1000, 2), dtype=float) for p in parts])
    acc = BudgetAccountant(epsilon=5.0, delta=1e-5)
    with dask.config.set(scheduler="synchronous"):
        for est in (PrivateGaussianDensity(norm_bound=10.0, accountant=acc),
                    StreamingMomentEstimator(workload="exponential", norm_bound=10.0,
                                             accountant=acc)):
            with pytest.raises(ValueError, match="chunks declare 4000"):
                est.fit(wrong)
    assert acc.ledger == []


def test_a_source_that_changes_after_the_check_cannot_fail_a_release_or_overweigh_a_row():
    # The check reads the partitions once, each release again. A source rewritten in
    # between (here: NaN, inf and a weight of 50 in the second read) used to fail after
    # the charge (NaN) or let a row weigh more than max_weight; the release pass maps
    # values and weights, row by row, into the checked ranges instead.
    X = _table(4000)[:, :2]
    reads = {"X": 0, "w": 0}

    def read_x(i):
        reads["X"] += 1
        block = X[i * 1000:(i + 1) * 1000].copy()
        if reads["X"] > 4:  # after the check's pass over the 4 partitions
            block[0] = [np.nan, np.inf]
        return block

    def read_w(i):
        reads["w"] += 1
        return np.full(1000, 50.0 if reads["w"] > 4 else 1.0)

    Xd = da.concatenate([da.from_delayed(dask.delayed(read_x)(i), shape=(1000, 2), dtype=float)
                         for i in range(4)])
    wd = da.concatenate([da.from_delayed(dask.delayed(read_w)(i), shape=(1000,), dtype=float)
                         for i in range(4)])
    with dask.config.set(scheduler="synchronous"):
        dens = PrivateGaussianDensity(norm_bound=10.0, max_weight=2.0, random_state=0)
        dens.fit(Xd, sample_weight=wd)
    assert reads["X"] > 4 and reads["w"] > 4  # the source was read again, and changed
    assert np.all(np.isfinite(dens.location_)) and np.all(np.isfinite(dens.covariance_))
    # The same between partial_fit's check of every partition and its calls.
    reads.update(X=0, w=0)
    with dask.config.set(scheduler="synchronous"):
        stream = DPStandardScaler(bounds=(-20.0, 20.0), max_weight=2.0, random_state=0)
        stream.partial_fit(Xd, sample_weight=wd)
    assert reads["X"] > 4 and np.all(np.isfinite(stream.mean_))
    from skdp.utils._validation import _bounded_weights

    np.testing.assert_array_equal(_bounded_weights(np.array([50.0, np.nan, -1.0, 0.5]), 2.0),
                                  [2.0, 0.0, 0.0, 0.5])


def test_schema_errors_on_dask_quote_no_value():
    # A weight that is not a number was quoted by numpy's conversion error; a complex
    # partition was accepted with its imaginary part dropped.
    X = da.from_array(_table(2000)[:, :2], chunks=(500, 2))
    w = dd.from_pandas(pd.Series(["1.0"] * 1999 + ["patient-1234"]), npartitions=4)
    with dask.config.set(scheduler="synchronous"):
        with pytest.raises(ValueError, match="not numbers") as info:
            PrivateGaussianDensity(norm_bound=10.0, max_weight=2.0).fit(X, sample_weight=w)
        assert "patient" not in str(info.value)
        complex_X = da.from_array(_table(2000)[:, :2] * (1 + 1j), chunks=(500, 2))
        with pytest.raises(ValueError, match="complex"):
            PrivateGaussianDensity(norm_bound=10.0).fit(complex_X)


def test_a_pipeline_of_private_steps_stays_on_dask_and_equals_the_fit_in_memory():
    # DPStandardScaler.transform and DPPCA.transform pulled a Dask table into one numpy
    # array in the driver; the next step, given numpy X and a Dask y, failed after the
    # first step's charge. They now transform lazily, partition by partition.
    from sklearn.base import clone
    from sklearn.pipeline import make_pipeline

    from skdp.linear_model import AdaSSPRegressor, DPLinearRegressionGD

    X = _table(6000)[:, :3]
    y = X @ np.array([1.0, 2.0, 3.0]) + np.random.default_rng(1).normal(size=6000)
    Xd, yd = da.from_array(X, chunks=(1500, 3)), da.from_array(y, chunks=1500)
    for steps in ((DPStandardScaler(bounds=(-12, 12), random_state=0),
                   DPLinearRegressionGD(random_state=0)),
                  (DPPCA(n_components=2, norm_bound=12.0, random_state=0),
                   AdaSSPRegressor(random_state=0))):
        on_dask, in_memory = make_pipeline(*steps), make_pipeline(*map(clone, steps))
        with dask.config.set(scheduler="synchronous"):
            on_dask.fit(Xd, yd)
            assert is_lazy(on_dask[0].transform(Xd))
        in_memory.fit(X, y)
        # Same seeds, same noise: only the order of the partial sums differs (about
        # 1e-14 relative): 1e-10 allows for that and would catch any other noise.
        np.testing.assert_allclose(on_dask[-1].coef_, in_memory[-1].coef_, rtol=1e-10)


def is_lazy(obj):
    return isinstance(obj, da.Array)


def test_mis_declared_weights_and_stream_partitions_fail_before_the_charge():
    # The declared-chunks check covered X and y only: weights declared unlike the rows
    # they hold failed after the charge, and partial_fit's y or weights after the
    # earlier partitions were released. (A 3-D X still gets its own message.)
    X = _table(4000)[:, :2]
    Xd = da.from_array(X, chunks=(1000, 2))
    short = [dask.delayed(lambda a: a)(np.ones(1000 - (i == 1))) for i in range(4)]
    wd = da.concatenate([da.from_delayed(p, shape=(1000,), dtype=float) for p in short])
    acc = BudgetAccountant(epsilon=5.0, delta=1e-5)
    with dask.config.set(scheduler="synchronous"):
        with pytest.raises(ValueError, match="sample_weight's partitions hold"):
            PrivateGaussianDensity(norm_bound=10.0, max_weight=2.0, accountant=acc).fit(
                Xd, sample_weight=wd)
        stream = DPStandardScaler(bounds=(-20.0, 20.0), max_weight=2.0, accountant=acc)
        with pytest.raises(ValueError, match="that of sample_weight has 999"):
            stream.partial_fit(Xd, sample_weight=wd)
        yd = da.concatenate([da.from_delayed(p, shape=(1000,), dtype=float) for p in short])
        with pytest.raises(ValueError, match="that of y has 999"):
            DPSGDRegressor(clip_norm=1.0, accountant=acc).partial_fit(Xd, yd)
        with pytest.raises(ValueError, match="2-D Dask array, got 3"):
            PrivateGaussianDensity(norm_bound=10.0, accountant=acc).fit(
                da.ones((400, 3, 4), chunks=(100, 2, 2)))
    assert acc.ledger == []


def test_a_weight_read_again_stays_within_max_weight():
    # fit's weights are checked once and read again by each release: the re-read is
    # mapped into [0, max_weight] whatever the source holds by then.
    from skdp.utils._validation import check_sample_weight

    reads = []

    def read(i):
        reads.append(i)
        return np.full(500, 50.0 if len(reads) > 2 else 1.0)

    wd = da.concatenate([da.from_delayed(dask.delayed(read)(i), shape=(500,), dtype=float)
                         for i in range(2)])
    with dask.config.set(scheduler="synchronous"):
        w = check_sample_weight(wd, 1000, 2.0)
        assert float(w.max().compute()) == 2.0 and len(reads) > 2


def test_a_pandas_output_in_a_dask_pipeline_fits_the_next_step_in_memory():
    # set_output(transform="pandas") computes the lazy output into the driver (the
    # user's choice); the next step, given pandas X beside a Dask y, failed after the
    # first step's charge. It now brings y into memory too and fits there.
    from sklearn.base import clone
    from sklearn.pipeline import make_pipeline

    from skdp.linear_model import AdaSSPRegressor

    X = _table(4000)[:, :3]
    y = X.sum(axis=1)
    Xd, yd = da.from_array(X, chunks=(1000, 3)), da.from_array(y, chunks=1000)
    for first in (DPStandardScaler(bounds=(-20.0, 20.0), random_state=0),
                  DPPCA(n_components=2, norm_bound=30.0, random_state=0)):
        acc = BudgetAccountant(epsilon=5.0, delta=1e-5)
        pipe = make_pipeline(first.set_params(accountant=acc),
                             AdaSSPRegressor(accountant=acc, random_state=0))
        pipe.set_output(transform="pandas")
        with dask.config.set(scheduler="synchronous"):
            pipe.fit(Xd, yd)
        assert len(acc.ledger) == 2
        again = BudgetAccountant(epsilon=5.0, delta=1e-5)  # the same ledger's draws
        reference = make_pipeline(clone(first).set_params(accountant=again),
                                  AdaSSPRegressor(accountant=again, random_state=0)).fit(X, y)
        # Same seeds and ledger, same noise: only summation order differs (1e-14).
        np.testing.assert_allclose(pipe[-1].coef_, reference[-1].coef_, rtol=1e-10)


def _csv_with_a_late_text(tmp_path):
    """4,000 rows of integers, the last 'a' a text: read_csv types 'a' from the first block."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.integers(0, 100, 4000), "b": rng.integers(0, 100, 4000)})
    frame = frame.astype(object)
    frame.loc[3999, "a"] = "SSN-123-45-6789"
    frame.to_csv(tmp_path / "t.csv", index=False)
    return dd.read_csv(tmp_path / "t.csv", blocksize=4000)


@pytest.mark.parametrize("method", ["fit", "partial_fit"])
def test_a_read_error_of_dask_quotes_no_value(tmp_path, method):
    from skdp.linear_model import DPLinearRegressionGD

    # Review 22: dd.read_csv guesses the column types from the first block; a
    # later block's text made Dask raise "invalid literal for int() ...: 'SSN-...'"
    # through skdp, quoting the private value. The message is withheld now, before
    # any charge; skdp's own schema errors still say what is wrong.
    table = _csv_with_a_late_text(tmp_path)
    assert table.npartitions > 1
    acc = BudgetAccountant(epsilon=10.0, delta=1e-5)
    with pytest.raises(ValueError, match=r"Dask collection failed \(builtins.ValueError\)") as info:
        getattr(DPStandardScaler(bounds=(0, 100), accountant=acc, random_state=0), method)(table)
    # Raised outside the except clause: not even __context__ holds the original.
    assert "SSN" not in str(info.value) and info.value.__context__ is None
    assert acc.ledger == []
    # A Dask y partitioned unlike X is read through the same guard (24th review).
    X = dd.from_pandas(pd.DataFrame({"b": np.ones(4000)}), npartitions=2)
    with pytest.raises(ValueError, match="Dask collection failed") as info:
        DPSGDRegressor(random_state=0).partial_fit(X, table["a"]) if method == "partial_fit" \
            else DPLinearRegressionGD(random_state=0).fit(X, table["a"])
    assert "SSN" not in str(info.value) and info.value.__context__ is None
    # skdp's own schema errors keep no __context__ quoting the value either.
    text = dd.from_pandas(pd.DataFrame({"a": ["1", "SSN-123-45-6789"]}), npartitions=1)
    with pytest.raises(ValueError, match="not numbers") as info:
        getattr(DPStandardScaler(bounds=(0, 100), random_state=0), method)(text.to_dask_array(
            lengths=True).reshape(-1, 1))
    assert info.value.__context__ is None
    clean = dd.from_pandas(pd.DataFrame({"a": [1.0, np.nan, 3.0, 4.0]}), npartitions=2)
    with pytest.raises(ValueError, match="Partition 0 contains NaN"):
        getattr(DPStandardScaler(bounds=(0, 100), random_state=0), method)(clean)


def test_a_worker_failure_is_withheld_with_its_own_hint():
    # A MemoryError names a block's shape (for read_csv, set by the rows' byte
    # lengths) and a KilledWorker a task key (for an array made from memory, a
    # hash of its bytes): withheld like a read error, with a hint about memory.
    from skdp.utils._dask import read

    killed = type("KilledWorker", (Exception,), {"__module__": "distributed.scheduler"})
    for error in (MemoryError("Unable to allocate 1.2 GiB for an array with shape (1234567,)"),
                  killed("Attempted to run task ('array-5d41402abc4b2a76', 0) on 3 workers")):
        with pytest.raises(ValueError, match="ran out of memory or died") as info:
            read(lambda error=error: (_ for _ in ()).throw(error))
        assert "1234567" not in str(info.value) and "5d41402a" not in str(info.value)
        assert info.value.__context__ is None
    with pytest.raises(ValueError, match="dd.read_csv guesses"):
        read(lambda: int("SSN-123"))


def test_a_search_and_predict_on_a_dask_table_quote_no_value_either(tmp_path):
    # 23rd review: the search's length check, and predict's validation, computed a
    # Dask table outside the guard.
    from skdp.linear_model import DPLinearRegressionGD
    from skdp.model_selection import DPGridSearchCV

    rng = np.random.default_rng(0)
    table = _csv_with_a_late_text(tmp_path)
    y = np.zeros(4000)
    acc = BudgetAccountant(epsilon=10.0, delta=1e-5)
    search = DPGridSearchCV(DPLinearRegressionGD(), {"n_iter": [200, 400]}, epsilon=1.0,
                            accountant=acc, random_state=0)
    with pytest.raises(ValueError, match="Dask collection failed") as info:
        search.fit(table, y)
    assert "SSN" not in str(info.value) and acc.ledger == []
    reg = DPLinearRegressionGD(epsilon=1.0, random_state=0).fit(
        rng.normal(size=(2000, 2)), rng.normal(size=2000))
    with pytest.raises(ValueError, match="Dask collection failed") as info:
        reg.predict(table)
    assert "SSN" not in str(info.value)
    # A clean Dask table is searched in memory.
    clean = dd.from_pandas(pd.DataFrame(rng.normal(size=(3000, 2)), columns=["a", "b"]),
                           npartitions=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search.set_params(accountant=None).fit(clean, clean["a"] * 2.0)
    assert search.best_params_["n_iter"] in (200, 400)


def test_a_dask_dataframe_stream_keeps_its_column_names(client):
    # The review of session 23: partial_fit over a Dask DataFrame passed numpy
    # partitions, so the stream lost feature_names_in_ and bounds given by column
    # name were refused ("X has no column names") while fit took them.
    import dask.dataframe as dd

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"age": rng.uniform(18, 90, 4000), "dose": rng.uniform(0, 500, 4000)})
    lo, hi = pd.Series({"dose": 0.0, "age": 18.0}), pd.Series({"dose": 500.0, "age": 90.0})
    stream = DPStandardScaler(bounds=(lo, hi), random_state=0).partial_fit(
        dd.from_pandas(X, npartitions=4))
    assert list(stream.feature_names_in_) == ["age", "dose"]
    np.testing.assert_array_equal(stream.bounds_[0], [18.0, 0.0])
