"""``PrivateGaussian``: a scikit-learn-style private estimator of one Gaussian."""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, DensityMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .. import methods
from ..backends import DEFAULT_MAX_MEMORY_BYTES
from ..densities import DensityFactor, background_factor, factored_logpdf, gaussian_factor
from ..exceptions import EstimationFailed, InvalidDataError
from ..gaussian.clip_diagnostics import (
    alarm_fraction,
    background_weight,
    collapse_advice,
    count_noise_quantile,
    is_collapsed,
    recording_clips,
    release_clipped_count,
)
from ..gaussian.public_frame import public_verdict
from ..mechanisms import Release
from ..methods import Facts, GaussianJob, Method
from ..privacy import Accountant, Budget
from ..warnings import ClippedDataWarning
from ._base import (
    FitPlan,
    PrivateEstimatorBase,
    require_finite,
    warn_caller,
    warn_clipped,
)

#: ``"auto"`` and the registered Gaussian methods (:mod:`privgauss.methods`)
METHODS = ("auto", *methods.names("gaussian"))
#: ridge of scoring and sampling, a fraction of each variance (scale free): keeps a released
#: zero-variance or collinear covariance usable without moving a well-conditioned one
SCORE_RIDGE = 1e-12


@dataclass
class _GaussianPlan(FitPlan):
    """A Gaussian fit's plan: the method's registry entry, the prior's centre, the known
    covariance and mean (None: estimated), the run's budget and the clipped count's."""

    spec: Method
    center: np.ndarray
    known: np.ndarray | None
    known_mean: np.ndarray | None
    run_budget: Budget
    count_budget: Budget | None


@dataclass
class _GaussianRelease:
    """A Gaussian fit's release: the mean and covariance, the final clipping ball and the DP
    count of rows outside it (None when none was released)."""

    mean: np.ndarray
    cov: np.ndarray
    ball: Any
    noisy: float | None
    #: the final covariance release's smallest whitened eigenvalue when it says the chain
    #: collapsed in a direction (:func:`_collapsed`); else None
    collapsed: float | None = None


@dataclass(frozen=True)
class _GaussianFactors:
    """The fitted Gaussian's factor and its background's (None without a background)."""

    gaussian: DensityFactor
    background: DensityFactor | None


class PrivateGaussian(PrivateEstimatorBase, DensityMixin, BaseEstimator):
    """Differentially private estimate of the mean and covariance of a Gaussian.

    Guarantee: the released ``mean_`` and ``covariance_`` are DP with respect to the private
    rows of ``X`` under the given budget (``rho=`` for ρ-zCDP; ``epsilon=`` and ``delta=`` for
    (ε, δ)-DP; ``epsilon=`` alone for pure ε-DP), for **every** public dataset ``public_X``.
    Neighbours: datasets of the same public size n differing in one row (replace-one).

    Methods (``method_`` says which ran and why):

    * ``"public"`` — Bie–Kamath–Singhal: 1 public row suffices for the mean with known
      covariance; d+1 public rows precondition the general case (Alg. 1–2). No bounds needed.
    * ``"coinpress"`` — CoinPress-style iterative estimation inside a prior: needs
      ``mean_bound`` (R around ``center``) and, for the covariance, ``cov_bounds=(lo, hi)``.
    * ``"clip"`` — one-shot clip-and-noise mean inside the prior (also pure ε-DP).
    * ``"histogram"`` — bound-free (ε, δ)-DP: private localisation by stability histograms,
      then CoinPress-style refinement.
    * ``"hypothesis-selection"`` — pure ε-DP private hypothesis selection over a finite cover;
      small d only.
    * ``"ppe"`` — bound-free (ε, δ)-DP Private Populous Estimator (Arbas–Ashtiani–Liaw):
      stable averages of disjoint blocks' estimates localise, CoinPress refines
      (``constants="theory"``: the thesis's Algorithm 1 with masking, which needs
      astronomically many rows). Mean and covariance only.

    ``covariance="identity"`` or a known matrix estimates the mean only; ``mean=`` a known
    mean vector estimates the covariance only, with the whole budget (methods ``"coinpress"``,
    given ``cov_bounds``, and ``"public"``, given d+1 public rows). ``corr_condition`` (bound-free
    methods ``"histogram"`` and ``"ppe"``) is the assumed bound on the condition number of the
    correlation matrix (default 100; real tables with strongly correlated columns need more,
    e.g. 1e4–1e6, at some cost in accuracy at small n); privacy never depends on it.
    ``constants="theory"`` uses the papers' constants and ``"practical"`` tuned ones; privacy
    never depends on this.

    Diagnostics: every method that clips (all but ``"hypothesis-selection"``) spends 2 % of
    the budget on the DP count of rows outside its final clipping ball (one ledger entry,
    "clipped count"); ``clipped_fraction_`` is that count / n (clamped to [0, 1]; None for
    ``"hypothesis-selection"``) and ``clipped_fraction_alarm_`` the public threshold above
    which ``fit`` emits :class:`~privgauss.warnings.ClippedDataWarning`: the fit then
    describes the central part of the data (heavy tails, gross errors), not all of it.
    ``clip_scale`` (default 1) multiplies the planned clip radius of every covariance step:
    above 1 the covariance describes more of a heavy-tailed sample, with noise std growing as
    ``clip_scale**2``; privacy never depends on it.
    ``random_state=None`` draws secure noise; an int or Generator gives fast reproducible noise
    for experiments (not for production releases).

    Parameters
    ----------
    rho : float, optional
        ρ-zCDP budget of the whole fit (give either ``rho`` or ``epsilon``).
    epsilon, delta : float, optional
        (ε, δ)-DP budget; ``delta`` omitted or 0 asks for pure ε-DP (methods that cannot give it
        refuse up front). A δ of 1/n or more warns (:class:`LargeDeltaWarning`).
    method : str, default="auto"
        One of the methods above, or ``"auto"``: chosen from public facts only (n, d, the
        budget, the prior, the number of public rows); ``method_reason_`` says why. With a
        prior and an (ε, δ) budget, ``auto`` takes the bound-free ``"histogram"`` route instead
        of ``"coinpress"`` when its planned covariance error is below 0.8× coinpress's inside
        that prior; the release is projected into the prior either way.
    covariance : "identity" or array of shape (d, d), optional
        A known covariance: only the mean is estimated.
    mean : array of shape (d,), optional
        A known mean: only the covariance is estimated.
    mean_bound : float, optional
        Prior radius R: the mean lies within R of ``center`` (a public promise; a wrong one
        costs accuracy, never privacy).
    center : array of shape (d,), optional
        Centre of the prior ball (default the origin).
    cov_bounds : (float, float), optional
        Prior (lo, hi): the covariance's eigenvalues lie in [lo, hi].
    gamma : float, default=0
        Assumed total-variation distance between the public and the private distributions
        (method ``"public"``).
    corr_condition : float, default=100
        Assumed bound on the correlation matrix's condition number (bound-free methods).
    clip_scale : float, default=1
        Multiplies the planned clip radius of every covariance step.
    beta : float, default=0.05
        Target failure probability the methods are planned for.
    constants : {"practical", "theory"}, default="practical"
        Tuned constants or the papers' own.
    random_state : int, numpy Generator or None, default=None
        None: cryptographically secure noise; otherwise fast reproducible noise.
    accountant : Accountant, optional
        A shared accountant the fit charges (it must be able to pay the fit's budget).
    max_memory_bytes : int
        Memory cap for methods that load a dask or file input (``"hypothesis-selection"``,
        ``"ppe"``): refused up front when n·d·8 bytes exceed it; the others stream.

    Attributes
    ----------
    mean_ : ndarray of shape (d,)
        Released mean.
    covariance_ : ndarray of shape (d, d)
        Released covariance (symmetric, positive definite).
    clipped_fraction_ : float or None
        DP fraction of the rows outside the final clipping ball.
    clipped_fraction_alarm_ : float or None
        Public threshold above which ``fit`` warned (:class:`ClippedDataWarning`).
    background_weight_ : float
        Weight of the broad background component that ``score_samples`` adds for the mass the
        fit clipped (0 when none); ``sample`` draws from the Gaussian only.
    method_, method_reason_ : str
        The method that ran and why ``auto`` chose it.
    privacy_spent_ : Budget
        What the fit charged (equals the budget: unused parts are charged too).
    ledger_ : list of LedgerEntry
        Every release with its cost; the entries compose to ``privacy_spent_``.
    budget_plan_ : BudgetPlan
        The method's plan of the budget (public): the ledger follows it step by step
        (:func:`~privgauss.privacy.ledger_mismatch`).
    budget_ : Budget
        The fit's budget. ``accountant_`` is the fit's accountant.
    n_features_in_ : int
        Number of columns seen at fit; ``feature_names_in_`` their names when ``X`` had any.

    Examples
    --------
    >>> import numpy as np, privgauss as pg
    >>> X = np.random.default_rng(0).normal([5.0, -2.0], 1.0, size=(20000, 2))  # private
    >>> g = pg.PrivateGaussian(epsilon=1.0, delta=1e-6).fit(X)       # bound-free, (ε, δ)-DP
    >>> g.method_, g.mean_.shape, g.covariance_.shape
    ('histogram', (2,), (2, 2))
    >>> print(g.privacy_spent_)
    (1, 1e-06)-DP
    >>> g = pg.PrivateGaussian(rho=0.5, mean_bound=20, cov_bounds=(0.1, 10)).fit(X)
    >>> g.method_, [e.step for e in g.ledger_][-1]
    ('coinpress', 'clipped count')
    >>> synthetic = g.sample(5, random_state=0)                      # post-processing, free
    """

    _family = "gaussian"
    _model_name = "gaussian"
    _parameter_constraints: dict[str, Any] = {
        # budgets are checked by the budget classes (PrivacyBudgetError, DESIGN.md's contract)
        "rho": "no_validation",
        "epsilon": "no_validation",
        "delta": "no_validation",
        "method": [StrOptions(set(METHODS))],
        "covariance": [StrOptions({"identity"}), "array-like", None],
        "mean": ["array-like", None],
        "mean_bound": [Interval(Real, 0, None, closed="neither"), None],
        "center": ["array-like", None],
        "cov_bounds": ["array-like", None],
        "gamma": [Interval(Real, 0, 1, closed="left")],
        "corr_condition": [Interval(Real, 1, None, closed="left")],
        "clip_scale": [Interval(Real, 0, None, closed="neither")],
        "beta": [Interval(Real, 0, 1, closed="neither")],
        "constants": [StrOptions({"practical", "theory"})],
        "random_state": [Interval(Integral, 0, None, closed="left"), np.random.Generator, None],
        "accountant": [Accountant, None],
        "max_memory_bytes": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        *,
        rho: float | None = None,
        epsilon: float | None = None,
        delta: float | None = None,
        method: str = "auto",
        covariance: str | np.ndarray | None = None,
        mean: np.ndarray | None = None,
        mean_bound: float | None = None,
        center: np.ndarray | None = None,
        cov_bounds: tuple[float, float] | None = None,
        gamma: float = 0.0,
        corr_condition: float = 100.0,
        clip_scale: float = 1.0,
        beta: float = 0.05,
        constants: str = "practical",
        random_state: Any = None,
        accountant: Accountant | None = None,
        max_memory_bytes: int = DEFAULT_MAX_MEMORY_BYTES,
    ) -> None:
        self.rho = rho
        self.epsilon = epsilon
        self.delta = delta
        self.method = method
        self.covariance = covariance
        self.mean = mean
        self.mean_bound = mean_bound
        self.center = center
        self.cov_bounds = cov_bounds
        self.gamma = gamma
        self.corr_condition = corr_condition
        self.clip_scale = clip_scale
        self.beta = beta
        self.constants = constants
        self.random_state = random_state
        self.accountant = accountant
        self.max_memory_bytes = max_memory_bytes

    # -- the fit's hooks (the protocol is the base class's) -------------------------------
    def _check_params(self, n: int, d: int) -> Budget:
        """Refuse, before anything is spent, what ``_parameter_constraints`` cannot say: the
        budget, a known covariance of the wrong shape or not positive definite, an infinite
        ``mean_bound``, ``cov_bounds`` out of order."""
        budget = self._budget()
        self._known_covariance(d)
        if self.mean_bound is not None and not (0 < float(self.mean_bound) < math.inf):
            raise ValueError("mean_bound must be a positive finite number")
        if self.cov_bounds is not None:
            lo, hi = (float(v) for v in self.cov_bounds)
            if not (0 < lo <= hi < math.inf):
                raise ValueError("cov_bounds must be (lo, hi) with 0 < lo <= hi < inf")
        return budget

    def _known_covariance(self, d: int) -> np.ndarray | None:
        """The user's known covariance (a public matrix, symmetrised), checked; None when the
        covariance is estimated."""
        if self.covariance is None:
            return None
        if isinstance(self.covariance, str):  # "identity", by _parameter_constraints
            return np.eye(d)
        known = np.array(self.covariance, dtype=np.float64)
        if known.shape != (d, d) or not np.all(np.isfinite(known)):
            raise InvalidDataError(f"covariance must be a finite ({d}, {d}) matrix")
        known = (known + known.T) / 2
        if np.linalg.eigvalsh(known)[0] <= 0:
            raise InvalidDataError("the known covariance must be positive definite")
        return known

    def _facts(self, budget: Budget, n: int, d: int, public: np.ndarray | None) -> Facts:
        """The public quantities of this fit, as the method registry reads them (the public
        rows' verdict is free: public rows only)."""
        known_cov = self.covariance is not None
        verdict = None if public is None or known_cov else public_verdict(public, d)
        return Facts(
            "gaussian", budget, n, d, n_public=0 if public is None else int(public.shape[0]),
            mean_bound=None if self.mean_bound is None else float(self.mean_bound),
            cov_bounds=(None if self.cov_bounds is None
                        else tuple(float(v) for v in self.cov_bounds)),  # type: ignore[arg-type]  # (lo, hi): two entries, checked by _check_params
            known_covariance=known_cov, known_mean=self.mean is not None,
            beta=float(self.beta), gamma=float(self.gamma), constants=self.constants,
            corr_condition=float(self.corr_condition),
            max_memory_bytes=int(self.max_memory_bytes),
            verdict=verdict,
        )

    def _plan(self, plan: FitPlan) -> _GaussianPlan:
        """The prior's centre, the known parameters, the method's own refusals (which speak of
        the budget the user gave) and the clipped count's share of the budget — before
        anything is spent. The rows (numpy or lazy dask) are not loaded: ``"public"``,
        ``"coinpress"``, ``"clip"`` and ``"histogram"`` stream them chunk by chunk (a few
        passes per step; a random pairing holds the ⌊n/2⌋ pair differences, not the rows);
        ``"hypothesis-selection"`` and ``"ppe"`` load them, refused (by their check) when
        n·d·8 bytes exceed ``max_memory_bytes``."""
        d = plan.facts.d
        center = np.zeros(d) if self.center is None else np.asarray(self.center, dtype=float)
        if center.shape != (d,) or not np.all(np.isfinite(center)):
            raise InvalidDataError(f"center must be a finite vector of length {d}")
        spec = methods.get("gaussian", plan.method)
        known = self._known_covariance(d)
        known_mean = self._known_mean(plan.facts, known, spec)
        if spec.check is not None:  # refuse what it cannot use
            spec.check(plan.facts)
        main, count_budget = self._count_plan(plan.budget, spec)
        return _GaussianPlan(**vars(plan), spec=spec, center=center, known=known,
                             known_mean=known_mean, run_budget=main, count_budget=count_budget)

    def _run(self, plan: FitPlan, context: Release) -> _GaussianRelease:
        """The method's run, then the DP count of rows outside its final clipping ball, the
        projection into the prior and the finiteness check (inside the private section)."""
        assert isinstance(plan, _GaussianPlan)
        spec, known_mean = plan.spec, plan.known_mean
        from_refinement = spec.clipped_count == "refinement"
        job = GaussianJob(plan.X, plan.public, plan.facts, context, plan.center, plan.known,
                          known_mean, run_budget=plan.run_budget)
        with recording_clips(float(self.clip_scale), from_refinement) as clips:
            if known_mean is not None:
                assert spec.run_known_mean is not None  # _known_mean refused it otherwise
                mean, cov = known_mean, spec.run_known_mean(job)
            else:
                mean, cov = spec.run(job)
            collapsed = _collapsed(plan, clips.final_moment)
            ball = clips.final()
            noisy = None
            count_budget = clips.reserved if from_refinement else plan.count_budget
            if count_budget is not None and ball is not None:
                noisy = release_clipped_count(ball, count_budget, release=context)
                _refuse_a_missed_fit(noisy, ball.rows.n, context.accountant.ledger[-1])
            means, covs = self._inside_prior(  # may fail: inside
                np.asarray(mean)[None], np.asarray(cov)[None], plan.center,
                mean_known=known_mean is not None, cov_known=plan.known is not None)
            mean, cov = means[0], covs[0]
            require_finite(mean, cov)
        return _GaussianRelease(mean, cov, ball, noisy, collapsed)

    def _record_release(self, plan: FitPlan, release: Any, acct: Accountant) -> None:
        self.mean_, self.covariance_ = release.mean, release.cov
        self._record_clipped(release.ball, release.noisy, acct)
        if release.collapsed is not None:  # a function of DP outputs and the public prior
            warn_caller(ClippedDataWarning, collapse_advice(release.collapsed))

    @staticmethod
    def _count_plan(budget: Budget, spec: Method) -> tuple[Budget, Budget | None]:
        """(the algorithm's budget, the clipped count's budget or None), from public facts:
        every method that clips gives :data:`~privgauss.gaussian.clip_diagnostics.COUNT_SHARE`
        of its budget to the count of rows outside its final clipping ball (the registry's
        ``Method.clipped_count`` says how)."""
        return spec.count_split(budget)  # the split the method's budget plan states

    def _record_clipped(self, ball: Any, noisy: float | None, acct: Accountant) -> None:
        """``clipped_fraction_`` (post-processing of the DP count) and, when it exceeds the
        public threshold ``clipped_fraction_alarm_``, a
        :class:`~privgauss.warnings.ClippedDataWarning`."""
        if ball is None or noisy is None:
            self._no_clipped_count()
            return
        entry = acct.ledger[-1]
        assert entry.noise_scale is not None  # private_count records its scale
        n = ball.rows.n
        self.clipped_fraction_ = float(min(max(noisy / n, 0.0), 1.0))
        self.clipped_fraction_alarm_ = alarm_fraction(
            n, ball.model_fraction, entry.mechanism, float(entry.noise_scale))
        self.background_weight_ = background_weight(
            self.clipped_fraction_, float(ball.model_fraction), float(entry.noise_scale), n)
        if self.clipped_fraction_ > self.clipped_fraction_alarm_:
            warn_clipped(self.clipped_fraction_, self.clipped_fraction_alarm_)

    def _known_mean(self, facts: Facts, known: np.ndarray | None,
                    spec: Method) -> np.ndarray | None:
        """The user's known mean (a public vector), checked; None when not given."""
        if self.mean is None:
            return None
        d = facts.d
        mu = np.array(self.mean, dtype=np.float64)
        if mu.shape != (d,) or not np.all(np.isfinite(mu)):
            raise InvalidDataError(f"mean must be a finite vector of length {d}")
        if known is not None:
            raise ValueError("both mean= and covariance= are known: there is nothing to estimate")
        if spec.run_known_mean is None:
            raise ValueError(methods.known_mean_refusal(facts, spec.name))
        return mu

    # ------------------------------------------------------------------------------------
    def score_samples(self, X: Any) -> np.ndarray:
        """Log density of the fitted model at each row of X: the Gaussian, mixed with weight
        ``background_weight_`` with its broad background (a Cauchy,
        :func:`~privgauss.metrics.background_logpdf`) — the DP fraction of rows the fit's
        final ball left out beyond the Gaussian's own tail (0 when the fit clipped no more than
        a Gaussian sample would), so a few gross errors among the rows scored cost what they
        cost under a wide density, not 10⁴ nats each. Exact, so for public or
        synthetic rows: at private rows these values are not private (score private held-out
        rows with :class:`~privgauss.DPScorer`)."""
        X = self._rows_for_scoring(X)
        factors = self._factors()
        logp = factored_logpdf(X, factors.gaussian)
        w = float(getattr(self, "background_weight_", 0.0))
        if w <= 0.0:
            return logp
        back = factored_logpdf(X, factors.background)
        return np.logaddexp(math.log1p(-w) + logp, math.log(w) + back)

    def sample(self, n_samples: int = 1, random_state: Any = None) -> np.ndarray:
        """Draw synthetic rows from the fitted (already private) Gaussian: post-processing,
        no privacy cost."""
        check_is_fitted(self)
        rng = np.random.default_rng(random_state)
        refuse_non_finite(self.mean_, self.covariance_)
        return draw_gaussian(rng, self.mean_, self._factors().gaussian, int(n_samples))

    def _factor_key(self) -> tuple[Any, ...]:
        return (self.mean_, self.covariance_, float(getattr(self, "background_weight_", 0.0)))

    def _make_factors(self) -> _GaussianFactors:
        back = None
        if float(getattr(self, "background_weight_", 0.0)) > 0.0:
            back = background_factor(self.mean_, self.covariance_, ridge=SCORE_RIDGE)
        return _GaussianFactors(
            gaussian_factor(self.mean_, self.covariance_, ridge=SCORE_RIDGE), back)

    def _model_fields(self) -> dict[str, Any]:
        return {"mean": self.mean_.tolist(), "covariance": self.covariance_.tolist()}


#: a DP clipped fraction above this means the final ball missed the data: a failure (⊥)
MISSED_FIT_FRACTION = 0.5


def _refuse_a_missed_fit(noisy: float, n: int, entry: Any) -> None:
    """End the fit in :class:`EstimationFailed` (a DP outcome: it reads the released count
    ``noisy`` and its ledger ``entry``) when most rows lie outside its final clipping ball
    beyond the count's noise (its 1 − 10⁻³ quantile) — the estimate then describes no part
    of the data, and returning it with a warning would pass off a failure as a model."""
    fraction = noisy / n
    slack = count_noise_quantile(entry.mechanism, float(entry.noise_scale)) / n
    if fraction > MISSED_FIT_FRACTION + slack:
        raise EstimationFailed(
            f"about {min(fraction, 1.0):.0%} of the rows (a DP estimate) lie outside the fit's "
            "final clipping ball: the fit missed the data (columns far from Gaussian, e.g. "
            "counts with many zeros or codes, or a prior that excludes the data). Transform "
            "the columns (log, ranks), give public rows, or a larger budget",
            step="clipped count",
        )


def refuse_non_finite(*parameters: np.ndarray) -> None:
    """Refuse to sample a model whose parameters are not finite (InvalidDataError)."""
    if not all(np.all(np.isfinite(p)) for p in parameters):
        raise InvalidDataError("the model's mean or covariance is not finite: it cannot be "
                               "sampled")


def draw_gaussian(rng: np.random.Generator, mean: np.ndarray, factor: DensityFactor,
                   size: int) -> np.ndarray:
    """``size`` rows from N(``mean``, Σ) for a factored Σ (:func:`~privgauss.metrics.
    gaussian_factor`, scale free as the scores), in time bounded by ``size`` and d (the
    sampler of both estimators; callers refuse non-finite parameters first)."""
    return mean + (rng.standard_normal((size, mean.shape[0])) @ factor.chol.T) * factor.scale


def _collapsed(plan: _GaussianPlan, final: tuple[float, float, float] | None) -> float | None:
    """The final covariance release's smallest whitened eigenvalue when it says that a
    method's CoinPress chain inside the user's ``cov_bounds`` (a method that requires the
    prior) collapsed in a direction
    (:func:`~privgauss.gaussian.clip_diagnostics.is_collapsed`: DP outputs and public
    quantities only); None otherwise (the bound-free routes' priors are their own)."""
    facts = plan.facts
    if (plan.spec.prior != "required" or facts.cov_bounds is None or facts.known_mean
            or facts.known_covariance or final is None):
        return None
    return final[0] if is_collapsed(*final) else None
