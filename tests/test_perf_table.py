"""README.md's performance table is exactly what ``bench/perf_table.py`` renders from
``bench/results.json``, and a benchmark's ``--record`` replaces its own rows there."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load_perf_table():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("perf_table", ROOT / "bench" / "perf_table.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("perf_table", mod)
    spec.loader.exec_module(mod)
    return mod


pt = _load_perf_table()


def test_readme_shows_the_recorded_figures(capsys: pytest.CaptureFixture[str]) -> None:
    assert pt.main(["--check"]) == 0, capsys.readouterr().err
    rows = pt.load_rows()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert all(r["measured"] in readme for r in rows)


def test_record_replaces_rows_by_id_and_the_check_sees_it(tmp_path: Path, capsys) -> None:
    results, readme = tmp_path / "results.json", tmp_path / "README.md"
    readme.write_text(f"# x\n\n{pt.START}\n{pt.END}\n\nafter\n", encoding="utf-8")
    pt.record([{"id": "a", "benchmark": "bench a", "measured": "1.00x", "goal": ">= 1x"}], results)
    pt.record([{"id": "b", "benchmark": "bench b", "measured": "2.00x", "goal": ">= 2x"}], results)
    pt.record([{"id": "a", "benchmark": "bench a", "measured": "3.00x", "goal": ">= 1x"}], results)
    rows = json.loads(results.read_text())["rows"]
    assert [(r["id"], r["measured"]) for r in rows] == [("a", "3.00x"), ("b", "2.00x")]
    assert all(r["date"] and "core" in r["machine"] for r in rows)
    argv = ["--results", str(results), "--readme", str(readme)]
    assert pt.main([*argv, "--check"]) == 1
    assert "run bench/perf_table.py --write" in capsys.readouterr().err
    assert pt.main([*argv, "--write"]) == 0
    assert pt.main([*argv, "--check"]) == 0
    text = readme.read_text()
    assert "| bench a | 3.00x | >= 1x |" in text and text.endswith(f"{pt.END}\n\nafter\n")
    assert set(tmp_path.iterdir()) == {readme, results}  # no temp file left behind


def test_bad_inputs_name_the_file(tmp_path: Path, capsys) -> None:
    results, readme = tmp_path / "results.json", tmp_path / "README.md"
    row = {"id": "a", "benchmark": "b", "measured": "1x", "goal": "1x", "date": "d", "machine": "m"}
    results.write_text(json.dumps({"rows": [row, row]}))
    readme.write_text(f"{pt.START}\n{pt.END}\n")
    argv = ["--results", str(results), "--readme", str(readme), "--check"]
    assert pt.main(argv) == 1
    assert f"{results}: row 1: id 'a' appears twice" in capsys.readouterr().err
    results.write_text(json.dumps({"rows": [row]}))
    readme.write_text("no markers\n")
    assert pt.main(argv) == 1
    assert f"{readme}: expected one" in capsys.readouterr().err
