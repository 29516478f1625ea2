"""The ordered scheduler and the executors: submission order kept, in-flight work bounded,
task exceptions returned as outcomes, a dead worker raised (a real thread, a real spawn pool)."""

from __future__ import annotations

import math
import os
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kuration.core.executors import (
    Done,
    LocalExecutor,
    ProcessExecutor,
    RayExecutor,
    iter_ordered,
    make_executor,
    resolve_executor,
)
from kuration.errors import ExecutorError, PipelineError


@given(n=st.integers(0, 60), bound=st.integers(1, 8))
def test_iter_ordered_yields_in_order_and_never_runs_ahead(n, bound) -> None:
    """What comes out is submission order, at most ``bound`` items are submitted and not
    collected, and the (lazy) producer is never more than ``bound`` ahead of the consumer."""
    produced: list[int] = []
    in_flight: set[int] = set()
    depths: list[int] = []

    def items():
        for i in range(n):
            produced.append(i)
            yield i

    def submit(i: int) -> int:
        in_flight.add(i)
        return i * i

    def collect(i: int, handle: int) -> int:
        assert i == min(in_flight) and len(in_flight) <= bound
        in_flight.discard(i)
        return handle + 1

    got = []
    for i, out in iter_ordered(items(), submit, collect, bound, depths.append):
        assert len(produced) - len(got) <= bound  # backpressure on the producer
        got.append((i, out))
    assert got == [(i, i * i + 1) for i in range(n)]
    assert all(1 <= d <= bound for d in depths) and len(depths) == n


def test_iter_ordered_rejects_a_bad_bound() -> None:
    with pytest.raises(PipelineError, match="max_in_flight"):
        list(iter_ordered([1], lambda i: i, lambda i, h: h, 0))


def test_names_aliases_and_bad_combinations() -> None:
    assert resolve_executor(None, 1) == "local" and resolve_executor(None, 3) == "process"
    assert resolve_executor("process-pool") == "process"
    with pytest.raises(PipelineError, match="executor must be one of"):
        resolve_executor("dask")
    with pytest.raises(PipelineError, match="one worker"):
        make_executor("local", 2)
    with pytest.raises(PipelineError, match="ray_address"):
        make_executor("process", 2, address="auto")
    ex = make_executor("ray", 2, address="ray://nowhere:1")
    assert isinstance(ex, RayExecutor) and ex.describe().startswith("ray x2 (ray://nowhere:1")
    assert isinstance(make_executor(None, 2), ProcessExecutor)


def _boom_on_three(x: int) -> int:
    if x == 3:
        raise ValueError(f"three ({x})")
    return x * 10


def test_local_executor_overlaps_the_producer_with_one_long_lived_thread() -> None:
    threads: set[str] = set()
    produced: list[int] = []

    def fn(x: int) -> int:
        threads.add(threading.current_thread().name)
        return _boom_on_three(x)

    def items():
        for i in range(8):
            produced.append(i)
            yield i

    with LocalExecutor() as ex:
        outs = []
        for _, out in ex.iter_batches(fn, items()):
            assert len(produced) - len(outs) <= 2
            outs.append(out)
        assert ex.peak_in_flight == 2 and ex.tasks == 8
    assert len(threads) == 1 and threads.pop().startswith("kuration-worker")
    assert [o for o in outs if not isinstance(o, Exception)] == [0, 10, 20, 40, 50, 60, 70]
    assert isinstance(outs[3], ValueError) and "three" in str(outs[3])
    # max_in_flight=1 calls inline, in this thread
    inline = LocalExecutor().iter_batches(
        lambda x: threading.current_thread().name, [1], max_in_flight=1
    )
    assert [out for _, out in inline] == [threading.current_thread().name]


def test_done_payloads_pass_through_in_order_without_a_task() -> None:
    """A Done payload is yielded in its place with its outcome, never submitted (not a task,
    not in the queue depth), and holds a slot of max_in_flight until it is yielded."""
    produced: list[object] = []

    def items():
        for p in [1, Done("a"), Done("b"), 2, Done("c"), 3]:
            produced.append(p)
            yield p

    calls: list[int] = []

    def fn(x: int) -> int:
        calls.append(x)
        return x * 10

    with LocalExecutor() as ex:
        got = []
        for _p, out in ex.iter_batches(fn, items(), max_in_flight=2):
            assert len(produced) - len(got) <= 2  # a Done takes a slot: the lead holds 2
            got.append(out)
        assert ex.tasks == 3 and ex.peak_in_flight <= 2
    assert got == [10, "a", "b", 20, "c", 30] and calls == [1, 2, 3]
    inline = LocalExecutor()
    assert [o for _, o in inline.iter_batches(fn, [Done("x"), 4], max_in_flight=1)] == ["x", 40]
    assert inline.tasks == 1 and inline.peak_in_flight == 1
    with ProcessExecutor(1) as ex:
        outs = [o for _, o in ex.iter_batches(math.sqrt, [Done(-1.0), 4.0, Done(None)])]
        assert outs == [-1.0, 2.0, None] and ex.tasks == 1


def test_process_executor_keeps_order_and_returns_task_errors() -> None:
    with ProcessExecutor(2, max_in_flight=3) as ex:
        outs = [out for _, out in ex.iter_batches(math.sqrt, [4.0, -1.0, 9.0, 16.0, 25.0])]
        assert ex.peak_in_flight <= 3
    assert outs[0] == 2.0 and outs[2:] == [3.0, 4.0, 5.0]
    assert isinstance(outs[1], ValueError)


def test_a_dead_worker_process_is_an_executor_error() -> None:
    with ProcessExecutor(1) as ex, pytest.raises(ExecutorError, match="task-seven") as info:
        list(ex.iter_batches(os._exit, [7], label=lambda p: "task-seven"))
    assert info.value.executor == "process" and info.value.task == "task-seven"


def test_process_workers_leave_ctrl_c_to_the_lead() -> None:
    """Ctrl-C reaches the whole process group; the workers ignore it, so the lead alone
    decides how the run stops (the workers finish their task and are shut down)."""
    import signal

    with ProcessExecutor(1) as ex:
        ((_, got),) = list(ex.iter_batches(signal.getsignal, [signal.SIGINT]))
    assert got == signal.SIG_IGN


def _all_ended(procs: list, *, within: float) -> bool:
    """True once every process has exited.  The pool's manager thread reaps the
    terminated workers too, so one ``join`` here can lose the ``waitpid`` race (ECHILD)
    and report a reaped worker as alive for a moment; poll until both agree."""
    import time

    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        for p in procs:
            p.join(timeout=0.1)
        if not any(p.is_alive() and os.path.exists(f"/proc/{p.pid}") for p in procs):
            return True
        time.sleep(0.05)
    return False


def test_a_shutdown_cut_short_by_a_second_ctrl_c_ends_the_workers(monkeypatch) -> None:
    """A KeyboardInterrupt while the pool shuts down (a second Ctrl-C) ends the worker
    processes at once instead of leaving them, and the interpreter's exit, waiting."""
    from concurrent.futures import ProcessPoolExecutor

    ex = ProcessExecutor(2)
    assert [o for _, o in ex.iter_batches(math.sqrt, [4.0, 9.0])] == [2.0, 3.0]
    procs = list(ex._pool._processes.values())
    real = ProcessPoolExecutor.shutdown
    calls = []

    def cut_short(self, wait=True, *, cancel_futures=False):
        calls.append(wait)
        if wait:
            raise KeyboardInterrupt
        return real(self, wait=wait, cancel_futures=cancel_futures)

    monkeypatch.setattr(ProcessPoolExecutor, "shutdown", cut_short)
    with pytest.raises(KeyboardInterrupt):
        ex.close()
    assert calls == [True, False] and _all_ended(procs, within=30.0)
    monkeypatch.setattr(ProcessPoolExecutor, "shutdown", real)
