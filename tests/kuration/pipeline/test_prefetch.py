"""Prefetch: reads ahead on one thread, in order, bounded, errors where they are asked for."""

from __future__ import annotations

import threading

import pytest

from kuration.pipeline.prefetch import Prefetch


def test_results_in_order_and_bounded() -> None:
    started: list[int] = []
    gate = threading.Event()

    def read(i: int) -> int:
        started.append(i)
        if i == 0:
            gate.wait(5)
        return i * 10

    plan = [(f"s{i}", (i,)) for i in range(6)]
    with Prefetch(read, plan, depth=2) as pre:
        assert "s0" in pre and "s1" in pre and "s2" not in pre  # two in flight, no more
        gate.set()
        got = [pre.get(f"s{i}") for i in range(6)]
    assert got == [0, 10, 20, 30, 40, 50]
    assert started == list(range(6))  # one thread: read in plan order


def test_a_read_error_is_raised_where_it_is_asked_for() -> None:
    def read(i: int) -> int:
        if i == 1:
            raise OSError(f"cannot read {i}")
        return i

    with Prefetch(read, [("a", (0,)), ("b", (1,)), ("c", (2,))]) as pre:
        assert pre.get("a") == 0
        with pytest.raises(OSError, match="cannot read 1"):
            pre.get("b")
        assert pre.get("c") == 2


def test_leaving_early_cancels_the_rest() -> None:
    calls: list[int] = []

    def read(i: int) -> int:
        calls.append(i)
        return i

    with pytest.raises(RuntimeError), Prefetch(read, [(i, (i,)) for i in range(50)]) as pre:
        pre.get(0)
        raise RuntimeError("the writer failed")
    assert len(calls) <= 3  # the reads in flight at most, never the whole plan
    with pytest.raises(KeyError), Prefetch(read, [("x", (1,))]) as pre:
        pre.get("y")  # a key that was not planned
    with Prefetch(read, []) as pre:
        assert "x" not in pre
