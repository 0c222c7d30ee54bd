"""Progress bars: off in library calls, on inside ``progress_bars()``, and the same release."""

from __future__ import annotations

import numpy as np

from privgauss import PrivateGaussianMixture
from privgauss.datasets import make_mixture
from privgauss.progress import bar, enabled, progress_bars


def test_bars_are_off_by_default_and_switch_on_in_the_context(capsys) -> None:
    assert not enabled()
    list(bar(range(3), "quiet"))
    assert capsys.readouterr().err == ""
    with progress_bars():
        assert enabled()
        list(bar(range(3), "loud"))
    assert not enabled()
    assert "loud" in capsys.readouterr().err


def test_a_fit_shows_its_chunk_bar_and_releases_the_same_values(capsys) -> None:
    mix = make_mixture(30_000, 2, 2, separation=6.0, random_state=3)

    def fit() -> PrivateGaussianMixture:
        return PrivateGaussianMixture(
            2, epsilon=5.0, delta=1e-6, method="sample-aggregate", random_state=4
        ).fit(mix.X)

    quiet = fit()
    assert capsys.readouterr().err == ""
    with progress_bars():
        loud = fit()
    assert "chunk fits" in capsys.readouterr().err
    np.testing.assert_array_equal(quiet.means_, loud.means_)
