"""The package's layers import only downward (DESIGN.md, "Layers"): no import cycle — counting
imports inside functions, which hide cycles from Python's import machinery — and no module
importing a layer above its own."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"

# DESIGN.md's layers, lowest first; "beside" modules (shared helpers) sit between the
# mechanisms and the algorithms: anything below the algorithms may use them, and they use
# nothing above the mechanisms.
LAYERS = [
    ("base", ["privgauss._version", "privgauss.exceptions", "privgauss.warnings",
              "privgauss.progress"]),
    ("privacy", ["privgauss.privacy"]),
    ("noise", ["privgauss.noise", "privgauss.sensitivity", "privgauss.calibration"]),
    ("mechanisms", ["privgauss.mechanisms"]),
    ("beside", ["privgauss.linalg", "privgauss.backends", "privgauss.bin_counts",
                "privgauss.clipped_stats",
                "privgauss.metrics", "privgauss.densities",
                "privgauss.datasets", "privgauss.validation"]),
    # the theorems' sample-size formulas read the algorithms' own radii and plans
    ("algorithms", ["privgauss.gaussian", "privgauss.mixture", "privgauss.reductions",
                    "privgauss.theory"]),
    # the method registry: one module per method, reading the algorithms
    ("methods", ["privgauss.methods"]),
    ("estimators", ["privgauss.estimators"]),
    ("entry", ["privgauss.io", "privgauss.model_files", "privgauss.synthesis", "privgauss.audit",
               "privgauss.experiments", "privgauss.plots", "privgauss.cli", "privgauss"]),
]


def _modules() -> dict[str, Path]:
    out = {}
    for path in (SRC / "privgauss").rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text())):
            targets = []
            if isinstance(node, ast.ImportFrom):
                base = (package[: len(package) - node.level + 1] if node.level else [])
                mod = ".".join(base + ([node.module] if node.module else []))
                targets = [f"{mod}.{a.name}" for a in node.names] + [mod]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for t in targets:
                while t and t not in mods:
                    t = t.rpartition(".")[0]
                if t and t != name and t.startswith("privgauss"):
                    graph[name].add(t)
    # `from . import x` also names the package itself: keep the submodule only
    for name, deps in graph.items():
        graph[name] = {t for t in deps if not any(u.startswith(t + ".") for u in deps)}
    return graph


def _rank(module: str) -> int:
    best = -1
    for rank, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if module == p or module.startswith(p + "."):
                best = max(best, rank) if p != "privgauss" or module == "privgauss" else best
    assert best >= 0, f"{module} is in no layer: add it to DESIGN.md's list and to LAYERS"
    return best


def test_no_import_cycle():
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    assert cycles == [], f"import cycles: {cycles}"


def test_layers_import_only_downward():
    upward = [(m, t) for m, deps in _graph().items() for t in deps
              if m != "privgauss" and _rank(t) > _rank(m)]
    assert upward == [], "imports of a higher layer: " + ", ".join(f"{m} -> {t}"
                                                                  for m, t in sorted(upward))


def _fake_tree(tmp_path, monkeypatch, files: dict[str, str]) -> None:
    """A ``privgauss/gaussian`` package under ``tmp_path`` holding ``files``, read by the
    checkers in place of the real source."""
    pkg = tmp_path / "privgauss"
    (pkg / "gaussian").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "gaussian" / "__init__.py").write_text("")
    for name, text in files.items():
        (pkg / "gaussian" / name).write_text(text)
    monkeypatch.setattr(__import__(__name__), "SRC", tmp_path)


def test_the_checker_sees_function_level_imports(tmp_path, monkeypatch):
    """A cycle hidden in a function body is found (the checker reads every import)."""
    _fake_tree(tmp_path, monkeypatch, {"a.py": "from . import b\n",
                                       "b.py": "def f():\n    from .a import x\n"})
    graph = _graph()
    assert "privgauss.gaussian.a" in graph["privgauss.gaussian.b"]
    assert "privgauss.gaussian.b" in graph["privgauss.gaussian.a"]


def _private_imports() -> set[tuple[str, str, str]]:
    """(importer, module, name) for every ``from <privgauss module> import _name`` — at module
    level or in a function — whose name is not a submodule (``from . import _auto`` is)."""
    mods = _modules()
    out = set()
    for name, path in mods.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = (package[: len(package) - node.level + 1] if node.level else [])
            mod = ".".join(base + ([node.module] if node.module else []))
            if not mod.startswith("privgauss"):
                continue
            for a in node.names:
                if (a.name.startswith("_") and not a.name.startswith("__")
                        and f"{mod}.{a.name}" not in mods):
                    out.add((name, mod, a.name))
    return out


def test_no_module_imports_another_modules_private_names():
    new = sorted(_private_imports())
    assert new == [], "imports of another module's _private names: " + ", ".join(
        f"{m} <- {t}.{n}" for m, t, n in new)


def test_the_private_import_checker_sees_them(tmp_path, monkeypatch):
    _fake_tree(tmp_path, monkeypatch, {
        "_helpers.py": "_X = 1\n", "a.py": "_Y = 2\n",
        "b.py": "from . import _helpers\n\n\ndef f():\n    from .a import _Y\n"})
    assert _private_imports() == {("privgauss.gaussian.b", "privgauss.gaussian.a", "_Y")}
