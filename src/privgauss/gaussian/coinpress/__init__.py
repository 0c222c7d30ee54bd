"""CoinPress-style iterative Gaussian estimation inside a public prior (ρ-zCDP, replace-one).

Biswas, Dong, Kamath and Ullman, *CoinPress: Practical Private Mean and Covariance Estimation*
(NeurIPS 2020). The public surface: the estimators (:func:`coinpress_mean`,
:func:`coinpress_covariance`, :func:`coinpress_gaussian`, and :func:`mean_of_rows` and
:func:`gaussian_of_rows` for rows already validated at the entry, charged to a release context),
their public plans (:func:`mean_schedule`, :func:`covariance_schedule`) and the planner's predicted
error (:func:`planned_covariance_error`,
:data:`PLAN_MAX_ERROR`). Modules: :mod:`.estimate` (entry points and dispatch), :mod:`.steps`
(the runners that charge and release), :mod:`.split_mode` and :mod:`.mean_first` (the large-data
and small-budget routes), :mod:`.radius_search` (DP clip radii); the public plans in
:mod:`.schedule`, :mod:`.mean_plan`, :mod:`.cov_plan` and :mod:`.plan`, and the χ tails and
Gaussian clipping closed forms in :mod:`.tails`.
"""

from .cov_plan import CovStep, covariance_schedule
from .estimate import (
    PLAN_MAX_ERROR,
    coinpress_covariance,
    coinpress_gaussian,
    coinpress_mean,
    gaussian_of_rows,
    mean_of_rows,
    planned_covariance_error,
)
from .mean_plan import MeanStep, mean_schedule
from .tails import chi_tail_bound, chi_tail_radius

__all__ = [
    "PLAN_MAX_ERROR",
    "CovStep",
    "MeanStep",
    "chi_tail_bound",
    "chi_tail_radius",
    "coinpress_covariance",
    "coinpress_gaussian",
    "coinpress_mean",
    "covariance_schedule",
    "gaussian_of_rows",
    "mean_of_rows",
    "mean_schedule",
    "planned_covariance_error",
]
