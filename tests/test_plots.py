"""Plots: ellipse geometry, 2-D projections, data drawn only on request, missing matplotlib."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from _helpers import all_axes, assert_readable_panels  # noqa: E402

from privgauss import experiments  # noqa: E402
from privgauss.plots import (  # noqa: E402
    FitGroup,
    ellipse,
    model_components,
    plot_experiment,
    plot_fits,
    plot_models,
)

MEAN = np.array([1.0, -2.0, 3.0])
COV = np.array([[4.0, 0.5, 1.0], [0.5, 1.0, 0.0], [1.0, 0.0, 9.0]])


@pytest.mark.parametrize("dims", [(0, 1), (0, 2), (2, 1)])
@pytest.mark.parametrize("n_std", [1.0, 2.0])
def test_ellipse_is_the_marginal_contour(dims: tuple[int, int], n_std: float) -> None:
    pts = ellipse(MEAN, COV, dims, n_std)
    idx = list(dims)
    C = COV[np.ix_(idx, idx)]
    diff = pts - MEAN[idx]
    q = np.einsum("ij,jk,ik->i", diff, np.linalg.inv(C), diff)
    assert np.allclose(q, n_std**2)
    # the contour's extent along a coordinate is n_std times that coordinate's std
    assert np.isclose(np.ptp(pts[:, 0]), 2 * n_std * np.sqrt(C[0, 0]), rtol=1e-3)


def test_model_components_accepts_every_form() -> None:
    w, M, C = [0.3, 0.7], np.zeros((2, 3)), np.stack([COV, COV])
    forms = [(MEAN, COV), {"mean": MEAN, "covariance": COV}, (w, M, C),
             {"weights": w, "means": M, "covariances": C}]
    sizes = [len(model_components(f)) for f in forms]
    assert sizes == [1, 1, 2, 2]
    assert model_components((w, M, C))[1][0] == 0.7


def test_plot_models_draws_data_only_when_given(tmp_path: Path) -> None:
    models = {"private": (MEAN, COV), "truth": (MEAN + 0.1, COV)}
    fig = plot_models(models, tmp_path / "a.png", dims=(0, 2), feature_names=["a", "b", "c"])
    ax = fig.axes[0]
    assert not ax.collections  # no scatter of rows
    assert ax.get_xlabel() == "a" and ax.get_ylabel() == "c"
    assert len(ax.lines) == 2 * (2 + 1)  # per model: 1 and 2 sigma contours and the centre
    X = np.random.default_rng(0).normal(size=(500, 3))
    fig = plot_models(models, tmp_path / "b.png", data=X)
    assert len(fig.axes[0].collections) == 1
    assert (tmp_path / "a.png").stat().st_size > 5000


def test_plot_models_rejects_bad_dims() -> None:
    with pytest.raises(ValueError, match="two different coordinates"):
        plot_models((MEAN, COV), dims=(1, 1))
    with pytest.raises(ValueError, match="two different coordinates"):
        plot_models((MEAN, COV), dims=(0, 3))


def _mixture(shift: float) -> tuple[list[float], np.ndarray, np.ndarray]:
    # two small components far apart (as in the demo): one view of both would show dots
    rot = np.array([[2.0, 0.8], [0.8, 1.0]])
    return [0.4, 0.6], np.array([[0.0, 0.0], [40.0, -30.0]]) + shift, np.stack([rot, rot.T])


def test_plot_fits_one_panel_per_fit_equal_axes_and_one_legend_outside(tmp_path: Path) -> None:
    gauss = FitGroup(
        "Gaussian",
        {f"method {m}\nmean err 0.{m}": (MEAN + 0.1 * m, COV * (1 + 0.1 * m)) for m in range(3)},
        truth=(MEAN, COV),
        reference=(MEAN - 0.05, COV),
        dims=(0, 2),
    )
    mix = FitGroup("Mixture", {"a": _mixture(0.3), "b": _mixture(-0.2)}, truth=_mixture(0.0),
                   reference=_mixture(0.1), zoom=True)
    fig = plot_fits([gauss, mix], tmp_path / "fits.png")
    assert_readable_panels(fig)
    gauss_sub, mix_sub = fig.subfigs
    titles = [ax.get_title() for ax in all_axes(gauss_sub)]
    assert titles == list(gauss.fits)  # one panel per method, titled with it and its error
    panels = mix_sub.subfigs  # one panel per method, one zoomed view per true component
    assert [p.get_suptitle() for p in panels[:2]] == ["a", "b"]
    assert [len(p.axes) for p in panels[:2]] == [2, 2]
    view = panels[0].axes[1]  # centred on the second true component, not on the whole mixture
    assert view.get_xlim()[0] < 40.0 < view.get_xlim()[1] and np.ptp(view.get_xlim()) < 20
    # truth black and dashed, the fit coloured and solid, the non-private fit grey and dotted
    styles = {(str(ln.get_color()), ln.get_linestyle()) for ln in all_axes(gauss_sub)[0].lines}
    assert {("black", "--"), ("C0", "-"), ("0.55", ":")} <= styles
    assert [t.get_text() for t in fig.legends[0].get_texts()] == [
        "private fit", "truth", "non-private fit"]
    assert (tmp_path / "fits.png").stat().st_size > 10_000


def test_plot_fits_needs_a_fit_and_zoom_needs_the_truth() -> None:
    with pytest.raises(ValueError, match="at least one"):
        plot_fits([FitGroup("empty", {})])
    with pytest.raises(ValueError, match="truth"):
        plot_fits(FitGroup("m", {"a": _mixture(0.0)}, zoom=True))


def test_plot_experiment_draws_published_references(tmp_path: Path) -> None:
    rows = [{"k": "s", "method": m, "n": n, "trimmed_mean": v * 1000 / n, "trimmed_std": 0.01}
            for m, v in (("ours", 0.3), ("non-private", 0.2)) for n in (3000, 8000)]
    ref = experiments.REFERENCES["coinpress-covariance"]
    fig = plot_experiment(rows, tmp_path / "e.png", title="t", reference=ref)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert set(ref) <= set(labels) and {"ours", "non-private"} <= set(labels)
    assert (tmp_path / "e.png").stat().st_size > 5000


def test_missing_matplotlib_gives_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match=r"pip install 'privgauss\[plot\]'"):
        plot_models((MEAN, COV))
