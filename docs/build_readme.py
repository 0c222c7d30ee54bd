"""Fill the measured numbers of ``README.md`` and ``docs/guide/*.md`` from ``benchmarks/results/``.

Usage: ``python docs/build_readme.py`` (rewrites every generated block), or
``python docs/build_readme.py --check`` (exit status 1 if a block is not current).
``tests/test_docs.py`` runs the check.

A generated block sits between ``<!-- generated: NAME -->`` and ``<!-- /generated -->``; its text
is ``BLOCKS[NAME]``'s, made from the results file that a benchmark writes (never typed), and ends
with a line naming that file and the command that made it (read from the file itself). To change
a number, re-run the benchmark and then this script; to change the wording, edit the block's
function here.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
TARGETS = [ROOT / "README.md", *sorted((ROOT / "docs" / "guide").glob("*.md"))]
BLOCK = re.compile(r"(<!-- generated: ([\w-]+) -->\n)(.*?)(<!-- /generated -->)", re.S)


class Table:
    """One Markdown table of a results file: the heading above it, its header, its rows (by
    column name) and its cells (by position, for repeated column names)."""

    def __init__(self, heading: str, header: list[str], cells: list[list[str]]) -> None:
        self.heading, self.header, self.cells = heading, header, cells
        self.rows = [dict(zip(header, c, strict=False)) for c in cells]

    def row(self, **where: str) -> dict[str, str]:
        """The one row whose cells equal ``where`` (column name → text)."""
        found = [r for r in self.rows if all(r.get(k) == v for k, v in where.items())]
        if len(found) != 1:
            raise ValueError(f"{len(found)} rows match {where} in the table under "
                             f"{self.heading!r}")
        return found[0]


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def tables(name: str) -> list[Table]:
    """Every table of ``benchmarks/results/NAME``, in order."""
    out: list[Table] = []
    heading, lines = "", (RESULTS / name).read_text().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        if line.startswith("|") and i + 1 < len(lines) and re.match(r"\|[ :|-]+\|$",
                                                                     lines[i + 1].strip()):
            header = _cells(line)
            cells = []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                cells.append(_cells(lines[i]))
                i += 1
            out.append(Table(heading, header, cells))
            continue
        i += 1
    return out


def table(name: str, *, heading: str = "", columns: tuple[str, ...] = ()) -> Table:
    """The one table of ``name`` under a heading containing ``heading`` with ``columns``."""
    found = [t for t in tables(name)
             if heading in t.heading and all(c in t.header for c in columns)]
    if len(found) != 1:
        raise ValueError(f"{len(found)} tables of benchmarks/results/{name} match heading "
                         f"{heading!r} and columns {columns}")
    return found[0]


def command(name: str) -> str:
    """The command that made ``benchmarks/results/NAME``, as the file states it."""
    text = (RESULTS / name).read_text()
    found = re.findall(r"^Command: `([^`]+)`", text, re.M)
    if not found:  # "Command(s) ...:" followed by a fenced or an indented block
        block = r"(?:```\w*\n(.*?)```|((?:    [^\n]+\n)+))"
        m = re.search(r"^Commands?\b(?:(?!\n\n).)*?:[ \t]*\n\n?" + block, text, re.M | re.S)
        found = [] if m is None else (m.group(1) or m.group(2)).strip().splitlines()
    if not found:
        raise ValueError(f"benchmarks/results/{name} does not state its command")
    env = r"^(OPENBLAS_NUM_THREADS=\S+ |OMP_NUM_THREADS=\S+ |PYTHONPATH=\S+ |nice -n \d+ )+"
    return "`; `".join(re.sub(env, "", c.strip()) for c in found[:3])


def first(cell: str) -> float:
    """The first number of a cell such as ``3.88 / 3.77`` or ``**1.10**``."""
    m = re.search(r"-?\d+(?:\.\d+)?(?:e[+-]?\d+)?", cell.replace("−", "-"))
    if m is None:
        raise ValueError(f"no number in {cell!r}")
    return float(m.group(0))


def numbers(cell: str) -> list[float]:
    """Every number of a cell."""
    return [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?(?:e[+-]?\d+)?",
                                         cell.replace("−", "-"))]


class Context:
    """Where a block is written: links to results files are relative to that file."""

    def __init__(self, target: Path) -> None:
        self.prefix = "../" * (len(target.resolve().relative_to(ROOT).parts) - 1)

    def link(self, name: str) -> str:
        return f"[`benchmarks/results/{name}`]({self.prefix}benchmarks/results/{name})"

    def source(self, *names: str) -> str:
        """The closing line of a block: each results file and the command that made it."""
        parts = [f"{self.link(n)} (`{command(n)}`)" for n in names]
        return "<sub>Generated by `python docs/build_readme.py` from " + "; ".join(parts) + \
            ".</sub>\n"


def _fmt(x: float, digits: int = 3) -> str:
    return f"{x:.{digits}g}" if abs(x) >= 1e-3 or x == 0 else f"{x:.1e}"


# ---------------------------------------------------------------------------- the blocks


def accuracy(ctx: Context) -> str:
    """The single-Gaussian accuracy table against the published numbers."""
    w1 = table("gaussian_accuracy.md", heading="W1", columns=("ours", "published"))
    w3 = table("gaussian_accuracy.md", heading="k = 1000", columns=("ours (1 public)",))
    cov = table("gaussian_accuracy.md", heading="d+1 public", columns=("ours / np.cov",))
    cp = table("coinpress-covariance.md", columns=("ours", "CoinPress t=3 (published)"))
    a, b = w1.row(n="1000"), w1.row(n="10000")
    c, e = cp.row(n="3000"), cp.row(n="8000")
    p, q = w3.row(n="1000"), w3.row(n="2636")
    last = cov.rows[-1]

    def paper(r: dict[str, str]) -> float:
        return first(r["paper-code (1 public)"]) / first(r["non-private"])

    rows = [
        "| setting | privgauss | reference |",
        "|---|---|---|",
        f"| CoinPress mean protocol, d = 50, R = 10√d, n = 1000 / 10000 | "
        f"{a['ours'].split()[0]} / {b['ours'].split()[0]} | CoinPress t = 2 published: "
        f"{a['published']} / {b['published']} |",
        f"| CoinPress covariance protocol, Σ = I, d = 10, u = 10√d, n = 3000 / 8000 | "
        f"{c['ours']} / {e['ours']} | CoinPress t = 3 published: "
        f"{c['CoinPress t=3 (published)']} / {e['CoinPress t=3 (published)']} (non-private "
        f"{c['non-private (published)']} / {e['non-private (published)']}) |",
        f"| one public row, no bound, mean 1000·1, d = 50, n = 1000 / 2636 | "
        f"{p['ours / non-private']}× / {q['ours / non-private']}× non-private | paper's recipe "
        f"{paper(p):.3f}× / {paper(q):.3f}× |",
        f"| d+1 public rows, no bounds, covariance, d = 10, n = {last['n']} | "
        f"{last['ours / np.cov']}× `np.cov` | direct port of the paper (with our covariance "
        f"noise): {first(last['direct port (theory)']) / first(last['np.cov']):.2f}× |",
    ]
    return "\n".join(rows) + "\n\n" + ctx.source("gaussian_accuracy.md",
                                                  "coinpress-covariance.md")


def coinpress_covariance(ctx: Context) -> str:
    """One sentence: the CoinPress covariance protocol at its first and last n."""
    cp = table("coinpress-covariance.md", columns=("ours", "CoinPress t=3 (published)"))
    c, e = cp.rows[0], cp.rows[-1]
    return (f"Measured (CoinPress covariance protocol, Σ = I, d = 10, ρ = 0.5, u = 10√d; 100 "
            f"trials): error {first(c['ours']):.3g} at n = {c['n']} and {first(e['ours']):.3g} at "
            f"n = {e['n']}, against {c['CoinPress t=3 (published)']} / "
            f"{e['CoinPress t=3 (published)']} published for CoinPress t = 3 and "
            f"{c['non-private (published)']} / {e['non-private (published)']} non-private.\n\n"
            + ctx.source("coinpress-covariance.md"))


def small_n(ctx: Context) -> str:
    """Ratios to the non-private error at small n, both regimes."""
    bf = table("small_n.md", heading="Bound-free", columns=("mean ratio", "covariance ratio"))
    km = table("small_n.md", heading="Unknown against known",
               columns=("unknown ÷ known (median / trimmed mean of per-draw quotients)",))
    quot = "unknown ÷ known (median / trimmed mean of per-draw quotients)"
    ns = [r["n"] for r in bf.rows]
    lines = ["| n | " + " | ".join(ns) + " |", "|---|" + "---|" * len(ns)]
    lines.append("| bound-free, ε = 1, δ = 1e-6, condition 100: mean / covariance | " + " | ".join(
        f"{first(r['mean ratio']):.2f} / {first(r['covariance ratio']):.2f}" for r in bf.rows)
        + " |")
    lines.append("| `coinpress` inside a prior, ε = 1: unknown ÷ known mean (covariance) | "
                 + " | ".join(f"{first(km.row(n=n)[quot]):.2f}" for n in ns) + " |")
    ri = table("small_n.md", heading="Σ = 2·I", columns=("ours unknown mean", "ours known mean"))
    idx = [i for i, c in enumerate(ri.header) if c == "ratio"]  # unknown, then known mean
    ns2 = [c[0] for c in ri.cells]
    lines2 = ["| n | " + " | ".join(ns2) + " |", "|---|" + "---|" * len(ns2),
              "| `coinpress`, ρ = 0.5, Σ = 2·I, prior (1, 10√d): covariance, unknown / known "
              "mean | " + " | ".join(f"{first(c[idx[0]]):.2f} / {first(c[idx[1]]):.2f}"
                                     for c in ri.cells) + " |"]
    return "\n".join(lines) + "\n\n" + "\n".join(lines2) + "\n\n" + ctx.source("small_n.md")


def gaussian_speed(ctx: Context) -> str:
    """The default fit's speed and accuracy at n = 1e6, d = 10."""
    t = table("gaussian_speed.md", columns=("**CPU ratio**",))
    r = t.row(n="1,000,000", d="10")
    err, ref = numbers(r["‖Σ^-½Σ̂Σ^-½ − I‖_F (np.cov)"])[:2]
    pairs = len(r["ratios of the pairs"].split(","))
    return (f"At n = 1e6 (d = 10, ε = 1) the default fit's covariance error is {err / ref:.2f}× "
            f"`np.cov`'s, and it takes {first(r['**CPU ratio**']):.3g}× the CPU time of numpy's "
            f"`mean` + `cov` on the same rows (median of {pairs} timings on one machine; the "
            f"load it saw is in the file).\n\n"
            + ctx.source("gaussian_speed.md"))


def private_em(ctx: Context) -> str:
    """Private EM against scikit-learn: median (worst) gap per regime."""
    t = table("private_em.md", columns=("gap, median (all seeds)", "single Gaussian gap"))
    regimes = [("eps=1, delta=1e-6", "0", "ε = 1, δ = 1e-6"),
               ("eps=1, delta=1e-6", "500", "ε = 1, 500 public rows"),
               ("rho=0.5", "500", "ρ = 0.5, 500 public rows")]
    names = {"synthetic": "synthetic, k = 3, d = 10, means 2 sd apart",
             "china.jpg": "`china.jpg` pixels, k = 4"}
    data = list(dict.fromkeys(r["data"] for r in t.rows))
    lines = ["| data | " + " | ".join(x[2] for x in regimes) + " | one Gaussian |",
             "|---|" + "---|" * (len(regimes) + 1)]
    for d in data:
        cells = []
        for budget, public, _ in regimes:
            gaps = numbers(t.row(data=d, budget=budget, **{"public rows": public})[
                "gap, median (all seeds)"])
            cells.append(f"{gaps[0]:.3f} ({max(gaps[1:]):.3f})")
        label = next((v for k, v in names.items() if d.startswith(k)), d)
        one = first(t.rows[[r["data"] for r in t.rows].index(d)]["single Gaussian gap"])
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {one:.2f} |")
    seeds = len(numbers(t.rows[0]["gap, median (all seeds)"])) - 1
    return (f"Held-out mean log-likelihood gap to scikit-learn's `GaussianMixture` on the same "
            f"5e4 rows, nat/row: median of {seeds} noise seeds (worst).\n\n"
            + "\n".join(lines) + "\n\n" + ctx.source("private_em.md"))


def em_scale(ctx: Context) -> str:
    """One 2e7-row fit from disk."""
    t = table("em_scale_2e7.md", heading="Full fit", columns=("wall (s)", "peak RSS"))
    r = t.rows[0]
    gap = re.search(r"gap to the scikit-learn reference[^:]*: (-?[\d.]+) nat/row",
                    (RESULTS / "em_scale_2e7.md").read_text())
    assert gap is not None
    return (f"2e7 × 10 rows from a `.npy` file fit by `em` at ε = 1 in {r['wall (s)']} s of "
            f"wall time ({r['CPU (s)']} s CPU) with {r['peak RSS']} of memory, "
            + (f"{gap.group(1)} nat/row below scikit-learn" if float(gap.group(1)) > 0 else
               f"{gap.group(1).lstrip('-')} nat/row above scikit-learn's in-memory reference")
            + ".\n\n" + ctx.source("em_scale_2e7.md"))


def em_speed(ctx: Context) -> str:
    """Private EM's CPU time against scikit-learn's."""
    text = (RESULTS / "em_speed.md").read_text()
    m = re.search(r"CPU / sklearn: em ε = 1 \*\*([\d.]+)\*\*, em ε = 10000 \*\*([\d.]+)\*\*",
                  text)
    if m is None:
        raise ValueError("benchmarks/results/em_speed.md has no 'CPU / sklearn' summary line")
    t = table("em_speed.md", columns=("CPU / sklearn", "gap"))
    seeds = len({r["seed"] for r in t.rows})
    return (f"At n = 5e4, d = 10, k = 3 a fit takes {float(m.group(1)):.2g}× the CPU time of "
            f"scikit-learn's EM on the same rows at ε = 1 and {float(m.group(2)):.2g}× at "
            f"ε = 1e4 (median of {seeds} data seeds), where EM runs until a DP-released change "
            f"says it has converged.\n\n" + ctx.source("em_speed.md"))


def mixture_families(ctx: Context) -> str:
    """Wrong basins on generated mixture families."""
    t = table("mixture_families.md", columns=("wrong basins (gap > 0.05)", "families"))
    rows = [r for r in t.rows if "before" not in r["set"]
            and r.get("schedule", "main").endswith(("main", "(main)"))]  # the library's runs
    parts = [f"{r['wrong basins (gap > 0.05)']} of {r['families']} {r['set']} families at "
             f"{r['budget'].replace('eps=', 'ε = ').replace(', delta=', ', δ = ')}"
             for r in rows]
    return ("On randomly generated families (k 2–6, d 2–15, unequal weights down to 5 %, "
            "n = 5e4) fits that end more than 0.05 nat/row below scikit-learn's best of 5 "
            "inits: " + "; ".join(parts) + ".\n\n" + ctx.source("mixture_families.md"))


def _synth_verdicts(name: str) -> tuple[list[str], list[str]]:
    """The tables on which privgauss is best on every metric, and the other verdict lines, of a
    ``synth_peers.py`` results file."""
    best, behind = [], []
    for line in (RESULTS / name).read_text().splitlines():
        m = re.match(r"- (\w+)( \(held out\))?: privgauss (.*)$", line)
        if m is None:
            continue
        table_name = m.group(1) + (" (held out)" if m.group(2) else "")
        if m.group(3) == "best on every metric":
            best.append(table_name)
        else:
            behind.append(f"{table_name} {m.group(3)}")
    if not best and not behind:
        raise ValueError(f"benchmarks/results/{name} has no verdict lines")
    return best, behind


def synth_peers(ctx: Context) -> str:
    """privgauss's synthetic tables against MST and AIM, at the same nominal ε and at equal
    neighbour relations."""
    out = []
    for name, how in (("synth_peers.md", "At the same nominal ε = 1, δ = 1e-6"),
                      ("synth_peers_equal_neighbours.md",
                       "At equal guarantees under replace-one neighbours (privgauss given 2× "
                       "the peers' ρ, the least their add/remove runs cost under replace-one)")):
        best, behind = _synth_verdicts(name)
        out.append(f"{how}, privgauss is best on every metric on {len(best)} of "
                   f"{len(best) + len(behind)} tables ({', '.join(best)})"
                   + (f"; {'; '.join(behind)}" if behind else "") + ".")
    return ("Against smartnoise-synth's MST and AIM (given public bounds and 20 bins, which "
            "privgauss is not) on real tables, some held out of any tuning, with "
            "correlation MAE, 1-/2-way TV, R² of a linear and a boosted model trained on "
            "synthetic rows and tested on real held-out rows, held-out log-likelihood and time "
            "(medians over seeds; \"as good on\" counts the seeds on which privgauss matched the "
            "best peer). " + " ".join(out) + "\n\n"
            + ctx.source("synth_peers.md", "synth_peers_equal_neighbours.md"))


def real_corpus(ctx: Context) -> str:
    """The real-table corpus: the summary lines the benchmark writes."""
    text = (RESULTS / "real_corpus.md").read_text()
    bullets = re.findall(r"^\* \*\*(ε = [^*]+)\*\*: (.+)$", text, re.M)
    if not bullets:
        raise ValueError("benchmarks/results/real_corpus.md has no summary lines")
    t = table("real_corpus.md", columns=("table", "outcome", "gap (nat/row)"))
    n_tables = len({r["table"] for r in t.rows})
    held = len({r["table"] for r in t.rows if r.get("held out", "").strip()})
    out = [f"{n_tables} tables ({held} held out of any tuning); per setting, as the "
           "benchmark summarises it (gap: held-out mean log-likelihood of `np.cov` minus the "
           "fit's, nat/row; counts are seeds):", ""]
    out += [f"* **{s}**: {body}" for s, body in bullets]
    return "\n".join(out) + "\n\n" + ctx.source("real_corpus.md")


def clip_count_cost(ctx: Context) -> str:
    """The accuracy cost of the clipped count."""
    t = table("clip_count_cost.md", columns=("arm", "mean cov error"))
    worst = max(max(first(r["mean cov error"]), first(r["mean mean error"]))
                for r in t.rows if "ratio" in r["arm"])
    return (f"The share costs at most {100 * (worst - 1):.1f} % of accuracy on Gaussian data "
            f"({len([r for r in t.rows if 'ratio' in r['arm']])} settings).\n\n"
            + ctx.source("clip_count_cost.md"))


def noise_speed(ctx: Context) -> str:
    """Secure against fast noise."""
    t = table("noise_speed.md", columns=("sampler",))
    i, j = [k for k, c in enumerate(t.header) if c == "ratio"]  # vectorised, then per call
    vec = [first(c[i]) for c in t.cells if re.search(r"\d", c[i])]
    call = [first(c[j]) for c in t.cells if re.search(r"\d", c[j])]
    return (f"The fast path is {min(vec):.0f}–{max(vec):.0f}× faster per sample on arrays and "
            f"{min(call):.0f}–{max(call):.0f}× per scalar call.\n\n" + ctx.source("noise_speed.md"))


def _heavy(key: str) -> str:
    return table("heavy_tails.md", columns=("quantity", "value")).row(quantity=key)["value"]


def heavy_example(ctx: Context) -> str:
    """The README's heavy-tailed example at two budgets."""
    parts = []
    for rho in ("0.1", "0.5"):
        frac = _heavy(f"README example, rho = {rho}: clipped fraction (DP)")
        warned = _heavy(f"README example, rho = {rho}: ClippedDataWarning") == "yes"
        parts.append(f"{frac} at ρ = {rho} ({'with' if warned else 'without'} the warning)")
    return ("In the example below (1 % of the rows are gross errors) the DP fraction of rows "
            "outside the final ball is " + " and ".join(parts) + ".\n\n"
            + ctx.source("heavy_tails.md"))


def heavy_background(ctx: Context) -> str:
    """What the background does to a held-out gross row and to a typical one."""
    k = "README example, rho = 0.1: "
    fit = _heavy(k + "median log-density of held-out gross rows, fit")
    alone = float(_heavy(k + "median log-density of held-out gross rows, Gaussian alone"))
    typical = float(_heavy(k + "median log-density of held-out t(3) rows, fit minus Gaussian "
                               "alone"))
    w = _heavy(k + "background weight")
    return (f"In the example below a held-out gross row gets a log-density of {fit} nats "
            f"(median) instead of {alone:.2g} under the Gaussian alone, and a typical t(3) "
            f"row {typical:+.2g} nat against the Gaussian alone (the background's weight is "
            f"w = {w}: never below log(1 − w) = {math.log(1 - float(w)):.2g}).\n\n"
            + ctx.source("heavy_tails.md"))


def clip_scale(ctx: Context) -> str:
    """clip_scale on t(3) rows at ρ = 0.5 and in the guide's ε = 1 example."""
    k = "t(3), n = 2e4, d = 5, rho = 0.5, seeds 0-2, clip_scale = "
    g = "guide example"
    return (f"On t(3) rows (n = 2e4, d = 5, ρ = 0.5, a prior, seeds 0–2) the fitted variances "
            f"are {_heavy(k + '1: fitted variances (true 3)')} of the true 3 with the default "
            f"`clip_scale` and {_heavy(k + '2: fitted variances (true 3)')} with "
            f"`clip_scale=2` (DP fraction outside the final ball "
            f"{_heavy(k + '1: clipped fraction (DP)')} and "
            f"{_heavy(k + '2: clipped fraction (DP)')}); in the bound-free ε = 1 example of "
            f"[fitting real data]({ctx.prefix}docs/guide/fitting-real-data.md), "
            f"{_heavy(g + ': fitted variances (true 3)')} and "
            f"{_heavy(g + ', clip_scale = 2: fitted variances')}.\n\n"
            + ctx.source("heavy_tails.md"))


def real_data_example(ctx: Context) -> str:
    """The numbers of the fitting-real-data guide's example."""
    g = "guide example"
    return "\n".join([
        f"- **Sorting does not matter.** Every pairing, split and subsample is a random "
        f"permutation drawn from the fit's own noise, never the file order. Fitting the "
        f"shuffled file gives variances within "
        f"{_heavy(g + ': largest variance difference, shuffled rows')} of the sorted file's "
        f"(the same rows with another noise seed: within "
        f"{_heavy(g + ': largest variance difference, the same rows with noise seed 1')}).",
        f"- **The fit warns** (`ClippedDataWarning`: {_heavy(g + ': ClippedDataWarning')}): "
        f"`g.clipped_fraction_` (a DP estimate, 2 % of the budget) says "
        f"{_heavy(g + ': clipped fraction (DP)')} of the rows lie outside the fit's final "
        f"clipping ball, where Gaussian data would leave at most `g.clipped_fraction_alarm_` = "
        f"{_heavy(g + ': clipped fraction alarm')}.",
        f"- **The fit describes the central part.** Its variances are "
        f"{_heavy(g + ': fitted variances (true 3)')} per column; `np.cov` says "
        f"{_heavy(g + ': np.cov variances')} (the 1 % of rows multiplied by 1000 dominate it), "
        f"and the t(3) distribution's true variance is 3. With `clip_scale=2` the variances "
        f"are {_heavy(g + ', clip_scale = 2: fitted variances')} and the DP clipped fraction "
        f"{_heavy(g + ', clip_scale = 2: clipped fraction (DP)')}.",
        "", ctx.source("heavy_tails.md")])


def real_data_gross(ctx: Context) -> str:
    """The typical row under the fit against np.cov's, on the gross-error table."""
    t = table("real_data.md", columns=("case", "row gap"))
    gaps = [first(r["row gap"]) for r in t.rows if r["case"] == "gaussian + gross"]
    lo, hi = f"{-max(gaps):.0f}", f"{-min(gaps):.0f}"
    return (f"On Gaussian rows with 1 % gross errors the private fit describes the typical "
            f"held-out row better than `np.cov`'s fit does (median per-row log-likelihood "
            f"{lo if lo == hi else lo + '–' + hi} nat better, in both regimes) and the gross rows "
            f"much worse.\n\n" + ctx.source("real_data.md"))


def public_accuracy(ctx: Context) -> str:
    """The public-data Gaussian against the non-private estimator."""
    cov = table("gaussian_accuracy.md", heading="d+1 public", columns=("ours / np.cov",))
    w3 = table("gaussian_accuracy.md", heading="k = 1000", columns=("ours (1 public)",))
    last, one = cov.rows[-1], w3.row(n="1000")
    return (f"In practice, at d = 10, ρ = 0.5, n = {last['n']} the covariance error with d+1 "
            f"public rows is {last['ours / np.cov']}× that of `np.cov`; with one public row and "
            f"no bound the mean error at μ = 1000·1, d = 50 is {one['ours / non-private']}× "
            f"non-private at n = {one['n']}.\n\n" + ctx.source("gaussian_accuracy.md"))


def histogram_requirements(ctx: Context) -> str:
    """The bound-free route's stated n, and how fits at 1.2× it ended."""
    above = [t for t in tables("gaussian_requirements.md") if "stated n" in t.header
             and all(first(r["fitted n"]) > first(r["stated n"]) for r in t.rows)]
    if len(above) != 1:
        raise ValueError("gaussian_requirements.md: want one table of fits above the stated n")
    t = above[0]
    rows = [r for r in t.rows if r["method"] == "histogram"]
    needs = ", ".join(f"{int(r['stated n']):,} (d = {r['d']})" for r in rows)
    ok = ", ".join(f"{r['succeeded']} at d = {r['d']}" for r in rows)
    factor = first(t.rows[0]["fitted n"]) / first(t.rows[0]["stated n"])
    return (f"At (1, 1e-6) it states n ≥ {needs}; fits at {factor:.1f}× that n succeeded "
            f"{ok}.\n\n"
            + ctx.source("gaussian_requirements.md"))


BLOCKS: dict[str, Callable[[Context], str]] = {
    "public-accuracy": public_accuracy,
    "histogram-requirements": histogram_requirements,
    "heavy-example": heavy_example,
    "heavy-background": heavy_background,
    "clip-scale": clip_scale,
    "real-data-example": real_data_example,
    "real-data-gross": real_data_gross,
    "accuracy": accuracy,
    "coinpress-covariance": coinpress_covariance,
    "small-n": small_n,
    "gaussian-speed": gaussian_speed,
    "private-em": private_em,
    "em-scale": em_scale,
    "em-speed": em_speed,
    "mixture-families": mixture_families,
    "real-corpus": real_corpus,
    "clip-count-cost": clip_count_cost,
    "noise-speed": noise_speed,
    "synth-peers": synth_peers,
}


def fill(text: str, target: Path) -> str:
    """``text`` (the file ``target``) with every generated block rewritten."""
    ctx = Context(target)

    def one(m: re.Match[str]) -> str:
        name = m.group(2)
        if name not in BLOCKS:
            raise ValueError(f"{target.name}: no generated block named {name!r}")
        return m.group(1) + BLOCKS[name](ctx) + m.group(4)

    return BLOCK.sub(one, text)


def build() -> dict[Path, str]:
    """The generated text of every target file that has a generated block."""
    out = {}
    for path in TARGETS:
        text = path.read_text()
        if BLOCK.search(text):
            out[path] = fill(text, path)
    return out


def main(argv: list[str]) -> int:
    stale = [p for p, text in build().items() if p.read_text() != text]
    if "--check" in argv:
        for p in stale:
            print(f"{p.relative_to(ROOT)} is out of date: run python docs/build_readme.py",
                  file=sys.stderr)
        return 1 if stale else 0
    for p, text in build().items():
        p.write_text(text)
    print(f"rewrote {len(stale)} file(s): " + ", ".join(str(p.relative_to(ROOT)) for p in stale))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
