"""Progress bars: off in library calls, on inside ``progress_bars()``, and the same release."""

from __future__ import annotations

import re

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


def test_the_status_line_names_each_release_and_changes_nothing(capsys, monkeypatch) -> None:
    """Inside progress_bars() a status line on stderr counts the releases and names the step of
    the last one (the ledger's public metadata); outside it, or before STATUS_DELAY seconds,
    nothing is shown; the fit's values and ledger are the same either way."""
    import privgauss.progress as progress
    from privgauss import PrivateGaussian

    X = np.random.default_rng(0).normal(size=(2000, 3))

    def fit() -> PrivateGaussian:
        return PrivateGaussian(rho=0.5, method="coinpress", mean_bound=100.0,
                               cov_bounds=(0.1, 10.0), random_state=1).fit(X)

    quiet = fit()
    assert capsys.readouterr().err == ""
    with progress_bars():  # the default delay: this fit is far shorter, so it stays silent
        fit()
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(progress, "STATUS_DELAY", 0.0)
    monkeypatch.setattr(progress, "STATUS_REFRESH", 0.0)  # draw every release
    with progress_bars():
        loud = fit()
    err = capsys.readouterr().err
    steps = [e.step for e in loud.ledger_]
    # each redraw shows "count [elapsed, step of that release]"
    shown = re.findall(r"privacy releases: (\d+) \[[^,\]]*, ([^\]]+)\]", err)
    assert len(shown) == len(steps), err
    for count, step in shown:
        assert steps[int(count) - 1] == step, (count, step)
    np.testing.assert_array_equal(quiet.mean_, loud.mean_)
    np.testing.assert_array_equal(quiet.covariance_, loud.covariance_)
    assert steps == [e.step for e in quiet.ledger_]
    with progress_bars(False):
        fit()
    assert capsys.readouterr().err == ""


def test_on_terminal_is_off_when_stderr_is_not_a_terminal(monkeypatch) -> None:
    """The command line and the benchmarks show progress only on a terminal."""
    import io
    import sys

    from privgauss.progress import on_terminal

    monkeypatch.setattr(sys, "stderr", io.StringIO())  # redirected: no progress
    with on_terminal():
        assert not enabled()

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stderr", Terminal())
    with on_terminal():
        assert enabled()
    assert not enabled()
