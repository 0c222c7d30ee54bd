"""Generate ``docs/api.md`` from the docstrings of the public privgauss modules.

Usage: ``python docs/build_api.py`` (writes docs/api.md and the method tables of
docs/guide/index.md, which are generated from the method registry ``privgauss.methods``), or
``python docs/build_api.py --check`` (exit status 1 if either is not current).
``tests/test_docs.py`` runs the check.

Every module of the package is included except private ones (a name starting with ``_``) and the
command line; a module's public objects are its ``__all__`` or, without one, the functions and
classes it defines whose names do not start with ``_``.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent / "api.md"
GUIDE = OUT.parent / "guide" / "index.md"
SKIP = {"privgauss.cli"}
HEADER = (
    "# privgauss API reference\n\n"
    "Generated from the docstrings by `python docs/build_api.py`; do not edit by hand. "
    "The user guide per method is in [`guide/`](guide/).\n"
)


def _modules() -> list[str]:
    import privgauss

    names = ["privgauss"]
    for info in pkgutil.walk_packages(privgauss.__path__, "privgauss."):
        if any(part.startswith("_") for part in info.name.split(".")) or info.name in SKIP:
            continue
        names.append(info.name)
    return sorted(names)


def _doc(obj: Any) -> str:
    doc = inspect.getdoc(obj) or "(no docstring)"
    return re.sub(r" at 0x[0-9a-f]+", "", doc)


def _signature(obj: Any) -> str:
    try:
        sig = str(inspect.signature(obj))
    except (TypeError, ValueError):
        return ""
    return re.sub(r" at 0x[0-9a-f]+", "", sig)


def _public(module: Any) -> list[tuple[str, Any]]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [
            n
            for n, o in vars(module).items()
            if not n.startswith("_")
            and (inspect.isfunction(o) or inspect.isclass(o))
            and getattr(o, "__module__", None) == module.__name__
        ]
    objs = [(n, getattr(module, n, None)) for n in sorted(names)]
    return [(n, o) for n, o in objs if o is not None and not inspect.ismodule(o)]


def _members(cls: type) -> list[tuple[str, Any]]:
    out = []
    for n, o in vars(cls).items():
        if n.startswith("_"):
            continue
        if inspect.isfunction(o) or isinstance(o, property | classmethod | staticmethod):
            out.append((n, o))
    return sorted(out)


def _object(name: str, obj: Any, module: str) -> list[str]:
    home = getattr(obj, "__module__", None) if callable(obj) else None
    if home not in (module, None):  # re-exported: documented in its home module
        summary = _doc(obj).split("\n\n")[0].replace("\n", " ")
        return [f"- `{name}` — {summary} See [`{home}`](#{home.replace('.', '')}).", ""]
    if inspect.isclass(obj):
        lines = [f"### class `{name}{_signature(obj)}`", "", _doc(obj), ""]
        for mname, member in _members(obj):
            target = member.fget if isinstance(member, property) else member
            if isinstance(member, classmethod | staticmethod):
                target = member.__func__
            sig = "" if isinstance(member, property) else _signature(target)
            kind = "property " if isinstance(member, property) else ""
            lines += [f"#### {kind}`{name}.{mname}{sig}`", "", _doc(target), ""]
        return lines
    if callable(obj):
        return [f"### `{name}{_signature(obj)}`", "", _doc(obj), ""]
    text = repr(obj)
    text = text if len(text) <= 200 else text[:200] + " …"
    return [f"### `{name}`", "", f"`{type(obj).__name__}`: {re.sub(r' at 0x[0-9a-f]+', '', text)}",
            ""]


def build() -> str:
    """The text of docs/api.md."""
    parts = [HEADER, "## Modules", ""]
    mods = _modules()
    parts += [f"- [`{m}`](#{m.replace('.', '')})" for m in mods] + [""]
    for name in mods:
        module = importlib.import_module(name)
        parts += [f"## {name}", "", _doc(module), ""]
        for obj_name, obj in _public(module):
            parts += _object(obj_name, obj, name)
    return "\n".join(parts).rstrip() + "\n"


def guide_index(text: str) -> str:
    """``text`` (docs/guide/index.md) with each method table — between the markers
    ``<!-- methods:KIND: ... -->`` and ``<!-- /methods -->`` — generated from the registry."""
    from privgauss import methods

    for kind in methods.KINDS:
        pattern = re.compile(rf"(<!-- methods:{kind}:[^\n]*-->\n).*?(<!-- /methods -->)", re.S)
        if not pattern.search(text):
            raise ValueError(f"docs/guide/index.md has no <!-- methods:{kind}: ... --> marker")
        table = methods.method_table(kind)
        text = pattern.sub(lambda m, t=table: m.group(1) + t + "\n" + m.group(2), text)
    return text


def main(argv: list[str]) -> int:
    text = build()
    guide = guide_index(GUIDE.read_text())
    if "--check" in argv:
        current = OUT.read_text() if OUT.exists() else ""
        if current != text or guide != GUIDE.read_text():
            print("docs/api.md or docs/guide/index.md is out of date: run python "
                  "docs/build_api.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    GUIDE.write_text(guide)
    print(f"wrote {OUT} and the method tables of {GUIDE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
