"""``public-heavy`` (mixture): Bie–Kamath–Singhal Alg. 9–10 with ≥ 2(d+1)/w_min public rows —
clustering on the public rows alone (free), then per cluster d+1-sample public
preconditioning + CoinPress; ρ-zCDP or (ε, δ)-DP (:mod:`privgauss.mixture.public_heavy`)."""

from __future__ import annotations

from ._mixture import paper_run
from ._public_mixture import fewest_public_rows, public_mixture_requirements
from ._record import Method

__all__: list[str] = []

KNOBS = ("count_share",)

METHOD = Method(
    name="public-heavy",
    kind="mixture",
    summary="BKS22 Alg. 9–10: public clustering, then per-cluster preconditioned CoinPress",
    needs="O(d log(k/β)/w_min) public rows; separated components (validated at ratio ≥ 6: "
    "`auto` runs it only with `separation=` ≥ 6)",
    privacy="ρ-zCDP or (ε, δ)-DP",
    budgets=frozenset({"zcdp", "approx"}),
    run=paper_run("public_heavy", "public_heavy_gmm", KNOBS, public=True),
    public="required",
    min_public=fewest_public_rows("public-heavy"),
    requirements=public_mixture_requirements("public-heavy"),
    knobs=KNOBS,
    # the separation ratio it was measured at (benchmarks/results/public_mixtures*.md)
    min_separation=6.0,
)
