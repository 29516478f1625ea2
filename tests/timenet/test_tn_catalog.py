"""The catalog opens in DuckDB 1.x (the ``duckdb-cli`` 1.5.6 binary) and in DuckDB 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
from tn_helpers import write_demo

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
