"""kur init on a damaged CSV names the file, the line as an editor numbers it, the column
and the value, and never drops a numeric column for one bad cell."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from kuration import init_job
from kuration.errors import InitError


def _track(path: Path, n: int = 115, edit: dict[int, tuple[int, str]] | None = None) -> Path:
    """A 50 Hz animal track (Frame, Time, TrackId, x, y); ``edit`` maps a file line (1-based,
    header counted) to (column index, new text)."""
    lines = ["Frame,Time,TrackId,x,y"]
    for i in range(n):
        lines.append(f"{i + 8},{0.16 + i * 0.02:.2f},8,{60 + math.sin(i / 9):.4f},{i * 0.7:.3f}")
    for line, (col, text) in (edit or {}).items():
        cells = lines[line - 1].split(",")
        cells[col] = text
        lines[line - 1] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")
    return path


def test_one_word_in_a_numeric_column_names_line_column_and_value(tmp_path: Path) -> None:
    path = _track(tmp_path / "corrupt.csv", edit={41: (3, "abc")})
    with pytest.raises(InitError) as exc:
        init_job([path], tmp_path / "job")
    msg = str(exc.value)
    assert str(path) in msg and "column 'x'" in msg, msg
    assert "line 41: 'abc'" in msg and "1 of 115 rows" in msg, msg
    assert "data row" not in msg and "row 39" not in msg, msg  # one number: the file line
    assert not (tmp_path / "job" / "job.json").exists()


def test_a_few_bad_cells_are_listed_first_three(tmp_path: Path) -> None:
    edits = {k: (4, f"bad{k}") for k in (5, 9, 20, 30)}
    path = _track(tmp_path / "y.csv", edit=edits)
    with pytest.raises(InitError, match=r"column 'y' holds numbers except in 4 of 115 rows") as e:
        init_job([path], tmp_path / "job")
    assert "line 5: 'bad5'" in str(e.value) and "and 1 more" in str(e.value)


def test_a_text_column_is_still_left_out_not_an_error(tmp_path: Path) -> None:
    path = tmp_path / "labels.csv"
    rows = [f"{i * 0.02:.2f},{'walk' if i % 3 else 'run'},{i}.5" for i in range(200)]
    path.write_text("time,label,v\n" + "\n".join(rows) + "\n")
    init_job([path], tmp_path / "job")
    assert (tmp_path / "job" / "job.json").exists()


def test_a_word_in_a_numeric_time_column_names_it_not_row_0(tmp_path: Path) -> None:
    path = _track(tmp_path / "bad_time.csv", edit={71: (1, "notatime")})
    with pytest.raises(InitError) as exc:
        init_job([path], tmp_path / "job")
    msg = str(exc.value)
    assert "time column 'Time' holds numbers except in 1 of 115 rows" in msg, msg
    assert "line 71: 'notatime'" in msg and "row 0" not in msg, msg
    assert "time_format" not in msg  # no strptime advice for a numeric column


def test_a_second_file_with_a_bad_cell_is_named(tmp_path: Path) -> None:
    a = _track(tmp_path / "a.csv")
    b = _track(tmp_path / "b.csv", edit={41: (3, "abc")})
    with pytest.raises(InitError, match=r"b\.csv, line 41: .*'abc' is not a number"):
        init_job([a, b], tmp_path / "job")


@pytest.mark.parametrize("name", ["missing.csv", "missing_dir"])
def test_a_path_that_does_not_exist_says_so(tmp_path: Path, name: str) -> None:
    with pytest.raises(InitError, match=rf"{name}: does not exist"):
        init_job([tmp_path / name], tmp_path / "job")


def test_rows_without_a_time_name_the_file_and_lines(tmp_path: Path) -> None:
    path = _track(tmp_path / "timeless.csv", edit={31: (1, ""), 60: (1, "")})
    with pytest.raises(InitError) as exc:
        init_job([path], tmp_path / "job")
    msg = str(exc.value)
    assert "2 of 115 rows have no time" in msg and "--drop-timeless" in msg, msg
    assert f"{path}, line 31; {path}, line 60" in msg and "data row" not in msg, msg


@pytest.mark.parametrize(("cells", "got"), [(3, 3), (8, 8)])
def test_a_short_or_long_row_names_its_line(tmp_path: Path, cells: int, got: int) -> None:
    path = _track(tmp_path / "ragged.csv")
    lines = path.read_text().splitlines()
    lines[50] = ",".join((lines[50].split(",") * 2)[:cells])  # file line 51
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InitError, match=rf"line 51: Expected 5 columns, got {got}"):
        init_job([path], tmp_path / "job")
