"""Catalog queries: read-only SQL over typed views, nothing outside the version reachable."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from tn_helpers import make_card, write_demo

import timenet as tn
from timenet.cli import main


@pytest.fixture
def reader(demo: Path) -> tn.TimeFReader:
    return tn.TimeNet([demo.parents[2]], auto_build=False).open("acme/demo@1.0.0")


def test_views_are_typed_and_match_the_reader(reader: tn.TimeFReader) -> None:
    notes = reader.query("SELECT * FROM annotations ORDER BY id")
    assert isinstance(notes, pa.Table)
    assert notes.schema.field("label").type == pa.string()
    assert notes.schema.field("value").type == pa.float64()
    expected = reader.annotations()  # parsed from JSON by the reader, independently
    assert notes.column("record_id").to_pylist() == [a.record_id for a in expected]
    assert notes.column("label").to_pylist() == [
        a.content.value if isinstance(a.content, tn.Label) else None for a in expected
    ]
    assert notes.column("text").to_pylist() == [
        a.content.text if isinstance(a.content, tn.Text) else None for a in expected
    ]
    assert notes.column("signal").to_pylist() == [a.signal for a in expected]
    counts = reader.query("SELECT label, count(*) AS n FROM tasks GROUP BY label ORDER BY label")
    assert counts.to_pylist() == [{"label": "af", "n": 2}, {"label": "sinus", "n": 1}]
    sig = reader.query(
        "SELECT dtype, unit, shape, rate_hz, irregular, length FROM signals "
        "WHERE record_id = 'rec-1' ORDER BY ordinal"
    ).to_pylist()
    for row, (name, signal) in zip(sig, reader.signals("rec-1").items(), strict=True):
        spec = signal.spec
        assert (row["dtype"], row["unit"], tuple(row["shape"])) == (
            spec.dtype,
            spec.unit,
            spec.shape,
        ), name
        assert row["rate_hz"] == spec.rate_hz and row["length"] == len(signal)
        assert row["irregular"] == (spec.rate_hz is None)
    subject = reader.query("SELECT id FROM records WHERE CAST(metadata->>'subject' AS INT) = 2")
    assert subject.column("id").to_pylist() == ["rec-2"]
    assert reader.load().query("SELECT count(*) AS n FROM records").to_pylist() == [{"n": 3}]


def test_numeric_and_question_content_are_columns(tmp_path: Path) -> None:
    with tn.TimeFWriter(tmp_path, make_card()) as w:
        w.add_record("r0")
        w.add_annotation("r0", tn.Numeric(72.5, "1/min"), start_ns=0)
        w.add_task("r0", "qa", tn.QuestionAnswer("Is the rhythm regular?", "yes"))
        w.add_task("r0", "hr", tn.Numeric(71.0, "1/min"))
    reader = tn.TimeNet([tmp_path], auto_build=False).open("acme/demo")
    assert reader.query("SELECT kind, value, unit FROM annotations").to_pylist() == [
        {"kind": "numeric", "value": 72.5, "unit": "1/min"}
    ]
    rows = reader.query("SELECT name, question, answer, value FROM tasks ORDER BY id").to_pylist()
    assert rows == [
        {"name": "qa", "question": "Is the rhythm regular?", "answer": "yes", "value": None},
        {"name": "hr", "question": None, "answer": None, "value": 71.0},
    ]


def _escapes(root: Path, secret: Path, version: Path) -> list[tuple[str, str]]:
    values = version / "values" / "0000-ecg.parquet"
    out = root / "leak.csv"
    return [
        (f"SELECT * FROM read_csv('{secret}')", "may only read this version's catalog"),
        (f"SELECT * FROM '{secret}'", "may only read this version's catalog"),
        (f"SELECT * FROM read_text('{secret}')", "may only read this version's catalog"),
        (f"SELECT * FROM read_blob('{secret}')", "may only read this version's catalog"),
        (f"SELECT * FROM read_parquet('{values}')", "may only read this version's catalog"),
        (f"SELECT * FROM glob('{root}/*')", "may only read this version's catalog"),
        ("SELECT * FROM read_csv('https://example.com/x.csv')", "only read this version's"),
        (f"ATTACH '{root / 'other.duckdb'}' AS other", "only SELECT queries"),
        (f"COPY records TO '{out}'", "only SELECT queries"),
        (f"EXPORT DATABASE '{root / 'dump'}'", "only SELECT queries"),
        ("INSTALL httpfs", "only SELECT queries"),
        ("LOAD httpfs", "only SELECT queries"),
        ("SET enable_external_access = true", "only SELECT queries"),
        ("PRAGMA database_list", "only SELECT queries"),
        ("CREATE TEMP TABLE t AS SELECT 1", "only SELECT queries"),
        (f"SELECT * FROM sqlite_scan('{root / 'x.db'}', 't')", "cannot install or load ext"),
        (f"SELECT * FROM query('ATTACH ''{root / 'q.db'}'' AS q')", "single SELECT statement"),
        ("SELECT 1; SELECT 2", "expected one SQL statement, got 2"),
        ("SELECT * FROM secret_table", "does not exist"),  # no scan of Python variables
    ]


def test_every_escape_is_refused(reader: tn.TimeFReader, tmp_path: Path) -> None:
    secret = tmp_path / "secret.csv"
    secret.write_text("token\nhunter2\n")
    secret_table = pa.table({"token": ["hunter2"]})  # noqa: F841 - bait for a replacement scan
    for sql, needle in _escapes(tmp_path, secret, reader.handle.path("control.duckdb").parent):
        with pytest.raises(tn.QueryError, match="query on acme/demo@1.0.0") as info:
            reader.query(sql)
        assert needle in str(info.value), (sql, str(info.value))
        assert "hunter2" not in str(info.value)
        assert info.value.sql == sql
    assert not (tmp_path / "leak.csv").exists() and not (tmp_path / "dump").exists()
    # the connection refused all of that, and ordinary queries still run afterwards
    assert reader.query("SELECT count(*) AS n FROM signals").to_pylist() == [{"n": 12}]


def test_cli_query_and_publish(
    demo: Path, s3: dict, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    reg = str(demo.parents[2])
    sql = "SELECT record_id, label FROM tasks ORDER BY id"
    assert main(["query", "--registry", reg, "acme/demo", sql]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "record_id\tlabel",
        "rec-0\taf",
        "rec-1\tsinus",
        "rec-2\taf",
    ]
    assert main(["query", "--registry", reg, "acme/demo", sql + " LIMIT 1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"record_id": "rec-0", "label": "af"}
    bad = f"SELECT * FROM read_csv('{demo / 'manifest.json'}')"
    assert main(["query", "--registry", reg, "acme/demo", bad]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("timenet: error: query on acme/demo@1.0.0: refused")

    url = f"s3://{s3['bucket']}/reg"
    opts = json.dumps(s3["storage_options"])
    assert main(["publish", str(demo), url, "--storage-options", opts]) == 0
    assert capsys.readouterr().out.strip() == f"{url}/acme/demo/1.0.0"
    remote = tn.TimeNet([url], storage_options=s3["storage_options"], cache_dir=tmp_path / "c")
    np.testing.assert_array_equal(
        remote.open("acme/demo@1.0.0").signal("rec-1", "ecg").to_numpy(),
        tn.TimeFReader.open(demo).signal("rec-1", "ecg").to_numpy(),
    )
    assert main(["publish", str(demo), url, "--storage-options", opts]) == 1
    assert "already exists" in capsys.readouterr().err
    assert main(["publish", str(demo), url, "--storage-options", "[1]"]) == 1
    assert "--storage-options: must be a JSON object" in capsys.readouterr().err


def test_query_after_write_of_a_second_version(tmp_path: Path) -> None:
    write_demo(tmp_path, "1.0.0", records=1)
    write_demo(tmp_path, "2.0.0", records=2)
    client = tn.TimeNet([tmp_path], auto_build=False)
    assert client.open("acme/demo").query("SELECT count(*) AS n FROM records").to_pylist() == [
        {"n": 2}
    ]
