"""Executors: one function over many payloads, results in submission order, bounded work in flight.

Three executors share one interface, :class:`Executor`:

* ``local`` -- this process.  ``max_in_flight=1`` calls the function inline;
  more runs it on one long-lived worker thread, so that producing the next
  payload (reading and windowing the next source) overlaps the function
  (scoring the previous one).
* ``process`` -- a spawn-based :class:`~concurrent.futures.ProcessPoolExecutor`
  of ``workers`` processes, created on first use and reused by every later
  call until :meth:`Executor.close` (scoring and writing share it).
* ``ray`` -- ``ray.remote`` tasks on a Ray cluster (the ``[ray]`` extra): the
  one already initialised in this process, the one at ``address``, or a private
  one of ``workers`` CPUs started here (:func:`~kuration.core.ray_cluster.start_private`:
  nothing on the machine decides where it runs) and shut down by :meth:`Executor.close`.

:meth:`Executor.iter_batches` is the ordered scheduler all three use
(:func:`iter_ordered`): it draws payloads lazily from an iterable, never holds
more than ``max_in_flight`` submitted and uncollected (the producer cannot run
ahead: backpressure), and yields ``(payload, outcome)`` in submission order, so
a caller that folds outcomes in that order is deterministic whatever the
completion order.  An exception raised by the function is the task's
*outcome* (yielded, not raised); a worker that dies raises
:class:`~kuration.errors.ExecutorError`.  A payload wrapped in :class:`Done`
(work the caller found already done, such as a reused checkpoint) is not
submitted: its outcome is yielded in its place in the order, and it holds a
slot of ``max_in_flight`` until then, so what the lead holds stays bounded.

Executors are registered like every other component (:func:`register_executor`; the three
above are built-ins, and an installed distribution adds one through the ``kuration.plugins``
entry point): an executor on another engine is one class plus its registration.  Its
engine-specific settings travel as ``executor_options`` (a mapping the class declares by
:attr:`Executor.option_names`, such as Ray's ``address``), never as keys of their own.

Functions and payloads must pickle (``ray`` uses cloudpickle); a function
must be importable at module level in the worker.  A ``process`` or ``ray`` task runs under
the lead's warning filters and its warnings are re-issued in the lead, in task order, as its
outcome is collected (:mod:`kuration.core.worker_warnings`).
"""

from __future__ import annotations

import multiprocessing as mp
import signal
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from ..errors import ExecutorError, MissingExtraError, PipelineError
from .registry import Registry
from .worker_warnings import relaying, replay

__all__ = [
    "EXECUTORS",
    "Done",
    "Executor",
    "LocalExecutor",
    "ProcessExecutor",
    "RayExecutor",
    "check_executor_options",
    "enter_worker_environment",
    "get_executor",
    "iter_ordered",
    "make_executor",
    "register_executor",
    "registered_executors",
    "resolve_executor",
    "worker_environment",
]

#: The built-in executor names (``process-pool`` is read as ``process``); every registered
#: one is :func:`registered_executors`.
EXECUTORS = ("local", "process", "ray")
_ALIASES = {"process-pool": "process"}

P = TypeVar("P")
H = TypeVar("H")


def resolve_executor(name: str | None, workers: int = 1) -> str:
    """The canonical executor name: ``name`` with aliases resolved, or the one ``workers``
    implies when ``name`` is None (``local`` for 1, ``process`` for more).

    Raises
    ------
    PipelineError
        An unknown name.
    """
    if name is None:
        return "process" if isinstance(workers, int) and workers > 1 else "local"
    if not isinstance(name, str) or _ALIASES.get(name, name) not in _EXECUTORS:
        raise PipelineError(
            f"executor must be one of {registered_executors()} (or 'process-pool'), got {name!r}",
            step="options",
        )
    return _ALIASES.get(name, name)


def worker_environment(plugins: Iterable[str], include_entry_points: bool) -> dict[str, Any]:
    """What a worker needs before it can rebuild a job's components: the plugin modules to
    import, whether to load entry-point plugins, and this process's ``sys.path`` (a spawn
    worker inherits it; a Ray worker gets it this way)."""
    return {
        "plugins": list(plugins),
        "entry_points": bool(include_entry_points),
        "sys_path": [p for p in sys.path if isinstance(p, str)],
    }


def enter_worker_environment(env: Any) -> None:
    """In a worker: append the lead's missing ``sys.path`` entries, then import its plugins
    (idempotent; a module already imported is not imported again).

    Raises
    ------
    PluginError
        A plugin module does not import in the worker.
    """
    from .plugins import load_plugins

    for entry in env.get("sys_path", ()):
        if entry not in sys.path:
            sys.path.append(entry)
    load_plugins(env.get("plugins", ()), include_entry_points=env.get("entry_points", False))


@dataclass(frozen=True)
class Done:
    """A payload whose outcome is already known: :meth:`Executor.iter_batches` yields
    ``(Done, outcome)`` in its place without submitting a task (not counted in
    :attr:`Executor.tasks` or the queue depth)."""

    outcome: Any


def batch_size_for(n_items: int, workers: int, *, per_worker: int = 4, cap: int = 16) -> int:
    """Items per task: enough tasks for ``per_worker`` rounds per worker (load balance), at
    most ``cap`` items each, so that a task's round trip (pickling, a wake-up of the lead
    on a busy machine) is paid once per batch rather than per item.  Never less than 1.
    The outcome of a run does not depend on it (results are folded per item, in order)."""
    return max(1, min(cap, n_items // max(1, workers * per_worker)))


def iter_ordered(
    items: Iterable[P],
    submit: Callable[[P], H],
    collect: Callable[[P, H], Any],
    max_in_flight: int,
    on_depth: Callable[[int], None] | None = None,
) -> Iterator[tuple[P, Any]]:
    """The ordered scheduler: submit ``items`` in order, yield ``(item, collect(item, handle))``
    in the same order, with at most ``max_in_flight`` submitted and not yet collected.

    ``items`` is drawn lazily: the next item is produced only when there is room,
    so a producer doing real work (reading the next source) runs at most
    ``max_in_flight`` ahead of the consumer.  ``on_depth`` sees the number in
    flight after each submission (telemetry: queue depth).

    Raises
    ------
    PipelineError
        ``max_in_flight`` < 1.
    """
    if isinstance(max_in_flight, bool) or not isinstance(max_in_flight, int) or max_in_flight < 1:
        raise PipelineError(f"max_in_flight must be an integer >= 1, got {max_in_flight!r}")
    pending: deque[tuple[P, H]] = deque()
    it = iter(items)
    exhausted = False
    while True:
        while not exhausted and len(pending) < max_in_flight:
            try:
                item = next(it)
            except StopIteration:
                exhausted = True
                break
            pending.append((item, submit(item)))
            if on_depth is not None:
                on_depth(len(pending))
        if not pending:
            return
        item, handle = pending.popleft()
        yield item, collect(item, handle)


class Executor:
    """The common interface (see the module docs).

    Attributes
    ----------
    name : {"local", "process", "ray"}
    workers : int
        Processes (``process``), CPUs requested (``ray``), 1 (``local``).
    max_in_flight : int
        Default bound on submitted, uncollected tasks (``2 * workers``; 2 for ``local``,
        whose second slot is the overlap).
    peak_in_flight : int
        The largest number in flight seen by any :meth:`iter_batches` so far.
    tasks : int
        Tasks submitted so far.
    nodes : dict of str to dict
        Per cluster node that ran tasks (``ray`` only; empty for the others): ``tasks``
        collected, and their summed ``cpu_s`` (the worker's ``process_time``) and
        ``wall_s`` (seconds), keyed by Ray node id.
    """

    name = "executor"
    #: the ``executor_options`` this executor takes (``make_executor`` refuses others)
    option_names: ClassVar[tuple[str, ...]] = ()
    #: the most workers it runs (None: any number)
    max_workers: ClassVar[int | None] = None

    def __init__(self, workers: int = 1, *, max_in_flight: int | None = None) -> None:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise PipelineError(f"workers must be an integer >= 1, got {workers!r}")
        self.workers = workers
        self.max_in_flight = max_in_flight or 2 * workers
        self.peak_in_flight = 0
        self.tasks = 0
        self.nodes: dict[str, dict[str, Any]] = {}

    @property
    def parallel(self) -> bool:
        """Whether tasks run outside this process (payloads and results are pickled)."""
        return False

    def describe(self) -> str:
        """``name x workers (max_in_flight=n)``, as :meth:`Pipeline.explain` prints it."""
        return f"{self.name} x{self.workers} (max_in_flight={self.max_in_flight})"

    def iter_batches(
        self,
        fn: Callable[[P], Any],
        payloads: Iterable[P],
        *,
        max_in_flight: int | None = None,
        label: Callable[[P], str] = repr,
    ) -> Iterator[tuple[P, Any]]:
        """``(payload, fn(payload) or the exception it raised)`` for each payload, in order.

        Parameters
        ----------
        fn : callable
            A module-level function (it is pickled by reference for ``process``/``ray``).
        payloads : iterable
            Drawn lazily, at most ``max_in_flight`` ahead of the consumer.
        max_in_flight : int, optional
            Default :attr:`max_in_flight`.
        label : callable
            Names a payload in an :class:`~kuration.errors.ExecutorError`.

        Raises
        ------
        ExecutorError
            A worker died (the pool is broken; not pinned on a payload's input).
        MissingExtraError
            ``ray`` without the ``[ray]`` extra.
        """
        bound = self.max_in_flight if max_in_flight is None else max_in_flight
        submit, collect = self._counted(*self._start(fn, label))
        yield from iter_ordered(payloads, submit, collect, bound)

    def _counted(
        self, submit: Callable[[Any], Any], collect: Callable[[Any, Any], Any]
    ) -> tuple[Callable[[Any], Any], Callable[[Any, Any], Any]]:
        """``submit`` and ``collect`` that pass :class:`Done` payloads through and count the
        tasks submitted and the most in flight at once (:attr:`tasks`, :attr:`peak_in_flight`)."""
        live = 0

        def sub(p: Any) -> Any:
            nonlocal live
            if isinstance(p, Done):
                return None
            live += 1
            self.tasks += 1
            self.peak_in_flight = max(self.peak_in_flight, live)
            return submit(p)

        def col(p: Any, handle: Any) -> Any:
            nonlocal live
            if isinstance(p, Done):
                return p.outcome
            try:
                return collect(p, handle)
            finally:
                live -= 1

        return sub, col

    def _start(
        self, fn: Callable[[Any], Any], label: Callable[[Any], str]
    ) -> tuple[Callable[[Any], Any], Callable[[Any, Any], Any]]:
        raise NotImplementedError

    def close(self) -> None:
        """Release the workers (idempotent)."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _future_outcome(fut: Future[Any]) -> Any:
    try:
        return fut.result()
    except Exception as exc:
        return exc


class LocalExecutor(Executor):
    """This process: inline for ``max_in_flight=1``; otherwise one long-lived worker thread."""

    name = "local"
    max_workers = 1

    def __init__(self, workers: int = 1, *, max_in_flight: int | None = None) -> None:
        if workers != 1:
            raise PipelineError("executor 'local' runs one worker", step="options")
        super().__init__(1, max_in_flight=max_in_flight or 2)
        self._thread: ThreadPoolExecutor | None = None

    def describe(self) -> str:
        return f"local (1 worker thread, max_in_flight={self.max_in_flight})"

    def iter_batches(
        self,
        fn: Callable[[P], Any],
        payloads: Iterable[P],
        *,
        max_in_flight: int | None = None,
        label: Callable[[P], str] = repr,
    ) -> Iterator[tuple[P, Any]]:
        bound = self.max_in_flight if max_in_flight is None else max_in_flight
        if bound == 1:

            def inline(p: Any) -> Any:
                try:
                    return fn(p)
                except Exception as exc:
                    return exc

            submit, collect = self._counted(inline, lambda _p, out: out)
            yield from iter_ordered(payloads, submit, collect, 1)
            return
        yield from super().iter_batches(fn, payloads, max_in_flight=bound, label=label)

    def _start(
        self, fn: Callable[[Any], Any], label: Callable[[Any], str]
    ) -> tuple[Callable[[Any], Any], Callable[[Any, Any], Any]]:
        if self._thread is None:
            self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kuration-worker")
        thread = self._thread
        return (lambda p: thread.submit(fn, p)), (lambda _p, fut: _future_outcome(fut))

    def close(self) -> None:
        if self._thread is not None:
            self._thread.shutdown(wait=True, cancel_futures=True)
            self._thread = None


class ProcessExecutor(Executor):
    """A spawn-based process pool of ``workers`` processes, reused until :meth:`close`."""

    name = "process"

    def __init__(self, workers: int = 1, *, max_in_flight: int | None = None) -> None:
        super().__init__(workers, max_in_flight=max_in_flight)
        self._pool: ProcessPoolExecutor | None = None

    @property
    def parallel(self) -> bool:
        return True

    def _start(
        self, fn: Callable[[Any], Any], label: Callable[[Any], str]
    ) -> tuple[Callable[[Any], Any], Callable[[Any, Any], Any]]:
        if self._pool is None:
            ctx = mp.get_context("spawn")
            self._pool = ProcessPoolExecutor(
                max_workers=self.workers, mp_context=ctx, initializer=_leave_ctrl_c_to_the_lead
            )
        pool, task = self._pool, relaying(fn)

        def collect(p: Any, fut: Future[Any]) -> Any:
            try:
                return replay(fut.result())
            except BrokenProcessPool as exc:
                raise ExecutorError(
                    f"the process pool broke while running {label(p)} (a worker process "
                    f"died: {exc}); rerun with workers=1 to find the input",
                    executor=self.name,
                    task=label(p),
                ) from exc
            except Exception as exc:
                return exc

        return (lambda p: pool.submit(task, p)), collect

    def close(self) -> None:
        """Stop the workers once their running tasks end; a second Ctrl-C while they do
        ends them at once (a shutdown cut short left them waiting, and the exit with them)."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        try:
            pool.shutdown(wait=True, cancel_futures=True)
        except BaseException:
            for proc in list((getattr(pool, "_processes", None) or {}).values()):
                proc.terminate()
            pool.shutdown(wait=False, cancel_futures=True)
            raise


def _leave_ctrl_c_to_the_lead() -> None:
    """A process worker ignores SIGINT: Ctrl-C reaches the whole process group, and the
    lead, which owns the run, stops it (workers finish their task and are shut down)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _ray_call(fn: Callable[[Any], Any], payload: Any) -> tuple[str, float, float, Any]:
    """Run one task on a Ray worker: ``(node id, CPU s, wall s, outcome)``; an exception
    comes back as the outcome, not a RayTaskError."""
    import ray

    cpu0, wall0 = time.process_time(), time.perf_counter()
    try:
        out = fn(payload)
    except Exception as exc:
        out = exc
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    return ray.get_runtime_context().get_node_id(), cpu, wall, out


class RayExecutor(Executor):
    """Ordered ``ray.remote`` tasks (one CPU each) collected with ``ray.wait``.

    Parameters
    ----------
    workers : int
        CPUs of a private cluster started here, and the default in-flight bound
        (``2 * workers``).
    address : str, optional
        A running cluster (``"auto"``, ``"ray://host:10001"``); None starts a private one
        (:func:`~kuration.core.ray_cluster.start_private`: no ``RAY_ADDRESS``, cluster
        file or ``~/.ray`` is read).  A process that has already called ``ray.init`` keeps
        that cluster (``address`` is not consulted) and it is not shut down by :meth:`close`.

    Each task's function and payload travel by cloudpickle; a task's exception comes
    back as its outcome (not a ``RayTaskError``); a lost worker or task raises
    :class:`~kuration.errors.ExecutorError`.  Tasks run with ``max_retries=0``, as a
    process pool does: a source that kills its worker fails the run at once, naming it.
    """

    name = "ray"
    option_names = ("address",)

    def __init__(
        self, workers: int = 1, *, max_in_flight: int | None = None, address: str | None = None
    ) -> None:
        super().__init__(workers, max_in_flight=max_in_flight)
        self.address = address
        self._owned = False
        self._private: Any = None
        self._remote: Any = None
        self._outstanding: set[Any] = set()

    @property
    def parallel(self) -> bool:
        return True

    def describe(self) -> str:
        where = self.address or "private cluster"
        return f"ray x{self.workers} ({where}, max_in_flight={self.max_in_flight})"

    def _ray(self) -> Any:
        try:
            import ray
        except ImportError as exc:
            raise MissingExtraError(
                "executor 'ray' needs Ray: pip install 'kuration-sdk[ray]'"
            ) from exc
        if not ray.is_initialized():
            from . import ray_cluster

            try:
                if self.address is None:
                    self._private = ray_cluster.start_private(self.workers)
                else:
                    ray_cluster.join(self.address)
            except Exception as exc:
                where = f"reach the Ray cluster at {self.address}" if self.address else ""
                raise ExecutorError(
                    f"cannot {where or 'start a private Ray cluster'}: {exc}",
                    executor=self.name,
                ) from exc
            self._owned = True
        if self._remote is None:
            # on a cluster the user named (maybe several nodes), spread the tasks over the
            # nodes rather than packing the first; a private cluster is one node
            spread: dict[str, Any] = {"scheduling_strategy": "SPREAD"} if self.address else {}
            self._remote = ray.remote(num_cpus=1, max_retries=0, **spread)(_ray_call)
        return ray

    def _start(
        self, fn: Callable[[Any], Any], label: Callable[[Any], str]
    ) -> tuple[Callable[[Any], Any], Callable[[Any, Any], Any]]:
        ray = self._ray()
        remote, task = self._remote, relaying(fn)

        outstanding = self._outstanding

        def submit(p: Any) -> Any:
            ref = remote.remote(task, p)
            outstanding.add(ref)
            return ref

        def collect(p: Any, ref: Any) -> Any:
            ray.wait([ref], num_returns=1)
            outstanding.discard(ref)
            try:
                out = ray.get(ref)
            except ray.exceptions.RayError as exc:
                raise ExecutorError(
                    f"a Ray task died while running {label(p)}: {exc}",
                    executor=self.name,
                    task=label(p),
                ) from exc
            node, cpu, wall, outcome = out
            self._tally(node, cpu, wall)
            return replay(outcome)

        return submit, collect

    def _tally(self, node: str, cpu_s: float, wall_s: float) -> None:
        seen = self.nodes.setdefault(node, {"tasks": 0, "cpu_s": 0.0, "wall_s": 0.0})
        seen["tasks"] += 1
        seen["cpu_s"] += cpu_s
        seen["wall_s"] += wall_s

    def close(self) -> None:
        """Cancel the tasks submitted and never collected (a run that stopped early) and wait
        for them, as a process pool's shutdown does, so none outlives the run; then shut the
        cluster down if this executor started it."""
        if self._outstanding:
            import ray

            refs = list(self._outstanding)
            for ref in refs:
                ray.cancel(ref)
            ray.wait(refs, num_returns=len(refs), timeout=60)
            self._outstanding.clear()
        if self._owned:
            import ray

            private, self._private = self._private, None
            if private is not None:
                private.stop()
            else:
                ray.shutdown()
            self._owned = False
        self._remote = None


ExecutorFactory = Callable[..., Executor]

_EXECUTORS: Registry[ExecutorFactory] = Registry("executor", builtin="executor")


def register_executor(name: str, factory: ExecutorFactory, *, clobber: bool = False) -> None:
    """Register an executor: ``factory(workers, *, max_in_flight=None, **executor_options)``
    returns an :class:`Executor` (a subclass is its own factory).  A factory's
    ``option_names`` (and ``max_workers``) are checked before a run starts.

    Raises
    ------
    RegistrationError
        ``factory`` is not callable, or ``name`` is taken and ``clobber`` is false.
    """
    from ..errors import RegistrationError

    if not callable(factory):
        raise RegistrationError(f"executor {name!r}: the factory must be callable")
    _EXECUTORS.register(name, factory, clobber=clobber)


def get_executor(name: str) -> ExecutorFactory:
    """The factory registered as ``name`` (aliases resolved; raises ``UnknownNameError``)."""
    return _EXECUTORS.get(_ALIASES.get(name, name))


def registered_executors() -> tuple[str, ...]:
    """Every executor name, built-ins included, sorted."""
    return _EXECUTORS.names()


def check_executor_options(
    name: str | None, workers: int = 1, options: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """``options`` for the executor ``name`` (None: the one ``workers`` implies) as a plain
    dict, checked against what it declares: only its ``option_names``, at most its
    ``max_workers``.

    Raises
    ------
    PipelineError
        An unknown executor, an option it does not take, or too many workers.
    """
    kind = resolve_executor(name, workers)
    factory = get_executor(kind)
    opts = dict(options or {})
    if not all(isinstance(k, str) for k in opts):
        raise PipelineError(f"executor_options keys must be strings, got {opts!r}", step="options")
    declared = getattr(factory, "option_names", None)
    extra = sorted(set(opts) - set(declared)) if declared is not None else []
    if extra:
        takes = ", ".join(map(repr, declared)) if declared else "none"
        raise PipelineError(
            f"executor {kind!r} takes no option {', '.join(map(repr, extra))} "
            f"(its executor_options: {takes})",
            step="options",
        )
    most = getattr(factory, "max_workers", None)
    if most is not None and workers > most:
        raise PipelineError(
            f"executor {kind!r} runs {'one worker' if most == 1 else f'at most {most} workers'}",
            step="options",
        )
    return opts


def make_executor(
    name: str | None,
    workers: int = 1,
    *,
    options: Mapping[str, Any] | None = None,
    address: str | None = None,
    max_in_flight: int | None = None,
) -> Executor:
    """The executor called ``name`` (aliases and None resolved by :func:`resolve_executor`),
    built by its registered factory with ``options`` (its ``executor_options``).

    ``address`` is the older spelling of ``options={"address": ...}`` for ``ray``.

    Raises
    ------
    PipelineError
        An unknown name, an option the executor does not take, too many workers.
    """
    kind = resolve_executor(name, workers)
    opts = dict(options or {})
    if address is not None:
        if kind != "ray":
            raise PipelineError(f"ray_address is for executor 'ray', not {kind!r}", step="options")
        opts["address"] = address
    opts = check_executor_options(kind, workers, opts)
    ex = get_executor(kind)(workers, max_in_flight=max_in_flight, **opts)
    if not isinstance(ex, Executor):
        raise PipelineError(
            f"executor {kind!r} built a {type(ex).__name__}, not an Executor", step="options"
        )
    return ex


register_executor("local", LocalExecutor)
register_executor("process", ProcessExecutor)
register_executor("ray", RayExecutor)
