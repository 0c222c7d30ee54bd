"""Input validation for data arrays and scalar parameters.

Every error raised here tells the caller what to fix. Messages never contain data-dependent
values (no entries, norms, extrema or counts of bad rows); they may name shapes, dtypes, column
names and the fact that NaN or infinite values are present.
"""

from __future__ import annotations

import math
import numbers
import sys
from typing import Any

import numpy as np

from .exceptions import InvalidDataError, NonNumericDataError

__all__ = [
    "MAX_ABS_VALUE",
    "check_data",
    "check_positive_int",
    "check_probability",
    "validated_rows",
]

#: Largest accepted magnitude of a float64 data value. Squares of values up to this bound (and
#: sums of up to ~1e8 such squares) stay finite in float64.
MAX_ABS_VALUE = 1e150

# Per-output-dtype magnitude limits, chosen so that squares (and sums of many squares) are finite.
_MAX_ABS = {np.dtype(np.float64): MAX_ABS_VALUE, np.dtype(np.float32): 1e15}

_FIX_1D = "reshape with X.reshape(-1, 1) for one feature or X.reshape(1, -1) for one sample"


def _is_dataframe(X: Any) -> bool:
    pd = sys.modules.get("pandas")  # a DataFrame cannot exist unless pandas is imported
    return pd is not None and isinstance(X, pd.DataFrame)


def _dataframe_to_array(X: Any, name: str) -> np.ndarray:
    from pandas.api import types as ptypes

    bad = [
        col
        for col, dt in X.dtypes.items()
        if not (ptypes.is_bool_dtype(dt) or ptypes.is_numeric_dtype(dt))
        or ptypes.is_complex_dtype(dt)
    ]
    if bad:
        raise InvalidDataError(
            f"{name} has non-numeric columns {[str(c) for c in bad]}; select numeric columns "
            f"only (e.g. with columns=[...] or {name}.select_dtypes('number'))"
        )
    try:
        # na_value maps pandas' missing markers (pd.NA) to NaN, reported below as missing data.
        return X.to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError):
        raise InvalidDataError(
            f"{name} could not be converted to float64; make every column numeric"
        ) from None


def _check_dask(X: Any, name: str, min_rows: int, n_features: int | None) -> Any:
    dtype = getattr(X, "dtype", None)
    if dtype is None or not hasattr(X, "shape"):
        raise InvalidDataError(
            f"{name} is a dask collection without a single dtype; convert it to a dask array "
            "(e.g. with .to_dask_array(lengths=True))"
        )
    _check_ndim(X.ndim, name)
    _check_dtype(np.dtype(dtype), name)
    if np.dtype(dtype).kind not in "biuf":
        raise InvalidDataError(
            f"{name} is a dask array of dtype {np.dtype(dtype)}; convert it to a numeric dtype"
        )
    rows, cols = X.shape
    known_rows = not (isinstance(rows, float) and math.isnan(rows))
    known_cols = not (isinstance(cols, float) and math.isnan(cols))
    if (known_rows and rows == 0) or (known_cols and cols == 0):
        raise InvalidDataError(
            f"{name} is empty (shape {X.shape}); it needs at least one row and one column"
        )
    if known_cols and n_features is not None and cols != n_features:
        raise _n_features_error(name, int(cols), n_features)
    if known_rows and rows < min_rows:
        raise _min_rows_error(name, int(rows), min_rows)
    return X


def _check_ndim(ndim: int, name: str) -> None:
    if ndim == 1:
        raise InvalidDataError(
            f"{name} is 1-D but a 2-D array is expected. Reshape your data: {_FIX_1D}")
    if ndim != 2:
        raise InvalidDataError(
            f"{name} has {ndim} dimensions but a 2-D array of shape (n_samples, n_features) "
            "is expected"
        )


def _check_dtype(dtype: np.dtype, name: str) -> None:
    if dtype.kind == "c":
        raise InvalidDataError(
            f"Complex data not supported: {name} has dtype {dtype}; pass real-valued data (e.g. "
            "stack real and imaginary parts as separate features)"
        )
    if dtype.kind in "USMmV":
        raise InvalidDataError(
            f"{name} has non-numeric dtype {dtype}; convert it to numbers before fitting"
        )


def _n_features_error(name: str, got: int, expected: int) -> InvalidDataError:
    return InvalidDataError(
        f"{name} has {got} features but {expected} were expected (the public data / fitted "
        f"model has {expected})"
    )


def _min_rows_error(name: str, got: int, needed: int) -> InvalidDataError:
    return InvalidDataError(
        f"{name} has n_samples={got} rows but this method needs at least {needed}"
    )


def check_data(
    X: Any,
    *,
    name: str = "X",
    min_rows: int = 1,
    n_features: int | None = None,
    dtype: Any = np.float64,
    copy: bool = True,
) -> Any:
    """Validate a data matrix and return a new C-contiguous 2-D float array.

    Accepts numpy arrays, nested lists and pandas DataFrames with numeric (or boolean)
    columns. The result is always a fresh copy, never a view of the caller's memory —
    except with ``copy=False`` (internal use by code that never writes to its input), where a
    float64 array that is already C- or F-contiguous is checked and returned as it is.

    Dask arrays (anything with ``__dask_graph__``) are *not* computed: only ``ndim``,
    ``shape`` (where known) and ``dtype`` are checked and the input is returned unchanged;
    finiteness and magnitude are checked chunk-wise by the backend later.

    Raises :class:`InvalidDataError` for non-2-D or empty input, non-numeric or complex
    dtypes, NaN/inf values, values of magnitude above 1e150 (float64) or beyond the float
    range (Python ints such as ``10**400``), fewer than ``min_rows`` rows, or a feature count
    different from ``n_features``.
    """
    out_dtype = np.dtype(dtype)
    if out_dtype not in _MAX_ABS:
        raise ValueError(f"dtype must be float64 or float32, got {out_dtype}")
    min_rows = check_positive_int(min_rows, "min_rows", minimum=1)
    if n_features is not None:
        n_features = check_positive_int(n_features, "n_features", minimum=1)

    if hasattr(X, "__dask_graph__"):
        return _check_dask(X, name, min_rows, n_features)
    if isinstance(X, np.ma.MaskedArray):
        raise InvalidDataError(
            f"{name} is a masked array; drop or impute the masked entries and pass a plain array"
        )
    if "scipy.sparse" in sys.modules:
        import scipy.sparse as sp

        if sp.issparse(X):
            raise InvalidDataError(
                f"{name} is a sparse matrix; convert it with {name}.toarray() first"
            )

    if _is_dataframe(X):
        arr = _dataframe_to_array(X, name)
    else:
        try:
            arr = np.asarray(X)
        except (TypeError, ValueError):
            # Do not chain: numpy's message may quote entries of the data.
            raise InvalidDataError(
                f"{name} could not be converted to an array; pass a rectangular numeric "
                "2-D array (rows of equal length)"
            ) from None

    _check_ndim(arr.ndim, name)
    _check_dtype(arr.dtype, name)
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        what = (f"0 feature(s) (shape={arr.shape}) while a minimum of 1 is required"
                if arr.shape[1] == 0 else f"0 sample(s) (shape={arr.shape})")
        raise InvalidDataError(
            f"{name} is empty: {what}; it needs at least one row and one column"
        )
    if n_features is not None and arr.shape[1] != n_features:
        raise _n_features_error(name, arr.shape[1], n_features)
    if arr.shape[0] < min_rows:
        raise _min_rows_error(name, arr.shape[0], min_rows)

    reuse = (
        not copy
        and out_dtype == np.float64
        and isinstance(arr, np.ndarray)
        and type(arr) is np.ndarray
        and arr.dtype == np.float64
        and (arr.flags.c_contiguous or arr.flags.f_contiguous)
    )
    try:
        # np.array(..., copy=True) always allocates: the result never aliases the input.
        out = arr if reuse else np.array(arr, dtype=np.float64, order="C", copy=True)
    except TypeError:
        raise NonNumericDataError(
            f"{name} (dtype {arr.dtype}) has entries that are not numbers (each argument must "
            "be a string or a real number convertible to float64); make every entry a real "
            "number"
        ) from None
    except ValueError:
        raise InvalidDataError(
            f"{name} (dtype {arr.dtype}) could not be converted to float64; make every entry "
            "a real number"
        ) from None
    except OverflowError:
        # A Python int beyond the float range (object arrays, lists): no value is stated.
        raise InvalidDataError(
            f"{name} has values beyond the float64 range; rescale the data"
        ) from None

    _check_values(*_value_range(out), name, _MAX_ABS[out_dtype])
    if out_dtype != np.float64:
        out = out.astype(out_dtype, order="C")
    return out


def _value_range(arr: np.ndarray) -> tuple[float, float]:
    """(max, min) of all entries in one pass over cache-sized row blocks (NaN propagates)."""
    step = max(256, (1 << 17) // max(arr.shape[1], 1))
    hi, lo = -math.inf, math.inf
    for a in range(0, arr.shape[0], step):
        b = arr[a : a + step]
        bh, bl = float(b.max()), float(b.min())
        if not (math.isfinite(bh) and math.isfinite(bl)):
            return bh, bl
        hi, lo = max(hi, bh), min(lo, bl)
    return hi, lo


def _check_values(hi: float, lo: float, name: str, limit: float) -> None:
    # max/min propagate NaN and expose +-inf
    if not (math.isfinite(hi) and math.isfinite(lo)):
        raise InvalidDataError(
            f"{name} contains NaN or infinite values; remove or impute them before fitting"
        )
    if max(hi, -lo) > limit:
        raise InvalidDataError(
            f"{name} has values of magnitude above {limit:.0e}, which overflow when squared; "
            "rescale the data"
        )


def validated_rows(
    X: Any, *, name: str = "X", min_rows: int = 1, n_features: int | None = None
) -> Any:
    """Internal entry point of the streaming estimators: :func:`check_data` without a copy
    (``copy=False``); a dask array is also checked for NaN/inf and magnitude, in one chunked
    pass (the only way to check it without loading it), and returned lazily. A path to a
    ``.npy`` file or ``.zarr`` directory is opened as a dask array
    (:func:`privgauss.backends.open_array`)."""
    import os

    if isinstance(X, str | os.PathLike):
        from .backends import open_array

        X = open_array(X)
    out = check_data(X, name=name, min_rows=min_rows, n_features=n_features, copy=False)
    if hasattr(out, "__dask_graph__"):
        if out.dtype != np.float64:
            out = out.astype(np.float64)
        rows, cols = out.shape
        if rows != rows or cols != cols:  # NaN: unknown chunk sizes
            raise InvalidDataError(
                f"{name} is a dask array with unknown chunk sizes; call "
                f"{name}.compute_chunk_sizes() first"
            )
        hi, lo = _dask_range(out)
        _check_values(hi, lo, name, MAX_ABS_VALUE)
    return out


def _block_range(B: np.ndarray) -> tuple[np.ndarray]:
    """([[max, min]],) of a row block (NaN propagates): the kernel of :func:`_dask_range`,
    module level so that it pickles to the workers of a dask.distributed cluster."""
    return (np.array([[float(B.max()), float(B.min())]]),)


def _dask_range(X: Any) -> tuple[float, float]:
    """(max, min) of a dask array: one pair per row block (a chunked pass), combined here."""
    from .backends import map_rows

    ext = map_rows(X, _block_range)[0]
    return float(ext[:, 0].max()), float(ext[:, 1].min())


def check_positive_int(value: Any, name: str, minimum: int = 1) -> int:
    """Return ``value`` as an ``int`` after checking it is an integer ``>= minimum``.

    Integral floats such as ``1e6`` are accepted; bools, NaN, inf, non-integral floats and
    non-numbers raise :class:`ValueError`.
    """
    if isinstance(value, bool | np.bool_):
        raise ValueError(f"{name} must be an integer >= {minimum}, got a bool")
    if isinstance(value, numbers.Integral):
        result = int(value)
    elif isinstance(value, numbers.Real):
        f = float(value)
        if not math.isfinite(f) or not f.is_integer():
            raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
        result = int(f)
    else:
        raise ValueError(
            f"{name} must be an integer >= {minimum}, got an object of type {type(value).__name__}"
        )
    if result < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {result}")
    return result


def check_probability(
    value: Any, name: str, *, open_left: bool = True, open_right: bool = True
) -> float:
    """Return ``value`` as a float after checking it lies in the interval (0, 1).

    ``open_left=False`` admits 0 and ``open_right=False`` admits 1. Bools, NaN, inf and
    non-numbers raise :class:`ValueError`.
    """
    interval = ("(" if open_left else "[") + "0, 1" + (")" if open_right else "]")
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise ValueError(
            f"{name} must be a real number in {interval}, got an object of type "
            f"{type(value).__name__}"
        )
    f = float(value)
    if math.isnan(f):
        raise ValueError(f"{name} must be a real number in {interval}, got NaN")
    below = f <= 0.0 if open_left else f < 0.0
    above = f >= 1.0 if open_right else f > 1.0
    if below or above:
        raise ValueError(f"{name} must be in {interval}, got {f!r}")
    return f
