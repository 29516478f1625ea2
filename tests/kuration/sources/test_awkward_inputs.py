"""Ordinary but awkward input that used to give a silent wrong result is refused or converted.

Each case starts from the real ADS-B sample (traffic==2.13, OpenSky data, MIT) where it
fits, changed the way exported files are changed in practice; the edge cases use small
generated files.  docs/input-policies.md states each policy.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from kuration import TimeseriesAdapter
from kuration.errors import EntityIdError, SourceError
from kuration.sources.stream import TickStream


def _with_column(table: pa.Table, name: str, values: pa.Array | pa.ChunkedArray) -> pa.Table:
    i = table.schema.get_field_index(name)
    return table.set_column(
        i, pa.field(name, values.type, metadata=table.field(name).metadata), values
    )


@pytest.fixture(scope="module")
def adsb_table(adsb_sources: list[Path]) -> pa.Table:
    """The first 2000 rows of the first real quickstart source."""
    return pq.read_table(adsb_sources[0]).slice(0, 2000)


# -- entity ids with surrounding blanks ------------------------------------------------------
def _padded(table: pa.Table) -> pa.Table:
    """Every third row's icao24 with a trailing blank, as a fixed-width export writes it."""
    ids = table.column("icao24")
    third = pa.array(np.arange(table.num_rows) % 3 == 1)
    return _with_column(
        table, "icao24", pc.if_else(third, pc.binary_join_element_wise(ids, " ", ""), ids)
    )


@pytest.mark.parametrize("fmt", ["csv", "parquet", "parquet-dictionary", "stream"])
def test_padded_entity_ids_are_refused_not_split(
    adsb_table: pa.Table, adsb_adapter: TimeseriesAdapter, tmp_path: Path, fmt: str
) -> None:
    # before: '0101de ' and '0101de' were two entities, so 7 aircraft read as 14 half tracks
    assert adsb_adapter.read_table(_write(adsb_table, tmp_path, "parquet")).n_entities == 7
    uri = _write(_padded(adsb_table), tmp_path, "csv" if fmt == "stream" else fmt)
    with pytest.raises(
        EntityIdError,
        match=r"(line 3|row 1): column 'icao24': entity id '0101de ' starts",
    ) as exc:
        if fmt == "stream":
            list(TickStream(adsb_adapter, uri).blocks())
        else:
            adsb_adapter.read_table(uri)
    assert "another entity than '0101de'" in str(exc.value)
    assert (exc.value.source, exc.value.column, exc.value.row) == (uri, "icao24", 1)


def test_padded_integer_ids_still_parse_when_declared(tmp_path: Path, adsb_schema) -> None:
    from kuration import SchemaSpec

    schema = SchemaSpec.from_dict({"sample_hz": 1.0, "fields": [{"name": "v", "kind": "scalar"}]})
    p = tmp_path / "ids.csv"
    p.write_text("t,id,v\n0, 7,1.0\n1,7 ,2.0\n2,7,3.0\n")
    kw = {"time_column": "t", "entity_column": "id", "fields": {"v": "v"}}
    assert TimeseriesAdapter(schema, entity_dtype="int64", **kw).read_table(str(p)).entity_ids == (
        7,
    )
    with pytest.raises(EntityIdError, match=r"line 2: column 'id': entity id ' 7' starts"):
        TimeseriesAdapter(schema, **kw).read_table(str(p))


def _write(table: pa.Table, tmp_path: Path, fmt: str) -> str:
    if fmt == "csv":
        path = tmp_path / "src.csv"
        pacsv.write_csv(table, path)
    else:
        path = tmp_path / f"{fmt}.parquet"
        if fmt == "parquet-dictionary":
            table = _with_column(table, "icao24", table.column("icao24").dictionary_encode())
        pq.write_table(table, path)
    return str(path)


# -- event columns ---------------------------------------------------------------------------
def _event_adapter(adsb_job_dict: dict) -> TimeseriesAdapter:
    """The quickstart adapter with a column ``flag`` read as the per-tick event ``on_ground``."""
    from kuration import SchemaSpec
    from kuration.sources import adapter_from_dict

    schema = SchemaSpec.from_dict({**adsb_job_dict["schema"], "events": ["on_ground"]})
    return adapter_from_dict({**adsb_job_dict["adapter"], "events": {"on_ground": "flag"}}, schema)


def test_event_column_nan_is_no_event_and_codes_are_refused(
    adsb_table: pa.Table, adsb_job_dict: dict, tmp_path: Path
) -> None:
    adapter = _event_adapter(adsb_job_dict)

    def read(flag: np.ndarray) -> np.ndarray:
        uri = _write(adsb_table.append_column("flag", pa.array(flag)), tmp_path, "parquet")
        return adapter.read_table(uri).events["on_ground"]

    onground = adsb_table.column("onground").to_numpy(zero_copy_only=False)
    want = read(onground)
    assert 0 < want.sum() < want.size
    # a boolean column with gaps exported through NumPy: 1.0 / 0.0 / NaN.  NaN was cast
    # to true, raising the event at every tick with a missing flag
    flag = onground.astype(np.float64)
    gaps = flag.copy()
    gaps[::7] = np.nan
    np.testing.assert_array_equal(read(gaps), read(np.where(np.isnan(gaps), 0.0, gaps)))
    np.testing.assert_array_equal(read(np.where(flag > 0, "True", "false")), want)  # any case
    np.testing.assert_array_equal(read(flag.astype(np.int8)), want)
    for bad, shown in (
        (flag * 3, "3"),
        (flag / 2, "0.5"),
        (np.where(flag > 0, "yes", "no"), "'no'"),
    ):
        with pytest.raises(SourceError, match=rf"row \d+: event column 'flag' holds {shown}"):
            read(bad)


# -- times stamped at the half step ----------------------------------------------------------
@pytest.mark.parametrize("collisions", ["nearest", "mean"])
def test_rows_stamped_at_the_half_second_keep_one_tick_each(
    adsb_table: pa.Table, adsb_job_dict: dict, adsb_schema, tmp_path: Path, collisions: str
) -> None:
    """A 1 Hz recorder that stamps its rows at .5 s: with NumPy's half-to-even rounding
    rows at 0.5, 1.5, 2.5 s went to ticks 0, 2, 2, so half the rows collided (dropped, or
    silently averaged in pairs with "mean") and every other tick was left empty."""
    from kuration.sources import adapter_from_dict

    adapter = adapter_from_dict({**adsb_job_dict["adapter"], "collisions": collisions}, adsb_schema)
    late = _with_column(adsb_table, "timestamp", pc.add(adsb_table.column("timestamp"), 500))
    want = adapter.read_table(_write(adsb_table, tmp_path, "parquet"))
    got = adapter.read_table(_write(late, tmp_path, "csv"))
    assert got.counts == {"snap_collisions": 0}
    assert got.k0 == want.k0 + 1 and got.present.sum() == want.present.sum() == late.num_rows
    for name in want.values:
        np.testing.assert_array_equal(got.values[name], want.values[name])
    ordered = late.take(pc.sort_indices(late, [("timestamp", "ascending")]))
    stream = TickStream(adapter, _write(ordered, tmp_path, "csv"), batch_rows=500)
    assert sum(int(b.present.sum()) for b in stream.blocks()) == late.num_rows
    assert stream.counts["snap_collisions"] == 0


# -- Hive-partitioned directories ------------------------------------------------------------
def test_partition_keys_that_look_numeric_stay_text_ids(
    adsb_table: pa.Table, adsb_adapter: TimeseriesAdapter, tmp_path: Path
) -> None:
    """A directory partitioned by the entity column (``icao24=007/...``): Arrow typed the
    keys as integers, so '007' and '7' read as one entity 7 (their rows merged, or refused as
    duplicates where their times met) and '0042'-style ids lost their zeros."""
    ids = sorted(set(adsb_table.column("icao24").to_pylist()))
    numeric = dict(zip(ids, ["007", "7", "0042", "42", "0100", "100", "5"], strict=True))
    renamed = _with_column(
        adsb_table,
        "icao24",
        pa.array([numeric[i] for i in adsb_table.column("icao24").to_pylist()]),
    )
    pq.write_to_dataset(renamed, tmp_path / "parts", partition_cols=["icao24"])
    flat = adsb_adapter.read_table(_write(renamed, tmp_path, "parquet"))
    parts = adsb_adapter.read_table(str(tmp_path / "parts"))
    assert parts.entity_ids == flat.entity_ids == ("0042", "007", "0100", "100", "42", "5", "7")
    assert parts.present.sum() == flat.present.sum() == adsb_table.num_rows
    for name in flat.values:
        np.testing.assert_array_equal(parts.values[name], flat.values[name])
    # its identity (resume, checkpoints) is its files: paths and bytes
    before = adsb_adapter.fingerprint(str(tmp_path / "parts"))
    assert adsb_adapter.fingerprint(str(tmp_path / "parts")) == before
    leaf = sorted((tmp_path / "parts").rglob("*.parquet"))[0]
    leaf.rename(leaf.with_name("renamed.parquet"))
    renamed_fp = adsb_adapter.fingerprint(str(tmp_path / "parts"))
    assert renamed_fp != before
    with open(leaf.with_name("renamed.parquet"), "ab") as fh:
        fh.write(b"\0")
    assert adsb_adapter.fingerprint(str(tmp_path / "parts")) not in (before, renamed_fp)


# -- epoch times read in the wrong unit ------------------------------------------------------
def test_epoch_times_in_the_wrong_unit_are_named_with_the_unit_that_fits(
    adsb_sources: list[Path], adsb_job_dict: dict, adsb_schema
) -> None:
    """The sample's times are epoch milliseconds.  Read as microseconds they were January
    1970 and 1000 rows fell on each 1 Hz tick: a warning under "nearest", nothing at all
    under "mean", and a source of a few ticks either way."""
    from kuration.sources import adapter_from_dict

    uri = str(adsb_sources[0])
    for unit, collisions in (("us", "nearest"), ("us", "mean")):
        adapter = adapter_from_dict(
            {**adsb_job_dict["adapter"], "time_unit": unit, "collisions": collisions},
            adsb_schema,
        )
        with pytest.raises(
            SourceError, match=r"time column 'timestamp' read in 'us' starts at 1970-01-19"
        ) as exc:
            adapter.read_table(uri)
        assert "read in 'ms' they start at 2021-10-07T" in str(exc.value)
        assert "set time_unit 'ms'" in str(exc.value)
    too_fine = adapter_from_dict({**adsb_job_dict["adapter"], "time_unit": "s"}, adsb_schema)
    with pytest.raises(
        SourceError,
        match=r"outside the int64-nanosecond range .*\(read as 'ms' this is 2021-10-07T",
    ):
        too_fine.read_table(uri)


def test_a_fast_signal_from_time_zero_averaged_down_is_not_mistaken(tmp_path: Path) -> None:
    from kuration import SchemaSpec

    schema = SchemaSpec.from_dict({"sample_hz": 1.0, "fields": [{"name": "v", "kind": "scalar"}]})
    n = 20_000  # 1 kHz for 20 s, times in s from 0, averaged onto 1 Hz
    p = tmp_path / "imu.parquet"
    pq.write_table(pa.table({"t": np.arange(n) / 1000.0, "v": np.ones(n)}), p)
    adapter = TimeseriesAdapter(schema, time_column="t", fields={"v": "v"}, collisions="mean")
    assert adapter.read_table(str(p)).present.sum() == 21


# -- tab-separated files ---------------------------------------------------------------------
def test_tsv_files_are_read_tab_separated(
    adsb_table: pa.Table, adsb_adapter: TimeseriesAdapter, tmp_path: Path
) -> None:
    """``format="auto"`` took ``.tsv`` for CSV and split it at commas: one column named
    after the whole header, refused as missing every mapped column."""
    tsv = tmp_path / "src.tsv"
    pacsv.write_csv(adsb_table, tsv, pacsv.WriteOptions(delimiter="\t"))
    want = adsb_adapter.read_table(_write(adsb_table, tmp_path, "csv"))
    got = adsb_adapter.read_table(str(tsv))
    assert got.entity_ids == want.entity_ids and got.k0 == want.k0
    for name in want.values:
        np.testing.assert_array_equal(got.values[name], want.values[name])
    ordered = adsb_table.take(pc.sort_indices(adsb_table, [("timestamp", "ascending")]))
    pacsv.write_csv(ordered, tsv, pacsv.WriteOptions(delimiter="\t"))
    stream = TickStream(adsb_adapter, str(tsv), batch_rows=500)
    assert sum(int(b.present.sum()) for b in stream.blocks()) == adsb_table.num_rows


# -- time columns left as text ---------------------------------------------------------------
def _iso_times(table: pa.Table, zone: np.ndarray) -> pa.Table:
    """The sample's epoch-ms times as ISO 8601 text, with a ``Z`` where ``zone`` is true."""
    stamps = pc.strftime(table.column("timestamp").cast(pa.timestamp("ms")), "%Y-%m-%dT%H:%M:%S")
    text = pc.if_else(pa.array(zone), pc.binary_join_element_wise(stamps, "Z", ""), stamps)
    return _with_column(table, "timestamp", text)


def _one_time_replaced(table: pa.Table, zone: bool, row: int, value: str, tmp_path: Path) -> str:
    """The sample as ISO text (all zoned, or all naive) with the time of data row ``row``
    replaced by ``value``, as CSV."""
    zones = np.full(table.num_rows, zone)
    text = _iso_times(table, zones).column("timestamp").to_pylist()
    text[row] = value
    return _write(_with_column(table, "timestamp", pa.array(text)), tmp_path, "csv")


@pytest.mark.parametrize(
    ("zone", "value", "why"),
    [
        (True, "2021-10-07T23:59:60Z", "names no instant"),  # a leap second
        (False, "2020-02-30T00:00:00", "names no instant"),
        (False, "2020-02-30", "names no instant"),
        (True, "2021-10-07T25:00:00Z", "names no instant"),
    ],
)
def test_an_iso_time_that_names_no_instant_names_its_row(
    adsb_table: pa.Table, adsb_adapter: TimeseriesAdapter, tmp_path: Path, zone, value, why
) -> None:
    uri = _one_time_replaced(adsb_table, zone, 1234, value, tmp_path)
    with pytest.raises(SourceError) as exc:
        adsb_adapter.read_table(uri)
    msg = str(exc.value)
    assert exc.value.row == 1234 and exc.value.source == uri
    # the CSV's header is line 1: data row 1234 is line 1236 in an editor
    assert f"{uri}, line 1236: " in msg, msg
    assert f"holds {value!r}" in msg and why in msg, msg


@pytest.mark.parametrize("zone", [True, False])
def test_epoch_numbers_among_iso_times_name_a_row_of_each(
    adsb_table: pa.Table, adsb_adapter: TimeseriesAdapter, tmp_path: Path, zone
) -> None:
    uri = _one_time_replaced(adsb_table, zone, 77, "1633608773000", tmp_path)
    with pytest.raises(SourceError) as exc:
        adsb_adapter.read_table(uri)
    msg = str(exc.value)
    assert (
        "mixes numbers (line 79: '1633608773000') and ISO 8601 times (line 2: '2021-10-07T" in msg
    )
    assert exc.value.row == 77 and uri in msg
    # the times carry offsets: the advice about times without one does not apply
    assert "without a UTC offset" not in msg


def test_naive_and_zoned_times_mixed_name_a_row_of_each(
    adsb_table: pa.Table, adsb_adapter: TimeseriesAdapter, tmp_path: Path
) -> None:
    n = adsb_table.num_rows
    naive = adsb_adapter.read_table(
        _write(_iso_times(adsb_table, np.zeros(n, bool)), tmp_path, "csv")
    )
    assert naive.present.sum() == n  # all naive: read as UTC
    mixed = np.arange(n) >= 1000  # a logger that started writing "Z" after an update
    uri = _write(_iso_times(adsb_table, mixed), tmp_path, "csv")
    with pytest.raises(
        SourceError, match=r"mixes times without a UTC offset \(line 2: '2021-10-07T"
    ) as exc:
        adsb_adapter.read_table(uri)
    assert "and with one (line 1002: '2021-10-07T" in str(exc.value)
    lines = Path(uri).read_text().splitlines()
    Path(uri).write_text("\n".join([*lines[:500], lines[0], *lines[500:]]) + "\n")  # header again
    with pytest.raises(
        SourceError,
        match=r"line 501: time column 'timestamp' is text and holds 'timestamp' there",
    ):
        adsb_adapter.read_table(uri)


def test_a_word_in_a_numeric_csv_column_names_its_row_and_text(
    adsb_sources: list[Path], adsb_adapter: TimeseriesAdapter, tmp_path: Path
) -> None:
    """One '12k' makes Arrow read the whole altitude column as text: the error names the
    row and the value, not only the column's type; empty cells and 'nan' are numbers."""
    t = pq.read_table(adsb_sources[0])
    alt = [None if v is None else str(v) for v in t.column("altitude").to_pylist()]
    alt[7] = ""
    alt[9] = "nan"
    alt[499] = "12k"
    i = t.schema.get_field_index("altitude")
    path = tmp_path / "words.csv"
    pacsv.write_csv(t.set_column(i, "altitude", pa.array(alt, pa.string())), path)
    with pytest.raises(SourceError, match=r"line 501: column 'altitude' .* '12k' is not a number"):
        adsb_adapter.read_table(str(path))


def test_a_streamed_csv_names_the_column_of_a_value_that_does_not_fit(
    adsb_time_ordered: list[Path], adsb_adapter: TimeseriesAdapter, tmp_path: Path
) -> None:
    t = pq.read_table(adsb_time_ordered[0])
    alt = [None if v is None else str(v) for v in t.column("altitude").to_pylist()]
    alt[-3] = "12k"  # past the first block, whose numbers set the column's type
    i = t.schema.get_field_index("altitude")
    path = tmp_path / "late-word.csv"
    pacsv.write_csv(t.set_column(i, "altitude", pa.array(alt, pa.string())), path)
    with pytest.raises(SourceError, match=r"column 'altitude'.*'12k'"):
        list(TickStream(adsb_adapter, str(path), batch_rows=2048).blocks())
