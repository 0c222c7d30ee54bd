"""Experiment (issue 27, brief TIEDPLAN): private EM's plain plans with tied steps where the
full plan's own noise is loud, against main, on the corpus tables at ε = 1 (δ = 1e-6).

Not a library feature: the variants patch :func:`privgauss.mixture.private_em.em_plan` and the
final pick's candidates in this process only (public facts decide every change, so each
variant is as private as main: the tied steps are private EM's existing ``OVER_TIED`` steps,
their pooled second moment at the same sensitivity √2·r² and ``TIED_SHARES`` =
``STAT_SHARES``; the ledger's parts keep their names and ρ).

* ``main``: the library as it is;
* ``tied``: a plain plan (no k' run, not wide) whose last step's noise alone would cost a
  model of k full components more than ``--threshold`` nat/row
  (``private_em._noise_change(..., at_r0=True)``, as ``noise_cost``) fits one pooled
  covariance in every step (``tied_until`` = T; step radii as a tied step's: k = 1);
* ``tied-candidate``: main's plan, and the final pick gets one more candidate, the EM fit
  with its covariances replaced by their weighted mean (post-processing; the pick's planned
  candidate count + 1);
* ``tied-combined``: ``tied``, and its refining tied steps (after the run pick) combine
  their releases over the steps as untied refining steps do (:func:`private_em._combine`'s
  gain on the pooled shape, :func:`private_em._gain` on each mean move) instead of half
  James–Stein per step;
* ``short``: where the rule fires, the default plan with T = ``--short-steps`` steps instead
  of 20 (full covariances);
* ``tied-short``: both.
* ``lean`` (a different rule, not tied): a plain plan whose first exploring step's release
  floor (``private_em._release_floor``: the released count under which a step leaves a
  component's estimate as it was) is at least ``--lean-share`` × n keeps one exploring step
  (the run pick still follows it) and gives the other exploring steps' ρ to its last step
  (T − E + 1 steps; ``rho_steps`` and the radii replanned, so the ledger follows the plan).

Same splits, references and columns as ``real_mixtures.py`` (gap = sklearn's best of 5 minus
ours, held out, median and worst over the seeds).

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src \\
        python benchmarks/tied_plan.py --variant tied --seeds 4 --tables immi1 ...
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mixture_corpus as mc  # noqa: E402
import numpy as np  # noqa: E402
import real_mixtures as rm  # noqa: E402

from privgauss.mixture import private_em as pe  # noqa: E402

VARIANTS = ("main", "tied", "tied-combined", "tied-candidate", "short", "tied-short", "lean")


def patch(variant: str, threshold: float, short_steps: int = 10, lean_share: float = 0.5
          ) -> None:
    """Install ``variant`` into private_em (this process only)."""
    if variant == "main":
        return
    orig_plan, orig_cands = pe.em_plan, pe._final_candidates

    def loud(plan: pe.EMPlan, n: int, d: int, k: int) -> bool:
        return (plan.components == 0 and plan.n_starts < pe.WIDE_STARTS
                and pe._noise_change(plan, plan.n_steps - 1, n, d, k, at_r0=True) > threshold)

    def em_plan(n: int, d: int, k: int, budget: Any, *, n_public: int = 0,
                n_steps: int | None = None, prior: bool = False) -> pe.EMPlan:
        plan = orig_plan(n, d, k, budget, n_public=n_public, n_steps=n_steps, prior=prior)
        fires = n_steps is None and loud(plan, n, d, k)
        if fires and variant in ("short", "tied-short"):
            plan = orig_plan(n, d, k, budget, n_public=n_public, n_steps=short_steps,
                             prior=prior)
        if fires and variant in ("tied", "tied-combined", "tied-short"):
            plan = dataclasses.replace(plan, tied_until=plan.n_steps)
            plan = dataclasses.replace(plan, step_radii=tuple(
                pe.step_radius(n, d, 1, plan.stat_rhos(t)[2], pe._tail(plan, t))
                for t in range(plan.n_steps)))
        if variant == "tied-candidate":
            plan = dataclasses.replace(plan, final_candidates=plan.final_candidates + 1)
        if variant == "lean":
            plan = _lean(plan, n, d, k, lean_share, n_steps)
        return plan

    def final_candidates(em: Any, P: Any, m0: Any, W: Any, k: int, plan: pe.EMPlan,
                         rng: Any, em_factor: Any = None) -> tuple[list[str], list[Any]]:
        names, cands = orig_cands(em, P, m0, W, k, plan, rng, em_factor)
        return names + ["tied"], cands + [pe._tie(em)]

    pe.em_plan = em_plan  # type: ignore[assignment]
    if variant == "tied-candidate":
        pe._final_candidates = final_candidates  # type: ignore[assignment]
    if variant == "tied-combined":
        _combine_tied_steps()


def _lean(plan: pe.EMPlan, n: int, d: int, k: int, share: float, n_steps: int | None
          ) -> pe.EMPlan:
    """``plan`` with one exploring step where an exploring release cannot update a component
    of fewer than ``share`` × n rows (public), the others' ρ on the last step."""
    E = plan.explore_steps
    if (n_steps is not None or plan.components or plan.n_starts >= pe.WIDE_STARTS or E <= 1
            or pe._release_floor(plan, 0, n, k) < share * n):
        return plan
    rs = plan.rho_steps
    plan = dataclasses.replace(plan, rho_steps=(rs[0],) + rs[E:-1] + (rs[-1] + sum(rs[1:E]),),
                               explore_steps=1, step_radii=())
    return dataclasses.replace(plan, step_radii=tuple(
        pe.step_radius(n, d, k, plan.stat_rhos(t)[2], pe._tail(plan, t))
        for t in range(plan.n_steps)))


def _combine_tied_steps() -> None:
    """Refining tied steps combine releases over steps (post-processing only)."""
    from privgauss.mixture.cluster_estimation import undo_clipping
    from privgauss.mixture.em_starts import repair_covariance

    state: dict[str, Any] = {}
    orig_release, orig_tied = pe._em_release_runs, pe._tied_update

    def release_runs(steps: list[Any], plan: pe.EMPlan, t: int, release: Any, n: int
                     ) -> Any:
        if t == 0:
            state.update(mem_c=math.nan, mem_m=None)
        state["refining"] = (len(steps) == 1 and t > plan.explore_steps
                             and plan.reduce_at is None)
        state["sig_s"] = pe.soft_sums_l2(plan.step_radius(t)) / math.sqrt(
            2.0 * plan.stat_rhos(t)[1])
        return orig_release(steps, plan, t, release, n)

    def tied_update(Nn: Any, Sn: Any, Mn: Any, L: Any, floor: float, sig_m: float, r: float,
                    n: int, means: Any, covs: Any) -> None:
        if not state["refining"]:
            orig_tied(Nn, Sn, Mn, L, floor, sig_m, r, n, means, covs)
            return
        k, d = means.shape
        if state["mem_m"] is None:
            state["mem_m"] = np.full(k, np.nan)
        centred = np.asarray(Mn, dtype=np.float64).copy()
        for j in np.flatnonzero(Nn > floor).tolist():
            ybar = Sn[j] / Nn[j]
            centred -= Nn[j] * np.outer(ybar, ybar)
            s_m = state["sig_s"] / Nn[j]
            prior = s_m * s_m if math.isnan(state["mem_m"][j]) else state["mem_m"][j]
            g = pe._gain(float(ybar @ ybar), s_m * s_m * d, prior * d)
            state["mem_m"][j] = g * s_m * s_m
            ybar = g * ybar
            ybar = ybar * min(1.0, r / max(float(np.linalg.norm(ybar)), 1e-300))
            means[j] = means[j] + L @ ybar
        s = sig_m / n
        _, Cy = undo_clipping(np.zeros(d), centred / n, r)
        Cy, _, var_c, _ = pe._combine(Cy, np.zeros(d), s, 1.0,
                                      np.array([state["mem_c"], math.nan]))
        state["mem_c"] = var_c
        Cy = pe._floor(Cy, math.sqrt(var_c))
        covs[:] = repair_covariance(L @ repair_covariance(Cy) @ L.T,
                                    pe._step_eig_floor(math.sqrt(var_c), d))

    pe._em_release_runs = release_runs  # type: ignore[assignment]
    pe._tied_update = tied_update  # type: ignore[assignment]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variant", choices=VARIANTS, default="main")
    ap.add_argument("--threshold", type=float, default=0.2)
    ap.add_argument("--short-steps", type=int, default=10)
    ap.add_argument("--lean-share", type=float, default=0.5)
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--tables", nargs="+", required=True)
    args = ap.parse_args()
    patch(args.variant, args.threshold, args.short_steps, args.lean_share)
    mc.fresh_tables(2000, 10)
    for name in args.tables:
        if name not in mc.corpus.TABLES:
            mc.corpus.TABLES[name] = mc.corpus.Table(name, f"pydataset {name}", "seen", False,
                                                     mc.corpus._pydataset(name))
    lines, summary = rm.run(args.tables, 3, args.seeds, 20000, (rm.SETTINGS[0],))
    print("\n".join([f"variant {args.variant}, threshold {args.threshold}, short steps "
                      f"{args.short_steps}", *summary, "",
                     *lines]))


if __name__ == "__main__":
    main()
