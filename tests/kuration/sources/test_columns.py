"""The read fast paths (sources/_columns.py) and ``read_entities``: the same arrays, errors
and tracks as the general path they shortcut."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kuration import SchemaSpec, TimeseriesAdapter
from kuration.contracts.track import track_from_table
from kuration.errors import EntityIdError, SourceError
from kuration.sources._columns import cell_rows, dictionary_entity_codes, gather_cells

SCHEMA = SchemaSpec.from_dict(
    {
        "sample_hz": 1.0,
        "fields": [
            {"name": "pos", "kind": "vector", "dims": 2, "semantics": "position", "unit": "m"},
            {"name": "speed", "kind": "scalar", "unit": "m/s"},
        ],
        "globals": [{"name": "wind", "kind": "scalar", "unit": "m/s"}],
        "events": ["gust"],
    }
)


def _adapter(fmt: str = "auto", collisions: str = "nearest") -> TimeseriesAdapter:
    return TimeseriesAdapter(
        SCHEMA,
        time_column="t",
        entity_column="id",
        fields={"pos": ["x", "y"], "speed": "v"},
        globals={"wind": "w"},
        events={"gust": "g"},
        format=fmt,
        collisions=collisions,
    )


def _rows(seed: int, n: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    t = np.sort(rng.integers(0, 40, n) + rng.choice([0.0, 0.2, -0.3], n))  # collisions
    ids = rng.choice(["b7", "a1", "c", "a10", "Z"], n)
    keys = np.char.add(t.astype(str), ids)
    keep = np.unique(keys, return_index=True)[1]  # no exact (time, entity) duplicates
    v = rng.normal(size=n)
    v[rng.random(n) < 0.2] = np.nan
    sel = np.sort(keep)  # no exact (time, entity) duplicates
    return pa.table(
        {
            "t": t[sel],
            "id": ids[sel],
            "x": rng.normal(size=n)[sel],
            "y": rng.integers(-5, 5, n)[sel],
            "v": pa.array(v[sel], from_pandas=True),
            "w": rng.normal(size=n)[sel],
            "g": rng.random(n)[sel] < 0.1,
        }
    )


def _same(a, b) -> None:
    assert (a.k0, a.entity_ids, a.counts) == (b.k0, b.entity_ids, b.counts)
    np.testing.assert_array_equal(a.present, b.present)
    for name in a.values:
        np.testing.assert_array_equal(a.values[name], b.values[name])
    for name in a.globals:
        np.testing.assert_array_equal(a.globals[name], b.globals[name])
    for name in a.events:
        np.testing.assert_array_equal(a.events[name], b.events[name])


@pytest.mark.filterwarnings("ignore::kuration.errors.SnapCollisionWarning")
@pytest.mark.parametrize("collisions", ["nearest", "mean"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dictionary_parquet_equals_the_text_path(
    tmp_path: Path, seed: int, collisions: str
) -> None:
    rows = _rows(seed, 300)
    pq.write_table(rows, tmp_path / "s.parquet", row_group_size=70)  # several dictionaries
    pacsv.write_csv(rows, tmp_path / "s.csv")
    fast = _adapter(collisions=collisions).read_table(str(tmp_path / "s.parquet"))
    plain = _adapter(collisions=collisions).read_table(str(tmp_path / "s.csv"))
    _same(fast, plain)
    assert fast.entity_ids == tuple(sorted(set(rows.column("id").to_pylist())))


@pytest.mark.filterwarnings("ignore::kuration.errors.SnapCollisionWarning")
@pytest.mark.parametrize("collisions", ["nearest", "mean"])
def test_read_entities_cuts_only_the_roster(tmp_path: Path, collisions: str) -> None:
    pq.write_table(_rows(3, 400), tmp_path / "s.parquet")
    a, uri = _adapter(collisions=collisions), str(tmp_path / "s.parquet")
    whole = a.read_table(uri)
    part = a.read_entities(uri, ["c", "a1", "not-there"])
    assert part.entity_ids == ("a1", "c")
    assert (part.k0, part.n_steps, part.counts) == (whole.k0, whole.n_steps, whole.counts)
    for name in ("wind",):
        np.testing.assert_array_equal(part.globals[name], whole.globals[name])
    np.testing.assert_array_equal(part.events["gust"], whole.events["gust"])
    for j, e in enumerate(part.entity_ids):
        w = whole.entity_ids.index(e)
        np.testing.assert_array_equal(part.present[:, j], whole.present[:, w])
        for name in whole.values:
            np.testing.assert_array_equal(part.values[name][:, j], whole.values[name][:, w])
        got = track_from_table(part, j, 3, 30, None, {"m": 1.0})
        want = track_from_table(whole, w, 3, 30, None, {"m": 1.0})
        assert got.entity_id == want.entity_id and got.k0 == want.k0
        for name in want.fields:
            np.testing.assert_array_equal(got.fields[name], want.fields[name])
    assert a.read_entities(uri, []).entity_ids == ()


@pytest.mark.filterwarnings("ignore::kuration.errors.SnapCollisionWarning")
def test_read_entities_checks_every_row(tmp_path: Path) -> None:
    rows = _rows(4, 50)
    v = rows.column("v").to_numpy(zero_copy_only=False).copy()
    bad_row = int(np.flatnonzero(np.asarray(rows.column("id").to_pylist()) != "c")[-1])
    v[bad_row] = np.inf
    pq.write_table(rows.set_column(4, "v", pa.array(v)), tmp_path / "s.parquet")
    with pytest.raises(SourceError, match=rf"row {bad_row}: infinite value in column 'v'"):
        _adapter().read_entities(str(tmp_path / "s.parquet"), ["c"])


def test_dictionary_ids_name_the_first_bad_row(tmp_path: Path) -> None:
    ids = pa.array(["a", "b", "a", " ", "b", None]).dictionary_encode()
    col = pa.chunked_array([ids.slice(0, 2), ids.slice(2)])
    with pytest.raises(EntityIdError, match=r"row 3: column 'id': missing entity id \(empty"):
        dictionary_entity_codes(col.slice(0, 5), "auto", "id", "src")
    with pytest.raises(EntityIdError, match=r"row 5: column 'id': missing entity id \(null"):
        dictionary_entity_codes(col, "auto", "id", "src")  # nulls first, as the general path
    codes, roster = dictionary_entity_codes(col.slice(0, 3), "string", "id", "src")
    assert roster == ("a", "b") and codes.tolist() == [0, 1, 0]
    with pytest.raises(EntityIdError, match=r"row 1: column 'id': missing entity id \(null\)"):
        dictionary_entity_codes(pa.chunked_array([ids.slice(4)]), "auto", "id", "src")
    # not for it: plain text, int64 ids, repeated dictionary values (the general path reads them)
    assert dictionary_entity_codes(pa.chunked_array([pa.array(["a"])]), "auto", "id", "s") is None
    assert dictionary_entity_codes(col, "int64", "id", "src") is None
    rep = pa.DictionaryArray.from_arrays(pa.array([0, 1]), pa.array(["a", "a"]))
    assert dictionary_entity_codes(pa.chunked_array([rep]), "auto", "id", "src") is None


@settings(max_examples=50, deadline=None)
@given(
    n_t=st.integers(1, 12),
    n_e=st.integers(1, 5),
    dims=st.integers(1, 3),
    data=st.data(),
)
def test_gather_equals_a_nan_grid_scatter(n_t: int, n_e: int, dims: int, data) -> None:
    n_cells = n_t * n_e
    cells = data.draw(st.lists(st.integers(0, n_cells - 1), unique=True, max_size=n_cells))
    n_rows = len(cells) + data.draw(st.integers(0, 4))
    kept = np.asarray(
        data.draw(st.permutations(range(n_rows)))[: len(cells)], dtype=np.intp
    ).reshape(-1)
    cell = np.asarray(cells, dtype=np.intp)
    cols = [
        np.asarray(
            data.draw(st.lists(st.floats(allow_infinity=False), min_size=n_rows, max_size=n_rows)),
            dtype=np.float64,
        )
        for _ in range(dims)
    ]
    want = np.full((n_cells, dims), np.nan)
    want[cell] = np.stack(cols, axis=1)[kept]
    got = gather_cells(cols, cell_rows(n_rows, n_cells, cell, kept))
    np.testing.assert_array_equal(got, want)
    assert got.shape == (n_cells, dims) and got.dtype == np.float64


def test_a_folder_of_csvs_as_a_source_says_how_to_name_them(tmp_path) -> None:
    """A folder source is a partitioned Parquet dataset; one of CSVs failed with a Parquet
    magic-bytes error (a fresh user's check)."""
    from kuration.errors import SourceError
    from kuration.sources._columns import read_partitioned

    folder = tmp_path / "csv"
    folder.mkdir()
    (folder / "a.csv").write_text("time,v\n0,1\n")
    with pytest.raises(SourceError, match=r'no \.parquet file.*"glob": "csv/\*\.csv"'):
        read_partitioned(str(folder), None)
