"""The logical parts of a Pipeline that planning and execution read: selections, options, seam uses.

Frozen, and round-tripping through ``to_dict``/``from_dict`` (options leave
the progress callback out: only whether one is set is recorded).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...core.config import BudgetModel, check_memory_budget, validate_config
from ...core.executors import check_executor_options, resolve_executor
from ...core.progress import ProgressCallback
from ...errors import JobError, PipelineError

__all__ = ["CountSelection", "HoursSelection", "PipelineOptions", "SeamUse"]


@dataclass(frozen=True)
class SeamUse:
    """One use of a registered component (transform, scorer or analyzer) with its parameters."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "params": dict(self.params)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SeamUse:
        return cls(str(d["name"]), dict(d.get("params", {})))


@dataclass(frozen=True)
class CountSelection:
    """Keep the ``n`` best segments (the count path, :func:`kuration.curate`); equal
    priorities in canonical order (``tie_break="name"``) or by a seeded draw (``"seed"``)."""

    n: int
    tie_break: str = "name"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"mode": "count", "n": self.n}
        if self.tie_break != "name":  # left out at the default: recorded bytes kept
            d["tie_break"] = self.tie_break
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CountSelection:
        return cls(int(d["n"]), str(d.get("tie_break", "name")))


#: The budget-unit options of :class:`HoursSelection` and their defaults (issue 29).
UNIT_DEFAULTS: dict[str, Any] = {
    "min_span_seconds": 0.0,
    "budget_time": "span",
    "tie_break": "name",
    "split": None,
    "merge_adjacent_spans": False,
    "filter_scope": "window",
}


@dataclass(frozen=True)
class HoursSelection:
    """Fill train/test hour budgets with whole tracks (the hours path,
    :func:`kuration.write_dataset`; the fields are its options of the same name).

    Attributes
    ----------
    train_hours, test_hours : float
        Budgets in hours of track time per split.
    clip_aggregate : {"max", "mean", "min"}
        How a track's (or span's) overlapping segment priorities and features
        aggregate: max for inclusion strategies, mean/min for avoidance.
    min_track_seconds : float
        Tracks shorter than this never enter the pool (counted in the budget block).
    span_steps, span_seconds : int or float, optional
        Subdivide each track into independently budgeted spans of this length.
    group_of : mapping of str to str, optional
        Source id to group label (``write_dataset`` also passes a callable
        through): stratifies the split and feeds the group cap.
    max_group_overshoot : float, optional
        Group cap: a group's admitted time never exceeds this times
        ``budget / n_groups`` (per split).
    tag_coverage : bool
        Admit each segment tag's highest-priority track first ...
    min_tag_frac : float
        ... while that reserve stays within this fraction of the budget.
    allow_empty_split : bool
        Accept a split with a non-zero request that plans no shard (otherwise
        :class:`~kuration.errors.EmptySplitError`).  A non-empty under-filled
        split is never an error: its budget block names the binding constraint
        (``binding``, ``binding_detail``) and ``config["warnings"]`` repeats it.
    sample_hz : float, optional
        When set, must equal the schema's (no resampling).
    min_span_seconds : float
        Spans (or whole tracks) shorter than this are no candidates: their extent, or
        under ``budget_time="present"`` their present seconds.
    budget_time : {"span", "present"}
        Budgets count a candidate's whole span, or only its entity's present ticks.
    tie_break : {"name", "seed"}
        Equal priorities are ordered by source, entity and span, or by a seeded draw.
    merge_adjacent_spans : bool
        Write touching admitted spans of one track as one track (the first span's id).
    filter_scope : {"window", "span"}
        ``span``: a candidate overlapping any window of priority ``-inf`` is excluded.
    split : mapping, optional
        A pinned or time-based split rule (:mod:`kuration.pipeline.spec.split_rules`), checked.
    """

    train_hours: float
    test_hours: float = 0.0
    clip_aggregate: str = "max"
    min_track_seconds: float = 0.0
    span_steps: int | None = None
    span_seconds: float | None = None
    group_of: Mapping[str, str] | None = None
    max_group_overshoot: float | None = None
    tag_coverage: bool = False
    min_tag_frac: float = 0.1
    allow_empty_split: bool = False
    sample_hz: float | None = None
    min_span_seconds: float = 0.0
    budget_time: str = "span"
    tie_break: str = "name"
    split: Mapping[str, Any] | None = None
    merge_adjacent_spans: bool = False
    filter_scope: str = "window"

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["group_of"] = dict(self.group_of) if isinstance(self.group_of, Mapping) else None
        d["split"] = dict(self.split) if isinstance(self.split, Mapping) else None
        for k, v in UNIT_DEFAULTS.items():  # left out at their defaults: recorded bytes kept
            if d[k] == v:
                del d[k]
        return {"mode": "hours", **d}

    def budget(self) -> dict[str, float]:
        """The two budgets as the run record and ``config.json`` hold them (hours)."""
        return {"train_hours": float(self.train_hours), "test_hours": float(self.test_hours)}

    def unit_options(self) -> dict[str, Any]:
        """The budget-unit options that differ from their defaults (for plans and records)."""
        return {k: getattr(self, k) for k, v in UNIT_DEFAULTS.items() if getattr(self, k) != v}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> HoursSelection:
        return cls(**{k: v for k, v in d.items() if k != "mode"})

    @classmethod
    def from_budget(cls, budget: BudgetModel, **options: Any) -> HoursSelection:
        """The selection of a validated ``budget`` (the job's, or :meth:`checked`'s) with the
        other ``options``; the hours are not checked again."""
        return cls(float(budget.train_hours), float(budget.test_hours), **options)

    @classmethod
    def checked(
        cls, hours: Any, test_hours: Any, *, what: str = "sample", **options: Any
    ) -> HoursSelection:
        """``Pipeline.sample``'s selection: the hours checked by the job file's own
        :class:`~kuration.core.config.BudgetModel` (finite, >= 0, a positive sum), the one
        check they get on either path.

        ``what`` names the caller in the message.

        Raises
        ------
        PipelineError
            Hours that are not finite numbers >= 0, or that sum to zero.
        """
        doc = {"train_hours": hours, "test_hours": test_hours}
        try:
            budget = validate_config(BudgetModel, doc, kind="job", what=what)
        except JobError as exc:  # the model's lines, without the job file's framing
            lines = [p.removeprefix("(top level): ") for p in exc.problems]
            raise PipelineError("; ".join(lines), step=what) from None
        return cls.from_budget(budget, **options)

    @classmethod
    def option_names(cls) -> set[str]:
        """The fields :meth:`checked` takes as ``options`` (all but the two budgets)."""
        return {f.name for f in dataclasses.fields(cls)} - {"train_hours", "test_hours"}

    def sample_args(self) -> dict[str, Any]:
        """Keyword arguments of ``Pipeline.sample`` that rebuild this selection."""
        d = self.to_dict()
        del d["mode"]
        return {"hours": d.pop("train_hours"), **d}

    def write_options(self) -> dict[str, Any]:
        """Keyword arguments of ``preflight`` (all but the hours, checked when the selection
        was built, ``group_of``, ``tag_coverage``, ``min_track_seconds`` and
        ``allow_empty_split``, which it does not take)."""
        return {
            "sample_hz": self.sample_hz,
            "clip_aggregate": self.clip_aggregate,
            "span_steps": self.span_steps,
            "span_seconds": self.span_seconds,
            "max_group_overshoot": self.max_group_overshoot,
            "min_tag_frac": self.min_tag_frac,
        }


@dataclass(frozen=True)
class PipelineOptions:
    """Execution options: ``progress`` callback, ``workers``, ``executor``, ``executor_options``,
    ``seed``, ``on_error`` (``skip``/``raise``) and ``durable`` (fsync before publishing);
    ``streaming`` (read sources lazily in two passes, :mod:`kuration.pipeline.stream.passes`),
    ``memory_budget`` (bytes, or text such as ``"2GB"``: a plan whose estimated peak
    exceeds it fails before reading, :mod:`kuration.pipeline.spec.budget`),
    ``stream_batch_rows`` (rows decoded per batch when streaming), ``pool``
    (``memory``, or ``disk`` for the disk-backed pool runtime of
    :mod:`kuration.pipeline.disk.pool`; None, the default, lets the planner choose: the disk
    runtime for an eligible plan whose estimated peak exceeds ``memory_budget`` or, without
    one, the default budget of :func:`kuration.pipeline.spec.budget.default_memory_budget`) and ``checkpoint_dir`` (where that runtime
    keeps its checkpoints; None: a temporary directory, or for an hours run the
    destination's staging area, kept for ``resume`` until the commit).

    ``executor`` is ``local`` (this process, one worker), ``process`` (a spawn-based
    pool of ``workers`` processes; ``process-pool`` is read as ``process``) or
    ``ray`` (Ray tasks on ``workers`` CPUs of a private local cluster, or of the cluster at
    ``executor_options={"address": ...}``), or any executor registered with
    :func:`kuration.core.executors.register_executor`; None derives it from ``workers``
    (``local`` for 1, ``process`` for more).  ``executor_options`` are the chosen
    executor's own settings, checked against the ones it declares.  ``ray_address`` is the
    older spelling of Ray's ``address`` option and is folded into ``executor_options``.
    The artifact is byte-identical for every executor and worker count.
    """

    progress: ProgressCallback | None = None
    workers: int = 1
    executor: str | None = None
    seed: int = 0
    on_error: str = "skip"
    durable: bool = True
    streaming: bool = False
    memory_budget: int | str | None = None
    stream_batch_rows: int = 16_384
    ray_address: str | None = None
    pool: str | None = None
    checkpoint_dir: str | None = None
    executor_options: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        w = self.workers
        if isinstance(w, bool) or not isinstance(w, int) or w < 1:
            raise PipelineError(f"workers must be an integer >= 1, got {w!r}", step="options")
        if self.executor is not None:
            # the canonical name ("process-pool" from an older config reads as "process")
            object.__setattr__(self, "executor", resolve_executor(self.executor, w))
        if self.executor_options is not None and not isinstance(self.executor_options, Mapping):
            raise PipelineError(
                f"executor_options must be a mapping, got {self.executor_options!r}",
                step="options",
            )
        opts = dict(self.executor_options or {})
        if self.ray_address is not None:  # the older spelling of Ray's address option
            if self.resolved_executor != "ray" or not isinstance(self.ray_address, str):
                raise PipelineError(
                    f"ray_address (a string) is for executor 'ray', got {self.ray_address!r} "
                    f"with executor {self.resolved_executor!r}",
                    step="options",
                )
            if opts.get("address", self.ray_address) != self.ray_address:
                raise PipelineError(
                    "ray_address and executor_options['address'] disagree", step="options"
                )
            opts["address"] = self.ray_address
            object.__setattr__(self, "ray_address", None)
        opts = check_executor_options(self.executor, w, opts)
        object.__setattr__(self, "executor_options", dict(sorted(opts.items())))
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise PipelineError(f"seed must be an integer, got {self.seed!r}", step="options")
        if self.on_error not in ("skip", "raise"):
            raise PipelineError(f"on_error must be skip or raise, not {self.on_error!r}")
        if self.progress is not None and not callable(self.progress):
            raise PipelineError("progress must be callable(event: dict)", step="options")
        if not isinstance(self.streaming, bool):
            raise PipelineError(f"streaming must be True or False, got {self.streaming!r}")
        if self.memory_budget is not None:
            try:
                budget = check_memory_budget(self.memory_budget)
            except JobError as exc:
                raise PipelineError(str(exc), step="options") from None
            object.__setattr__(self, "memory_budget", budget)
        b = self.stream_batch_rows
        if isinstance(b, bool) or not isinstance(b, int) or b < 1:
            raise PipelineError(f"stream_batch_rows must be an integer >= 1, got {b!r}")
        if self.pool not in (None, "memory", "disk"):
            raise PipelineError(
                f"pool must be 'memory' or 'disk' (or None: chosen by the budget), "
                f"got {self.pool!r}",
                step="options",
            )

    @property
    def resolved_executor(self) -> str:
        return resolve_executor(self.executor, self.workers)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (the callback is not serializable: only whether one is set;
        ``executor_options`` only when some are set)."""
        d: dict[str, Any] = {
            "workers": self.workers,
            "executor": self.resolved_executor,
            "seed": self.seed,
            "on_error": self.on_error,
            "durable": self.durable,
            "progress": self.progress is not None,
            **({"streaming": True} if self.streaming else {}),
            **({"memory_budget": self.memory_budget} if self.memory_budget is not None else {}),
            # the default pool leaves the recorded options as they were before it existed
            **(
                {"pool": self.pool, "checkpoint_dir": self.checkpoint_dir}
                if self.pool not in (None, "memory")
                else {}
            ),
        }
        if self.executor_options:
            d["executor_options"] = dict(self.executor_options)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PipelineOptions:
        """Inverse of :meth:`to_dict`, without a callback (an executor that equals the one
        ``workers`` implies reads back as None, as it was before ``to_dict`` resolved it;
        ``process-pool``, the older name, reads as ``process``).

        Raises
        ------
        PipelineError
            Invalid values.
        """
        keys = (
            "workers",
            "executor",
            "seed",
            "on_error",
            "durable",
            "streaming",
            "memory_budget",
            "ray_address",
            "pool",
            "checkpoint_dir",
            "executor_options",
        )
        kw = {k: d[k] for k in keys if k in d}
        workers = kw.get("workers", 1)
        if kw.get("executor") is not None:
            kw["executor"] = resolve_executor(kw["executor"], workers)
        if kw.get("executor") == resolve_executor(None, workers):
            kw["executor"] = None
        return cls(**kw)
