"""Output casts: out-of-range and non-integral values refuse or follow a declared policy
(issue 11, kind 4a)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kuration import OutputSpec, SchemaSpec, Track
from kuration.errors import OutputSpecError, OutputValueError
from kuration.output.writer import track_arrays

SCHEMA = SchemaSpec.from_dict({"sample_hz": 1.0, "fields": [{"name": "x"}]})


def _track(values, present=None) -> Track:
    v = np.asarray(values, dtype=np.float64).reshape(-1, 1)
    pres = np.ones(len(v), bool) if present is None else np.asarray(present, bool)
    return Track("src", "e1", 10, {"x": v}, pres, 1.0)


def _out(dtype: str, values, present=None, **policy) -> np.ndarray:
    spec = OutputSpec.from_dict(
        {"shard_length": 8, "modalities": {"x": {"dtype": dtype, "source": "field:x", **policy}}}
    )
    return track_arrays(_track(values, present), spec, SCHEMA)["x"]


@pytest.mark.parametrize(
    ("value", "row", "why"),
    [(300.0, 0, "outside uint8"), (-1.0, 1, "outside uint8"), (2.7, 2, "not an integer")],
)
def test_uint8_refuses_what_it_would_wrap(value, row, why) -> None:
    vals = [1.0, 2.0, 3.0, 256.0]
    vals[row] = value
    with pytest.raises(OutputValueError, match=why) as info:
        _out("uint8", vals)
    err = info.value
    assert (err.modality, err.source, err.entity, err.row) == ("x", "src", "e1", 10 + row)
    assert err.value == value
    assert isinstance(err, OutputSpecError)


def test_issue_input_256_is_refused_too() -> None:
    with pytest.raises(OutputValueError, match=r"256.0 is outside uint8 range \[0, 255\]"):
        _out("uint8", [0.0, 255.0, 256.0])


def test_policies_saturate_and_round() -> None:
    got = _out("uint8", [300, -1, 2.7, 256, 2.5], overflow="saturate", rounding="round")
    np.testing.assert_array_equal(got, [255, 0, 3, 255, 2])
    assert got.dtype == np.uint8
    got = _out("int8", [-200.0, 1.9, -1.9], overflow="saturate", rounding="trunc")
    np.testing.assert_array_equal(got, [-128, 1, -1])
    np.testing.assert_array_equal(_out("uint8", [2.7, 2.2], rounding="floor"), [2, 2])
    np.testing.assert_array_equal(_out("uint8", [2.7, 2.2], rounding="ceil"), [3, 3])
    with pytest.raises(OutputValueError, match="outside uint8"):
        _out("uint8", [299.6], rounding="round")


def test_absent_rows_are_not_checked_and_are_zero() -> None:
    got = _out("uint8", [300.0, 7.0, np.nan], present=[False, True, False])
    np.testing.assert_array_equal(got, [0, 7, 0])


def test_nan_in_a_present_row_still_errors() -> None:
    with pytest.raises(OutputSpecError, match="missing value"):
        _out("uint8", [np.nan])


def test_float32_overflow_refused_or_saturated() -> None:
    with pytest.raises(OutputValueError, match="overflows float32"):
        _out("float32", [1e39])
    got = _out("float32", [1e39, -1e39, 1.5], overflow="saturate")
    assert got[0] == np.finfo(np.float32).max and got[1] == -np.finfo(np.float32).max


def test_bool_dtype_takes_only_0_and_1() -> None:
    np.testing.assert_array_equal(_out("bool", [0.0, 1.0]), [False, True])
    with pytest.raises(OutputValueError, match=r"outside bool range \[0, 1\]"):
        _out("bool", [2.0])


def test_uint64_float_bounds_are_exact() -> None:
    with pytest.raises(OutputValueError, match="outside uint64"):
        _out("uint64", [2.0**64])
    assert _out("uint64", [2.0**63])[0] == 2**63
    assert _out("uint64", [2.0**64], overflow="saturate")[0] == 2**64 - 1


def test_spec_rejects_unknown_policies_and_round_trips() -> None:
    with pytest.raises(
        OutputSpecError, match=r"modalities\.x\.overflow: input should be 'error' or 'saturate'"
    ):
        _out("uint8", [1.0], overflow="wrap")
    with pytest.raises(OutputSpecError, match=r"modalities\.x\.rounding: input should be"):
        _out("uint8", [1.0], rounding="nearest")
    with pytest.raises(OutputSpecError, match="rounding applies to integer"):
        _out("float32", [1.0], rounding="round")
    d = {
        "shard_length": 4,
        "short_policy": "keep",
        "container": "npz",
        "presence_mask": True,
        "modalities": {
            "x": {"dtype": "uint8", "shape": [], "source": "field:x", "overflow": "saturate"}
        },
    }
    assert OutputSpec.from_dict(d).to_dict() == d


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1e4, 1e4, allow_nan=False), min_size=1, max_size=12))
def test_saturate_round_matches_numpy_clip_rint(vals) -> None:
    got = _out("int8", vals, overflow="saturate", rounding="round")
    np.testing.assert_array_equal(got, np.clip(np.rint(vals), -128, 127).astype(np.int8))
