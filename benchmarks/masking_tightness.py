"""How tight the masking radii are: for each (ε₀, δ₀, η), the smallest multiple 1 + x of the
claimed radius at which the exact δ(ε₀) of a worst-case-shaped neighbouring pair exceeds δ₀
(weight: analytic Gaussian; mean and d = 1 covariance: exact one-dimensional privacy-loss
integrals from ``tests/test_masking_tight.py``), and the radius as a multiple of the thesis's.

    python benchmarks/masking_tightness.py      # writes benchmarks/results/masking_tightness.md
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from scipy.optimize import brentq

from privgauss.calibration import analytic_delta

HERE = Path(__file__).resolve().parent


def main() -> None:
    spec = importlib.util.spec_from_file_location(
        "tmt", HERE.parent / "tests" / "test_masking_tight.py"
    )
    assert spec is not None and spec.loader is not None
    t = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(t)
    lines = [
        "# Masking radii: how far beyond the claimed radius privacy first fails",
        "",
        "Command: `python benchmarks/masking_tightness.py`",
        "",
        "x: smallest relative excess of the radius at which the exact δ(ε₀) of the worst "
        "one-dimensional pair exceeds δ₀ (0 would be exact). γ: the claimed radius "
        "(method=\"best\") and its ratio to the thesis formula's.",
        "",
        "| ε₀ | δ₀ | η | weight x | mean γ (vs thesis) | mean x | cov d=1 γ (vs thesis) | cov x |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for eps, delta, eta in [*t.CASES, (1.0, 0.05, 0.2), (1.0, 0.05, 0.3)]:
        gw = t.weight_radius(eta, eps, delta)
        xw = brentq(lambda c: analytic_delta(eta, c * gw, eps) - delta, 1.0, 2.0,  # noqa: B023
                    xtol=1e-15) - 1
        gm = t.mean_radius(eta, eps, delta)
        tm = t.mean_radius(eta, eps, delta, method="thesis")
        xm = brentq(lambda c: t._worst_mean_delta(c * gm, eta, eps) - delta,  # noqa: B023
                    1.0, 3.0, xtol=1e-5) - 1
        gc = t.cov_radius(eta, 1, eps, delta)
        tc = t.cov_radius(eta, 1, eps, delta, method="thesis")
        xc = brentq(lambda c: t._worst_cov_delta(c * gc, eta, eps) - delta,  # noqa: B023
                    1.0, 3.0, xtol=1e-5) - 1
        lines.append(f"| {eps:g} | {delta:g} | {eta:g} | {xw:.1e} | {gm:.3g} ({gm / tm:.2f}×) "
                     f"| {xm:.3f} | {gc:.3g} ({gc / tc:.1f}×) | {xc:.3f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    (HERE / "results" / "masking_tightness.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    from privgauss.progress import on_terminal

    with on_terminal():  # a status line naming the current release, on a terminal
        main()
