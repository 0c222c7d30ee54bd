"""The KSSU19 mixture learner: RPGMP + PGME (Alg. 3–4, spec §7; the warm-up PEGME is in
:mod:`.pegme`). Kamath, Sheffet, Singhal, Ullman, "Differentially Private Algorithms for Learning
Mixtures of Separated Gaussians" (NeurIPS 2019).

**Neighbours:** replace one row of ``X``; n is public. **Guarantee:** :func:`kssu_gmm` is
(ε, δ)-DP for ``ApproxDP(ε, δ)`` (δ > 0) on any data; the whole budget is
charged whatever happens, and a failure (⊥) raises :class:`~privgauss.exceptions.EstimationFailed`.

RPGMP (recursive partitioning), breadth first, level ℓ = 0..k−1 (node at level ℓ: k − ℓ
components). A node holds the rows S it received (original d-dim rows) and a released prior ball.

1. *Size* (ℓ ≥ 1; the root's n is public): ñ = |S| + discrete Gaussian (count sensitivity 1),
   m = ⌊ñ − z·σ⌋. All node mechanisms run on T(S) = :func:`~.sample_aggregate.fixed_size_subset`
   (S, m): the m rows of S with the smallest public keys, padded with the prior centre, in a
   public random order — adding or removing a row of S changes T(S) by one replacement, so the
   replace-one building blocks (n = m public) are DP for S under add/remove.
2. *Enclosing ball* (:func:`~.one_cluster.one_cluster`, t₂ = m − ⌊t/2⌋, c = 2): B(c_X, r_X),
   or the prior if ⊥ (at the root ⊥ is a failure).
3. *Terrific ball in the raw space* (:func:`~.terrific_ball.terrific_ball`, largest = False,
   t = ⌊n·w_min/4⌋, search constant c, radii r_X·2^{−j}): if found, B(p, R) splits S into
   A = S ∩ B(p, R) and B = S \\ B(p, c_out·R), c_out = (c − 1)/2; annulus rows are dropped; both
   children get k_node − 1 components.
4. *Private PCA* (:func:`~.private_pca.private_pca`, centre c_X, clip radius r_X,
   rank min(k_node, d)) and 5. *terrific ball in the projected space* (largest = True), splitting
   S by the projections the same way.
6. Otherwise, and at level k − 1, the node is a leaf.

Big nodes: steps 2, 3 and 5 run on a uniform subsample of ``max_points`` of the m rows of T(S)
(public randomness) with t scaled by the sampling rate γ, and with the budget **amplified by
subsampling** (Balle, Barthe, Gaboardi 2018, sampling without replacement under substitution):
a mechanism that is (ε′, δ′)-DP on the subsample is (ln(1 + γ(e^{ε′} − 1)), γδ′)-DP on T(S), so
ε′ = ln(1 + (e^ε − 1)/γ), δ′ = δ/γ for the charged (ε, δ). (The building blocks' own
subsampling claims no amplification; here it is what keeps t/Γ from shrinking by γ.) A search
whose subsampled target t·γ is below its AboveThreshold slack Γ (a public condition,
:func:`search_is_meaningful`) would pass at its first radius whatever the data, so it is skipped
(⊥) — its budget is charged all the same.

PGME (leaves): exactly k leaves are required (another number is a DP output: EstimationFailed);
each leaf's rows are estimated by :func:`~.sample_aggregate.estimate_components` (joint noisy
counts → weights, CoinPress on a fixed-size subset inside the leaf's ball, λ(Σ) ≤ r_X²).

**Budget (per root-to-leaf path, worst-case depth).** Every node at level ℓ gets the same public
budget b_ℓ (count ρ_c, enclosing (ε_e, δ_e), two terrific (ε_t, δ_t), PCA ρ_p; level k − 1: count
and enclosing only), whatever the tree looks like. Siblings hold disjoint rows chosen by released
balls, so a row's loss is the composition along its path. Under replace-one the old and the new
value of the changed row can follow *different* paths: every node on either path sees one
add/remove change (one replacement of its T(S)), the root (shared by both) one replacement. So
the loss is b_0 + 2·Σ_{ℓ≥1} b_ℓ + (estimation: the k CoinPress runs cost 2ρ_E, the joint counts
have L2 sensitivity √2) — the accountant is charged exactly that, level by level, **before** any
node of the level draws noise (the nodes then draw on scratch accountants holding b_ℓ). A naive
parallel composition would charge b_ℓ per level: half of what is honest. The unused budget of
absent nodes is charged too, so the spend never depends on the data.

Split of (ε, δ): the 1-cluster / terrific calls (approximate DP, amplified as above) take
``partition_share``·ε and δ/2 (ε weights: enclosing 0.5, each terrific search 1.5, times the
path multiplier 1 or 2; δ equal per call); the rest converts to zCDP, ρ_Z = the largest ρ with
ρ-zCDP ⇒ (ε − ε_A, δ − δ_A) (tight CKS20), shared PCA 35%, node counts 5%, leaf counts 5%,
estimation the rest. The ledger composes to exactly (ε, δ).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.stats import norm

from .. import sensitivity
from ..exceptions import EstimationFailed
from ..mechanisms import Release, gaussian_sigma_zcdp, private_count
from ..privacy import (
    ApproxDP,
    Budget,
    LedgerEntry,
    charge_unused,
)
from ..progress import bar
from ..validation import check_positive_int
from .component_estimation import (
    ComponentPrior,
    Partition,
    estimate_components,
    fixed_size_subset,
)
from .good_radius import doubling_radii
from .kssu_budget import KSSUBudget, plan_kssu_budget
from .kssu_sample_size import VALIDATED_SEPARATION, needed_n
from .one_cluster import Ball, BallSearch, one_cluster
from .private_pca import private_pca
from .sample_aggregate import check_mixture_inputs, root_radius_grid
from .subsampling import search_is_meaningful, subsampled_call
from .terrific_ball import terrific_ball

__all__ = ["KSSUOptions", "kssu_gmm", "radius_grid_below"]

#: The terrific-ball search constant of ``constants="practical"`` (the annulus B(p, c·r) \ B(p, r)
#: must be almost empty). At 4 a projected search on a separation-5 mixture (d = 10, k = 3: nearest
#: means 26σ apart) found no ball in 2 of 10 fits at 1.2x the stated n (the doubling grid has no
#: radius r covering a component with 4r short of the next one); 3.5 leaves that room.
PRACTICAL_TERRIFIC_C = 3.5


@dataclass(frozen=True)
class KSSUOptions:
    """The public knobs of :func:`kssu_gmm`; they move accuracy and running time only.

    Parameters
    ----------
    terrific_c : float, optional
        Annulus constant of the terrific-ball search (> 3; default 3.5, or the paper's
        c_search = 2·c_final + 1 = 9 with ``constants="theory"``).
    radii : array-like, optional
        Public grid for the root's enclosing ball (default
        :data:`~.sample_aggregate.DEFAULT_RADIUS_RANGE`).
    n_radii_max : int
        Number of radii searched below a released radius.
    max_points : int
        Subsample size of the pairwise scores.
    cond_range : float
        Condition-number range of a leaf's covariance prior.
    partition_share : float
        Share of ε for the partition (the rest: weights and estimation).
    """

    terrific_c: float | None = None
    radii: Any = None
    n_radii_max: int = 24
    max_points: int = 10_000
    cond_range: float = 1e4
    partition_share: float = 0.6


# ----------------------------------------------------------------------------------------------
# The recursion
# ----------------------------------------------------------------------------------------------


@dataclass
class _Node:
    rows: np.ndarray  # global row indices (private membership)
    k_node: int
    level: int
    prior: Ball | None
    path: str = "root"


@dataclass
class _Leaf:
    rows: np.ndarray
    ball: Ball
    path: str


@dataclass
class KSSUTree:
    """Public/DP description of a run: one entry per node, in processing order."""

    nodes: list[dict[str, Any]] = field(default_factory=list)


def radius_grid_below(center_radius: float, n_radii: int) -> np.ndarray:
    """The public doubling grid of about ``n_radii`` radii below 2·``center_radius`` (a
    released radius): the search grid inside a released ball."""
    top = 2.0 * center_radius
    return doubling_radii(top * 2.0 ** (-n_radii), top)


def _split_rows(
    points: np.ndarray, rows: np.ndarray, ball: Ball, c_out: float
) -> tuple[np.ndarray, np.ndarray]:
    dist = np.sqrt(np.sum((points - ball.center) ** 2, axis=1))
    return rows[dist <= ball.radius], rows[dist > c_out * ball.radius]


def kssu_gmm(
    X: Any,
    k: int,
    budget: ApproxDP,
    *,
    min_weight: float | None = None,
    beta: float = 0.05,
    constants: str = "practical",
    options: KSSUOptions | None = None,
    release: Release,
    info: dict[str, Any] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Private k-component Gaussian mixture by recursive partitioning (RPGMP) and per-part
    estimation (PGME), KSSU19 Alg. 3–4 (spec §7): (weights (k,), means (k, d), covs (k, d, d)).

    (ε, δ)-DP for ``budget = ApproxDP(ε, δ)`` under replace-one neighbours with n public, for any
    data; see the module docstring for the budget derivation. Public knobs (accuracy only):
    ``min_weight`` (default 1/k; sets t = ⌊n·min_weight/4⌋) and ``options``
    (:class:`KSSUOptions`). Charged to ``release`` (step "kssu" unless it names one). Raises
    :class:`EstimationFailed` (whole budget spent) when the root has no enclosing ball, the
    number of leaves is not k, or a leaf is too small.
    """
    opts = KSSUOptions() if options is None else options
    terrific_c, n_radii_max, max_points = opts.terrific_c, opts.n_radii_max, opts.max_points
    cond_range = opts.cond_range
    rel = release.named("kssu")
    data, k, beta, w_min = check_mixture_inputs(
        X, k, beta=beta, constants=constants, min_weight=min_weight, cond_range=cond_range
    )
    n, d = data.shape
    if terrific_c is None:
        terrific_c = 9.0 if constants == "theory" else PRACTICAL_TERRIFIC_C
    terrific_c = float(terrific_c)
    if not (3.0 < terrific_c <= 1e3):
        raise ValueError("terrific_c must be in (3, 1000]")
    n_radii_max = check_positive_int(n_radii_max, "n_radii_max", minimum=2)
    max_points = check_positive_int(max_points, "max_points", minimum=100)
    t = int(n * w_min / 4)
    if t < 2:
        raise ValueError(
            f"n = {n} is far too small: the terrific-ball target t = n*min_weight/4 must be "
            f">= 2, i.e. n >= {math.ceil(8 / w_min)}; see privgauss.mixture_requirements for "
            "the n the learner needs to succeed"
        )
    root_grid = root_radius_grid(opts.radii)
    plan = plan_kssu_budget(budget, k, d, partition_share=opts.partition_share)
    # the plan composes to exactly the budget (tests); refusing it needs only "within"
    plan.budget_plan(exact=False).reserve(rel.accountant, "the KSSU learner")
    run = _Run(
        data=data,
        keys=rel.rng.random(int(n)),  # public per-row keys of the fixed-size subsets
        plan=plan,
        k=k,
        t=t,
        terrific_c=terrific_c,
        root_grid=root_grid,
        n_radii_max=n_radii_max,
        max_points=max_points,
        beta=beta,
        constants=constants,
        cond_range=cond_range,
        release=rel,
        needed=needed_n(data.shape, k, budget, w_min, beta, max_points=max_points,
                        n_radii_max=n_radii_max),
    )
    if info is not None:
        info.update(tree=run.tree.nodes, t=t, budget_plan=plan)
    leaves = _partition(run)
    if info is not None:
        info.update(n_leaves=len(leaves))
    weights, means, covs, noisy = _estimate_leaves(run, leaves)
    if info is not None:
        info.update(noisy_counts=noisy, leaf_balls=[lf.ball for lf in leaves])
    return weights, means, covs


@dataclass
class _Run:
    """The public parameters of one KSSU run and its private rows, passed down the recursion."""

    data: np.ndarray
    keys: np.ndarray
    plan: KSSUBudget
    k: int
    t: int
    terrific_c: float
    root_grid: np.ndarray
    n_radii_max: int
    max_points: int
    beta: float
    constants: str
    cond_range: float
    release: Release
    needed: int
    tree: KSSUTree = field(default_factory=KSSUTree)
    #: the current level's ledger entries, by step: each pays for that step at every node
    paid: dict[str, LedgerEntry] = field(default_factory=dict)

    @property
    def beta0(self) -> float:
        return self.beta / (10 * self.k)

    @property
    def c_out(self) -> float:
        return (self.terrific_c - 1.0) / 2.0

    def node_release(self, name: str, total: Budget, node: _Node) -> Release:
        """A context for node ``node``'s step ``name``, paid by the level's charge for it: its
        entries are kept under that ledger entry, prefixed with the node's path."""
        return Release(
            self.release.accountant.prepaid(self.paid[name], total, node.path),
            self.release.noise,
            name,
        )

    def subsampled(self, name: str, node: _Node) -> dict[str, Any]:
        """The keyword arguments of :func:`subsampled_call` for node ``node``'s step ``name``."""
        return {
            "paid_by": self.paid[name],
            "name": node.path,
            "release": Release(self.release.accountant, self.release.noise, name),
        }


def _charge_level(run: _Run, level: int) -> None:
    """Charge every node of ``level`` at once (parallel composition, times the multiplier)."""
    plan = run.plan
    run.paid = {}
    for name, cost in plan.level_charges(level):
        run.paid[name] = run.release.accountant.spend(
            cost,
            step=run.release.name(f"level-{level}/{name}"),
            mechanism="parallel nodes",
            note=(
                "every node of this level; a replaced row can change two branches, so "
                "twice the per-node budget"
                if plan.multipliers[level] == 2
                else "the root (shared by every path): once"
            ),
        )


def _partition(run: _Run) -> list[_Leaf]:
    """RPGMP: the levels of the recursion, each charged before its nodes run; the leaves."""
    plan, accountant, step = run.plan, run.release.accountant, run.release.step
    level_nodes = [_Node(np.arange(run.data.shape[0]), run.k, 0, None)]
    leaves: list[_Leaf] = []
    for level in range(run.k):
        _charge_level(run, level)
        next_nodes: list[_Node] = []
        # the number of nodes at a level is fixed by the released outputs of the level above
        for node in bar(level_nodes, f"KSSU level {level + 1}/{run.k}"):
            out = _process_node(node, run, level)
            if out is None:  # the root found no enclosing ball
                charge_unused(accountant, plan.all_charges(level + 1), step)
                raise EstimationFailed(
                    "the private enclosing ball of the data was not found"
                    + _why(run, enclosing=True),
                    step=f"{step}/level-0/enclosing-ball",
                    needed_n=run.needed,
                )
            if isinstance(out, _Leaf):
                leaves.append(out)
            else:
                next_nodes.extend(out)
        level_nodes = next_nodes
        if not level_nodes:
            # deeper levels hold no node: their budget is charged all the same
            for lv in range(level + 1, run.k):
                for name, cost in plan.level_charges(lv):
                    accountant.spend(
                        cost,
                        step=f"{step}/level-{lv}/{name}",
                        mechanism="unused",
                        note="no node at this level (charged: data independent)",
                    )
            break
    if len(leaves) != run.k:
        charge_unused(accountant, [plan.weights, plan.estimation], step)
        raise EstimationFailed(
            "the recursive partitioning did not end with exactly n_components parts"
            + _why(run),
            step=f"{step}/partition",
            needed_n=run.needed,
        )
    return leaves


def _why(run: _Run, enclosing: bool = False) -> str:
    """The likely cause of a failure, from public quantities (n, the practical requirement, the
    budget spent): below the requirement, n; at or above it, the separation the requirement
    assumes (the failure is a DP output; the requirement was measured at separation ratio 5);
    for the root's ``enclosing`` search, also the public radius grid it searched."""
    n = int(run.data.shape[0])
    spent = f"; the whole budget ({run.plan.total}) was spent"
    grid = "" if not enclosing else (f"; or the data's spread lies outside the public radius grid "
            f"[{run.root_grid.min():.3g}, {run.root_grid.max():.3g}] of the enclosing search "
            "(give method_params={'radii': ...} in the data's units)")
    if n < run.needed:
        return f": n = {n} is below the {run.needed} rows this learner needs here{grid}{spent}"
    return (
        f": n = {n} meets this learner's practical requirement ({run.needed} rows, measured "
        f"at separation ratio >= {VALIDATED_SEPARATION:g}), so the components are probably "
        "not that well separated (privgauss.datasets.separation_ratio); method='em' needs no "
        f"separation{grid}{spent}"
    )


def _estimate_leaves(
    run: _Run, leaves: list[_Leaf]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """PGME: the weights, then CoinPress on every leaf (a prior from its released ball)."""
    labels = np.full(run.data.shape[0], -1, dtype=np.int64)
    for j, leaf in enumerate(leaves):
        labels[leaf.rows] = j
    priors = [
        ComponentPrior(
            lf.ball.center, lf.ball.radius, (lf.ball.radius**2 / run.cond_range, lf.ball.radius**2)
        )
        for lf in leaves
    ]
    return estimate_components(
        run.data,
        Partition(labels, run.keys),
        priors,
        run.plan.weights,
        run.plan.estimation,
        beta=run.beta,
        constants=run.constants,
        release=run.release.at("leaves"),
        needed_n=run.needed,
    )


def _process_node(node: _Node, run: _Run, level: int) -> list[_Node] | _Leaf | None:
    """One RPGMP node; returns its children, a leaf, or None (root without enclosing ball)."""
    d = run.data.shape[1]
    record: dict[str, Any] = {"path": node.path, "level": level, "k_node": node.k_node}
    run.tree.nodes.append(record)
    m = _node_size(node, run, level, record)
    if m < max(2, 4 * d):  # (level >= 1: a noisy size) too small for any step
        record["outcome"] = "leaf (too small)"
        assert node.prior is not None
        return _Leaf(node.rows, node.prior, node.path)
    pad = node.prior.center if node.prior is not None else np.zeros(d)
    T = fixed_size_subset(run.data, node.rows, run.keys, m, pad, run.release.rng)
    ball = _enclosing_ball(node, run, level, T, m)
    if ball is None:
        if node.prior is None:
            return None
        ball = node.prior
        record["enclosing"] = "inherited"
    record["enclosing_ball"] = (ball.center.tolist(), ball.radius)
    return _split_node(node, run, level, T, m, ball, record)


def _node_size(node: _Node, run: _Run, level: int, record: dict[str, Any]) -> int:
    """The node's public size: n at the root, else a noisy count lowered by its error bound."""
    if level == 0:
        return int(run.data.shape[0])
    cnt_budget = run.plan.count[level]
    assert cnt_budget is not None
    noisy = float(
        private_count(
            node.rows.size,
            cnt_budget,
            accountant=run.node_release("count", cnt_budget, node).accountant,
            noise=run.release.noise,
            step="count",
            sensitivity=sensitivity.count(),
        )
    )
    sigma = gaussian_sigma_zcdp(sensitivity.count(), cnt_budget.rho)
    record["noisy_size"] = noisy
    return int(math.floor(noisy - float(norm.isf(run.beta0)) * sigma))


def _enclosing_ball(node: _Node, run: _Run, level: int, T: np.ndarray, m: int) -> Ball | None:
    """Step 2: a private ball enclosing the node's m rows ``T`` (None: ⊥ or not meaningful)."""
    grid = (
        run.root_grid
        if node.prior is None
        else radius_grid_below(node.prior.radius, run.n_radii_max)
    )
    t2 = max(2, m - run.t // 2)
    enclose = run.plan.enclose[level]
    if not search_is_meaningful(
        "one-cluster", enclose, m, t2, grid.size, run.beta0, run.max_points
    ):
        return None
    return subsampled_call(
        one_cluster,
        T,
        t2,
        enclose,
        search=BallSearch(beta=run.beta0, max_points=run.max_points),
        radii=grid,
        c=2.0,
        **run.subsampled("enclosing-ball", node),
    )


def _split_node(
    node: _Node,
    run: _Run,
    level: int,
    T: np.ndarray,
    m: int,
    ball: Ball,
    record: dict[str, Any],
) -> list[_Node] | _Leaf:
    """Steps 3–5: a terrific ball in the raw space, else after private PCA: two children, or
    a leaf when there is none (or the node cannot split)."""
    terr = run.plan.terrific[level]
    if node.k_node == 1 or terr is None or m < 2 * run.t:
        record["outcome"] = "leaf"
        return _Leaf(node.rows, ball, node.path)
    S = run.data[node.rows]
    tgrid = radius_grid_below(ball.radius, run.n_radii_max)
    if not search_is_meaningful("terrific", terr, m, run.t, tgrid.size, run.beta0, run.max_points):
        record["outcome"] = "leaf (t below the search's slack)"
        return _Leaf(node.rows, ball, node.path)

    def search(points: np.ndarray, largest: bool, name: str) -> Ball | None:
        return subsampled_call(
            terrific_ball,
            points,
            run.t,
            terr,
            search=BallSearch(beta=run.beta0, max_points=run.max_points),
            c=run.terrific_c,
            radii=tgrid,
            largest=largest,
            **run.subsampled(name, node),
        )

    def split(points: np.ndarray, found: Ball, prior_a: Ball, how: str) -> list[_Node]:
        a, b = _split_rows(points, node.rows, found, run.c_out)
        record["outcome"] = f"split ({how})"
        record["ball"] = (found.center.tolist(), found.radius)
        return [
            _Node(a, node.k_node - 1, level + 1, prior_a, node.path + "/A"),
            _Node(b, node.k_node - 1, level + 1, ball, node.path + "/B"),
        ]

    # step 3: terrific ball in the raw space
    found = search(T, False, "terrific-raw")
    if found is not None:
        return split(S, found, found, "raw")
    # steps 4-5: private PCA, then a terrific ball in the projected space
    pca_budget = run.plan.pca[level]
    assert pca_budget is not None
    pca = private_pca(
        T,
        ball.center,
        ball.radius,
        min(node.k_node, run.data.shape[1]),
        pca_budget,
        release=run.node_release("private-pca", pca_budget, node),
    )
    found = search(pca.project(T), True, "terrific-projected")
    if found is not None:
        return split(pca.project(S), found, ball, "projected")
    record["outcome"] = "leaf (no terrific ball)"
    return _Leaf(node.rows, ball, node.path)

