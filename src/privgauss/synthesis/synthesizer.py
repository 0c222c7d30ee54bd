"""DP synthetic tables: a Gaussian-copula mixture over DP marginals (issue 28; our own method).

:class:`PrivateSynthesizer` releases each column's marginal
(:mod:`privgauss.synthesis.marginals`, a small planned share of the budget), maps every
column to normal scores through its released CDF, and fits a
:class:`~privgauss.PrivateGaussianMixture` (``em``) or, when the table is small, a
:class:`~privgauss.PrivateGaussian` to the scores with the rest of the budget. The scores lie
in a box known from n alone (|z| ≤ Φ⁻¹(1 − 1/(2n))), which is the fit's prior: no bounds are
asked of the user. A narrow table (levels per column, from public n, d and the budget, enough:
:func:`~privgauss.synthesis.grid.grid_levels`) also gets a DP dependence grid — the joint
histogram of the uniform scores (:mod:`privgauss.synthesis.grid`), which sets each cell's mass
while the model sets the shape inside a cell; its slice sums, a second measurement of each
column's mass in g slices, are combined with the marginal's by inverse noise variance, and a
one-component model takes its correlations from the grid's counts
(:func:`~privgauss.synthesis.grid.count_correlations`, post-processing) with no release of
its own, its share of the budget going to the histograms and the grids (:data:`FREED_SHARES`).
On a two-column table
a second histogram with twice the levels splits each cell's mass among its sub-cells
(:func:`~privgauss.synthesis.grid.refinement_from_counts`; its block sums also sharpen the
cells' counts), so the conditional shape inside a cell is measured, not the model's; and a
mixture of normal scores fitted to both grids' counts
(:func:`~privgauss.synthesis.grid_mixture.fit_grid_mixture`, k by BIC, post-processing), when
it has more than one component, places the rows inside each sub-cell (clusters, not one
tilted Gaussian), while the grids stay shrunk towards the one-component copula.
A one-component copula fitted to the scores (no grid) has its released correlations shrunk
towards 0 by a James–Stein factor set by their noise, which a parametric bootstrap of the same
release measures (:func:`_shrink_correlations`, post-processing; the factor → 1 as the noise
vanishes): on a small table the released correlations can be mostly noise.
Sampling draws scores from the model (and the grid), gives each column one level per stratum of
its released marginal in the order of the draws (:func:`stratified_levels`: the model's joint
ranks, the marginal without the noise of independent draws) and maps them back through the
marginals, with each column's kind (float, integer, 0/1) and range: post-processing of DP
releases only.

Categorical columns (:mod:`privgauss.synthesis.categories`) are codes with their categories'
noisy counts as marginals; a category list not stated by the caller is released by
thresholded counts, so a record's rare value never appears.

Guarantee: the budget given (ρ-zCDP, or (ε, δ)-DP with δ > 0), replace-one neighbours (n
public). The per-record maps (clipping, jitter, normal scores) change one record's scores
only, so the model fit keeps its guarantee on the transformed rows; the releases compose by
zCDP composition (converted with the whole δ for an (ε, δ) budget). Column kinds come from
declared dtypes or the caller, never from the values (:mod:`.column_kinds`).
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy.special import ndtr, ndtri

from ..estimators import PrivateGaussian, PrivateGaussianMixture
from ..estimators._base import NEIGHBOURS, private_section, warn_before_fit
from ..exceptions import EstimationFailed, InvalidDataError, PrivacyBudgetError
from ..mechanisms import Release
from ..noise import NoiseSource
from ..privacy import ZCDP, Accountant, ApproxDP, budget_to_dict, make_budget, zcdp_of
from ..privacy.budgets import MIN_EPS, approx_to_zcdp, has_delta
from ..sensitivity import gaussian_stability_histogram_threshold
from ..validation import check_data
from ..warnings import RareCategoriesWarning, SimplerModelWarning
from . import categories as categories_mod
from .categories import (
    CATEGORY_DELTA_SHARE,
    associations,
    column_labels,
    count_marginal,
    declared_codes,
    decode,
    encode,
    release_categories,
    release_counts,
    released_sigma,
    stated_categories,
)
from .column_kinds import COLUMN_KINDS, cast_array, declared_dtypes, kinds_of
from .column_kinds import cast_column as cast_column  # re-exported (the CLI's import)
from .column_kinds import kind_of_dtype as kind_of_dtype  # re-exported (the CLI's import)
from .grid import (
    GRID_MAX_CELLS,
    PROPOSALS_PER_ROW,
    DependenceGrid,
    combine_counts,
    combined_margins,
    count_correlations,
    grid_from_counts,
    grid_levels,
    grid_sigma,
    model_cell_masses,
    refinement_from_counts,
    release_grid_counts,
)
from .grid_mixture import fit_grid_mixture
from .marginals import (
    ATTENUATION_FLOOR,
    ZOOM_ROUNDS,
    Marginal,
    MarginalPlan,
    fine_zoom,
    histogram_sigma,
    n_continuous_bins,
    n_fine_bins,
    release_marginals,
)

#: the refusal of a pure ε-DP budget (every release is Gaussian)
PURE_REFUSAL = ("synthesis needs a rho-zCDP budget or (epsilon, delta) with delta > 0 (its "
                "releases are Gaussian); pure epsilon-DP is not supported")
#: share of the budget (as zCDP) spent on the marginals' ranges and on their histograms
#: (the types' share, when a column's kind is "auto", comes out of the histograms')
TYPES_SHARE = 0.02
RANGE_SHARE = 0.10
HISTOGRAM_SHARE = 0.25
#: a narrow table's copula has few correlations to release (d(d-1)/2), its marginals the
#: same bins per column: the histograms' share grows by this much per column below
#: :data:`NARROW_COLUMNS` (see :func:`histogram_share`)
NARROW_SHARE_STEP = 0.05
NARROW_COLUMNS = 7
#: component counts tried, largest first: the largest em can fit with a margin (see
#: :func:`choose_components`); else a single Gaussian. Until 2026-11-30 the largest was 8, a
#: cap that did not vanish with the noise: a wide table with discrete columns kept the
#: Gaussian kernels' smearing of its levels at any budget (Ketchup's discrete pairs: 2-way TV
#: excess 0.063 with a noise-free k = 8 mixture, 0.036 with k = 32;
#: benchmarks/results/synth_wide.md)
COMPONENT_CHOICES = (32, 16, 8, 4, 2)
#: the rows em needs for its noise — its requirement beyond its noise-free floor of d + 1 rows
#: per component (:func:`em_noise_rows`) — must be at most this fraction of n for a mixture
#: to be chosen. The margin guards against the noise only: it vanishes with it, so that a
#: table of 2,000 rows gets a mixture at a huge budget (until 2026-11-29 em's whole
#: requirement, floor included, had to be within 2 % of n: k = 1 at any budget below
#: n ≈ 50 (d + 1) k rows — Yogurt, Ketchup, benchmarks/results/synth_corpus.md). 2 % until
#: 2026-11-30: at ε = 1e4 it held Ketchup and MedExp at k = 2, while em's fits with k = 4, 8,
#: 16 there (2.6-2.8 %, 5.3-5.5 %, 10.5-11 % of n for the noise by em's requirement) were
#: each closer to the data than k = 2's and as close as a noise-free mixture of that k (em's
#: requirement is conservative at large ρ). 5 % keeps every corpus table's k at ε = 1 (k = 1
#: for all 56; 10 % would not: benchmarks/results/synth_wide.md)
EM_MARGIN = 0.05
#: at least this many rows per component and column (+1) for a k of COMPONENT_CHOICES: a
#: bound on the model's size that stays when the noise is gone (as a user sizes
#: scikit-learn's k by n), and on the fit's time. Added with k = 32 (2026-11-30): a 3,000 × 2
#: table at ρ = 1e6 took 11.5 s with k = 32 (94 rows a component; private EM's per-component
#: de-clipping over 150 steps of 6 runs) against 1.6 s with k = 16 and 0.9 s with 8. It
#: leaves the ε = 1e4 corpus choices of benchmarks/results/synth_wide.md as they were
#: (Ketchup, MedExp, VietNamH 4, Tuna 16, Yogurt 2) and every ε = 1 choice (k = 1)
MIN_COMPONENT_ROWS = 50
#: shrink the one-component copula's released correlations by a James–Stein factor set by
#: their noise (:func:`_shrink_correlations`; False: as released — main until session 45,
#: kept as the benchmarks' switch). At ε = 1 it took immigration's corr MAE (n = 1,120,
#: d = 5) from 0.125 to 0.097 (3 splits × 8 draws, paired; AIM 0.101) and the corpus's
#: mean over 56 tables × 3 seeds by 0.0013, at a cost of 0.004 in fair's and psid's R²
#: boosted (benchmarks/results/synth_peers_gaps.md, session 45)
COPULA_SHRINK = True
#: simulated releases that measure the copula's noise (:func:`correlation_noise`): the
#: factor's own error, not a guard (4: the mean squared error of P ≥ 3 entries over 4 fits)
NOISE_DRAWS = 4
#: largest |correlation| left by the discrete columns' correction
MAX_CORRELATION = 0.99
#: smallest covariance eigenvalue of the prior in normal-score space
SCORE_COV_FLOOR = 1e-2
#: share of the budget spent on the dependence grid when one is used (out of the model's)
GRID_SHARE = 0.30
#: the grid's cells split in GRID_REFINE^d sub-cells, measured by a second histogram of
#: GRID_REFINE times the levels at REFINE_SHARE of the budget (out of GRID_SHARE), for tables
#: of at most REFINE_MAX_COLUMNS columns (see :func:`~.grid.refinement_from_counts`)
GRID_REFINE = 2
REFINE_SHARE = 0.10
REFINE_MAX_COLUMNS = 2
#: where the model's share goes when a one-component copula takes the grid's correlations
#: (no copula release of its own): fractions to the histograms, the coarse grid, the fine grid
#: (to the coarse grid when there is no fine one)
FREED_SHARES = (0.5, 0.0, 0.5)
#: of the histograms' share, the zoom into each column's heaviest bins
#: (:func:`~privgauss.synthesis.marginals._zoom`): a column whose values crowd into one bin
#: (years 1980-1987 in an octave [1024, 2048)) gets one sub-bin per level
ZOOM_SHARE = 0.10
#: most components of the mixture fitted to a two-column table's grid counts (the copula when
#: its BIC picks k > 1: :func:`~.grid_mixture.fit_grid_mixture`); 1: the one-component copula
GRID_MIXTURE_MAX = 4
#: copula draws that estimate the model's cell masses (the grid's shrinkage target)
GRID_MODEL_DRAWS = 200_000
#: the dependence models: "auto" (the grid when :func:`~.grid.grid_levels` allows one at
#: :data:`GRID_SHARE`, else the copula model alone), "grid", "copula"
DEPENDENCE = ("auto", "grid", "copula")


def score_bound(n: int) -> float:
    """The largest |normal score|: Φ⁻¹(1 − 1/(2n)), a function of public n."""
    return float(ndtri(1.0 - 0.5 / n))


def score_prior(n: int, d: int) -> tuple[float, tuple[float, float]]:
    """The model's prior in normal-score space from public n and d: (mean bound, covariance
    eigenvalue bounds)."""
    z = score_bound(n)
    return z * math.sqrt(d), (SCORE_COV_FLOOR, d * z * z)


def histogram_share(d: int) -> float:
    """The histograms' share of the budget from public d: :data:`HISTOGRAM_SHARE`, plus
    :data:`NARROW_SHARE_STEP` per column below :data:`NARROW_COLUMNS` (0.5 at d = 2)."""
    return HISTOGRAM_SHARE + NARROW_SHARE_STEP * max(0, NARROW_COLUMNS - d)


def em_noise_rows(n: int, d: int, k: int, rho: float) -> float:
    """The rows the mixture's method (``auto``: em, inside the score prior) asks for its noise
    at ρ (public n, d, k, ρ): its practical requirement
    (:func:`~privgauss.methods.mixture_plan`'s ``requirements``) less its noise-free floor,
    d + 1 rows per component (a full covariance each); 0 when the floor dominates, infinite
    when it states none. It falls to 0 as ρ grows (em's start term ∝ ρ^(-1/4), its last
    step's noise ∝ ρ^(-1/2))."""
    from ..methods import mixture_plan

    bound, cov = score_prior(n, d)
    req = mixture_plan(n, d, k, rho=rho, mean_bound=bound, cov_bounds=cov).requirements
    need = getattr(req, "n_needed", None)
    if need is None:
        return math.inf
    return max(0.0, float(need) - (d + 1.0) * k)


def choose_components(n: int, d: int, rho: float, requested: int | str = "auto") -> int:
    """The model's k from public facts: ``requested`` when an int (refused, before anything is
    spent, when ``em`` cannot fit it here); else the largest of :data:`COMPONENT_CHOICES` whose
    em plan runs on the n rows at ρ inside the score prior with the rows its noise asks for
    (:func:`em_noise_rows`) at most :data:`EM_MARGIN` · n and at least
    :data:`MIN_COMPONENT_ROWS` · (d + 1) rows per component, else 1 (a single Gaussian: the
    Gaussian copula, the small-table path). As ρ → ∞ the noise's rows vanish and a table gets
    the largest k its rows allow."""
    from ..methods import mixture_plan

    bound, cov = score_prior(n, d)

    def plan(rows: int, k: int) -> Any:
        # auto: with a zCDP budget, a prior and no stated separation it runs em
        return mixture_plan(rows, d, k, rho=rho, mean_bound=bound, cov_bounds=cov)

    if requested != "auto":
        k = int(requested)
        if k > 1 and (p := plan(n, k)).method is None:
            raise InvalidDataError(f"a copula mixture of {k} components cannot be fitted here: "
                                   f"{p.reason}; n_components=1 (a Gaussian copula) can")
        return k
    for k in COMPONENT_CHOICES:
        if (k * MIN_COMPONENT_ROWS * (d + 1) <= n
                and em_noise_rows(n, d, k, rho) <= EM_MARGIN * n
                and plan(n, k).method is not None):
            return k
    return 1


class PrivateSynthesizer:
    """A DP synthesizer of tables (numeric and categorical columns): DP marginals plus a
    Gaussian-copula mixture.

    Parameters
    ----------
    rho, epsilon, delta : float
        The budget: ρ-zCDP, or (ε, δ)-DP with δ > 0.
    n_components : int or "auto"
        Components of the copula model (1: a Gaussian); "auto" chooses from n, d and the
        budget (:func:`choose_components`).
    dependence : "auto", "grid" or "copula"
        How the columns' dependence is released. "grid": a DP histogram of the uniform scores
        on a grid of levels chosen from n, d and the budget
        (:mod:`privgauss.synthesis.grid`), the copula model setting the shape inside each
        cell — for narrow tables, refused when the grid would be too coarse; "copula": the
        copula model alone; "auto" (default): the grid whenever it is allowed.
    kinds : list or dict of "float", "integer", "binary", "category", "auto", optional
        Column kinds; default: the declared dtypes (a DataFrame's, an array's): bool is
        binary, an integer dtype integer, a string, object or pandas category dtype
        "category", a float dtype "auto" — integer or float as a DP count of its non-integer
        values decides (step ``marginals/types``).
    bounds : list or dict of (low, high), optional
        Stated (public) ranges: no budget is spent finding them and output stays inside.
    categories : dict of column name -> list of labels, optional
        Stated (public) categories of categorical columns (labels compared as strings; a
        value outside them is refused before anything is spent). A categorical column not
        named here has its categories released: a category appears in the output only when
        its noisy count clears a threshold no single record's category passes but with
        probability δ (step ``categories``; needs an (ε, δ) budget), the rows of the others
        becoming missing values (:mod:`privgauss.synthesis.categories`). A pandas
        categorical's own category list is not taken as stated: it is often read off the data.
    random_state : None, int or Generator
        None: secure noise. A seed: reproducible, NOT secure noise (experiments).
    accountant : Accountant, optional
        A shared accountant the fit's budget is charged to.

    Attributes
    ----------
    marginals_ : list of Marginal
        The released marginals.
    copula_ : PrivateGaussian or PrivateGaussianMixture
        The model of the normal scores (with a grid, what places the rows inside its cells;
        on a two-column table the mixture fitted to the grids' counts when BIC picks k > 1,
        method ``grid-mixture``, no release of its own).
    n_components_ : int
        The components of ``copula_``.
    copula_shrinkage_ : float
        The James–Stein factor the one-component copula's released correlations were
        multiplied by (:func:`_shrink_correlations`; 1: unshrunk, as with a grid or a
        mixture).
    grid_ : DependenceGrid or None
        The released dependence grid (None: the copula model alone).
    grid_factor_ : float or None
        The grid's shrinkage factor (1: its released counts alone, 0: the one-component
        copula's cell masses; see :func:`~privgauss.synthesis.grid.grid_from_counts`).
    grid_mixture_bic_ : dict or None
        Each k's BIC of the mixture fitted to a two-column table's grid counts
        (:func:`~privgauss.synthesis.grid_mixture.fit_grid_mixture`; None when not fitted).
    feature_names_in_ : list of str
        Column names (a DataFrame's, else "x0", "x1", ...).
    kinds_, dtypes_ : list of str
        Column kinds and the input's dtypes (for :meth:`sample_table`).
    ledger_, privacy_spent_, budget_
        The privacy report: steps ``marginals/range``, ``marginals/bins``, ``grid`` (when
        a grid is used), ``copula/...`` (none when a one-component copula takes its
        correlations from the grid).

    Examples
    --------
    >>> import numpy as np, privgauss as pg
    >>> X = np.random.default_rng(0).normal(size=(5000, 2))
    >>> syn = pg.PrivateSynthesizer(rho=0.5, random_state=0).fit(X)
    >>> syn.sample(3, random_state=1).shape
    (3, 2)
    """

    def __init__(self, *, rho: float | None = None, epsilon: float | None = None,
                 delta: float | None = None, n_components: int | str = "auto",
                 dependence: str = "auto",
                 kinds: Sequence[str] | Mapping[str, str] | None = None,
                 bounds: Sequence[tuple[float, float] | None]
                 | Mapping[str, tuple[float, float]] | None = None,
                 categories: Mapping[str, Sequence[Any]] | None = None,
                 random_state: Any = None, accountant: Accountant | None = None) -> None:
        self.rho = rho
        self.epsilon = epsilon
        self.delta = delta
        self.n_components = n_components
        self.dependence = dependence
        self.kinds = kinds
        self.bounds = bounds
        self.categories = categories
        self.random_state = random_state
        self.accountant = accountant

    # -- fit ---------------------------------------------------------------------------------
    def _bounds_list(self, names: list[str]) -> list[tuple[float, float] | None]:
        b = self.bounds
        if b is None:
            return [None] * len(names)
        if isinstance(b, Mapping):
            unknown = [c for c in b if c not in names]
            if unknown:
                raise InvalidDataError(f"bounds names unknown column(s) {unknown}")
            seq: list[Any] = [b.get(c) for c in names]
        else:
            seq = list(b)
        if len(seq) != len(names):
            raise InvalidDataError(f"bounds must give a range or None for each of the "
                                   f"{len(names)} columns")
        out: list[tuple[float, float] | None] = []
        for c, r in zip(names, seq, strict=True):
            if r is None:
                out.append(None)
                continue
            lo, hi = float(r[0]), float(r[1])
            if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                raise InvalidDataError(f"the bounds of column {c!r} must be finite, low < high")
            out.append((lo, hi))
        return out

    def _split_categorical(self, X: Any, kinds: list[str] | None = None,
                           names: Sequence[str] | None = None
                           ) -> tuple[Any, list[str], list[str], dict[int, np.ndarray]]:
        """``X`` with its categorical columns' cells set to 0 (for :func:`check_data`), the
        column names, the kinds (the caller's, the declared dtypes', ``category`` for a column
        with stated categories; ``kinds`` given: those, for public rows) and the categorical
        columns' labels (none for public rows); ``names``: an array's column names. Refuses,
        before anything is spent, a categorical column with a missing cell or a non-numeric
        cell elsewhere."""
        cols = getattr(X, "columns", None)
        frame = cols is not None and not isinstance(X, np.ndarray)
        if hasattr(X, "__dask_graph__") or (not frame and np.ndim(
                X if isinstance(X, np.ndarray) else np.asarray(X, dtype=object)) != 2):
            # a dask array (numeric: streamed as before) or input check_data refuses
            shape = getattr(X, "shape", None)
            d = int(shape[1]) if shape is not None and len(shape) == 2 else 0
            own = _column_names(names, d)
            return X, own, kinds or (kinds_of(X, d, self.kinds, own) if d else []), {}
        own = ([str(c) for c in cols] if frame and cols is not None
               else _column_names(names, int(np.shape(np.asarray(X, dtype=object))[1])))
        d = len(own)
        public = kinds is not None
        if kinds is None:
            kinds = kinds_of(X, d, self.kinds, own)
            for c in (self.categories or {}):
                if c in own:
                    kinds[own.index(c)] = "category"
        cat = [j for j in range(d) if kinds[j] == "category"]
        if not cat:
            return X, own, kinds, {}
        labels = {} if public else {j: column_labels(X, j, own[j]) for j in cat}
        if frame:
            X = X.copy()
            for j in cat:
                X.isetitem(j, np.zeros(len(X)))
        else:
            X = np.array(X, dtype=object)
            X[:, cat] = 0.0
            try:
                X = X.astype(np.float64)
            except (TypeError, ValueError):
                raise InvalidDataError(
                    "X has non-numeric cells outside its categorical columns; give those "
                    "columns the kind 'category' (kinds=) or numbers only") from None
        return X, own, kinds, labels

    def fit(self, X: Any, y: Any = None, *, public_X: Any = None,
            feature_names: Sequence[str] | None = None) -> PrivateSynthesizer:
        """Release the marginals and the copula model of the rows of ``X`` (n, d).

        ``public_X``: optional public rows (free, untrusted): their range, widened by half
        on each side, replaces the released one for columns without stated bounds.
        ``feature_names``: the names of an array's columns (public; default "x0", "x1", …;
        a DataFrame's are its own), as ``kinds``, ``bounds`` and ``categories`` name them.
        Raises ``InvalidDataError``/``PrivacyBudgetError`` before spending, and only
        ``EstimationFailed`` after. When the one-component copula's fit (a table without a
        dependence grid) ends in ``EstimationFailed`` (⊥, a DP output) the synthesizer keeps
        the marginals it released and draws independent normal scores instead, with a
        :class:`~privgauss.warnings.SimplerModelWarning` (post-processing of ⊥; ``method_``
        then names ``copula-independent``).
        """
        del y
        budget = make_budget(rho=self.rho, epsilon=self.epsilon, delta=self.delta)
        rho_total = zcdp_of(budget, "synthesis", refusal=PURE_REFUSAL)
        if self.n_components != "auto" and not (
                isinstance(self.n_components, int) and self.n_components >= 1):
            raise InvalidDataError("n_components must be 'auto' or an integer >= 1")
        if self.dependence not in DEPENDENCE:
            raise InvalidDataError(f"dependence must be one of {DEPENDENCE}")
        X, names, kinds, labels = self._split_categorical(X, names=feature_names)
        rows = check_data(X, name="X", min_rows=2)
        n, d = rows.shape
        stated = stated_categories(self.categories, names)
        cats: list[list[str] | None] = [None] * d  # each categorical column's categories
        released = [j for j in labels if names[j] not in stated]  # their list to be released
        for j in labels:
            if names[j] in stated:  # public categories: their codes now, their counts released
                cats[j] = stated[names[j]]
                rows[:, j] = declared_codes(labels[j], stated[names[j]], names[j])
        if released and not has_delta(budget):
            cols_ = [names[j] for j in released]
            raise PrivacyBudgetError(
                f"the categories of column(s) {cols_} are released with DP thresholds, which "
                "need an (epsilon, delta) budget with delta > 0; give epsilon and delta, or "
                "state each column's categories (categories={name: [labels]})")
        delta_cat = 0.0
        if released:  # δ for the thresholds, the rest converts the zCDP releases
            assert isinstance(budget, ApproxDP)
            delta_cat = CATEGORY_DELTA_SHARE * budget.delta
            rho_total = approx_to_zcdp(budget.epsilon, budget.delta - delta_cat)
        bounds = self._bounds_list(names)
        if public_X is not None:
            P, _, _, _ = self._split_categorical(public_X, kinds)
            P = check_data(P, name="public_X", min_rows=1, n_features=d)
            for j in range(d):
                lo, hi = float(P[:, j].min()), float(P[:, j].max())
                if bounds[j] is None and kinds[j] != "binary" and hi > lo:
                    bounds[j] = (lo - (hi - lo) / 2, hi + (hi - lo) / 2)
        kinds = ["integer" if k == "category" else k for k in kinds]
        self.dtypes_ = declared_dtypes(X, d)
        for j in labels:
            self.dtypes_[j] = "category"
        # the categorical columns' share of the marginals (their noisy counts — stability
        # histograms for released lists — are their marginals); the other columns' marginals
        # share the rest as before
        stated_cols = [j for j in labels if j not in released]
        numeric = [j for j in range(d) if j not in labels]
        rho_cats = (RANGE_SHARE + histogram_share(d)) * rho_total * len(labels) / d
        rho_cat = rho_cats * len(released) / max(len(labels), 1)  # released lists
        rho_stated = rho_cats - rho_cat
        rho_num = rho_total * len(numeric) / d
        needs_range = any(bounds[j] is None and kinds[j] != "binary" for j in numeric)
        rho_range = RANGE_SHARE * rho_num if needs_range else 0.0
        rho_types = TYPES_SHARE * rho_num if any(kinds[j] == "auto" for j in numeric) else 0.0
        rho_hist = (RANGE_SHARE + histogram_share(d)) * rho_num - rho_range - rho_types
        d_num = max(len(numeric), 1)  # the columns of the joint histogram release
        levels = (grid_levels(n, d, GRID_SHARE * rho_total) if self.dependence != "copula"
                  else 0)
        if self.dependence == "grid" and not levels:
            raise InvalidDataError(
                f"a dependence grid is too coarse here (n = {n}, d = {d} at this budget: fewer "
                f"than its minimum levels per column, or too many cells); dependence='copula' "
                "can fit")
        rho_grid = GRID_SHARE * rho_total if levels else 0.0
        refine = GRID_REFINE if levels and d <= REFINE_MAX_COLUMNS else 1
        if refine > 1 and (levels * refine) ** d > GRID_MAX_CELLS:
            refine = 1
        rho_fine = REFINE_SHARE * rho_total if refine > 1 else 0.0
        rho_grid -= rho_fine
        # the categories' order by association (an experiment switch), from the model's share
        rho_ord = (categories_mod.ORDER_SHARE * rho_total
                   if released and numeric and categories_mod.ORDER_SHARE > 0 else 0.0)
        rho_model = (rho_total - rho_cats - rho_range - rho_hist - rho_types - rho_grid
                     - rho_fine - rho_ord)
        k = choose_components(n, d, rho_model, self.n_components)
        # a one-component copula with a grid takes its correlations from the grid's cells
        # (post-processing): a covariance release would buy nothing, so the model's share
        # goes to the histograms and the grid (FREED_SHARES), planned from public n, d, ρ
        from_grid = bool(levels) and k == 1
        if from_grid:
            to_hist, to_grid, to_fine = FREED_SHARES
            if not numeric:  # no histogram release: its part goes to the grid
                to_grid, to_hist = to_grid + to_hist, 0.0
            if refine == 1:
                to_grid += to_fine
            rho_hist += to_hist * rho_model
            rho_grid += to_grid * rho_model
            rho_fine += to_fine * rho_model if refine > 1 else 0.0
            rho_model = 0.0
        # the zoom's share of the histograms', spent when some column is integer or gridded
        # (declared, or by the DP types release: else it joins the histograms' share)
        rho_zoom = ZOOM_SHARE * rho_hist if any(kinds[j] != "binary" for j in numeric) else 0.0
        rho_hist -= rho_zoom
        plan = (MarginalPlan([kinds[j] for j in numeric], [bounds[j] for j in numeric],
                             n_fine_bins(n, rho_hist, d_num), rho_range, rho_hist, rho_types,
                             n_continuous_bins(n, rho_hist, d_num), rho_zoom)
                if numeric else None)
        shared = self.accountant
        if shared is not None and not shared.can_spend(budget):
            raise PrivacyBudgetError(
                f"this synthesis needs {budget}, but the shared accountant has already spent "
                f"{shared.spent_str()} of its total {shared.total}")
        acct = Accountant(budget, parent=shared)
        noise = NoiseSource(self.random_state)
        warn_before_fit(budget, n, noise)
        release = Release(acct, noise)
        with contextlib.ExitStack() as stack:
            if shared is not None:
                stack.enter_context(shared.exclusive())
            with private_section(acct):
                parts: list[Marginal | None] = [None] * d
                sigma_cat = released_sigma(rho_cat, len(released)) if released else 0.0
                sigma_of = dict.fromkeys(released, sigma_cat)
                if stated_cols:
                    cnts, sigma_st = release_counts(
                        [rows[:, j] for j in stated_cols],
                        [len(cats[j] or []) for j in stated_cols], rho_stated, release=release)
                    for j, cnt in zip(stated_cols, cnts, strict=True):
                        parts[j] = count_marginal(cnt, n, sigma_st, other=False)
                        sigma_of[j] = sigma_st
                if released:
                    out = release_categories([labels[j] for j in released], rho_cat,
                                             delta_cat, n, release=release)
                    for j, (cj, cnt) in zip(released, out, strict=True):
                        cats[j] = cj
                        rows[:, j] = encode(labels[j], cj)
                        parts[j] = count_marginal(cnt, n, sigma_cat)
                if plan is not None:
                    zoom_info: dict[str, Any] = {}
                    num = release_marginals(rows[:, numeric], plan, info=zoom_info,
                                            release=release.child("marginals"))
                    for j, m in zip(numeric, num, strict=True):
                        parts[j] = m
                    if zoom_info.get("zoom") == "to histograms":  # the plan's rule
                        rho_hist, rho_zoom = rho_hist + rho_zoom, 0.0
                    elif zoom_info.get("zoom") == "unspent":  # to the model's next release
                        if rho_model:
                            rho_model += rho_zoom  # the copula spends what remains
                        else:
                            rho_grid += rho_zoom  # the grid's coarse counts, released next
                        rho_zoom = 0.0
                if rho_ord > 0:  # reorder each released column's categories
                    V = np.column_stack([mi.to_uniform(rows[:, i], release.rng) for i in numeric
                                         if (mi := parts[i]) is not None]) - 0.5
                    perms = associations([rows[:, j] for j in released],
                                         [cnt for _, cnt in out], V, rho_ord, release=release)
                    for j, (cj, cnt), perm in zip(released, out, perms, strict=True):
                        cats[j] = new = [cj[i] for i in perm]
                        rows[:, j] = encode(labels[j], new)
                        parts[j] = count_marginal(cnt[perm], n, sigma_cat)
                marginals = [m for m in parts if m is not None]
                assert len(marginals) == d
                U = self._uniform(rows, marginals, n, release.rng)
                counts = (release_grid_counts(U, levels, rho_grid, release=release)
                          if levels else None)
                fine = (release_grid_counts(U, levels * refine, rho_fine, release=release,
                                            step="grid/fine") if refine > 1 else None)
                fell_back = False
                self.copula_shrinkage_ = 1.0
                if from_grid:  # no release: its correlations are set from the grid below
                    copula = _grid_copula(d, budget, release.accountant.child("copula"))
                else:
                    copula = self._copula(k, n, d, release)
                    try:
                        copula._fit_trusted(np.asarray(ndtri(U)))
                    except EstimationFailed:  # ⊥ is a DP output: acting on it is free
                        if k != 1:
                            raise
                        _independent_scores(copula, d)
                        fell_back = True
                    _standardise(copula)
                    self.copula_shrinkage_ = (
                        _shrink_correlations(copula, n, float(copula.rho), release.rng)
                        if COPULA_SHRINK and k == 1 and not fell_back else 1.0)
                    _undo_jitter_attenuation(copula,
                                             [m.jitter_attenuation() for m in marginals])
                grid, self.grid_factor_ = None, None
                self.grid_mixture_bic_ = None
                if counts is not None:
                    sg = grid_sigma(rho_grid)
                    coarse = counts
                    if fine is not None:
                        counts, sg = combine_counts(counts, sg, fine, grid_sigma(rho_fine),
                                                    refine)
                    sh = histogram_sigma(rho_hist, d_num) if rho_hist > 0 else 0.0
                    margins = combined_margins(counts, n, sg, np.array(
                        [_slice_variances(m, levels, sigma_of.get(j, sh), n)
                         for j, m in enumerate(marginals)]))
                    mixture = None
                    if from_grid and fine is not None and d == 2 and GRID_MIXTURE_MAX > 1:
                        # a mixture of scores fitted to both grids' counts, k by BIC
                        wts, means, covs, self.grid_mixture_bic_ = fit_grid_mixture(
                            coarse, grid_sigma(rho_grid), fine, grid_sigma(rho_fine), n,
                            refine, GRID_MIXTURE_MAX)
                        if len(wts) > 1:
                            mixture = (wts, means, covs)
                    if from_grid:
                        # the Gaussian copula's correlations fitted to the released counts
                        # (unclipped: see count_correlations), then the grid shrunk towards it
                        _set_correlations(copula, count_correlations(counts, n, sg))
                        _undo_jitter_attenuation(copula,
                                                 [m.jitter_attenuation() for m in marginals])
                    target = copula  # the grids' shrinkage target
                    if mixture is not None:
                        # the rows inside each (sub-)cell follow the mixture: the copula sampled
                        copula = _mixture_copula(mixture, budget, copula.accountant_)
                        k = len(mixture[0])
                    grid, self.grid_factor_ = grid_from_counts(
                        counts, n, sg, self._model_masses(target, levels, release.rng), margins)
                    if fine is not None and grid is not None:
                        within = refinement_from_counts(
                            fine, n, grid_sigma(rho_fine),
                            self._model_masses(target, levels * refine, release.rng), refine)
                        grid = DependenceGrid(levels, grid.probs, refine, within)
        if fell_back:  # a function of ⊥ only, warned outside the private section
            warnings.warn(SimplerModelWarning(
                "the Gaussian copula's fit failed (EstimationFailed, a DP output): the synthetic "
                "columns keep their DP marginals and are drawn independently. A larger budget or "
                "fewer columns gives the copula's correlations"), stacklevel=2)
        if released:  # DP outputs: the released lists and the other code's released mass
            self._warn_rare(names, released, cats, marginals, rho_cat, delta_cat)
        self.marginals_ = marginals
        self.copula_ = copula
        self.grid_ = grid
        self.feature_names_in_ = names
        # "auto" resolved by a DP release; a categorical column's codes are an integer
        # column's, its kind "category" (its categories_ map them back to labels)
        self.kinds_ = ["category" if cats[j] is not None else m.kind
                       for j, m in enumerate(marginals)]
        self.categories_ = cats
        self.n_features_in_ = d
        self.n_rows_ = n
        self.budget_ = budget
        self.accountant_ = acct
        self.ledger_ = list(acct.ledger)
        self.privacy_spent_ = acct.spent
        self.method_ = ((f"grid{levels}-" if grid is not None else "")
                        + f"copula-{copula.method_}" + (f"-k{k}" if k > 1 else ""))
        self.n_components_ = k
        rounds = ZOOM_ROUNDS if fine_zoom(n, d_num, rho_zoom) else 1
        self.plan_ = {"categories": ZCDP(rho_cat) if released else None,
                      "categories/stated": ZCDP(rho_stated) if stated_cols else None,
                      "categories/order": ZCDP(rho_ord) if rho_ord else None,
                      "categories (delta)": ApproxDP(MIN_EPS, delta_cat) if released else None,
                      "marginals/types": ZCDP(rho_types) if rho_types else None,
                      "marginals/range": ZCDP(rho_range) if rho_range else None,
                      "marginals/bins": ZCDP(rho_hist) if plan is not None else None,
                      "marginals/zoom": ZCDP(rho_zoom / rounds) if rho_zoom else None,
                      "marginals/zoom/2": (ZCDP(rho_zoom / rounds)
                                           if rho_zoom and rounds == 2 else None),
                      "grid": ZCDP(rho_grid + rho_fine) if rho_grid else None,
                      "copula": ZCDP(rho_model) if rho_model else None}
        self.plan_ = {s: c for s, c in self.plan_.items() if c is not None}
        return self

    @staticmethod
    def _warn_rare(names: list[str], released: list[int], cats: list[list[str] | None],
                   marginals: list[Marginal], rho_cat: float, delta_cat: float) -> None:
        """:class:`~privgauss.warnings.RareCategoriesWarning` for the released categorical
        columns whose marginal gives the other code mass (or that released no category)."""
        lost = [(names[j], float(marginals[j].cdf[-1] - marginals[j].cdf[-2]))
                for j in released if not cats[j]
                or marginals[j].cdf[-1] - marginals[j].cdf[-2] > 0]
        if not lost:
            return
        tau = gaussian_stability_histogram_threshold(released_sigma(rho_cat, len(released)),
                                                     delta_cat / len(released))
        parts = ", ".join(f"{c!r} ({100 * p:.2g} % of its rows)" for c, p in lost)
        warnings.warn(RareCategoriesWarning(
            f"categories held by fewer than about {tau:.0f} rows were not released at this "
            f"budget: their rows come back as missing values in column(s) {parts}. State "
            "the categories if they are public (categories=; on the command line "
            "--categories COL A,B,C), merge rare values, or give more budget"), stacklevel=3)

    @staticmethod
    def _model_masses(copula: Any, levels: int, rng: np.random.Generator) -> np.ndarray:
        """The copula model's mass in each grid cell, from :data:`GRID_MODEL_DRAWS` draws."""
        draw = copula.sample(GRID_MODEL_DRAWS, random_state=rng)
        Zm = draw[0] if isinstance(draw, tuple) else draw
        return model_cell_masses(levels, ndtr(Zm))

    @staticmethod
    def _uniform(rows: np.ndarray, marginals: list[Marginal], n: int,
                 rng: np.random.Generator) -> np.ndarray:
        """Uniform scores of the rows through the released marginals, kept within
        [1/(2n), 1 − 1/(2n)] so that their normal scores lie in the public box."""
        umin = 0.5 / n
        U = np.column_stack([m.to_uniform(rows[:, j], rng) for j, m in enumerate(marginals)])
        return np.clip(U, umin, 1.0 - umin)

    def _copula(self, k: int, n: int, d: int, release: Release) -> Any:
        """The unfitted copula model: the rest of ``release``'s budget as zCDP, charged to its
        child ``copula``, seeded by its noise source unless that is secure."""
        bound, cov = score_prior(n, d)
        rho = release.accountant.remaining_zcdp()
        child = release.accountant.child("copula")
        seeded = None if release.noise.secure else release.rng
        if k == 1:
            # the scores' mean is 0 by construction (and set so afterwards, _standardise):
            # only the covariance, a correlation matrix (eigenvalues at most d), is released
            return PrivateGaussian(rho=rho, mean=np.zeros(d), cov_bounds=(SCORE_COV_FLOOR, d),
                                   random_state=seeded, accountant=child)
        return PrivateGaussianMixture(k, rho=rho, mean_bound=bound,  # auto: em, as planned
                                      cov_bounds=cov, random_state=seeded, accountant=child)

    # -- sample ------------------------------------------------------------------------------
    def sample(self, n_samples: int, random_state: Any = None) -> np.ndarray:
        """``n_samples`` synthetic rows (float array; integer and 0/1 columns hold whole
        numbers, every column within its released or stated range; a categorical column its
        codes, positions in ``categories_[j]`` — the other code, one past them, a category not
        released; :meth:`sample_table` gives labels): post-processing, free.
        Each column's levels are stratified over its released marginal
        (:func:`stratified_levels`), so the rows are exchangeable, not independent, draws."""
        if not hasattr(self, "copula_"):
            raise InvalidDataError("this PrivateSynthesizer is not fitted yet: call fit first")
        if not (isinstance(n_samples, int | np.integer) and n_samples >= 1):
            raise InvalidDataError("n_samples must be an integer >= 1")
        rng = np.random.default_rng(random_state)
        grid = getattr(self, "grid_", None)
        m = int(n_samples) * (PROPOSALS_PER_ROW if grid is not None else 1)
        draw = self.copula_.sample(m, random_state=rng)
        Z = draw[0] if isinstance(draw, tuple) else draw
        U = ndtr(Z)
        if grid is not None:
            U = grid.sample(int(n_samples), U, rng)
        U = stratified_levels(U, rng, None if grid is None else grid.column_masses())
        X = np.column_stack([m.from_uniform(U[:, j]) for j, m in enumerate(self.marginals_)])
        # + 0.0 turns the −0.0 that rounding a value in (−½, 0) gives into 0.0 (half of an
        # integer column's zeros, written "-0.0" to a CSV file)
        return np.add(X, 0.0, out=X)

    def sample_table(self, n_samples: int, random_state: Any = None) -> Any:
        """:meth:`sample` as a pandas DataFrame with the input's column names and dtypes."""
        import pandas as pd

        X = self.sample(n_samples, random_state)
        cats = getattr(self, "categories_", None) or [None] * X.shape[1]
        data = {c: (cast_column(X[:, j], self.dtypes_[j], self.kinds_[j]) if cats[j] is None
                    else pd.Categorical(decode(X[:, j], cats[j]), categories=cats[j]))
                for j, c in enumerate(self.feature_names_in_)}
        return pd.DataFrame(data)

    def sample_labels(self, n_samples: int, random_state: Any = None) -> np.ndarray:
        """:meth:`sample` with each categorical column's codes as labels (an object array;
        None for a category not released), without pandas."""
        X = self.sample(n_samples, random_state)
        cats = getattr(self, "categories_", None) or [None] * X.shape[1]
        if all(c is None for c in cats):
            return X
        out = X.astype(object)
        for j, c in enumerate(cats):
            if c is not None:
                out[:, j] = decode(X[:, j], c)
        return out

    # -- model file --------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The synthesizer's model file: DP releases and public metadata only."""
        from .._version import __version__

        spent = self.privacy_spent_
        return {
            "model": "synthesizer",
            "library": "privgauss",
            "version": __version__,
            "method": self.method_,
            "n_features": self.n_features_in_,
            "feature_names": list(self.feature_names_in_),
            "kinds": list(self.kinds_),
            "dtypes": list(self.dtypes_),
            # a categorical column's categories: stated (public) or released (DP)
            "categories": [None if c is None else list(c)
                           for c in getattr(self, "categories_", [None] * self.n_features_in_)],
            "marginals": [m.to_dict() for m in self.marginals_],
            "copula": self.copula_.to_dict(),
            "grid": None if self.grid_ is None else self.grid_.to_dict(),
            # post-processing of the releases above and public n, kept so that a loaded
            # synthesizer reports what the fitted one did
            "fitted": {"n_rows": int(self.n_rows_), "n_components": int(self.n_components_),
                       "copula_shrinkage": float(self.copula_shrinkage_),
                       "grid_factor": (None if self.grid_factor_ is None
                                       else float(self.grid_factor_))},
            "privacy": {
                "budget": budget_to_dict(self.budget_),
                "spent": None if spent is None else budget_to_dict(spent),
                "neighbours": NEIGHBOURS,
                "ledger": [e.to_dict() for e in self.ledger_],
            },
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PrivateSynthesizer:
        """A fitted synthesizer from :meth:`to_dict`'s output, refused (one line naming the
        field) unless consistent: marginals with increasing edges and a CDF from 0 to 1, a
        copula model :func:`privgauss.io.from_dict` accepts, a ledger composing to ``spent``."""
        from ..io import from_dict, replay_ledger
        from ..privacy import estimator_kwargs

        if not isinstance(data, dict) or data.get("model") != "synthesizer":
            raise InvalidDataError("not a privgauss synthesizer model file")
        try:
            d = int(data["n_features"])
            names = [str(c) for c in data["feature_names"]]
            kinds = [str(k) for k in data["kinds"]]
            dtypes = [str(t) for t in data["dtypes"]]
            cats = [None if c is None else [str(v) for v in c]
                    for c in (data.get("categories") or [None] * d)]
            marginals = [Marginal.from_dict(m) for m in data["marginals"]]
            copula = from_dict(data["copula"])
            grid = (None if data.get("grid") is None
                    else DependenceGrid.from_dict(data["grid"]))
            budget, acct = replay_ledger(data["privacy"])
            fitted = data.get("fitted") or {}  # absent in files written before session 45
            n_rows = None if fitted.get("n_rows") is None else int(fitted["n_rows"])
            shrinkage = float(fitted.get("copula_shrinkage", 1.0))
            factor = (None if fitted.get("grid_factor") is None
                      else float(fitted["grid_factor"]))
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, InvalidDataError):
                raise
            raise InvalidDataError(f"synthesizer model file: a field is missing or malformed "
                                   f"({type(exc).__name__})") from None
        if not (len(names) == len(kinds) == len(dtypes) == len(marginals) == len(cats) == d
                == copula.n_features_in_ and all(k in COLUMN_KINDS and k != "auto" for k in kinds)
                and all((k == "category") == (c is not None) for k, c in zip(kinds, cats,
                                                                           strict=True))
                and (grid is None or grid.d == d)):
            raise InvalidDataError("synthesizer model file: its columns do not agree")
        syn = cls(**estimator_kwargs(budget))
        syn.marginals_, syn.copula_, syn.grid_ = marginals, copula, grid
        syn.feature_names_in_, syn.kinds_, syn.dtypes_ = names, kinds, dtypes
        syn.categories_ = cats
        syn.n_features_in_ = d
        syn.budget_, syn.accountant_ = budget, acct
        syn.ledger_, syn.privacy_spent_ = list(acct.ledger), acct.spent
        syn.method_ = str(data.get("method", "copula"))
        syn.n_rows_, syn.copula_shrinkage_, syn.grid_factor_ = n_rows, shrinkage, factor
        syn.n_components_ = int(fitted.get("n_components",
                                           len(getattr(copula, "weights_", [None]))))
        return syn


def _column_names(names: Sequence[str] | None, d: int) -> list[str]:
    """An array's column names: the caller's (``d`` of them), else "x0", "x1", …"""
    if names is None:
        return [f"x{j}" for j in range(d)]
    out = [str(c) for c in names]
    if len(out) != d or len(set(out)) != d:
        raise InvalidDataError(f"feature_names must give {d} distinct names, one per column")
    return out


def stratified_levels(U: np.ndarray, rng: np.random.Generator,
                      masses: np.ndarray | None = None) -> np.ndarray:
    """The drawn uniform scores ``U`` (m, d) with each column's values replaced, in the same
    order, by one level from each of the m strata of its target distribution: the i-th smallest
    gets ``F⁻¹((i + V)/m)``, V uniform — F uniform on [0, 1], or, with ``masses`` (d, g: each
    column's mass in the g equal slices of [0, 1], the dependence grid's raked margins),
    piecewise linear with those slice masses. The rows keep the draws' joint ranks (the
    model's dependence) while each column's synthetic values follow its released marginal
    without the multinomial noise of m independent draws (stratified sampling, as
    Private-PGM's rounding of each marginal's counts gives MST's rows): post-processing."""
    m, d = U.shape
    out = np.empty((m, d))
    for j in range(d):
        t = (np.arange(m) + rng.uniform(0.0, 1.0, m)) / m
        if masses is not None:
            w = np.clip(np.asarray(masses[j], dtype=np.float64), 0.0, None)
            if w.sum() > 0:
                g = w.size
                knots = np.concatenate([[0.0], np.cumsum(w / w.sum())])
                t = np.interp(t, knots, np.linspace(0.0, 1.0, g + 1))
        out[np.argsort(U[:, j], kind="stable"), j] = t
    return out


def _slice_variances(marginal: Marginal, g: int, sigma: float, n: int) -> np.ndarray:
    """The noise variance of the released marginal's mass in each of the g equal slices of
    its CDF levels: each fine bin's count carries noise of deviation ``sigma``, a bin inside
    a slice all of it, a bin the slice cuts its share (its fraction squared)."""
    lo, hi = marginal.cdf[:-1], marginal.cdf[1:]
    p = hi - lo
    keep = p > 0
    lo, hi, p = lo[keep], hi[keep], p[keep]
    a = np.arange(g)[:, None] / g
    share = np.clip(np.minimum(hi[None], a + 1.0 / g) - np.maximum(lo[None], a), 0.0, None) / p
    return np.asarray((sigma / n) ** 2 * np.sum(share**2, axis=1))


def _independent_scores(copula: PrivateGaussian, d: int) -> None:
    """What a failed one-component copula fit leaves the synthesizer: independent standard
    normal scores (mean 0, identity), recorded on ``copula`` with the budget its failed fit
    spent — post-processing of ⊥, so the marginals already released still describe the
    columns."""
    acct = copula.accountant
    assert isinstance(acct, Accountant)  # the synthesizer's child accountant
    copula._record(acct.total, acct, "independent",
                   "the copula's fit ended in EstimationFailed (a DP output)")
    copula.mean_, copula.covariance_ = np.zeros(d), np.eye(d)
    copula._no_clipped_count()
    copula.n_features_in_ = d
    copula._cache_factors()


def _grid_copula(d: int, budget: Any, acct: Accountant) -> PrivateGaussian:
    """The one-component copula of a table with a grid: no release of its own (``acct``, its
    child accountant, is never charged); its correlations are set from the released grid
    (:func:`_set_correlations`, post-processing). Until then, independent scores."""
    from ..privacy import estimator_kwargs

    copula = PrivateGaussian(**estimator_kwargs(budget), mean=np.zeros(d),
                             cov_bounds=(SCORE_COV_FLOOR, d))
    copula._record(acct.total, acct, "grid-correlations",
                   "its correlations are fitted to the released dependence grid's cells "
                   "(post-processing: no release of its own)")
    copula.mean_, copula.covariance_ = np.zeros(d), np.eye(d)
    copula._no_clipped_count()
    copula.n_features_in_ = d
    copula._cache_factors()
    return copula


def _mixture_copula(params: tuple[np.ndarray, np.ndarray, np.ndarray], budget: Any,
                    acct: Accountant) -> PrivateGaussianMixture:
    """The copula of a two-column table whose grid counts a mixture fits better
    (:func:`~.grid_mixture.fit_grid_mixture`): no release of its own (``acct``, the copula's
    child accountant, is never charged), post-processing of the released grids."""
    from ..privacy import estimator_kwargs

    weights, means, covs = params
    d = means.shape[1]
    copula = PrivateGaussianMixture(len(weights), **estimator_kwargs(budget))
    copula._record(acct.total, acct, "grid-mixture",
                   "a mixture of normal scores fitted to the released dependence grid's "
                   "counts (post-processing: no release of its own)")
    copula.weights_ = np.asarray(weights, dtype=np.float64)
    copula.means_ = np.asarray(means, dtype=np.float64)
    copula.covariances_ = np.asarray(covs, dtype=np.float64)
    copula.fit_info_, copula.public_clusters_, copula.selected_model_ = {}, None, None
    copula._no_clipped_count()
    copula.n_features_in_ = d
    copula._cache_factors()
    return copula


def _set_correlations(copula: PrivateGaussian, corr: np.ndarray) -> None:
    """Give a one-component copula the correlation matrix ``corr`` (kept positive definite;
    mean 0, unit variances): post-processing of the grid it was fitted to."""
    w, V = np.linalg.eigh(np.asarray(corr, dtype=np.float64))
    c = (V * np.clip(w, 1e-3, None)) @ V.T
    dd = np.sqrt(np.diag(c))
    copula.mean_ = np.zeros(len(dd))
    copula.covariance_ = c / np.outer(dd, dd)
    copula._cache_factors()


def correlation_noise(R: np.ndarray, n: int, rho: float, rng: np.random.Generator,
                      draws: int | None = None) -> float | None:
    """The mean noise variance of a one-component copula's released correlations (the
    off-diagonal entries of :func:`_standardise`'s output), measured by a *parametric
    bootstrap*: ``draws`` (:data:`NOISE_DRAWS`) times, n Gaussian scores with the released
    correlations ``R`` (clipped to the public score box, as the real scores lie there) go
    through the same release — the copula's estimator, at the same ρ, with the same prior —
    and the squared differences between its standardised output and the non-private
    correlations of those scores are averaged. Post-processing: a function of the released
    ``R``, public n and ρ, and ``rng`` only; the simulated fits have accountants of their own
    (nothing is charged, nothing is private there) and their warnings are dropped. None when
    no simulated fit succeeded (a simulated ⊥). Measured against the same release on the
    real scores (ε = 1, 3 splits × 4-6 draws; benchmarks/results/synth_peers_gaps.md,
    session 45), unlike CoinPress's last step's nominal noise carried through its whitening,
    which overstated the error by up to 2.4× on correlated tables."""
    d = R.shape[0]
    w, V = np.linalg.eigh(R)
    L = V * np.sqrt(np.clip(w, 1e-6, None))
    box = score_bound(n)
    iu = np.triu_indices(d, 1)
    errs = []
    for _ in range(NOISE_DRAWS if draws is None else draws):
        Z = np.clip(rng.standard_normal((n, d)) @ L.T, -box, box)
        sim = PrivateGaussian(rho=rho, mean=np.zeros(d), cov_bounds=(SCORE_COV_FLOOR, d),
                              random_state=rng)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            try:
                sim._fit_trusted(Z)
            except EstimationFailed:
                continue
        _standardise(sim)
        errs.append(float(np.mean((sim.covariance_[iu] - np.corrcoef(Z, rowvar=False)[iu])
                                  ** 2)))
    return float(np.mean(errs)) if errs else None


def _shrink_correlations(copula: PrivateGaussian, n: int, rho: float,
                         rng: np.random.Generator) -> float:
    """Shrink a one-component copula's released correlations R̂ (standardised, before the
    discrete columns' de-attenuation) towards 0 by the positive-part James–Stein factor
    λ = max(0, 1 − (P − 2) s² / Σ R̂_ij²) over its P = d(d − 1)/2 off-diagonal entries, s²
    their noise variance (:func:`correlation_noise`); λ = 1 when P < 3 or the noise is
    unknown. Returns λ. A convex combination of R̂ and the identity: positive definite when
    R̂ is. Post-processing of the copula's release, and consistent: λ → 1 as the noise
    vanishes. Where the noise is large against the correlations (immigration: n = 1,120,
    d = 5, five discrete columns, whose noise the de-attenuation then multiplies) the
    released correlations are mostly noise — corr MAE 0.121 against 0.063 for the exact
    dependence at ε = 1 — and λ of 0.33-0.64 (splits 0-2) takes it to 0.097."""
    d = copula.covariance_.shape[0]
    p = d * (d - 1) // 2
    if p < 3:
        return 1.0
    iu = np.triu_indices(d, 1)
    r = copula.covariance_[iu]
    size = float(r @ r)
    noise = correlation_noise(copula.covariance_, n, rho, rng) if size > 0 else None
    if noise is None:
        return 1.0
    lam = float(np.clip(1.0 - (p - 2) * noise / size, 0.0, 1.0))
    copula.covariance_ = lam * copula.covariance_ + (1.0 - lam) * np.eye(d)
    copula._cache_factors()
    return lam


def _standardise(copula: Any) -> None:
    """Shift and scale the model so that each column's score has mean 0 and variance 1, as
    the scores through the released marginals have by construction: the synthetic columns
    then follow the marginals, not the model's noisy moments (post-processing)."""
    if isinstance(copula, PrivateGaussian):
        sd = np.sqrt(np.clip(np.diag(copula.covariance_), 1e-12, None))
        copula.mean_ = np.zeros_like(copula.mean_)
        copula.covariance_ = copula.covariance_ / np.outer(sd, sd)
        return
    w = copula.weights_ / copula.weights_.sum()
    mu = w @ copula.means_
    second = np.einsum("k,kj->j", w, np.einsum("kjj->kj", copula.covariances_)
                       + copula.means_**2)
    sd = np.sqrt(np.clip(second - mu**2, 1e-12, None))
    copula.means_ = (copula.means_ - mu) / sd
    copula.covariances_ = copula.covariances_ / np.outer(sd, sd)[None]


def _undo_jitter_attenuation(copula: Any, factors: list[float]) -> None:
    """Divide each covariance's off-diagonal entries by c_i² c_j² (see
    :meth:`Marginal.jitter_attenuation`): the dependence of the latent Gaussian variables the
    discrete columns are thresholds of, not of their jittered scores. Correlations are capped
    at ±:data:`MAX_CORRELATION` and each matrix kept positive definite: post-processing. A
    column whose factor is at :data:`~.marginals.ATTENUATION_FLOOR` (one bin of mass: its
    jittered scores are the jitter alone, their correlations noise) gets correlation 0 with
    the others: divided by the floor, its noise became ±MAX_CORRELATION and, kept positive
    definite, bent the other columns' correlations (SumHes at a coarser binning: corr MAE
    0.05 → 0.28, benchmarks/results/synth_peers_gaps.md)."""
    f = np.asarray(factors, dtype=np.float64)
    flat = f <= ATTENUATION_FLOOR
    c = np.sqrt(np.where(flat, 1.0, f))
    if np.all(c == 1.0) and not flat.any():
        return
    single = isinstance(copula, PrivateGaussian)
    if not single:
        _undo_mixture_attenuation(copula, c, flat)
        return
    covs = copula.covariance_[None] if single else copula.covariances_
    out = np.empty_like(covs)
    for i, cov in enumerate(covs):
        sd = np.sqrt(np.clip(np.diag(cov), 1e-12, None))
        corr = cov / np.outer(sd, sd) / np.outer(c, c) ** 2
        corr = np.clip(corr, -MAX_CORRELATION, MAX_CORRELATION)
        corr[flat, :] = 0.0
        corr[:, flat] = 0.0
        np.fill_diagonal(corr, 1.0)
        w, V = np.linalg.eigh(corr)
        corr = (V * np.clip(w, 1e-3, None)) @ V.T
        dd = np.sqrt(np.diag(corr))
        corr = corr / np.outer(dd, dd)
        out[i] = corr * np.outer(sd, sd)
    if single:
        copula.covariance_ = out[0]
    else:
        copula.covariances_ = out


def _undo_mixture_attenuation(copula: Any, c: np.ndarray,
                              flat: np.ndarray | None = None) -> None:
    """:func:`_undo_jitter_attenuation` for a mixture: its *overall* correlation R (of the
    standardised scores, :func:`_standardise`) is the one the jitter attenuates, so the
    target is R's off-diagonal entries divided by c_i² c_j² (capped at
    ±:data:`MAX_CORRELATION`, positive definite), and the difference Δ is added to every
    component's covariance (the overall covariance moves by exactly Δ; each component kept
    positive definite, its variances unchanged). Dividing each component's own correlations
    instead (until 2026-11-29) left the part of R between the components' means uncorrected
    and inflated the within-component part: at ε = 1e4 a mixture's synthetic correlations
    were further from the data's than the one-component copula's (mid: corr MAE excess
    0.059 with k = 2, 0.002 with k = 1). ``flat`` (optional, per column): the columns whose
    target correlations are 0 (one bin of mass, see :func:`_undo_jitter_attenuation`).
    Post-processing."""
    w = copula.weights_ / copula.weights_.sum()
    mu = copula.means_
    centre = w @ mu
    overall = (np.einsum("k,kij->ij", w, copula.covariances_)
               + np.einsum("k,ki,kj->ij", w, mu - centre, mu - centre))
    sd = np.sqrt(np.clip(np.diag(overall), 1e-12, None))
    corr = overall / np.outer(sd, sd)
    target = np.clip(corr / np.outer(c, c) ** 2, -MAX_CORRELATION, MAX_CORRELATION)
    if flat is not None:
        target[flat, :] = 0.0
        target[:, flat] = 0.0
    np.fill_diagonal(target, 1.0)
    ev, V = np.linalg.eigh(target)
    target = (V * np.clip(ev, 1e-3, None)) @ V.T
    dd = np.sqrt(np.diag(target))
    target = target / np.outer(dd, dd)
    delta = (target - corr) * np.outer(sd, sd)
    np.fill_diagonal(delta, 0.0)
    out = np.empty_like(copula.covariances_)
    for i, cov in enumerate(copula.covariances_):
        m = cov + delta
        var = np.clip(np.diag(cov), 1e-12, None)
        ev, V = np.linalg.eigh(m / np.sqrt(np.outer(var, var)))
        r = (V * np.clip(ev, 1e-3, None)) @ V.T
        dr = np.sqrt(np.diag(r))
        out[i] = r / np.outer(dr, dr) * np.sqrt(np.outer(var, var))
    copula.covariances_ = out


def synthesize(X: Any, n_samples: int | None = None, *, rho: float | None = None,
               epsilon: float | None = None, delta: float | None = None,
               n_components: int | str = "auto", dependence: str = "auto",
               kinds: Sequence[str] | Mapping[str, str] | None = None,
               bounds: Sequence[tuple[float, float] | None]
               | Mapping[str, tuple[float, float]] | None = None,
               categories: Mapping[str, Sequence[Any]] | None = None,
               public_X: Any = None, random_state: Any = None,
               accountant: Accountant | None = None) -> Any:
    """Fit a :class:`PrivateSynthesizer` to ``X`` and draw ``n_samples`` rows in one step.

    Every output row is a function of the fit's DP releases only (post-processing), so the
    table carries the fit's guarantee: ``rho``-zCDP or (``epsilon``, ``delta``)-DP under
    replace-one neighbours of ``X``.

    Parameters
    ----------
    X : array-like or DataFrame of shape (n, d)
        The private rows (numeric columns, and categorical ones: strings, objects, pandas
        categoricals).
    n_samples : int, optional
        Rows to draw (default: as many as ``X`` has).
    rho, epsilon, delta, n_components, dependence, kinds, bounds, categories, accountant
        As for :class:`PrivateSynthesizer`.
    public_X : array-like, optional
        Public rows of the same columns (they may help the copula's fit; privacy holds for any).
    random_state : None, int or Generator
        The fit's noise (None: secure) and the sampler's seed, so the rows equal
        ``PrivateSynthesizer(..., random_state=s).fit(X).sample(n, s)``.

    Returns
    -------
    DataFrame or ndarray
        A DataFrame with ``X``'s column names and dtypes when ``X`` is one (categorical
        columns as pandas categoricals), else an array of ``X``'s dtype (with categorical
        columns: an object array of their labels, :meth:`PrivateSynthesizer.sample_labels`).

    Examples
    --------
    >>> import numpy as np, privgauss as pg
    >>> X = np.random.default_rng(0).normal(size=(5000, 2))
    >>> pg.synthesize(X, 4, rho=0.5, random_state=0).shape
    (4, 2)
    """
    syn = PrivateSynthesizer(rho=rho, epsilon=epsilon, delta=delta, n_components=n_components,
                             dependence=dependence, kinds=kinds, bounds=bounds,
                             categories=categories, random_state=random_state,
                             accountant=accountant).fit(X, public_X=public_X)
    n = int(np.shape(X)[0]) if n_samples is None else n_samples
    if getattr(X, "columns", None) is not None and not isinstance(X, np.ndarray):
        return syn.sample_table(n, random_state)
    if any(c is not None for c in syn.categories_):
        return syn.sample_labels(n, random_state)
    return cast_array(syn.sample(n, random_state), getattr(X, "dtype", None), syn.kinds_)
