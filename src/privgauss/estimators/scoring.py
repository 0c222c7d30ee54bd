"""Model selection on private rows: a differentially private scorer (DESIGN.md, rule 14).

The exact ``score`` of a fitted estimator is the mean log-likelihood of the rows it is given: on
held-out *private* rows it is a release without noise, and ``cross_val_score`` or
``GridSearchCV`` would publish it (or choose parameters by it). :class:`DPScorer` is the
scikit-learn ``scoring=`` callable to use instead: a clipped, noisy mean log-likelihood charged
to the same :class:`~privgauss.privacy.Accountant` as the fits.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import chdtri, logsumexp
from sklearn.utils.validation import check_is_fitted

from ..exceptions import PrivacyBudgetError
from ..mechanisms import gaussian_mechanism, laplace_mechanism
from ..noise import RandomState, as_noise
from ..privacy import ZCDP, Accountant, Budget, has_delta, make_budget
from ..sensitivity import bounded_mean
from ._base import warn_before_fit
from .gaussian import PrivateGaussian
from .mixture import PrivateGaussianMixture

__all__ = ["DPScorer", "default_width", "max_log_density"]

#: coverage of the default clip interval: a row of the fitted Gaussian falls below the
#: interval with this probability
WIDTH_TAIL = 1e-4
#: nats added to the default width (room for the fitted model's own error)
WIDTH_MARGIN = 1.0

_LOG_2PI = math.log(2.0 * math.pi)


def default_width(d: int, n_components: int = 1) -> float:
    """The default width of :class:`DPScorer`'s clip interval, in nats:
    ½·χ²_d⁻¹(1 − 10⁻⁴) + ln k + 1.

    A row x of a Gaussian N(μ, Σ) has log-density ``peak − ½ (x − μ)ᵀ Σ⁻¹ (x − μ)``, and the
    quadratic form is χ²_d-distributed: its ½·χ²_d quantile leaves out one row in 10⁴ of the
    fitted Gaussian itself. ``ln k`` is the most by which a mixture's upper bound (the log of
    the sum of its components' weighted peaks) exceeds the weighted peak of any one of ``k``
    equally weighted components, and the 1 nat leaves room for the fitted model's own error.
    A function of the public d and k only.
    """
    if d < 1 or n_components < 1:
        raise ValueError("d and n_components must be at least 1")
    return 0.5 * float(chdtri(d, WIDTH_TAIL)) + math.log(n_components) + WIDTH_MARGIN


def _components(estimator: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(weights, means, covariances) of a fitted privgauss estimator: its DP outputs."""
    if isinstance(estimator, PrivateGaussian):
        check_is_fitted(estimator)
        mean = np.asarray(estimator.mean_, dtype=np.float64)
        cov = np.asarray(estimator.covariance_, dtype=np.float64)
        return np.ones(1), mean[None], cov[None]
    if isinstance(estimator, PrivateGaussianMixture):
        check_is_fitted(estimator)
        return (
            np.asarray(estimator.weights_, dtype=np.float64),
            np.asarray(estimator.means_, dtype=np.float64),
            np.asarray(estimator.covariances_, dtype=np.float64),
        )
    raise TypeError(
        "DPScorer scores a fitted PrivateGaussian or PrivateGaussianMixture, got "
        f"{type(estimator).__name__}"
    )


def max_log_density(estimator: Any) -> float:
    """An upper bound on the log-density of a fitted privgauss model, from the model alone.

    For a Gaussian its peak −½ log det(2πΣ); for a mixture log Σ_k w_k·exp(peak_k) (the
    density is a weighted sum of densities, each at most its peak; a mixture's background,
    :meth:`PrivateGaussianMixture.score_samples`, peaks no higher than the Gaussian of the
    whole mixture's covariance Σ̄ ⪰ Σ_k w_k Σ_k, whose log-peak is at most Σ_k w_k·peak_k by
    the concavity of log det, so at most this bound). Each log-determinant is
    taken over the eigenvalues of Σ_k floored at the smallest positive float, so a singular
    covariance gives a large finite bound (``score_samples`` adds a ridge, which only lowers
    the density). Raises ValueError when the bound is not finite (a model with non-finite
    parameters or no positive weight) — a fact about the public model, not the rows.
    """
    weights, _, covs = _components(estimator)
    d = covs.shape[-1]
    tiny = np.finfo(np.float64).tiny
    with np.errstate(all="ignore"):
        eig = np.linalg.eigvalsh((covs + np.swapaxes(covs, -1, -2)) / 2)
        logdet = np.sum(np.log(np.maximum(eig, tiny)), axis=-1)
        peaks = np.log(weights) - 0.5 * (d * _LOG_2PI + logdet)
        hi = float(logsumexp(peaks))
    if not math.isfinite(hi):
        raise ValueError("the fitted model's maximum log-density is not finite: cannot score")
    return hi


class DPScorer:
    """A differentially private scorer for ``cross_val_score`` / ``GridSearchCV(scoring=...)``
    on private rows: the clipped mean log-likelihood of the held-out rows plus noise, charged to
    a shared accountant.

    ``scorer(estimator, X, y=None)`` evaluates the fitted ``estimator`` (a
    :class:`~privgauss.PrivateGaussian` or :class:`~privgauss.PrivateGaussianMixture`, whose
    parameters are DP outputs) at the n rows of ``X``:

    1. the clip interval ``[lo, hi]`` comes from the fitted model and public parameters only,
       never from ``X``: ``hi`` = :func:`max_log_density` (for a Gaussian its peak
       −½ log det(2πΣ); for a mixture log Σ_k w_k·exp(peak_k)), ``lo = hi − width``
       (:meth:`clip_interval`);
    2. each row's log-density (``estimator.score_samples``) is clipped to ``[lo, hi]`` (a
       non-finite value counts as ``lo``, as if clipped) and the n clipped values are averaged;
    3. the average's sensitivity is ``(hi − lo)/n`` (replace-one changes one term by at most
       the width; :func:`privgauss.sensitivity.bounded_mean`); the accountant is charged the
       per-call budget **before** any noise is drawn (over budget:
       :class:`~privgauss.exceptions.PrivacyBudgetError`, nothing drawn, ledger unchanged),
       with a ledger entry ``step="score"``, the mechanism, the sensitivity and the noise
       scale;
    4. the noisy average is returned: Gaussian noise for a ``rho=`` (zCDP) or ``epsilon=,
       delta=`` (analytic calibration) budget, Laplace noise for ``epsilon=`` alone (pure DP).

    **Guarantee.** Each call is ρ-zCDP, (ε, δ)-DP or ε-DP (the per-call budget) with respect to
    the rows of ``X``, under **replace-one** neighbours (n, the number of rows scored, is
    public); the fitted model is taken as given (it is itself a DP output, charged by its fit).
    Privacy holds whatever ``width`` and whatever the model, since the clip bounds every row's
    term. Every call is charged — held-out folds, training folds (``return_train_score=True``),
    ``GridSearchCV.score`` — so the accountant's ledger shows each release; the fits that a
    search runs (one per setting and fold, plus the refit on all rows with ``refit=True``) are
    charged by the estimator to the same accountant when it has ``accountant=``.

    Clipping biases the score upwards where rows lie far below the model's peak (beyond the
    width), and the noise has standard deviation about ``width / (n·√(2ρ))``: a larger width
    clips less and adds more noise. As the budget grows, the score of rows inside the interval
    converges to the exact ``score``.

    Parameters
    ----------
    accountant : Accountant, optional
        The accountant every call is charged to: the one the fits are charged to. Default: the
        scored estimator's ``accountant`` (the shared accountant of a cross-validation or grid
        search); refused with :class:`~privgauss.exceptions.PrivacyBudgetError` when neither
        is given.
    rho, epsilon, delta : float, optional
        The budget of **each call** (exactly one notion, as for the estimators): ``rho`` for
        ρ-zCDP; ``epsilon`` and ``delta`` for (ε, δ)-DP; ``epsilon`` alone for pure ε-DP.
    width : float, optional
        ``hi − lo``, in nats. Default :func:`default_width` (d, k): ½·χ²_d quantile at
        1 − 10⁻⁴, plus ln k, plus 1.
    random_state : None, int or numpy Generator
        ``None`` (default): secure noise (OpenDP's samplers). An int seeds one generator for
        the scorer's lifetime (successive calls draw successive noise); fast and reproducible,
        for experiments only (:class:`~privgauss.warnings.SeededNoiseWarning`).

    Attributes
    ----------
    accountant : Accountant or None
        As given.
    budget : Budget
        The budget of each call.
    width : float or None
        As given (None: :func:`default_width` of the scored model).
    random_state : None, int or numpy Generator
        As given.

    Examples
    --------
    >>> import numpy as np, privgauss as pg
    >>> from sklearn.model_selection import cross_val_score
    >>> X = np.random.default_rng(0).normal(size=(3000, 2))            # private rows
    >>> acct = pg.Accountant(pg.ZCDP(1.0))                             # fits and scores
    >>> g = pg.PrivateGaussian(rho=0.2, accountant=acct, mean_bound=10, cov_bounds=(0.1, 10))
    >>> scores = cross_val_score(g, X, cv=3, scoring=pg.DPScorer(acct, rho=0.02))
    >>> print(acct.spent)                                              # 3 fits, 3 DP scores
    0.66-zCDP
    """

    def __init__(
        self,
        accountant: Accountant | None = None,
        *,
        rho: float | None = None,
        epsilon: float | None = None,
        delta: float | None = None,
        width: float | None = None,
        random_state: RandomState = None,
    ) -> None:
        if accountant is not None and not isinstance(accountant, Accountant):
            raise TypeError("accountant must be a privgauss.Accountant")
        if width is not None and not (math.isfinite(float(width)) and float(width) > 0):
            raise ValueError("width must be a finite number > 0")
        self.accountant = accountant
        self.budget: Budget = make_budget(rho=rho, epsilon=epsilon, delta=delta)
        self.width = None if width is None else float(width)
        self.random_state = random_state
        self._noise = as_noise(random_state)

    def __repr__(self) -> str:
        width = "" if self.width is None else f", width={self.width:g}"
        return f"DPScorer({self.budget} per call{width})"

    def clip_interval(self, estimator: Any) -> tuple[float, float]:
        """``(lo, hi)``: ``hi`` = :func:`max_log_density` of the fitted model, ``lo = hi −
        width``. Public: a function of the (DP) model and the parameters only."""
        weights, means, _ = _components(estimator)
        width = self.width
        if width is None:
            width = default_width(int(means.shape[1]), int(weights.shape[0]))
        hi = max_log_density(estimator)
        return hi - width, hi

    def __call__(self, estimator: Any, X: Any, y: Any = None) -> float:
        """The DP mean log-likelihood of the rows of ``X`` under the fitted ``estimator``
        (charged to the accountant; see the class docstring). ``y`` is ignored."""
        del y
        accountant = self.accountant
        if accountant is None:
            accountant = getattr(estimator, "accountant", None)
        if not isinstance(accountant, Accountant):
            raise PrivacyBudgetError(
                "DPScorer charges every score to an accountant: pass DPScorer(accountant, ...) "
                "or give the estimator accountant= (the one its fits are charged to)"
            )
        lo, hi = self.clip_interval(estimator)
        with np.errstate(all="ignore"):  # an overflow on one row must not warn (rule 10)
            values = np.asarray(estimator.score_samples(X), dtype=np.float64)
            values = np.clip(np.nan_to_num(values, nan=lo, posinf=hi, neginf=lo), lo, hi)
        n = int(values.shape[0])
        statistic = float(np.mean(values))
        sensitivity = bounded_mean(hi - lo, n)
        warn_before_fit(self.budget, n, self._noise)
        release = (
            gaussian_mechanism
            if isinstance(self.budget, ZCDP)
            or has_delta(self.budget)
            else laplace_mechanism
        )
        noisy = release(
            statistic, sensitivity, self.budget, accountant=accountant, noise=self._noise,
            step="score",
        )
        return float(noisy)
