"""A CSV data row's line as an editor numbers it."""

from __future__ import annotations

from pathlib import Path

from kuration._csvline import csv_line, csv_parse_line, row_place


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
