from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from tn_helpers import make_card, write_demo

import timenet as tn

SCALAR_DTYPES = ["bool", "int16", "uint8", "int64", "float32", "float64", "datetime64[ns]"]
ZARR_DTYPES = ["bool", "int16", "uint8", "float32", "float64"]
UNITS = ["", "mV", "degC", "m/s^2", "1/min", "kPa"]


@st.composite
def signal_kinds(draw: st.DrawFn) -> dict[str, Any]:
    multi = draw(st.booleans())
    dtype = draw(st.sampled_from(ZARR_DTYPES if multi else SCALAR_DTYPES))
    shape = draw(st.sampled_from([(2,), (2, 3)])) if multi else ()
    return {
        "dtype": dtype,
        "shape": shape,
        "unit": draw(st.sampled_from(UNITS)),
        "irregular": draw(st.booleans()),
        "nullable": not multi and draw(st.booleans()),
    }


def _values(draw: st.DrawFn, kind: dict[str, Any], n: int) -> Any:
    dtype = np.dtype(kind["dtype"])
    if dtype.kind == "M":
        ints = draw(hnp.arrays(np.int64, n, elements=st.integers(-(2**62), 2**62)))
        arr = ints.view("datetime64[ns]")
    else:
        elements = None
        if dtype.kind == "f":
            elements = st.floats(width=dtype.itemsize * 8, allow_nan=True, allow_infinity=True)
        arr = draw(hnp.arrays(dtype, (n, *kind["shape"]), elements=elements))
    if kind["nullable"]:
        mask = draw(hnp.arrays(np.bool_, n))
        return np.ma.masked_array(arr, mask=mask)
    return arr


@st.composite
def datasets(draw: st.DrawFn) -> list[dict[str, Any]]:
    kinds = draw(
        st.dictionaries(
            st.sampled_from(["a", "b c", "ü/x", "d"]), signal_kinds(), min_size=1, max_size=3
        )
    )
    records = []
    for i in range(draw(st.integers(1, 3))):
        sigs = {}
        for name, kind in kinds.items():
            if not draw(st.booleans()) and sigs:
                continue
            n = draw(st.integers(0, 12))
            spec_kw: dict[str, Any] = {
                "dtype": kind["dtype"],
                "shape": kind["shape"],
                "unit": kind["unit"],
            }
            times = None
            if kind["irregular"]:
                raw = draw(st.sets(st.integers(-(2**40), 2**40), min_size=n, max_size=n))
                times = np.array(sorted(raw), dtype=np.int64)
            else:
                spec_kw["rate_hz"] = draw(st.sampled_from([1.0, 3.0, 250.0, 1000.0, 0.1]))
                spec_kw["start_ns"] = draw(st.integers(-(10**12), 10**12))
            sigs[name] = (_values(draw, kind, n), tn.SignalSpec(**spec_kw), times)
        anns = draw(
            st.lists(
                st.tuples(
                    st.integers(-(2**40), 2**40),
                    st.one_of(st.none(), st.integers(0, 2**20)),
                    st.one_of(
                        st.builds(tn.Label, st.text(max_size=8)),
                        st.builds(tn.Text, st.text(max_size=20)),
                        st.builds(
                            tn.Numeric,
                            st.floats(allow_nan=False, allow_infinity=False),
                            st.sampled_from(UNITS),
                        ),
                    ),
                    st.one_of(st.none(), st.sampled_from(sorted(sigs))),
                ),
                max_size=3,
            )
        )
        tasks = draw(
            st.lists(
                st.builds(tn.QuestionAnswer, st.text(max_size=10), st.text(max_size=10)), max_size=2
            )
        )
        meta = draw(
            st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5), max_size=2)
        )
        records.append({"id": f"r{i}", "meta": meta, "signals": sigs, "anns": anns, "tasks": tasks})
    return records


def _write(root: Path, data: list[dict[str, Any]]) -> Path:
    with tn.TimeFWriter(root, make_card(), row_group_rows=5) as w:
        for rec in data:
            w.add_record(rec["id"], rec["meta"])
            for name, (values, spec, times) in rec["signals"].items():
                w.add_signal(rec["id"], name, values, spec, times=times)
            for start, dur, content, sig in rec["anns"]:
                stop = None if dur is None else start + dur
                w.add_annotation(rec["id"], content, start_ns=start, stop_ns=stop, signal=sig)
            for qa in rec["tasks"]:
                w.add_task(rec["id"], "qa", qa)
    return root / "acme" / "demo" / "1.0.0"


def _check(view: Any, data: list[dict[str, Any]]) -> None:
    assert [r.id for r in view.records()] == [rec["id"] for rec in data]
    for rec in data:
        assert view.record(rec["id"]).metadata == rec["meta"]
        sigs = view.signals(rec["id"])
        assert list(sigs) == list(rec["signals"])
        for name, (values, spec, times) in rec["signals"].items():
            sig = sigs[name]
            assert sig.spec == spec
            assert len(sig) == len(values)
            if isinstance(values, np.ma.MaskedArray):
                expected = pa.array(
                    np.ma.getdata(values), mask=np.ma.getmaskarray(values), type=spec.arrow_type
                )
                got = sig.to_arrow()
                # nulls must match exactly; NaN payloads compare equal to themselves
                assert got.is_null().equals(expected.is_null()) and got.type == expected.type
                np.testing.assert_array_equal(
                    got.drop_null().to_numpy(zero_copy_only=False),
                    expected.drop_null().to_numpy(zero_copy_only=False),
                )
                assert sig.null_count == int(np.ma.getmaskarray(values).sum())
                values = np.ma.getdata(values) if not values.mask.any() else None
            if values is not None:
                got = sig.to_numpy()
                assert got.dtype == spec.numpy_dtype
                assert got.shape == values.shape
                np.testing.assert_array_equal(got, values)
                if len(values) >= 2:
                    np.testing.assert_array_equal(sig.read_steps(1, len(values)), values[1:])
            t = sig.times()
            assert t.dtype == np.int64
            if times is not None:
                np.testing.assert_array_equal(t, times)
            else:
                period = 1e9 / spec.rate_hz
                expect = spec.start_ns + np.rint(np.arange(len(t)) * period).astype(np.int64)
                np.testing.assert_array_equal(t, expect)
        anns = view.annotations(rec["id"])
        got_anns = [(a.start_ns, a.stop_ns, a.content, a.signal) for a in anns]
        want = [(s, None if d is None else s + d, c, g) for s, d, c, g in rec["anns"]]
        assert got_anns == want
        assert [t.content for t in view.tasks(rec["id"])] == rec["tasks"]


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(datasets())
def test_round_trip_lazy_and_loaded(data: list[dict[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        vdir = _write(Path(tmp), data)
        with tn.TimeFReader.open(vdir) as reader:
            _check(reader, data)
            _check(reader.load(), data)
        manifest = tn.TimeFReader.open(vdir).manifest
        units = {s.name: s.unit for s in manifest.dataset_schema.signals}
        for rec in data:
            for name, (_, spec, _) in rec["signals"].items():
                assert units[name] == spec.unit


def test_layout_and_manifest(demo: Path) -> None:
    names = sorted(p.relative_to(demo).as_posix() for p in demo.rglob("*") if p.is_file())
    assert "manifest.json" in names and "control.duckdb" in names
    assert not any(n.endswith(".wal") for n in names)
    m = tn.TimeFReader.open(demo).manifest
    assert {f.path for f in m.files} == set(names) - {"manifest.json"}
    assert m.counts.records == 3 and m.counts.signals == 12
    assert m.counts.annotations == 6 and m.counts.tasks == 3
    storage = {s.name: s.storage for s in m.dataset_schema.signals}
    assert storage == {"ecg": "parquet", "temp": "parquet", "acc": "zarr", "events": "parquet"}
    events = next(s for s in m.dataset_schema.signals if s.name == "events")
    assert events.irregular and events.rates_hz == ()
    # the catalog is plain DuckDB, readable read-only by anyone
    import duckdb

    con = duckdb.connect(str(demo / "control.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM signals").fetchone() == (12,)
    con.close()


def test_second_write_of_same_version_is_refused(tmp_path: Path) -> None:
    write_demo(tmp_path)
    with pytest.raises(tn.VersionExistsError) as info:
        tn.TimeFWriter(tmp_path, make_card())
    assert info.value.path.endswith("acme/demo/1.0.0")
    # a writer that raced and lost at commit leaves nothing behind
    w = tn.TimeFWriter(tmp_path, make_card("2.0"))
    w.add_record("x")
    os.rename(tmp_path / "acme/demo/1.0.0", tmp_path / "acme/demo/2.0")
    with pytest.raises(tn.VersionExistsError):
        w.commit()
    assert not list((tmp_path / "acme/demo").glob(".staging-*"))


def test_exception_in_block_aborts(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), tn.TimeFWriter(tmp_path, make_card()) as w:
        w.add_record("a")
        raise RuntimeError("boom")
    assert tn.LocalRegistry(tmp_path).versions("acme", "demo") == []
    assert not (tmp_path / "acme").exists()  # nor the org/name folders it created


@pytest.fixture
def writer(tmp_path: Path) -> Any:
    w = tn.TimeFWriter(tmp_path, make_card())
    w.add_record("r")
    yield w
    w.abort()


def test_unknown_unit_at_write(writer: tn.TimeFWriter) -> None:
    with pytest.raises(tn.UnitError) as info:
        writer.add_signal(
            "r", "speed", np.zeros(3), tn.SignalSpec("float64", "furlongz", rate_hz=1)
        )
    assert info.value.signal == "speed" and info.value.unit == "furlongz"


def test_non_monotonic_timestamps(writer: tn.TimeFWriter) -> None:
    with pytest.raises(tn.SchemaError, match="strictly increasing") as info:
        writer.add_signal(
            "r", "ev", np.zeros(3), tn.SignalSpec("float64"), times=np.array([0, 5, 5])
        )
    assert info.value.signal == "ev" and info.value.record == "r"


def test_shape_and_dtype_mismatch(writer: tn.TimeFWriter) -> None:
    spec = tn.SignalSpec("float32", "g", shape=(3,), rate_hz=10)
    with pytest.raises(tn.SchemaError, match="shape"):
        writer.add_signal("r", "acc", np.zeros((5, 2), np.float32), spec)
    with pytest.raises(tn.SchemaError, match="dtype"):
        writer.add_signal("r", "acc", np.zeros((5, 3), np.float64), spec)
    with pytest.raises(tn.SchemaError, match="shape"):
        writer.add_signal("r", "x", np.zeros((5, 3)), tn.SignalSpec("float64", rate_hz=1))
    with pytest.raises(tn.SchemaError, match="Parquet stores scalar"):
        writer.add_signal("r", "acc", np.zeros((5, 3), np.float32), spec, storage="parquet")


def test_inconsistent_spec_across_records(writer: tn.TimeFWriter) -> None:
    writer.add_signal("r", "hr", np.zeros(2, np.int16), tn.SignalSpec("int16", "1/min", rate_hz=1))
    writer.add_record("s")
    with pytest.raises(tn.SchemaError, match="conflicts"):
        writer.add_signal(
            "s", "hr", np.zeros(2, np.int16), tn.SignalSpec("int16", "1/s", rate_hz=1)
        )
    # a different rate for the same name is fine
    writer.add_signal("s", "hr", np.zeros(2, np.int16), tn.SignalSpec("int16", "1/min", rate_hz=2))


def test_time_base_must_be_rate_xor_times(writer: tn.TimeFWriter) -> None:
    with pytest.raises(tn.SchemaError, match="explicit times are required"):
        writer.add_signal("r", "a", np.zeros(2), tn.SignalSpec("float64"))
    with pytest.raises(tn.SchemaError, match="not both"):
        writer.add_signal("r", "a", np.zeros(2), tn.SignalSpec("float64", rate_hz=1), times=[0, 1])


def test_misc_bad_inputs(writer: tn.TimeFWriter) -> None:
    with pytest.raises(tn.RecordNotFoundError):
        writer.add_signal("nope", "a", np.zeros(2), tn.SignalSpec("float64", rate_hz=1))
    with pytest.raises(tn.SchemaError, match="duplicate record"):
        writer.add_record("r")
    with pytest.raises(tn.SchemaError, match="JSON"):
        writer.add_record("q", {"bad": object()})
    with pytest.raises(tn.SchemaError, match="nulls"):
        writer.add_signal(
            "r",
            "m",
            np.ma.masked_array(np.zeros((2, 2)), mask=[[1, 0], [0, 0]]),
            tn.SignalSpec("float64", shape=(2,), rate_hz=1),
        )
    with pytest.raises(tn.SignalNotFoundError):
        writer.add_annotation("r", tn.Label("x"), start_ns=0, signal="missing")
    with pytest.raises(tn.SchemaError, match="precedes"):
        writer.add_annotation("r", tn.Label("x"), start_ns=10, stop_ns=5)
    with pytest.raises(tn.SchemaError, match="content"):
        writer.add_task("r", "t", "just a string")  # type: ignore[arg-type]


CRASH_SCRIPT = textwrap.dedent(
    """
    import sys, numpy as np, timenet as tn
    root = sys.argv[1]
    w = tn.TimeFWriter(root, {"org": "acme", "name": "crash", "version": "1.0", "license": "x"})
    i = 0
    while True:
        r = w.add_record(f"r{i}")
        w.add_signal(r, "x", np.zeros(10_000, np.float32), tn.SignalSpec("float32", "mV", rate_hz=1))
        if i == 2:
            print("writing", flush=True)
        i += 1
    """
)


@pytest.mark.slow
def test_sigkill_mid_write_leaves_no_version(tmp_path: Path) -> None:
    script = tmp_path / "crash.py"
    script.write_text(CRASH_SCRIPT)
    root = tmp_path / "reg"
    proc = subprocess.Popen(
        [sys.executable, str(script), str(root)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "writing"
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
        if proc.stdout is not None:
            proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    registry = tn.LocalRegistry(root)
    assert registry.datasets() == []
    assert registry.versions("acme", "crash") == []
    with pytest.raises(tn.DatasetNotFoundError):
        tn.TimeNet([root]).open("acme/crash")
    stale = list((root / "acme/crash").glob(".staging-*"))
    assert len(stale) == 1
    assert registry.clean_staging() == stale
    assert not stale[0].exists()
    # the version can now be written for real
    write_demo(root, "1.0", name="crash")
    assert registry.versions("acme", "crash") == ["1.0"]
