"""The catalog opens in DuckDB 1.x (the ``duckdb-cli`` 1.5.6 binary) and in DuckDB 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
from tn_helpers import write_demo, write_many_records

from timenet.catalog import _TEMPLATE, STORAGE_VERSION


def _duckdb1(db: Path, *queries: str) -> list[list[dict[str, Any]]]:
    """Run ``queries`` with the DuckDB 1.x command line tool, read-only: JSON rows of each."""
    cli = Path(sys.executable).parent / "duckdb"
    sql = ";".join(["SELECT version() AS v", *queries])
    run = subprocess.run(
        [cli, "-readonly", "-json", str(db), "-c", sql], capture_output=True, text=True
    )
    assert run.returncode == 0 and not run.stderr, run.stderr
    out, pos, dec = [], 0, json.JSONDecoder()
    text = run.stdout.strip()
    while pos < len(text):
        rows, pos = dec.raw_decode(text, pos)
        out.append(rows)
        pos = len(text) - len(text[pos:].lstrip())
    assert out[0][0]["v"].startswith("v1."), out[0]
    return out[1:]


def test_duckdb1_reads_a_fresh_catalog(tmp_path: Path) -> None:
    version = write_demo(tmp_path / "reg")
    db = version / "control.duckdb"
    sql = "SELECT record_idx, name, length FROM signals ORDER BY record_idx, ordinal"
    tables, info, signals = _duckdb1(
        db, "SELECT table_name FROM information_schema.tables ORDER BY 1", "SELECT * FROM info", sql
    )
    assert [t["table_name"] for t in tables] == [
        "annotations",
        "info",
        "lineage",
        "records",
        "signals",
        "tasks",
    ]
    assert {r["key"]: r["value"] for r in info} == {
        "format": "timef",
        "format_version": "1",
        "duckdb_storage_version": STORAGE_VERSION,
    }
    # the same rows as DuckDB 2 reads
    old = [(r["record_idx"], r["name"], r["length"]) for r in signals]
    with duckdb.connect(str(db), read_only=True) as con:
        assert old == con.execute(sql).fetchall()
    assert len(old) == 12


def test_shipped_template_has_the_old_storage_number() -> None:
    head = _TEMPLATE.read_bytes()[8:13]
    assert head == b"DUCK" + bytes([64])  # storage format 64: DuckDB 1.0 and later


def _files(version: Path) -> dict[str, bytes]:
    return {
        p.relative_to(version).as_posix(): p.read_bytes() for p in version.rglob("*") if p.is_file()
    }


def _unrelated_duckdb_work(db: Path) -> list[Any]:
    """Open an in-memory and an on-disk database and run string-heavy queries in them;
    the on-disk one stays open (returned), as other code in a process may keep one."""
    with duckdb.connect() as mem:
        mem.execute(
            "CREATE TABLE t AS SELECT md5(range::VARCHAR) || repeat('x', range % 300) s FROM range(20000)"
        )
        mem.execute("SELECT count(DISTINCT s) FROM t").fetchall()
    disk = duckdb.connect(str(db))
    disk.execute(
        "CREATE TABLE t AS SELECT range::VARCHAR || '-' || md5(range::VARCHAR) s FROM range(5000)"
    )
    disk.execute("CHECKPOINT")
    return [disk]


def test_catalog_bytes_do_not_depend_on_the_process(tmp_path: Path) -> None:
    # FSST compression made the catalog depend on the heap left by earlier DuckDB work
    # (see timenet.catalog._WRITE_SETTINGS): almost every write of this version differed
    first = _files(write_many_records(tmp_path / "first"))
    assert set(first) >= {"control.duckdb", "manifest.json"}
    kept: list[Any] = []
    try:
        for i in range(3):
            kept += _unrelated_duckdb_work(tmp_path / f"other{i}.duckdb")
            for side in "ab":
                again = _files(write_many_records(tmp_path / f"{side}{i}"))
                assert again.keys() == first.keys()
                # the catalog first: the manifest differs only through its checksum
                for rel, data in sorted(again.items(), key=lambda kv: kv[0] != "control.duckdb"):
                    assert data == first[rel], f"write {side}{i}: {rel} differs"
    finally:
        for con in kept:
            con.close()
    # a fresh process writes the same bytes
    script = (
        "import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); "
        "from tn_helpers import write_many_records; write_many_records(Path(sys.argv[2]))"
    )
    here = str(Path(__file__).parent)
    run = subprocess.run(
        [sys.executable, "-c", script, here, str(tmp_path / "fresh")],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    fresh = _files(tmp_path / "fresh" / "acme" / "many" / "1.0.0")
    assert fresh == first
    # and no column of the catalog is stored with FSST
    with duckdb.connect(
        str(tmp_path / "fresh" / "acme" / "many" / "1.0.0" / "control.duckdb"), read_only=True
    ) as con:
        tables = [t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
        used = {
            c
            for t in tables
            for (c,) in con.execute(
                f"SELECT DISTINCT compression FROM pragma_storage_info('{t}')"
            ).fetchall()
        }
    assert "FSST" not in used and used, used
