"""Ctrl-C during a run: pyarrow's lazy pandas import must not swallow it, the CLI says one
line, and an interrupted write keeps its staged shards for ``resume``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests.kuration.pipeline.test_golden import artifact_hash

from kuration import iter_shards, run_job
from kuration.errors import DatasetIntegrityError
from timenet._cli import run_guarded

# a KeyboardInterrupt raised by the import of pandas stands for a Ctrl-C that lands there
_CHILD = """
import builtins, sys
real = builtins.__import__
def ctrl_c(name, *args, **kwargs):
    if name == "pandas":
        raise KeyboardInterrupt
    return real(name, *args, **kwargs)
builtins.__import__ = ctrl_c
import pyarrow as pa
from kuration.core.interrupts import import_pandas_first
try:
    if sys.argv[1] == "ours":
        import_pandas_first()
    pa.array([1, None]).to_numpy(zero_copy_only=False)
    print("carried on")
except KeyboardInterrupt:
    print("interrupted")
"""


def _child(mode: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, mode], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_a_ctrl_c_in_the_pandas_import_stops_the_run() -> None:
    # pyarrow's Cython shim drops the interrupt (why import_pandas_first exists); if this
    # ever says "interrupted", pyarrow fixed it and the workaround can go
    assert _child("pyarrow") == "carried on"
    assert _child("ours") == "interrupted"


def test_the_cli_reports_an_interrupt_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    def stop() -> int:
        raise KeyboardInterrupt

    assert run_guarded("kur", stop, ()) == 130
    assert capsys.readouterr().err == "kur: interrupted\n"


def test_an_interrupted_write_keeps_its_staged_work_for_resume(
    small_job: dict, tmp_path: Path
) -> None:
    job = {**small_job, "span_seconds": 60}
    out = tmp_path / "out"
    seen = []

    def ctrl_c_midway(event: dict) -> None:
        if event["phase"] == "writing" and event["event"] == "advance":
            seen.append(event)
            if len(seen) == 2:
                raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_job(job, out, progress=ctrl_c_midway)
    assert any(out.glob(".kuration_staging/**/*.npz"))  # staged shards kept
    with pytest.raises(DatasetIntegrityError, match="interrupted .* kur run --resume"):
        next(iter_shards(out, split="train"))  # no commit record: no reader accepts it
    run_job(job, out, resume=True)
    config = json.loads((out / "config.json").read_text())
    assert config["results"]["resume"]["reused_shards"] > 0
    run_job(job, tmp_path / "fresh")
    assert artifact_hash(out) == artifact_hash(tmp_path / "fresh")


def test_a_resumed_dataset_diffs_identical_to_an_uninterrupted_one(
    small_job: dict, tmp_path: Path
) -> None:
    """What resume reused is how the run went, not what it wrote: kur diff lists it with
    the provenance and calls the datasets identical."""
    from kuration.tools.diff import compare_datasets

    job = {**small_job, "span_seconds": 60}
    run_job(job, tmp_path / "a")
    run_job(job, tmp_path / "b")
    run_job(job, tmp_path / "b", resume=True)  # every shard reused
    res = compare_datasets(tmp_path / "a", tmp_path / "b")
    assert res["identical"] and not res["changes"]
    assert any(c["path"].startswith("results.resume") for c in res["provenance"])


# SIGINTs during a DuckDB query, in a child process (pytest would stop on a stray one), sent
# every 0.2 s until the query stops; one that lands before DuckDB looks for signals is only
# reported when the query ends, hence a query of about 3 s. DuckDB notices a signal in C and
# reports RuntimeError('Query interrupted') (or the KeyboardInterrupt itself) while Python's
# handler for the same signal is still pending: it raises a second KeyboardInterrupt whose
# context is DuckDB's error, which the child takes back before ignoring SIGINT.
_DUCK_CHILD = """
import os, signal, threading, duckdb
from kuration.core.interrupts import is_interrupt
con = duckdb.connect()
done = threading.Event()
caught = []
def ctrl_c():
    while not done.wait(0.2):
        os.kill(os.getpid(), signal.SIGINT)
def query():
    try:
        con.execute("SELECT count(*) FROM range(1000000000) t(x) WHERE x % 7 = 3").fetchall()
        caught.append(None)
    except BaseException as exc:
        caught.append(exc)
threading.Thread(target=ctrl_c, daemon=True).start()
try:
    query()
except KeyboardInterrupt as pending:
    caught.append(pending.__context__ or pending)
signal.signal(signal.SIGINT, signal.SIG_IGN)
done.set()
exc = caught[0]
print("finished" if exc is None else f"{type(exc).__name__} {is_interrupt(exc)}")
"""


def _interrupted_query(con) -> None:
    """A long query on ``con`` while another thread calls ``con.interrupt()`` every 10 ms
    until it stops (DuckDB raises its InterruptException)."""
    import threading

    stop = threading.Event()

    def poke() -> None:
        while not stop.wait(0.01):
            con.interrupt()

    t = threading.Thread(target=poke)
    t.start()
    try:
        con.execute("SELECT count(*) FROM range(1000000000) t(x) WHERE x % 7 = 3").fetchall()
    finally:
        stop.set()
        t.join()


def test_duckdb_reports_of_a_ctrl_c_are_interrupts() -> None:
    """DuckDB raises its own errors for a Ctrl-C: RuntimeError('Query interrupted') for a
    signal during a query, InterruptException through the connection, and an
    InvalidInputException quoting the KeyboardInterrupt raised in an Arrow stream it reads."""

    import duckdb
    import pyarrow as pa

    from kuration.core.interrupts import is_interrupt

    done = subprocess.run(
        [sys.executable, "-c", _DUCK_CHILD], capture_output=True, text=True, check=True
    )
    kind, interrupt = done.stdout.split()
    assert kind in {"RuntimeError", "KeyboardInterrupt"} and interrupt == "True"

    con = duckdb.connect()
    with pytest.raises(duckdb.InterruptException) as info:
        _interrupted_query(con)
    assert is_interrupt(info.value)

    def stream():
        yield pa.record_batch({"a": [1]})
        raise KeyboardInterrupt

    con.register("s", pa.RecordBatchReader.from_batches(pa.schema([("a", pa.int64())]), stream()))
    with pytest.raises(duckdb.Error) as info:
        con.execute("CREATE TABLE t AS SELECT * FROM s").fetchall()
    assert is_interrupt(info.value)
    with pytest.raises(duckdb.Error) as info:
        con.execute("SELECT * FROM no_such_table").fetchall()
    assert not is_interrupt(info.value) and not is_interrupt(RuntimeError("Query failed"))
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as ki:
            raise OSError("while stopping") from ki
    except OSError as exc:
        assert is_interrupt(exc)  # a Ctrl-C in its chain


def test_a_ctrl_c_inside_duckdb_keeps_a_disk_run_for_resume(
    small_job: dict, tmp_path: Path, monkeypatch
) -> None:
    """A Ctrl-C that DuckDB turns into an error of its own (here while it ranks the pool)
    is an interrupt: the partitions stay in the staging area, KeyboardInterrupt reaches the
    caller, and --resume finishes the run as an uninterrupted one."""

    from kuration.pipeline.disk import hours as disk_hours

    real = disk_hours.rank_pool_sql

    def interrupted_rank(con, st, seed) -> None:
        _interrupted_query(con)
        real(con, st, seed)

    job = {**small_job, "span_seconds": 60, "pool": "disk"}
    monkeypatch.setattr(disk_hours, "rank_pool_sql", interrupted_rank)
    with pytest.raises(KeyboardInterrupt):
        run_job(job, tmp_path / "out")
    assert any((tmp_path / "out").glob(".kuration_staging/pool/**/*.commit.json"))
    monkeypatch.setattr(disk_hours, "rank_pool_sql", real)
    run_job(job, tmp_path / "out", resume=True)
    run_job({**job, "pool": "memory"}, tmp_path / "ref")
    assert artifact_hash(tmp_path / "out") == artifact_hash(tmp_path / "ref")
    tele = json.loads((tmp_path / "out" / "config.json").read_text())
    score = next(
        t
        for t in tele["provenance"]["execution"]["telemetry"]
        if t["stage"] == "read+segment+features"
    )
    assert score["checkpoint_hits"] == len(small_job["sources"])  # nothing scored again
