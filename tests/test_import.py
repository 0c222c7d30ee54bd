"""``import privgauss`` stays light: the heavy libraries are imported only by the code that uses
them (checked by module, not by a timing), and every public name still works."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import privgauss as pg

HEAVY = ("scipy.stats", "scipy.optimize", "sklearn", "dask", "matplotlib", "opendp", "tqdm",
         "pandas")


def _imported_by(code: str) -> set[str]:
    """The modules a fresh interpreter has imported after running ``code``: those ``-X
    importtime`` reports, and those in ``sys.modules`` (which also holds modules loaded by
    ``importlib.import_module``, which importtime does not report)."""
    src = str(Path(pg.__file__).resolve().parent.parent)  # this checkout, not an installed copy
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    code += "\nimport sys\nprint('\\n'.join(sys.modules))"
    res = subprocess.run([sys.executable, "-X", "importtime", "-c", code], env=env,
                         capture_output=True, text=True, timeout=120, check=True)
    timed = {line.rsplit("|", 1)[-1].strip() for line in res.stderr.splitlines()
             if line.startswith("import time:")}
    return timed | set(res.stdout.split())


def test_import_privgauss_imports_no_heavy_library() -> None:
    modules = _imported_by("import privgauss")
    assert {"privgauss", "privgauss.warnings", "sys"} <= modules  # the parse works
    loaded = sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))
    assert loaded == [], f"import privgauss imports {loaded}: defer them into the functions"


def test_lazy_names_load_on_first_use() -> None:
    modules = _imported_by("import privgauss as pg; pg.ZCDP(0.5); pg.audit")
    assert {"privgauss.privacy", "privgauss.audit"} <= modules
    assert "scipy.stats" not in modules  # the audit imports it when it computes bounds


@pytest.mark.parametrize("name", pg.__all__)
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(pg, name) is not None
    assert name in dir(pg)


def test_submodules_and_unknown_names() -> None:
    import privgauss.io
    import privgauss.sensitivity

    assert pg.io is privgauss.io and pg.sensitivity is privgauss.sensitivity
    assert pg.load is privgauss.io.load
    from privgauss import PrivateGaussian, mixture_requirements  # `from` imports work too

    assert PrivateGaussian is pg.estimators.PrivateGaussian
    assert mixture_requirements is pg.methods.mixture_requirements  # the registry's entry
    with pytest.raises(AttributeError):
        pg.no_such_name  # noqa: B018
    assert not hasattr(pg, "_private")


def test_dir_lists_only_the_public_api() -> None:
    """dir(pg) (tab completion) lists the public API, not this module's imports (issue #29);
    the submodules still resolve as attributes."""
    names = dir(pg)
    for stray in ("Any", "TYPE_CHECKING", "sys", "annotations", "importlib",
                  "typing", "exceptions", "_version", "estimators", "gaussian", "mixture"):
        assert stray not in names
    assert set(names) == set(pg.__all__) | {"audit", "datasets", "io", "metrics", "theory",
                                            "warnings"}
    assert "save" in names and "load" in names
    assert len(names) == len(set(names))  # each name once (audit, theory … are also in __all__)
    for module in ("audit", "datasets", "io", "metrics", "theory", "warnings"):
        assert getattr(pg, module).__name__ == f"privgauss.{module}"
    assert pg.warnings.PrivacyWarning is pg.PrivacyWarning  # still an attribute


def test_save_beside_load_round_trips(tmp_path: Path) -> None:
    import numpy as np

    import privgauss.io

    assert pg.save is privgauss.io.save
    X = np.random.default_rng(0).normal(size=(500, 2))
    g = pg.PrivateGaussian(rho=0.5, covariance="identity", mean_bound=10.0, method="clip",
                           random_state=0).fit(X)
    path = tmp_path / "g.json"
    pg.save(g, path)
    back = pg.load(path)
    assert isinstance(back, pg.PrivateGaussian)
    np.testing.assert_array_equal(back.mean_, g.mean_)
    np.testing.assert_array_equal(back.covariance_, g.covariance_)
