"""Warnings issued inside ``process`` and ``ray`` tasks reach the lead, in task order, under
the lead's filters: shown, ignored or raised there exactly as a ``local`` run does."""

from __future__ import annotations

import pickle
import sys
import warnings
from collections.abc import Iterator

import pytest

from kuration.core.executors import LocalExecutor, ProcessExecutor, RayExecutor
from kuration.core.worker_warnings import relaying, replay
from kuration.errors import DataOrderWarning, SnapCollisionWarning


def warn_on_odd(x: int) -> int:
    """A task that warns twice for an odd ``x`` (once with a warning holding attributes)."""
    if x % 2:
        warnings.warn(f"item {x} out of order", DataOrderWarning, stacklevel=1)
        warnings.warn(
            SnapCollisionWarning(f"item {x} collided", source=f"s{x}", count=x), stacklevel=1
        )
    return 2 * x


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[None]:
    """A private cluster (or the pipeline tests' session one); this module's task travels by
    value, as Ray's workers cannot import a test module by the name pytest gave it."""
    import ray
    from ray import cloudpickle

    from kuration.core.ray_cluster import start_private

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    own = None if ray.is_initialized() else start_private(2)
    try:
        yield
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
        if own is not None:
            own.stop()


def _run(name: str) -> tuple[list[object], list[tuple[type, str, dict]]]:
    ex = {"local": LocalExecutor, "process": ProcessExecutor, "ray": RayExecutor}[name]
    with ex(1 if name == "local" else 2) as e, warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        outs = [out for _, out in e.iter_batches(warn_on_odd, range(5))]
    seen = [(w.category, str(w.message), dict(vars(w.message))) for w in got]
    return outs, seen


@pytest.mark.parametrize(
    "name", ["process", pytest.param("ray", marks=[pytest.mark.slow, pytest.mark.ray])]
)
def test_worker_warnings_reach_the_lead_in_task_order(name: str, request) -> None:
    if name == "ray":
        request.getfixturevalue("ray_cluster")
    want = _run("local")
    assert want[0] == [0, 2, 4, 6, 8] and len(want[1]) == 4
    assert want[1][1] == (SnapCollisionWarning, "item 1 collided", {"source": "s1", "count": 1})
    assert _run(name) == want


@pytest.mark.parametrize("name", ["local", "process"])
def test_the_leads_filters_decide_in_the_worker(name: str) -> None:
    """An ``error`` filter makes the warning the task's exception (its outcome, as inline);
    an ``ignore`` filter drops it."""
    ex = LocalExecutor() if name == "local" else ProcessExecutor(2)
    with ex, warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        warnings.simplefilter("ignore", SnapCollisionWarning)
        warnings.filterwarnings("error", message="item 3", category=DataOrderWarning)
        outs = [out for _, out in ex.iter_batches(warn_on_odd, range(5), max_in_flight=1)]
    assert outs[:3] == [0, 2, 4] and outs[4] == 8
    assert isinstance(outs[3], DataOrderWarning) and "item 3" in str(outs[3])
    assert [str(w.message) for w in got] == ["item 1 out of order"]


def test_a_warning_that_does_not_pickle_travels_as_text() -> None:
    def emit(_: object) -> None:
        local = type("Unpicklable", (Warning,), {})
        warnings.warn("made here", local, stacklevel=1)

    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        back = pickle.loads(pickle.dumps(relaying(emit)(None)))
        assert replay(back) is None
    assert [(w.category, str(w.message)) for w in got] == [(UserWarning, "Unpicklable: made here")]
