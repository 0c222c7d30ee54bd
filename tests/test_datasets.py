import math

import numpy as np
import pytest

from privgauss import datasets as D
from privgauss.datasets import (
    Mixture,
    make_gaussian,
    make_mixture,
    random_covariance,
    random_rotation,
    separation_ratio,
)

# ----------------------------------------------------------------------------- Gaussians


def test_random_rotation_is_orthogonal():
    Q = random_rotation(6, 0)
    np.testing.assert_allclose(Q @ Q.T, np.eye(6), atol=1e-12)


@pytest.mark.parametrize(("d", "kappa"), [(1, 1.0), (4, 1.0), (5, 100.0), (10, 1e4)])
def test_random_covariance_spectrum(d, kappa):
    C = random_covariance(d, kappa, random_state=1)
    np.testing.assert_array_equal(C, C.T)
    eig = np.linalg.eigvalsh(C)
    np.testing.assert_allclose(eig, np.logspace(0, math.log10(kappa), d), rtol=1e-9)
    assert eig[-1] / eig[0] == pytest.approx(kappa, rel=1e-9)


def test_make_gaussian_defaults_and_moments():
    X, mean, cov = make_gaussian(40_000, 3, condition_number=10.0, random_state=0)
    assert X.shape == (40_000, 3)
    np.testing.assert_array_equal(mean, np.zeros(3))
    np.testing.assert_allclose(np.linalg.eigvalsh(cov), np.logspace(0, 1, 3), rtol=1e-9)
    assert not np.allclose(cov, np.diag(np.diag(cov)))  # rotated
    np.testing.assert_allclose(X.mean(axis=0), mean, atol=0.05)
    np.testing.assert_allclose(np.cov(X.T), cov, atol=0.15)


def test_make_gaussian_given_parameters_and_reproducible():
    mean = np.array([1.0, -2.0])
    cov = np.array([[2.0, 0.9], [0.9, 1.0]])
    X1, m1, c1 = make_gaussian(30_000, mean=mean, cov=cov, random_state=3)
    X2, _, _ = make_gaussian(30_000, mean=mean, cov=cov, random_state=np.random.default_rng(3))
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_array_equal(m1, mean)
    np.testing.assert_array_equal(c1, cov)
    np.testing.assert_allclose(X1.mean(axis=0), mean, atol=0.05)
    np.testing.assert_allclose(np.cov(X1.T), cov, atol=0.08)
    m1[0] = 99.0  # returned arrays are copies
    assert mean[0] == 1.0


def test_make_gaussian_singular_cov():
    cov = np.array([[1.0, 1.0], [1.0, 1.0]])
    X, _, _ = make_gaussian(100, cov=cov, random_state=0)
    np.testing.assert_allclose(X[:, 0], X[:, 1], atol=1e-12)


def test_make_gaussian_errors():
    with pytest.raises(ValueError, match="dimension"):
        make_gaussian(10)
    with pytest.raises(ValueError, match="inconsistent"):
        make_gaussian(10, 3, mean=np.zeros(2))
    with pytest.raises(ValueError, match="n must be"):
        make_gaussian(0, 2)
    with pytest.raises(ValueError, match="symmetric"):
        make_gaussian(10, cov=[[1.0, 0.5], [0.0, 1.0]])
    with pytest.raises(ValueError, match="condition_number"):
        make_gaussian(10, 2, condition_number=0.5)


# ----------------------------------------------------------------------------- mixtures


@pytest.mark.parametrize("covariance", ["spherical", "rotated", "diagonal"])
@pytest.mark.parametrize(("k", "d", "sep"), [(2, 1, 1.0), (3, 2, 3.0), (6, 5, 0.5), (10, 3, 2.0)])
def test_make_mixture_separation_exact(covariance, k, d, sep):
    kappa = 1.0 if covariance == "spherical" else 20.0
    mix = make_mixture(
        2000,
        k,
        d,
        separation=sep,
        covariance=covariance,
        condition_number=kappa,
        scale=2.0,
        random_state=k + d,
    )
    assert isinstance(mix, Mixture)
    r = separation_ratio(mix.means, mix.covariances, mix.weights)
    assert r >= sep - 1e-9
    assert r == pytest.approx(sep, rel=1e-9)  # scaled to exactly the requested multiple
    # Recompute the condition pair by pair from the definition.
    for i in range(k):
        for j in range(i + 1, k):
            std = max(np.sqrt(np.linalg.norm(C, 2)) for C in mix.covariances[[i, j]])
            need = (
                sep * (math.sqrt(k) + 1 / math.sqrt(mix.weights[i]) + 1 / math.sqrt(mix.weights[j]))
            ) * std
            assert np.linalg.norm(mix.means[i] - mix.means[j]) >= need * (1 - 1e-12)


@pytest.mark.parametrize("covariance", ["spherical", "rotated", "diagonal"])
def test_make_mixture_covariances(covariance):
    kappa = 1.0 if covariance == "spherical" else 50.0
    mix = make_mixture(
        10, 4, 3, covariance=covariance, condition_number=kappa, scale=3.0, random_state=0
    )
    for C in mix.covariances:
        np.testing.assert_array_equal(C, C.T)
        np.testing.assert_allclose(
            np.linalg.eigvalsh(C), 9.0 * np.logspace(0, math.log10(kappa), 3), rtol=1e-9
        )
        if covariance in ("spherical", "diagonal"):
            np.testing.assert_array_equal(C, np.diag(np.diag(C)))
    if covariance == "rotated":
        assert not np.allclose(mix.covariances[0], np.diag(np.diag(mix.covariances[0])))


@pytest.mark.parametrize(
    ("k", "min_weight"), [(2, 0.1), (5, 0.05), (4, 0.25), (10, 0.01), (1, 1.0)]
)
def test_make_mixture_min_weight(k, min_weight):
    mix = make_mixture(100, k, 2, min_weight=min_weight, random_state=k)
    assert mix.weights.min() == min_weight
    assert (mix.weights >= min_weight).all()
    assert mix.weights.sum() == pytest.approx(1.0, abs=1e-12)


def test_make_mixture_labels_and_samples():
    w = [0.2, 0.3, 0.5]
    mix = make_mixture(60_000, 3, 2, weights=w, separation=2.0, random_state=4)
    np.testing.assert_array_equal(mix.weights, w)
    assert mix.X.shape == (60_000, 2) and mix.labels.shape == (60_000,)
    counts = np.bincount(mix.labels, minlength=3)
    assert counts.sum() == 60_000
    np.testing.assert_allclose(counts / 60_000, w, atol=0.01)
    for j in range(3):
        Xj = mix.X[mix.labels == j]
        np.testing.assert_allclose(Xj.mean(axis=0), mix.means[j], atol=0.05)
        np.testing.assert_allclose(np.cov(Xj.T), mix.covariances[j], atol=0.06)
    # Rows are shuffled: labels are not sorted.
    assert (np.diff(mix.labels) < 0).any()


def test_make_mixture_reproducible():
    a = make_mixture(500, 3, 2, covariance="rotated", condition_number=5, random_state=9)
    b = make_mixture(500, 3, 2, covariance="rotated", condition_number=5, random_state=9)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.labels, b.labels)
    np.testing.assert_array_equal(a.means, b.means)


def test_make_mixture_single_component():
    mix = make_mixture(50, 1, 2, random_state=0)
    assert mix.weights.tolist() == [1.0]
    assert (mix.labels == 0).all()
    assert separation_ratio(mix.means, mix.covariances, mix.weights) == math.inf


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"min_weight": 0.3}, "min_weight must be at most"),
        ({"min_weight": 0.0}, "min_weight"),
        ({"min_weight": 0.1, "weights": [0.5, 0.25, 0.25]}, "either weights or min_weight"),
        ({"weights": [0.5, 0.5]}, "length k"),
        ({"weights": [0.5, 0.4, 0.2]}, "sum to 1"),
        ({"weights": [0.5, 0.6, -0.1]}, "positive"),
        ({"separation": -1.0}, "separation"),
        ({"separation": math.nan}, "separation"),
        ({"covariance": "full"}, "covariance must be"),
        ({"condition_number": 10.0}, "condition_number applies"),
        ({"covariance": "rotated", "condition_number": 0.5}, "condition_number"),
        ({"scale": 0.0}, "scale"),
    ],
)
def test_make_mixture_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_mixture(100, 4 if "weights" not in kwargs else 3, 2, **kwargs)


def test_make_mixture_bad_sizes():
    for args in [(0, 2, 2), (10, 0, 2), (10, 2, 0), (10, 2.5, 2), (True, 2, 2)]:
        with pytest.raises(ValueError):
            make_mixture(*args)


def test_separation_ratio_hand_computed():
    means = np.array([[0.0, 0.0], [10.0, 0.0]])
    covs = np.stack([np.eye(2), 4.0 * np.eye(2)])
    w = np.array([0.5, 0.5])
    expected = 10.0 / ((math.sqrt(2) + 2 * math.sqrt(2)) * 2.0)
    assert separation_ratio(means, covs, w) == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError, match="positive"):
        separation_ratio(means, covs, [1.0, 0.0])


# -- real tables and real defects ---------------------------------------------------------------


def test_tables_have_the_defects_the_docs_state():
    bc, digits = D.load_table("breast_cancer"), D.load_table("digits")
    assert bc.shape == (569, 30) and digits.shape == (1797, 64)
    assert (digits.std(axis=0) == 0).sum() == 3  # constant pixel columns
    assert len(np.unique(digits)) == 17  # counts 0..16: ties everywhere
    with pytest.raises(ValueError, match="unknown table"):
        D.load_table("iris")


def test_each_defect_does_what_it_says_and_leaves_the_input_alone():
    X, _, _ = make_gaussian(2000, 4, random_state=0)
    before = X.copy()
    out = {name: D.with_defect(X, name, random_state=1) for name in D.DEFECTS}
    np.testing.assert_array_equal(X, before)
    assert np.all(np.diff(out["sorted"][:, 0]) >= 0)
    np.testing.assert_array_equal(np.sort(out["sorted"], axis=0), np.sort(X, axis=0))
    assert all(len(np.unique(out["rounded"][:, j])) == 3 for j in range(4))
    assert set(np.unique(out["binary"][:, 0])) == {0.0, 1.0}
    assert out["binary"][:, 0].mean() == pytest.approx(0.1, abs=0.01)
    assert (out["counts"][:, 0] == 0).mean() == pytest.approx(math.exp(-0.3), abs=0.03)
    assert np.all(out["constant"][:, -1] == 3.7)
    changed = np.any(out["gross"] != X, axis=1)
    assert changed.sum() == 20
    ratio = out["gross"][changed] / X[changed]
    assert np.all(np.sort(ratio, axis=1)[:, -1] == pytest.approx(1000.0))  # one coordinate x1000
    assert np.all(np.sort(ratio, axis=1)[:, :-1] == pytest.approx(1.0))
    assert len(np.unique(out["duplicates"], axis=0)) < 0.8 * 2000
    with pytest.raises(ValueError, match="unknown defect"):
        D.with_defect(X, "shuffled")


def test_heavy_tailed_rows_have_the_stated_covariance_and_tails():
    X, cov = D.make_heavy_tailed(200_000, 3, df=3.0, random_state=0)
    np.testing.assert_allclose(cov, 3.0 * np.eye(3))
    kurt = ((X[:, 0] - X[:, 0].mean()) ** 4).mean() / X[:, 0].var() ** 2
    assert kurt > 10  # a Gaussian has 3
    assert np.median(np.abs(X[:, 0])) == pytest.approx(0.765, rel=0.05)  # t(3)'s median |x|


def test_dirty_public_rows():
    P, _, _ = make_gaussian(50, 3, random_state=0)
    out = D.dirty_public(P, "outlier", random_state=0)
    assert (out == 1e6).all(axis=1).sum() == 1 and (out != 1e6).all(axis=1).sum() == 49
    shifted = D.dirty_public(P, "shifted", random_state=0)
    assert shifted.shape == P.shape and shifted[:, 0].min() >= np.quantile(P[:, 0], 0.8)
    dup = D.dirty_public(P, "duplicated")
    assert dup.shape == (54, 3) and (dup[:4] == P[0]).all()
