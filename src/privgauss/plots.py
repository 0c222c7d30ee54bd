"""Plots (optional: needs matplotlib, ``pip install 'privgauss[plot]'``).

* :func:`plot_models` — fitted Gaussians / mixtures as 1σ and 2σ ellipses of their 2-D marginal
  on two chosen coordinates, several models overlaid (private fit, non-private fit, truth).
* :func:`plot_fits` — one panel per fitted model (e.g. per method), each over the truth and a
  non-private fit, with equal axes and one legend below the panels (``privgauss demo``).
* :func:`plot_experiment` — error against n for the reproductions in :mod:`privgauss.experiments`.

Plots of fitted models show DP outputs only. Data points are drawn **only** when the caller
passes ``data=`` explicitly (the CLI's ``--show-data``): a picture of private rows is not private,
so keep it local. Figures are built without pyplot's global state, so these functions are safe
inside notebooks and never change the user's matplotlib backend.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "FitGroup",
    "ellipse",
    "model_components",
    "new_figure",
    "plot_experiment",
    "plot_fits",
    "plot_models",
]

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


# line styles of :func:`plot_fits`: the truth on top (dashes let the fit show through), the
# private fit in colour underneath it, the non-private fit grey and dotted at the bottom
_TRUTH = {"color": "black", "ls": (0, (4, 3)), "lw": 1.3, "zorder": 4}
_FIT = {"color": "C0", "ls": "-", "lw": 2.2, "zorder": 3}
_REFERENCE = {"color": "0.55", "ls": ":", "lw": 1.8, "zorder": 2}
_PANEL_SIZE = (3.7, 3.5)  # inches per panel of plot_fits


@dataclass(frozen=True)
class FitGroup:
    """A row of panels for :func:`plot_fits`.

    ``fits`` maps a panel title (e.g. the method and its error; may hold newlines) to a fitted
    model (any form :func:`model_components` accepts); every panel also shows ``truth`` and
    ``reference`` (a non-private fit, say) when given. ``title`` heads the row. With ``zoom``
    (it needs ``truth``), a panel holds one view per true component, centred on it, instead of
    one view of the whole mixture: for components far apart compared with their size.
    """

    title: str
    fits: Mapping[str, Any]
    truth: Any = None
    reference: Any = None
    dims: tuple[int, int] = (0, 1)
    feature_names: Sequence[str] | None = None
    zoom: bool = False


def _draw_components(ax: Any, model: Any, dims: tuple[int, int], style: Mapping[str, Any]) -> None:
    """1σ (full) and 2σ (faint) ellipses of every component of ``model``, and its mean."""
    i, j = dims
    for _, mean, cov in model_components(model):
        for n_std, alpha in ((1.0, 1.0), (2.0, 0.45)):
            pts = ellipse(mean, cov, dims, n_std)
            ax.plot(pts[:, 0], pts[:, 1], alpha=alpha, **style)
        ax.plot(mean[i], mean[j], marker="+", ms=8, mew=1.5, color=style["color"],
                zorder=style["zorder"], ls="none")


def _zoom_box(center: Any, models: Sequence[Any], dims: tuple[int, int]) -> tuple[float, ...]:
    """Square limits around the true component ``center`` (weight, mean, cov) holding its 2σ
    ellipse and the 2σ ellipse of the nearest component of each of ``models``."""
    i, j = dims
    pts = [ellipse(center[1], center[2], dims, 2.0)]
    for model in models:
        comps = model_components(model)
        near = min(comps, key=lambda c: float(np.hypot(*(c[1][[i, j]] - center[1][[i, j]]))))
        pts.append(ellipse(near[1], near[2], dims, 2.0))
    allp = np.concatenate(pts)
    lo, hi = allp.min(axis=0), allp.max(axis=0)
    mid, half = (lo + hi) / 2, 0.55 * float(np.max(hi - lo))
    return mid[0] - half, mid[0] + half, mid[1] - half, mid[1] + half


def _style_axes(ax: Any, names: Sequence[str], dims: tuple[int, int], title: str, size: int
                ) -> None:
    from matplotlib.ticker import MaxNLocator

    ax.set_xlabel(str(names[dims[0]]), fontsize=8)
    ax.set_ylabel(str(names[dims[1]]), fontsize=8, labelpad=1)
    ax.tick_params(labelsize=7)
    ax.xaxis.set_major_locator(MaxNLocator(4))
    ax.yaxis.set_major_locator(MaxNLocator(4))
    ax.set_title(title, fontsize=size)
    ax.grid(True, lw=0.4, alpha=0.4)


def _legend_handles(reference_label: str = "non-private fit") -> tuple[list[Any], list[str]]:
    """Handles and labels of the legend :func:`plot_fits` draws below its panels."""
    from matplotlib.lines import Line2D

    def line(style: Mapping[str, Any]) -> Any:
        return Line2D([], [], **{k: v for k, v in style.items() if k != "zorder"})

    return (
        [line(_FIT), line(_TRUTH), line(_REFERENCE)],
        ["private fit", "truth", reference_label],
    )


def plot_fits(
    groups: FitGroup | Sequence[FitGroup],
    path: str | Path | None = None,
    *,
    ncols: int | None = None,
    reference_label: str = "non-private fit",
    note: str = "1σ (full) and 2σ (faint) ellipses of the marginal; + marks the means",
) -> Any:
    """One panel per fitted model, one row of panels per :class:`FitGroup`.

    Each panel shows the fit's 1σ/2σ ellipses (coloured, solid) under the truth's (black,
    dashed) and over the reference fit's (grey, dotted), with equal axes and the panel's title
    (the key in ``FitGroup.fits``). One legend for all panels sits below them, outside every
    panel's data area. Groups without fits are left out. Saves to ``path`` if given and returns
    the matplotlib figure.
    """
    if isinstance(groups, FitGroup):
        groups = [groups]
    groups = [g for g in groups if g.fits]
    if not groups:
        raise ValueError("plot_fits needs at least one fitted model")
    if any(g.zoom and g.truth is None for g in groups):
        raise ValueError("FitGroup(zoom=True) needs the truth to centre its views on")
    width = ncols or max(len(g.fits) for g in groups)
    n_rows = [-(-len(g.fits) // width) for g in groups]
    # a zoomed panel holds one square view per true component side by side: a lower row
    heights = [
        r * (min(_PANEL_SIZE[1], _PANEL_SIZE[0] / len(model_components(g.truth)) + 0.7)
             if g.zoom else _PANEL_SIZE[1])
        for r, g in zip(n_rows, groups, strict=True)
    ]
    fig = new_figure((_PANEL_SIZE[0] * width + 0.4, sum(heights) + 0.8))
    fig.set_layout_engine("constrained")
    rows = fig.subfigures(len(groups), 1, squeeze=False, height_ratios=heights)[:, 0]
    for sub, group, h in zip(rows, groups, n_rows, strict=True):
        cells = sub.subfigures(h, width, squeeze=False).ravel()
        for cell, (label, model) in zip(cells, group.fits.items(), strict=False):
            d = model_components(model)[0][1].size
            dims = _check_dims(group.dims, d)
            names = group.feature_names or [f"x{t}" for t in range(d)]
            others = [m for m in (group.reference, model) if m is not None]
            views: list[tuple[Any, str, tuple[float, ...] | None]]  # axes, title, limits
            if group.zoom:
                truth = model_components(group.truth)
                axes = cell.subplots(1, len(truth), squeeze=False)[0]
                cell.suptitle(label, fontsize=9)
                views = [(ax, f"component {c + 1}, w={t[0]:.2f}", _zoom_box(t, others, dims))
                         for c, (ax, t) in enumerate(zip(axes, truth, strict=True))]
            else:
                ax = cell.subplots()
                views = [(ax, label, None)]
            for ax, title, box in views:
                if group.reference is not None:
                    _draw_components(ax, group.reference, dims, _REFERENCE)
                _draw_components(ax, model, dims, _FIT)
                if group.truth is not None:
                    _draw_components(ax, group.truth, dims, _TRUTH)
                _style_axes(ax, names, dims, title, 8 if box else 9)
                if box is not None:
                    ax.set_xlim(box[0], box[1])
                    ax.set_ylim(box[2], box[3])
                    ax.set_aspect("equal", adjustable="box")
                else:
                    ax.set_aspect("equal", adjustable="datalim")
        for cell in cells[len(group.fits):]:
            cell.set_visible(False)
        sub.suptitle(group.title, fontsize=11, fontweight="bold")
    handles, labels = _legend_handles(reference_label)
    fig.legend(handles, labels, loc="outside lower center", ncols=len(handles), fontsize=9,
               title=note, title_fontsize=8, frameon=False)
    if path is not None:
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
