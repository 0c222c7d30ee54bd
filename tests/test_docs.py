"""The committed API reference is current (regenerate with ``python docs/build_api.py``) and
the user guide covers every registered method."""

from __future__ import annotations

import importlib.util
from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _builder():  # noqa: ANN202
    spec = importlib.util.spec_from_file_location("build_api", DOCS / "build_api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_api_reference_is_current() -> None:
    assert (DOCS / "api.md").read_text() == _builder().build(), (
        "docs/api.md is out of date: run python docs/build_api.py"
    )


def test_method_tables_are_generated_from_the_registry() -> None:
    """docs/guide/index.md's method tables are the registry's (python docs/build_api.py)."""
    from privgauss import methods

    text = (DOCS / "guide" / "index.md").read_text()
    assert _builder().guide_index(text) == text, (
        "docs/guide/index.md's method tables are out of date: run python docs/build_api.py"
    )
    for kind in methods.KINDS:
        for name in methods.names(kind):
            assert f"| `{name}` | {methods.get(kind, name).summary} |" in text


def test_every_registered_method_has_a_guide() -> None:
    from privgauss.estimators.gaussian import METHODS as GAUSSIAN
    from privgauss.estimators.mixture import METHODS as MIXTURE

    for method in [m for m in GAUSSIAN if m != "auto"] + list(MIXTURE):
        assert (DOCS / "guide" / f"{method}.md").exists(), f"docs/guide/{method}.md is missing"


def test_readme_python_examples_run(tmp_path, monkeypatch) -> None:
    """Every ```python block of the README runs, in order, in one namespace (as a newcomer
    would paste them), and the cross-validation and grid-search example spends exactly its
    fits and DP scores."""
    import re
    import warnings

    readme = (DOCS.parent / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
    assert len(blocks) >= 4
    monkeypatch.chdir(tmp_path)  # the example writes model.json
    ns: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for block in blocks:
            exec(compile(block, "README.md", "exec"), ns)  # noqa: S102
    import privgauss as pg

    # 3 + 5 fits of 0.1 and 3 + 4 DP scores of 0.02, all charged to the one accountant
    assert abs(ns["acct"].spent.rho - 0.94) < 1e-12
    assert abs(ns["acct"].remaining.rho - 0.06) < 1e-12
    assert [e.step for e in ns["acct"].ledger].count("score") == 7
    assert isinstance(ns["dp_score"], pg.DPScorer) and ns["scores"].shape == (3,)
