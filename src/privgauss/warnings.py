"""The named warnings of privgauss.

Every warning the library emits about privacy is a :class:`PrivacyWarning`, so one filter
selects them all, e.g. ``warnings.simplefilter("error", privgauss.PrivacyWarning)`` to refuse
any fit that would warn, or ``warnings.simplefilter("ignore", pg.warnings.SeededNoiseWarning)``
in an experiment script that seeds on purpose.

They are emitted only by the estimators' ``fit`` (``PrivateGaussian``,
``PrivateGaussianMixture``), outside the algorithm, and decided from **public quantities or DP
outputs only**: the budget, the number of rows ``n`` (public under replace-one neighbours), the
kind of ``random_state``, and whether the fit ended in
:class:`~privgauss.exceptions.EstimationFailed` (a DP output, ⊥). Two neighbouring datasets
therefore get the same warnings unless a DP output differs (DESIGN.md, privacy rules 5 and 10).
Warnings raised *inside* an algorithm (numpy's, a non-private learner's) depend on the data and
are captured and dropped, never re-emitted.

The command line shows each of these once, as one ``warning: ...`` line on stderr.

This module is ``privgauss.warnings``; inside the package ``import warnings`` (an absolute
import) still means the standard library.
"""

from __future__ import annotations

__all__ = [
    "BudgetSpentWarning",
    "LargeDeltaWarning",
    "PrivacyWarning",
    "SeededNoiseWarning",
]


class PrivacyWarning(UserWarning):
    """Base class of the privacy warnings of privgauss.

    Filter on it to treat all of them alike: ``warnings.simplefilter("error", PrivacyWarning)``
    turns every one into an exception raised from ``fit`` (before any budget is spent, except
    :class:`BudgetSpentWarning`, which reports a spent budget)."""


class SeededNoiseWarning(PrivacyWarning):
    """``random_state`` was an int seed or a ``numpy.random.Generator`` (command line:
    ``--seed``): the privacy noise comes from numpy's seeded generator.

    **When**: at every ``fit`` with a seeded ``random_state``, before any budget is spent; never
    with ``random_state=None`` (the default: OpenDP's secure samplers).

    **Why**: seeded noise is fast and reproducible, which is what experiments, tests and audits
    need, but it is predictable to anyone who knows or guesses the seed, and numpy's floating
    point samplers are open to the attacks on naive noise (Mironov 2012). Its output does not
    carry the stated guarantee in practice.

    **What to do**: to release results computed from real private data, fit with
    ``random_state=None`` (omit ``--seed``). In an experiment that seeds on purpose, silence it
    with ``warnings.simplefilter("ignore", SeededNoiseWarning)``."""


class LargeDeltaWarning(PrivacyWarning):
    """The budget's δ is at least ``1/n``, with ``n`` the number of private rows.

    **When**: at ``fit`` with an (ε, δ) budget (``epsilon=``, ``delta=``, or what remains of a
    shared (ε, δ) accountant) whose ``δ ≥ 1/n``, before any budget is spent. Never for a
    pure-ε or a ρ-zCDP budget. ``n`` is public (replace-one neighbours), so this says nothing
    about the data.

    **Why**: (ε, δ)-DP lets a release escape the ε bound with probability up to δ; with
    ``δ ≥ 1/n`` even a mechanism that publishes one randomly chosen record verbatim meets the
    guarantee, so it no longer protects every individual.

    **What to do**: choose δ well below ``1/n`` — common choices are ``δ ≤ 1/n²`` or a fixed
    ``1e-6`` … ``1e-10`` — or use a ρ-zCDP budget (``rho=``)."""


class BudgetSpentWarning(PrivacyWarning):
    """A fit ended in :class:`~privgauss.exceptions.EstimationFailed`: the budget it charged
    stays spent and nothing was released.

    **When**: emitted by ``fit`` just before ``EstimationFailed`` propagates. The failure (⊥) is
    itself a DP output (DESIGN.md, rule 6), so this warning is too; it never fires on a
    successful fit, nor on a refusal raised before any budget is spent (``ValueError``,
    ``InvalidDataError``, ``PrivacyBudgetError``).

    **Why**: an exception is easy to catch and retry, and a retry on the same rows spends a
    fresh budget: the privacy loss of all attempts adds up.

    **What to do**: count the spent budget in your accounting (a shared ``accountant=`` does it
    for you) before retrying. The exception's message names the step that failed and, when
    known, the number of rows it needs; ``privgauss requirements`` computes the needs of a
    method in advance, from public quantities."""
