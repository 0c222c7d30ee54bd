"""``method="auto"`` for mixtures (issue 27): private EM unless ``separation=`` states a
separation at which a paper learner was validated; the preview of that choice before anything
is spent (``pg.mixture_plan``, ``privgauss requirements mixture auto``) agrees with what a fit
does; refusals name what really lowers the n needed; ``fit-mixture`` takes the prior flags its
messages suggest."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import privgauss as pg
from privgauss import methods
from privgauss.cli import main
from privgauss.datasets import make_mixture

EPS, DELTA = 5.0, 1e-6


def _cli(*args: object):  # noqa: ANN202
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def mix3():
    """Separation 3, n = 40 000, d = 2, k = 2: kssu's and sample-aggregate's n both met."""
    return make_mixture(40_000, 2, 2, separation=3.0, random_state=11)


# ------------------------------------------------------------------------------- the choice


def test_auto_is_em_without_a_separation_even_where_paper_learners_meet_their_n(mix3) -> None:
    n, d = mix3.X.shape
    facts = methods.Facts("mixture", pg.ApproxDP(EPS, DELTA), n, d, k=2)
    for name in ("kssu", "sample-aggregate"):  # both could run: n meets their requirement
        assert methods.requirements("mixture", name, facts).ok
    m = pg.PrivateGaussianMixture(2, epsilon=EPS, delta=DELTA, random_state=0).fit(mix3.X)
    assert m.method_ == "em"
    assert "no separation= stated" in m.method_reason_
    for name in ("kssu", "sample-aggregate", "public-light", "public-heavy"):
        assert f"{name!r} at >= " in m.method_reason_  # it says where each was validated
    err = pg.metrics.mixture_error(m.weights_, m.means_, m.covariances_, mix3.weights,
                                   mix3.means, mix3.covariances)
    assert err.max_component_tv <= 0.1 and err.weight_error <= 0.02
    # public rows alone do not make auto run a public learner either
    plan = pg.mixture_plan(60_000, 10, 3, n_public=500, epsilon=1.0, delta=DELTA,
                           min_weight=0.2)
    assert plan.method == "em" and "public rows set the frame" in plan.reason


def test_validated_separations_are_the_measured_ones() -> None:
    from privgauss.mixture.kssu_sample_size import VALIDATED_SEPARATION

    table = methods.table("mixture")
    assert table["kssu"].min_separation == VALIDATED_SEPARATION == 5.0
    assert table["sample-aggregate"].min_separation == 3.0
    assert table["public-light"].min_separation == table["public-heavy"].min_separation == 6.0
    # the default assumes no separation; the reductions and the warm-up state none: by name only
    assert table["em"].min_separation == 0.0
    plan = pg.mixture_plan(10**6, 2, 2, epsilon=EPS, delta=DELTA, separation=1e3)
    for name in ("pegme", "ppe", "agnostic"):
        assert plan.considered[name].startswith("only when asked for by name")


@pytest.mark.parametrize("separation, n, n_public, expected", [
    (5.0, 20_000, 0, "kssu"),  # exactly kssu's validated separation
    (4.99, 20_000, 0, "em"),  # just below it; sample-aggregate (>= 3) needs more rows here
    (3.0, 40_000, 0, "sample-aggregate"),  # its validated separation; kssu's is 5
    (6.0, 40_000, 0, "kssu"),  # both validated: the most room in n
    (2.0, 40_000, 0, "em"),  # no paper learner validated this low
    (6.0, 20_000, 40, "public-heavy"),  # a public learner validated at 6, with its rows
    (5.0, 20_000, 40, "kssu"),  # the public learners were validated at 6 only
])
def test_a_stated_validated_separation_selects_that_learner(separation: float, n: int,
                                                           n_public: int, expected: str) -> None:
    plan = pg.mixture_plan(n, 2, 2, n_public=n_public, epsilon=EPS, delta=DELTA,
                           min_weight=0.3, separation=separation)
    assert plan.ok and plan.method == expected, plan
    spec = methods.get("mixture", expected)
    if expected == "em":
        assert "no separation assumed" in plan.reason
        return
    assert spec.min_separation <= separation
    assert f"the stated separation {separation:g}" in plan.reason
    assert plan.requirements.ok and plan.considered["em"].startswith("not run")


def test_a_stated_separation_fits_that_learner_and_preview_agrees(mix3) -> None:
    kw = dict(epsilon=EPS, delta=DELTA, separation=3.0, random_state=5)
    m = pg.PrivateGaussianMixture(2, **kw).fit(mix3.X)
    assert m.method_ == "sample-aggregate"
    plan = pg.mixture_plan(*mix3.X.shape, **m.get_params())
    assert (plan.method, plan.reason) == (m.method_, m.method_reason_)
    err = pg.metrics.mixture_error(m.weights_, m.means_, m.covariances_, mix3.weights,
                                   mix3.means, mix3.covariances)
    assert err.max_component_tv <= 0.1 and err.weight_error <= 0.02


# ------------------------------------------------------------------------------- the preview


def _case(name: str):  # noqa: ANN202
    """(estimator, X, public rows) of one configuration of the preview/fit agreement."""
    if name == "eps-no-separation":
        mix = make_mixture(6000, 2, 2, separation=4.0, random_state=1)
        return pg.PrivateGaussianMixture(2, epsilon=1.0, delta=DELTA), mix.X, None
    if name == "rho-public-rows":
        mix = make_mixture(6008, 2, 2, separation=4.0, random_state=2)
        return pg.PrivateGaussianMixture(2, rho=0.5), mix.X[8:], mix.X[:8]
    if name == "rho-prior":
        mix = make_mixture(3000, 2, 2, separation=4.0, random_state=3)
        return (pg.PrivateGaussianMixture(2, rho=0.5, mean_bound=20.0, cov_bounds=(0.1, 10.0)),
                mix.X, None)
    if name == "public-heavy-separated":
        mix = make_mixture(20_040, 2, 2, min_weight=0.3, separation=6.0, random_state=4)
        return (pg.PrivateGaussianMixture(2, epsilon=2.0, delta=DELTA, min_weight=0.3,
                                          separation=6.0), mix.X[40:], mix.X[:40])
    if name == "kssu-separated":
        mix = make_mixture(20_000, 2, 2, separation=5.0, random_state=12)
        return (pg.PrivateGaussianMixture(2, epsilon=EPS, delta=DELTA, separation=5.0,
                                          method_params={"max_points": 3000}), mix.X, None)
    if name == "too-few-rows":
        mix = make_mixture(1000, 2, 3, separation=4.0, random_state=5)
        return pg.PrivateGaussianMixture(2, epsilon=1.0, delta=DELTA), mix.X, None
    if name == "rho-without-public-rows":
        mix = make_mixture(6000, 2, 2, separation=4.0, random_state=6)
        return pg.PrivateGaussianMixture(2, rho=0.5), mix.X, None
    if name == "pure-budget":
        mix = make_mixture(6000, 2, 2, separation=4.0, random_state=6)
        return pg.PrivateGaussianMixture(2, epsilon=1.0), mix.X, None
    raise AssertionError(name)


@pytest.mark.parametrize("case", [
    "eps-no-separation", "rho-public-rows", "rho-prior", "public-heavy-separated",
    "kssu-separated", "too-few-rows", "rho-without-public-rows", "pure-budget",
])
def test_the_preview_is_what_the_fit_does(case: str) -> None:
    est, X, P = _case(case)
    est.set_params(random_state=0)
    n, d = X.shape
    plan = pg.mixture_plan(n, d, n_public=0 if P is None else len(P), **est.get_params())
    assert plan.facts.n == n and plan.facts.d == d
    if not plan.ok:
        acct = pg.Accountant(est._budget())
        with pytest.raises(type(plan.error)) as info:
            est.set_params(accountant=acct).fit(X, public_X=P)
        assert str(info.value) == plan.reason  # the same refusal, word for word
        assert acct.ledger == []  # before spending anything
        assert case in ("too-few-rows", "rho-without-public-rows", "pure-budget")
        assert plan.too_few_rows == (case == "too-few-rows")
        return
    est.fit(X, public_X=P)
    assert (est.method_, est.method_reason_) == (plan.method, plan.reason)
    expected = {"public-heavy-separated": "public-heavy", "kssu-separated": "kssu"}
    assert plan.method == expected.get(case, "em")


def test_the_preview_reads_only_public_facts_and_spends_nothing() -> None:
    acct = pg.Accountant(pg.ApproxDP(1.0, DELTA))
    plan = pg.mixture_plan(10**5, 3, 3, accountant=acct)  # the budget from the accountant
    assert plan.method == "em" and plan.facts.budget == pg.ApproxDP(1.0, DELTA)
    assert acct.spent is None and acct.ledger == []
    assert str(plan).startswith("runs 'em': ")
    requested = pg.mixture_plan(10**5, 3, 3, epsilon=1.0, delta=DELTA, method="kssu")
    assert not requested.ok and requested.too_few_rows and "kssu" in requested.reason


# ------------------------------------------------------------------------------- streaming


def test_a_dask_array_beyond_max_memory_bytes_gets_em_which_streams() -> None:
    da = pytest.importorskip("dask.array")
    mix = make_mixture(30_000, 2, 2, separation=6.0, random_state=3)
    X = da.from_array(mix.X, chunks=(3000, 2))
    for separation in (None, 6.0):  # 6: kssu and sample-aggregate validated, and n meets both
        acct = pg.Accountant(pg.ApproxDP(EPS, DELTA))
        m = pg.PrivateGaussianMixture(2, epsilon=EPS, delta=DELTA, separation=separation,
                                      max_memory_bytes=1000, accountant=acct, random_state=0)
        m.fit(X)  # before: auto picked a paper learner, which refused the dask array
        plan = pg.mixture_plan(*X.shape, **m.get_params())
        assert m.method_ == plan.method == "em" and m.method_reason_ == plan.reason
        if separation is not None:
            assert "max_memory_bytes" in m.method_reason_
            for name in ("kssu", "sample-aggregate"):
                assert "holds the rows in memory" in plan.considered[name]
        # the whole budget, less what runs that froze or stopped early left (FREEZE_PLAIN)
        assert 0.5 * EPS < acct.spent.epsilon <= EPS * (1 + 1e-9)
        err = pg.metrics.mixture_error(m.weights_, m.means_, m.covariances_, mix.weights,
                                       mix.means, mix.covariances)
        assert err.max_component_tv <= 0.1


# ------------------------------------------------------------------------------- messages


def test_refusals_name_what_lowers_the_n_needed() -> None:
    X = make_mixture(1000, 2, 3, separation=4.0, random_state=5).X
    with pytest.raises(pg.InvalidDataError) as info:
        pg.PrivateGaussianMixture(2, epsilon=1.0, delta=DELTA).fit(X)
    text = str(info.value)
    assert "method='em' needs about n >=" in text
    for remedy in ("a larger budget", "at least 4 public rows (public_X=)",
                   "a prior (mean_bound= and cov_bounds="):
        assert remedy in text
    assert "fewer components" not in text and "min_weight" not in text
    # each named remedy does lower em's n here (its own formula), min_weight does not
    facts = methods.Facts("mixture", pg.ApproxDP(1.0, DELTA), 1000, 3, k=2)
    base = methods.requirements("mixture", "em", facts).n_needed
    for change in ({"budget": pg.ApproxDP(4.0, DELTA)}, {"n_public": 4},
                   {"mean_bound": 1.0, "cov_bounds": (1.0, 1.0)}):
        other = methods.Facts(**{**facts.__dict__, **change})
        assert methods.requirements("mixture", "em", other).n_needed < base
    lighter = methods.Facts(**{**facts.__dict__, "min_weight": 0.1})  # lighter: more rows
    assert methods.requirements("mixture", "em", lighter).n_needed >= base


def test_a_refused_paper_learner_names_min_weight_only_where_it_matters_and_points_to_em() -> None:
    X = make_mixture(20_000, 2, 3, separation=6.0, random_state=7).X
    with pytest.raises(pg.InvalidDataError) as info:  # kssu's n grows as min_weight shrinks
        pg.PrivateGaussianMixture(3, epsilon=1.0, delta=DELTA, method="kssu",
                                  min_weight=0.2).fit(X)
    text = str(info.value)
    assert "a larger budget" in text and "a larger min_weight= if every component's" in text
    assert "public rows" not in text and "prior" not in text  # kssu uses neither
    assert "or use method='em' (no separation assumed)" in text
    with pytest.raises(pg.InvalidDataError) as info:  # min_weight at 1/k: nothing to raise
        pg.PrivateGaussianMixture(3, epsilon=1.0, delta=DELTA, method="kssu").fit(X)
    assert "min_weight" not in str(info.value) and "fewer components" not in str(info.value)


# ------------------------------------------------------------------------------- command line


def _csv(path: Path, X: np.ndarray) -> Path:
    np.savetxt(path, X, delimiter=",", header="u,v", comments="")
    return path


def test_fit_mixture_takes_the_prior_flags(tmp_path: Path) -> None:
    mix = make_mixture(3000, 2, 2, separation=6.0, random_state=8)
    data = _csv(tmp_path / "mix.csv", mix.X)
    out = tmp_path / "m.json"
    # a rho budget without public rows works with a prior; a 1.0 ball (the means are farther
    # out) shows the prior reached the estimator: every released mean is projected into it
    res = _cli("fit-mixture", data, "-k", 2, "--rho", 0.5, "--mean-bound", 1.0,
               "--cov-bounds", 0.01, 100, "--seed", 0, "--out", out)
    assert res.exit_code == 0, res.output
    model = json.loads(out.read_text())
    assert model["method"] == "em" and "prior" in model["method_reason"]
    assert np.all(np.linalg.norm(model["means"], axis=1) <= 1.0)
    assert max(np.linalg.norm(mix.means, axis=1)) > 1.5
    res = _cli("fit-mixture", data, "-k", 2, "--rho", 0.5, "--mean-bound", 1.0)
    assert res.exit_code == 2 and "--cov-bounds" in res.output


def test_fit_mixture_help_states_which_budgets_work() -> None:
    text = " ".join(_cli("fit-mixture", "--help").output.split())
    assert "Needs an (epsilon, delta) budget" not in text
    assert "--rho (zCDP) works for em, public-light and public-heavy" in text
    assert "--mean-bound" in text and "--cov-bounds" in text
    assert "requirements mixture auto" in text


def test_fit_mixture_refusal_names_the_flags_that_lower_the_n(tmp_path: Path) -> None:
    data = _csv(tmp_path / "small.csv", make_mixture(900, 2, 2, random_state=9).X)
    res = _cli("fit-mixture", data, "-k", 2, "--epsilon", 1, "--delta", 1e-6)
    assert res.exit_code == 2, res.output
    text = " ".join(res.output.split())
    assert "a larger budget" in text and "public rows (--public)" in text
    assert "--mean-bound and --cov-bounds" in text and "fewer components" not in text


def test_requirements_mixture_auto_previews_the_choice() -> None:
    base = ("requirements", "mixture", "auto", "--n", 40_000, "--d", 2, "--k", 2,
            "--epsilon", EPS, "--delta", DELTA)
    res = _cli(*base)
    assert res.exit_code == 0, res.output
    plan = pg.mixture_plan(40_000, 2, 2, epsilon=EPS, delta=DELTA)
    assert "auto runs: em" in res.output and f"{plan.requirements.n_needed:.3g}" in res.output
    assert "kssu" in res.output and "no --separation stated" in res.output
    res = _cli(*base, "--separation", 6)
    assert res.exit_code == 0 and "auto runs: kssu" in res.output, res.output
    res = _cli(*base, "--separation", 6, "--n-public", 40, "--min-weight", 0.3)
    assert "auto runs: public-heavy" in res.output, res.output
    small = _cli("requirements", "mixture", "auto", "--n", 1000, "--d", 3, "--k", 2,
                 "--epsilon", 1, "--delta", 1e-6)
    assert small.exit_code == 1 and "auto refuses" in small.output and "too few" in small.output
    prior = _cli("requirements", "mixture", "auto", "--n", 1000, "--d", 3, "--k", 2,
                 "--rho", 1, "--mean-bound", 10, "--cov-bounds", 0.1, 10)
    assert prior.exit_code == 0 and "auto runs: em" in prior.output, prior.output
    rho = _cli("requirements", "mixture", "auto", "--n", 1000, "--d", 3, "--k", 2, "--rho", 1)
    assert rho.exit_code == 2 and "--public" in rho.output and "--mean-bound" in rho.output
    em = _cli("requirements", "mixture", "em", "--n", 5000, "--d", 3, "--k", 2, "--rho", 0.5,
              "--n-public", 4)
    assert em.exit_code == 0 and "is enough" in em.output, em.output


# ------------------------------------------------------------------ the public-row fall-back


def test_the_fall_back_is_settled_on_the_public_rows_before_the_private_section() -> None:
    """A public learner that cannot use the public rows (overlapping components: public-light's
    split and public-heavy's clustering find fewer than k clusters) is replaced under ``auto``
    by the registry's fall-back, from the public rows alone (``methods.settle_public``, no
    private rows passed); asked by name it is refused there, before the private section; rows
    it can use keep it. The estimator catches nothing inside the private section."""
    from privgauss.exceptions import InvalidDataError

    mix = make_mixture(40_040, 3, 2, separation=1.0, random_state=5)
    P = mix.X[:40]
    facts = methods.Facts("mixture", pg.ApproxDP(1.0, DELTA), 40_000, 2, k=3, n_public=40,
                          separation=6.0)
    for name in ("public-light", "public-heavy"):
        method, reason = methods.settle_public("mixture", "auto", name, "chosen", facts, P)
        assert method == "em"
        assert reason.startswith(f"{name!r} refused these public rows (nothing was spent)")
        with pytest.raises(InvalidDataError, match="nothing was spent"):
            methods.settle_public("mixture", name, name, "requested", facts, P)
    sep = make_mixture(40_040, 2, 2, separation=8.0, random_state=5)
    ok = methods.Facts("mixture", pg.ApproxDP(1.0, DELTA), 40_000, 2, k=2, n_public=40,
                       separation=6.0)
    assert methods.settle_public("mixture", "auto", "public-heavy", "chosen", ok,
                                 sep.X[:40]) == ("public-heavy", "chosen")
    source = (Path(pg.__file__).parent / "estimators" / "mixture.py").read_text()
    assert "except InvalidDataError" not in source
