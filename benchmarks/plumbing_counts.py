"""Functions of ``src/privgauss`` that take the estimator, or both an accountant and a noise
source (issue 29's plumbing counts), listed by an AST walk over the sources.

A function takes the estimator when it has a parameter ``est`` or ``estimator`` that is not
annotated ``str`` (public-heavy's ``estimator=`` names a CoinPress variant); it takes an
accountant and a noise source when it has a parameter named ``acct``/``accountant`` (or
annotated ``Accountant``) and one named ``noise``/``noise_source``/``src`` (or annotated
``NoiseSource``).

    python benchmarks/plumbing_counts.py [src/privgauss]
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ACC = {"acct", "accountant", "acc"}
NOISE = {"noise", "noise_source", "src"}


def counts(root: Path) -> tuple[list[str], list[str]]:
    takes_est, takes_both = [], []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            params = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            annots = {p.arg: ast.unparse(p.annotation) if p.annotation else "" for p in params}
            where = f"{path.relative_to(root)}:{node.lineno} {node.name}"
            if any(p.arg in ("est", "estimator") and annots[p.arg] not in ("str", "str | None")
                   for p in params):
                takes_est.append(where)
            if (any(n in ACC or "Accountant" in a for n, a in annots.items())
                    and any(n in NOISE or "NoiseSource" in a for n, a in annots.items())):
                takes_both.append(where)
    return takes_est, takes_both


if __name__ == "__main__":
    root = Path(sys.argv[1] if len(sys.argv) > 1 else
                Path(__file__).resolve().parents[1] / "src" / "privgauss")
    est, both = counts(root)
    print(f"taking the estimator: {len(est)}")
    print("".join(f"  {w}\n" for w in est), end="")
    print(f"taking an accountant and a noise source: {len(both)}")
    print("".join(f"  {w}\n" for w in both), end="")
