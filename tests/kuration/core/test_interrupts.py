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


# One SIGINT during a DuckDB query, in a child process (pytest would stop on a stray one),
# sent only once DuckDB reports the query running (query_progress() >= 0); the query would
# run for hours, so only the signal ends it.  DuckDB looks for signals between the tasks its
# calling thread runs; with worker threads that thread may only wait for them, and under
# load 6 of 18 runs never saw the signal (nor 30 more, one a second), so the query runs on
# one thread.  Python's handler raises the KeyboardInterrupt DuckDB turns into its error
# only while the query runs (none can follow it); the verdict is the last stdout line, JSON.
_ENDLESS = "SELECT count(*) FROM range(10000000000000) t(x) WHERE x % 7 = 3"
_DUCK_CHILD = f"""
import json, os, signal, sys, threading, time, duckdb
from kuration.core.interrupts import is_interrupt
con = duckdb.connect()
con.execute("SET threads = 1")
con.execute("SET enable_progress_bar = true")
con.execute("SET enable_progress_bar_print = false")
stopped = threading.Event()
def ctrl_c(signum, frame):
    if not stopped.is_set():
        raise KeyboardInterrupt
signal.signal(signal.SIGINT, ctrl_c)
def ctrl_c_once_running():
    while con.query_progress() < 0:
        time.sleep(0.005)
    print("query running; SIGINT", flush=True)
    os.kill(os.getpid(), signal.SIGINT)
    if not stopped.wait(60):
        print(json.dumps({{"kind": "still running 60 s after the SIGINT"}}), flush=True)
        os._exit(3)
threading.Thread(target=ctrl_c_once_running, daemon=True).start()
caught = None
try:
    try:
        con.execute("{_ENDLESS}").fetchall()
    except BaseException as exc:
        stopped.set()
        caught = exc
except KeyboardInterrupt as pending:
    caught = caught or pending.__context__ or pending
stopped.set()
kind = type(caught).__name__ if caught is not None else "finished"
print(json.dumps({{"kind": kind, "interrupt": caught is not None and is_interrupt(caught)}}))
"""


def _duckdb_child_verdict() -> dict:
    """Run ``_DUCK_CHILD``; its verdict, or a failure showing everything it printed."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", _DUCK_CHILD], capture_output=True, text=True, timeout=120
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the child hung; stdout:\n{exc.stdout}\nstderr:\n{exc.stderr}")
    shown = f"exit {done.returncode}; stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    lines = done.stdout.strip().splitlines()
    try:
        verdict = json.loads(lines[-1])
    except (IndexError, ValueError):
        pytest.fail(f"the child gave no verdict; {shown}")
    assert done.returncode == 0 and lines[0] == "query running; SIGINT", shown
    return {**verdict, "shown": shown}


def _interrupted_query(con) -> None:
    """A query on ``con`` that would run for hours, stopped by ``con.interrupt()`` from
    another thread once DuckDB reports it running (DuckDB raises its InterruptException)."""
    import threading
    import time

    con.execute("SET enable_progress_bar = true")
    con.execute("SET enable_progress_bar_print = false")
    stop = threading.Event()

    def interrupt_once_running() -> None:
        while con.query_progress() < 0 and not stop.is_set():
            time.sleep(0.005)
        while not stop.wait(0.1):  # the first lands; more would only repeat it
            con.interrupt()

    t = threading.Thread(target=interrupt_once_running)
    t.start()
    try:
        con.execute(_ENDLESS).fetchall()
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

    got = _duckdb_child_verdict()
    assert got["kind"] in {"RuntimeError", "KeyboardInterrupt"} and got["interrupt"], got["shown"]

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
