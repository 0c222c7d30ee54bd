"""Plots: ellipse geometry, 2-D projections, data drawn only on request, missing matplotlib."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from privgauss import experiments  # noqa: E402
from privgauss.plots import ellipse, model_components, plot_experiment, plot_models  # noqa: E402

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
