"""The method registry (DESIGN.md, layer 5): one module per method owns everything the library
knows about it — the budgets it accepts, what it needs (public rows, a prior, a known
covariance or mean), its refusals, its sample-size requirement, its budget plan and its run
function — as one :class:`Method` record. ``method="auto"``, the ``privgauss requirements``
command, the refusal messages, the command line's choices and the docs' method table all read
this registry; the estimators and the command line name no method.

Everything here reads public quantities only (:class:`Facts`), never the private rows.

Examples
--------
>>> from privgauss import methods
>>> methods.names("gaussian")[:3]
('clip', 'coinpress', 'public')
>>> methods.get("mixture", "em").zcdp
True
"""

from __future__ import annotations

from typing import Any

from ..exceptions import InvalidDataError
from . import _auto
from . import agnostic as _agnostic
from . import clip as _clip
from . import coinpress as _coinpress
from . import em as _em
from . import histogram as _histogram
from . import hypothesis_selection as _hypothesis_selection
from . import kssu as _kssu
from . import pegme as _pegme
from . import ppe as _ppe
from . import ppe_mixture as _ppe_mixture
from . import public as _public
from . import public_heavy as _public_heavy
from . import public_light as _public_light
from . import sample_aggregate as _sample_aggregate
from ._auto import MixturePlan
from ._gaussian import GaussianJob
from ._knobs import check_knob_ranges
from ._mixture import MixtureJob
from ._record import Facts, Method

__all__ = [
    "GAUSSIAN",
    "KINDS",
    "MIXTURE",
    "Facts",
    "GaussianJob",
    "Method",
    "MixtureJob",
    "MixturePlan",
    "check_knobs",
    "choose",
    "choose_auto",
    "fallback",
    "settle_public",
    "get",
    "known_mean_refusal",
    "method_table",
    "mixture_budget_refusal",
    "mixture_plan",
    "mixture_requirements",
    "names",
    "requirements",
    "table",
]

KINDS = ("gaussian", "mixture")

#: The Gaussian methods, name → :class:`Method`, in the order the documentation lists them.
GAUSSIAN: dict[str, Method] = {m.name: m for m in (
    _clip.METHOD, _coinpress.METHOD, _public.METHOD, _histogram.METHOD,
    _hypothesis_selection.METHOD, _ppe.METHOD,
)}

#: The mixture methods, name → :class:`Method`. ``method="auto"`` runs ``em`` unless
#: ``separation=`` states a separation a paper learner was validated at (its
#: ``min_separation``); the order lists the paper learners first.
MIXTURE: dict[str, Method] = {m.name: m for m in (
    _kssu.METHOD, _sample_aggregate.METHOD, _public_light.METHOD, _public_heavy.METHOD,
    _em.METHOD, _pegme.METHOD, _ppe_mixture.METHOD, _agnostic.METHOD,
)}


def table(kind: str) -> dict[str, Method]:
    """The registry of ``kind`` (``"gaussian"`` or ``"mixture"``): name → :class:`Method`.

    Raises
    ------
    ValueError
        For an unknown kind.
    """
    if kind == "gaussian":
        return GAUSSIAN
    if kind == "mixture":
        return MIXTURE
    raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")


def check_knobs(kind: str, params: dict[str, Any]) -> None:
    """Refuse, before anything is spent, ``method_params`` that no method of ``kind`` knows
    (the message lists the known knobs) or a knob outside its range, whichever method runs.

    Raises
    ------
    ValueError
        For an unknown knob or one out of range (TypeError for a ``learner`` that is not
        callable).
    """
    known = {knob for spec in table(kind).values() for knob in spec.knobs}
    unknown = sorted(set(params) - known)
    if unknown:
        raise ValueError(f"unknown method_params {unknown}; known knobs: {sorted(known)}")
    check_knob_ranges(params)


def names(kind: str) -> tuple[str, ...]:
    """The names of the registered methods of ``kind`` (``"auto"`` not included)."""
    return tuple(table(kind))


def get(kind: str, name: str) -> Method:
    """The :class:`Method` ``name`` of ``kind``.

    Raises
    ------
    ValueError
        When no such method is registered (the message lists those that are).
    """
    methods = table(kind)
    if name not in methods:
        raise ValueError(f"method must be 'auto' or one of {tuple(methods)}, got {name!r}")
    return methods[name]


def method_table(kind: str) -> str:
    """The docs' method table of ``kind`` (markdown), generated from the registry:
    ``docs/guide/index.md`` holds it, and ``tests/test_docs.py`` checks it is current."""
    rows = ["| method | what it does | needs | privacy | page |", "|---|---|---|---|---|"]
    for m in table(kind).values():
        page = m.guide.removeprefix("guide/")
        rows.append(f"| `{m.name}` | {m.summary} | {m.needs} | {m.privacy} | [{page}]({page}) |")
    return "\n".join(rows)


def choose_auto(kind: str, facts: Facts) -> tuple[str, str]:
    """The method ``method="auto"`` runs, and why, from public facts only.

    Parameters
    ----------
    kind : {"gaussian", "mixture"}
        The estimator asking.
    facts : Facts
        The public quantities of the fit (budget, n, d, k, public rows, priors).

    Returns
    -------
    name, reason : str
        The method's name and a sentence saying why (``method_reason_``).

    Raises
    ------
    ValueError, InvalidDataError, PrivacyBudgetError
        When no method can work with what was given (the message says what would help).
    """
    if kind == "gaussian":
        return _auto.choose_gaussian(table(kind), facts)
    return _auto.choose_mixture(table(kind), facts)


def choose(kind: str, requested: str, facts: Facts) -> tuple[str, str]:
    """The method to run and why: ``requested`` itself (a mixture method is refused here,
    before anything is spent, when it cannot work with these facts), or :func:`choose_auto`
    for ``"auto"``."""
    if requested == "auto":
        return choose_auto(kind, facts)
    get(kind, requested)
    if kind == "mixture":
        _auto.check_requested(table(kind), requested, facts)
    return requested, "requested"


def fallback(kind: str, facts: Facts, why: str) -> tuple[str, str] | None:
    """(name, reason) of the method ``auto`` falls back to when no other can work (``why``
    starts the reason), or None when none can."""
    return _auto.fallback(table(kind), facts, why)


def settle_public(kind: str, requested: str, method: str, reason: str, facts: Facts,
                  public: Any) -> tuple[str, str]:
    """The method to run once the public rows are seen, before anything is spent: ``method``
    (chosen by :func:`choose`) when its ``check_public`` accepts ``public``; under ``"auto"``,
    the registry's :func:`fallback` when it refuses them (private EM seeded by the public rows;
    the reason says which method refused); otherwise the refusal (InvalidDataError) itself.
    Reads public rows and public facts only."""
    spec = get(kind, method)
    if spec.check_public is None or public is None:
        return method, reason
    try:
        spec.check_public(facts, public)
    except InvalidDataError:
        found = None if requested != "auto" else fallback(
            kind, facts, f"{method!r} refused these public rows (nothing was spent)")
        if found is None:
            raise
        return found
    return method, reason


def known_mean_refusal(facts: Facts, name: str) -> str:
    """The message refusing ``mean=`` for the Gaussian method ``name``, naming those that take
    a known mean."""
    return _auto.known_mean_refusal(GAUSSIAN, facts, name)


def requirements(kind: str, name: str, facts: Facts) -> Any:
    """The :class:`~privgauss.mixture.sample_size.Requirements` of method ``name`` here, or
    None when it has no sample-size formula."""
    return _auto.requirement(get(kind, name), facts)


def mixture_requirements(
    method: str,
    *,
    n: int,
    d: int,
    k: int,
    epsilon: float | None = None,
    delta: float | None = None,
    rho: float | None = None,
    min_weight: float | None = None,
    n_public: int | None = None,
    separation: float | None = None,
    mean_bound: float | None = None,
    cov_bounds: tuple[float, float] | None = None,
    beta: float = 0.05,
    constants: str = "practical",
    **knobs: Any,
) -> Any:
    """Whether ``n`` private rows can work for the mixture method ``method``, from public
    quantities only: the method's own sample-size formula, as ``privgauss requirements
    mixture`` prints it (``pg.mixture_requirements``).

    Parameters
    ----------
    method : str
        A mixture method of the registry (``"em"``, ``"kssu"``, ``"sample-aggregate"``, ...).
    n, d, k : int
        Private rows, columns and components.
    epsilon, delta, rho : float, optional
        The budget: (ε, δ)-DP, or ρ-zCDP.
    min_weight : float, optional
        The smallest component weight the fit must resolve (default: the method's).
    n_public : int, optional
        Public rows at hand (None: not stated), checked against the public-data methods'
        fewest public rows.
    separation : float, optional
        A stated separation of the components (the paper learners' promise).
    mean_bound, cov_bounds : optional
        A prior, as :class:`~privgauss.PrivateGaussianMixture` takes it.
    beta : float
        Failure probability the requirement is stated at.
    constants : {"practical", "theory"}
        ``"practical"``: the thresholds a fit enforces; ``"theory"``: the paper's theorem
        terms with constants 1 (indicative only).
    **knobs
        The method's ``method_params`` that move its requirement (e.g. ``max_points`` for
        ``kssu``).

    Returns
    -------
    Requirements
        ``ok``, the needed ``n_required``, the ``terms`` behind it and ``knobs``.

    Raises
    ------
    ValueError
        An unknown method, or one that states no sample-size formula.
    PrivacyBudgetError
        A budget the method cannot take (e.g. pure ε for a zCDP learner).

    Examples
    --------
    >>> import privgauss as pg
    >>> pg.mixture_requirements("em", n=100_000, d=2, k=2, epsilon=1.0, delta=1e-6).ok
    True
    """
    from ..exceptions import PrivacyBudgetError
    from ..privacy import make_budget

    spec = get("mixture", method)
    budget = make_budget(rho=rho, epsilon=epsilon, delta=delta)
    if not spec.accepts(budget):
        raise PrivacyBudgetError(f"method {method!r} takes {sorted(spec.budgets)} budgets, "
                                 f"got {budget}")
    if spec.requirements is None:
        raise ValueError(f"method {method!r} states no sample-size requirement")
    facts = Facts("mixture", budget, int(n), int(d), k=int(k), n_public=n_public,
                  min_weight=None if min_weight is None else float(min_weight),
                  separation=separation, mean_bound=mean_bound, cov_bounds=cov_bounds,
                  beta=float(beta), formula=constants, knobs=dict(knobs))
    return spec.requirements(facts)


def mixture_plan(
    n: int,
    d: int,
    n_components: int = 1,
    *,
    n_public: int = 0,
    rho: float | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    method: str = "auto",
    min_weight: float | None = None,
    separation: float | None = None,
    mean_bound: float | None = None,
    center: Any = None,
    cov_bounds: tuple[float, float] | None = None,
    constants: str = "practical",
    beta: float = 0.05,
    method_params: dict[str, Any] | None = None,
    enforce_requirements: bool = True,
    max_memory_bytes: int | None = None,
    random_state: Any = None,
    accountant: Any = None,
) -> MixturePlan:
    """What ``PrivateGaussianMixture(n_components, ...)`` would run on n private rows of
    dimension d with ``n_public`` public rows, and why — from public facts only, before
    anything is read or spent.

    ``method="auto"`` runs ``em`` (private EM, no separation assumed) unless ``separation=``
    states a separation at which a paper learner was validated (``kssu`` ≥ 5,
    ``sample-aggregate`` ≥ 3, ``public-light`` and ``public-heavy`` ≥ 6, with enough public
    rows) and that learner can run here (its budget notion, public rows, n, and — as it holds
    the rows in memory — n·d·8 ≤ ``max_memory_bytes``).

    Parameters
    ----------
    n, d : int
        The number of private rows and the dimension.
    n_components : int
        k.
    n_public : int
        The number of public rows the fit would get (``public_X``).
    rho, epsilon, delta, method, min_weight, separation, mean_bound, center, cov_bounds, \
constants, beta, method_params, enforce_requirements, max_memory_bytes, random_state, \
accountant
        As on :class:`~privgauss.PrivateGaussianMixture` (``max_memory_bytes=None``: its
        default), so ``mixture_plan(n, d, **est.get_params())`` previews the estimator
        ``est``; ``center`` and ``random_state`` do not change the choice, and ``accountant``
        gives the budget when no ``rho``/``epsilon`` is given (its remaining budget, as a
        fit).

    Returns
    -------
    MixturePlan
        ``method`` and ``reason`` are the fit's ``method_`` and ``method_reason_``; a fit
        refused before spending gives ``method=None``, the refusal in ``reason`` and the
        exception in ``error``. One thing only the public rows themselves can decide: a
        public-data learner whose public clustering finds fewer clusters than k refuses them
        (nothing spent), and ``auto`` then runs ``em``.

    Examples
    --------
    >>> import privgauss as pg
    >>> pg.mixture_plan(100_000, 2, 2, epsilon=1.0, delta=1e-6).method
    'em'
    >>> pg.mixture_plan(100_000, 2, 2, epsilon=1.0, delta=1e-6, separation=5.0).method
    'kssu'
    """
    from ..exceptions import InvalidDataError, PrivacyBudgetError
    from ..privacy import ZCDP, has_delta, make_budget

    def facts_of(budget: Any) -> Facts:
        return Facts(
            "mixture", budget, int(n), int(d), k=int(n_components), n_public=int(n_public),
            min_weight=None if min_weight is None else float(min_weight),
            separation=None if separation is None else float(separation),
            mean_bound=None if mean_bound is None else float(mean_bound),
            cov_bounds=(None if cov_bounds is None
                        else (float(cov_bounds[0]), float(cov_bounds[1]))),
            beta=float(beta), constants=constants, max_memory_bytes=int(memory),
            enforce_requirements=bool(enforce_requirements), knobs=dict(method_params or {}),
        )

    if max_memory_bytes is None:
        from ..backends import DEFAULT_MAX_MEMORY_BYTES as memory
    else:
        memory = int(max_memory_bytes)
    if rho is None and epsilon is None and accountant is not None:
        budget = accountant.remaining
        if budget is None:
            raise PrivacyBudgetError("the shared accountant has no budget left")
    else:
        budget = make_budget(rho=rho, epsilon=epsilon, delta=delta)
    refused: Exception | None = None
    k = int(n_components)
    if int(n) < 1 or int(d) < 1 or k < 1 or int(n_public) < 0:
        raise ValueError("n, d and n_components must be at least 1, n_public at least 0")
    if k > n:
        refused = InvalidDataError(f"n_components = {k} exceeds the number of rows n = {n}; "
                                   f"give at least {k} rows")
    elif method != "auto" and method not in MIXTURE:
        refused = ValueError(f"method must be 'auto' or one of {tuple(MIXTURE)}, got {method!r}")
    elif min_weight is not None and not 0 < float(min_weight) <= 1.0 / k:
        refused = ValueError(f"min_weight must be in (0, 1/n_components] = (0, {1.0 / k:.4g}], "
                             f"got {min_weight!r}")
    elif (mean_bound is None) != (cov_bounds is None):
        refused = ValueError("mean_bound= and cov_bounds= (the mixture's prior) go together")
    elif not (isinstance(budget, ZCDP) and (method == "auto" or MIXTURE[method].zcdp)
              or has_delta(budget)):
        refused = PrivacyBudgetError(mixture_budget_refusal(budget))  # the estimator's
    facts = facts_of(budget)
    if refused is not None:
        return MixturePlan(None, str(refused), None, {}, facts, refused)
    return _auto.plan_mixture(MIXTURE, facts, method)


def mixture_budget_refusal(budget: Any) -> str:
    """The refusal of a mixture budget that is neither (ε, δ > 0) nor zCDP for a zCDP method:
    one text for the estimator and :func:`mixture_plan`."""
    return ("PrivateGaussianMixture needs an (epsilon, delta) budget with delta > 0: pass "
            "epsilon= and delta= (the bound-free localisations use stability histograms), or "
            "rho= with a zCDP method "
            f"{tuple(m for m, spec in MIXTURE.items() if spec.zcdp)}; got {budget}")
