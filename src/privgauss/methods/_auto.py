"""``method="auto"`` and the refusals of a requested method, read from the registry's records
(public quantities only: :class:`~privgauss.methods.Facts`).

For a mixture, ``auto`` runs the registry's default method (``em``: private EM, no separation
assumed) unless ``separation=`` states a separation at which a paper learner was validated
(its ``min_separation``) and that learner can run here; :func:`plan_mixture` says which, and
why, before anything is spent.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from ..exceptions import InvalidDataError, PrivacyBudgetError
from ..privacy import ZCDP, is_pure, scaled
from ._record import Facts, Method

Table = Mapping[str, Method]


def requirement(method: Method, facts: Facts) -> Any:
    """The method's :class:`~privgauss.mixture.sample_size.Requirements` here, or None."""
    return None if method.requirements is None else method.requirements(facts)


def _ranked(methods: Table) -> list[Method]:
    """The methods ``auto`` may pick, in the order it tries them."""
    return sorted((m for m in methods.values() if m.auto is not None and
                   math.isfinite(m.auto_rank)), key=lambda m: m.auto_rank)


def known_mean_refusal(methods: Table, facts: Facts, name: str) -> str:
    """The message refusing a known mean for method ``name``: which methods take one."""
    uses = " or ".join(f"method={m.name!r} ({m.known_mean.format(d1=facts.d + 1)})"
                       for m in _ranked(methods) if m.known_mean)
    return f"method={name!r} does not take a known mean: with mean= use {uses}"


def choose_gaussian(methods: Table, facts: Facts) -> tuple[str, str]:
    """``auto`` for a Gaussian: the first method, by ``auto_rank``, whose ``auto(facts)`` gives
    a reason; else a ValueError saying what would make one work."""
    ranked = _ranked(methods)
    refused: list[tuple[str, InvalidDataError]] = []
    for method in ranked:
        reason = method.auto(facts)  # type: ignore[misc]  # _ranked: auto is set
        if not reason:
            continue
        try:  # a method whose own check refuses here (public facts) gives way to the next
            if method.check is not None:
                method.check(facts)
        except InvalidDataError as why:
            refused.append((method.name, why))
            continue
        if refused:
            reason = f"{reason} ({refused[0][0]!r} cannot work here: its plan refused)"
        return method.name, reason
    if refused:
        raise refused[0][1]
    d1 = facts.d + 1
    if facts.public_unusable:  # the public rows were the problem: more of them will not help
        from ..gaussian.public_frame import untrusted_message

        raise InvalidDataError(untrusted_message(facts.verdict, "auto"))
    if facts.known_mean and not is_pure(facts.budget):
        ways = [f"{m.name!r} ({m.known_mean.format(d1=d1)})" for m in ranked if m.known_mean]
        raise ValueError("with a known mean= the covariance is estimated by method "
                         + " or ".join(ways))
    need = "1 public row" if facts.known_covariance else f"{d1} public rows"
    hints = [m.auto_hint.format(need=need, d1=d1) for m in ranked if m.auto_hint]
    raise ValueError("no method can run with what was given: " + ", or ".join(hints))


# ----------------------------------------------------------------------------------------------
# Mixtures
# ----------------------------------------------------------------------------------------------

_NOTION_WORDS = {"zcdp": "rho (zCDP)", "approx": "(epsilon, delta)", "pure": "pure epsilon"}


def default_method(methods: Table) -> Method:
    """The mixture method ``auto`` runs unless a stated separation selects a paper learner:
    the one record with a ``fallback`` (``em``: private EM, no separation assumed)."""
    (spec,) = [m for m in methods.values() if m.fallback is not None]
    return spec


def paper_learners(methods: Table) -> list[Method]:
    """The learners ``auto`` may pick when ``separation=`` states a separation: those with a
    validated separation (finite ``min_separation``), the default aside. A learner without a
    stated validated separation (``inf``) runs only when asked for by name."""
    return [m for m in methods.values()
            if m.fallback is None and math.isfinite(m.min_separation)]


def _too_large(spec: Method, facts: Facts) -> bool:
    """``spec`` holds the rows in memory and n·d·8 bytes exceed ``max_memory_bytes`` (0: not
    stated)."""
    return (not spec.streams and facts.max_memory_bytes > 0
            and facts.n * facts.d * 8 > facts.max_memory_bytes)


def remedies(spec: Method, facts: Facts, req: Any) -> tuple[str, ...]:
    """What lowers the n ``spec`` needs here, besides more rows: each change of the public facts
    below is tried on the method's own requirement formula, and named only when it lowers the
    n — a larger budget, public rows (for a method that uses them), a prior (``mean_bound=``
    and ``cov_bounds=``), a larger ``min_weight=`` (when one below 1/k was given)."""
    base = float(req.n_needed)

    def lowers(**changes: Any) -> bool:
        try:
            other = requirement(spec, dataclasses.replace(facts, **changes))
        except (ValueError, PrivacyBudgetError):  # InvalidDataError is a ValueError
            return False
        return other is not None and float(other.n_needed) < base * (1.0 - 1e-9)

    out: list[str] = []
    if lowers(budget=scaled(facts.budget, 4.0)):
        out.append("a larger budget")
    if spec.public != "unused":
        need = spec.fewest_public(facts) if spec.uses_public else facts.d + 1
        if facts.m < need and lowers(n_public=need):
            out.append(f"at least {need} public rows (public_X=)")
    if facts.mean_bound is None and lowers(mean_bound=1.0, cov_bounds=(1.0, 1.0)):
        out.append("a prior (mean_bound= and cov_bounds=(lo, hi): a radius for the components' "
                   "means, bounds on their covariances' eigenvalues)")
    top = 1.0 / facts.k
    if facts.min_weight is not None and facts.weight < top and lowers(min_weight=top):
        out.append(f"a larger min_weight= if every component's weight is above "
                   f"{facts.weight:g}")
    return tuple(out)


def _default_runs(methods: Table, facts: Facts) -> Any:
    """The default method's requirement when it can run here (its check passes and n meets
    its requirement), else None."""
    spec = default_method(methods)
    try:
        if spec.check is not None:
            spec.check(facts)
        req = requirement(spec, facts)
    except (InvalidDataError, PrivacyBudgetError):
        return None
    return req if req is not None and req.ok else None


def refusal(methods: Table, spec: Method, facts: Facts, req: Any) -> str:
    """The message refusing ``spec`` at this n: the n it needs, what lowers it here
    (:func:`remedies`) and, for another method than the default, the default when that can
    run here."""
    text = req.message(remedies(spec, facts, req))
    default = default_method(methods)
    if spec is not default:
        alt = _default_runs(methods, facts)
        if alt is not None:
            text += (f"; or use method={default.name!r} (no separation assumed), which needs "
                     f"n >~ {alt.n_needed:.3g} here")
    return text


def check_requested(methods: Table, name: str, facts: Facts) -> None:
    """Refuse, before anything is spent, a requested mixture method that cannot work here."""
    spec = methods[name]
    if spec.uses_public and facts.m == 0:
        raise InvalidDataError(f"method={name!r} needs public_X")
    if spec.min_public is not None and not spec.public_ok(facts):
        fewer = [m for m in methods.values() if m.uses_public and m.min_public is not None
                 and m.fewest_public(facts) < spec.fewest_public(facts)]
        other = min(fewer, key=lambda m: m.fewest_public(facts)).name if fewer else name
        raise InvalidDataError(
            f"method={name!r} needs at least {spec.fewest_public(facts)} "
            f"public rows here (d = {facts.d}, min_weight = {facts.weight:g}), got {facts.m}: "
            f"give more public rows, or use method={other!r} (fewer public rows) or 'auto'"
        )
    if spec.check is not None:
        spec.check(facts)
    req = requirement(spec, facts)
    if req is not None and not req.ok and facts.enforce_requirements:
        raise InvalidDataError(refusal(methods, spec, facts, req))


def _usable_fallbacks(methods: Table, facts: Facts) -> list[Method]:
    """The fallback methods whose inputs are usable here (their ``check`` passes)."""
    out = []
    for spec in methods.values():
        if spec.fallback is None or spec.requirements is None:
            continue
        try:
            if spec.check is not None:
                spec.check(facts)
        except (InvalidDataError, PrivacyBudgetError):
            continue
        out.append(spec)
    return out


def fallback(methods: Table, facts: Facts, why: str) -> tuple[str, str] | None:
    """(name, reason) of the default method when it can work here (its inputs are usable and
    its requirement holds, or is not enforced); else None. ``why`` starts the reason."""
    for spec in _usable_fallbacks(methods, facts):
        assert spec.fallback is not None
        req = requirement(spec, facts)
        if req is not None and not req.ok and facts.enforce_requirements:
            continue
        return spec.name, f"{why}: {spec.fallback(facts, req)}"
    return None


def paper_verdict(spec: Method, facts: Facts) -> str:
    """Why ``auto`` may not pick the paper learner ``spec`` here, or ``""`` when it may: a
    separation at least its validated one is stated, it takes the budget, the public rows are
    enough, the rows fit in ``max_memory_bytes`` (it holds them in memory) and n meets its
    requirement. Public facts only."""
    sep = facts.separation
    if sep is None:
        return f"no separation= stated (validated at separation >= {spec.min_separation:g})"
    if spec.min_separation > sep:
        return f"validated at separation >= {spec.min_separation:g}, not at {sep:g}"
    if not spec.accepts(facts.budget):
        return f"does not take a {_NOTION_WORDS[facts.notion]} budget"
    if spec.uses_public and not spec.public_ok(facts):
        return f"needs at least {spec.fewest_public(facts)} public rows (got {facts.m})"
    if _too_large(spec, facts):
        return (f"holds the rows in memory, and n·d·8 = {facts.n * facts.d * 8:.3g} bytes "
                f"exceed max_memory_bytes = {facts.max_memory_bytes}")
    return _plan_problem(spec, facts)


def _plan_problem(spec: Method, facts: Facts) -> str:
    """Why the method's own check or its n requirement refuses here, or "" (public facts)."""
    try:
        if spec.check is not None:
            spec.check(facts)
        req = requirement(spec, facts)
    except (ValueError, PrivacyBudgetError) as why:
        return f"refused here ({why})"
    if req is not None and not req.ok:
        return f"needs n >~ {req.n_needed:.3g} here (got {facts.n})"
    return ""


def _preference(spec: Method, facts: Facts) -> tuple[Any, ...]:
    """Among the paper learners ``auto`` may pick: public-data learners first when public
    rows are given, the one using more of them (public-heavy: clustering for free) first,
    then the most room in n."""
    req = requirement(spec, facts)
    room = math.inf if req is None else facts.n / max(req.n_needed, 1.0)
    uses = spec.min_public(facts.d, 1.0) if spec.uses_public and spec.min_public else 0
    return (spec.uses_public and facts.m > 0, uses, room)


def _validated_list(methods: Table) -> str:
    return ", ".join(f"{m.name!r} at >= {m.min_separation:g}" for m in paper_learners(methods))


def _why_default(methods: Table, facts: Facts, verdicts: Mapping[str, str]) -> str:
    """Why ``auto`` runs the default method: the start of its reason."""
    sep = facts.separation
    if sep is None:
        return ("no separation= stated, and a paper learner runs only at a stated separation it "
                f"was validated at ({_validated_list(methods)})")
    validated = [m for m in paper_learners(methods) if m.min_separation <= sep]
    if not validated:
        return (f"no paper learner was validated at separation {sep:g} "
                f"({_validated_list(methods)})")
    why = "; ".join(f"{m.name!r} {verdicts[m.name]}" for m in validated)
    return f"at the stated separation {sep:g}, no learner validated there can run here ({why})"


def least_demanding(methods: Table, facts: Facts) -> tuple[Method, Any] | None:
    """(method, requirement) needing the fewest rows among those ``auto`` could run here but
    for n: the default (when its inputs are usable) and the paper learners the stated
    separation, the budget, the public rows and ``max_memory_bytes`` admit; None if none."""
    specs = _usable_fallbacks(methods, facts)
    sep = facts.separation
    if sep is not None:
        specs += [m for m in paper_learners(methods) if m.min_separation <= sep
                  and m.accepts(facts.budget) and m.public_ok(facts)
                  and not _too_large(m, facts)]
    reqs = []
    for spec in specs:
        try:
            req = requirement(spec, facts)
        except (ValueError, PrivacyBudgetError):
            continue
        if req is not None:
            reqs.append((spec, req))
    return min(reqs, key=lambda pair: float(pair[1].n_needed)) if reqs else None


def choose_mixture(methods: Table, facts: Facts) -> tuple[str, str]:
    """``auto`` for a mixture: a paper learner only when ``separation=`` states a separation
    it was validated at and it can run here (:func:`paper_verdict`; several: by
    :func:`_preference`); else the default method (private EM), when it can work; else a
    refusal saying what would make one work."""
    verdicts = {m.name: paper_verdict(m, facts) for m in paper_learners(methods)}
    ok = [methods[name] for name, why in verdicts.items() if not why]
    if ok:
        best = max(ok, key=lambda spec: _preference(spec, facts))
        return best.name, _paper_reason(best, facts)
    fb = fallback(methods, facts, _why_default(methods, facts, verdicts))
    if fb is not None:
        return fb
    if not _usable_fallbacks(methods, facts) and isinstance(facts.budget, ZCDP):
        raise PrivacyBudgetError(
            "a rho (zCDP) budget needs a zCDP method "
            f"{tuple(m for m, spec in methods.items() if spec.zcdp)}, and those need enough "
            "public rows or a prior: give public_X, or mean_bound= and cov_bounds= (a "
            "range for the components), or pass epsilon= and delta="
        )
    default = default_method(methods)
    if default.check is not None:
        default.check(facts)  # raises what the default cannot use here
    least = least_demanding(methods, facts)
    assert least is not None  # the default's inputs are usable: only n is short
    raise InvalidDataError("no mixture method can work with this n: the least demanding, "
                           + refusal(methods, least[0], facts, least[1]))


def _paper_reason(spec: Method, facts: Facts) -> str:
    """Why ``auto`` picked the paper learner ``spec`` (public facts only)."""
    req = requirement(spec, facts)
    need = "" if req is None else f" (needs n >~ {req.n_needed:.3g})"
    reason = (f"the stated separation {float(facts.separation or 0.0):g} is one {spec.name!r} "
              f"was validated at (>= {spec.min_separation:g}); it meets its sample-size "
              f"requirement{need}")
    if facts.m > 0 and not spec.uses_public:
        reason += (
            "; no public-data mixture method can work with "
            f"{facts.m} public rows and this n, public_X is not used"
        )
    elif spec.uses_public:
        reason += f"; uses the {facts.m} public rows" + spec.auto_note
    if isinstance(facts.budget, ZCDP):
        reason += "; rho budget: zCDP methods only"
    return reason


# ----------------------------------------------------------------------------------------------
# The preview: what a fit would run, and why, before anything is spent
# ----------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class MixturePlan:
    """What a :class:`~privgauss.PrivateGaussianMixture` fit would run, and why, decided from
    public facts only (:func:`privgauss.mixture_plan`).

    Attributes
    ----------
    method : str or None
        The method the fit runs (its ``method_``); None when the fit would be refused before
        spending anything.
    reason : str
        Why (the fit's ``method_reason_``), or the refusal's message.
    requirements : Requirements or None
        The sample-size requirement of ``method`` here; for a refusal for too few rows, that
        of the least demanding method.
    considered : dict
        Every registered mixture method → why ``auto`` runs it or not here (for a requested
        method: ``{method: "requested"}``).
    facts : Facts
        The public quantities the choice read.
    error : Exception or None
        The exception the fit would raise before spending (None when it runs).
    too_few_rows : bool
        The refusal is for too few rows: more rows (``requirements.n_needed``) would run.
    budget_plan : BudgetPlan or None
        How the fit would split its budget, named by the steps its ledger would record (the
        method's ``Method.plan``); None for a refusal or a route that states no plan.
    """

    method: str | None
    reason: str
    requirements: Any
    considered: dict[str, str]
    facts: Facts
    error: Exception | None = None
    too_few_rows: bool = False

    @property
    def ok(self) -> bool:
        """Whether the fit would run (not be refused before spending)."""
        return self.error is None

    @property
    def budget_plan(self) -> Any:
        """The chosen method's :class:`~privgauss.privacy.BudgetPlan` for these facts."""
        if self.method is None:
            return None
        from . import get

        spec = get("mixture", self.method)
        return None if spec.plan is None else spec.plan(self.facts)

    def __str__(self) -> str:
        if self.method is None:
            head = f"refused before spending: {self.reason}"
        else:
            head = f"runs {self.method!r}: {self.reason}"
        lines = [head] + [f"  {name}: {why}" for name, why in self.considered.items()
                          if name != self.method]
        return "\n".join(lines)


def _considered(methods: Table, facts: Facts, chosen: str | None) -> dict[str, str]:
    """Every mixture method → why ``auto`` runs it here or not."""
    default = default_method(methods)
    out: dict[str, str] = {}
    for name, spec in methods.items():
        if name == chosen:
            out[name] = "chosen"
        elif spec is default:
            out[name] = ("not run: a paper learner validated at the stated separation can "
                         "run here" if chosen is not None else _default_problem(spec, facts))
        elif spec in paper_learners(methods):
            out[name] = paper_verdict(spec, facts) or "can run here; another was preferred"
        else:
            out[name] = "only when asked for by name: no validated separation is stated for it"
    return out


def _default_problem(spec: Method, facts: Facts) -> str:
    """Why the default method cannot run here (public facts only)."""
    return _plan_problem(spec, facts) or "can run here"


def plan_mixture(methods: Table, facts: Facts, method: str = "auto") -> MixturePlan:
    """The :class:`MixturePlan` of ``method`` (``"auto"`` or a registered name) with these
    public facts: what :func:`~privgauss.methods.choose` decides, or the refusal it raises."""
    from . import choose

    try:
        name, reason = choose("mixture", method, facts)
    except (ValueError, PrivacyBudgetError) as exc:  # InvalidDataError is a ValueError
        least = (least_demanding(methods, facts) if method == "auto"
                 else (methods[method], requirement(methods[method], facts))
                 if method in methods else None)
        req = None if least is None else least[1]
        few = (isinstance(exc, InvalidDataError) and req is not None and not req.ok
               and math.isfinite(float(req.n_needed)))
        considered = (_considered(methods, facts, None) if method == "auto"
                      else {method: "requested"})
        return MixturePlan(None, str(exc), req, considered, facts, exc, few)
    considered = (_considered(methods, facts, name) if method == "auto"
                  else {name: "requested"})
    return MixturePlan(name, reason, requirement(methods[name], facts), considered, facts)
