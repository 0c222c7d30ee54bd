"""Column kinds of a synthetic table, in and out (issue 28): read from declared dtypes, restored.

A column's kind — ``float``, ``integer`` or ``binary`` (:data:`~.marginals.KINDS`),
``category`` for a string, object or pandas ``category`` dtype (:mod:`.categories`), or
``auto`` for a float dtype, which a DP test resolves (:func:`~.marginals.release_types`) — comes
from the caller or from the input's declared dtypes (a DataFrame's per column, an array's
one), **never from the values**: so reading it costs no budget and is the same for
neighbouring datasets. On the way out, synthetic columns (already whole numbers within their
released ranges for integer and 0/1 kinds) are cast back to the input's dtypes:
post-processing of DP releases, free.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..exceptions import InvalidDataError
from .marginals import KINDS

#: the kinds a caller may give a column (the marginals' three, "category" and "auto")
COLUMN_KINDS = (*KINDS, "category", "auto")


def kind_of_dtype(dt: Any) -> str:
    """A column's kind from its public dtype: ``binary``, ``integer``, ``category`` (strings,
    objects, pandas categoricals) or ``auto``."""
    try:
        kind = np.dtype(dt).kind
    except TypeError:  # pandas extension dtypes
        name = str(dt).lower()
        kind = ("b" if name.startswith("bool") else "i" if "int" in name
                else "O" if name in ("category", "str", "string", "object")
                or name.startswith("string") else "f")
    # a float dtype does not say whether the values are whole: a DP test decides ("auto")
    return {"b": "binary", "i": "integer", "u": "integer", "O": "category", "U": "category",
            "S": "category"}.get(kind, "auto")


def declared_kinds(X: Any, d: int) -> list[str]:
    """The kinds of the ``d`` columns of ``X`` from its declared dtypes (a DataFrame's per
    column, else the array's one dtype for all)."""
    dtypes = getattr(X, "dtypes", None)
    if dtypes is not None and not isinstance(X, np.ndarray):  # a DataFrame: per column
        return [kind_of_dtype(t) for t in list(dtypes)]
    dt = getattr(X, "dtype", None)
    return [kind_of_dtype(dt)] * d


def declared_dtypes(X: Any, d: int) -> list[str]:
    """The input's dtype names, one per column (a DataFrame's, else the array's; float64 for
    a plain sequence): what :func:`cast_column` restores."""
    if getattr(X, "columns", None) is not None and not isinstance(X, np.ndarray):
        return [str(t) for t in getattr(X, "dtypes", [])]
    return [str(getattr(X, "dtype", "float64"))] * d


def kinds_of(X: Any, d: int, kinds: Sequence[str] | Mapping[str, str] | None,
             names: list[str]) -> list[str]:
    """Each column's kind: the caller's (a list, or a dict by column name, the rest
    declared), else the declared dtype's (:func:`declared_kinds`) — never the values.
    Raises ``InvalidDataError`` on an unknown column or kind (before anything is spent)."""
    if isinstance(kinds, Mapping):
        unknown = [c for c in kinds if c not in names]
        if unknown:
            raise InvalidDataError(f"kinds names unknown column(s) {unknown}")
        declared = declared_kinds(X, d)
        out = [kinds.get(c, declared[j]) for j, c in enumerate(names)]
    elif kinds is not None:
        out = list(kinds)
    else:
        out = declared_kinds(X, d)
    if len(out) != d or any(k not in COLUMN_KINDS for k in out):
        raise InvalidDataError(f"kinds must give one of {COLUMN_KINDS} for each of the {d} "
                               "columns")
    return out


def cast_column(x: np.ndarray, dtype: str, kind: str) -> Any:
    """A synthetic column in the input's dtype (bool for 0/1 flags declared bool)."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = np.dtype("float64") if kind == "float" else np.dtype("int64")
    if dt.kind == "b":
        return x.astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return np.clip(x, info.min, info.max).astype(dt)
    if kind != "float" and dt.kind == "f":
        return x.astype(dt)
    return x.astype(dt) if dt.kind == "f" else x


def cast_array(rows: np.ndarray, dtype: Any, kinds: Sequence[str]) -> np.ndarray:
    """Synthetic rows of an array input in its dtype when every column has one kind (an
    array's single dtype can be kept), else as they are."""
    if dtype is None or len(set(kinds)) != 1:
        return rows
    return np.asarray(cast_column(rows, str(dtype), kinds[0]))
