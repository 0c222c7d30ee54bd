"""``PrivateGaussianMixture``: a scikit-learn-style private estimator of a Gaussian mixture."""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

import numpy as np
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, DensityMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .. import methods
from ..backends import DEFAULT_MAX_MEMORY_BYTES, in_memory
from ..densities import (
    DensityFactor,
    background_factor,
    background_scale,
    factored_logpdf,
    gaussian_factor,
)
from ..exceptions import InvalidDataError, PrivacyBudgetError
from ..mechanisms import Release
from ..methods import Facts, MixtureJob
from ..privacy import ZCDP, Accountant, ApproxDP, Budget, has_delta
from ..validation import check_positive_int
from ..warnings import (
    ClippedDataWarning,
    DiscreteDataWarning,
    NoisyFitWarning,
    SimplerModelWarning,
)
from ._base import (
    FitPlan,
    PrivateEstimatorBase,
    require_finite,
    warn_caller,
)
from .gaussian import SCORE_RIDGE, draw_gaussian, refuse_non_finite

__all__ = ["METHODS", "PrivateGaussianMixture"]

#: The registry of mixture methods, name → :class:`~privgauss.methods.Method` (the registry's
#: own dict, :data:`privgauss.methods.MIXTURE`: one module per method in
#: :mod:`privgauss.methods` owns what it accepts, needs, requires and runs).
METHODS = methods.MIXTURE


@dataclass
class _MixtureRelease:
    """A mixture fit's release: weights, means, covariances and what the learner reports."""

    weights: np.ndarray
    means: np.ndarray
    covs: np.ndarray
    info: dict[str, Any]


@dataclass(frozen=True)
class _MixtureFactors:
    """The fitted components' factors; the background's weight and mean, its factor for
    scoring and its Gaussian's for sampling (None without a background)."""

    components: list[DensityFactor]
    background_weight: float
    background_mean: np.ndarray
    background: DensityFactor | None
    background_draw: DensityFactor | None


class PrivateGaussianMixture(PrivateEstimatorBase, DensityMixin, BaseEstimator):
    """Differentially private estimate of a k-component Gaussian mixture (weights, means,
    covariances).

    Guarantee: ``weights_``, ``means_`` and ``covariances_`` are (ε, δ)-DP with respect to the
    rows of ``X`` for ``epsilon=``, ``delta=`` (δ > 0), or ρ-zCDP for ``rho=`` (methods
    ``"em"``, ``"public-heavy"``, ``"public-light"``), under
    **replace-one** neighbours (datasets of the same public size n differing in one row). A
    failure raises :class:`~privgauss.exceptions.EstimationFailed` with the budget spent.

    Methods without public data (``method_`` says which ran and ``method_reason_`` why):

    * ``"kssu"`` — Kamath–Sheffet–Singhal–Ullman 2019, Alg. 3–4: private recursive partitioning
      by terrific balls (raw, then after private PCA), then per-part CoinPress estimation.
    * ``"sample-aggregate"`` — KSSU19 §6: a non-private learner on disjoint chunks, private
      1-cluster aggregation of the chunk means, then per-part CoinPress estimation.

    Methods with public data ``public_X`` (Bie–Kamath–Singhal 2022; also under ``rho=``, ρ-zCDP;
    privacy holds for any public rows, only accuracy depends on them):

    * ``"public-heavy"`` — Alg. 9–10, ≥ 2(d+1)/w_min public rows: clustering on the public rows
      alone (free), then per cluster d+1-sample public preconditioning + CoinPress.
    * ``"public-light"`` — Alg. 3–7, ≥ 4/w_min public rows: public superclustering, private PCA
      and a privately confirmed public split, then per-cluster CoinPress.

    Method without a separation assumption: ``"em"`` — private EM (noisy per-component
    sufficient statistics, DP-EM-style); what ``auto`` runs unless ``separation=`` states a
    separation a paper learner was validated at.

    **A prior** (optional, public): ``mean_bound=R`` with ``center=`` (default 0) and
    ``cov_bounds=(lo, hi)``, given together, say that every component's mean lies within R of
    the centre and every component covariance's eigenvalues in [lo, hi]. Private EM then
    localises by CoinPress inside the prior instead of the bound-free route, so it needs far
    fewer rows and a ``rho=`` budget works without public rows; every release, of any method, is
    projected into the prior (post-processing). A wrong prior costs accuracy, never privacy.

    ``public_clusters_`` shows the public clustering (public-heavy: the public rows' clusters;
    public-light: the public balls).

    ``method="auto"`` runs ``"em"`` unless ``separation=`` states a separation ratio a paper
    learner was validated at (KSSU at ≥ 5, sample-and-aggregate at ≥ 3, public-light and
    public-heavy at ≥ 6, with enough public rows for the latter two): then, among those whose
    :func:`~privgauss.mixture.requirements.requirements` n meets, the one with the most room in
    n. ``pg.mixture_plan`` previews the choice and its reason before anything is spent. Bad
    input (k < 1 or k > n, ``min_weight`` outside (0, 1/k], knobs out of
    range, too few samples for the method) is refused up front with a message that says what is
    needed, before any budget is spent. ``method_params`` passes method knobs
    (e.g. ``{"n_chunks": 2000}``); ``enforce_requirements=False`` runs below the practical
    threshold (for experiments; the run will then likely fail, spending the budget).
    ``constants="theory"``/``"practical"`` only change accuracy, never privacy.
    ``random_state=None`` draws secure noise; an int or Generator gives fast reproducible noise
    for experiments (not for production releases). ``X`` may be a dask array or a path to a
    ``.npy`` file / ``.zarr`` directory: ``method="em"`` streams it (one pass per EM step, on a
    ``dask.distributed`` cluster too); the other learners need random access to every row, so
    for them it is loaded into memory, refused up front when n·d·8 bytes exceed
    ``max_memory_bytes``.

    Parameters
    ----------
    n_components : int, default=1
        Number of mixture components k.
    rho : float, optional
        ρ-zCDP budget of the whole fit (em, public-heavy, public-light).
    epsilon, delta : float, optional
        (ε, δ)-DP budget (δ > 0). A δ of 1/n or more warns (:class:`LargeDeltaWarning`).
    method : str, default="auto"
        ``"em"``, ``"kssu"``, ``"sample-aggregate"``, ``"public-heavy"``, ``"public-light"``,
        ``"pegme"``, ``"ppe"``, ``"agnostic"`` or ``"auto"`` (see above and
        ``docs/guide/``).
    min_weight : float, optional
        Smallest component weight the learners are planned for (default 1/k).
    separation : float, optional
        Stated separation ratio of the components (a public promise); lets ``auto`` pick a
        paper learner validated at it.
    mean_bound, center, cov_bounds : optional
        The prior (see above); ``mean_bound`` and ``cov_bounds`` go together.
    constants : {"practical", "theory"}, default="practical"
        Tuned constants or the papers' own.
    beta : float, default=0.05
        Target failure probability the methods are planned for.
    method_params : dict, optional
        Method knobs, checked up front against the method's own list.
    enforce_requirements : bool, default=True
        Refuse, before spending, when n is below the method's practical requirement.
    random_state : int, numpy Generator or None, default=None
        None: cryptographically secure noise; otherwise fast reproducible noise.
    accountant : Accountant, optional
        A shared accountant the fit charges (it must be able to pay the fit's budget).
    max_memory_bytes : int
        Memory cap for learners that load a dask or file input.

    Attributes
    ----------
    weights_ : ndarray of shape (k,)
        Released component weights (a distribution).
    means_ : ndarray of shape (k, d)
        Released component means.
    covariances_ : ndarray of shape (k, d, d)
        Released component covariances (positive definite).
    fit_info_ : dict
        What the learner reports about its run (DP outputs and public facts only). ``"em"``:
        ``fit_info_["atom_counts"]`` has the columns' released heaviest-cell counts (1 % of
        the EM budget, ledger entry "em atom counts") and ``fit_info_["atom_gain"]`` what a
        component parked on such a point mass would gain over the fit (nat/row; from 1, a
        :class:`DiscreteDataWarning`).
    public_clusters_ : object or None
        The public clustering (public-heavy, public-light), else None.
    clipped_fraction_ : float or None
        ``"em"``: the DP count of rows outside every component's final clipping ball (the last
        EM step's radius in each released component's frame; 1 % of the EM budget, ledger
        entry "em clipped count"), divided by n and clamped to [0, 1]; None for the other
        methods. A fit far from the data (a wrong prior, gross errors, discrete columns)
        shows here.
    clipped_fraction_alarm_ : float or None
        Public threshold above which ``fit`` warned (:class:`ClippedDataWarning`).
    selected_model_ : str or None
        ``"em"``: private EM's final DP pick among its candidates (a joint release of their
        clipped log-likelihood ratios to the EM fit on the private rows, 3 % of the EM
        budget, ledger entry "em final selection"): ``"em"`` (the EM fit),
        ``"single_gaussian"`` (the released Gaussian the rows were whitened by, as k equal
        components) or ``"public"`` (a mixture fitted on the public rows alone, with at least
        max(d + 1, k) of them); ``fit_info_["final_selection"]`` has the noisy ratios per row
        (the EM fit's 0) and the plan's ``noise_cost``. Anything but ``"em"`` warns
        (:class:`SimplerModelWarning`); a plan whose noise alone costs more than 0.05 nat/row
        warns :class:`NoisyFitWarning`. None for the other methods.
    background_weight_ : float
        Weight of the broad background component that ``score_samples`` and ``sample`` add
        for the rows left out beyond a Gaussian component's own tail, at least a tenth of the
        rows the count's noise can hide (as ``PrivateGaussian``'s; 0 without a count).
    method_, method_reason_ : str
        The method that ran and why ``auto`` chose it.
    privacy_spent_ : Budget
        What the fit charged; ``ledger_`` lists every release with its cost.
    budget_plan_ : BudgetPlan or None
        The method's plan of the budget (public): the ledger follows it step by step
        (:func:`~privgauss.privacy.ledger_mismatch`); None for a route that states none
        (``agnostic`` with ``constants="theory"``).
    budget_ : Budget
        The fit's budget. ``accountant_`` is the fit's accountant.
    n_features_in_ : int
        Number of columns seen at fit; ``feature_names_in_`` their names when ``X`` had any.

    Examples
    --------
    >>> import privgauss as pg
    >>> X = pg.datasets.make_mixture(20000, 2, 2, separation=8.0, random_state=0).X
    >>> m = pg.PrivateGaussianMixture(2, epsilon=1.0, delta=1e-6).fit(X)   # private EM
    >>> m.method_, m.weights_.shape, m.means_.shape, m.covariances_.shape
    ('em', (2,), (2, 2), (2, 2, 2))
    >>> labels = m.predict(X[:10])                 # exact: for public or synthetic rows
    >>> rows, components = m.sample(100, random_state=0)             # post-processing, free
    """

    _family = "mixture"
    _model_name = "gaussian-mixture"
    _parameter_constraints: dict[str, Any] = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        # budgets are checked by the budget classes (PrivacyBudgetError, DESIGN.md's contract)
        "rho": "no_validation",
        "epsilon": "no_validation",
        "delta": "no_validation",
        "method": [StrOptions({"auto", *methods.names("mixture")})],
        "min_weight": [Interval(Real, 0, 1, closed="right"), None],
        "separation": [Interval(Real, 0, None, closed="neither"), None],
        "mean_bound": [Interval(Real, 0, None, closed="neither"), None],
        "center": ["array-like", None],
        "cov_bounds": ["array-like", None],
        "constants": [StrOptions({"practical", "theory"})],
        "beta": [Interval(Real, 0, 1, closed="neither")],
        "method_params": [dict, None],
        "enforce_requirements": ["boolean"],
        "random_state": [Interval(Integral, 0, None, closed="left"), np.random.Generator, None],
        "accountant": [Accountant, None],
        "max_memory_bytes": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        n_components: int = 1,
        *,
        rho: float | None = None,
        epsilon: float | None = None,
        delta: float | None = None,
        method: str = "auto",
        min_weight: float | None = None,
        separation: float | None = None,
        mean_bound: float | None = None,
        center: np.ndarray | None = None,
        cov_bounds: tuple[float, float] | None = None,
        constants: str = "practical",
        beta: float = 0.05,
        method_params: dict[str, Any] | None = None,
        enforce_requirements: bool = True,
        random_state: Any = None,
        accountant: Accountant | None = None,
        max_memory_bytes: int = DEFAULT_MAX_MEMORY_BYTES,
    ) -> None:
        self.n_components = n_components
        self.rho = rho
        self.epsilon = epsilon
        self.delta = delta
        self.method = method
        self.min_weight = min_weight
        self.separation = separation
        self.mean_bound = mean_bound
        self.center = center
        self.cov_bounds = cov_bounds
        self.constants = constants
        self.beta = beta
        self.method_params = method_params
        self.enforce_requirements = enforce_requirements
        self.random_state = random_state
        self.accountant = accountant
        self.max_memory_bytes = max_memory_bytes

    # ------------------------------------------------------------------------------------
    def _prior_center(self, d: int) -> np.ndarray:
        return np.zeros(d) if self.center is None else np.asarray(self.center, dtype=np.float64)

    def _check_prior(self, d: int) -> None:
        """Refuse an unusable prior before anything is spent (messages name the parameter)."""
        if self.mean_bound is None and self.cov_bounds is None:
            if self.center is not None:
                raise ValueError("center= is the centre of the mean_bound= ball: give "
                                 "mean_bound= (and cov_bounds=) with it")
            return
        if self.mean_bound is None or self.cov_bounds is None:
            given, missing = (("mean_bound", "cov_bounds") if self.cov_bounds is None
                              else ("cov_bounds", "mean_bound"))
            raise ValueError(
                f"{given}= needs {missing}=: the mixture's prior bounds every component's mean "
                "(mean_bound=R around center=) and covariance (cov_bounds=(lo, hi), eigenvalue "
                "bounds) together"
            )
        if not (0 < float(self.mean_bound) < math.inf):
            raise ValueError("mean_bound must be a positive finite number")
        bounds = np.asarray(self.cov_bounds, dtype=np.float64)
        if bounds.shape != (2,) or not (0 < bounds[0] <= bounds[1] < math.inf):
            raise ValueError("cov_bounds must be (lo, hi) with 0 < lo <= hi < inf")
        c = self._prior_center(d)
        if c.shape != (d,) or not np.all(np.isfinite(c)):
            raise InvalidDataError(f"center must be a finite vector of length {d}")

    def _check_params(self, n: int, d: int) -> ZCDP | ApproxDP:
        """Refuse, before anything is spent, what ``_parameter_constraints`` cannot say (k
        against n, ``min_weight`` against k, an infinite separation, the method's knobs, the
        prior, the budget's notion); messages from public facts only."""
        k = int(self.n_components)  # an int >= 1, by _parameter_constraints
        if k > n:
            raise InvalidDataError(
                f"n_components = {k} exceeds the number of rows n = {n}; give at least {k} rows"
            )
        if self.min_weight is not None:
            w = float(self.min_weight)
            if not (0 < w <= 1.0 / k):
                raise ValueError(
                    f"min_weight must be in (0, 1/n_components] = (0, {1.0 / k:.4g}], got {w!r}"
                )
        if self.separation is not None:
            sep = float(self.separation)
            if not (math.isfinite(sep) and sep > 0):
                raise ValueError(
                    "separation (the assumed separation ratio of the components, as in "
                    f"privgauss.datasets.separation_ratio) must be finite and > 0, got {sep!r}"
                )
        if self.method_params is not None:  # a dict, by _parameter_constraints
            methods.check_knobs("mixture", self.method_params)
        self._check_prior(d)
        budget = self._budget()
        zcdp_ok = isinstance(budget, ZCDP) and (self.method == "auto"
                                                 or methods.get("mixture", self.method).zcdp)
        if not (zcdp_ok or has_delta(budget)):
            raise PrivacyBudgetError(methods.mixture_budget_refusal(budget))
        assert isinstance(budget, ZCDP | ApproxDP)  # refused above otherwise
        return budget

    def _facts(self, budget: Budget, n: int, d: int, public: np.ndarray | None) -> Facts:
        """The public quantities of this fit, as the method registry reads them."""
        return Facts(
            "mixture", budget, int(n), int(d), k=int(self.n_components),
            n_public=0 if public is None else int(public.shape[0]),
            min_weight=None if self.min_weight is None else float(self.min_weight),
            separation=None if self.separation is None else float(self.separation),
            mean_bound=None if self.mean_bound is None else float(self.mean_bound),
            cov_bounds=(None if self.cov_bounds is None
                        else tuple(float(v) for v in self.cov_bounds)),  # type: ignore[arg-type]  # (lo, hi): checked by _check_prior
            beta=float(self.beta), constants=self.constants,
            max_memory_bytes=int(self.max_memory_bytes),
            enforce_requirements=bool(self.enforce_requirements),
            knobs=dict(self.method_params or {}),
        )

    # -- the fit's hooks (the protocol is the base class's) -------------------------------
    def _plan(self, plan: FitPlan) -> FitPlan:
        """Settle the method on the public rows (:func:`~privgauss.methods.settle_public`): a
        public-data method that refuses them alone (e.g. its public clustering finds fewer
        clusters than ``n_components``) is refused here, or, under ``method="auto"``, replaced
        by the registry's fall-back (private EM seeded by the public rows), before anything is
        spent; ``plan.method`` and ``plan.reason`` say so. A dask array (or an on-disk file,
        opened as one) streams through ``method="em"``; the other learners need random access
        to all rows, so for them it is loaded into memory here, refused (before anything is
        spent) when larger than ``max_memory_bytes``."""
        plan.method, plan.reason = methods.settle_public(
            "mixture", self.method, plan.method, plan.reason, plan.facts, plan.public)
        if not METHODS[plan.method].streams:
            plan.X = in_memory(plan.X, max_memory_bytes=self.max_memory_bytes)
        return plan

    def _run(self, plan: FitPlan, context: Release) -> _MixtureRelease:
        """The learner's run (inside the private section), its release projected into the
        prior and checked finite."""
        X = plan.X
        job = MixtureJob(X, plan.public, plan.facts, context, self._prior_center(int(X.shape[1])))
        weights, means, covs = methods.get("mixture", plan.method).run(job)
        means, covs = self._inside_prior(  # may fail on a degenerate release: inside
            np.asarray(means, dtype=np.float64), np.asarray(covs, dtype=np.float64), job.center)
        weights = np.asarray(weights, dtype=np.float64)
        require_finite(weights, means, covs)
        return _MixtureRelease(weights, means, covs, job.info)

    def _record_release(self, plan: FitPlan, release: Any, acct: Accountant) -> None:
        self.weights_ = release.weights
        self.means_, self.covariances_ = release.means, release.covs
        self.fit_info_ = release.info
        # the public clustering (public-heavy: PublicClusters of the public rows; public-light:
        # the public/DP balls (centre, radius) of the clusters); None for the other methods
        self.public_clusters_ = release.info.get("public_clusters",
                                                 release.info.get("public_balls"))
        self._record_clipped(release.info.get("clipped_count"))
        self._record_selection(release.info.get("final_selection"))
        self._record_discrete(release.info)

    def _record_selection(self, sel: dict[str, Any] | None) -> None:
        """``selected_model_`` (private EM's final DP pick; None for the other methods), with a
        :class:`~privgauss.warnings.SimplerModelWarning` when it is not the EM fit (a DP
        output) and a :class:`~privgauss.warnings.NoisyFitWarning` when the plan's noise alone
        costs more than its alarm (public quantities)."""
        from ..mixture.private_em import CANDIDATES

        self.selected_model_: str | None = None if sel is None else str(sel["selected"])
        if sel is None:
            return
        if self.selected_model_ != CANDIDATES[0]:  # not the EM fit
            scores = ", ".join(f"{name} {v:.3g}" for name, v in
                               zip(sel["candidates"], sel["noisy_scores_per_row"], strict=True))
            what = ("a single Gaussian (k equal components)"
                    if self.selected_model_ == CANDIDATES[1]
                    else "the mixture fitted on the public rows alone")
            warn_caller(SimplerModelWarning,
                        f"the final DP pick returned {what} (selected_model_="
                        f"{self.selected_model_!r}): it scored higher on the private rows than "
                        f"the {self.n_components}-component private EM fit (noisy clipped "
                        f"log-likelihood ratios to the EM fit per row: {scores}; noise sd "
                        f"{sel['noise_per_row']:.2g}). Try fewer components, a larger budget or "
                        "more public rows")
        cost = sel.get("noise_cost")
        if cost is not None and float(cost["per_row"]) > float(cost["alarm"]):
            warn_caller(NoisyFitWarning,
                        f"private EM's noise alone costs this fit at least about "
                        f"{float(cost['per_row']):.2g} nat/row of log-likelihood (its last "
                        f"step's, from n, d, k and the budget only; earlier steps' noise can "
                        f"send EM to a worse basin: on small real tables the fits ended 5-25x "
                        f"that below a non-private mixture). About n >= "
                        f"{float(cost['rows_needed']):.3g} private rows would bring the "
                        f"estimate to {float(cost['alarm']):g} at this budget; a larger budget "
                        "(epsilon), fewer components or fewer columns also lower it")

    def _record_discrete(self, info: dict[str, Any]) -> None:
        """One :class:`~privgauss.warnings.DiscreteDataWarning` when private EM's fit has a
        component at its eigenvalue floor in the released frame, or when the released
        heaviest-cell counts of the columns and the released fit say a component parked on a
        single value would gain at least ``ATOM_ALARM`` nat/row
        (:func:`~privgauss.mixture.atoms.atom_gain`, stored as ``fit_info_["atom_gain"]``):
        functions of DP outputs only. Nothing for the other methods."""
        from ..mixture.atoms import atom_gain
        from ..mixture.em_starts import EIG_FLOOR

        sel, atoms = info.get("final_selection"), info.get("atom_counts")
        floored = sel is not None and float(sel["em_thinnest_variance"]) <= EIG_FLOOR * (
            1.0 + 1e-6)
        gain = None if atoms is None else atom_gain(atoms, self.covariances_)
        if gain is not None:
            info["atom_gain"] = gain
        parked = gain is not None and gain["gain"] >= gain["alarm"]
        if not (floored or parked):
            return
        why = []
        if floored:
            why.append("a component of the private EM fit reached the eigenvalue floor (its "
                       "variance in some direction is 1e-3 of the data's or less, a DP "
                       "output)")
        if parked and gain is not None:
            why.append(f"column {int(gain['column'])} (0-based) has a point mass: about "
                       f"{gain['mass']:.0%} of the rows or more share one value (within 1e-3 "
                       f"of the column's sd; a DP estimate), where a component parked on it "
                       f"would score about {gain['gain']:.2g} nat/row above this fit")
        warn_caller(DiscreteDataWarning,
                    f"{'; and '.join(why)}: the columns look discrete (counts, codes, flags, "
                    "rounded values) or collinear. Non-private EM (sklearn's "
                    "GaussianMixture) collapses components onto single values there and can "
                    "score many nat/row higher; private EM keeps every variance above a floor "
                    "tied to its noise, so the two likelihoods are not comparable. To compare "
                    "on the same footing add uniform noise of the rounding width to the "
                    "discrete columns (or model them apart); a larger budget lowers the floor")

    def _record_clipped(self, clipped: dict[str, float] | None) -> None:
        """``clipped_fraction_`` (post-processing of em's DP count of rows outside every
        component's final ball), its public alarm threshold, the background's weight, and a
        :class:`~privgauss.warnings.ClippedDataWarning` above the threshold. None (and no
        background) for methods that release no such count."""
        if clipped is None:
            self._no_clipped_count()
            return
        from ..gaussian.clip_diagnostics import alarm_fraction, background_weight

        n, p = float(clipped["n"]), float(clipped["model_fraction"])
        self.clipped_fraction_ = float(min(max(clipped["noisy"] / n, 0.0), 1.0))
        self.clipped_fraction_alarm_ = alarm_fraction(int(n), p, "count-discrete-gaussian",
                                                      float(clipped["noise_scale"]))
        self.background_weight_ = background_weight(self.clipped_fraction_, p,
                                                    float(clipped["noise_scale"]), n)
        if self.clipped_fraction_ > self.clipped_fraction_alarm_:
            warn_caller(ClippedDataWarning,
                  f"about {self.clipped_fraction_:.1%} of the rows (a DP estimate) lie outside "
                  f"every component's final clipping ball, more than a Gaussian mixture leaves "
                  f"out (alarm above {self.clipped_fraction_alarm_:.1%}): the mixture describes "
                  "the central part of the data, not its tails or gross errors (heavy-tailed or "
                  "discrete columns, recording errors, or a prior that excludes the data). "
                  "score_samples and sample give that share to a broad background component "
                  "(background_weight_). If the tails matter, transform or clean the columns "
                  "(log, winsorize), or fit more components")

    def _background(self) -> tuple[float, np.ndarray, np.ndarray]:
        """(weight, mean, covariance) of the background: the whole mixture's mean and
        covariance (moment-matched), weight ``background_weight_`` (0 when none)."""
        w = float(getattr(self, "background_weight_", 0.0))
        pi = self.weights_ / self.weights_.sum()
        mean = pi @ self.means_
        D = self.means_ - mean
        cov = np.einsum("j,jab->ab", pi, self.covariances_) + (D.T * pi) @ D
        return w, mean, (cov + cov.T) / 2

    def _factor_key(self) -> tuple[Any, ...]:
        return (self.weights_, self.means_, self.covariances_,
                float(getattr(self, "background_weight_", 0.0)))

    def _make_factors(self) -> _MixtureFactors:
        comps = [gaussian_factor(m, c, ridge=SCORE_RIDGE)
                 for m, c in zip(self.means_, self.covariances_, strict=True)]
        w, mean, cov = self._background()
        back = draw = None
        if w > 0.0:
            back = background_factor(mean, cov, ridge=SCORE_RIDGE)
            draw = gaussian_factor(np.zeros_like(mean), cov, ridge=SCORE_RIDGE)
        return _MixtureFactors(comps, w, mean, back, draw)

    # ------------------------------------------------------------------------------------
    def _component_logpdf(self, X: Any) -> np.ndarray:
        X = self._rows_for_scoring(X)
        factors = self._factors()
        cols = []
        for w, f in zip(self.weights_, factors.components, strict=True):
            lw = math.log(w) if w > 0 else -math.inf
            cols.append(factored_logpdf(X, f) + lw)
        return np.stack(cols, axis=1)

    def score_samples(self, X: Any) -> np.ndarray:
        """Log density of the fitted mixture at each row (log-sum-exp), mixed with weight
        ``background_weight_`` with a broad background — a Cauchy
        (:func:`~privgauss.metrics.background_logpdf`) at the whole mixture's mean and
        covariance: the DP fraction of rows outside every component's final ball beyond a
        Gaussian component's own tail (0 when the fit left out no more than a Gaussian
        mixture would), so a few gross errors cost what they cost under a wide density, not
        10⁴ nats each. Exact, so for public or synthetic rows: at private rows these values
        are not private (score private held-out rows with :class:`~privgauss.DPScorer`)."""
        logp = logsumexp(self._component_logpdf(X), axis=1)
        factors = self._factors()
        w = factors.background_weight
        if w <= 0.0:
            return logp
        back = factored_logpdf(self._rows_for_scoring(X), factors.background)
        return np.logaddexp(math.log1p(-w) + logp, math.log(w) + back)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Posterior component probabilities of each row under the fitted (private) mixture."""
        logp = self._component_logpdf(X)
        return np.exp(logp - logsumexp(logp, axis=1, keepdims=True))

    def predict(self, X: Any) -> np.ndarray:
        """The most probable component of each row (argmax posterior)."""
        return np.argmax(self._component_logpdf(X), axis=1)

    def sample(self, n_samples: int = 1, random_state: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """Draw synthetic rows from the fitted (already private) mixture: (X, labels);
        post-processing, no privacy cost. With a ``background_weight_`` w > 0 a share w of the
        rows comes from the background (the Cauchy that :meth:`score_samples` uses), label −1:
        the synthetic data have the gross errors' share the fit left out."""
        check_is_fitted(self)
        n_samples = check_positive_int(n_samples, "n_samples", minimum=1)
        rng = np.random.default_rng(random_state)
        refuse_non_finite(self.means_, self.covariances_)
        factors = self._factors()
        w, mean = factors.background_weight, factors.background_mean
        probs = np.append((1.0 - w) * self.weights_ / self.weights_.sum(), w)
        counts = rng.multinomial(n_samples, probs / probs.sum())
        labels = np.repeat(np.append(np.arange(len(counts) - 1), -1), counts)
        parts = [draw_gaussian(rng, self.means_[j], factors.components[j], int(c))
                 for j, c in enumerate(counts[:-1])]
        if counts[-1] > 0:
            # a multivariate Cauchy: a Gaussian of scale K_d²·cov divided by |N(0, 1)|
            g = draw_gaussian(rng, np.zeros_like(mean), factors.background_draw,
                               int(counts[-1]))
            k = background_scale(mean.shape[0])
            parts.append(mean + k * g / np.abs(rng.standard_normal((int(counts[-1]), 1))))
        X = np.concatenate(parts)
        order = rng.permutation(n_samples)
        return X[order], labels[order]

    def _model_fields(self) -> dict[str, Any]:
        return {"n_components": int(self.n_components), "weights": self.weights_.tolist(),
                "means": self.means_.tolist(), "covariances": self.covariances_.tolist(),
                "selected_model": getattr(self, "selected_model_", None)}
