"""Files in and out: data tables (CSV, Parquet, .npy), model files (JSON), atomic writes.

**Column names come from the file format and the caller, never from a row's content.** A
CSV/TSV file has a header line unless the caller says it has none (``header=False``; on the
command line ``--no-header``): then its columns are named ``"0"``, ``"1"``, …. A declared header
whose names are numbers, empty or repeated is refused (the file probably has no header: its
first line would be a record), with a message that quotes no cell. Parquet files name their
columns; ``.npy`` files never do. So no value of a data row can become a column name, and from
there reach a model file, a message, a plot or a synthetic file (DESIGN.md, rule 14).

A **model file** is the JSON of an estimator's ``to_dict()``: the fitted (DP) parameters, the
privacy guarantee (notion, budget, what was spent, the neighbour relation), the ledger of every
release (public metadata only: step, mechanism, cost, sensitivity, noise scale), the library
version and the method. Nothing else derived from the private data is stored. :func:`load`
gives back a fitted :class:`~privgauss.PrivateGaussian` or
:class:`~privgauss.PrivateGaussianMixture` whose ``score_samples``, ``sample`` (and ``predict``)
work in bounded time.

A model file is a **record, not a certificate**: :func:`load` checks that it is consistent
and usable, and refuses it otherwise (:mod:`privgauss.model_files`).

Messages about bad data name files, columns and shapes only, never cell values or row numbers.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .exceptions import InvalidDataError
from .model_files import from_dict, replay_ledger

__all__ = [
    "atomic_path",
    "column_names",
    "from_dict",
    "load",
    "read_table",
    "replay_ledger",
    "save",
    "valid_header",
    "write_atomic",
    "write_table",
]

_CSV_SUFFIXES = {".csv": ",", ".txt": ",", ".tsv": "\t"}


# ----------------------------------------------------------------------------------------------
# Atomic output
# ----------------------------------------------------------------------------------------------


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temporary path next to ``path``; renamed onto ``path`` only if the block succeeds.

    On any exception (including Ctrl-C) the temporary file is removed and ``path`` is left as
    it was: never a half-written file.
    """
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise InvalidDataError(f"cannot write {path}: folder {parent} does not exist")
    fd, tmp = tempfile.mkstemp(dir=parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600 files; give the usual mode
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file and a rename."""
    with atomic_path(path) as tmp, open(tmp, "w") as fh:
        fh.write(text)


# ----------------------------------------------------------------------------------------------
# Data tables
# ----------------------------------------------------------------------------------------------


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


# one message whatever is wrong, naming no cell: when the file has no header after all, its
# first line is a record, and which of its cells parse as numbers must not show
_BAD_HEADER = (
    "{name}: its first line is read as the header, but its column names are not all distinct, "
    "non-empty and non-numeric; if the file has no header line, pass header=False"
)


def valid_header(names: list[str]) -> bool:
    """Whether ``names`` can be a table's header: distinct, non-empty and none a number (so a
    CSV written with it reads back with the same columns)."""
    return len(set(names)) == len(names) and all(n and not _is_number(n) for n in names)


def _header(row: list[str], path: Path) -> list[str]:
    """The column names of a declared header line, refused unless :func:`valid_header`."""
    names = [c.strip() for c in row]
    if not valid_header(names):
        raise InvalidDataError(_BAD_HEADER.format(name=path.name))
    return names


def _select(names: list[str], columns: list[str] | None, path: Path) -> list[int]:
    if columns is None:
        return list(range(len(names)))
    repeated = sorted({c for c in columns if columns.count(c) > 1})
    if repeated:
        raise InvalidDataError(
            f"--columns lists {repeated} more than once: give each column once"
        )
    missing = [c for c in columns if c not in names]
    if missing:
        raise InvalidDataError(f"{path.name} has no column(s) {missing}; it has {names}")
    return [names.index(c) for c in columns]


def _csv_rows(path: Path) -> Iterator[list[str]]:
    """The non-empty rows of a CSV/TSV file, split into cells: UTF-8 text, whose byte-order
    mark (a spreadsheet's export) is not part of the first column's name; other bytes are
    refused (the message quotes none of them)."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            yield from (r for r in csv.reader(fh, delimiter=_CSV_SUFFIXES[path.suffix.lower()])
                        if r)
    except UnicodeDecodeError:
        raise InvalidDataError(f"{path.name} is not UTF-8 text; save it as UTF-8 (CSV UTF-8) "
                               "and try again") from None


def _with_text(cols: list[np.ndarray], text: list[bool]) -> np.ndarray:
    """The columns side by side: a float array, or an object array when some column is text
    (its cells strings, the others floats)."""
    if not any(text):
        return np.column_stack(cols)
    out = np.empty((len(cols[0]), len(cols)), dtype=object)
    for j, c in enumerate(cols):
        out[:, j] = c
    return out


def _read_csv(
    path: Path, columns: list[str] | None, header: bool, text: Sequence[str] | None = None
) -> tuple[np.ndarray, list[str]]:
    rows = list(_csv_rows(path))
    if not rows:
        raise InvalidDataError(f"{path.name} is empty: it has no data rows")
    names = _header(rows[0], path) if header else [str(i) for i in range(len(rows[0]))]
    body = rows[1:] if header else rows
    if not body:
        raise InvalidDataError(f"{path.name} is empty: it has a header but no data rows")
    width = len(names)
    if any(len(r) != width for r in body):
        like = "the header" if header else "the first row"
        raise InvalidDataError(
            f"{path.name}: every row must have {width} cells, like {like}; some do not"
        )
    idx = _select(names, columns, path)
    cols = []
    texts = text or ()
    for col in idx:
        if names[col] in texts:  # a categorical column: its cells as they are
            cols.append(np.array([r[col].strip() for r in body], dtype=object))
            continue
        try:
            cols.append(np.array([float(r[col]) for r in body]))
        except ValueError:
            raise InvalidDataError(
                f"{path.name}: column {names[col]!r} has non-numeric or empty cells; every "
                "selected column must hold numbers only (choose columns with --columns"
                + (", or flag a column of categories with --categorical" if text is not None
                   else "") + ")"
            ) from None
    return _with_text(cols, [names[i] in texts for i in idx]), [names[i] for i in idx]


def _parquet_names(path: Path) -> list[str]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InvalidDataError("reading Parquet needs pyarrow: pip install pyarrow") from None
    try:
        return [str(n) for n in pq.read_schema(path).names]
    except Exception as exc:  # pyarrow raises several types for unreadable files
        raise InvalidDataError(f"{path.name} is not a readable Parquet file") from exc


def _read_parquet(path: Path, columns: list[str] | None, text: Sequence[str] = ()
                  ) -> tuple[np.ndarray, list[str]]:
    names = _parquet_names(path)
    import pyarrow.parquet as pq
    import pyarrow.types as pat

    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises several types for unreadable files
        raise InvalidDataError(f"{path.name} is not a readable Parquet file") from exc
    if table.num_rows == 0 or not names:
        raise InvalidDataError(f"{path.name} is empty: it has no data rows")
    idx = _select(names, columns, path)
    cols = []
    for i in idx:
        col = table.column(i)
        if names[i] in text:  # a categorical column: its values as strings (nulls kept)
            cols.append(np.array([None if v is None else str(v) for v in col.to_pylist()],
                                 dtype=object))
            continue
        if not (pat.is_integer(col.type) or pat.is_floating(col.type) or pat.is_boolean(col.type)):
            raise InvalidDataError(
                f"{path.name}: column {names[i]!r} is not numeric (type {col.type}); choose "
                "numeric columns with --columns"
            )
        cols.append(col.to_numpy(zero_copy_only=False).astype(np.float64))
    return _with_text(cols, [names[i] in text for i in idx]), [names[i] for i in idx]


def _read_npy(path: Path, columns: list[str] | None) -> tuple[np.ndarray, list[str]]:
    if columns:
        raise InvalidDataError("--columns needs a CSV or Parquet file")
    try:
        arr = np.load(path, allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise InvalidDataError(f"{path.name} is not a readable .npy array") from exc
    if arr.size == 0:
        raise InvalidDataError(f"{path.name} is empty (shape {arr.shape})")
    if arr.dtype.kind not in "biuf":
        raise InvalidDataError(f"{path.name} has non-numeric dtype {arr.dtype}")
    width = arr.shape[1] if arr.ndim == 2 else 1
    return arr, [str(i) for i in range(width)]


def _table_path(path: str | Path) -> tuple[Path, str]:
    """The path of an existing table file and its (lower-case, supported) suffix."""
    p = Path(path)
    if not p.is_file():
        raise InvalidDataError(f"file not found: {path}")
    suffix = p.suffix.lower()
    if suffix not in (".npy", ".parquet", *_CSV_SUFFIXES):
        raise InvalidDataError(
            f"unsupported file type {suffix!r}: use .csv, .tsv, .parquet or .npy"
        )
    return p, suffix


def column_names(path: str | Path, *, header: bool = True) -> list[str] | None:
    """The column names a table file gives its columns — a Parquet file's, a CSV/TSV file's
    header line (unless ``header=False``; refused as :func:`read_table` refuses it) — or None
    for a file without names (``.npy``, a CSV/TSV without a header). Reads no data row."""
    p, suffix = _table_path(path)
    if suffix == ".parquet":
        return _parquet_names(p)
    if suffix == ".npy" or not header:
        return None
    first = next(_csv_rows(p), None)
    if first is None:
        raise InvalidDataError(f"{p.name} is empty: it has no data rows")
    return _header(first, p)


def table_columns(path: str | Path, *, header: bool = True) -> list[str]:
    """:func:`column_names`, else positions "0", "1", … of a file that names none (the width
    of a CSV/TSV file's first line, of a .npy array): the names :func:`read_table` gives its
    columns. Reads no data row beyond a CSV's first line."""
    named = column_names(path, header=header)
    if named is not None:
        return named
    p, suffix = _table_path(path)
    if suffix == ".npy":
        try:
            shape = np.load(p, mmap_mode="r", allow_pickle=False).shape
        except (ValueError, OSError) as exc:
            raise InvalidDataError(f"{p.name} is not a readable .npy array") from exc
        width = shape[1] if len(shape) == 2 else 1
    else:
        width = len(next(_csv_rows(p), []))
    return [str(i) for i in range(width)]


def read_table(
    path: str | Path, columns: str | list[str] | None = None, *, with_names: bool = False,
    header: bool = True, text: Sequence[str] | None = None,
) -> Any:
    """Rows of a CSV/TSV, Parquet or .npy file as a float array (only ``columns``, if given).

    A CSV/TSV file's first line is its header — distinct, non-empty names that are not
    numbers, or the file is refused — unless ``header=False`` says it has none: its columns
    are then named ``"0"``, ``"1"``, … (as a ``.npy`` file's are; ``header`` is ignored for
    Parquet and ``.npy``). Whether there is a header is never guessed from the file's content.
    ``columns`` is a list or a comma-separated string of names, each at most once.
    ``with_names=True`` returns ``(array, column names)``. ``text``: names of categorical
    columns of a CSV/TSV or Parquet file, read as strings (the array is then an object
    array, the other columns' cells floats; given, even empty, a CSV's non-numeric column is
    refused with a hint to flag it).
    Raises :class:`~privgauss.exceptions.InvalidDataError` with a one-line message for a
    missing file or column, a bad header, an empty file, ragged rows or non-numeric cells.
    """
    p, suffix = _table_path(path)
    cols = [c.strip() for c in columns.split(",")] if isinstance(columns, str) else columns
    if suffix == ".npy":
        if text:
            raise InvalidDataError(f"{p.name}: a .npy array holds numbers only; categorical "
                                   "columns need a CSV or Parquet file")
        out = _read_npy(p, cols)
    elif suffix == ".parquet":
        out = _read_parquet(p, cols, text or ())
    else:
        out = _read_csv(p, cols, header, text)
    return out if with_names else out[0]


# ----------------------------------------------------------------------------------------------
# Model files
# ----------------------------------------------------------------------------------------------


def write_table(path: str | Path, X: np.ndarray, names: list[str]) -> None:
    """Write rows ``X`` with column ``names`` atomically, by the file's ending: ``.csv`` (a header
    row, full float precision), ``.parquet`` (needs pyarrow) or ``.npy`` (no names)."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in (".csv", ".parquet", ".npy"):
        raise InvalidDataError(f"{p.name}: write .csv, .parquet or .npy")
    if len(names) != X.shape[1]:
        raise InvalidDataError(f"{len(names)} column names for {X.shape[1]} columns")
    with atomic_path(p) as tmp:
        if suffix == ".npy":
            with open(tmp, "wb") as fh:
                np.save(fh, X)
        elif suffix == ".csv":
            with open(tmp, "w", newline="", encoding="utf-8") as fh:
                writer = csv.writer(fh)
                writer.writerow(names)
                writer.writerows([repr(float(v)) for v in row] for row in X)
        else:
            try:
                import pyarrow as pa
                import pyarrow.parquet as pq
            except ImportError:
                raise InvalidDataError(
                    "writing .parquet needs pyarrow: pip install pyarrow"
                ) from None
            table = pa.table({name: X[:, j] for j, name in enumerate(names)})
            pq.write_table(table, str(tmp))


def save(model: Any, path: str | Path) -> None:
    """Write a fitted estimator's model file (``model.to_dict()`` as JSON), atomically.

    The file holds DP outputs and public metadata only (the parameters, the diagnostics and
    the privacy report with its ledger); :func:`load` reads it back. Saving spends nothing.

    Parameters
    ----------
    model : PrivateGaussian or PrivateGaussianMixture
        A fitted estimator.
    path : str or Path
        The file to write (replaced atomically when it exists).

    Returns
    -------
    None

    Examples
    --------
    >>> import os, tempfile, numpy as np, privgauss as pg
    >>> X = np.random.default_rng(0).normal(size=(2000, 2))           # private rows
    >>> g = pg.PrivateGaussian(rho=0.5, mean_bound=10, cov_bounds=(0.1, 10)).fit(X)
    >>> path = os.path.join(tempfile.mkdtemp(), "model.json")
    >>> pg.save(g, path)
    >>> loaded = pg.load(path)
    >>> bool((loaded.mean_ == g.mean_).all()), str(loaded.privacy_spent_)
    (True, '0.5-zCDP')
    """
    write_atomic(path, json.dumps(model.to_dict(), indent=2) + "\n")


def load(path: str | Path) -> Any:
    """A fitted ``PrivateGaussian`` or ``PrivateGaussianMixture`` from a model file.

    Loading spends no budget: the parameters are already DP outputs. The file is checked for
    consistency (see the module docstring), not for truth: it is a record, not a certificate.

    Parameters
    ----------
    path : str or Path
        A model file written by :func:`save` (or the command line's ``fit --out``).

    Returns
    -------
    PrivateGaussian or PrivateGaussianMixture
        The fitted estimator: parameters, diagnostics, ``budget_``, ``ledger_`` and
        ``privacy_spent_`` as at fit; ``loaded_version_`` the library version that wrote it.

    Raises
    ------
    InvalidDataError
        A missing file, or one that is not a consistent privgauss model (the field is named).

    Examples
    --------
    >>> import os, tempfile, numpy as np, privgauss as pg
    >>> X = np.random.default_rng(0).normal(size=(2000, 2))           # private rows
    >>> path = os.path.join(tempfile.mkdtemp(), "model.json")
    >>> pg.save(pg.PrivateGaussian(rho=0.5, mean_bound=10, cov_bounds=(0.1, 10)).fit(X), path)
    >>> model = pg.load(path)                                          # spends nothing
    >>> model.score_samples(np.zeros((3, 2))).shape                    # at public rows
    (3,)
    """
    p = Path(path)
    if not p.is_file():
        raise InvalidDataError(f"model file not found: {path}")
    try:
        data = json.loads(p.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidDataError(f"{p.name} is not a JSON model file") from exc
    return from_dict(data)
