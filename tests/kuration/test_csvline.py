"""A CSV data row's line as an editor numbers it."""

from __future__ import annotations

from pathlib import Path

import pytest

from kuration._csvline import csv_line, csv_parse_error, csv_parse_line, row_place


def test_lines_count_the_header_and_skip_empty_lines_as_arrow_does(tmp_path: Path) -> None:
    import pyarrow.csv as pacsv

    path = tmp_path / "gaps.csv"
    path.write_text("\nt,v\n0,a\n\n1,b\r\n\r\n2,c\n")
    table = pacsv.read_csv(path)
    assert table.column("v").to_pylist() == ["a", "b", "c"]
    assert [csv_line(str(path), r) for r in range(4)] == [3, 5, 7, None]
    assert row_place(str(path), 2) == "line 7"


def test_other_sources_keep_the_row(tmp_path: Path) -> None:
    (tmp_path / "t.parquet").write_bytes(b"PAR1")
    assert row_place(str(tmp_path / "t.parquet"), 4) == "row 4"
    assert row_place(str(tmp_path / "absent.csv"), 4) == "row 4"
    assert csv_line(str(tmp_path / "absent.csv"), -1) is None


def test_arrow_row_numbers_become_lines() -> None:
    msg = "CSV parse error: Row #51: Expected 6 columns, got 3: 57,1.14,8"
    assert csv_parse_line(msg) == "CSV parse error: line 51: Expected 6 columns, got 3: 57,1.14,8"


def _gappy(path: Path, bad: str = "12.32,0.5") -> Path:
    """40 rows of t,a,b with empty lines at file lines 10 and 20 and ``bad`` at line 34
    (data row 30: Arrow's record 32, header counted, as empty lines are skipped)."""
    lines = ["t,a,b", *(f"{i * 0.01:.2f},{i % 7}.5,{i}" for i in range(40))]
    lines.insert(9, "")
    lines.insert(19, "")
    lines[33] = bad
    text = "\n".join(lines) + "\n"
    if path.suffix == ".gz":
        import gzip

        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def test_a_parse_error_after_empty_lines_names_the_file_line(tmp_path: Path) -> None:
    for name in ("gaps.csv", "gaps.csv.gz"):
        path = _gappy(tmp_path / name)
        msg = csv_parse_error(str(path))
        assert msg == "CSV parse error: line 34: Expected 3 columns, got 2: 12.32,0.5", msg
        assert csv_line(str(path), 30) == 34 and row_place(str(path), 30) == "line 34"
    assert csv_parse_error(str(tmp_path / "absent.csv")) is None
    (tmp_path / "fine.csv").write_text("t,v\n0,1\n1,x\n")  # a value, not the layout
    assert csv_parse_error(str(tmp_path / "fine.csv")) is None


def test_a_quoted_field_over_two_lines_counts_as_one_record(tmp_path: Path) -> None:
    path = tmp_path / "q.csv"
    path.write_text('t,v,w\n0,"a\nb",1\n1,c,2\n\n2,d\n3,e,4\n')
    assert [csv_line(str(path), r) for r in range(4)] == [2, 4, 6, 7]
    assert csv_parse_error(str(path)) == "CSV parse error: line 6: Expected 3 columns, got 2: 2,d"


def test_kur_init_and_the_run_name_the_line_of_a_short_row(tmp_path: Path) -> None:
    from kuration import SchemaSpec, TimeseriesAdapter, init_job
    from kuration.errors import InitError, SourceError
    from kuration.sources.stream import TickStream

    path = _gappy(tmp_path / "gaps.csv")
    with pytest.raises(InitError, match=r"gaps\.csv: cannot read it: .*line 34: Expected 3"):
        init_job([path], tmp_path / "job")
    schema = SchemaSpec.from_dict({"sample_hz": 100.0, "fields": [{"name": "a", "kind": "scalar"}]})
    ad = TimeseriesAdapter(schema, time_column="t", fields={"a": "a"})
    where = r"gaps\.csv: cannot read csv: CSV parse error: line 34: Expected 3 columns, got 2"
    with pytest.raises(SourceError, match=where):
        ad.read_table(str(path))
    with pytest.raises(SourceError, match=where):  # kur run --streaming
        list(TickStream(ad, str(path), batch_rows=4).blocks())


def test_a_bad_cell_in_a_gzipped_csv_names_its_line(tmp_path: Path) -> None:
    from kuration import init_job
    from kuration.errors import InitError

    path = _gappy(tmp_path / "cells.csv.gz", bad="0.30,abc,30")
    with pytest.raises(InitError, match=r"line 34: 'abc'"):
        init_job([path], tmp_path / "job")
