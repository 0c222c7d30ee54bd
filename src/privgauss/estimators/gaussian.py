"""``PrivateGaussian``: a scikit-learn-style private estimator of one Gaussian."""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, DensityMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..backends import DEFAULT_MAX_MEMORY_BYTES, in_memory
from ..clipped_stats import transform_rows
from ..exceptions import InvalidDataError, PrivacyBudgetError
from ..linalg import inv_sqrtm_psd, sqrtm_psd
from ..metrics import gaussian_logpdf
from ..noise import NoiseSource, as_noise
from ..privacy import Accountant, ApproxDP, Budget, PureDP
from ._base import PrivateEstimatorBase, is_pure, privacy_report, private_section, zcdp_of

METHODS = ("auto", "clip", "coinpress", "public", "histogram", "hypothesis-selection", "ppe")


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
    ``random_state=None`` draws secure noise; an int or Generator gives fast reproducible noise
    for experiments (not for production releases).
    """

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
        self.beta = beta
        self.constants = constants
        self.random_state = random_state
        self.accountant = accountant
        self.max_memory_bytes = max_memory_bytes

    # ------------------------------------------------------------------------------------
    def _check_params(self, d: int) -> tuple[Budget, np.ndarray | None]:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if self.constants not in ("practical", "theory"):
            raise ValueError("constants must be 'practical' or 'theory'")
        if not (0 < float(self.beta) < 1):
            raise ValueError("beta (failure probability) must be in (0, 1)")
        if not (0 <= float(self.gamma) < 1):
            raise ValueError("gamma (TV distance public/private) must be in [0, 1)")
        budget = self._budget()
        known: np.ndarray | None = None
        if isinstance(self.covariance, str):
            if self.covariance != "identity":
                raise ValueError("covariance must be None, 'identity' or a (d, d) matrix")
            known = np.eye(d)
        elif self.covariance is not None:
            known = np.array(self.covariance, dtype=np.float64)
            if known.shape != (d, d) or not np.all(np.isfinite(known)):
                raise InvalidDataError(f"covariance must be a finite ({d}, {d}) matrix")
            known = (known + known.T) / 2
            if np.linalg.eigvalsh(known)[0] <= 0:
                raise InvalidDataError("the known covariance must be positive definite")
        if self.mean_bound is not None and not (0 < float(self.mean_bound) < math.inf):
            raise ValueError("mean_bound must be a positive finite number")
        if self.cov_bounds is not None:
            lo, hi = (float(v) for v in self.cov_bounds)
            if not (0 < lo <= hi < math.inf):
                raise ValueError("cov_bounds must be (lo, hi) with 0 < lo <= hi < inf")
        return budget, known

    def _choose(self, budget: Budget, d: int, m: int, known: np.ndarray | None) -> tuple[str, str]:
        """The method to run and the reason, from public facts only."""
        if self.method != "auto":
            return self.method, "requested"
        if self.mean is not None and not is_pure(budget):  # the covariance only
            if m >= d + 1:
                return "public", f"known mean; {m} public rows given ({d + 1} needed)"
            if self.cov_bounds is not None:
                return "coinpress", "known mean and cov_bounds given"
            raise ValueError(
                "with a known mean= the covariance is estimated by method 'public' (give "
                f"public_X with at least {d + 1} rows) or 'coinpress' (give cov_bounds=(lo, hi))"
            )
        has_prior = self.mean_bound is not None and (known is not None or self.cov_bounds)
        need_public = 1 if known is not None else d + 1
        if is_pure(budget):
            if known is not None and has_prior:
                return "clip", "pure epsilon budget and a mean bound"
            if has_prior or m >= d + 1:
                return "hypothesis-selection", "pure epsilon budget: private hypothesis selection"
        elif m >= need_public:
            return "public", f"{m} public rows given ({need_public} needed, no bounds used)"
        elif has_prior:
            return "coinpress", "mean_bound (and covariance bounds) given"
        elif isinstance(budget, ApproxDP):
            return "histogram", "(epsilon, delta) budget and no bounds: private localisation"
        need = "1 public row" if known is not None else f"{d + 1} public rows"
        raise ValueError(
            "no method can run with what was given: supply public_X (at least "
            f"{need}), or mean_bound= (and cov_bounds= when the covariance is unknown), or an "
            "(epsilon, delta) budget for the bound-free histogram method"
        )

    # ------------------------------------------------------------------------------------
    def _fit(self, X: Any, Xp: np.ndarray | None) -> None:
        """The math of :meth:`fit` on validated rows: ``X`` a numpy array (not copied when
        float64 and contiguous; never modified) or a lazy dask array. The ``"public"``,
        ``"coinpress"`` and ``"clip"`` methods stream dask data chunk by chunk (a few passes per
        step); ``"histogram"``, ``"hypothesis-selection"`` and ``"ppe"`` load it into memory,
        refused (before any budget is spent) when n·d·8 bytes exceed ``max_memory_bytes``."""
        n, d = int(X.shape[0]), int(X.shape[1])
        budget, known = self._check_params(d)
        method, reason = self._choose(budget, d, 0 if Xp is None else Xp.shape[0], known)
        center = np.zeros(d) if self.center is None else np.asarray(self.center, dtype=float)
        if center.shape != (d,) or not np.all(np.isfinite(center)):
            raise InvalidDataError(f"center must be a finite vector of length {d}")
        self._n_rows = n
        known_mean = self._known_mean(d, known, method)
        self._check_method_inputs(method, budget, d, Xp, known, known_mean)
        acct = self._fit_accountant(budget)
        noise = as_noise(self.random_state)
        self._warn_before_fit(budget, n, noise)
        with private_section(acct):
            if known_mean is not None:
                mean, cov = known_mean, self._covariance_known_mean(
                    method, X, Xp, zcdp_of(budget, f"method={method!r}"), acct, noise, known_mean)
            else:
                mean, cov = self._run(method, X, Xp, budget, acct, noise, center, known)
        self.mean_, self.covariance_ = self._inside_prior(mean, cov, center, known)
        self._record(budget, acct, method, reason)

    def _inside_prior(self, mean: np.ndarray, cov: np.ndarray, center: np.ndarray,
                      known: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """The release projected into the prior the user gave (post-processing, no privacy
        cost): the mean into the ball ‖μ − center‖ ≤ ``mean_bound``, an estimated covariance's
        eigenvalues into ``cov_bounds``. When the truth satisfies the prior, neither projection
        moves the estimate away from it."""
        if self.mean_bound is not None and self.mean is None:  # a known mean is the user's
            offset = mean - center
            norm = float(np.linalg.norm(offset))
            if norm > float(self.mean_bound):  # a hair inside, whatever the rounding
                mean = center + offset * (float(self.mean_bound) / norm * (1.0 - 1e-12))
        if known is None and self.cov_bounds is not None:
            lo, hi = (float(v) for v in self.cov_bounds)
            w, V = np.linalg.eigh((cov + cov.T) / 2)
            if w[0] < lo or w[-1] > hi:
                cov = (V * np.clip(w, lo, hi)) @ V.T
                cov = (cov + cov.T) / 2
        return mean, cov

    def _known_mean(self, d: int, known: np.ndarray | None, method: str) -> np.ndarray | None:
        """The user's known mean (a public vector), checked; None when not given."""
        if self.mean is None:
            return None
        mu = np.array(self.mean, dtype=np.float64)
        if mu.shape != (d,) or not np.all(np.isfinite(mu)):
            raise InvalidDataError(f"mean must be a finite vector of length {d}")
        if known is not None:
            raise ValueError("both mean= and covariance= are known: there is nothing to estimate")
        if method not in ("coinpress", "public"):
            raise ValueError(
                f"method={method!r} does not take a known mean: with mean= use method='public' "
                "(d+1 public rows) or 'coinpress' (cov_bounds=)"
            )
        return mu

    def _covariance_known_mean(self, method: str, X: Any, Xp: np.ndarray | None, rho: float,
                               acct: Accountant, noise: NoiseSource, mu: np.ndarray) -> np.ndarray:
        """The covariance of rows with a known mean μ: the whole ρ goes to the covariance
        (CoinPress's known-mean Alg. 2 on the rows x − μ, in a frame where I ⪯ Σ ⪯ K·I:
        ``cov_bounds`` rescaled, or the public preconditioner's frame)."""
        from ..gaussian.coinpress import coinpress_covariance

        if method == "coinpress":
            lo, hi = (float(v) for v in self.cov_bounds)  # type: ignore[union-attr]  # set: checked by _check_method_inputs
            Y = transform_rows(X, np.full(X.shape[1], 1.0 / math.sqrt(lo)), mu)
            cov = coinpress_covariance(Y, rho, cov_upper=hi / lo, accountant=acct, noise=noise,
                                       beta=self.beta, constants=self.constants)
            return cov * lo
        from ..gaussian.public import public_preconditioner

        pre = public_preconditioner(Xp, float(self.beta) / 2, float(self.gamma))
        Y = transform_rows(X, pre.forward_matrix, mu)  # x ↦ F(x − μ): covariance in [I, K·I]
        cov_y = coinpress_covariance(Y, rho, cov_upper=max(float(pre.K), 1.0), accountant=acct,
                                     noise=noise, beta=float(self.beta) / 2,
                                     constants=self.constants)
        return pre.backward(np.zeros(len(mu)), cov_y)[1]

    def _check_method_inputs(
        self, method: str, budget: Budget, d: int, Xp: np.ndarray | None,
        known: np.ndarray | None, known_mean: np.ndarray | None = None,
    ) -> None:
        """Refuse, before any budget is spent, inputs the chosen method cannot use."""
        if known_mean is not None:
            if method == "coinpress" and self.cov_bounds is None:
                raise InvalidDataError("method='coinpress' with a known mean needs cov_bounds=")
            if method == "public" and (Xp is None or Xp.shape[0] < d + 1):
                raise InvalidDataError(
                    f"method='public' needs at least {d + 1} public rows (public_X=) to "
                    "precondition the covariance"
                )
            zcdp_of(budget, f"method={method!r}")
            return
        if method == "public":
            need = 1 if known is not None else d + 1
            if Xp is None or Xp.shape[0] < need:
                raise InvalidDataError(
                    f"method='public' needs at least {need} public rows (public_X=)"
                    + ("" if known is not None else " to precondition an unknown covariance")
                )
            if known is None and not is_pure(budget):
                from ..gaussian.public import check_public_plan

                rho = zcdp_of(budget, "method='public'")
                check_public_plan(self._n_rows, d, Xp.shape[0], rho, float(self.beta),
                                  float(self.gamma), self.constants)
        if method in ("clip", "coinpress") and self.mean_bound is None:
            raise InvalidDataError(f"method={method!r} needs mean_bound= (a radius around center)")
        if method == "coinpress" and known is None and self.cov_bounds is None:
            raise InvalidDataError(
                "method='coinpress' with an unknown covariance needs cov_bounds=(lo, hi)"
            )
        if method == "clip" and known is None:
            raise InvalidDataError(
                "method='clip' estimates a mean only: pass covariance='identity' or a known matrix"
            )
        if method == "histogram" and not (isinstance(budget, ApproxDP) and budget.delta > 0):
            raise PrivacyBudgetError("method='histogram' needs an (epsilon, delta>0) budget")
        if method == "hypothesis-selection" and not is_pure(budget):
            raise PrivacyBudgetError("method='hypothesis-selection' needs a pure epsilon budget")
        if method == "ppe":
            self._check_ppe(budget, d, known)

    def _check_ppe(self, budget: Budget, d: int, known: np.ndarray | None) -> None:
        if not (isinstance(budget, ApproxDP) and budget.delta > 0):
            raise PrivacyBudgetError("method='ppe' needs an (epsilon, delta>0) budget")
        if known is not None:
            raise InvalidDataError(
                "method='ppe' estimates the mean and the covariance: drop covariance=, or use "
                "method='histogram' for a known covariance"
            )
        from ..reductions.ppe_gaussian import ppe_requirements

        req = ppe_requirements(self._n_rows, d, budget.epsilon, budget.delta, self.constants)
        if not req.ok:
            raise InvalidDataError(req.message())

    def _run(
        self,
        method: str,
        X: np.ndarray,
        Xp: np.ndarray | None,
        budget: Budget,
        acct: Accountant,
        noise: NoiseSource,
        center: np.ndarray,
        known: np.ndarray | None,
    ) -> tuple[np.ndarray, np.ndarray]:
        # Mean-only problems are solved in coordinates whitened by the known (public) covariance.
        if known is not None and method in ("clip", "coinpress", "public"):
            root = sqrtm_psd(known)
            w = inv_sqrtm_psd(known)
            Xw = transform_rows(X, w)  # an overflowing row is mapped to 0, never an error
            Xpw = None if Xp is None else Xp @ w
            cw = center @ w
            bound = None
            if self.mean_bound is not None:
                bound = float(self.mean_bound) / math.sqrt(np.linalg.eigvalsh(known)[0])
            mean_w = self._mean_identity(method, Xw, Xpw, budget, acct, noise, cw, bound)
            return mean_w @ root, known.copy()
        if method == "coinpress":
            from ..gaussian.coinpress import _coinpress_gaussian

            return _coinpress_gaussian(
                X,
                zcdp_of(budget, "coinpress"),
                center=center,
                radius=float(self.mean_bound),  # type: ignore[arg-type]
                cov_bounds=tuple(self.cov_bounds),  # type: ignore[arg-type]
                accountant=acct,
                noise=noise,
                constants=self.constants,
            )
        if method == "public":
            from ..gaussian.public import _public_gaussian, check_public_collapse

            # the plan was checked by _check_method_inputs: the unchecked runner, then collapse
            mean, cov = _public_gaussian(
                X,
                Xp,
                zcdp_of(budget, "the public-data estimator"),
                accountant=acct,
                noise=noise,
                beta=self.beta,
                gamma=self.gamma,
                constants=self.constants,
            )
            check_public_collapse(Xp, cov, float(self.beta), float(self.gamma))
            return mean, cov
        if method == "histogram":
            from ..gaussian.histogram import histogram_gaussian

            return histogram_gaussian(
                X,
                budget.epsilon,  # type: ignore[union-attr]
                budget.delta,  # type: ignore[union-attr]
                accountant=acct,
                noise=noise,
                mean_only=known is not None,
                cov=known,
                beta=self.beta,
                constants=self.constants,
                corr_condition=float(self.corr_condition),
            )
        if method == "hypothesis-selection":
            from ..gaussian import hypothesis_selection as hs

            eps = budget.epsilon  # type: ignore[union-attr]
            X = in_memory(X, max_memory_bytes=self.max_memory_bytes)
            if Xp is not None and Xp.shape[0] >= X.shape[1] + 1:
                return hs.hypothesis_selection_public(X, Xp, eps, accountant=acct, noise=noise)
            if self.mean_bound is None or (known is None and self.cov_bounds is None):
                raise InvalidDataError(
                    "method='hypothesis-selection' needs mean_bound= and cov_bounds= "
                    "(or d+1 public rows)"
                )
            return hs.hypothesis_selection_gaussian(
                X,
                eps,
                center=center,
                radius=float(self.mean_bound),
                cov_bounds=None if self.cov_bounds is None else tuple(self.cov_bounds),  # type: ignore[arg-type]  # (lo, hi): two entries, checked by _check_params
                cov=known,
                accountant=acct,
                noise=noise,
            )
        if method == "ppe":
            from ..reductions.ppe_gaussian import ppe_gaussian

            return ppe_gaussian(
                in_memory(X, max_memory_bytes=self.max_memory_bytes),
                budget.epsilon,  # type: ignore[union-attr]
                budget.delta,  # type: ignore[union-attr]
                accountant=acct,
                noise=noise,
                constants=self.constants,
                beta=self.beta,
                corr_condition=float(self.corr_condition),
            )
        raise ValueError(f"method {method!r} cannot estimate a covariance")  # pragma: no cover

    def _mean_identity(
        self,
        method: str,
        X: np.ndarray,
        Xp: np.ndarray | None,
        budget: Budget,
        acct: Accountant,
        noise: NoiseSource,
        center: np.ndarray,
        bound: float | None,
    ) -> np.ndarray:
        """Mean of N(μ, I) rows by the chosen method."""
        if method == "clip":
            from ..gaussian.clip_mean import clip_mean
            from ..gaussian.coinpress_plan import chi_tail_radius

            # the mean lies within `bound` of center, and a row within the chi tail of the mean
            n, d = X.shape
            radius = bound + chi_tail_radius(d, self.beta / n)  # type: ignore[operator]
            return clip_mean(X, center, radius, budget, accountant=acct, noise=noise)
        if method == "coinpress":
            from ..gaussian.coinpress import coinpress_mean

            assert bound is not None  # _check_method_inputs: coinpress needs mean_bound
            return coinpress_mean(
                X, center, bound, zcdp_of(budget, "coinpress"), accountant=acct, noise=noise
            )
        from ..gaussian.public import public_mean

        return public_mean(
            X,
            Xp,
            zcdp_of(budget, "the public-data mean estimator"),
            accountant=acct,
            noise=noise,
            beta=self.beta,
            constants=self.constants,
        )

    # ------------------------------------------------------------------------------------
    def score_samples(self, X: Any) -> np.ndarray:
        """Log density of the fitted Gaussian at each row of X (no privacy cost)."""
        X = self._rows_for_scoring(X)
        cov = self.covariance_ + 1e-12 * np.trace(self.covariance_) / len(self.mean_) * np.eye(
            len(self.mean_)
        )
        return gaussian_logpdf(X, self.mean_, cov)

    def sample(self, n_samples: int = 1, random_state: Any = None) -> np.ndarray:
        """Draw synthetic rows from the fitted (already private) Gaussian: post-processing,
        no privacy cost."""
        check_is_fitted(self)
        rng = np.random.default_rng(random_state)
        return rng.multivariate_normal(self.mean_, self.covariance_, size=int(n_samples))

    def to_dict(self) -> dict[str, Any]:
        """Parameters and privacy report (only DP outputs and public metadata)."""
        check_is_fitted(self)
        from .._version import __version__

        return {
            "model": "gaussian",
            "library": "privgauss",
            "version": __version__,
            "method": self.method_,
            "method_reason": self.method_reason_,
            "n_features": self.n_features_in_,
            "feature_names": self._feature_names(),
            "mean": self.mean_.tolist(),
            "covariance": self.covariance_.tolist(),
            "privacy": privacy_report(self.budget_, self.accountant_),
            "pure_dp": isinstance(self.budget_, PureDP),
        }
