"""Integer fields travel exactly: Parquet uint64 -> TickTable -> windows -> ``bit:`` -> shards
(issue 11, kind 4b)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kuration import FieldSpec, OutputSpec, SchemaSpec, Tick, TimeseriesAdapter
from kuration.contracts.tick import table_from_ticks
from kuration.contracts.track import track_from_table
from kuration.errors import MetricCompileError, OutputValueError, SchemaError, SourceError
from kuration.extend import WindowBatch, build_window, compile_metric
from kuration.output.containers import get_container
from kuration.output.writer import track_arrays

# small budgets filled with whole 15-minute tracks overshoot their request on purpose here
pytestmark = pytest.mark.filterwarnings("ignore::kuration.errors.BudgetGranularityWarning")

BIG = [2**63 + 5, 2**53 + 1, None, 3, 2**64 - 1]
U64 = pa.uint64()
BITS = {"b0": 0, "b1": 1, "b2": 2, "b53": 53, "b63": 63}


def _schema(dtype: str = "uint64") -> SchemaSpec:
    flags: dict = {"name": "flags", "dtype": dtype}
    if np.dtype(dtype).itemsize == 8:
        flags.update(semantics="bitmask", bits=BITS)
    return SchemaSpec.from_dict({"sample_hz": 1.0, "fields": [flags]})


def _parquet(tmp_path: Path, values=BIG, typ=U64) -> str:
    p = tmp_path / "flags.parquet"
    pq.write_table(pa.table({"t": list(range(len(values))), "flags": pa.array(values, typ)}), p)
    return str(p)


def _read(tmp_path: Path, values=BIG, typ=U64, dtype: str = "uint64"):
    adapter = TimeseriesAdapter(_schema(dtype), time_column="t", fields={"flags": "flags"})
    return adapter.read_table(_parquet(tmp_path, values, typ))


def test_parquet_uint64_is_read_exactly(tmp_path: Path) -> None:
    table = _read(tmp_path)
    ints = table.ints["flags"][:, 0, 0]
    assert ints.dtype == np.uint64
    assert [int(v) for v in ints] == [2**63 + 5, 2**53 + 1, 0, 3, 2**64 - 1]
    assert np.isnan(table.values["flags"][2, 0, 0])  # null: missing, validity in values
    assert [t.entities[0]["flags"] for t in table.iter_ticks()] == BIG  # exact Python ints


@pytest.mark.parametrize(
    ("bit", "want"),
    [
        ("b0", [1, 1, None, 1, 1]),
        ("b1", [0, 0, None, 1, 1]),
        ("b2", [1, 0, None, 0, 1]),
        ("b53", [0, 1, None, 0, 1]),
        ("b63", [1, 0, None, 0, 1]),
    ],
)
def test_bit_reads_every_index_up_to_63(tmp_path: Path, bit: str, want) -> None:
    table = _read(tmp_path)
    got = compile_metric(f"field:flags | bit:{bit} | sum", table.schema)(build_window(table, 0, 5))
    assert got == sum(w for w in want if w is not None)
    batch = WindowBatch.from_table(table, [0, 1, 2], 3)
    frac = compile_metric(f"field:flags | bit:{bit} | frac", table.schema).evaluate(batch)
    expect = [np.nanmean([np.nan if w is None else w for w in want[s : s + 3]]) for s in range(3)]
    np.testing.assert_allclose(frac, expect)


def test_where_bit_filter_reads_exactly(tmp_path: Path) -> None:
    table = _read(tmp_path)
    m = compile_metric("field:flags | where:flags.b63 | count", table.schema)
    assert m(build_window(table, 0, 5)) == 2


def test_int64_sign_bit_and_float_fallback() -> None:
    schema = _schema("int64")
    ticks = [Tick(float(t), {0: {"flags": v}}) for t, v in enumerate([-1, 2**62, 5])]
    table = table_from_ticks(schema, ticks, "s")
    assert table.ints["flags"].dtype == np.int64
    m = compile_metric("field:flags | bit:b63 | sum", schema)
    assert m(build_window(table, 0, 3)) == 1.0
    # a table built without exact integers falls back to the floats (exact below 2**53)
    bare = type(table)("s", schema, 0, (0,), table.values, table.present)
    assert compile_metric("field:flags | bit:b0 | sum", schema)(build_window(bare, 0, 3)) == 2.0


@pytest.mark.parametrize("container", ["npz", "json", "hdf5", "parquet"])
def test_uint64_round_trips_exactly_to_every_container(tmp_path: Path, container: str) -> None:
    table = _read(tmp_path, values=[2**63 + 5, 2**53 + 1, 3, 2**64 - 1])
    track = track_from_table(table, 0, 0, 3)
    spec = OutputSpec.from_dict(
        {
            "shard_length": 4,
            "container": container,
            "modalities": {"flags": {"dtype": "uint64", "source": "field:flags"}},
        }
    )
    arrays = track_arrays(track, spec, table.schema)
    c = get_container(container)
    back = c.loads(c.dumps(arrays))["flags"]
    assert back.dtype == np.uint64
    assert [int(v) for v in back] == [2**63 + 5, 2**53 + 1, 3, 2**64 - 1]
    if container == "json":
        assert b"9223372036854775813" in c.dumps(arrays)  # written as an integer, not a float


def test_uint64_to_a_narrower_modality_is_range_checked_exactly(tmp_path: Path) -> None:
    table = _read(tmp_path, values=[2**53 + 1, 3])
    track = track_from_table(table, 0, 0, 1)
    spec = OutputSpec.from_dict(
        {"shard_length": 4, "modalities": {"f": {"dtype": "int64", "source": "field:flags"}}}
    )
    assert [int(v) for v in track_arrays(track, spec, table.schema)["f"]] == [2**53 + 1, 3]
    spec = OutputSpec.from_dict(
        {"shard_length": 4, "modalities": {"f": {"dtype": "uint8", "source": "field:flags"}}}
    )
    with pytest.raises(OutputValueError, match=str(2**53 + 1)) as info:
        track_arrays(track, spec, table.schema)
    assert info.value.row == 0


def test_out_of_range_and_fractional_columns_are_refused_at_load(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match=r"300 is outside uint8") as info:
        _read(tmp_path, values=[1, 300], typ=pa.int64(), dtype="uint8")
    assert info.value.row == 1
    with pytest.raises(SourceError, match="2.5 is not an integer"):
        _read(tmp_path, values=[1.0, 2.5], typ=pa.float64(), dtype="uint8")
    with pytest.raises(SourceError, match=r"outside int8"):
        _read(tmp_path, values=[2**63 + 5], dtype="int8")
    table = _read(tmp_path, values=[1.0, 255.0, None], typ=pa.float64(), dtype="uint8")
    assert table.ints["flags"][:, 0, 0].tolist() == [1, 255, 0]


def test_tick_path_refuses_out_of_range_ints() -> None:
    ticks = [Tick(0.0, {0: {"flags": 256}})]
    with pytest.raises(SourceError, match="outside uint8"):
        table_from_ticks(_schema("uint8"), ticks, "s")


@pytest.mark.parametrize(
    ("dtype", "width"),
    [("uint8", 8), ("int8", 8), ("uint16", 16), ("int32", 32), ("uint64", 64), ("int64", 64)],
)
def test_schema_and_compiler_agree_on_bit_indexes(dtype: str, width: int) -> None:
    ok = FieldSpec("f", semantics="bitmask", dtype=dtype, bits={"top": width - 1, "low": 0})
    schema = SchemaSpec((ok,), sample_hz=1.0)
    compile_metric("field:f | bit:top | frac", schema)
    with pytest.raises(SchemaError, match=f"outside 0..{width - 1}"):
        FieldSpec("f", semantics="bitmask", dtype=dtype, bits={"over": width})


def test_compiler_refuses_what_a_schema_bypass_let_through() -> None:
    f = FieldSpec("f", semantics="bitmask", dtype="uint64", bits={"top": 63})
    object.__setattr__(f, "bits", {"top": 64})
    with pytest.raises(MetricCompileError, match="outside the 64-bit dtype"):
        compile_metric("field:f | bit:top | frac", SchemaSpec((f,), sample_hz=1.0))


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=8), st.integers(0, 63))
def test_bit_equals_python_shift(values, index) -> None:
    schema = SchemaSpec(
        (FieldSpec("f", semantics="bitmask", dtype="uint64", bits={"k": index}),), 1.0
    )
    table = table_from_ticks(
        schema, [Tick(float(t), {0: {"f": v}}) for t, v in enumerate(values)], "s"
    )
    got = compile_metric("field:f | bit:k | sum", schema)(build_window(table, 0, len(values)))
    assert got == sum((v >> index) & 1 for v in values)


def test_timenet_uint64_signal_reaches_the_table_exactly(tmp_path: Path) -> None:
    import timenet as tn
    from kuration.sources import TimenetAdapter

    reg = tmp_path / "reg"
    card = {"org": "acme", "name": "flags", "version": "1.0", "license": "CC0-1.0"}
    vals = np.array([2**63 + 5, 2**53 + 1, 3], dtype=np.uint64)
    with tn.TimeFWriter(reg, card) as w:
        rid = w.add_record("r0", {})
        w.add_signal(rid, "flags", vals, tn.SignalSpec("uint64", "", rate_hz=1.0))
    ad = TimenetAdapter(_schema(), fields={"flags": {"signals": ["flags"]}}, registries=[str(reg)])
    table = ad.read_table("timenet://acme/flags@1.0#r0")
    assert [int(v) for v in table.ints["flags"][:, 0, 0]] == [2**63 + 5, 2**53 + 1, 3]
    assert (
        compile_metric("field:flags | bit:b63 | sum", table.schema)(build_window(table, 0, 3)) == 1
    )
    narrow = TimenetAdapter(
        _schema("int8"), fields={"flags": {"signals": ["flags"]}}, registries=[str(reg)]
    )
    with pytest.raises(SourceError, match=r"signal 'flags' of field 'flags': .* outside int8"):
        narrow.read_table("timenet://acme/flags@1.0#r0")


def test_curated_dataset_gives_its_integers_back(
    tmp_path: Path, adsb_job_dict, adsb_sources
) -> None:
    import json

    from kuration import CuratedDatasetAdapter, run_job

    job = json.loads(json.dumps(adsb_job_dict))
    job["sources"] = [str(p) for p in adsb_sources[:2]]
    job["budget"] = {"train_hours": 0.1, "test_hours": 0.0}
    for f in job["schema"]["fields"]:
        if f["name"] == "onground":
            f["dtype"] = "uint8"  # a bool column read as an integer field
    run_job(job, tmp_path / "ds")
    ad = CuratedDatasetAdapter(tmp_path / "ds")
    table = ad.read_table(ad.sources()[0])
    got = table.ints["onground"]
    assert got.dtype == np.uint8
    valid = ~np.isnan(table.values["onground"])
    np.testing.assert_array_equal(got[valid], table.values["onground"][valid])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-(2**53), 2**53), min_size=1, max_size=8), st.integers(0, 63))
def test_float_bit_kernel_agrees_with_the_exact_one_below_2_53(values, index) -> None:
    from kuration.metrics.dsl import kernels

    ints = np.array(values, dtype=np.int64).reshape(-1, 1)
    exact = kernels.bit_map_exact(ints, index, np.ones(ints.shape, bool))
    np.testing.assert_array_equal(kernels.bit_map(ints.astype(np.float64), index), exact)
