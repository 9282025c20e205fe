"""Private hyper-parameter search: fits, validation scores and the choice inside one GDP budget."""

from __future__ import annotations

import warnings
from copy import deepcopy
from numbers import Integral, Real

import numpy as np
from joblib import Parallel, delayed
from scipy.sparse import issparse
from scipy.stats import rankdata
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone
from sklearn.exceptions import DataConversionWarning
from sklearn.model_selection import ParameterGrid, ParameterSampler
from sklearn.pipeline import Pipeline
from sklearn.utils import get_tags
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_consistent_length, check_is_fitted, column_or_1d

from skdp.accounting import budget_mu
from skdp.base import NoGeneratorPickleMixin, PrivacySpent
from skdp.mechanisms import is_secure_mode, make_rng, spawn_rngs
from skdp.mechanisms._random import release_part
from skdp.model_selection._budget import (
    FitAllowance,
    Probe,
    ProbeDone,
    _is_private,
    budget_params,
    forget_noise,
    private_steps,
    selection_budget,
    set_accountants,
    splits,
    uses_per_row,
)
from skdp.model_selection._finite_output import unwrap_public_steps, wrap_public_steps
from skdp.model_selection._scoring import (
    SCORINGS,
    default_scoring,
    noisy_mean_loss,
    row_losses,
    score_from_loss,
)
from skdp.utils._dask import as_float64, in_memory
from skdp.utils._sklearn import HasMethods, Interval, StrOptions, _fit_context
from skdp.utils._sklearn import validate_parameter_constraints as _validate_constraints
from skdp.utils._warnings import is_skdp_warning, warn

__all__ = ["DPGridSearchCV", "DPRandomizedSearchCV"]

_SEARCH_OWNED = ("epsilon", "accountant", "random_state")


def _rows(a, idx):
    return a.iloc[idx] if hasattr(a, "iloc") else a[idx]


def _fit_and_score(estimator, mu, X, y, train, val, scoring, loss_bound, noise_rng, keep,
                   label=None):
    """One candidate on one split: a mu-GDP fit on the training rows and a mu-GDP score.

    ``label`` (candidate, split) names the parts of the rows in the release log
    (:func:`skdp.mechanisms.record_releases`).
    """
    allowance = FitAllowance(mu)
    set_accountants(estimator, allowance)
    # A candidate's warnings are collected for cv_results_, not shown: only
    # the estimator the search returns warns. Only skdp's own count: they are
    # computed from released quantities; a user's step may warn about the data.
    with release_part((*label, "train") if label else None), \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        estimator.fit(_rows(X, train), _rows(y, train))
    messages = sorted({f"{w.category.__name__}: {w.message}" for w in caught
                       if is_skdp_warning(w)})
    set_accountants(estimator, None)
    forget_noise(estimator)
    if allowance.spent_sq == 0.0:
        raise TypeError(f"{type(estimator).__name__} drew its noise without charging its "
                        "accountant; a private search cannot vouch for it.")
    with warnings.catch_warnings():  # a user's step may warn about the validation rows
        warnings.simplefilter("ignore")
        losses = row_losses(scoring, estimator, _rows(X, val), np.asarray(_rows(y, val)),
                            loss_bound)
    with release_part((*label, "validation") if label else None):
        mean_loss = noisy_mean_loss(losses, loss_bound, mu, noise_rng)
    return mean_loss, (estimator if keep else None), messages


def _estimator_has(attr):
    def check(self):
        if hasattr(self, "best_estimator_"):
            getattr(self.best_estimator_, attr)
        else:
            getattr(self.estimator, attr)
        return True
    return check


def _check_scorable(candidates, scoring: str, y) -> None:
    """Refuse, before the charge, a scoring that the candidates or the labels cannot serve."""
    kind = SCORINGS[scoring][0]
    needed = "predict_proba" if kind == "log" else "predict"
    for est in candidates:
        if not hasattr(est, needed):
            raise TypeError(f"scoring={scoring!r} needs the candidates' {needed}, which "
                            f"{type(est).__name__} does not have.")
    # Text labels only (complex or otherwise odd numbers are the estimators' to refuse).
    if kind in ("squared", "absolute") and np.asarray(y).dtype.kind in "USO":
        as_float64(y, ValueError(f"scoring={scoring!r} needs numeric labels; use 'accuracy' "
                                 "or 'neg_log_loss' for class labels."))


class _HeldWarnings:
    """A ``warnings.showwarning`` that holds what it is given; :meth:`show` shows each once.

    Installed inside ``catch_warnings`` during the dry runs: the user's filters
    still act as each warning is raised ("error" stops the search before the
    charge, "ignore" drops it), but what they would show is held back, and
    shown only with a dry run's error. A search that goes on does not show
    them: the candidates' fits record their own in ``cv_results_``, and the
    returned estimator's fit warns itself.
    """

    def __init__(self):
        self.held = {}

    def __call__(self, message, category, filename, lineno, file=None, line=None):
        self.held.setdefault((category, str(message)), (message, category, filename, lineno,
                                                         file, line))

    def show(self):
        for args in self.held.values():
            warnings.showwarning(*args)


def _probe_fit(est, X, y) -> None:
    """Fit ``est`` (its accountants are :class:`Probe` ledgers) until its first charge."""
    try:
        est.fit(X, y)
    except ProbeDone:
        return
    raise TypeError(f"{type(est).__name__} fitted without charging its accountant; a "
                    "private search cannot vouch for it.")


def _dry_run(est, X, y, mu: float) -> None:
    """Fit ``est`` up to the charge of each private step, before the search charges anything.

    A private step's fit validates its parameters and data, then stops at
    its charge (its accountants are :class:`Probe` ledgers of the
    candidate's share ``mu``). A Pipeline is first fitted as a whole up to
    its first charge (scikit-learn's own checks of the pipeline, and the
    steps up to the first private one), then walked step by step with one
    fresh probe for all its steps, whose charges must fit in ``mu``
    together: after a private transformer that can say the shape of its
    output from public quantities (``_probe_output``: skdp's scaler and PCA)
    zeros of that shape stand in for its output, so that the later steps'
    own checks (too few rows for a private bound, for example) also run
    before the charge. The walk ends where the output is no longer known: a
    private transformer without ``_probe_output``, or a stateless step that
    fails or gives non-finite values on the stand-in (a row normalisation of
    zeros, a column selection by name on an array): the real data may suit
    it, so that is no reason to refuse the search. The later private steps'
    checks of the labels, which pass through unchanged, still run
    (:func:`_probe_labels`).
    """
    _probe_fit(est, X, y)
    if not isinstance(est, Pipeline):
        return
    set_accountants(est, Probe(mu))
    _walk(est, X, y, stand_in=False)


def _walk(est, X, y, stand_in: bool):
    """One step (or a nested Pipeline) of :func:`_dry_run`'s walk.

    Returns its output (None when unknown) and whether that output is a
    stand-in rather than a transform of the data.
    """
    if isinstance(est, Pipeline):
        for _, step in est.steps:
            if step is None or (isinstance(step, str) and step == "passthrough"):
                continue
            if X is None:  # the output is unknown: only the checks of the labels can run
                _probe_labels(step, y)
                continue
            X, stand_in = _walk(step, X, y, stand_in)
        return X, stand_in
    if not _is_private(est):  # stateless (private_steps refuses the others)
        if not hasattr(est, "fit_transform"):
            return None, stand_in
        if not stand_in:
            return clone(est).fit_transform(X, y), False
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                out = clone(est).fit_transform(X, y)
            finite = np.all(np.isfinite(np.asarray(out, dtype=float)))
        except Exception:  # the stand-in, not the data, may be what it cannot take
            return None, True
        return (out if finite else None), True
    _probe_fit(est, X, y)
    probe_output = getattr(est, "_probe_output", None)
    return (None if probe_output is None else probe_output(X)), True


def _probe_labels(est, y) -> None:
    """The label checks (``_probe_labels``) of the private steps the walk cannot reach with data.

    The labels pass through a Pipeline unchanged, so a classifier's check of
    its training part's classes runs before the charge even where the walk
    lost the data's shape.
    """
    if isinstance(est, Pipeline):
        for _, step in est.steps:
            if not (step is None or (isinstance(step, str) and step == "passthrough")):
                _probe_labels(step, y)
    elif _is_private(est) and hasattr(est, "_probe_labels") and y is not None:
        est._probe_labels(y)


class _BaseDPSearchCV(NoGeneratorPickleMixin, MetaEstimatorMixin, BaseEstimator):
    """The private search; subclasses say which candidates to try (``_candidate_params``)."""

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit"])],
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "cv": [Interval(Integral, 2, None, closed="left"), Interval(Real, 0, 1, closed="neither")],
        "scoring": [StrOptions(set(SCORINGS)), None],
        "loss_bound": [Interval(Real, 0, None, closed="neither"), None],
        "refit": ["boolean"],
        "selection_share": [Interval(Real, 0, 1, closed="neither")],
        "n_jobs": [Integral, None],
        "accountant": [HasMethods(["charge_mu"]), None],
        # As every skdp estimator: an outer private search gives its steps 128-bit seeds.
        "random_state": [Interval(Integral, 0, None, closed="left"), np.random.RandomState,
                         np.random.Generator, None],
        "verbose": ["verbose"],
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        sub = get_tags(self.estimator)
        tags.estimator_type = sub.estimator_type
        tags.classifier_tags = deepcopy(sub.classifier_tags)
        tags.regressor_tags = deepcopy(sub.regressor_tags)
        tags.input_tags.sparse = sub.input_tags.sparse
        return tags

    # -- preparation: everything that can fail does so before the charge ---------
    def _scoring(self) -> tuple[str, float]:
        scoring = self.scoring or default_scoring(get_tags(self.estimator).estimator_type)
        default_bound = SCORINGS[scoring][1]
        if scoring == "accuracy" or self.loss_bound is None:
            return scoring, default_bound
        return scoring, float(self.loss_bound)

    def _ledger(self):
        """The accountant to charge: the search's, else the one the estimator carries."""
        carried = {id(step.accountant): step.accountant
                   for _, step in private_steps(self.estimator) if step.accountant is not None}
        if self.accountant is not None:
            carried.pop(id(self.accountant), None)
            if carried:
                raise ValueError("The search and its estimator name different accountants; pass "
                                 "one ledger (the search charges it once for everything).")
            return self.accountant
        if len(carried) > 1:
            raise ValueError("The estimator's private steps name different accountants; a "
                             "search charges one ledger.")
        return next(iter(carried.values()), None)

    def _candidate(self, params: dict, mu: float, states=None) -> BaseEstimator:
        """The estimator with ``params``, its private steps set to spend ``mu`` in total.

        Parameter values are cloned, as scikit-learn's searches do: an
        estimator given as a grid value is never modified. ``states`` holds
        one ``random_state`` per private step (None: all None).
        """
        params = {k: clone(v, safe=False) for k, v in params.items()}
        est = clone(self.estimator).set_params(**params)  # unknown names raise here
        steps = private_steps(est)
        owned = {f"{prefix}{name}" for prefix, _ in steps for name in _SEARCH_OWNED}
        if owned & params.keys():
            raise ValueError(
                f"The grid sets {sorted(owned & params.keys())}: the search sets every "
                "candidate's epsilon from its own budget, charges its own accountant and "
                "draws the noise from its own random_state. Remove them from the grid.")
        for step in self._all_steps(est):
            if hasattr(step, "_parameter_constraints"):
                _validate_constraints(step._parameter_constraints, step.get_params(deep=False),
                                      caller_name=type(step).__name__)
        states = [None] * len(steps) if states is None else list(states)
        if len(states) < len(steps):
            raise RuntimeError("Internal error: fewer noise sources than private steps.")
        return est.set_params(**budget_params(est, mu, states[:len(steps)]))

    @staticmethod
    def _all_steps(est) -> list:
        if hasattr(est, "steps"):
            return [item for _, step in est.steps if hasattr(step, "get_params")
                    for item in _BaseDPSearchCV._all_steps(step)]
        return [est]

    def _states(self, rng, count, params_list):
        """Independent noise seeds: ``count`` fits, one per private step of each (None in
        secure mode: OS entropy).

        Seeds are ints, so that a Pipeline that clones its steps (``memory=``)
        or a worker process that unpickles them keeps one independent stream
        per step; the search forgets them after each fit. They are 128-bit:
        two fits with one seed would add the same noise, and with 32-bit seeds
        that happened with probability about ``N**2 / 2**33`` for N fits
        (7e-6 for 50 candidates on 5 folds, above a typical delta).
        """
        n_steps = max(len(private_steps(self._candidate(p, 1.0))) for p in params_list)
        if is_secure_mode():
            return [[None] * n_steps for _ in range(count)]
        return [[int.from_bytes(rng.bytes(16), "little") for _ in range(n_steps)]
                for _ in range(count)]

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y):
        """Run the private search and, with ``refit``, fit the chosen candidate privately.

        Everything that can fail on the parameters (an empty grid, an unknown
        or invalid parameter, a grid the budget cannot cover, an estimator
        outside the budget) fails before the accountant is charged: each
        candidate is also run up to the point where it would charge (its own
        checks of parameters and data) on every training part, and the first
        one (with ``refit``, every one) on all the rows, and stopped there.
        Then the accountant is
        charged once, for the whole search, and only then is any noise drawn.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : object
        """
        if y is None:
            raise ValueError(f"{type(self).__name__} needs y: its score is a loss on labelled "
                             "validation rows.")
        # The splits index rows: a Dask X or y comes into memory, its read errors guarded.
        X, y = in_memory(X, y)
        check_consistent_length(X, y)
        if issparse(X):
            X = X.tocsr()  # rows can be indexed; the estimator says whether it takes sparse X
        elif not hasattr(X, "iloc"):
            X = np.asarray(X)
        if not hasattr(y, "iloc"):
            y = np.asarray(y)
        if y.ndim == 2:
            if y.shape[1] == 1:  # at the user's line (scikit-learn's would name its own)
                warn("A column-vector y was passed when a 1d array was expected; it is read "
                     "as y[:, 0].", DataConversionWarning)
            y = column_or_1d(y)  # several outputs raise
        n = X.shape[0]
        scoring, loss_bound = self._scoring()
        rng = make_rng(self.random_state)
        params_list = list(self._candidate_params(rng))
        if not params_list:
            raise ValueError(f"{type(self).__name__} got no candidate: the parameter grid is empty.")
        split_list = splits(n, self.cv, rng)
        m, k = len(params_list), len(split_list)
        mu = budget_mu(self.epsilon, self.delta)
        mu_candidate, mu_refit = selection_budget(
            mu, m, uses_per_row(split_list, n), self.refit, self.selection_share)
        ledger = self._ledger()
        candidates = [self._candidate(params, mu_candidate) for params in params_list]
        _check_scorable(candidates, scoring, y)
        # Dry runs up to the charge. First on all rows (the data's schema, validation
        # rows included): with refit every candidate at the refit's share (its own
        # checks: any candidate may be chosen), else the first one. Then every
        # candidate on every training part at its share (its parameters, and checks
        # that depend on the part's rows: their number, or a classifier that reads
        # its classes from the labels and finds only one in a part). A check that
        # fails only in the real fits would fail after the charge, and whether it
        # fails depends on how the rows fall into the parts.
        # One part is copied at a time.
        def probes(candidates):
            if self.refit:
                for params in params_list:
                    yield self._candidate(params, mu_refit), (X, y), mu_refit
            else:
                yield candidates[0], (X, y), mu_candidate
            for train, _ in split_list:
                part = _rows(X, train), _rows(y, train)
                for c in candidates:
                    yield c, part, mu_candidate
        # The dry runs' warnings (a candidate's before its charge: classes=None, say)
        # meet the user's filters as each is raised (an "error" filter stops the
        # search here, before the charge), but are shown, once each, only with a
        # dry run's error: otherwise the real fits raise them again (only the
        # returned estimator's are shown).
        held = _HeldWarnings()
        try:
            with warnings.catch_warnings():  # restores showwarning on the way out
                warnings.showwarning = held
                for est, data, mu_probe in probes(candidates):
                    set_accountants(est, Probe(mu_probe))
                    _dry_run(est, *data, mu_probe)
        except Exception:
            held.show()
            raise
        del candidates

        entry = None
        if ledger is not None:  # once, for everything, before any noise
            entry = ledger.charge_mu(mu, label=f"{type(self).__name__}: {m} candidates, {k} "
                                     "split(s)" + (", refit" if self.refit else ""))
        if isinstance(entry, int) and not isinstance(entry, bool):
            # Mixed with the ledger entry: two searches charged to one ledger
            # never share noise (see skdp.mechanisms.make_rng).
            rng = make_rng(self.random_state, entry=entry)
        states = self._states(rng, m * k + 1, params_list)
        noise = spawn_rngs(rng, m * k)
        tasks = [delayed(_fit_and_score)(
                     wrap_public_steps(self._candidate(params, mu_candidate, states[c * k + j])),
                     mu_candidate, X, y,
                     train, val, scoring, loss_bound, noise[c * k + j],
                     keep=not self.refit and j == 0, label=(c, j))
                 for c, params in enumerate(params_list)
                 for j, (train, val) in enumerate(split_list)]
        results = Parallel(n_jobs=self.n_jobs, verbose=self.verbose)(tasks)

        losses = np.array([r[0] for r in results]).reshape(m, k)
        noise_std = max(loss_bound / (mu_candidate * len(val)) for _, val in split_list)
        if scoring != "accuracy" and losses.mean(axis=1).min() > loss_bound - 3.0 * noise_std:
            # Read from the noisy scores only: even the best is at the bound.
            warn(
                f"Every candidate's validation loss is at loss_bound={loss_bound:g}: the scores "
                "cannot tell the candidates apart. Declare a loss_bound on the scale of your "
                "labels (w**2 for labels in a range of width w).", UserWarning)
        split_scores = score_from_loss(scoring, losses)
        mean_scores = split_scores.mean(axis=1)
        best = int(np.argmax(mean_scores))
        self.cv_results_ = self._results(params_list, split_scores)
        # Warnings of the candidates' fits (e.g. clipping), one string per
        # candidate, distinct messages over its splits joined by " | ".
        notes = [sorted({msg for j in range(k) for msg in results[c * k + j][2]})
                 for c in range(m)]
        self.cv_results_["warnings"] = np.array([" | ".join(n) for n in notes], dtype=object)
        self.best_index_ = best
        self.best_params_ = params_list[best]
        self.best_score_ = float(mean_scores[best])
        if self.refit:
            est = wrap_public_steps(self._candidate(params_list[best], mu_refit, states[m * k]))
            set_accountants(est, FitAllowance(mu_refit))
            # Its warnings are shown, as those of the user's own fit of the Pipeline.
            self.best_estimator_ = unwrap_public_steps(est.fit(X, y))
            forget_noise(self.best_estimator_)
        else:
            self.best_estimator_ = unwrap_public_steps(results[best * k][1])
            for message in results[best * k][2]:  # the returned estimator's own warnings
                warn(f"The chosen candidate's fit warned: {message}", UserWarning)
        set_accountants(self.best_estimator_, ledger)
        self.scorer_ = scoring
        self.loss_bound_ = loss_bound
        self.n_splits_ = k
        self.candidate_privacy_ = PrivacySpent.of(mu_candidate, self.delta)
        self.refit_privacy_ = PrivacySpent.of(mu_refit, self.delta) if self.refit else None
        self.score_noise_std_ = np.array([loss_bound / (mu_candidate * len(val))
                                          for _, val in split_list])
        self.privacy_spent_ = PrivacySpent.of(mu, self.delta)
        return self

    def _results(self, params_list, split_scores):
        m, k = split_scores.shape
        results = {"params": params_list}
        for key in sorted({key for p in params_list for key in p}):
            column = np.ma.MaskedArray(np.empty(m, dtype=object), mask=True)
            for i, p in enumerate(params_list):
                if key in p:
                    column[i] = p[key]
            results[f"param_{key}"] = column
        for j in range(k):
            results[f"split{j}_test_score"] = split_scores[:, j]
        mean = split_scores.mean(axis=1)
        results["mean_test_score"] = mean
        results["std_test_score"] = split_scores.std(axis=1)
        results["rank_test_score"] = rankdata(-mean, method="min").astype(np.int32)
        return results

    # -- the chosen estimator ---------------------------------------------------
    @property
    def classes_(self):
        """Class labels of the chosen classifier."""
        check_is_fitted(self)
        return self.best_estimator_.classes_

    @property
    def n_features_in_(self):
        """Number of features seen during fit."""
        try:
            check_is_fitted(self)
        except Exception as exc:
            raise AttributeError(f"{type(self).__name__} has no n_features_in_ before fit.") from exc
        return self.best_estimator_.n_features_in_

    @property
    def feature_names_in_(self):
        """Feature names seen during fit (only for DataFrames with string column names)."""
        try:
            check_is_fitted(self)
        except Exception as exc:
            raise AttributeError(f"{type(self).__name__} has no feature_names_in_ before fit.") \
                from exc
        return self.best_estimator_.feature_names_in_

    @available_if(_estimator_has("predict"))
    def predict(self, X):
        """Predict with the chosen estimator (post-processing: no budget).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        return self.best_estimator_.predict(X)

    @available_if(_estimator_has("predict_proba"))
    def predict_proba(self, X):
        """Class probabilities of the chosen classifier (post-processing: no budget).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        check_is_fitted(self)
        return self.best_estimator_.predict_proba(X)

    @available_if(_estimator_has("decision_function"))
    def decision_function(self, X):
        """Decision function of the chosen classifier (post-processing: no budget).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray
        """
        check_is_fitted(self)
        return self.best_estimator_.decision_function(X)

    @available_if(_estimator_has("transform"))
    def transform(self, X):
        """Transform with the chosen estimator (post-processing: no budget).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray
        """
        check_is_fitted(self)
        return self.best_estimator_.transform(X)

    @available_if(_estimator_has("score"))
    def score(self, X, y):
        """The chosen estimator's ``score`` on (X, y).

        Like every ``score`` method it is computed without noise on the data
        you pass: use it on public or test data, not on the private rows.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        float
        """
        check_is_fitted(self)
        return self.best_estimator_.score(X, y)


_DOC = """%(summary)s

The whole search is private, not only its fits: every candidate's training,
its validation score and the choice among them are covered by one
(epsilon, delta) budget, composed exactly in Gaussian DP, and the
accountant is charged once for all of it before any noise is drawn. See the
user guide, :ref:`model_selection`.

Parameters
----------
estimator : estimator
    An skdp estimator (with ``epsilon``, ``delta`` and ``accountant``
    parameters) or a :class:`~sklearn.pipeline.Pipeline` whose steps are skdp
    estimators, stateless transformers or encoders with declared categories
    (a step that learns from the data without privacy, e.g.
    ``StandardScaler``, is refused; see the user guide). The search sets
    the private steps' ``epsilon``, ``accountant`` and ``random_state``;
    their own ``epsilon`` and ``delta`` only fix how they share a
    candidate's budget (see Notes).
%(candidates)s
epsilon : float, default=1.0
    Privacy budget of the whole search (fits, scores, choice and refit), in
    (0, inf).
delta : float, default=1e-6
    Privacy budget of the whole search, in (0, 1).
cv : int or float, default=0.25
    A float in (0, 1) holds out that fraction of the rows for validation
    (each row is trained on or scored on, once per candidate); an int k >= 2
    is k-fold cross-validation (each row enters k releases per candidate,
    which costs a factor sqrt(k) in each candidate's mu). The rows are
    shuffled with ``random_state``, never split by the labels (a stratified
    split would depend on the private data).
scoring : {'neg_mean_squared_error', 'neg_mean_absolute_error', 'accuracy', \
'neg_log_loss'} or None, default=None
    The per-row loss behind the validation score: squared or absolute
    residual, 0-1 loss, or minus the log of the probability of the true
    class, each clipped to ``[0, loss_bound]``. None means 'accuracy' for
    classifiers and 'neg_mean_squared_error' otherwise. Greater is better,
    as in scikit-learn.
loss_bound : float or None, default=None
    Public bound on the per-row loss, > 0; larger losses count as
    ``loss_bound``. It sets the noise of the scores (std ``loss_bound /
    (mu_candidate * n_validation)`` on the mean loss). None means 4.0 for the
    squared residual and 2.0 for the absolute residual (a residual of two
    units, for labels of unit scale), log(100) for the log loss (a
    probability below 1%% counts as 1%%); the 0-1 loss is bounded by 1. For
    labels in a known range of width w, ``w**2`` bounds the squared error of
    predictions inside that range.
refit : bool, default=True
    Fit the chosen candidate again on all the rows with ``1 -
    selection_share`` of the budget (``best_estimator_``). False spends the
    whole budget on the selection and keeps the chosen candidate as it was
    fitted on the (first) training part.
selection_share : float, default=0.4
    Share of the budget, as a fraction of ``mu**2``, spent on the selection
    when ``refit``; in (0, 1).
n_jobs : int or None, default=None
    Candidate fits run in parallel (joblib). The accountant is charged once
    in this process; the workers charge nothing.
accountant : BudgetAccountant or None, default=None
    Ledger charged once per call to ``fit``, with the whole budget, after
    every check and before any noise is drawn; a search that would exceed
    it raises :class:`~skdp.exceptions.BudgetExceededError` and spends
    nothing. None means the accountant the estimator's private steps carry,
    if any (naming two different ledgers is an error).
random_state : int, RandomState, Generator or None, default=None
    Source of the splits, of the candidates' noise and of the scores'
    noise. Use None (or secure mode, :func:`skdp.mechanisms.secure_mode`)
    for real releases; a fixed seed is for tests and examples.
verbose : int, default=0
    joblib's progress messages: tasks done (public) and the time elapsed, a
    side channel the guarantee does not cover (threat model), which is why
    ``cv_results_`` has no fit or score times.

Attributes
----------
cv_results_ : dict of ndarrays
    As scikit-learn's: ``params``, ``param_<name>`` (masked arrays),
    ``split<j>_test_score``, ``mean_test_score``, ``std_test_score``,
    ``rank_test_score``. Every score is a noisy release. Fit and score
    times are not reported: timings are a side channel outside the guarantee.
    ``warnings`` holds, per candidate, the distinct skdp warnings its fits
    raised (joined by " | "; empty if none): they are collected there, not
    shown, so that only the returned estimator's fit warns. Only skdp's own
    (computed from released quantities) are kept: a user step's warnings,
    or another library's, may describe the data.
best_index_ : int
    The candidate with the highest noisy mean score.
best_params_ : dict
best_score_ : float
    Its noisy mean score. As the largest of several noisy scores it is
    biased upwards.
best_estimator_ : estimator
    The chosen candidate, refitted on all the rows with ``refit_privacy_``
    (or, with ``refit=False``, as fitted on the first training part). Its
    private steps carry the accountant, so fitting it again charges it, and
    their ``random_state`` is None: the search drew their noise from
    generators it does not release (a generator's state after a fit would
    let anyone replay the noise).
scorer_ : str
    The scoring used.
loss_bound_ : float
    The bound of the per-row loss used.
n_splits_ : int
candidate_privacy_ : PrivacySpent
    Guarantee of each candidate fit and of each score, alone.
refit_privacy_ : PrivacySpent or None
    Guarantee of the refit (None without refit).
score_noise_std_ : ndarray of shape (n_splits,)
    Std of the Gaussian noise on each split's mean loss.
privacy_spent_ : PrivacySpent
    ``(epsilon, delta, mu)`` of the whole search.
classes_ : ndarray
    The chosen classifier's classes.
n_features_in_ : int
feature_names_in_ : ndarray of shape (n_features,)
    Only when X is a DataFrame with string column names.

See Also
--------
%(see_also)s

Notes
-----
**Guarantee.** Neighbouring datasets differ in one row replaced by another;
n is public. With mu the GDP parameter of (epsilon, delta), m candidates
and u releases per row and candidate (1 for a hold-out ``cv``, k for k
folds), each candidate fit and each noisy score is ``mu_c``-GDP with
``mu_c = mu sqrt(selection_share / (m u))`` (``selection_share`` is 1
without refit). The fit is the estimator's own guarantee at that budget;
the score is the Gaussian mechanism on the mean of a per-row loss in
``[0, loss_bound]`` (replace-one sensitivity ``loss_bound / n_validation``).
A row enters at most ``m u`` of these releases, and the releases that do not
read it cost nothing for it, so the selection is exactly
``sqrt(m u) mu_c``-GDP by composition (Dong, Roth & Su 2022); choosing the
best noisy score is post-processing. The refit on all rows is
``mu sqrt(1 - selection_share)``-GDP, and the whole search composes to
exactly mu, i.e. (epsilon, delta)-DP. Each candidate fit is given a ledger
of exactly ``mu_c`` (so a fit that would spend more stops before drawing
noise), and the grid itself (the candidates) is public: choose it without
looking at the private data.

**Why a hold-out split.** At a fixed budget a shared hold-out split
(train/validation rows in parallel, candidates composed) trains every
candidate on more rows with more budget than disjoint parts per candidate
(each row used once) and than k-fold cross-validation, and it beats
random-stopping selection (Papernot & Steinke 2022; Liu & Talwar 2019) on
the grids measured (up to 24 candidates); the user guide quotes the
comparison (``benchmarks/model_selection.py``).

**Pipelines.** The private steps of a candidate share its ``mu_c`` in
proportion to the GDP parameters of their own ``(epsilon, delta)``: a
scaler declared with epsilon 0.5 and a regressor with epsilon 1 keep that
ratio, rescaled so that together they spend exactly ``mu_c``. Each step's
``epsilon`` is set to :func:`~skdp.accounting.epsilon_from_mu` of its share
at its own ``delta``.

**What it does not cover.** ``score`` is the chosen estimator's own,
non-private ``score`` on the data you pass (use test or public data).
Errors raised during the fits themselves (after the charge) leave the budget
spent.

Examples
--------
%(example)s
"""

_GRID = {
    "summary": "Private exhaustive search over a parameter grid.",
    "candidates": """param_grid : dict or list of dicts
    Parameter names (with ``step__`` prefixes for a Pipeline) mapped to the
    values to try, as for :class:`~sklearn.model_selection.GridSearchCV`.""",
    "see_also": """DPRandomizedSearchCV : Candidates sampled from distributions.
sklearn.model_selection.GridSearchCV : The non-private search; its scores and
    choice are outside any skdp guarantee.""",
    "example": """>>> import numpy as np
>>> from skdp.linear_model import DPLinearRegressionGD
>>> from skdp.model_selection import DPGridSearchCV
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(20_000, 3))
>>> y = X @ np.array([1.0, -0.5, 0.25]) + rng.normal(scale=0.5, size=20_000)
>>> search = DPGridSearchCV(DPLinearRegressionGD(), {"clip_norm": [0.01, 10.0, 1e4]},
...                         epsilon=2.0, random_state=0).fit(X, y)
>>> search.best_params_
{'clip_norm': 10.0}
>>> search.privacy_spent_.epsilon
2.0...
>>> bool(np.abs(search.best_estimator_.coef_ - [1.0, -0.5, 0.25]).max() < 0.05)
True""",
}

_RANDOM = {
    "summary": "Private search over parameters sampled from distributions.",
    "candidates": """param_distributions : dict or list of dicts
    Parameter names mapped to lists (sampled uniformly) or to distributions
    with an ``rvs`` method, as for
    :class:`~sklearn.model_selection.RandomizedSearchCV`. The candidates are
    drawn with ``random_state``, without looking at the data.
n_iter : int, default=10
    Number of candidates (fewer if a grid of lists has fewer points). Each
    costs budget: the candidates' mu shrinks as ``1 / sqrt(n_iter)``.""",
    "see_also": """DPGridSearchCV : Every point of a grid.
sklearn.model_selection.RandomizedSearchCV : The non-private search.""",
    "example": """>>> import numpy as np
>>> from scipy.stats import loguniform
>>> from skdp.linear_model import DPLinearRegressionGD
>>> from skdp.model_selection import DPRandomizedSearchCV
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(5_000, 3))
>>> y = X @ np.array([1.0, -0.5, 0.25]) + rng.normal(scale=0.5, size=5_000)
>>> search = DPRandomizedSearchCV(DPLinearRegressionGD(),
...                               {"clip_norm": loguniform(0.01, 1e4)}, n_iter=4,
...                               epsilon=2.0, random_state=0).fit(X, y)
>>> len(search.cv_results_["params"]), search.n_splits_
(4, 1)""",
}


def _doc(parts: dict) -> str:
    return _DOC % parts


class DPGridSearchCV(_BaseDPSearchCV):
    __doc__ = _doc(_GRID)

    _parameter_constraints: dict = {
        **_BaseDPSearchCV._parameter_constraints,
        "param_grid": [dict, list],
    }

    def __init__(self, estimator, param_grid, *, epsilon=1.0, delta=1e-6, cv=0.25, scoring=None,
                 loss_bound=None, refit=True, selection_share=0.4, n_jobs=None, accountant=None,
                 random_state=None, verbose=0):
        self.estimator = estimator
        self.param_grid = param_grid
        self.epsilon = epsilon
        self.delta = delta
        self.cv = cv
        self.scoring = scoring
        self.loss_bound = loss_bound
        self.refit = refit
        self.selection_share = selection_share
        self.n_jobs = n_jobs
        self.accountant = accountant
        self.random_state = random_state
        self.verbose = verbose

    def _candidate_params(self, rng):
        return ParameterGrid(self.param_grid)


class DPRandomizedSearchCV(_BaseDPSearchCV):
    __doc__ = _doc(_RANDOM)

    _parameter_constraints: dict = {
        **_BaseDPSearchCV._parameter_constraints,
        "param_distributions": [dict, list],
        "n_iter": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, estimator, param_distributions, *, n_iter=10, epsilon=1.0, delta=1e-6,
                 cv=0.25, scoring=None, loss_bound=None, refit=True, selection_share=0.4,
                 n_jobs=None, accountant=None, random_state=None, verbose=0):
        self.estimator = estimator
        self.param_distributions = param_distributions
        self.n_iter = n_iter
        self.epsilon = epsilon
        self.delta = delta
        self.cv = cv
        self.scoring = scoring
        self.loss_bound = loss_bound
        self.refit = refit
        self.selection_share = selection_share
        self.n_jobs = n_jobs
        self.accountant = accountant
        self.random_state = random_state
        self.verbose = verbose

    def _candidate_params(self, rng):
        seed = int(rng.integers(0, 2**31 - 1))  # the candidates are drawn without the data
        return ParameterSampler(self.param_distributions, self.n_iter, random_state=seed)
