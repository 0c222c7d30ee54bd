"""Plots (optional: needs matplotlib, ``pip install 'privgauss[plot]'``).

* :func:`plot_models` — fitted Gaussians / mixtures as 1σ and 2σ ellipses of their 2-D marginal
  on two chosen coordinates, several models overlaid (private fit, non-private fit, truth).
* :func:`plot_experiment` — error against n for the reproductions in :mod:`privgauss.experiments`.

Plots of fitted models show DP outputs only. Data points are drawn **only** when the caller
passes ``data=`` explicitly (the CLI's ``--show-data``): a picture of private rows is not private,
so keep it local. Figures are built without pyplot's global state, so these functions are safe
inside notebooks and never change the user's matplotlib backend.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["ellipse", "model_components", "new_figure", "plot_experiment", "plot_models"]

_COLORS = ("C0", "C1", "C2", "C3", "C4", "C5", "C6", "C7")
_MAX_POINTS = 20_000  # data points drawn at most (an even stride over the rows)


def new_figure(figsize: tuple[float, float] = (6.0, 5.0)) -> Any:
    """A matplotlib ``Figure`` with an Agg canvas, outside pyplot's global state."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError(
            "plots need matplotlib: pip install 'privgauss[plot]' (or pip install matplotlib)"
        ) from None
    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig


def model_components(model: Any) -> list[tuple[float, np.ndarray, np.ndarray]]:
    """(weight, mean, covariance) of each component of ``model``.

    ``model``: a fitted ``PrivateGaussian`` / ``PrivateGaussianMixture`` (or any object with
    ``mean_``/``covariance_`` or ``weights_``/``means_``/``covariances_``, e.g. scikit-learn's
    ``GaussianMixture`` with full covariances), a model dict (``to_dict()`` or a loaded JSON),
    a ``(mean, cov)`` pair or a ``(weights, means, covs)`` triple.
    """
    if isinstance(model, Mapping):
        if "means" in model:
            model = (model["weights"], model["means"], model["covariances"])
        else:
            model = (model["mean"], model["covariance"])
    elif hasattr(model, "means_"):
        model = (model.weights_, model.means_, model.covariances_)
    elif hasattr(model, "mean_"):
        model = (model.mean_, model.covariance_)
    if len(model) == 2:
        mean = np.asarray(model[0], dtype=float)
        return [(1.0, mean, np.asarray(model[1], dtype=float).reshape(mean.size, mean.size))]
    w, M, C = (np.asarray(a, dtype=float) for a in model)
    if C.ndim != 3:
        raise ValueError("mixture covariances must have shape (k, d, d)")
    return [(float(w[j]), M[j], C[j]) for j in range(len(w))]


def ellipse(
    mean: np.ndarray, cov: np.ndarray, dims: tuple[int, int], n_std: float, num: int = 120
) -> np.ndarray:
    """Points (num, 2) on the ``n_std`` ellipse of the marginal on coordinates ``dims``."""
    i, j = dims
    m = np.asarray(mean, dtype=float)[[i, j]]
    c = np.asarray(cov, dtype=float)[np.ix_([i, j], [i, j])]
    vals, vecs = np.linalg.eigh((c + c.T) / 2)
    root = vecs * np.sqrt(np.clip(vals, 0.0, None))
    t = np.linspace(0.0, 2 * np.pi, num)
    return m + n_std * np.stack([np.cos(t), np.sin(t)], axis=1) @ root.T


def _check_dims(dims: Sequence[int], d: int) -> tuple[int, int]:
    if len(dims) != 2 or len(set(dims)) != 2 or not all(0 <= int(x) < d for x in dims):
        raise ValueError(f"dims must be two different coordinates in 0..{d - 1}, got {dims}")
    return int(dims[0]), int(dims[1])


def plot_models(
    models: Any,
    path: str | Path | None = None,
    *,
    dims: Sequence[int] = (0, 1),
    data: Any = None,
    ax: Any = None,
    title: str | None = None,
    feature_names: Sequence[str] | None = None,
) -> Any:
    """Draw models as 1σ/2σ ellipses of their marginal on coordinates ``dims``.

    ``models``: one model or a mapping label → model (see :func:`model_components`); the
    first is drawn solid, the others dashed. Mixture components are drawn with line width
    growing with their weight and their weight written at the centre. ``data`` (private rows)
    is drawn only when given. Saves to ``path`` if given and returns the matplotlib figure.
    """
    if not isinstance(models, Mapping):
        models = {"model": models}
    comps = {label: model_components(m) for label, m in models.items()}
    d = next(iter(comps.values()))[0][1].size
    if d < 2:
        raise ValueError("plots of fitted models need at least 2 features")
    i, j = _check_dims(dims, d)
    fig = ax.figure if ax is not None else new_figure((6.0, 5.0))
    ax = ax if ax is not None else fig.add_subplot()
    if data is not None:
        X = np.asarray(data, dtype=float)
        X = X[:: max(1, X.shape[0] // _MAX_POINTS)]
        ax.scatter(X[:, i], X[:, j], s=2, c="0.6", alpha=0.4, linewidths=0, label="data")
    for idx, (label, cs) in enumerate(comps.items()):
        color = _COLORS[idx % len(_COLORS)]
        style = "-" if idx == 0 else "--"
        for c, (w, mean, cov) in enumerate(cs):
            lw = 1.0 + 1.5 * w if len(cs) > 1 else 1.8
            for n_std, alpha in ((1.0, 1.0), (2.0, 0.5)):
                pts = ellipse(mean, cov, (i, j), n_std)
                ax.plot(pts[:, 0], pts[:, 1], style, color=color, lw=lw, alpha=alpha,
                        label=label if (c == 0 and n_std == 1.0) else None)
            ax.plot(mean[i], mean[j], "+", color=color, ms=8)
            if len(cs) > 1 and idx == 0:
                ax.annotate(f"{w:.2f}", (mean[i], mean[j]), xytext=(4, 4),
                            textcoords="offset points", fontsize=8, color=color)
    names = feature_names or [f"x{t}" for t in range(d)]
    ax.set_xlabel(str(names[i]))
    ax.set_ylabel(str(names[j]))
    ax.set_title(title or "fitted model: 1 and 2 sigma ellipses")
    ax.legend(fontsize=8, loc="best", framealpha=0.7)
    if path is not None:
        fig.tight_layout()
        fig.savefig(path, dpi=120, format="png")
    return fig


def plot_experiment(
    rows: Sequence[Mapping[str, Any]],
    path: str | Path | None = None,
    *,
    title: str = "",
    reference: Mapping[str, Mapping[int, float]] | None = None,
) -> Any:
    """Error against n, one line per method and one panel per ``k``, with trimmed-std bars.

    ``reference`` maps a label to published values {n: error}, drawn as black markers on every
    panel. Saves to ``path`` if given and returns the figure.
    """
    groups: dict[tuple[Any, Any], list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["k"], r["method"]), []).append(r)
    ks = sorted({r["k"] for r in rows}, key=str)
    fig = new_figure((5.5 * len(ks), 4.2))
    axes = fig.subplots(1, len(ks), squeeze=False)[0]
    for ax, k in zip(axes, ks, strict=True):
        for (kk, method), rs in groups.items():
            if kk != k:
                continue
            rs = sorted(rs, key=lambda r: r["n"])
            ax.errorbar([r["n"] for r in rs], [r["trimmed_mean"] for r in rs],
                        yerr=[r["trimmed_std"] for r in rs], marker="o", ms=3, capsize=2,
                        label=str(method))
        for (label, values), marker in zip((reference or {}).items(), "x+^sv", strict=False):
            ax.plot(list(values), list(values.values()), marker, color="k", ms=7, label=label)
        ax.set_xlabel("n (private rows)")
        ax.set_ylabel("error (10%-trimmed mean)")
        ax.set_yscale("log")
        ax.set_title(f"{title}, k = {k}" if isinstance(k, int) else f"{title} ({k})")
        ax.legend(fontsize=8)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120, format="png")
    return fig
