"""Noise samplers.

:class:`NoiseSource` is the only place the library draws privacy noise. It has two modes:

* **secure** (``random_state=None``, the default): Gaussian, Laplace, discrete Laplace/Gaussian and
  Gumbel report-noisy-max noise come from OpenDP's vetted samplers, which draw from OS entropy and
  add the noise to the *value* with exact arithmetic on a 2^k grid, so the float attacks on naive
  samplers (Mironov 2012) do not apply. Measured on a 2-core machine: about 50 µs per Gaussian
  coordinate and 35 µs per Laplace coordinate (``benchmarks/noise_speed.py``).
* **fast** (``random_state`` an int or ``numpy.random.Generator``): numpy's samplers. Reproducible
  and ~100× faster, for experiments, tests and audits. **Not for production releases**: floating
  point noise from a seeded PRNG is neither unpredictable nor free of the float attacks.

Non-noise randomness (permutations, subsampling, random shifts) comes from :attr:`NoiseSource.rng`,
a numpy Generator seeded from OS entropy in secure mode.
"""

from __future__ import annotations

import secrets
from functools import cache, lru_cache
from typing import Any

import numpy as np


@cache
def _opendp() -> Any:
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp


@lru_cache(maxsize=256)
def _measurement(kind: str, scale: float) -> Any:
    """OpenDP's vector sampler of one kind at one scale, built once and reused (building one
    costs about 0.3 ms, as much as drawing a few coordinates; a measurement holds no state
    between invocations: every call draws fresh noise from OS entropy). ``kind``: ``gaussian``
    or ``laplace`` (float vectors), ``integer_gaussian`` or ``integer_laplace``."""
    dp = _opendp()
    if kind.startswith("integer_"):
        domain = dp.vector_domain(dp.atom_domain(T=int))
        T: type = int
    else:
        domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))
        T = float
    if kind.endswith("gaussian"):
        return dp.m.make_gaussian(domain, dp.l2_distance(T=T), scale)
    return dp.m.make_laplace(domain, dp.l1_distance(T=T), scale)


def _finite_list(values: np.ndarray) -> list[float]:
    if not np.all(np.isfinite(values)):
        raise ValueError("cannot add noise to a non-finite value")
    return values.ravel().tolist()


class NoiseSource:
    """Draws privacy noise, securely (``random_state=None``) or reproducibly (seeded).

    Parameters
    ----------
    random_state : None, int, numpy Generator or NoiseSource, default=None
        None: cryptographically secure noise (OpenDP's samplers where they apply, a
        generator seeded from the OS otherwise); an int or a Generator: numpy's seeded
        generator, fast and reproducible, for experiments only; a NoiseSource: shares its
        generator.

    Attributes
    ----------
    secure : bool
        Whether the noise is secure (``random_state=None``).
    rng : numpy.random.Generator
        The generator of the noise.

    Examples
    --------
    >>> import privgauss as pg
    >>> pg.NoiseSource(3)
    NoiseSource(secure=False)
    >>> pg.NoiseSource().secure
    True
    """

    secure: bool
    rng: np.random.Generator

    def __init__(self, random_state: Any = None) -> None:
        if isinstance(random_state, NoiseSource):
            self.secure = random_state.secure
            self.rng = random_state.rng
            return
        if random_state is None:
            self.secure = True
            self.rng = np.random.default_rng(secrets.randbits(128))
        elif isinstance(random_state, np.random.Generator):
            self.secure = False
            self.rng = random_state
        elif isinstance(random_state, int | np.integer) and not isinstance(random_state, bool):
            self.secure = False
            self.rng = np.random.default_rng(int(random_state))
        else:
            raise TypeError(
                "random_state must be None (secure noise), an int seed or a numpy Generator"
            )

    def __repr__(self) -> str:
        return f"NoiseSource(secure={self.secure})"

    # -- continuous noise --------------------------------------------------------------------
    def gaussian(self, values: Any, scale: float) -> np.ndarray:
        """``values`` plus independent N(0, scale²) noise in every entry."""
        values = np.asarray(values, dtype=np.float64)
        if scale == 0:
            return values.copy()
        if not self.secure:
            return values + self.rng.normal(0.0, scale, size=values.shape)
        meas = _measurement("gaussian", float(scale))
        return np.asarray(meas(_finite_list(values)), dtype=np.float64).reshape(values.shape)

    def laplace(self, values: Any, scale: float) -> np.ndarray:
        """``values`` plus independent Laplace(scale) noise in every entry."""
        values = np.asarray(values, dtype=np.float64)
        if scale == 0:
            return values.copy()
        if not self.secure:
            return values + self.rng.laplace(0.0, scale, size=values.shape)
        meas = _measurement("laplace", float(scale))
        return np.asarray(meas(_finite_list(values)), dtype=np.float64).reshape(values.shape)

    def truncated_laplace(self, values: Any, scale: float, bound: float) -> np.ndarray:
        """``values`` plus Laplace(scale) noise conditioned on |noise| ≤ ``bound``.

        Exact by rejection: a Laplace draw is kept only if it lies in [−bound, bound].
        """
        values = np.asarray(values, dtype=np.float64)
        if scale == 0:
            return values.copy()
        if bound <= 0:
            raise ValueError("bound must be positive")
        out = np.empty(values.size)
        todo = np.arange(values.size)
        while todo.size:
            z = self.laplace(np.zeros(todo.size), scale)
            ok = np.abs(z) <= bound
            out[todo[ok]] = z[ok]
            todo = todo[~ok]
        return values + out.reshape(values.shape)

    # -- integer noise ----------------------------------------------------------------------
    def integer_laplace(self, counts: Any, scale: float) -> np.ndarray:
        """Integer ``counts`` plus discrete Laplace noise, P(z) ∝ exp(−|z|/scale)."""
        counts = np.asarray(counts, dtype=np.int64)
        if scale == 0:
            return counts.copy()
        if not self.secure:
            p = -np.expm1(-1.0 / scale)
            g1 = self.rng.geometric(p, size=counts.shape) - 1
            g2 = self.rng.geometric(p, size=counts.shape) - 1
            return counts + g1 - g2
        meas = _measurement("integer_laplace", float(scale))
        return np.asarray(meas(counts.ravel().tolist()), dtype=np.int64).reshape(counts.shape)

    def integer_gaussian(self, counts: Any, scale: float) -> np.ndarray:
        """Integer ``counts`` plus discrete Gaussian noise, P(z) ∝ exp(−z²/(2 scale²)).

        The fast path rounds a continuous Gaussian, which is close but not identical; the secure
        path is OpenDP's exact discrete Gaussian (Canonne–Kamath–Steinke 2020).
        """
        counts = np.asarray(counts, dtype=np.int64)
        if scale == 0:
            return counts.copy()
        if not self.secure:
            return counts + np.rint(self.rng.normal(0.0, scale, size=counts.shape)).astype(np.int64)
        meas = _measurement("integer_gaussian", float(scale))
        return np.asarray(meas(counts.ravel().tolist()), dtype=np.int64).reshape(counts.shape)

    # -- matrices ---------------------------------------------------------------------------
    def symmetric(self, matrix: Any, scale: float, kind: str = "gaussian") -> np.ndarray:
        """``matrix`` (symmetric) plus a symmetric noise matrix whose upper triangle, diagonal
        included, has independent Gaussian (or Laplace) entries of the given scale."""
        matrix = np.asarray(matrix, dtype=np.float64)
        d = matrix.shape[0]
        iu = np.triu_indices(d)
        upper = matrix[iu]
        noisy = self.gaussian(upper, scale) if kind == "gaussian" else self.laplace(upper, scale)
        out = np.empty_like(matrix)
        out[iu] = noisy
        out[(iu[1], iu[0])] = noisy
        return out

    # -- selection --------------------------------------------------------------------------
    def noisy_argmax(self, scores: Any, scale: float) -> int:
        """argmax of ``scores`` plus independent Gumbel(scale) noise (the exponential mechanism
        with P(i) ∝ exp(score_i / scale))."""
        scores = np.asarray(scores, dtype=np.float64).ravel()
        if scores.size == 0:
            raise ValueError("noisy_argmax needs at least one candidate")
        if scale == 0:
            return int(np.argmax(scores))
        if not self.secure:
            return int(np.argmax(scores + self.rng.gumbel(0.0, scale, size=scores.shape)))
        dp = _opendp()
        # OpenDP draws Gumbel noise only for the zCDP output measure; with max_divergence() it
        # adds exponential noise (permute-and-flip), a different selection distribution. We
        # need the Gumbel one (the exponential mechanism) and do the accounting ourselves.
        meas = dp.m.make_noisy_max(
            dp.vector_domain(dp.atom_domain(T=float, nan=False)),
            dp.linf_distance(T=float),
            dp.zero_concentrated_divergence(),
            scale,
        )
        return int(meas(_finite_list(scores)))


RandomState = int | np.random.Generator | NoiseSource | None


def as_noise(random_state: RandomState) -> NoiseSource:
    """A :class:`NoiseSource` for ``random_state`` (None = secure, int/Generator = fast)."""
    return random_state if isinstance(random_state, NoiseSource) else NoiseSource(random_state)
