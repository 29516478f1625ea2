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

from kuration import EntityIdError, TimeseriesAdapter
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
        EntityIdError, match=r"row 1: column 'icao24': entity id '0101de ' starts"
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
    with pytest.raises(EntityIdError, match=r"row 0: column 'id': entity id ' 7' starts"):
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
