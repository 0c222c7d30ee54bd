"""``method="auto"`` and the refusals of a requested method, read from the registry's records
(public quantities only: :class:`~privgauss.methods.Facts`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..exceptions import InvalidDataError, PrivacyBudgetError
from ..privacy import ZCDP
from ._record import Facts, Method, is_pure

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
        raise InvalidDataError(req.message())


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
    """(name, reason) of the method ``auto`` falls back to when no other can work here (its
    inputs are usable and its requirement holds, or is not enforced); else None."""
    for spec in _usable_fallbacks(methods, facts):
        assert spec.fallback is not None
        req = requirement(spec, facts)
        if req is not None and not req.ok and facts.enforce_requirements:
            continue
        return spec.name, f"{why}: {spec.fallback(facts, req)}"
    return None


def _candidates(methods: Table, facts: Facts) -> list[str]:
    return [m for m, spec in methods.items()
            if math.isfinite(spec.min_separation)  # inf: only when asked for by name
            and spec.public_ok(facts)
            and (spec.zcdp or not isinstance(facts.budget, ZCDP))]


def choose_mixture(methods: Table, facts: Facts) -> tuple[str, str]:
    """``auto`` for a mixture: among the methods validated at the assumed separation whose
    requirement n meets, public-data methods first when public rows are given, then the one
    validated at the smallest separation (separation unknown), then the most room in n; the
    fallback method when none can work."""
    n, d, n_public = facts.n, facts.d, facts.m
    has_public = n_public > 0
    candidates = _candidates(methods, facts)
    if not candidates:
        fb = fallback(methods, facts, "no paper method takes a rho budget with these public rows")
        if fb is not None:
            return fb
        usable = _usable_fallbacks(methods, facts)
        if usable:  # it can run here, but not at this n
            raise InvalidDataError("no mixture method can work with this n: the least "
                                   "demanding, " + requirement(usable[0], facts).message())
        raise PrivacyBudgetError(
            "a rho (zCDP) budget needs a zCDP method "
            f"{tuple(m for m, spec in methods.items() if spec.zcdp)}, and those need enough "
            "public rows or a prior: give public_X, or mean_bound= and cov_bounds= (a "
            "range for the components), or pass epsilon= and delta="
        )
    sep = None if facts.separation is None else float(facts.separation)
    if sep is not None:
        separated = [m for m in candidates if methods[m].min_separation <= sep]
        if separated:
            candidates = separated
    reqs = {m: requirement(methods[m], facts) for m in candidates}
    ok = [m for m in candidates if reqs[m] is None or reqs[m].ok]
    if not ok:
        fb = fallback(methods, facts, "no paper method meets its sample-size requirement")
        if fb is not None:
            return fb
        for spec in _usable_fallbacks(methods, facts):  # the fallback is a candidate too
            reqs[spec.name] = requirement(spec, facts)
        best = min(reqs, key=lambda m: reqs[m].n_needed)
        if facts.enforce_requirements:
            raise InvalidDataError(
                "no mixture method can work with this n: the least demanding, "
                + reqs[best].message()
            )
        return best, f"no method meets its requirements; {best!r} needs the fewest samples"

    def room(m: str) -> float:
        return math.inf if reqs[m] is None else n / max(reqs[m].n_needed, 1.0)

    def key(m: str) -> tuple[Any, ...]:
        spec = methods[m]
        # public-data methods first when public_X is given; with an unknown separation the
        # method validated at the smallest separation; then the most room in n
        robust = -spec.min_separation if sep is None else 0.0
        # ... and among those, the one using more public data (public-heavy: clustering for
        # free and range-free per-component estimation) when there are enough public rows
        uses = spec.min_public(d, 1.0) if spec.uses_public and spec.min_public else 0
        return (spec.uses_public and has_public, uses, robust, room(m))

    best = max(ok, key=key)
    return best, _mixture_reason(methods[best], reqs[best], facts)


def _mixture_reason(spec: Method, req: Any, facts: Facts) -> str:
    """Why ``auto`` picked ``spec`` (public facts only)."""
    sep = None if facts.separation is None else float(facts.separation)
    need = "" if req is None else f" (needs n >~ {req.n_needed:.3g})"
    reason = f"meets its sample-size requirement{need}"
    if sep is None:
        reason += (
            "; separation unknown: preferring the method validated at the smallest "
            f"separation ratio ({spec.min_separation:g})"
        )
    elif spec.min_separation > sep:
        reason += (
            f"; no method was validated at separation {sep:g} (this one at "
            f"{spec.min_separation:g})"
        )
    else:
        reason += f"; validated at separation >= {spec.min_separation:g}"
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
