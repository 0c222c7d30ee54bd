"""The named warnings of privgauss.

Every warning the library emits about privacy is a :class:`PrivacyWarning`, so one filter
selects them all, e.g. ``warnings.simplefilter("error", privgauss.PrivacyWarning)`` to refuse
any fit that would warn, or ``warnings.simplefilter("ignore", pg.warnings.SeededNoiseWarning)``
in an experiment script that seeds on purpose.

They are emitted only by the estimators' ``fit`` (``PrivateGaussian``,
``PrivateGaussianMixture``), outside the algorithm, and decided from **public quantities or DP
outputs only**: the budget, the number of rows ``n`` (public under replace-one neighbours), the
kind of ``random_state``, whether the fit ended in
:class:`~privgauss.exceptions.EstimationFailed` (a DP output, ⊥), the DP fraction of rows
outside the fit's final clipping ball (``clipped_fraction_``), and private EM's released models
(its final DP pick, ``selected_model_``, and its fit's covariances in the released frame),
its released heaviest-cell counts of the columns (:class:`DiscreteDataWarning`), and private
EM's plan (:class:`NoisyFitWarning`: n, d, k and the budget).
Two neighbouring datasets therefore get the same warnings unless a DP output differs
(DESIGN.md, privacy rules 5 and 10).
Warnings raised *inside* an algorithm (numpy's, a non-private learner's) depend on the data and
are captured and dropped, never re-emitted.

The command line shows each of these once, as one ``warning: ...`` line on stderr.

This module is ``privgauss.warnings``; inside the package ``import warnings`` (an absolute
import) still means the standard library.
"""

from __future__ import annotations

__all__ = [
    "BudgetSpentWarning",
    "ClippedDataWarning",
    "DiscreteDataWarning",
    "LargeDeltaWarning",
    "NoisyFitWarning",
    "PrivacyWarning",
    "RareCategoriesWarning",
    "SeededNoiseWarning",
    "SimplerModelWarning",
]


class PrivacyWarning(UserWarning):
    """Base class of the privacy warnings of privgauss.

    Filter on it to treat all of them alike: ``warnings.simplefilter("error", PrivacyWarning)``
    turns every one into an exception raised from ``fit`` (before any budget is spent, except
    :class:`BudgetSpentWarning`, which reports a spent budget, and :class:`ClippedDataWarning`,
    which reports on a successful fit: its budget too is spent).

    Parameters
    ----------
    message : str
        The warning's text (public quantities and DP outputs only).

    Examples
    --------
    >>> import warnings, numpy as np, privgauss as pg
    >>> issubclass(pg.warnings.SeededNoiseWarning, pg.PrivacyWarning)
    True
    >>> X = np.random.default_rng(0).normal(size=(2000, 2))
    >>> g = pg.PrivateGaussian(rho=0.5, mean_bound=10, cov_bounds=(0.1, 10), random_state=0)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("error", pg.PrivacyWarning)   # refuse seeded noise
    ...     g.fit(X)
    Traceback (most recent call last):
    ...
    privgauss.warnings.SeededNoiseWarning: random_state is set...
    """


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

    **What to do**: choose δ well below ``1/n`` — e.g. ``δ ≤ 1/n²`` (the warning states its
    value for the fit's ``n``) — or use a ρ-zCDP budget (``rho=``). A fixed δ such as ``1e-6``
    is below ``1/n`` only while ``n < 10⁶``."""


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


class ClippedDataWarning(PrivacyWarning):
    """More rows lie outside the fit's final clipping ball than a Gaussian sample would leave
    out: the fit describes the central part of the data only.

    **When**: after a successful ``PrivateGaussian.fit`` whose ``clipped_fraction_`` — the DP
    count of rows outside the final clipping ball (released from 2 % of the budget, one
    ledger entry "clipped count"), divided by n — exceeds ``clipped_fraction_alarm_``, a
    threshold computed from public quantities (n, the plan's Gaussian tail, the count's noise
    scale) so that Gaussian data trigger it in about 2 fits in 1000. Both are DP outputs or
    public, so neighbouring datasets differ in this warning only through the released count.
    Like :class:`BudgetSpentWarning` it comes after the budget is spent.

    **Why**: every estimator clips rows to balls planned for Gaussian data (a covariance step
    cuts about 1 % of Gaussian rows). On heavy-tailed data (excess kurtosis in the hundreds or
    thousands) or with gross recording errors many more rows are pulled onto the ball, and the
    released mean and covariance are those of the clipped rows: the central part of the data,
    with a covariance far smaller than ``np.cov``'s in the heavy directions, and an error that
    more budget does not remove.

    **What to do**: decide whether the central part is what you want to describe (often it is:
    gross errors are not the population). If the tails matter, raise ``clip_scale`` (the
    clipping radius multiplier; command line ``--clip-scale``): the balls cover more rows at
    the price of more noise (sensitivity grows with the radius squared); or transform or clean
    the heavy columns (log, winsorize at known bounds) before fitting. The README's section
    "Heavy-tailed data" explains what a fit means there. Above 20 % (and up to the 50 % at
    which the fit ends in ``EstimationFailed`` instead) the message says that more than tails
    lie outside — the fit may have missed part of the data (zero-inflated or coded columns,
    clusters, a prior that cuts the data) — where ``clip_scale`` does not help: transform the
    columns, check the prior, give public rows or a larger budget.

    **Also** after a fit inside ``cov_bounds`` (``method="coinpress"``) whose final covariance
    release, in the frame meant to whiten the rows, says a direction collapsed (a DP output
    against public thresholds,
    :func:`~privgauss.gaussian.clip_diagnostics.is_collapsed`): rows spread in that direction
    lie beyond the clipping radius at every step — a 0/1 column with a few percent of ones or
    fewer — and its variance came out far too small, down to the prior's lower bound. The
    message says so; the bound-free route (drop the bounds) reads such columns from
    histograms."""


class DiscreteDataWarning(PrivacyWarning):
    """A column of the private rows has a point mass (many rows share one value) on which a
    non-private mixture can score far higher than private EM's fit, or the fit collapsed a
    component onto a single value or a line as far as its floors allow: the columns look
    discrete (counts, codes, 0/1 flags, rounded values) or collinear.

    **When**: after a successful ``PrivateGaussianMixture.fit`` with ``method="em"`` when
    either test fires (one warning; the message says which):

    * *a point mass*: private EM releases, for each column, the number of rows in its heaviest
      cell of a fine grid (cells 10⁻³ of the column's released standard deviation wide; 1 %
      of the EM budget, ledger entry "em atom counts", sensitivity √d;
      :mod:`privgauss.mixture.atoms`). From the heaviest cell's share p of the rows (the noisy
      count's lower confidence bound) and v, the smallest variance of that column among the
      released fit's components, a mixture with a component of weight p parked on the value
      at scikit-learn's default ``reg_covar`` (10⁻⁶, the data's units) gains about
      p·(ln p + ½·ln(v/10⁻⁶)) nat/row over the fit; it warns from 1 nat/row
      (``fit_info_["atom_gain"]``). On five held-out pydataset tables where only this test
      fired (72 fits, ε = 1 and 10⁴), a mixture parked there and fitted non-privately scored
      1.2–2.9 nat/row above the private fit on held-out rows (0.74–0.95× the estimate at
      ε = 10⁴; 0.9–1.9× at ε = 1, where the noise's margin lowers it;
      ``benchmarks/results/atom_signal_tables.md``); continuous columns put about 4·10⁻⁴ of
      the rows in a cell and did not warn (80 fits of generated families, estimates ≤ 0.003:
      ``atom_signal_families.md``);
    * *the floor*: the EM fit has a component with a variance, in the released whitening
      frame (where the data's covariance is about I), at or below private EM's eigenvalue
      floor (10⁻³ of the data's variance in that direction).

    The counts, the fit and the frame are DP outputs (releases and their post-processing), so
    neighbouring datasets differ in this warning only through them.

    **Why**: on a column that takes few distinct values, the likelihood of a Gaussian mixture
    is unbounded: a component parked on one value (variance → 0) scores ever higher on the rows
    there. Non-private EM (scikit-learn's ``GaussianMixture``) goes there and reports held-out
    log-likelihoods that can be many nat/row above any private fit's (the corpus' rwm and
    Treatment: 2.0 and 3.0 nat/row, with private EM's fit nowhere near its floor). Private EM
    keeps every component's variance in every direction above a floor tied to its noise
    (10⁻³ of the data's at ε ≈ 1, lower as the budget grows), because noise could fake a
    narrower component, and its noisy steps need not find the value at all: on those rows it
    scores less than the collapsed fit by about ½·ln(its variance there / the collapsed
    variance) nat, without bound as that variance goes to 0. The fit is still a sound
    density; the comparison with the non-private likelihood is not.

    **What to do**: compare models on the same footing: add uniform noise of the rounding width
    to discrete columns before fitting (dequantisation: a non-private mixture then stops
    collapsing too), or model the discrete columns apart (one mixture per value of a code).
    A larger budget (``epsilon``) lowers the floor, and with it this gap."""


class NoisyFitWarning(PrivacyWarning):
    """Private EM's noise alone is expected to cost its fit more than 0.05 nat/row of
    log-likelihood at this n, d, number of components and budget: the fit can be far from a
    non-private one.

    **When**: after a successful ``PrivateGaussianMixture.fit`` with ``method="em"`` whose
    plan's last EM step adds noise that moves a mixture of k equal components by more than
    0.05 nat/row (KL per row; ``fit_info_["final_selection"]["noise_cost"]`` has the value and
    the n at which it would be 0.05). It is computed from public quantities only (n, d, k, the
    budget, the number of public rows), so it is the same on neighbouring datasets. At
    n = 5·10⁴, d = 10, k = 3, ε = 1 the cost is 0.005; the real-table corpus' 5,000-row tables
    with 1 % public rows (d = 7–9) cost 0.10–0.22, and their fits ended 0.5–5.9 nat/row below
    scikit-learn's.

    **Why**: every EM step releases its sufficient statistics with noise that does not shrink
    with the data's structure, only with n and the budget; the last step's noise stays in the
    released model, and earlier steps' noise can send EM to a worse basin, so the real cost is
    often larger than this estimate (5–25× on the corpus' small tables). The final DP pick
    still guards against a fit worse than one Gaussian, but only up to its own noise
    (``noise_per_row``).

    **What to do**: give the fit more private rows (the message states about how many), a
    larger budget (``epsilon``), fewer components (``n_components``) or fewer columns; public
    rows help through the final pick when they describe the data well."""


class SimplerModelWarning(PrivacyWarning):
    """Private EM's final DP pick preferred a simpler candidate to its k-component EM fit: the
    single Gaussian the rows were whitened by, or the mixture fitted on the public rows alone
    (``selected_model_`` says which).

    **When**: after a successful ``PrivateGaussianMixture.fit`` with ``method="em"`` whose
    final pick (a joint release of the candidates' clipped log-likelihood ratios to the EM fit
    on the private rows, ledger entry "em final selection") did not select the EM fit. The
    pick is a DP output.

    **Why**: at a small budget or n the EM fit can end worse than one Gaussian (a wrong basin,
    components flattened by noise), or worse than a non-private fit of a few good public rows;
    the pick returns the best candidate up to its noise (``fit_info_["final_selection"]``
    gives each candidate's noisy ratio to the EM fit per row and the noise). A single
    Gaussian is returned as k equal components with equal weights, so shapes do not change.

    **What to do**: read it as "k components did not pay off at this budget": try fewer
    components, a larger budget, or more (or better) public rows.

    Also raised by :class:`~privgauss.PrivateSynthesizer` when its one-component Gaussian
    copula's fit ends in ``EstimationFailed`` (a DP output): the synthesizer keeps the
    marginals and dependence grid it released and draws independent normal scores
    (``method_`` names ``copula-independent``) instead of failing after spending."""


class RareCategoriesWarning(PrivacyWarning):
    """A categorical column of a synthetic table lost some of its categories: their rows come
    back as missing values.

    **When**: after :class:`~privgauss.PrivateSynthesizer` released a categorical column's
    categories (no stated list) and the column's released marginal gives mass to the *other*
    code — the rows whose value was not released, estimated as n less the released noisy
    counts and kept only above its noise — or no category was released at all. Both are DP
    outputs.

    **Why**: a category list read off the data would publish a record's rare value (a name,
    an identifier). A category is released only when its noisy count clears a threshold that a
    value held by one record passes with probability at most δ — about 100–200 rows at
    ε = 1, δ = 1e-6 on tables of 4–10 columns (the message gives the plan's), less with more
    budget. Values below it cannot come back.

    **What to do**: if the categories are public knowledge (regions, sexes, the codes of a
    questionnaire), state them (``categories={"col": [...]}``; on the command line
    ``--categories COL A,B,C``): no threshold, every stated category kept. Otherwise merge rare
    values into broader ones before fitting, give more budget, or accept missing values for
    the rare rows. An identifier column (one value per record) can never be released: drop it."""
