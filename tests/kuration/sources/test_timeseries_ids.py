"""Entity ids read by TimeseriesAdapter: text unless declared, missing ids are errors."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kuration import SchemaSpec, TimeseriesAdapter
from kuration.core.ids import tag_entity_id
from kuration.errors import EntityIdError, SourceError

SCHEMA = SchemaSpec.from_dict({"sample_hz": 1.0, "fields": [{"name": "v", "kind": "scalar"}]})


def _adapter(**kw) -> TimeseriesAdapter:
    return TimeseriesAdapter(SCHEMA, time_column="t", entity_column="id", fields={"v": "v"}, **kw)


def _csv(tmp_path: Path, ids: list[str], name: str = "ids.csv") -> str:
    lines = ["t,id,v", *(f"{i},{e},{float(i)}" for i, e in enumerate(ids))]
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return str(p)


def _parquet(tmp_path: Path, ids: pa.Array, name: str = "ids.parquet") -> str:
    p = tmp_path / name
    n = len(ids)
    pq.write_table(pa.table({"t": list(range(n)), "id": ids, "v": [1.0] * n}), p)
    return str(p)


def test_csv_ids_with_leading_zeros_stay_text(tmp_path: Path) -> None:
    table = _adapter().read_table(_csv(tmp_path, ["0042", "0100", "0042", "0100"]))
    assert table.entity_ids == ("0042", "0100")
    assert [tag_entity_id(e) for e in table.entity_ids] == ["str:0042", "str:0100"]


def test_007_and_7_are_two_entities(tmp_path: Path) -> None:
    table = _adapter().read_table(_csv(tmp_path, ["007", "7", "007", "7"]))
    assert table.entity_ids == ("007", "7")
    assert table.present.sum(axis=0).tolist() == [2, 2]


def test_declared_int64_ids_parse_the_text(tmp_path: Path) -> None:
    uri = _csv(tmp_path, ["0042", "42", " 7", "-3"])
    table = _adapter(entity_dtype="int64").read_table(uri)
    assert table.entity_ids == (-3, 42, 7)  # canonical order: by tagged text
    with pytest.raises(EntityIdError, match=r"line 3: column 'id': entity id 'x1' is not an int"):
        _adapter(entity_dtype="int64").read_table(_csv(tmp_path, ["1", "x1"], "bad.csv"))
    with pytest.raises(EntityIdError, match=r"line 3: .*outside int64") as exc:
        _adapter(entity_dtype="int64").read_table(_csv(tmp_path, ["1", str(2**63)], "big.csv"))
    assert exc.value.row == 1 and exc.value.column == "id"


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_empty_and_blank_ids_name_file_column_and_row(tmp_path: Path, fmt: str) -> None:
    ids = ["a", "b", "", "c"] if fmt == "csv" else pa.array(["a", "b", "  ", "c"])
    uri = _csv(tmp_path, ids) if fmt == "csv" else _parquet(tmp_path, ids)
    with pytest.raises(
        EntityIdError, match=r"(line 4|row 2): column 'id': missing entity id"
    ) as exc:
        _adapter().read_table(uri)
    err = exc.value
    assert isinstance(err, SourceError) and isinstance(err, ValueError)
    assert (err.source, err.column, err.row) == (uri, "id", 2)


def test_null_ids_in_parquet_are_errors(tmp_path: Path) -> None:
    uri = _parquet(tmp_path, pa.array(["a", None, "b"]))
    with pytest.raises(EntityIdError, match=r"row 1: column 'id': missing entity id \(null\)"):
        _adapter().read_table(uri)


def test_float_id_column_with_nan_names_the_row(tmp_path: Path) -> None:
    uri = _parquet(tmp_path, pa.array([1.0, 2.0, float("nan")]))
    with pytest.raises(EntityIdError, match=r"row 2: column 'id': missing entity id \(nan"):
        _adapter().read_table(uri)
    ok = _parquet(tmp_path, pa.array([1.0, 2.0, 1.0]), "ok.parquet")
    assert _adapter().read_table(ok).entity_ids == (1.0, 2.0)
    assert _adapter(entity_dtype="int64").read_table(ok).entity_ids == (1, 2)
    with pytest.raises(EntityIdError, match="no canonical text"):
        _adapter(entity_dtype="string").read_table(ok)
    frac = _parquet(tmp_path, pa.array([1.0, 2.5]), "frac.parquet")
    with pytest.raises(EntityIdError, match=r"row 1: .*2\.5 is not an integer"):
        _adapter(entity_dtype="int64").read_table(frac)


def test_parquet_integer_ids_keep_their_type_unless_declared(tmp_path: Path) -> None:
    uri = _parquet(tmp_path, pa.array([42, 7, 42], pa.uint32()))
    assert _adapter().read_table(uri).entity_ids == (42, 7)
    assert _adapter(entity_dtype="string").read_table(uri).entity_ids == ("42", "7")
    dic = _parquet(tmp_path, pa.array(["0042", "7", "0042"]).dictionary_encode(), "d.parquet")
    assert _adapter().read_table(dic).entity_ids == ("0042", "7")
    big = _parquet(tmp_path, pa.array([1, 2**64 - 1], pa.uint64()), "u64.parquet")
    with pytest.raises(EntityIdError, match=r"row 1: .*outside int64"):
        _adapter(entity_dtype="int64").read_table(big)


def test_unsupported_id_types_and_options(tmp_path: Path) -> None:
    uri = _parquet(tmp_path, pa.array([[1], [2]]))
    with pytest.raises(EntityIdError, match="ids are text or integers"):
        _adapter().read_table(uri)
    with pytest.raises(ValueError, match="entity_dtype"):
        _adapter(entity_dtype="float")
    assert _adapter(entity_dtype="string").to_dict()["entity_dtype"] == "string"


def test_tag_entity_id_refuses_nan_with_the_package_error() -> None:
    with pytest.raises(EntityIdError, match="not finite"):
        tag_entity_id(float("nan"))
    with pytest.raises(EntityIdError, match="no canonical form"):
        tag_entity_id(object())


@settings(max_examples=25, deadline=None)
@given(st.lists(st.text(alphabet="0123456789abc-", min_size=1, max_size=6), min_size=1, max_size=8))
def test_csv_ids_round_trip_as_written(tmp_path_factory, ids: list[str]) -> None:
    uri = _csv(tmp_path_factory.mktemp("ids"), ids)
    table = _adapter().read_table(uri)
    assert set(table.entity_ids) == set(ids)
    assert all(isinstance(e, str) for e in table.entity_ids)
