"""The default list learner of the list-stable reduction: quantised EM fits (spec P1).

Each block fits a few non-private EM mixtures and rounds them to a public, randomly shifted grid
(means, covariances, weights), so that blocks drawn from the same distribution tend to produce the
same hashable keys; :func:`decode` maps a key back to a mixture. Non-private by design: it runs
on one block alone inside :func:`~.list_stable.list_stable_reduction`, whose (ε, δ) guarantee
holds for any list learner (replace-one neighbours, n public). A heuristic, not [B]'s learner.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

import numpy as np

from .selection import Mixture, mixture_logpdf, sample_mixture, yatracos_scores

# ------------------------------------------------------------------------------ P1 list learner

__all__ = [
    "decode",
    "dummy_mixture",
    "quantised_em_lists",
]


def _offsets(offset: Any, d: int) -> tuple[float, np.ndarray, np.ndarray]:
    """The public grid shift, one per coordinate (weight, d mean, d(d+1)/2 log-covariance
    entries); a scalar shifts every coordinate alike."""
    o = np.asarray(offset, dtype=np.float64)
    if o.ndim == 0:
        o = np.full(1 + d + d * (d + 1) // 2, float(o))
    return float(o[0]), o[1 : 1 + d], o[1 + d :]


def _quantise(f: Mixture, step: float, offset: Any, w_step: float) -> tuple:
    """Canonical key: components sorted, matrix log of Σ quantised, then the mean whitened by
    the *quantised* Σ, then the weight, on a grid shifted by the public ``offset``."""
    w, M, C = f
    ow, om, oS = _offsets(offset, M.shape[1])
    comps = []
    for j in range(len(w)):
        lam, V = np.linalg.eigh(C[j])
        logS = (V * np.log(np.maximum(lam, 1e-300))) @ V.T
        iu = np.triu_indices(len(lam))
        qS = tuple(np.floor(logS[iu] / step + oS).astype(int).tolist())
        Sq = _decode_cov(qS, len(lam), step, oS)
        lam_q, V_q = np.linalg.eigh(Sq)
        z = (V_q / np.sqrt(lam_q)) @ V_q.T @ M[j]  # Σ_q^{-1/2} μ
        qm = tuple(np.floor(z / step + om).astype(int).tolist())
        comps.append((int(np.floor(w[j] / w_step + ow)), qm, qS))
    return tuple(sorted(comps, key=lambda c: (c[1], c[2])))


def _decode_cov(qS: tuple, d: int, step: float, oS: Any) -> np.ndarray:
    iu = np.triu_indices(d)
    L = np.zeros((d, d))
    L[iu] = (np.asarray(qS) - oS + 0.5) * step
    L = L + np.triu(L, 1).T
    lam, V = np.linalg.eigh(L)
    return (V * np.exp(lam)) @ V.T


def decode(key: tuple, d: int, step: float, offset: Any, w_step: float) -> Mixture:
    """The mixture a quantised key stands for (cell centres); weights renormalised."""
    ow, om, oS = _offsets(offset, d)
    ws, Ms, Cs = [], [], []
    for qw, qm, qS in key:
        S = _decode_cov(qS, d, step, oS)
        lam, V = np.linalg.eigh(S)
        z = (np.asarray(qm) - om + 0.5) * step
        Ms.append((V * np.sqrt(lam)) @ V.T @ z)
        Cs.append(S)
        ws.append(max((qw - ow + 0.5) * w_step, 1e-3))
    w = np.asarray(ws)
    return w / w.sum(), np.asarray(Ms), np.asarray(Cs)


def dummy_mixture(k: int, d: int) -> Mixture:
    """[B]'s dummy g0: a fixed, data-independent mixture (equal weights, N(0, I) components)."""
    return np.full(k, 1.0 / k), np.zeros((k, d)), np.stack([np.eye(d)] * k)


def quantised_em_lists(
    block: np.ndarray,
    seed: int,
    *,
    k: int,
    step: float,
    offset: Any,
    w_step: float,
    restarts: int = 4,
    n_mc: int = 1000,
) -> list[tuple[tuple | str, float]]:
    """P1 list learner for one block: EM restarts on the first half, each fit quantised
    (:func:`_quantise`), plus the dummy g0 = "g0" (at most ``restarts`` + 1 items); the
    Yatracos minimum-distance winner on the second half, and every item's Monte Carlo TV
    distance to it. Uses its block and ``seed`` only (grid and seed are public)."""
    from sklearn.mixture import GaussianMixture

    rng = np.random.default_rng(seed)
    d = block.shape[1]
    half = block.shape[0] // 2
    keys: list[Any] = []
    for r in range(restarts):
        try:
            # a restart's warnings and errors depend on the block's rows: captured, dropped
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                gm = GaussianMixture(k, covariance_type="full", reg_covar=1e-6,
                                     init_params="k-means++", random_state=seed + r,
                                     ).fit(block[:half])
        except Exception:  # noqa: BLE001 - a failed restart is a per-block outcome: skip it
            continue
        key = _quantise((gm.weights_, gm.means_, gm.covariances_), step, offset, w_step)
        if key not in keys:
            keys.append(key)
    keys.append("g0")
    dec = functools.partial(decode, d=d, step=step, offset=offset, w_step=w_step)
    mixtures = [dummy_mixture(k, d) if key == "g0" else dec(key) for key in keys]
    win = int(np.argmax(yatracos_scores(mixtures, block[half:], rng, n_mc=n_mc)))
    S = sample_mixture(mixtures[win], n_mc, rng)
    lw = mixture_logpdf(mixtures[win], S)
    tvs = [float(np.mean(np.clip(1 - np.exp(mixture_logpdf(f, S) - lw), 0, None)))
           for f in mixtures]
    return list(zip(keys, tvs, strict=True))
