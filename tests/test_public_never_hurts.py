"""Public rows never hurt (issue #26): with 1 % of a real table's rows as public rows the fit is
not worse than without them by more than the noise. The frame is built from every distinct
public row free of gross errors, not from a robust core: an image's pixels form clusters, and
a core frame left its dark pixels ~90 frame units out, clipped away (held-out gap 0.54 nat/row
against 0.01 without public rows)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_sample_image

import privgauss as pg


@pytest.mark.parametrize("image", ["flower.jpg", "china.jpg"])
def test_public_pixels_do_not_make_the_fit_worse(image: str) -> None:
    rng = np.random.default_rng(0)
    pixels = load_sample_image(image).reshape(-1, 3).astype(float)
    rows = pixels[rng.choice(len(pixels), 60_000, replace=False)]
    train, test = rows[:50_000], rows[50_000:]
    public, private = train[:500], train[500:]
    ref = pg.metrics.gaussian_logpdf(test, train.mean(0), np.cov(train.T)).mean()
    gaps = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for label, P in (("without", None), ("with", public)):
            g = pg.PrivateGaussian(epsilon=1.0, delta=1e-6, random_state=1).fit(
                private, public_X=P)
            gaps[label] = ref - g.score(test)
            if P is not None:
                assert g.method_ == "public"
    assert gaps["with"] < gaps["without"] + 0.02, gaps
    assert gaps["with"] < 0.05, gaps
