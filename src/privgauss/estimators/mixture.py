"""``PrivateGaussianMixture``: a scikit-learn-style private estimator of a Gaussian mixture."""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

import numpy as np
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, DensityMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..backends import DEFAULT_MAX_MEMORY_BYTES, in_memory
from ..exceptions import InvalidDataError, PrivacyBudgetError
from ..metrics import gaussian_logpdf
from ..noise import NoiseSource, as_noise
from ..privacy import ZCDP, Accountant, ApproxDP
from ..validation import check_positive_int
from ._base import PrivateEstimatorBase, privacy_report, private_section

__all__ = ["METHODS", "MethodSpec", "PrivateGaussianMixture"]

Runner = Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class MethodSpec:
    """One way to fit the mixture: ``runner(est, X, public_X, budget, accountant, noise, info)``
    returns (weights, means, covariances); ``uses_public`` says whether it needs ``public_X``;
    ``requirements`` is the method name understood by
    :func:`privgauss.mixture.requirements.requirements` (None: no sample-size check)."""

    runner: Runner
    uses_public: bool = False
    requirements: str | None = None
    knobs: tuple[str, ...] = ()
    min_separation: float = 0.0  # smallest separation ratio validated at; inf: never "auto"
    zcdp: bool = False  # accepts a rho-zCDP budget (rho=)
    min_public: Callable[[int, float], int] | None = None  # fewest public rows for (d, w_min)


def _learner_runner(
    method: str, module: str, function: str, public: bool = False
) -> Callable[..., Any]:
    """A runner calling ``privgauss.mixture.<module>.<function>`` with the estimator's knobs
    (and ``public_X=`` when ``public``)."""

    def run(
        est: PrivateGaussianMixture,
        X: np.ndarray,
        public_X: np.ndarray | None,
        budget: ApproxDP,
        acct: Accountant,
        noise: NoiseSource,
        info: dict[str, Any],
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        learner = getattr(importlib.import_module(f"privgauss.mixture.{module}"), function)
        return learner(
            X,
            est.n_components,
            budget,
            min_weight=est.min_weight,
            beta=est.beta,
            constants=est.constants,
            accountant=acct,
            noise=noise,
            info=info,
            **({"public_X": public_X} if public else {}),
            **est._method_kwargs(method, int(X.shape[1])),
        )

    return run


_run_kssu = _learner_runner("kssu", "kssu", "kssu_gmm")
_run_sample_aggregate = _learner_runner(
    "sample-aggregate", "sample_aggregate", "sample_aggregate_gmm"
)
_run_public_light = _learner_runner("public-light", "public_light", "public_light_gmm", True)


def _reduction_runner(name: str) -> Runner:
    def run(*args: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        from ..reductions import agnostic

        return getattr(agnostic, name)(*args)

    return run

_run_public_heavy = _learner_runner("public-heavy", "public_heavy", "public_heavy_gmm", True)


# public rows optional: passed through (None without them); the user's prior, when given,
# goes through est._method_kwargs as an EMPrior
_run_em = _learner_runner("em", "private_em", "private_em_gmm", True)


def _min_public(method: str) -> Callable[[int, float], int]:
    def fewest(d: int, w: float) -> int:
        from ..mixture.public_heavy import min_public_rows

        return min_public_rows(d, w, method)

    return fewest


#: The registry of methods, name → :class:`MethodSpec`. Methods using public data (issue 5:
#: "public-light", "public-heavy", …) are added here with ``uses_public=True``; ``method="auto"``
#: considers them when ``public_X`` is given.
METHODS: dict[str, MethodSpec] = {
    "kssu": MethodSpec(
        _run_kssu,
        requirements="kssu",
        knobs=("terrific_c", "radii", "n_radii_max", "max_points"),
        min_separation=5.0,
    ),
    "sample-aggregate": MethodSpec(
        _run_sample_aggregate,
        requirements="sample-aggregate",
        knobs=(
            "n_chunks",
            "learner",
            "radii",
            "peel_factor",
            "t_fraction",
            "box_factor",
            "max_points",
        ),
        min_separation=3.0,
    ),
    "public-light": MethodSpec(
        _run_public_light,
        uses_public=True,
        requirements="public-light",
        knobs=("cond_range", "clustering_share"),
        min_separation=6.0,
        zcdp=True,
        min_public=_min_public("public-light"),
    ),
    "public-heavy": MethodSpec(
        _run_public_heavy,
        uses_public=True,
        requirements="public-heavy",
        knobs=("count_share",),
        min_separation=6.0,
        zcdp=True,
        min_public=_min_public("public-heavy"),
    ),
    # issue 18: private EM, no separation assumed; public rows optional (frame and seed).
    # Not a regular "auto" candidate (min_separation = inf): auto falls back to it when no
    # paper method's requirements hold, and when the public clustering refuses.
    "em": MethodSpec(_run_em, requirements="em", knobs=("n_steps",), min_separation=math.inf,
                     zcdp=True),
    # the KSSU19 warm-up: equal weights, spherical components; only when asked for by name
    "pegme": MethodSpec(
        _learner_runner("pegme", "pegme", "pegme"),
        knobs=("rank", "peel_factor", "radii", "max_points"),
        min_separation=math.inf,
    ),
    # issue 6 (reductions/): never preferred by "auto" (min_separation = inf)
    "ppe": MethodSpec(_reduction_runner("run_ppe"), requirements="ppe", min_separation=math.inf),
    "agnostic": MethodSpec(
        _reduction_runner("run_agnostic"), requirements="agnostic", min_separation=math.inf
    ),
}


class PrivateGaussianMixture(PrivateEstimatorBase, DensityMixin, BaseEstimator):
    """Differentially private estimate of a k-component Gaussian mixture (weights, means,
    covariances).

    Guarantee: ``weights_``, ``means_`` and ``covariances_`` are (ε, δ)-DP with respect to the
    rows of ``X`` for ``epsilon=``, ``delta=`` (δ > 0), or ρ-zCDP for ``rho=`` (methods
    ``"em"``, ``"public-heavy"``, ``"public-light"``), under
    **replace-one** neighbours (datasets of the same public size n differing in one row). A
    failure raises :class:`~privgauss.exceptions.EstimationFailed` with the budget spent.

    Methods without public data (``method_`` says which ran and ``method_reason_`` why):

    * ``"kssu"`` — Kamath–Sheffet–Singhal–Ullman 2019, Alg. 3–4: private recursive partitioning
      by terrific balls (raw, then after private PCA), then per-part CoinPress estimation.
    * ``"sample-aggregate"`` — KSSU19 §6: a non-private learner on disjoint chunks, private
      1-cluster aggregation of the chunk means, then per-part CoinPress estimation.

    Methods with public data ``public_X`` (Bie–Kamath–Singhal 2022; also under ``rho=``, ρ-zCDP;
    privacy holds for any public rows, only accuracy depends on them):

    * ``"public-heavy"`` — Alg. 9–10, ≥ 2(d+1)/w_min public rows: clustering on the public rows
      alone (free), then per cluster d+1-sample public preconditioning + CoinPress.
    * ``"public-light"`` — Alg. 3–7, ≥ 4/w_min public rows: public superclustering, private PCA
      and a privately confirmed public split, then per-cluster CoinPress.

    Method without a separation assumption: ``"em"`` — private EM (noisy per-component
    sufficient statistics, DP-EM-style); ``auto`` falls back to it whenever no paper method's
    requirement holds.

    **A prior** (optional, public): ``mean_bound=R`` with ``center=`` (default 0) and
    ``cov_bounds=(lo, hi)``, given together, say that every component's mean lies within R of
    the centre and every component covariance's eigenvalues in [lo, hi]. Private EM then
    localises by CoinPress inside the prior instead of the bound-free route, so it needs far
    fewer rows and a ``rho=`` budget works without public rows; every release, of any method, is
    projected into the prior (post-processing). A wrong prior costs accuracy, never privacy.

    ``public_clusters_`` shows the public clustering (public-heavy: the public rows' clusters;
    public-light: the public balls); ``method="auto"`` prefers public-heavy, then public-light,
    when ``public_X`` has enough rows for them.

    ``method="auto"`` picks, from public facts only (n, d, k, the budget, ``min_weight`` and the
    optional assumed ``separation`` ratio), among the methods whose
    :func:`~privgauss.mixture.requirements.requirements` n meets: with ``separation`` given,
    those validated at that separation (KSSU at ≥ 5, sample-and-aggregate at ≥ 3), then the one
    with the most room in n; with ``separation=None`` the one validated at the smallest
    separation. Bad input (k < 1 or k > n, ``min_weight`` outside (0, 1/k], knobs out of
    range, too few samples for the method) is refused up front with a message that says what is
    needed, before any budget is spent. ``method_params`` passes method knobs
    (e.g. ``{"n_chunks": 2000}``); ``enforce_requirements=False`` runs below the practical
    threshold (for experiments; the run will then likely fail, spending the budget).
    ``constants="theory"``/``"practical"`` only change accuracy, never privacy.
    ``random_state=None`` draws secure noise; an int or Generator gives fast reproducible noise
    for experiments (not for production releases). ``X`` may be a dask array or a path to a
    ``.npy`` file / ``.zarr`` directory: the mixture learners need random access to every row, so
    it is loaded into memory, refused up front when n·d·8 bytes exceed ``max_memory_bytes``.
    """

    _parameter_constraints: dict[str, Any] = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        # budgets are checked by the budget classes (PrivacyBudgetError, DESIGN.md's contract)
        "rho": "no_validation",
        "epsilon": "no_validation",
        "delta": "no_validation",
        "method": [StrOptions({"auto", *METHODS})],
        "min_weight": [Interval(Real, 0, 1, closed="right"), None],
        "separation": [Interval(Real, 0, None, closed="neither"), None],
        "mean_bound": [Interval(Real, 0, None, closed="neither"), None],
        "center": ["array-like", None],
        "cov_bounds": ["array-like", None],
        "constants": [StrOptions({"practical", "theory"})],
        "beta": [Interval(Real, 0, 1, closed="neither")],
        "method_params": [dict, None],
        "enforce_requirements": ["boolean"],
        "random_state": [Interval(Integral, 0, None, closed="left"), np.random.Generator, None],
        "accountant": [Accountant, None],
        "max_memory_bytes": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        n_components: int = 1,
        *,
        rho: float | None = None,
        epsilon: float | None = None,
        delta: float | None = None,
        method: str = "auto",
        min_weight: float | None = None,
        separation: float | None = None,
        mean_bound: float | None = None,
        center: np.ndarray | None = None,
        cov_bounds: tuple[float, float] | None = None,
        constants: str = "practical",
        beta: float = 0.05,
        method_params: dict[str, Any] | None = None,
        enforce_requirements: bool = True,
        random_state: Any = None,
        accountant: Accountant | None = None,
        max_memory_bytes: int = DEFAULT_MAX_MEMORY_BYTES,
    ) -> None:
        self.n_components = n_components
        self.rho = rho
        self.epsilon = epsilon
        self.delta = delta
        self.method = method
        self.min_weight = min_weight
        self.separation = separation
        self.mean_bound = mean_bound
        self.center = center
        self.cov_bounds = cov_bounds
        self.constants = constants
        self.beta = beta
        self.method_params = method_params
        self.enforce_requirements = enforce_requirements
        self.random_state = random_state
        self.accountant = accountant
        self.max_memory_bytes = max_memory_bytes

    # ------------------------------------------------------------------------------------
    def _method_kwargs(self, method: str, d: int) -> dict[str, Any]:
        params = dict(self.method_params or {})
        allowed = METHODS[method].knobs
        kwargs = {key: value for key, value in params.items() if key in allowed}
        if method == "em":
            kwargs["prior"] = self._em_prior(d)
        return kwargs

    def _em_prior(self, d: int) -> Any:
        """The user's prior as a :class:`~privgauss.mixture.private_em.EMPrior` (public; None
        without ``mean_bound``). Checked by :meth:`_check_prior` before anything is spent."""
        if self.mean_bound is None:
            return None
        from ..mixture.private_em import EMPrior

        lo, hi = (float(v) for v in self.cov_bounds)  # type: ignore[union-attr]  # checked
        return EMPrior(self._prior_center(d), float(self.mean_bound), (lo, hi))

    def _prior_center(self, d: int) -> np.ndarray:
        return np.zeros(d) if self.center is None else np.asarray(self.center, dtype=np.float64)

    def _check_prior(self, d: int) -> None:
        """Refuse an unusable prior before anything is spent (messages name the parameter)."""
        if self.mean_bound is None and self.cov_bounds is None:
            if self.center is not None:
                raise ValueError("center= is the centre of the mean_bound= ball: give "
                                 "mean_bound= (and cov_bounds=) with it")
            return
        if self.mean_bound is None or self.cov_bounds is None:
            given, missing = (("mean_bound", "cov_bounds") if self.cov_bounds is None
                              else ("cov_bounds", "mean_bound"))
            raise ValueError(
                f"{given}= needs {missing}=: the mixture's prior bounds every component's mean "
                "(mean_bound=R around center=) and covariance (cov_bounds=(lo, hi), eigenvalue "
                "bounds) together"
            )
        if not (0 < float(self.mean_bound) < math.inf):
            raise ValueError("mean_bound must be a positive finite number")
        bounds = np.asarray(self.cov_bounds, dtype=np.float64)
        if bounds.shape != (2,) or not (0 < bounds[0] <= bounds[1] < math.inf):
            raise ValueError("cov_bounds must be (lo, hi) with 0 < lo <= hi < inf")
        c = self._prior_center(d)
        if c.shape != (d,) or not np.all(np.isfinite(c)):
            raise InvalidDataError(f"center must be a finite vector of length {d}")

    def _has_prior(self) -> bool:
        return self.mean_bound is not None

    def _inside_prior(self, means: np.ndarray, covs: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray]:
        """The release projected into the user's prior (post-processing, no privacy cost): each
        mean into the ball ‖μ_j − center‖ ≤ ``mean_bound``, each covariance's eigenvalues into
        ``cov_bounds``. When the truth satisfies the prior, neither moves an estimate away
        from it."""
        if self.mean_bound is None:
            return means, covs
        d = means.shape[1]
        center, bound = self._prior_center(d), float(self.mean_bound)
        lo, hi = (float(v) for v in self.cov_bounds)  # type: ignore[union-attr]  # checked
        means, covs = means.copy(), covs.copy()
        for j in range(means.shape[0]):
            offset = means[j] - center
            norm = float(np.linalg.norm(offset))
            if norm > bound:  # a hair inside, whatever the rounding
                means[j] = center + offset * (bound / norm * (1.0 - 1e-12))
            w, V = np.linalg.eigh((covs[j] + covs[j].T) / 2)
            if w[0] < lo or w[-1] > hi:
                c = (V * np.clip(w, lo, hi)) @ V.T
                covs[j] = (c + c.T) / 2
        return means, covs

    def _check_params(self, n: int, d: int) -> ZCDP | ApproxDP:
        """Refuse bad parameters before anything is spent (messages: public facts only)."""
        k = check_positive_int(self.n_components, "n_components", minimum=1)
        if k > n:
            raise InvalidDataError(
                f"n_components = {k} exceeds the number of rows n = {n}; give at least {k} rows"
            )
        if self.method != "auto" and self.method not in METHODS:
            raise ValueError(
                f"method must be 'auto' or one of {tuple(METHODS)}, got {self.method!r}"
            )
        if self.constants not in ("practical", "theory"):
            raise ValueError("constants must be 'practical' or 'theory'")
        if not (0 < float(self.beta) < 1):
            raise ValueError("beta (failure probability) must be in (0, 1)")
        if self.min_weight is not None:
            w = float(self.min_weight)
            if not (0 < w <= 1.0 / k):
                raise ValueError(
                    f"min_weight must be in (0, 1/n_components] = (0, {1.0 / k:.4g}], got {w!r}"
                )
        if self.separation is not None:
            sep = float(self.separation)
            if not (math.isfinite(sep) and sep > 0):
                raise ValueError(
                    "separation (the assumed separation ratio of the components, as in "
                    f"privgauss.datasets.separation_ratio) must be finite and > 0, got {sep!r}"
                )
        if self.method_params is not None:
            if not isinstance(self.method_params, dict):
                raise TypeError("method_params must be a dict of method knobs")
            known = {knob for spec in METHODS.values() for knob in spec.knobs}
            unknown = sorted(set(self.method_params) - known)
            if unknown:
                raise ValueError(f"unknown method_params {unknown}; known knobs: {sorted(known)}")
            self._check_knobs(d)
        self._check_prior(d)
        budget = self._budget()
        zcdp_ok = isinstance(budget, ZCDP) and (self.method == "auto" or METHODS[self.method].zcdp)
        if not (zcdp_ok or (isinstance(budget, ApproxDP) and budget.delta > 0)):
            raise PrivacyBudgetError(
                "PrivateGaussianMixture needs an (epsilon, delta) budget with delta > 0: pass "
                "epsilon= and delta= (its private 1-cluster and terrific-ball steps use "
                "stability histograms), or rho= with a zCDP method "
                f"{tuple(m for m, spec in METHODS.items() if spec.zcdp)}; got {budget}"
            )
        assert isinstance(budget, ZCDP | ApproxDP)  # refused above otherwise
        return budget

    def _check_knobs(self, d: int) -> None:
        p = self.method_params or {}
        if "terrific_c" in p and not (3.0 < float(p["terrific_c"]) <= 1e3):
            raise ValueError(
                "terrific_c (annulus constant of the terrific-ball search) must be in (3, 1000]"
            )
        if "max_points" in p:
            check_positive_int(p["max_points"], "max_points", minimum=100)
        if "n_radii_max" in p:
            check_positive_int(p["n_radii_max"], "n_radii_max", minimum=2)
        if "peel_factor" in p and not (1.0 <= float(p["peel_factor"]) <= 100.0):
            raise ValueError(
                "peel_factor (released ball = peel_factor x found radius) must be in [1, 100]"
            )
        if "t_fraction" in p and not (0.0 < float(p["t_fraction"]) <= 1.0):
            raise ValueError("t_fraction must be in (0, 1]")
        if "box_factor" in p and not (0.5 <= float(p["box_factor"]) <= 100.0):
            raise ValueError("box_factor must be in [0.5, 100]")
        if "n_steps" in p:
            check_positive_int(p["n_steps"], "n_steps", minimum=1)
            if int(p["n_steps"]) > 100:
                raise ValueError("n_steps (EM steps of method='em') must be at most 100")
        if "n_chunks" in p:
            check_positive_int(p["n_chunks"], "n_chunks", minimum=2)
        if "radii" in p:
            r = np.asarray(p["radii"], dtype=np.float64)
            if r.ndim != 1 or r.size == 0 or not (np.isfinite(r).all() and (r > 0).all()):
                raise ValueError("radii must be a non-empty 1-D grid of finite positive radii")
        if "learner" in p and not callable(p["learner"]):
            raise TypeError("learner must be a callable (rows, k, seed) -> (weights, means)")

    def _requirement(self, method: str, n: int, d: int, budget: Any, n_public: int = 0) -> Any:
        name = METHODS[method].requirements
        if name is None:
            return None
        from ..mixture.requirements import requirements

        if name == "em":
            from ..mixture.private_em import em_requirements

            return em_requirements(n, d, int(self.n_components), budget,
                                   min_weight=self.min_weight, n_public=n_public,
                                   prior=self._has_prior())
        if METHODS[method].uses_public:
            from ..mixture.requirements import public_requirements

            return public_requirements(
                name, n=n, d=d, k=int(self.n_components), budget=budget,
                min_weight=self.min_weight, beta=float(self.beta), n_public=n_public,
            )

        extra: dict[str, Any] = {}
        if name == "kssu" and "max_points" in (self.method_params or {}):
            extra["max_points"] = int(self.method_params["max_points"])  # type: ignore[index]
        if name == "agnostic":  # constants="theory" is a different route (the faithful one)
            extra["constants"] = self.constants
        return requirements(
            name,
            n=n,
            d=d,
            k=int(self.n_components),
            epsilon=budget.epsilon,
            delta=budget.delta,
            min_weight=self.min_weight,
            beta=float(self.beta),
            **extra,
        )

    def _public_ok(self, method: str, d: int, n_public: int) -> bool:
        spec = METHODS[method]
        if not spec.uses_public:
            return True
        w = 1.0 / int(self.n_components) if self.min_weight is None else float(self.min_weight)
        return spec.min_public is None or n_public >= spec.min_public(d, w)

    def _choose(self, n: int, d: int, budget: Any, has_public: int) -> tuple[str, str]:
        """The method to run and why, from public facts only (``has_public``: the number of
        public rows; a bool reads as 0 or 1)."""
        n_public = int(has_public)
        has_public = n_public > 0
        if self.method != "auto":
            spec = METHODS[self.method]
            if spec.uses_public and not has_public:
                raise InvalidDataError(f"method={self.method!r} needs public_X")
            if spec.min_public is not None and not self._public_ok(self.method, d, n_public):
                w = 1 / int(self.n_components) if self.min_weight is None else self.min_weight
                raise InvalidDataError(
                    f"method={self.method!r} needs at least {spec.min_public(d, float(w))} "
                    f"public rows here (d = {d}, min_weight = {float(w):g}), got {n_public}: "
                    "give more public rows, or use method='public-light' (fewer public rows) "
                    "or 'auto'"
                )
            if self.method == "em":
                from ..mixture.private_em import check_em_inputs

                check_em_inputs(d, int(self.n_components), budget, n_public, self._has_prior())
            req = self._requirement(self.method, n, d, budget, n_public)
            if req is not None and not req.ok and self.enforce_requirements:
                raise InvalidDataError(req.message())
            return self.method, "requested"
        candidates = [
            m
            for m, spec in METHODS.items()
            if math.isfinite(spec.min_separation)  # inf: only when asked for by name
            and (not spec.uses_public or self._public_ok(m, d, n_public))
            and (spec.zcdp or not isinstance(budget, ZCDP))
        ]
        if not candidates:
            fallback = self._em_fallback(n, d, budget, n_public, "no paper method takes a rho "
                                         "budget with these public rows")
            if fallback is not None:
                return fallback
            if isinstance(budget, ZCDP) and (n_public >= d + 1 or self._has_prior()):
                req = self._requirement("em", n, d, budget, n_public)
                raise InvalidDataError(
                    "no mixture method can work with this n: the least demanding, "
                    + req.message())
            raise PrivacyBudgetError(
                "a rho (zCDP) budget needs a zCDP method "
                f"{tuple(m for m, spec in METHODS.items() if spec.zcdp)}, and those need enough "
                "public rows or a prior: give public_X, or mean_bound= and cov_bounds= (a "
                "range for the components), or pass epsilon= and delta="
            )
        sep = None if self.separation is None else float(self.separation)
        if sep is not None:
            separated = [m for m in candidates if METHODS[m].min_separation <= sep]
            if separated:
                candidates = separated
        reqs = {m: self._requirement(m, n, d, budget, n_public) for m in candidates}
        ok = [m for m in candidates if reqs[m] is None or reqs[m].ok]
        if not ok:
            fallback = self._em_fallback(n, d, budget, n_public,
                                         "no paper method meets its sample-size requirement")
            if fallback is not None:
                return fallback
            if not (isinstance(budget, ZCDP) and n_public < d + 1 and not self._has_prior()):
                reqs["em"] = self._requirement("em", n, d, budget, n_public)  # private EM too
            best = min(reqs, key=lambda m: reqs[m].n_needed)
            if self.enforce_requirements:
                raise InvalidDataError(
                    "no mixture method can work with this n: the least demanding, "
                    + reqs[best].message()
                )
            return best, f"no method meets its requirements; {best!r} needs the fewest samples"

        def room(m: str) -> float:
            return math.inf if reqs[m] is None else n / max(reqs[m].n_needed, 1.0)

        def key(m: str) -> tuple:
            spec = METHODS[m]
            # public-data methods first when public_X is given; with an unknown separation the
            # method validated at the smallest separation; then the most room in n
            robust = -spec.min_separation if sep is None else 0.0
            # ... and among those, the one using more public data (public-heavy: clustering for
            # free and range-free per-component estimation) when there are enough public rows
            uses = spec.min_public(d, 1.0) if spec.uses_public and spec.min_public else 0
            return (spec.uses_public and has_public, uses, robust, room(m))

        best = max(ok, key=key)
        need = "" if reqs[best] is None else f" (needs n >~ {reqs[best].n_needed:.3g})"
        reason = f"meets its sample-size requirement{need}"
        if sep is None:
            reason += (
                "; separation unknown: preferring the method validated at the smallest "
                f"separation ratio ({METHODS[best].min_separation:g})"
            )
        elif METHODS[best].min_separation > sep:
            reason += (
                f"; no method was validated at separation {sep:g} (this one at "
                f"{METHODS[best].min_separation:g})"
            )
        else:
            reason += f"; validated at separation >= {METHODS[best].min_separation:g}"
        if has_public and not METHODS[best].uses_public:
            reason += (
                "; no public-data mixture method can work with "
                f"{n_public} public rows and this n, public_X is not used"
            )
        elif METHODS[best].uses_public:
            reason += f"; uses the {n_public} public rows"
            if best == "public-light":
                reason += " (too few for 'public-heavy' or its n requirement not met)"
        if isinstance(budget, ZCDP):
            reason += "; rho budget: zCDP methods only"
        return best, reason

    def _em_fallback(self, n: int, d: int, budget: Any, n_public: int,
                     why: str) -> tuple[str, str] | None:
        """("em", reason) when ``auto`` can fall back to private EM here (public facts only):
        its inputs are usable and its requirement holds (or is not enforced); else None."""
        if isinstance(budget, ZCDP) and n_public < d + 1 and not self._has_prior():
            return None
        req = self._requirement("em", n, d, budget, n_public)
        if not req.ok and self.enforce_requirements:
            return None
        seeded = ("; public rows set the frame and seed the start" if n_public >= d + 1 else
                  "; localised inside the prior (mean_bound=, cov_bounds=)"
                  if self._has_prior() else "")
        return "em", f"{why}: private EM (needs n >~ {req.n_needed:.3g}){seeded}"

    # ------------------------------------------------------------------------------------
    def _fit(self, X: Any, Xp: np.ndarray | None) -> None:
        """The math of :meth:`fit` on validated rows (a dask array or an on-disk file is loaded
        into memory: the mixture learners need random access to all rows; refused up front
        when larger than ``max_memory_bytes``)."""
        X = in_memory(X, max_memory_bytes=self.max_memory_bytes)
        n, d = X.shape
        budget = self._check_params(n, d)
        method, reason = self._choose(n, d, budget, 0 if Xp is None else Xp.shape[0])
        acct = self._fit_accountant(budget)
        noise = as_noise(self.random_state)
        self._warn_before_fit(budget, n, noise)
        info: dict[str, Any] = {}
        with private_section(acct):
            try:
                weights, means, covs = METHODS[method].runner(
                    self, X, Xp, budget, acct, noise, info)
            except InvalidDataError:
                # a public-data method refused from the public rows alone (e.g. the public
                # clustering found fewer clusters than n_components) before spending anything:
                # auto falls back to private EM seeded by the public rows
                fallback = None
                if self.method == "auto" and METHODS[method].uses_public and not acct.ledger:
                    fallback = self._em_fallback(
                        n, d, budget, 0 if Xp is None else Xp.shape[0],
                        f"{method!r} refused these public rows (nothing was spent)")
                if fallback is None:
                    raise
                method, reason = fallback
                info = {}
                weights, means, covs = METHODS[method].runner(
                    self, X, Xp, budget, acct, noise, info)
        self.weights_ = np.asarray(weights, dtype=np.float64)
        self.means_, self.covariances_ = self._inside_prior(
            np.asarray(means, dtype=np.float64), np.asarray(covs, dtype=np.float64))
        self.fit_info_ = info
        # the public clustering (public-heavy: PublicClusters of the public rows; public-light:
        # the public/DP balls (centre, radius) of the clusters); None for the other methods
        self.public_clusters_ = info.get("public_clusters", info.get("public_balls"))
        self._record(budget, acct, method, reason)

    # ------------------------------------------------------------------------------------
    def _component_logpdf(self, X: Any) -> np.ndarray:
        X = self._rows_for_scoring(X)
        d = self.n_features_in_
        cols = []
        for w, m, c in zip(self.weights_, self.means_, self.covariances_, strict=True):
            ridge = 1e-12 * max(np.trace(c) / d, 1e-300)
            lw = math.log(w) if w > 0 else -math.inf
            cols.append(gaussian_logpdf(X, m, c + ridge * np.eye(d)) + lw)
        return np.stack(cols, axis=1)

    def score_samples(self, X: Any) -> np.ndarray:
        """Log density of the fitted mixture at each row (log-sum-exp; no privacy cost)."""
        return logsumexp(self._component_logpdf(X), axis=1)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Posterior component probabilities of each row under the fitted (private) mixture."""
        logp = self._component_logpdf(X)
        return np.exp(logp - logsumexp(logp, axis=1, keepdims=True))

    def predict(self, X: Any) -> np.ndarray:
        """The most probable component of each row (argmax posterior)."""
        return np.argmax(self._component_logpdf(X), axis=1)

    def sample(self, n_samples: int = 1, random_state: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """Draw synthetic rows from the fitted (already private) mixture: (X, labels);
        post-processing, no privacy cost."""
        check_is_fitted(self)
        n_samples = check_positive_int(n_samples, "n_samples", minimum=1)
        rng = np.random.default_rng(random_state)
        counts = rng.multinomial(n_samples, self.weights_ / self.weights_.sum())
        labels = np.repeat(np.arange(len(counts)), counts)
        X = np.concatenate(
            [
                rng.multivariate_normal(self.means_[j], self.covariances_[j], size=c)
                for j, c in enumerate(counts)
            ]
        )
        order = rng.permutation(n_samples)
        return X[order], labels[order]

    def to_dict(self) -> dict[str, Any]:
        """Parameters and privacy report (only DP outputs and public metadata)."""
        check_is_fitted(self)
        from .._version import __version__

        return {
            "model": "gaussian-mixture",
            "library": "privgauss",
            "version": __version__,
            "method": self.method_,
            "method_reason": self.method_reason_,
            "n_features": self.n_features_in_,
            "feature_names": self._feature_names(),
            "n_components": int(self.n_components),
            "weights": self.weights_.tolist(),
            "means": self.means_.tolist(),
            "covariances": self.covariances_.tolist(),
            "privacy": privacy_report(self.budget_, self.accountant_),
            "pure_dp": False,
        }
