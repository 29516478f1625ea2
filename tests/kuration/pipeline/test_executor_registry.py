"""An executor on another engine is one class plus its registration.

The engine here is a thread pool, defined and registered by this test alone: nothing in
``src/`` names it, yet a real job runs on it (scoring and staging on its workers, its own
option checked and recorded) and writes the same bytes as the local executor.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from kuration import Pipeline, run_job
from kuration.core.executors import (
    _EXECUTORS,
    Executor,
    make_executor,
    register_executor,
    registered_executors,
)
from kuration.errors import JobError, PipelineError

pytestmark = pytest.mark.filterwarnings("ignore::kuration.errors.BudgetGranularityWarning")


class ThreadsExecutor(Executor):
    """Tasks on a pool of ``workers`` threads; ``prefix`` names them."""

    name = "test-threads"
    option_names = ("prefix",)

    def __init__(
        self, workers: int = 1, *, max_in_flight: int | None = None, prefix: str = "kt"
    ) -> None:
        super().__init__(workers, max_in_flight=max_in_flight)
        self.prefix = prefix
        self._pool: ThreadPoolExecutor | None = None
        self.started: list[str] = []

    @property
    def parallel(self) -> bool:  # payloads travel as they would to another process
        return True

    def _start(
        self, fn: Callable[[Any], Any], label: Callable[[Any], str]
    ) -> tuple[Callable[[Any], Any], Callable[[Any, Any], Any]]:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix=self.prefix)
        pool = self._pool

        def collect(_p: Any, fut: Future[Any]) -> Any:
            try:
                return fut.result()
            except Exception as exc:
                return exc

        return (lambda p: pool.submit(fn, p)), collect

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


@pytest.fixture
def threads() -> Iterator[str]:
    register_executor("test-threads", ThreadsExecutor)
    try:
        yield "test-threads"
    finally:
        _EXECUTORS.unregister("test-threads")


def test_a_registered_executor_is_made_by_name_with_its_own_options(threads: str) -> None:
    assert threads in registered_executors()
    ex = make_executor(threads, 3, options={"prefix": "x"})
    assert isinstance(ex, ThreadsExecutor) and ex.workers == 3 and ex.prefix == "x"
    out = [o for _, o in ex.iter_batches(abs, [-3, 1, -2])]
    ex.close()
    assert out == [3, 1, 2]
    with pytest.raises(PipelineError, match="takes no option 'address'"):
        make_executor(threads, 2, options={"address": "auto"})
    with pytest.raises(PipelineError, match="takes no option 'prefix'"):
        make_executor("process", 2, options={"prefix": "x"})


def test_a_real_job_on_the_registered_executor_writes_the_local_bytes(
    threads: str, small_job: dict, tmp_path: Path, digests
) -> None:
    run_job(small_job, tmp_path / "local")
    job = {**small_job, "executor": threads, "workers": 2, "executor_options": {"prefix": "kt"}}
    plan = Pipeline.from_job(job).explain()
    assert any(s.executor.startswith("test-threads x2 (prefix=kt)") for s in plan.stages)
    res = run_job(job, tmp_path / "threads")
    assert digests(tmp_path / "threads") == digests(tmp_path / "local")
    execution = res.config["provenance"]["execution"]
    tel = {t["stage"]: t for t in execution["telemetry"]}
    assert tel["read+segment+features"]["executor"] == threads
    assert execution["plan"]["options"]["executor_options"] == {"prefix": "kt"}
    with pytest.raises(JobError, match="takes no option 'color'"):
        Pipeline.from_job({**job, "executor_options": {"color": "red"}})


def test_ray_address_is_the_older_spelling_of_an_executor_option() -> None:
    from kuration.pipeline.spec.logical import PipelineOptions

    old = PipelineOptions(workers=2, executor="ray", ray_address="ray://h:1")
    new = PipelineOptions(workers=2, executor="ray", executor_options={"address": "ray://h:1"})
    assert old == new and old.to_dict()["executor_options"] == {"address": "ray://h:1"}
    old_config = {"workers": 2, "executor": "ray", "ray_address": "ray://h:1"}
    assert PipelineOptions.from_dict(old_config) == new
    moved = Pipeline().options(executor="ray", ray_address="auto").options(executor="process")
    assert moved.opts.executor_options == {}  # Ray's address left with Ray
