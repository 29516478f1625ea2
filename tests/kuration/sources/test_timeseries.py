"""TimeseriesAdapter on real sources and on small generated edge cases."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kuration import SchemaSpec, TimeseriesAdapter
from kuration.errors import DataOrderWarning, SnapCollisionWarning, SourceError

SCHEMA = SchemaSpec.from_dict(
    {
        "sample_hz": 1.0,
        "fields": [
            {"name": "pos", "kind": "vector", "dims": 2, "semantics": "position", "unit": "m"},
            {"name": "mode", "kind": "categorical", "vocab": ["taxi", "air"]},
        ],
    }
)


def _adapter(**kw) -> TimeseriesAdapter:
    return TimeseriesAdapter(
        SCHEMA,
        time_column="t",
        entity_column="id",
        fields={"pos": ["x", "y"], "mode": "mode"},
        **kw,
    )


def _write(tmp_path: Path, rows: dict, name: str = "src.parquet") -> str:
    p = tmp_path / name
    pq.write_table(pa.table(rows), p)
    return str(p)


def _rows(t, ids, x=None, mode=None) -> dict:
    n = len(t)
    return {
        "t": t,
        "id": ids,
        "x": x if x is not None else [float(i) for i in range(n)],
        "y": [0.0] * n,
        "mode": mode if mode is not None else ["air"] * n,
    }


def test_real_source_lays_out_on_the_grid(adsb_adapter, adsb_sources) -> None:
    table = adsb_adapter.read_table(str(adsb_sources[0]))
    assert table.n_steps <= 900 and table.n_entities > 10
    raw = pq.read_table(adsb_sources[0])
    # every raw row is one present (tick, entity) cell: the sample has no collisions at 1 Hz
    assert table.present.sum() == raw.num_rows
    # absent cells are NaN, never zero
    absent = ~table.present
    assert np.isnan(table.values["altitude"][absent]).all()
    assert table.entity_ids == tuple(sorted(set(raw.column("icao24").to_pylist())))


def test_duplicated_timestamps_are_rejected_with_the_row(tmp_path: Path) -> None:
    uri = _write(tmp_path, _rows([0, 1, 1, 2], ["a", "a", "a", "a"]))
    with pytest.raises(SourceError, match=r"row 2: duplicated \(time, entity\)") as exc:
        _adapter().read_table(uri)
    assert exc.value.row == 2 and exc.value.source == uri
    table = _adapter(duplicates="last").read_table(uri)
    assert table.values["pos"][1, 0, 0] == 2.0


def test_backward_time_is_sorted_with_a_warning_or_rejected(tmp_path: Path) -> None:
    uri = _write(tmp_path, _rows([0, 2, 1, 3], ["a"] * 4, x=[0.0, 2.0, 1.0, 3.0]))
    with pytest.warns(DataOrderWarning, match="row 2"):
        table = _adapter().read_table(uri)
    np.testing.assert_array_equal(table.values["pos"][:, 0, 0], [0.0, 1.0, 2.0, 3.0])
    with pytest.raises(SourceError, match="row 2: time goes backwards"):
        _adapter(disorder="raise").read_table(uri)


def test_interleaved_entities_are_not_disorder(tmp_path: Path) -> None:
    uri = _write(tmp_path, _rows([0, 0, 1, 1], ["a", "b", "a", "b"]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table = _adapter().read_table(uri)
    assert table.present.all()


def test_vanishing_entity_is_absent_not_zero(tmp_path: Path) -> None:
    t = [0, 1, 2, 3, 4, 5, 0, 5]
    ids = ["a"] * 6 + ["b", "b"]
    table = _adapter().read_table(_write(tmp_path, _rows(t, ids)))
    b = table.entity_ids.index("b")
    np.testing.assert_array_equal(table.present[:, b], [True, False, False, False, False, True])
    assert np.isnan(table.values["pos"][1:5, b]).all()


@pytest.mark.parametrize("ent", ["AC/DC", "../x", "naïve id", "0042"])
def test_awkward_entity_ids_survive(tmp_path: Path, ent: str) -> None:
    table = _adapter().read_table(_write(tmp_path, _rows([0, 1], [ent, ent])))
    assert table.entity_ids == (ent,)


def test_off_grid_time_is_rejected_under_a_tight_tolerance(tmp_path: Path) -> None:
    uri = _write(tmp_path, _rows([0.0, 1.0, 2.3], ["a"] * 3))
    with pytest.raises(SourceError, match="row 2: .*off the 1 Hz grid"):
        _adapter(snap_tolerance=0.1).read_table(uri)
    table = _adapter().read_table(uri)
    assert table.n_steps == 3


def test_snap_collisions_keep_the_nearest_row(tmp_path: Path) -> None:
    uri = _write(tmp_path, _rows([0.0, 0.9, 1.2], ["a"] * 3, x=[0.0, 9.0, 12.0]))
    with pytest.warns(SnapCollisionWarning, match="1 row"):
        table = _adapter().read_table(uri)
    assert table.values["pos"][1, 0, 0] == 9.0
    with pytest.raises(SourceError, match="row 2: 1 row.* snap to a 1 Hz tick already taken"):
        _adapter(collisions="raise").read_table(uri)


def test_bad_values_and_columns(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match=r"row 1: infinite value in column 'x'"):
        _adapter().read_table(
            _write(tmp_path, _rows([0, 1], ["a", "a"], x=[0.0, np.inf]), "inf.parquet")
        )
    with pytest.raises(SourceError, match=r"row 1: unknown label 'space'"):
        _adapter().read_table(
            _write(tmp_path, _rows([0, 1], ["a", "a"], mode=["air", "space"]), "lbl.parquet")
        )
    rows = _rows([0, 1], ["a", "a"])
    del rows["y"]
    with pytest.raises(SourceError, match=r"missing columns \['y'\]"):
        _adapter().read_table(_write(tmp_path, rows, "cols.parquet"))
    with pytest.raises(SourceError, match="null time"):
        _adapter().read_table(_write(tmp_path, _rows([0, None], ["a", "a"]), "nullt.parquet"))
    with pytest.raises(SourceError, match="no rows"):
        _adapter().read_table(
            _write(
                tmp_path,
                {
                    k: pa.array([], type=pa.float64() if k != "id" and k != "mode" else pa.string())
                    for k in _rows([0], ["a"])
                },
                "empty.parquet",
            )
        )


def test_csv_with_duplicated_column_names(tmp_path: Path) -> None:
    p = tmp_path / "dup.csv"
    p.write_text("t,id,x,x,y,mode\n0,a,1,2,0,air\n")
    with pytest.raises(SourceError, match="duplicated column names"):
        _adapter().read_table(str(p))


def test_malformed_file_names_the_source(tmp_path: Path) -> None:
    p = tmp_path / "broken.parquet"
    p.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(SourceError, match="broken.parquet: cannot read parquet"):
        _adapter().read_table(str(p))


def test_symlinked_source_is_refused(tmp_path: Path) -> None:
    real = _write(tmp_path, _rows([0, 1], ["a", "a"]))
    link = tmp_path / "link.parquet"
    link.symlink_to(real)
    with pytest.raises(SourceError, match="symbolic link"):
        _adapter().read_table(str(link))


def test_ticks_round_trip_through_the_generic_builder(tmp_path: Path) -> None:
    from kuration.contracts.tick import table_from_ticks

    a = _adapter()
    uri = _write(tmp_path, _rows([0, 1, 3, 0], ["a", "a", "a", "b"]))
    table = a.read_table(uri)
    again = table_from_ticks(SCHEMA, a.ticks(uri), table.source_id)
    assert again.entity_ids == table.entity_ids
    np.testing.assert_array_equal(again.present, table.present)
    np.testing.assert_array_equal(again.values["pos"], table.values["pos"])
    np.testing.assert_array_equal(again.values["mode"], table.values["mode"])


def test_mapping_is_validated_against_the_schema() -> None:
    with pytest.raises(ValueError, match="have no column mapping"):
        TimeseriesAdapter(SCHEMA, time_column="t", fields={"pos": ["x", "y"]})
    with pytest.raises(ValueError, match="2 components but 1 columns"):
        TimeseriesAdapter(SCHEMA, time_column="t", fields={"pos": "x", "mode": "mode"})
