"""The record types of the method registry: :class:`Facts` (the public quantities a choice, a
requirement or a refusal may read) and :class:`Method` (everything one method owns)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..privacy import Budget, BudgetPlan, budget_notion, is_pure, zcdp_of

__all__ = ["Facts", "Method", "budget_notion", "is_pure", "zcdp_of"]

#: the budget notions a method may accept
NOTIONS = ("zcdp", "approx", "pure")



@dataclass(frozen=True)
class Facts:
    """The public quantities of one fit: what a method choice, a requirement, a budget plan and
    a refusal may read (never the private rows).

    Parameters
    ----------
    kind : {"gaussian", "mixture"}
        Which estimator asks.
    budget : Budget
        The fit's privacy budget.
    n, d : int
        Number of private rows (public under replace-one neighbours) and dimension.
    k : int
        Number of mixture components (1 for a Gaussian).
    n_public : int or None
        Number of public rows given (0 without ``public_X``; None: not stated, as in the
        ``requirements`` command, which then checks no public-row count).
    mean_bound, cov_bounds : optional
        The prior: radius of the mean's ball, eigenvalue bounds (lo, hi) of the covariance.
    known_covariance, known_mean : bool
        Whether the covariance (``covariance=``) or the mean (``mean=``) is given.
    min_weight, separation : float, optional
        The mixture's smallest weight and assumed separation ratio.
    beta, gamma, constants, corr_condition, max_memory_bytes : public parameters
        As on the estimators.
    enforce_requirements : bool
        Whether a method below its sample-size requirement is refused.
    formula : {None, "practical", "theory"}
        Which sample-size formula a requirement reports: None, the one a fit enforces (the
        practical thresholds; for ``agnostic``, the route ``constants`` selects); else that
        one (the ``requirements`` command's ``--constants``).
    knobs : mapping
        The method knobs given (``method_params``).
    verdict : PublicVerdict, optional
        Whether the public rows can precondition an unknown covariance
        (:func:`privgauss.gaussian.public_frame.public_verdict`, a function of the public rows only;
        None: not judged, e.g. for a known covariance).
    """

    kind: str
    budget: Budget
    n: int
    d: int
    k: int = 1
    n_public: int | None = 0
    mean_bound: float | None = None
    cov_bounds: tuple[float, float] | None = None
    known_covariance: bool = False
    known_mean: bool = False
    min_weight: float | None = None
    separation: float | None = None
    beta: float = 0.05
    gamma: float = 0.0
    constants: str = "practical"
    corr_condition: float = 100.0
    max_memory_bytes: int = 0
    enforce_requirements: bool = True
    formula: str | None = None
    knobs: Mapping[str, Any] = field(default_factory=dict)
    verdict: Any = None

    @property
    def notion(self) -> str:
        """The budget notion: ``"zcdp"``, ``"approx"`` or ``"pure"``."""
        return budget_notion(self.budget)

    @property
    def has_prior(self) -> bool:
        """A mean ball and, unless the covariance is known, covariance bounds."""
        return self.mean_bound is not None and (self.known_covariance
                                                or self.cov_bounds is not None)

    @property
    def public_unusable(self) -> bool:
        """The public rows were judged unable to precondition the covariance."""
        return self.verdict is not None and not self.verdict.trusted

    @property
    def unused_note(self) -> str:
        """The prefix of ``auto``'s reason when it falls back from unusable public rows."""
        return f"public rows not used ({self.verdict.reason}); " if self.public_unusable else ""

    @property
    def m(self) -> int:
        """The number of public rows given (0 when not stated)."""
        return int(self.n_public or 0)

    @property
    def weight(self) -> float:
        """The smallest component weight (1/k when not given)."""
        return 1.0 / self.k if self.min_weight is None else float(self.min_weight)


Runner = Callable[..., Any]


@dataclass(frozen=True)
class Method:
    """Everything the library knows about one estimation method.

    Parameters
    ----------
    name : str
        The method's name (``method=`` of the estimator, the CLI's ``--method``).
    kind : {"gaussian", "mixture"}
        The estimator it belongs to.
    summary : str
        One line: what it does (the docs' method table).
    needs : str
        One line: what it needs from the user (the docs' method table).
    privacy : str
        The guarantee, as the docs' method table states it.
    budgets : frozenset of {"zcdp", "approx", "pure"}
        The budget notions it accepts.
    run : callable
        The run function: ``run(job)`` of public facts, parameter objects and the fit's
        release context, never the estimator. Gaussian: → (mean, covariance) for a
        :class:`~privgauss.methods.GaussianJob`; mixture: → (weights, means, covariances)
        for a :class:`~privgauss.methods.MixtureJob`.
    public : {"unused", "optional", "required"}
        Whether it uses public rows.
    prior : {"unused", "optional", "required"}
        Whether it uses a prior (``mean_bound``, ``cov_bounds``).
    known_covariance : {"refused", "optional", "required"}
        Whether it estimates the mean alone given the covariance.
    known_mean : str
        Empty when it does not estimate a covariance given the mean; else what it then needs
        (format field ``{d1}``: d + 1).
    min_public : callable, optional
        Mixture: ``min_public(d, min_weight)``: the fewest public rows it accepts.
    check : callable, optional
        ``check(facts)``: refuses, before anything is spent, inputs it cannot use.
    check_public : callable, optional
        Mixture: ``check_public(facts, public_rows)``: refuses (InvalidDataError), from the
        public rows alone and before anything is spent, public rows it cannot use (e.g. its
        public clustering finds fewer than k clusters); ``auto`` then falls back
        (:func:`~privgauss.methods.settle_public`).
    requirements : callable, optional
        ``requirements(facts)``: a :class:`~privgauss.mixture.sample_size.Requirements`
        (the n it needs) or None.
    theory_bound : callable, optional
        ``theory_bound(facts, alpha, cond)``: the paper's theorem bound on n and what else
        it needs (``privgauss requirements gaussian``).
    plan : callable
        ``plan(facts)``: the fit's budget split as data, a
        :class:`~privgauss.privacy.BudgetPlan` of ``facts.budget`` named by the steps the
        fit's ledger records, from the code the algorithm spends from (for a Gaussian method,
        the clipped count included), or None for a route that states none;
        :func:`~privgauss.privacy.ledger_mismatch` checks a ledger against it.
    auto : callable, optional
        Gaussian ``method="auto"``: ``auto(facts)`` → the reason to pick it, or None.
    auto_rank : float
        Order in which ``auto`` tries the methods (lower first); ``inf``: never by ``auto``.
    run_known_mean : callable, optional
        Gaussian: ``run_known_mean(job)`` → covariance, the known-mean run.
    knobs : tuple of str
        Names of the ``method_params`` it takes.
    min_separation : float
        Mixture: smallest separation ratio it was validated at (``inf``: ``auto`` never picks
        it as a regular candidate).
    fallback : callable, optional
        Mixture: the method ``auto`` runs when no separation a paper learner was validated at
        is stated (em); ``fallback(facts, requirements)`` says why it can.
    auto_hint : str
        Gaussian: how to make ``auto`` consider it, for ``auto``'s refusal message (format
        fields ``{need}``: public rows it needs, ``{d1}``: d + 1).
    auto_note : str
        Appended to ``auto``'s reason when it picks this method with public rows.
    streams : bool
        Mixture: it streams dask rows or an on-disk file (one pass per step) instead of
        loading them into memory.
    clipped_count : {None, "budget", "zcdp", "refinement"}
        Gaussian: where the DP count of rows outside the final clipping ball
        (``clipped_fraction_``) takes its budget: a share of the fit's budget in its notion
        (``"budget"``) or as zCDP (``"zcdp"``), a share of the CoinPress refinement's ρ
        (``"refinement"``), or no count (None: the method clips nothing).
    audit_rows : int
        Rows of each neighbouring dataset in ``privgauss audit`` (the n it needs to run).
    """

    name: str
    kind: str
    summary: str
    needs: str
    privacy: str
    budgets: frozenset[str]
    run: Runner
    public: str = "unused"
    prior: str = "unused"
    known_covariance: str = "refused"
    known_mean: str = ""
    min_public: Callable[[int, float], int] | None = None
    check: Callable[[Facts], None] | None = None
    check_public: Callable[[Facts, Any], None] | None = None
    requirements: Callable[[Facts], Any] | None = None
    theory_bound: Callable[..., tuple[Any, str]] | None = None
    plan: Callable[[Facts], BudgetPlan | None] | None = None
    auto: Callable[[Facts], str | None] | None = None
    auto_rank: float = math.inf
    run_known_mean: Runner | None = None
    knobs: tuple[str, ...] = ()
    min_separation: float = 0.0
    fallback: Callable[[Facts, Any], str] | None = None
    auto_hint: str = ""
    auto_note: str = ""
    audit_rows: int = 20
    clipped_count: str | None = None
    streams: bool = False

    def __post_init__(self) -> None:
        assert self.kind in ("gaussian", "mixture"), self.kind
        assert self.budgets and set(self.budgets) <= set(NOTIONS), self.budgets
        assert self.public in ("unused", "optional", "required"), self.public
        assert self.prior in ("unused", "optional", "required"), self.prior
        assert self.known_covariance in ("refused", "optional", "required")

    @property
    def guide(self) -> str:
        """The method's page of the user guide, relative to ``docs/``."""
        return f"guide/{self.name}.md"

    @property
    def uses_public(self) -> bool:
        """Whether it needs public rows (``public == "required"``)."""
        return self.public == "required"

    @property
    def zcdp(self) -> bool:
        """Whether it accepts a ρ-zCDP budget."""
        return "zcdp" in self.budgets

    def accepts(self, budget: Budget) -> bool:
        """Whether it accepts ``budget``'s notion."""
        return budget_notion(budget) in self.budgets

    def count_split(self, budget: Budget) -> tuple[Budget, Budget | None]:
        """Gaussian: (the run's budget, the clipped count's budget or None), from the budget
        alone: a method whose count takes a share of the fit's budget
        (``clipped_count`` ``"budget"`` or ``"zcdp"``) gives
        :data:`~privgauss.gaussian.clip_diagnostics.COUNT_SHARE` of it to the count; one
        whose refinement sets the count's share aside (``"refinement"``), or that counts
        nothing, runs on the whole budget."""
        if self.clipped_count in (None, "refinement"):
            return budget, None
        from ..gaussian.clip_diagnostics import split_for_count

        return split_for_count(budget, self.clipped_count == "zcdp")

    def fewest_public(self, facts: Facts) -> int:
        """The fewest public rows it accepts here (0 when it needs none)."""
        return 0 if self.min_public is None else int(self.min_public(facts.d, facts.weight))

    def public_ok(self, facts: Facts) -> bool:
        """Whether the public rows given are enough for it."""
        return not self.uses_public or facts.m >= self.fewest_public(facts)
