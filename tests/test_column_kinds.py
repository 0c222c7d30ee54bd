"""Column kinds of synthetic tables (privgauss.synthesis.column_kinds): read from declared
dtypes and the caller, never from the values; restored on the way out."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privgauss.exceptions import InvalidDataError
from privgauss.synthesis.column_kinds import (
    cast_array,
    cast_column,
    declared_dtypes,
    declared_kinds,
    kind_of_dtype,
    kinds_of,
)


def test_kind_of_dtype_reads_the_declared_type_only() -> None:
    assert [kind_of_dtype(t) for t in ("bool", "int32", "uint8", "float64")] == [
        "binary", "integer", "integer", "auto"]
    assert kind_of_dtype(pd.Int64Dtype()) == "integer"
    assert kind_of_dtype(pd.BooleanDtype()) == "binary"


def test_kinds_do_not_depend_on_the_values() -> None:
    whole = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": np.array([0, 1, 1], dtype=np.int16),
                          "c": [True, False, True]})
    other = whole.assign(a=[0.5, 2.25, 3.125], b=np.array([7, -3, 9], dtype=np.int16))
    assert declared_kinds(whole, 3) == declared_kinds(other, 3) == ["auto", "integer", "binary"]
    assert declared_kinds(np.zeros((3, 2), dtype=np.int64), 2) == ["integer", "integer"]
    assert declared_dtypes(whole, 3) == ["float64", "int16", "bool"]
    assert declared_dtypes([[1.0, 2.0]], 2) == ["float64", "float64"]


def test_caller_kinds_override_and_are_checked() -> None:
    X = pd.DataFrame({"a": [1.0, 2.0], "b": [3.0, 4.0]})
    assert kinds_of(X, 2, {"b": "integer"}, ["a", "b"]) == ["auto", "integer"]
    assert kinds_of(X, 2, ["float", "binary"], ["a", "b"]) == ["float", "binary"]
    with pytest.raises(InvalidDataError, match="unknown column"):
        kinds_of(X, 2, {"z": "integer"}, ["a", "b"])
    with pytest.raises(InvalidDataError, match="kinds must give"):
        kinds_of(X, 2, ["float"], ["a", "b"])
    with pytest.raises(InvalidDataError, match="kinds must give"):
        kinds_of(X, 2, ["float", "count"], ["a", "b"])


def test_casts_restore_the_input_dtypes() -> None:
    x = np.array([0.0, 1.0, 300.0])
    assert cast_column(x[:2], "bool", "binary").dtype == np.bool_
    small = cast_column(x, "int8", "integer")
    assert small.dtype == np.int8 and small.tolist() == [0, 1, 127]  # clipped to the dtype
    assert cast_column(x, "float32", "float").dtype == np.float32
    assert cast_column(x, "Int64", "integer").dtype == np.int64  # an extension dtype name
    rows = np.array([[1.0, 2.0], [3.0, 4.0]])
    assert cast_array(rows, np.dtype("int32"), ["integer", "integer"]).dtype == np.int32
    assert cast_array(rows, np.dtype("int32"), ["integer", "float"]).dtype == np.float64
    assert cast_array(rows, None, ["integer", "integer"]) is rows
