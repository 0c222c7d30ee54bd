"""Shared pieces of the Gaussian methods: the :class:`GaussianJob` a run function receives, the
whitening that turns a known-covariance problem into an identity-covariance one, and the
budget helpers of the theorem bounds."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..clipped_stats import transform_rows
from ..exceptions import InvalidDataError
from ..linalg import inv_sqrtm_psd, sqrtm_psd
from ..mechanisms import Release
from ..noise import NoiseSource
from ..privacy import ZCDP, Accountant, Budget, BudgetPlan, zcdp_of
from ._record import Facts, Method


@dataclass(frozen=True)
class GaussianJob:
    """What a Gaussian run function receives: the validated rows, the public facts, the fit's
    release context (its accountant and noise source, :class:`~privgauss.mechanisms.Release`),
    and the prior's public vectors.

    ``known`` is the known covariance (None: estimated), ``known_mean`` the known mean
    (None: estimated), ``center`` the centre of the prior ball (zeros when not given),
    ``run_budget`` what the run may spend (None: the whole budget of ``facts``)."""

    X: Any
    public_X: np.ndarray | None
    facts: Facts
    release: Release
    center: np.ndarray
    known: np.ndarray | None = None
    known_mean: np.ndarray | None = None
    run_budget: Budget | None = None

    @property
    def budget(self) -> Budget:
        """The budget the run may spend: the fit's, less what the estimator set aside (the
        clipped count's share), when ``run_budget`` is given."""
        return self.facts.budget if self.run_budget is None else self.run_budget

    @property
    def accountant(self) -> Accountant:
        """The fit's accountant (``release.accountant``)."""
        return self.release.accountant

    @property
    def noise(self) -> NoiseSource:
        """The fit's noise source (``release.noise``)."""
        return self.release.noise


MeanFn = Callable[[Any, np.ndarray | None, np.ndarray, float | None], np.ndarray]


def whitened_mean(job: GaussianJob, mean_identity: MeanFn) -> tuple[np.ndarray, np.ndarray]:
    """The mean of rows with the known covariance Σ = ``job.known``, solved in coordinates
    whitened by Σ (a public matrix): ``mean_identity(Xw, Xpw, cw, bound)`` estimates the mean
    of N(μ, I) rows ``Xw`` (public rows ``Xpw``, prior centre ``cw`` and radius ``bound``, None
    without ``mean_bound``). Returns (mean, Σ)."""
    known = job.known
    assert known is not None
    root = sqrtm_psd(known)
    w = inv_sqrtm_psd(known)
    Xw = transform_rows(job.X, w)  # an overflowing row is sent far (clipped), never an error
    Xpw = None if job.public_X is None else job.public_X @ w
    cw = job.center @ w
    bound = None
    if job.facts.mean_bound is not None:
        bound = float(job.facts.mean_bound) / math.sqrt(np.linalg.eigvalsh(known)[0])
    mean_w = mean_identity(Xw, Xpw, cw, bound)
    return mean_w @ root, known.copy()



def prior_radius(facts: Facts, name: str) -> float:
    """The prior radius R a theorem bound needs (refused when not given)."""
    if facts.mean_bound is None:
        raise InvalidDataError(f"method {name!r} needs --mean-bound (the prior radius R)")
    return float(facts.mean_bound)


def run_plan(facts: Facts, method: Method, step: str, *, zcdp: bool = False,
             group: bool = True) -> BudgetPlan:
    """The budget plan of a Gaussian method whose run charges its whole budget under ``step``
    (one entry, or with ``group`` several ``"<step> …"`` entries planned inside the run), then
    the clipped count: the split :meth:`Method.count_split` gives the estimator (the run's part
    as ρ with ``zcdp``)."""
    main, count = method.count_split(facts.budget)
    parts: dict[str, Budget] = {step: ZCDP(zcdp_of(main, step)) if zcdp else main}
    if count is not None:
        parts["clipped count"] = count
    return BudgetPlan.of(facts.budget, parts, groups=(step,) if group else ())
