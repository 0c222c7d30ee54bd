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
from ._gaussian import GaussianJob
from ._record import Facts, Method, budget_notion, is_pure, zcdp_of

__all__ = [
    "GAUSSIAN",
    "KINDS",
    "MIXTURE",
    "Facts",
    "GaussianJob",
    "Method",
    "budget_notion",
    "choose",
    "choose_auto",
    "fallback",
    "get",
    "is_pure",
    "known_mean_refusal",
    "method_table",
    "names",
    "requirements",
    "table",
    "zcdp_of",
]

KINDS = ("gaussian", "mixture")

#: The Gaussian methods, name → :class:`Method`, in the order the documentation lists them.
GAUSSIAN: dict[str, Method] = {m.name: m for m in (
    _clip.METHOD, _coinpress.METHOD, _public.METHOD, _histogram.METHOD,
    _hypothesis_selection.METHOD, _ppe.METHOD,
)}

#: The mixture methods, name → :class:`Method`. The order breaks ties of ``method="auto"``.
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


def known_mean_refusal(facts: Facts, name: str) -> str:
    """The message refusing ``mean=`` for the Gaussian method ``name``, naming those that take
    a known mean."""
    return _auto.known_mean_refusal(GAUSSIAN, facts, name)


def requirements(kind: str, name: str, facts: Facts) -> Any:
    """The :class:`~privgauss.mixture.sample_size.Requirements` of method ``name`` here, or
    None when it has no sample-size formula."""
    return _auto.requirement(get(kind, name), facts)
