"""TickStream: blocks of a time-ordered source equal the whole-table read, batch by batch.

Real input: a quickstart source (traffic==2.13 ADS-B sample) with its rows sorted by time
(a stable sort, so each aircraft keeps its own order).  Small generated files cover the
edge cases: a collision straddling a batch boundary, disorder, duplicates and a bad
value in a later batch.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kuration import SchemaSpec, TickStream, TickTable, TimeseriesAdapter
from kuration.errors import SnapCollisionWarning, SourceError, StreamingError, StreamOrderError


@pytest.fixture(scope="module")
def ordered(adsb_time_ordered: list[Path]) -> Path:
    return adsb_time_ordered[1]


def glue(blocks: list[TickTable]) -> dict[str, np.ndarray]:
    """The blocks laid end to end on one grid (ticks between blocks absent)."""
    k0 = blocks[0].k0
    n = blocks[-1].k0 + blocks[-1].n_steps - k0
    e = blocks[0].n_entities
    out: dict[str, np.ndarray] = {"present": np.zeros((n, e), dtype=bool)}
    for name, v in blocks[0].values.items():
        out[name] = np.full((n, *v.shape[1:]), np.nan)
    for name, v in blocks[0].ints.items():
        out["int:" + name] = np.zeros((n, *v.shape[1:]), dtype=v.dtype)
    for b in blocks:
        sl = slice(b.k0 - k0, b.k0 - k0 + b.n_steps)
        out["present"][sl] = b.present
        for name, v in b.values.items():
            out[name][sl] = v
        for name, v in b.ints.items():
            out["int:" + name][sl] = v
    return out


def assert_same(table: TickTable, blocks: list[TickTable]) -> None:
    assert blocks[0].k0 == table.k0
    assert all(b.entity_ids == table.entity_ids for b in blocks)
    got = glue(blocks)
    np.testing.assert_array_equal(got["present"], table.present)
    for name, v in table.values.items():
        np.testing.assert_array_equal(got[name], v)  # NaN where NaN, bit for bit elsewhere
    for name, v in table.ints.items():
        np.testing.assert_array_equal(got["int:" + name], v)


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(batch_rows=st.integers(300, 30_000))
def test_blocks_equal_the_whole_table_read(ordered: Path, adsb_adapter, batch_rows: int) -> None:
    table = adsb_adapter.read_table(str(ordered))
    ts = TickStream(adsb_adapter, str(ordered), batch_rows=batch_rows)
    blocks = list(ts.blocks())
    assert_same(table, blocks)
    assert ts.counts == dict(table.counts)
    assert ts.roster == table.entity_ids


def test_csv_streams_by_block(ordered: Path, adsb_adapter, tmp_path: Path) -> None:
    csv = tmp_path / "s1.csv"
    pacsv.write_csv(pq.read_table(ordered), csv)
    table = adsb_adapter.read_table(str(csv))
    blocks = list(TickStream(adsb_adapter, str(csv), batch_rows=500).blocks())
    assert len(blocks) > 3  # really read in pieces
    assert_same(table, blocks)


SCHEMA = SchemaSpec.from_dict(
    {"name": "t", "sample_hz": 1.0, "fields": [{"name": "x", "kind": "scalar"}]}
)


def small(tmp_path: Path, times: list[float], xs: list[float], ents: list[str], **kw) -> tuple:
    path = tmp_path / "s.parquet"
    pq.write_table(pa.table({"t": times, "e": ents, "x": xs}), path)
    ad = TimeseriesAdapter(SCHEMA, time_column="t", entity_column="e", fields={"x": "x"}, **kw)
    return ad, str(path)


def test_a_collision_across_a_batch_boundary_merges_as_the_whole_read(tmp_path: Path) -> None:
    # rows 1 and 2 of entity "a" both snap to tick 1; batch_rows=2 puts them in two batches
    ad, path = small(
        tmp_path, [0.0, 0.9, 1.2, 2.0], [1.0, 2.0, 4.0, 8.0], ["a"] * 4, collisions="mean"
    )
    assert_same(ad.read_table(path), list(TickStream(ad, path, batch_rows=2).blocks()))
    ad, path = small(tmp_path, [0.0, 0.9, 1.2, 2.0], [1.0, 2.0, 4.0, 8.0], ["a"] * 4)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ts = TickStream(ad, path, batch_rows=2)
        blocks = list(ts.blocks())
    assert [type(w.message) for w in seen] == [SnapCollisionWarning]  # once per source
    assert ts.counts == {"snap_collisions": 1}
    with pytest.warns(SnapCollisionWarning):
        assert_same(ad.read_table(path), blocks)
    ad, path = small(tmp_path, [0.0, 0.9, 1.2], [1.0, 2.0, 4.0], ["a"] * 3, collisions="raise")
    with pytest.raises(SourceError, match=r"s\.parquet, row 2: 1 row\(s\) snap"):
        list(TickStream(ad, path, batch_rows=2).blocks())


def test_disorder_is_refused_naming_file_and_row(tmp_path: Path) -> None:
    ad, path = small(tmp_path, [0.0, 1.0, 2.0, 3.0, 2.5], [0.0] * 5, ["a", "b", "a", "b", "a"])
    with pytest.raises(StreamOrderError, match=r"s\.parquet, row 4: time goes backwards") as info:
        list(TickStream(ad, path, batch_rows=2).blocks())
    assert info.value.row == 4 and info.value.source == path


def test_duplicates_and_bad_values_name_the_file_row(tmp_path: Path) -> None:
    ad, path = small(tmp_path, [0.0, 1.0, 2.0, 2.0], [0.0] * 4, ["a", "a", "b", "b"])
    with pytest.raises(SourceError, match="duplicated") as whole:
        ad.read_table(path)
    with pytest.raises(SourceError, match="duplicated") as streamed:
        list(TickStream(ad, path, batch_rows=1).blocks())
    assert streamed.value.row == whole.value.row == 3
    ad, path = small(tmp_path, [0.0, 1.0, 2.0, 3.0, 4.0], [0, 0, 0, 0, np.inf], ["a"] * 5)
    with pytest.raises(SourceError, match=r"row 4: infinite value in column 'x'"):
        list(TickStream(ad, path, batch_rows=2).blocks())
    ad, path = small(tmp_path, [0.0, 1.0, 2.3], [0.0] * 3, ["a"] * 3, snap_tolerance=0.1)
    with pytest.raises(SourceError, match=r"row 2: time 2.3 s is 0.3 steps off"):
        list(TickStream(ad, path, batch_rows=1).blocks())


def test_refusals(tmp_path: Path, adsb_adapter) -> None:
    ad, path = small(tmp_path, [], [], [])
    with pytest.raises(SourceError, match="no rows"):
        list(TickStream(ad, path).blocks())
    with pytest.raises(StreamingError, match="partitioned Parquet directory"):
        TickStream(ad, str(tmp_path))
    with pytest.raises(StreamingError, match="batch_rows"):
        TickStream(ad, path, batch_rows=0)


def test_a_bad_number_past_the_first_csv_block_names_its_line(tmp_path: Path) -> None:
    """The first block types column x as floats; ``9.9.9`` in a later block is named by
    its file line and column, as the whole-table read names it."""
    xs = [f"{i * 0.5:.1f}" for i in range(6000)]
    xs[5000] = "9.9.9"
    path = tmp_path / "late.csv"
    path.write_text("t,e,x\n" + "".join(f"{i}.0,a,{x}\n" for i, x in enumerate(xs)))
    ad = TimeseriesAdapter(SCHEMA, time_column="t", entity_column="e", fields={"x": "x"})
    ts = TickStream(ad, str(path), batch_rows=1000)  # blocks of 64 KiB, about 4,500 rows
    with pytest.raises(SourceError, match=r"late\.csv, line 5002: column 'x' holds '9\.9\.9'"):
        list(ts.blocks())
    with pytest.raises(SourceError, match=r"late\.csv, line 5002: column 'x' of field 'x'"):
        ad.read_table(str(path))
