"""Small assertions shared by several test modules."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from privgauss.privacy import Accountant, ApproxDP, ledger_mismatch


def scale_free_rows(n: int = 2000, d: int = 2, seed: int = 0) -> np.ndarray:
    """Rows whose scale is spread log-uniformly over 2^±30: enough rows for the bound-free
    route's requirement (so it is not refused), but no scale bin holds enough of them, so
    its localisation fails *after* spending — the canonical ⊥ of the estimator tests."""
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)) * np.exp2(rng.uniform(-30.0, 30.0, size=(n, 1)))


def correlated_gaussian(n: int, d: int, seed: int) -> np.ndarray:
    """n rows of a correlated d-dimensional Gaussian, scale 3 around 10 (the histogram
    route's tests: the columns of real tables are mixed in beside them)."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d)) / np.sqrt(d) + np.eye(d)
    return rng.normal(size=(n, d)) @ A.T * 3.0 + 10.0


def spent_equals(acct: Accountant, eps: float, delta: float) -> bool:
    """Whether ``acct`` spent exactly (ε, δ) — up to float rounding of the composition."""
    spent = acct.spent
    return (
        isinstance(spent, ApproxDP)
        and math.isclose(spent.epsilon, eps, rel_tol=1e-7)
        and math.isclose(spent.delta, delta, rel_tol=1e-12)
    )


def assert_readable_panels(fig: Any) -> None:
    """Every visible panel of ``fig`` has equal axes, and no legend overlaps a panel: the
    legends sit outside every axes' area (checked on the drawn figure, in display units)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    axes = [ax for ax in all_axes(fig) if ax.get_visible()]
    assert axes
    for ax in axes:
        assert ax.get_aspect() == 1.0, ax.get_title()
        assert ax.get_legend() is None, ax.get_title()  # no legend inside a panel
    legends = list(fig.legends)
    assert legends
    for legend in legends:
        box = legend.get_window_extent(renderer)
        for ax in axes:
            assert not box.overlaps(ax.get_window_extent(renderer)), ax.get_title()


def all_axes(fig: Any) -> list[Any]:
    """Axes of a figure and of all its subfigures."""
    out = list(fig.axes)
    for sub in getattr(fig, "subfigs", []):
        out += [ax for ax in all_axes(sub) if ax not in out]
    return out


def zoom_release(data: np.ndarray, plan: Any, total_rho: float, rng: np.random.Generator,
                 step: str, shrink: float = 1.0) -> np.ndarray:
    """The noisy counts :func:`~privgauss.synthesis.marginals.release_marginals` releases at
    its step named ``…/step`` (``zoom``, ``zoom/2``), that step's sensitivity divided by
    ``shrink`` (an audit's deliberately broken variant); the other steps are released and
    claimed as planned. For the zoom's audits."""
    import privgauss.synthesis.marginals as marg
    from privgauss.mechanisms import Release
    from privgauss.noise import NoiseSource
    from privgauss.privacy import ZCDP

    seen: list[np.ndarray] = []
    real = marg.gaussian_mechanism

    def spy(values: np.ndarray, sensitivity: float, *args: Any, **kwargs: Any) -> np.ndarray:
        name = str(kwargs.get("step", ""))
        mine = name == step or name.endswith("/" + step)
        out = np.asarray(real(values, sensitivity / (shrink if mine else 1.0), *args, **kwargs))
        if mine:
            seen.append(out)
        return out

    marg.gaussian_mechanism = spy  # type: ignore[assignment]
    try:
        marg.release_marginals(data, plan, release=Release(Accountant(ZCDP(total_rho)),
                                                           NoiseSource(rng)))
    finally:
        marg.gaussian_mechanism = real
    (released,) = seen
    return released


def em_fit_following_its_plan(X: np.ndarray, k: int, epsilon: float = 1.0) -> Any:
    """A private EM fit at ``epsilon`` (1 by default), δ = 1e-6 (warnings silenced,
    requirements not enforced), checked to spend exactly its budget plan, part by part
    (tests/test_plan_ledger.py's check)."""
    import warnings

    import privgauss as pg

    est = pg.PrivateGaussianMixture(k, method="em", random_state=0, epsilon=epsilon, delta=1e-6,
                                    enforce_requirements=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X)
    bp = est.budget_plan_
    assert bp is not None and bp.sums_to_total()
    why = ledger_mismatch(bp, est.ledger_)
    assert why is None, why
    return est


def charged_parts(plan: Any, frozen: Any, stop: int | None) -> list[Any]:
    """The plan's parts a fit charges: all, less each frozen run's exploring steps after its
    freeze and the steps after the stopping rule's stop (both DP outputs)."""
    skipped = {f"step {t} run {c}" for c, f in frozen for t in range(f + 1,
                                                                    plan.explore_steps + 1)}
    if stop is not None:
        skipped |= {f"step {t}" for t in range(stop + 1, plan.n_steps)}
    return [(nm, b) for nm, b in plan.parts()
            if " ".join(nm.split()[:4]) not in skipped and " ".join(nm.split()[:2]) not in
            skipped]
