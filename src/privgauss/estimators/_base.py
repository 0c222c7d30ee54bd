"""The protocol shared by the private estimators, as scikit-learn's ``mixture/_base.py``: the
base class runs every fit — validate → public facts → choose the method → plan → run inside the
private section → record the fitted attributes — and each subclass supplies small hooks (its
parameter checks, its facts, its plan, its run, its fitted attributes, its model fields); plus
budgets, accountants and privacy reports."""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from types import FrameType
from typing import Any, ClassVar

import numpy as np

from .. import methods
from ..exceptions import EstimationFailed, InvalidDataError, PrivacyBudgetError
from ..gaussian.clip_diagnostics import clipped_advice
from ..linalg import clip_eigenvalues
from ..mechanisms import Release
from ..methods import Facts
from ..noise import NoiseSource, as_noise
from ..privacy import (
    ZCDP,
    Accountant,
    Budget,
    PureDP,
    budget_to_dict,
    charge_rest,
    delta_at_least,
    make_budget,
)
from ..validation import check_data, validated_rows
from ..warnings import (
    BudgetSpentWarning,
    ClippedDataWarning,
    LargeDeltaWarning,
    SeededNoiseWarning,
)

NEIGHBOURS = "replace-one (n public)"


class BudgetMixin:
    """Turns the estimator's budget keywords into a per-fit accountant."""

    rho: float | None
    epsilon: float | None
    delta: float | None
    accountant: Accountant | None

    def _budget(self) -> Budget:
        if self.rho is None and self.epsilon is None and self.accountant is not None:
            remaining = self.accountant.remaining
            if remaining is None:
                raise PrivacyBudgetError("the shared accountant has no budget left")
            return remaining
        return make_budget(rho=self.rho, epsilon=self.epsilon, delta=self.delta)

    def _refuse_invalid_budget(self) -> None:
        """Raise :class:`PrivacyBudgetError` for an invalid budget (<= 0, NaN, inf, delta >= 1,
        missing or ambiguous) or a shared ``accountant=`` that cannot spend here (a read-only
        record: unpickled without its live original, or inherited by a forked process) — the
        first thing ``fit`` does, before any data is read."""
        if isinstance(self.accountant, Accountant) and not self.accountant.spendable:
            raise PrivacyBudgetError(
                "accountant= is a read-only record (unpickled in another process or after its "
                "original was garbage-collected, or inherited by a forked process): it cannot "
                "spend; pass the original Accountant, in the process that created it"
            )
        self._budget()

    def _fit_accountant(self, budget: Budget) -> Accountant:
        """An accountant for this fit's budget, forwarding to the shared one if given —
        refused (:class:`PrivacyBudgetError`, nothing spent) when the shared accountant cannot
        pay the whole budget. The message states what the *shared* accountant has spent."""
        shared = self.accountant
        if shared is not None and not isinstance(shared, Accountant):
            raise TypeError("accountant must be a privgauss.Accountant")
        if shared is not None and not shared.can_spend(budget):
            remaining = shared.remaining
            raise PrivacyBudgetError(
                f"this fit needs {budget}, but the shared accountant has already spent "
                f"{shared.spent_str()} of its total {shared.total} (left: "
                f"{'nothing' if remaining is None else remaining}); give the fit a smaller "
                "budget, or the study a larger Accountant total"
            )
        return Accountant(budget, parent=shared)

    def _warn_before_fit(self, budget: Budget, n_rows: int, noise: NoiseSource) -> None:
        """The fit's privacy warnings, from public quantities (see :func:`warn_before_fit`)."""
        warn_before_fit(budget, n_rows, noise)


@dataclass
class FitPlan:
    """What a fit decided before spending anything, from public facts only: the rows to run on
    (validated; a lazy input possibly loaded into memory by the plan), the public rows, the
    budget, the registry's facts and the method chosen with its reason. Subclasses extend it
    with their own plan (:meth:`PrivateEstimatorBase._plan`)."""

    X: Any
    public: np.ndarray | None
    budget: Budget
    facts: Facts
    method: str
    reason: str


class PrivateEstimatorBase(BudgetMixin):
    """Base of :class:`~privgauss.PrivateGaussian` and :class:`~privgauss.PrivateGaussianMixture`
    (combined with scikit-learn's ``DensityMixin`` and ``BaseEstimator`` by the subclasses).

    The base class owns the fit protocol (as scikit-learn's ``BaseMixture`` owns its fit loop):

    1. **validate** — ``_parameter_constraints``, the budget, then the raw input, private and
       public rows, **once** (the trust boundary; DESIGN.md rule 10); nothing is spent;
    2. **facts** — the public quantities the registry reads (hook :meth:`_check_params` for
       what the constraints cannot say, hook :meth:`_facts`);
    3. **choose** — the method and its reason (:func:`privgauss.methods.choose`);
    4. **plan** — everything else refused or decided before spending (hook :meth:`_plan`);
    5. the fit's accountant (refused when a shared one cannot pay), the noise source and the
       warnings due from public quantities;
    6. **run** the algorithm inside :func:`private_section` (hook :meth:`_run`, which also
       projects the release into the prior, :meth:`_inside_prior`);
    7. **record** the privacy report and the fitted attributes (hook :meth:`_record_release`).

    ``y`` is ignored (scikit-learn's convention for density estimators); public rows go in
    ``public_X=``.
    """

    _parameter_constraints: dict[str, Any] = {}
    #: fewest private rows any method of the estimator can use (a public fact)
    _min_rows = 2
    #: the registry's family of the estimator's methods (:mod:`privgauss.methods`)
    _family: ClassVar[str]
    #: the ``"model"`` field of the model file
    _model_name: ClassVar[str]
    #: (a copy of the fitted parameters, their factors): see :meth:`_factors`
    _factor_cache: tuple[tuple[np.ndarray, ...], Any] | None

    # -- hooks: the subclasses' part ------------------------------------------------------
    def _check_params(self, n: int, d: int) -> Budget:  # pragma: no cover - subclasses
        """Refuse what ``_parameter_constraints`` cannot express (shapes that depend on d,
        relations between parameters), before anything is spent; return the budget."""
        raise NotImplementedError

    def _facts(self, budget: Budget, n: int, d: int,
               public: np.ndarray | None) -> Facts:  # pragma: no cover - subclasses
        """The public quantities of this fit, as the method registry reads them."""
        raise NotImplementedError

    def _plan(self, plan: FitPlan) -> FitPlan:
        """The rest of the fit's plan, refused or decided before spending (default: none)."""
        return plan

    def _run(self, plan: FitPlan, context: Release) -> Any:  # pragma: no cover - subclasses
        """The algorithm, called inside :func:`private_section`: every release charged through
        ``context`` (the fit's accountant and noise source, no step prefix); returns the
        release, projected into the prior and checked finite. It may
        replace ``plan.method`` and ``plan.reason`` (a registry fall-back decided before
        anything was spent)."""
        raise NotImplementedError

    def _record_release(self, plan: FitPlan, release: Any,
                        acct: Accountant) -> None:  # pragma: no cover - subclasses
        """Set the fitted attributes from the release (DP outputs and public facts only)."""
        raise NotImplementedError

    def _model_fields(self) -> dict[str, Any]:  # pragma: no cover - subclasses
        """The model's own fields of :meth:`to_dict` (its DP parameters)."""
        raise NotImplementedError

    # -- the protocol ---------------------------------------------------------------------
    def fit(self, X: Any, y: Any = None, *, public_X: Any = None) -> Any:
        """Fit the private model to the rows of ``X`` (n, d), helped by optional public rows.

        Parameters
        ----------
        X : array-like, pandas DataFrame, dask array, or path to a ``.npy`` / ``.zarr`` file
            The private rows. Never modified.
        y : None
            Ignored (present for scikit-learn's API).
        public_X : array-like of shape (m, d), optional
            Public rows from (about) the same distribution: free, and untrusted — the
            guarantee holds for every public dataset.

        Returns
        -------
        self
            The fitted estimator. Every release is in ``ledger_``; ``privacy_spent_`` is the
            total charged.

        Raises
        ------
        InvalidDataError, ValueError
            Bad input or parameters, before anything is spent.
        PrivacyBudgetError
            An invalid budget, or one the accountant cannot pay, before anything is spent.
        EstimationFailed
            A failure of the private algorithm (a DP output); the budget stays spent.
        """
        del y
        self._validate_params()  # type: ignore[attr-defined]
        self._refuse_invalid_budget()  # before the data is touched
        from sklearn.utils.validation import _check_feature_names

        _check_feature_names(self, X, reset=True)
        rows = validated_rows(X, name="X", min_rows=self._min_rows)
        public = None
        if public_X is not None:
            public = check_data(public_X, name="public_X", min_rows=1, n_features=rows.shape[1])
        return self._fit_validated(rows, public)

    def _fit_trusted(self, Z: np.ndarray) -> Any:
        """Fit on rows the library itself computed, skipping the input checks of :meth:`fit`
        (not the parameter and budget checks, nor anything after them).

        For internal callers only, and only for ``Z`` that is finite and in range **by
        construction**: the synthesizer's normal scores ``ndtri(clip(U, 1/2n, 1 − 1/2n))``
        (:class:`~privgauss.synthesis.PrivateSynthesizer`), finite and at most about
        ``sqrt(2 ln 2n)`` in size whatever the rows. Those scores are **not** post-processing
        of DP releases: row i's score is a public map (the DP marginals) applied to private
        row i, so the fit on them is a private computation with the usual guarantee — a
        replace-one change of the rows is a replace-one change of ``Z``, and the copula's
        budget is charged to the caller's accountant (a child of the synthesizer's) inside the
        caller's :func:`private_section`, as by :meth:`fit`. What is skipped is only the
        validation whose every outcome is known in advance for such ``Z`` (finite, in range, a
        float64 C-contiguous array: :func:`~privgauss.validation.validated_rows` would return
        it unchanged), so the fit, its ledger and its outputs are those of ``fit(Z)``. Only
        the public shape is checked here."""
        self._validate_params()  # type: ignore[attr-defined]
        self._refuse_invalid_budget()
        if not (isinstance(Z, np.ndarray) and Z.dtype == np.float64 and Z.ndim == 2
                and Z.flags.c_contiguous and Z.shape[0] >= self._min_rows and Z.shape[1] >= 1):
            raise TypeError("_fit_trusted takes a float64 C-contiguous (n, d) array the library "
                            "computed; use fit() for any other input")
        from sklearn.utils.validation import _check_feature_names

        _check_feature_names(self, Z, reset=True)  # an array: no feature names
        return self._fit_validated(Z, None)

    def _fit_validated(self, rows: Any, public: np.ndarray | None) -> Any:
        # a shared accountant is held from the fit's reservation to its last release, so that
        # threads fitting on it (threaded CV, a pool) cannot overdraw it between the two
        with self.accountant.exclusive() if isinstance(self.accountant, Accountant) else (
                contextlib.nullcontext()):
            self._fit(rows, public)
        self.n_features_in_ = int(rows.shape[1])
        return self

    def _fit(self, X: Any, public: np.ndarray | None) -> None:
        """Steps 2–7 of the protocol on validated rows (see the class docstring)."""
        n, d = int(X.shape[0]), int(X.shape[1])
        budget = self._check_params(n, d)
        facts = self._facts(budget, n, d, public)
        method, reason = self._choose(facts)
        plan = self._plan(FitPlan(X, public, budget, facts, method, reason))
        acct = self._fit_accountant(budget)  # refuses what the shared accountant cannot pay
        noise = as_noise(self.random_state)  # type: ignore[attr-defined]
        self._warn_before_fit(budget, n, noise)
        with private_section(acct):
            release = self._run(plan, Release(acct, noise))
        self._record(budget, acct, plan.method, plan.reason)
        spec = methods.get(self._family, plan.method)
        self.budget_plan_ = None if spec.plan is None else spec.plan(plan.facts)
        self._record_release(plan, release, acct)
        self._cache_factors()

    def _choose(self, facts: Facts) -> tuple[str, str]:
        """The method to run and the reason, from public facts only (the registry's
        :func:`~privgauss.methods.choose`, which refuses a requested method that cannot work
        here before anything is spent)."""
        return methods.choose(self._family, self.method, facts)  # type: ignore[attr-defined]

    def _inside_prior(self, means: np.ndarray, covs: np.ndarray, center: np.ndarray, *,
                      mean_known: bool = False, cov_known: bool = False
                      ) -> tuple[np.ndarray, np.ndarray]:
        """The release — ``means`` (k, d), ``covs`` (k, d, d) — projected into the prior the
        user gave (post-processing, no privacy cost): each estimated mean into the ball
        ‖μ_j − center‖ ≤ ``mean_bound``, each estimated covariance's eigenvalues into
        ``cov_bounds``; a known mean or covariance (the user's) is left alone. When the truth
        satisfies the prior, neither projection moves an estimate away from it."""
        mean_bound = getattr(self, "mean_bound", None)
        cov_bounds = getattr(self, "cov_bounds", None)
        project_mean = mean_bound is not None and not mean_known
        project_cov = cov_bounds is not None and not cov_known
        if not (project_mean or project_cov):
            return means, covs
        means, covs = means.copy(), covs.copy()
        for j in range(means.shape[0]):
            if project_mean:
                offset = means[j] - center
                norm = float(np.linalg.norm(offset))
                if norm > float(mean_bound):  # type: ignore[arg-type]  # a hair inside, whatever the rounding
                    means[j] = center + offset * (float(mean_bound)  # type: ignore[arg-type]
                                                  / norm * (1.0 - 1e-12))
            if project_cov:
                lo, hi = (float(v) for v in cov_bounds)  # type: ignore[union-attr]  # checked
                covs[j] = clip_eigenvalues(covs[j], lo, hi)  # scale-free at any units
        return means, covs

    def _record(self, budget: Budget, acct: Accountant, method: str, reason: str) -> None:
        """The privacy report of a successful fit."""
        self.method_ = method
        self.method_reason_ = reason
        self.accountant_ = acct
        self.privacy_spent_ = acct.spent
        self.ledger_ = list(acct.ledger)
        self.budget_ = budget

    def _no_clipped_count(self) -> None:
        """The diagnostics of a fit that released no clipped count: none, and no background."""
        self.clipped_fraction_: float | None = None
        self.clipped_fraction_alarm_: float | None = None
        self.background_weight_ = 0.0

    # -- the fitted covariances' factors, computed once ---------------------------------
    def _factor_key(self) -> tuple[Any, ...]:  # pragma: no cover - subclasses
        """The fitted parameters the factors are computed from."""
        raise NotImplementedError

    def _make_factors(self) -> Any:  # pragma: no cover - subclasses
        """The factors of the fitted covariances (and of the background) that scoring and
        sampling use."""
        raise NotImplementedError

    def _factors(self) -> Any:
        """The cached factors of the fitted parameters: computed after a fit or a load
        (:meth:`_cache_factors`), and again only when the parameters have been changed since
        (as the synthesizer standardises its copula's); the key is a copy of the parameters,
        compared on each use (O(k·d²), against the O(k·d³) it saves)."""
        key = self._factor_key()
        cached = getattr(self, "_factor_cache", None)
        if cached is None or len(cached[0]) != len(key) or not all(
                np.array_equal(a, b) for a, b in zip(cached[0], key, strict=True)):
            cached = (tuple(np.array(a, dtype=np.float64) for a in key), self._make_factors())
            self._factor_cache = cached
        return cached[1]

    def _cache_factors(self) -> None:
        """Compute the factors now (after a fit or a load), so that scoring and sampling —
        which must not change the estimator — find them. A model whose factors cannot be
        computed (non-finite parameters in a file) keeps its error for the scoring call."""
        self._factor_cache = None
        with contextlib.suppress(ValueError, np.linalg.LinAlgError), np.errstate(all="ignore"):
            self._factors()

    def __sklearn_is_fitted__(self) -> bool:
        # n_features_in_ is set only once a fit succeeded (or a model file was loaded); a failed
        # fit may leave feature names behind
        return hasattr(self, "n_features_in_")

    def _feature_names(self) -> list[str] | None:
        """The column names seen at fit (public metadata of the table), for the model file."""
        names = getattr(self, "feature_names_in_", None)
        return None if names is None else [str(c) for c in names]

    def to_dict(self) -> dict[str, Any]:
        """The fitted model as a dictionary (what :func:`privgauss.save` writes as JSON): its
        parameters, diagnostics and privacy report — only DP outputs and public metadata.

        Returns
        -------
        dict
            ``model``, ``library``, ``version``, ``method``, ``method_reason``,
            ``n_features``, ``feature_names``, the model's parameters, ``clipped_fraction``,
            ``background_weight``, ``privacy`` (budget, spent, neighbours, ledger) and
            ``pure_dp``; :func:`privgauss.io.from_dict` reads it back.
        """
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self)
        from .._version import __version__

        return {
            "model": self._model_name,
            "library": "privgauss",
            "version": __version__,
            "method": self.method_,
            "method_reason": self.method_reason_,
            "n_features": self.n_features_in_,
            "feature_names": self._feature_names(),
            **self._model_fields(),
            "clipped_fraction": getattr(self, "clipped_fraction_", None),
            "background_weight": float(getattr(self, "background_weight_", 0.0)),
            "privacy": privacy_report(self.budget_, self.accountant_),
            "pure_dp": isinstance(self.budget_, PureDP),
        }

    def _rows_for_scoring(self, X: Any) -> np.ndarray:
        """Rows to evaluate the fitted (already private) model at, checked. The exact values at
        private rows are not private (see :class:`~privgauss.DPScorer`)."""
        from sklearn.utils.validation import _check_feature_names, check_is_fitted

        check_is_fitted(self)
        _check_feature_names(self, X, reset=False)
        rows = check_data(X, name="X")
        if rows.shape[1] != self.n_features_in_:
            raise InvalidDataError(
                f"X has {rows.shape[1]} features, but {type(self).__name__} is expecting "
                f"{self.n_features_in_} features as input."
            )
        return rows

    def score_samples(self, X: Any) -> np.ndarray:  # pragma: no cover - subclasses
        raise NotImplementedError

    def score(self, X: Any, y: Any = None) -> float:
        """Exact mean log-likelihood of the rows of ``X`` under the fitted model: for
        **public or synthetic rows** only.

        On private rows it is **not private**, whatever the model's budget: it is computed
        from those rows exactly, with no noise and no bound on one row's contribution, so
        publishing it — or letting ``cross_val_score`` / ``GridSearchCV`` report it or choose
        parameters by it (their default ``scoring``) — leaks them. To score private rows use
        :class:`~privgauss.DPScorer` (``scoring=pg.DPScorer(accountant, rho=...)``): clipped,
        noisy and charged to the accountant the fits are charged to."""
        del y
        return float(np.mean(self.score_samples(X)))

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()  # type: ignore[misc]
        # secure noise (random_state=None) differs on every fit; a seed makes fits reproducible
        tags.non_deterministic = getattr(self, "random_state", None) is None
        tags.input_tags.allow_nan = False
        return tags


@contextlib.contextmanager
def private_section(accountant: Accountant | None = None) -> Iterator[None]:
    """The algorithm part of a fit, after the trust boundary: floating-point exceptions are
    ignored (``np.errstate``: the algorithms sanitise non-finite values per record) and every
    warning raised inside — numpy's, or a non-private learner's such as scikit-learn's
    ``ConvergenceWarning`` — is captured and dropped, never re-emitted, since whether it fires
    can depend on one record (DESIGN.md, privacy rule 10). The estimators warn only outside
    this section, from public quantities and DP outputs: when the section ends in
    :class:`~privgauss.exceptions.EstimationFailed` (⊥, a DP output), a
    :class:`~privgauss.warnings.BudgetSpentWarning` is emitted after the capture has ended,
    just before the exception propagates. With the fit's ``accountant``, the failure's message
    is completed with the step that failed, the n it needs and what was spent (all public or
    DP quantities), so that the text alone tells the user what happened."""
    try:
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                yield
        except EstimationFailed:
            raise
        except Exception:
            if accountant is None or not accountant.ledger:
                raise  # nothing spent: a refusal from public quantities keeps its type
            # after the first charge only EstimationFailed (DESIGN.md rule 13): whatever went
            # wrong (a singular matrix, NaN probabilities, an overflow, a budget error), its
            # type and text could depend on a record, so neither is kept
            charge_rest(accountant, "the rest of the fit's budget; the fit failed before "
                        "using it")
            raise EstimationFailed(
                "the private computation failed after spending (a numerical or internal "
                "failure inside the algorithm); the whole budget of the fit counts as spent",
                internal=True,
            ) from None
    except EstimationFailed as exc:
        if accountant is not None:
            exc.args = (failure_text(exc, accountant), *exc.args[1:])
        warn_caller(
            BudgetSpentWarning,
            "the fit failed (EstimationFailed, a DP output): the privacy budget it charged "
            "stays spent and nothing was released; count it before retrying on the same rows",
        )
        raise


def require_finite(*released: np.ndarray) -> None:
    """End the fit in :class:`EstimationFailed` when a released array is not finite (an
    overflow inside the algorithm); called inside :func:`private_section`."""
    if not all(np.all(np.isfinite(a)) for a in released):
        raise EstimationFailed("the released parameters are not finite (an overflow)")


def failure_text(exc: EstimationFailed, accountant: Accountant) -> str:
    """The message of a failed fit: what the algorithm said, then the step, the n that step
    needs (when known) and the budget spent (the failure is a DP output: so is what it cost)."""
    text = str(exc.args[0]) if exc.args else "the private estimation failed"
    facts = []
    if exc.step and exc.step not in text:
        facts.append(f"failed step: {exc.step}")
    if exc.needed_n:
        facts.append(f"that step needs about n >= {int(exc.needed_n):,} rows")
    facts.append(f"spent {accountant.spent_str()} of {accountant.total}, which stays spent")
    return f"{text.rstrip('.')} ({'; '.join(facts)})"


# frames of these modules are skipped so that a warning points at the code that called fit
_INTERNAL_MODULES = ("privgauss", "sklearn", "contextlib")


def warn_caller(category: type[Warning], message: str) -> None:
    """Emit ``message`` attributed to the first caller outside privgauss (and outside
    scikit-learn's or contextlib's wrappers), so the default filter shows it once per call
    site of ``fit``."""
    level = 1
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if not any(name == m or name.startswith(m + ".") for m in _INTERNAL_MODULES):
            break
        level, frame = level + 1, frame.f_back
    warnings.warn(message, category, stacklevel=level + 1)


def warn_before_fit(budget: Budget, n_rows: int, noise: NoiseSource) -> None:
    """Emit the privacy warnings a fit is due before its algorithm runs, decided from public
    quantities only (DESIGN.md, rules 5 and 10) — the same on any two neighbouring datasets:

    * :class:`~privgauss.warnings.SeededNoiseWarning` when the noise source is seeded
      (``random_state`` an int or a Generator), not secure;
    * :class:`~privgauss.warnings.LargeDeltaWarning` when the budget is (ε, δ) with
      ``δ ≥ 1/n_rows`` (``n_rows`` is public under replace-one neighbours).

    Called by each estimator's ``fit`` once the budget is known and every refusal is done,
    before anything is charged."""
    if not noise.secure:
        warn_caller(
            SeededNoiseWarning,
            "random_state is set: the privacy noise comes from numpy's seeded generator, which "
            "is reproducible but predictable and not hardened against floating-point attacks; "
            "fine for experiments and tests, but fit with random_state=None (secure noise) to "
            "release results from real private data",
        )
    if delta_at_least(budget, n_rows):
        warn_caller(
            LargeDeltaWarning,
            f"delta = {budget.delta:g} is at least 1/n = 1/{n_rows}: an (epsilon, delta) "
            "guarantee this weak allows publishing a record outright; choose delta well below "
            f"1/n, e.g. delta <= 1/n^2 = {1.0 / float(n_rows) ** 2:.2g}, or a rho-zCDP budget",
        )


def warn_clipped(fraction: float, alarm: float) -> None:
    """:class:`~privgauss.warnings.ClippedDataWarning`: the DP ``clipped_fraction_`` of a fit
    exceeds its public threshold (both are DP outputs or public, DESIGN.md rule 5); the text
    (:func:`~privgauss.gaussian.clip_diagnostics.clipped_advice`) tells heavy tails from a
    partly missed fit and names the knob that helps."""
    warn_caller(ClippedDataWarning, clipped_advice(fraction, alarm))


def privacy_report(budget: Budget, acct: Accountant) -> dict[str, Any]:
    spent = acct.spent
    report: dict[str, Any] = {
        "budget": budget_to_dict(budget),
        "spent": None if spent is None else budget_to_dict(spent),
        "neighbours": NEIGHBOURS,
        "ledger": [e.to_dict() for e in acct.ledger],
    }
    if isinstance(budget, ZCDP):
        report["approx_dp_at_delta_1e-6"] = budget_to_dict(budget.to_approx(1e-6))
    return report
