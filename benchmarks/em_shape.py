"""Issue 27, ``em_speed.py``'s mixture at ε = 1 (``benchmarks/results/em_small_clusters.md``,
"emshape"): where the 0.16–0.36 nat/row below scikit-learn is lost.

Data as ``em_speed.py``: ``em_scale.py``'s k = 3, d = 10 mixture, n = 5e4 training rows
(data seed s: ``default_rng(1000 + s)``), 2e4 held-out rows (``default_rng(2000 + s)``), the
private fit ``PrivateGaussianMixture(3, method="em", epsilon=ε, delta=1e-6,
random_state=s)``. Gaps are held-out mean log-likelihoods below scikit-learn's
``GaussianMixture(3, n_init=1, random_state=s)`` (em_speed's reference), nat/row; every
model is scored in the fit's whitened frame plus log|det W|. The fit is traced (the spies
read the rows and released models, changing nothing) and, per fit, prints:

* the k' run as released before the reduction, scored as a k'-mixture, beside scikit-learn
  with k' components (``n_init=1``) — is the over-parameterised fit right?
* the free reduction (``reduce_run``) and the best k-partition of the k' components (each
  group moment-matched; all partitions, ranked by the training rows' log-likelihood — what
  a criterion on the rows would pick, before noise): gap as is and after 1 / 3 / 100 steps
  of scikit-learn's EM from it on the training rows (a right structure: ≈ 0 after a few);
* each refining step's released model's gap (the k-component steps after the reduction);
* scikit-learn's EM from the returned model (100 steps) and the final pick.

Diagnosis switches (not fits a user can get): ``--no-noise`` returns private_em's and the
starts' releases exact (still charged: the plan and the ledger are the fit's);
``--no-noise-from-reduction`` only the releases after the reduction (do the refining steps'
*rules* lose it?); ``--refine-tail F`` sets ``REFINE_TAIL`` (the refining steps' clipping
radius √d + F·√(2 ln n); 0.25 = the exploring steps'); ``NAME=VALUE`` sets other
``private_em`` constants; ``--off G1,G2`` switches guards of the refining steps off (after
the reduction only: :func:`refining_guards_off`; ``all``: every one but the ``quiet`` probe);
``--extra-steps E`` makes every plan's T E steps longer (with ``REDUCE_STEPS=8+E``: E more
refining steps after the same 12 steps, the ρ re-split by the plan); ``--quick`` prints only
the fit, the reduction and the refining steps (with scikit-learn's EM from the reduction for
as many steps): 5 s for three seeds.

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src \\
        python benchmarks/em_shape.py --seeds 0,1,2
"""

from __future__ import annotations

import argparse
import itertools
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.mixture import GaussianMixture

sys.path.insert(0, str(Path(__file__).resolve().parent))
from em_scale import _rows  # noqa: E402
from em_small_clusters import _mixture as mixture  # noqa: E402
from em_small_clusters import _sklearn_from as sk_from  # noqa: E402

import privgauss as pg  # noqa: E402
from privgauss.mixture import em_starts as es  # noqa: E402
from privgauss.mixture import private_em as pe  # noqa: E402

N, K, HELD = 50_000, 3, 20_000


def partitions(n: int, k: int) -> Any:
    """Every partition of range(n) into k non-empty groups (labels, canonical)."""
    for lab in itertools.product(range(k), repeat=n):
        if lab[0] != 0:
            continue
        seen = -1
        ok = True
        for x in lab:  # canonical: first appearances in order 0, 1, ...
            if x > seen + 1:
                ok = False
                break
            seen = max(seen, x)
        if ok and seen == k - 1:
            yield np.array(lab)


def merged(run: Any, lab: np.ndarray, k: int) -> Any:
    """The k' components moment-matched within the groups ``lab``."""
    w, mu, S = run
    W, M, C = np.empty(k), np.empty((k, mu.shape[1])), np.empty((k,) + S.shape[1:])
    for g in range(k):
        m = lab == g
        ww = w[m] / w[m].sum()
        W[g] = w[m].sum()
        M[g] = ww @ mu[m]
        D = mu[m] - M[g]
        C[g] = np.einsum("j,jab->ab", ww, S[m]) + (D * ww[:, None]).T @ D
    return W / W.sum(), M, C


def traced_fit(X: np.ndarray, eps: float, seed: int, no_noise: str) -> tuple[Any, dict]:
    cap: dict[str, Any] = {"rel": []}
    saved = {"transform_rows": pe.transform_rows, "_em_release_runs": pe._em_release_runs,
             "reduce_run": pe.reduce_run, "_em_steps": pe._em_steps,
             "gaussian_mechanism": pe.gaussian_mechanism,
             "symmetric_matrix_mechanism": pe.symmetric_matrix_mechanism}
    saved_es = {"gaussian_mechanism": es.gaussian_mechanism}
    tr, rel, red, steps = (saved["transform_rows"], saved["_em_release_runs"],
                           saved["reduce_run"], saved["_em_steps"])
    exact_on = {"on": no_noise == "all"}

    def transform_rows(Y: Any, W: Any, m0: Any) -> Any:
        cap["W"], cap["m0"] = np.copy(W), np.copy(m0)
        return tr(Y, W, m0)

    def em_release_runs(stps: Any, plan: Any, t: int, release: Any, n: int) -> Any:
        out = rel(stps, plan, t, release, n)
        if len(out) == 1:
            cap["rel"].append((t, tuple(np.copy(x) for x in out[0])))
        return out

    PROBE["refining"] = {"on": False}

    def reduce_run(run: Any, k: int, n: int, rng: Any) -> Any:
        out = (partition_reduction if PROBE["partition"] else red)(run, k, n, rng)
        PROBE["refining"]["on"] = True
        cap["kprime"], cap["reduced"] = tuple(np.copy(x) for x in run), out
        if no_noise == "refine":
            exact_on["on"] = True
        return out

    def em_steps(Z: Any, runs: Any, plan: Any, *a: Any, **kw: Any) -> Any:
        cap["plan"] = plan
        return steps(Z, runs, plan, *a, **kw)

    def exact(mechanism: Any) -> Any:
        def release(value: Any, *a: Any, **kw: Any) -> Any:
            noisy = mechanism(value, *a, **kw)  # charged as in a fit
            return np.array(value, dtype=np.float64) if exact_on["on"] else noisy
        return release

    pe.transform_rows, pe._em_release_runs, pe.reduce_run, pe._em_steps = (
        transform_rows, em_release_runs, reduce_run, em_steps)
    guards = refining_guards_off(PROBE["off"], exact_on, no_noise)
    if no_noise:
        pe.gaussian_mechanism = exact(saved["gaussian_mechanism"])
        pe.symmetric_matrix_mechanism = exact(saved["symmetric_matrix_mechanism"])
        if no_noise == "all":
            es.gaussian_mechanism = exact(saved_es["gaussian_mechanism"])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = pg.PrivateGaussianMixture(K, method="em", epsilon=eps, delta=1e-6,
                                            random_state=seed).fit(X)
    finally:
        for name, fn in saved.items():
            setattr(pe, name, fn)
        for name, fn in saved_es.items():
            setattr(es, name, fn)
        for name, fn in guards.items():
            setattr(pe, name, fn)
    return est, cap


GUARDS = ("floor", "eigfloor", "declipcap", "combine", "shrink", "declip", "meancap", "quiet")


def refining_guards_off(off: set[str], state: dict[str, Any], no_noise: str) -> dict[str, Any]:
    """``--off``: switch guards of the refining steps off (only after the reduction: the
    exploring and k' steps, hence the reduction, are the fit's). ``floor`` the per-step
    eigenvalue floor (:func:`_floor`), ``eigfloor`` the absolute one (``_step_eig_floor`` →
    ``NUMERIC_FLOOR``), ``declipcap`` the de-clipped eigenvalue cap, ``combine`` the gain
    (a release taken as is, its noise as the error left), ``shrink`` the first refining
    step's half James–Stein, ``declip`` the de-clipping (the clipped moments as released),
    ``meancap`` the mean-move cap (``MEAN_CAP``). ``quiet`` is a probe, not a guard off: the
    gain g of :func:`_combine` taken to 1 − fade·(1 − g), fade = ``_guard_fade`` (the floors'
    fade: 1 while the release's noise reach 2√d·s ≥ ``STEP_FLOOR``, (reach/``STEP_FLOOR``)^4
    below). Returns the saved attributes."""
    if not off:
        return {}
    saved = {n: getattr(pe, n) for n in ("_floor", "_step_eig_floor", "_declip_cap",
                                          "_combine", "_shrink", "undo_clipping_batch",
                                          "MEAN_CAP")}
    # the refining steps start at the reduction (``reduce_run`` is traced before)
    on = state if no_noise == "refine" else PROBE.setdefault("refining", {"on": False})

    def when(name: str, alt: Any) -> Any:
        orig = saved[name]

        def f(*a: Any, **kw: Any) -> Any:
            return alt(*a, **kw) if on["on"] else orig(*a, **kw)
        return f

    def plain(v: np.ndarray, S: np.ndarray, tau: float, U: Any = None) -> Any:
        return np.array(v), np.array(S) - v[:, :, None] * v[:, None, :]

    def quiet(Cy: np.ndarray, ybar: np.ndarray, s_c: float, s_m: float, mem: Any) -> Any:
        _, _, v_c, v_m = saved["_combine"](Cy, ybar, s_c, s_m, mem)
        d = Cy.shape[0]
        mu = float(np.trace(Cy)) / d
        fade = pe._guard_fade(s_c, d, pe.FLOOR_POWER)
        g_c = 1.0 - fade * (1.0 - v_c / (s_c * s_c))
        g_m = 1.0 - fade * (1.0 - v_m / (s_m * s_m))
        return (pe.sym(mu * np.eye(d) + g_c * (Cy - mu * np.eye(d))), g_m * ybar,
                g_c * s_c * s_c, g_m * s_m * s_m)

    alts = {"floor": ("_floor", lambda C, s=np.inf: C),
            "eigfloor": ("_step_eig_floor", lambda s, d, factored=False: pe.NUMERIC_FLOOR),
            "declipcap": ("_declip_cap", lambda C, r, s: C),
            "combine": ("_combine", lambda Cy, ybar, s_c, s_m, mem: (Cy, ybar, s_c * s_c,
                                                                     s_m * s_m)),
            "quiet": ("_combine", quiet),
            "shrink": ("_shrink", lambda C, s, strength=1.0: C),
            "declip": ("undo_clipping_batch", plain)}
    assert not {"combine", "quiet"} <= off, "combine and quiet both replace _combine"
    for g in off:
        if g == "meancap":
            pe.MEAN_CAP = False
        else:
            name, alt = alts[g]
            setattr(pe, name, when(name, alt))
    return saved


def analyse(seed: int, eps: float, no_noise: str, top: int) -> dict[str, float]:
    X = _rows(N, np.random.default_rng(1000 + seed))
    H = _rows(HELD, np.random.default_rng(2000 + seed))
    sk = GaussianMixture(K, n_init=1, random_state=seed).fit(X)
    base = float(sk.score(H))
    sk5 = None if PROBE["quick"] else GaussianMixture(K, n_init=5, random_state=seed).fit(X)
    est, cap = traced_fit(X, eps, seed, no_noise)
    W, m0, plan = cap["W"], cap["m0"], cap["plan"]
    ldet = float(np.linalg.slogdet(W)[1])
    Z, Hz = (X - m0) @ W.T, (H - m0) @ W.T

    def gap(g: Any) -> float:
        return base - (float(g.score(Hz)) + ldet)

    out = {"gap": base - float(est.score(H))}
    print(f"data seed {seed}, ε = {eps:g}{', no noise: ' + no_noise if no_noise else ''}: "
          f"T = {plan.n_steps}, explore {plan.explore_steps}, reduce at {plan.reduce_at}, "
          f"k' = {plan.fitted(K)}; refining radii "
          + " ".join(f"{plan.step_radius(t):.2f}" for t in range(plan.reduce_at or 0,
                                                                  plan.n_steps)))
    if sk5 is None:
        print(f"  fit gap {out['gap']:.4f} (selected {est.selected_model_})")
    else:
        print(f"  fit gap {out['gap']:.4f} (selected {est.selected_model_}); sklearn best of 5 "
              f"{base - float(sk5.score(H)):.4f}; sklearn from the fit, 100 steps "
              f"{gap(sk_from((est_w(est, W, m0)), 100, Z)):.4f}")
    if "kprime" in cap and PROBE["quick"]:
        red = cap["reduced"]
        ref = [r for t, r in cap["rel"] if t >= plan.reduce_at]
        out["reduced"] = gap(mixture(red))
        out["refined_sk_same_steps"] = gap(sk_from(red, len(ref), Z))
        print("  refining steps' released models, gap: "
              + " ".join(f"{gap(mixture(r)):.4f}" for r in ref))
        print(f"  free reduction {out['reduced']:.4f}; sklearn from it, {len(ref)} steps "
              f"{out['refined_sk_same_steps']:.4f}")
    elif "kprime" in cap:
        kp = cap["kprime"]
        kk = len(kp[0])
        skk = GaussianMixture(kk, n_init=1, random_state=seed).fit(Z)
        out["kprime"] = gap(mixture(kp))
        print(f"  k' = {kk} run before the reduction: gap {out['kprime']:.4f} (as a k'-mixture); "
              f"sklearn k' = {kk}: {gap(skk):.4f}; weights {np.round(np.sort(kp[0]), 3)}")
        red = cap["reduced"]
        out["reduced"] = gap(mixture(red))
        out["reduced_sk3"] = gap(sk_from(red, 3, Z))
        print(f"  free reduction: gap {out['reduced']:.4f}; sklearn from it 1/3/100 steps "
              + " ".join(f"{gap(sk_from(red, s, Z)):.4f}" for s in (1, 3, 100)))
        rs = np.random.default_rng(1)  # a sample of the k' model: what a free score sees
        lab_s = rs.choice(kk, size=HELD, p=kp[0] / kp[0].sum())
        Y = kp[1][lab_s] + np.einsum("nij,nj->ni", np.linalg.cholesky(kp[2])[lab_s],
                                     rs.standard_normal((HELD, kp[1].shape[1])))
        cands = []
        for lab in partitions(kk, K):
            run = merged(kp, lab, K)
            g = mixture(run)
            cands.append((float(g.score(Z)), lab, run, float(g.score(Y))))
        free = max(cands, key=lambda c: c[3])
        out["free_partition_sk3"] = gap(sk_from(free[2], 3, Z))
        print(f"  the free score's (k' sample) best partition {free[1]}: gap "
              f"{gap(mixture(free[2])):.4f}, after sklearn 3 steps "
              f"{out['free_partition_sk3']:.4f}; the reduction's k' sample score "
              f"{mixture(red).score(Y):.4f} vs that partition's {free[3]:.4f}")
        Nb = N * np.asarray(kp[0], dtype=np.float64)
        summ = []
        for lab in partitions(kk, K):  # the summary EM from every hard partition
            obj, fit = es._summary_em(Nb, kp[1], kp[2], (lab[:, None] == np.arange(K)) * 1.0)
            summ.append((obj, lab, fit))
        sbest = max(summ, key=lambda c: c[0])
        out["summary_all_partitions_sk3"] = gap(sk_from(sbest[2], 3, Z))
        print(f"  summary objective: the reduction's {summary_obj(Nb, kp, red):.1f}; the best of "
              f"the summary EM from all {len(summ)} partitions {sbest[0]:.1f} (from {sbest[1]}):"
              f" gap {gap(mixture(sbest[2])):.4f}, after sklearn 3 steps "
              f"{out['summary_all_partitions_sk3']:.4f}")
        cands.sort(key=lambda c: -c[0])
        print(f"  {len(cands)} k-partitions of the k' components, ranked by the training "
              "rows' loglik (moment-matched): gap as is | after sklearn 3 / 100 steps")
        for i, (s, lab, run, _) in enumerate(cands[:top]):
            print(f"    #{i + 1} {lab} train {s + ldet:.4f}: {gap(mixture(run)):.4f} | "
                  f"{gap(sk_from(run, 3, Z)):.4f} / {gap(sk_from(run, 100, Z)):.4f}")
        out["best_partition"] = gap(mixture(cands[0][2]))
        out["best_partition_sk3"] = gap(sk_from(cands[0][2], 3, Z))
        ref = [r for t, r in cap["rel"] if t >= plan.reduce_at]
        print("  refining steps' released models, gap: "
              + " ".join(f"{gap(mixture(r)):.4f}" for r in ref))
        print("  sklearn from the free reduction, 1..8 steps:      "
              + " ".join(f"{gap(sk_from(red, s, Z)):.4f}" for s in range(1, len(ref) + 1)))
        out["refined_sk_same_steps"] = gap(sk_from(red, len(ref), Z))
    return out


def summary_obj(Nb: np.ndarray, kp: Any, fit: Any) -> float:
    """The summary log-likelihood of ``fit`` on the k' blobs (``_summary_em``'s objective)."""
    pi, mu, S = fit
    logp = es._blob_loglik(kp[1], kp[2], mu, S) + np.log(pi)
    top = logp.max(axis=1, keepdims=True)
    return float(Nb @ (top[:, 0] + np.log(np.exp(logp - top).sum(axis=1))))


PROBE: dict[str, Any] = {"partition": False, "off": set(), "quick": False}


def partition_reduction(run: Any, k: int, n: int, rng: Any) -> Any:
    """A probe (``--partition-reduction``, not the estimator's): the hard k-partition of the
    k' components (each group moment-matched) with the largest mean log-likelihood on a
    sample of 20,000 rows of the k' model (drawn from ``rng``: free)."""
    w, mu, S = run
    lab_s = rng.choice(len(w), size=HELD, p=w / w.sum())
    Y = mu[lab_s] + np.einsum("nij,nj->ni", np.linalg.cholesky(S)[lab_s],
                              rng.standard_normal((HELD, mu.shape[1])))
    best = max((mixture(merged(run, lab, k)).score(Y), tuple(lab)) for lab in
               partitions(len(w), k))
    pi, m, C = merged(run, np.array(best[1]), k)
    pi = np.maximum(pi, 1e-3)
    return pi / pi.sum(), m, es.repair_covariance(C)


def est_w(est: Any, W: np.ndarray, m0: np.ndarray) -> Any:
    """The fitted model in the whitened frame."""
    return (np.asarray(est.weights_), (np.asarray(est.means_) - m0) @ W.T,
            np.array([W @ C @ W.T for C in est.covariances_]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--no-noise", action="store_true")
    ap.add_argument("--no-noise-from-reduction", action="store_true")
    ap.add_argument("--refine-tail", type=float, default=None)
    ap.add_argument("--top", type=int, default=3)
    ap.add_argument("--partition-reduction", action="store_true",
                    help="probe: reduce by the best hard partition on a k'-model sample")
    ap.add_argument("--off", default="", help="refining guards off: " + ",".join(GUARDS))
    ap.add_argument("--quick", action="store_true",
                    help="only the fit, the reduction and the refining steps")
    ap.add_argument("--extra-steps", type=int, default=0,
                    help="probe: every plan's T (_n_steps) this many steps longer (with "
                         "REDUCE_STEPS = 8 + this: more refining steps, the same k' steps)")
    ap.add_argument("set", nargs="*", help="private_em constants, NAME=VALUE")
    a = ap.parse_args()
    np.set_printoptions(precision=3, suppress=True, linewidth=160)
    for kv in a.set:
        name, value = kv.split("=")
        setattr(pe, name, type(getattr(pe, name))(float(value)))
    if a.refine_tail is not None:
        pe.REFINE_TAIL = a.refine_tail
    PROBE["partition"] = a.partition_reduction
    PROBE["off"] = (set(GUARDS) - {"quiet"} if a.off == "all"
                    else {g for g in a.off.split(",") if g})
    assert PROBE["off"] <= set(GUARDS), a.off
    PROBE["quick"] = a.quick
    if a.extra_steps:
        n_steps = pe._n_steps

        def longer(*args: Any, **kw: Any) -> int:
            return int(n_steps(*args, **kw)) + a.extra_steps
        pe._n_steps = longer
    mode = "all" if a.no_noise else "refine" if a.no_noise_from_reduction else ""
    rows = [analyse(int(s), a.epsilon, mode, a.top) for s in a.seeds.split(",")]
    for key in rows[0]:
        print(f"{key}: " + " ".join(f"{r.get(key, float('nan')):.4f}" for r in rows))


if __name__ == "__main__":
    main()
