"""SignalSpec missing_value/valid_min/valid_max: stored as written, read as null
(issue 11, kind 6)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from tn_helpers import make_card

import timenet as tn

U64_SENTINEL = 2**64 - 1


def _write(tmp_path: Path) -> Path:
    with tn.TimeFWriter(tmp_path, make_card()) as w:
        w.add_record("r")
        z = np.array([1000.0, -10.0, -10.0, 1001.0, 1002.0])
        w.add_signal("r", "z", z, tn.SignalSpec("float64", "m", rate_hz=1, missing_value=-10.0))
        temp = np.array([20000, 85000, -999, 21000], dtype=np.int32)  # 85 degC: sensor error
        spec = tn.SignalSpec("int32", "mdegC", rate_hz=1, missing_value=[-999], valid_max=80000)
        w.add_signal("r", "temp", temp, spec)
        flags = np.array([U64_SENTINEL, U64_SENTINEL - 1, 2**63 + 5], dtype=np.uint64)
        w.add_signal(
            "r", "flags", flags, tn.SignalSpec("uint64", "", rate_hz=1, missing_value=U64_SENTINEL)
        )
        acc = np.array([[0.0, 0.1, 9.8], [0.0, 0.0, 99.0], [0.1, 0.0, 9.7]])
        spec = tn.SignalSpec(
            "float64", "m/s**2", shape=(3,), rate_hz=1, valid_min=-50, valid_max=50
        )
        w.add_signal("r", "acc", acc, spec)
        w.add_signal("r", "plain", np.array([-10.0, 1.0]), tn.SignalSpec("float64", "m", rate_hz=1))
    return tmp_path / "acme/demo/1.0.0"


def test_reader_turns_sentinels_into_nulls(tmp_path: Path) -> None:
    reader = tn.TimeFReader.open(_write(tmp_path))
    assert reader.signal("r", "z").to_arrow().to_pylist() == [1000.0, None, None, 1001.0, 1002.0]
    assert reader.signal("r", "temp").to_arrow().to_pylist() == [20000, None, None, 21000]
    # 2**64 - 2 is the same float64 as the sentinel but a different integer: kept
    got = reader.signal("r", "flags").to_arrow().to_pylist()
    assert got == [None, U64_SENTINEL - 1, 2**63 + 5]
    acc = reader.signal("r", "acc").to_arrow().to_pylist()
    assert acc[1] is None and acc[0] == [0.0, 0.1, 9.8]
    assert reader.signal("r", "plain").to_arrow().to_pylist() == [-10.0, 1.0]
    assert reader.signal("r", "z").read_steps_arrow(3, 5).to_pylist() == [1001.0, 1002.0]


def test_numpy_reads_refuse_sentinel_steps_like_nulls(tmp_path: Path) -> None:
    reader = tn.TimeFReader.open(_write(tmp_path))
    sig = reader.signal("r", "z")
    with pytest.raises(tn.NullValuesError):
        sig.to_numpy()
    np.testing.assert_array_equal(sig.read_steps(3, 5), [1001.0, 1002.0])
    np.testing.assert_allclose(reader.signal("r", "temp").read_steps(0, 1, unit="degC"), [20.0])
    with pytest.raises(tn.NullValuesError):
        reader.signal("r", "acc").to_numpy()


def test_values_are_stored_as_written_and_the_spec_round_trips(tmp_path: Path) -> None:
    vdir = _write(tmp_path)
    path = next((vdir / "values").glob("*-z.parquet"))
    assert -10.0 in pq.read_table(path).column(0).to_pylist()
    spec = tn.TimeFReader.open(vdir).signal("r", "temp").spec
    assert spec.missing_value == (-999,) and spec.valid_max == 80000
    assert tn.SignalSpec.from_dict(spec.to_dict()) == spec
    plain = tn.SignalSpec("float64", "m").to_dict()
    assert not {"missing_value", "valid_min", "valid_max"} & set(plain)


@pytest.mark.parametrize(
    ("kw", "msg"),
    [
        ({"dtype": "uint8", "missing_value": 300}, "not a uint8 value"),
        ({"dtype": "int16", "missing_value": 2.5}, "not a int16 value"),
        ({"dtype": "float32", "missing_value": "NA"}, "finite number"),
        ({"dtype": "float32", "valid_min": float("nan")}, "finite number"),
        ({"dtype": "float32", "valid_min": 2, "valid_max": 1}, "valid_min 2 > valid_max 1"),
        ({"dtype": "bool", "missing_value": 0}, "numeric dtype"),
        ({"dtype": "float64", "missing_value": True}, "finite number"),
    ],
)
def test_bad_declarations_are_refused(kw, msg) -> None:
    with pytest.raises(tn.SchemaError, match=msg):
        tn.SignalSpec(**kw)


@pytest.mark.parametrize(
    ("values", "msg"), [([1, 2.7], "step 1: 2.7 is not an integer"), ([300], "300")]
)
def test_writer_refuses_integers_it_would_truncate_or_wrap(tmp_path: Path, values, msg) -> None:
    with tn.TimeFWriter(tmp_path, make_card()) as w:
        w.add_record("r")
        with pytest.raises(tn.SchemaError, match=msg) as info:
            w.add_signal("r", "n", values, tn.SignalSpec("uint8", "", rate_hz=1))
        assert info.value.signal == "n"
        w.add_signal("r", "ok", [1, 2.0, 255], tn.SignalSpec("uint8", "", rate_hz=1))
        w.add_signal("r", "big", [2**63 + 5, 2**53 + 1], tn.SignalSpec("uint64", "", rate_hz=1))
    reader = tn.TimeFReader.open(tmp_path / "acme/demo/1.0.0")
    assert reader.signal("r", "big").to_arrow().to_pylist() == [2**63 + 5, 2**53 + 1]
