import math

import numpy as np
import pandas as pd
import pytest

from privgauss.exceptions import InvalidDataError
from privgauss.validation import check_data, check_positive_int, check_probability

SECRET = 123456.789
SECRET_STRINGS = ("123456", "1.23456", "1.2346e+05", "123457")


def _assert_no_secret(excinfo):
    msg = str(excinfo.value)
    for s in SECRET_STRINGS:
        assert s not in msg, msg
    # Chained exceptions must not leak either.
    assert excinfo.value.__cause__ is None
    return msg


# ----------------------------------------------------------------------------- happy paths


def test_returns_c_contiguous_float64_copy():
    X = np.arange(12, dtype=np.int32).reshape(3, 4)
    out = check_data(X)
    assert out.dtype == np.float64 and out.flags.c_contiguous and out.shape == (3, 4)
    np.testing.assert_array_equal(out, X)


def test_never_returns_a_view_even_for_float64_c_input():
    X = np.random.default_rng(0).standard_normal((5, 3))
    before = X.copy()
    out = check_data(X)
    assert not np.shares_memory(out, X)
    out[:] = 0.0
    np.testing.assert_array_equal(X, before)


def test_fortran_and_strided_input():
    X = np.asfortranarray(np.arange(20.0).reshape(4, 5))
    out = check_data(X[:, ::2])
    assert out.flags.c_contiguous
    np.testing.assert_array_equal(out, X[:, ::2])


def test_lists_and_bools():
    np.testing.assert_array_equal(check_data([[1, 2], [3, 4]]), [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(check_data(np.array([[True, False]])), [[1.0, 0.0]])


def test_dataframe_numeric_and_copy():
    df = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [4, 5, 6], "c": [True, False, True]})
    out = check_data(df)
    np.testing.assert_array_equal(out, [[1, 4, 1], [2, 5, 0], [3, 6, 1]])
    out[0, 0] = -1.0
    assert df["a"].iloc[0] == 1.0
    assert out.flags.c_contiguous


def test_single_block_dataframe_is_copied():
    df = pd.DataFrame(np.ones((4, 2)), columns=["x", "y"])
    out = check_data(df)
    out[:] = 7.0
    assert (df.to_numpy() == 1.0).all()


def test_float32_output():
    out = check_data([[1.5, 2.0]], dtype=np.float32)
    assert out.dtype == np.float32 and out.flags.c_contiguous


def test_object_array_of_numbers_is_accepted():
    X = np.array([[1, 2.5], [3, 4]], dtype=object)
    np.testing.assert_array_equal(check_data(X), [[1.0, 2.5], [3.0, 4.0]])


def test_value_at_limit_is_accepted():
    out = check_data([[1e150, -1e150]])
    assert np.isfinite(out * out).all()


# ----------------------------------------------------------------------------- errors


def test_1d_input_message():
    with pytest.raises(InvalidDataError) as e:
        check_data(np.array([1.0, SECRET]))
    msg = _assert_no_secret(e)
    assert "X.reshape(-1, 1)" in msg and "X.reshape(1, -1)" in msg


def test_series_is_1d():
    with pytest.raises(InvalidDataError, match="reshape"):
        check_data(pd.Series([1.0, 2.0]))


@pytest.mark.parametrize("X", [np.float64(SECRET), np.zeros((2, 2, 2)) + SECRET])
def test_wrong_ndim(X):
    with pytest.raises(InvalidDataError, match="dimensions") as e:
        check_data(X)
    _assert_no_secret(e)


@pytest.mark.parametrize("shape", [(0, 3), (3, 0)])
def test_empty(shape):
    with pytest.raises(InvalidDataError, match="empty"):
        check_data(np.zeros(shape))


def test_strings_refused():
    with pytest.raises(InvalidDataError, match="non-numeric") as e:
        check_data(np.array([["a", "123456.789"]]))
    _assert_no_secret(e)


def test_unconvertible_objects_refused_without_leaking():
    X = np.array([[SECRET, "secret-word"]], dtype=object)
    with pytest.raises(InvalidDataError) as e:
        check_data(X)
    msg = _assert_no_secret(e)
    assert "secret-word" not in msg


def test_ragged_list_refused():
    with pytest.raises(InvalidDataError, match="rectangular") as e:
        check_data([[1.0, SECRET], [1.0]])
    _assert_no_secret(e)


def test_complex_refused():
    with pytest.raises(InvalidDataError, match="complex") as e:
        check_data(np.array([[1 + 2j, SECRET]]))
    _assert_no_secret(e)


def test_datetime_refused():
    with pytest.raises(InvalidDataError, match="non-numeric"):
        check_data(np.array([["2020-01-01"]], dtype="datetime64[D]"))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_inf_message_has_no_values_or_counts(bad):
    X = np.full((10, 3), SECRET)
    X[2, 1] = bad
    X[7, 0] = bad
    with pytest.raises(InvalidDataError) as e:
        check_data(X)
    msg = _assert_no_secret(e)
    assert "NaN or infinite" in msg and "remove or impute" in msg
    assert not any(ch.isdigit() for ch in msg)  # no counts, no values


def test_dataframe_with_pandas_na():
    df = pd.DataFrame({"a": pd.array([1, None, 3], dtype="Int64"), "b": [SECRET, 1.0, 2.0]})
    with pytest.raises(InvalidDataError, match="NaN or infinite") as e:
        check_data(df)
    _assert_no_secret(e)


def test_dataframe_non_numeric_columns_named():
    df = pd.DataFrame(
        {"age": [1.0, 2.0], "city": ["x", "y"], "when": pd.to_datetime(["2020", "2021"])}
    )
    with pytest.raises(InvalidDataError) as e:
        check_data(df)
    msg = str(e.value)
    assert "city" in msg and "when" in msg and "age" not in msg
    assert "columns=" in msg


def test_dataframe_complex_column_refused():
    df = pd.DataFrame({"z": [1 + 1j, 2.0]})
    with pytest.raises(InvalidDataError, match="z"):
        check_data(df)


def test_huge_values_refused():
    X = np.ones((3, 2))
    X[1, 1] = -2e150
    with pytest.raises(InvalidDataError) as e:
        check_data(X)
    msg = str(e.value)
    assert "1e+150" in msg and "overflow when squared" in msg and "rescale" in msg
    assert "2e+150" not in msg and "-2" not in msg


@pytest.mark.parametrize(
    "X",
    [np.array([[10**400, 1], [2, 3]], dtype=object), [[10**400, 1], [2, 3]], [[1, -(10**400)]]],
    ids=["object-array", "list", "negative"],
)
def test_int_beyond_float_range_refused_at_entry(X):
    """A Python int too large for float64 is the entry's InvalidDataError, not numpy's bare
    OverflowError (issue #29); the message states no value and chains nothing."""
    with pytest.raises(InvalidDataError) as e:
        check_data(X)
    msg = _assert_no_secret(e)
    assert "beyond the float64 range" in msg and "10" not in msg and e.value.__suppress_context__


def test_int_beyond_float_range_refused_by_an_estimator():
    import privgauss as pg

    est = pg.PrivateGaussian(rho=0.5, covariance="identity", mean_bound=10.0, random_state=0)
    with pytest.raises(InvalidDataError, match="beyond the float64 range"):
        est.fit([[10**400, 1.0]] + [[0.0, 0.0]] * 50)


def test_min_rows_message():
    with pytest.raises(InvalidDataError) as e:
        check_data(np.full((5, 2), SECRET), min_rows=20)
    msg = _assert_no_secret(e)
    assert msg == "X has n_samples=5 rows but this method needs at least 20"


def test_n_features_message_and_name():
    with pytest.raises(InvalidDataError) as e:
        check_data(np.full((5, 3), SECRET), n_features=4, name="X_public")
    msg = _assert_no_secret(e)
    assert msg.startswith("X_public has 3 features but 4 were expected")
    assert "has 4)" in msg


def test_masked_and_sparse_refused():
    with pytest.raises(InvalidDataError, match="masked"):
        check_data(np.ma.masked_array(np.ones((2, 2)), mask=[[0, 1], [0, 0]]))
    sp = pytest.importorskip("scipy.sparse")
    with pytest.raises(InvalidDataError, match="toarray"):
        check_data(sp.csr_matrix(np.eye(3)))


def test_bad_dtype_argument():
    with pytest.raises(ValueError, match="float64 or float32"):
        check_data([[1.0]], dtype=np.int64)


# ----------------------------------------------------------------------------- dask


def test_dask_array_not_computed_and_returned_unchanged():
    da = pytest.importorskip("dask.array")
    dask = pytest.importorskip("dask")

    def explode():
        raise AssertionError("check_data computed the dask array")

    X = da.from_delayed(dask.delayed(explode)(), shape=(4, 2), dtype=np.float64)
    out = check_data(X, n_features=2, min_rows=3)  # would raise if it computed anything
    assert out is X  # finiteness is left to the backend


def test_dask_array_shape_and_dtype_checks():
    da = pytest.importorskip("dask.array")
    with pytest.raises(InvalidDataError, match="reshape"):
        check_data(da.ones(5, chunks=2))
    with pytest.raises(InvalidDataError, match="3 features but 4"):
        check_data(da.ones((5, 3), chunks=2), n_features=4)
    with pytest.raises(InvalidDataError, match="needs at least 10"):
        check_data(da.ones((5, 3), chunks=2), min_rows=10)
    with pytest.raises(InvalidDataError, match="complex"):
        check_data(da.ones((5, 3), chunks=2, dtype=complex))


def test_dask_unknown_row_count_passes():
    da = pytest.importorskip("dask.array")
    X = da.ones((6, 2), chunks=3)
    X = X[X[:, 0] > 0]  # unknown number of rows
    assert math.isnan(X.shape[0])
    assert check_data(X, min_rows=100) is X


# ----------------------------------------------------------------------------- scalars


@pytest.mark.parametrize(("value", "expected"), [(3, 3), (np.int64(7), 7), (1e6, 1_000_000)])
def test_positive_int_ok(value, expected):
    out = check_positive_int(value, "n")
    assert out == expected and type(out) is int


@pytest.mark.parametrize("value", [True, np.bool_(True), 0, -1, 2.5, math.nan, math.inf, "3", None])
def test_positive_int_bad(value):
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        check_positive_int(value, "n")


def test_positive_int_minimum():
    assert check_positive_int(0, "k", minimum=0) == 0
    with pytest.raises(ValueError, match=">= 2"):
        check_positive_int(1, "k", minimum=2)


def test_probability():
    assert check_probability(0.5, "delta") == 0.5
    assert check_probability(np.float32(0.25), "delta") == 0.25
    assert check_probability(0.0, "p", open_left=False) == 0.0
    assert check_probability(1.0, "p", open_right=False) == 1.0
    for bad in (0.0, 1.0, -0.1, 1.1, math.nan, math.inf, True, "0.5", None):
        with pytest.raises(ValueError, match="delta"):
            check_probability(bad, "delta")
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        check_probability(1.5, "p", open_left=False, open_right=False)


def test_check_data_copy_false_reuses_contiguous_float64_only() -> None:
    X = np.arange(12.0).reshape(4, 3)
    assert check_data(X, copy=False) is X
    F = np.asfortranarray(X)
    assert check_data(F, copy=False) is F
    strided = X[:, ::2]  # not contiguous: copied
    out = check_data(strided, copy=False)
    assert out is not strided and out.flags.c_contiguous
    assert check_data(X.astype(np.float32), copy=False).dtype == np.float64
    assert check_data(X) is not X  # the default still copies
    bad = X.copy()
    bad[2, 1] = np.nan
    with pytest.raises(InvalidDataError, match="NaN or infinite"):
        check_data(bad, copy=False)
    bad[2, 1] = 1e200
    with pytest.raises(InvalidDataError, match="magnitude"):
        check_data(bad, copy=False)
