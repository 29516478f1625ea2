"""The physical plan: what :meth:`kuration.Pipeline.explain` compiles before any row is read.

A :class:`PhysicalPlan` is data -- frozen dataclasses that round-trip
through :meth:`~PhysicalPlan.to_dict` / :meth:`~PhysicalPlan.from_dict` and
print as a tree (:meth:`~PhysicalPlan.tree`), in the manner of Polars'
``LazyFrame.explain()`` and DataFusion's ``ExecutionPlan``.  It lists the
stages in pipeline order::

    read -> segment -> features -> transforms -> scorers -> bin
         -> select (count) | fill (hours) -> tracks -> write [-> enrich]

each with its components (the metrics, filters, method, analyzers ...) and
their :class:`~kuration.core.traits.ExecutionTraits`.  Consecutive stages
whose components are all ``fusible`` form one pipeline-parallel *island*;
a stage with a ``pool``/``artifact`` scope, several passes or an explicit
``barrier`` component is a *barrier* and materializes its input.  Every
stage names the runtime that executes it; today that is the reference
in-memory runtime for all of them, and the plan carries one warning per
such stage so the gap is visible, not silent.

:class:`StageTelemetry` is the one definition of per-stage execution
measurements (wall time, rows in and out, partitions, bytes, checkpoint
hits and misses, queue depth).
"""

from __future__ import annotations

import dataclasses
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...core.traits import ExecutionTraits

__all__ = [
    "REFERENCE_RUNTIME",
    "STAGE_ORDER",
    "STREAM_RUNTIME",
    "TELEMETRY_STAGES",
    "PhysicalPlan",
    "PlanComponent",
    "PlanStage",
    "StageTelemetry",
    "fuse_stages",
    "plan_mismatches",
]

#: The stage kinds in pipeline order.
STAGE_ORDER = (
    "read",
    "segment",
    "features",
    "transforms",
    "scorers",
    "bin",
    "select",
    "fill",
    "tracks",
    "write",
    "enrich",
)
#: The runtime every stage runs on today: the whole scored pool in memory.
REFERENCE_RUNTIME = "reference-in-memory"
#: The runtime of ``streaming=True``: sources read lazily in two passes (``pipeline/stream``).
STREAM_RUNTIME = "stream (two lazy passes)"


@dataclass(frozen=True)
class PlanComponent:
    """One registered component inside a stage.

    Attributes
    ----------
    kind : str
        The registry it comes from (``metric``, ``filter``, ``method``, ...).
    name : str
    params : dict
        Its resolved, JSON-ready parameters (a metric's expression, a method's params).
    traits : ExecutionTraits
    declared : bool
        False when ``traits`` are the kind's default (nothing was declared).
    """

    kind: str
    name: str
    params: Mapping[str, Any] = field(default_factory=dict)
    traits: ExecutionTraits = field(default_factory=ExecutionTraits)
    declared: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "params": dict(self.params),
            "traits": self.traits.to_dict(),
            "declared": self.declared,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PlanComponent:
        return cls(
            kind=d["kind"],
            name=d["name"],
            params=dict(d.get("params", {})),
            traits=ExecutionTraits.from_dict(d["traits"]),
            declared=bool(d.get("declared", True)),
        )


@dataclass(frozen=True)
class PlanStage:
    """One physical stage.

    Attributes
    ----------
    kind : str
        One of :data:`STAGE_ORDER`.
    traits : ExecutionTraits
        The stage's own traits (how the driver runs it), combined with its
        components' to decide fusion.
    components : tuple of PlanComponent
    island : int or None
        Index of the fused island the stage belongs to; None for a barrier
        or an empty stage.
    barrier : str or None
        Why the stage is a barrier (``"pool scope"``, ``"2 passes"``, ...).
    runtime : str
        Which runtime executes it.
    detail : dict
        Stage-specific resolved settings (window, budgets, destination ...).
    executor : str
        Where its batches run: ``driver`` (the lead process, whole-pool work), or
        the run's executor (``local``, ``process xN``, ``ray xN``) for the fused
        read/segment/features island and the shard writing.
    """

    kind: str
    traits: ExecutionTraits
    components: tuple[PlanComponent, ...] = ()
    island: int | None = None
    barrier: str | None = None
    runtime: str = REFERENCE_RUNTIME
    detail: Mapping[str, Any] = field(default_factory=dict)
    empty: bool = False
    executor: str = "driver"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "traits": self.traits.to_dict(),
            "components": [c.to_dict() for c in self.components],
            "island": self.island,
            "barrier": self.barrier,
            "runtime": self.runtime,
            "detail": dict(self.detail),
            "empty": self.empty,
            "executor": self.executor,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PlanStage:
        return cls(
            kind=d["kind"],
            traits=ExecutionTraits.from_dict(d["traits"]),
            components=tuple(PlanComponent.from_dict(c) for c in d.get("components", ())),
            island=d.get("island"),
            barrier=d.get("barrier"),
            runtime=d.get("runtime", REFERENCE_RUNTIME),
            detail=dict(d.get("detail", {})),
            empty=bool(d.get("empty", False)),
            executor=str(d.get("executor", "driver")),
        )


def _barrier_reason(stage: PlanStage) -> str | None:
    """Why ``stage`` cannot join a fused island, or None when it can."""
    for who, t in [
        ("stage", stage.traits),
        *((f"{c.kind} {c.name!r}", c.traits) for c in stage.components),
    ]:
        if t.scope in ("pool", "artifact"):
            return f"{who}: {t.scope} scope"
        if t.passes > 1:
            return f"{who}: {t.passes} passes"
        if t.fusion != "fusible":
            return f"{who}: declared non-fusible"
    return None


def fuse_stages(stages: Sequence[PlanStage]) -> tuple[PlanStage, ...]:
    """Assign islands and barriers: runs of fusible stages share an island id.

    An empty stage (a seam with no component) neither joins nor breaks an island.
    """
    out: list[PlanStage] = []
    island = -1
    open_island = False
    for st in stages:
        if st.empty:
            out.append(_replace(st, island=None, barrier=None))
            continue
        why = _barrier_reason(st)
        if why is not None:
            open_island = False
            out.append(_replace(st, island=None, barrier=why))
            continue
        if not open_island:
            island += 1
            open_island = True
        out.append(_replace(st, island=island, barrier=None))
    return tuple(out)


def _replace(st: PlanStage, **kw: Any) -> PlanStage:
    return dataclasses.replace(st, **kw)


@dataclass(frozen=True)
class PhysicalPlan:
    """The compiled plan of one :class:`~kuration.Pipeline` (see the module docs).

    Attributes
    ----------
    mode : {"count", "hours"}
        Select ``n`` segments, or fill hour budgets with tracks.
    stages : tuple of PlanStage
    warnings : tuple of str
        One per stage that runs on the reference in-memory runtime, plus any
        seam or component the planner could not place.
    options : dict
        Execution options (workers, executor, seed, on_error).
    notes : tuple of str
        Decisions the planner took and why (the runtime it chose for the pool).
    """

    mode: str
    stages: tuple[PlanStage, ...]
    warnings: tuple[str, ...] = ()
    options: Mapping[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def islands(self) -> tuple[tuple[str, ...], ...]:
        """The stage kinds of each fused island, in order."""
        groups: dict[int, list[str]] = {}
        for st in self.stages:
            if st.island is not None:
                groups.setdefault(st.island, []).append(st.kind)
        return tuple(tuple(groups[i]) for i in sorted(groups))

    @property
    def barriers(self) -> tuple[str, ...]:
        """The stage kinds that are barriers."""
        return tuple(st.kind for st in self.stages if st.barrier is not None)

    def stage(self, kind: str) -> PlanStage:
        """The stage of ``kind`` (raises ``KeyError``)."""
        for st in self.stages:
            if st.kind == kind:
                return st
        raise KeyError(kind)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": "kuration-plan/1",
            "mode": self.mode,
            "stages": [s.to_dict() for s in self.stages],
            "islands": [list(i) for i in self.islands],
            "barriers": list(self.barriers),
            "warnings": list(self.warnings),
            "options": dict(self.options),
            **({"notes": list(self.notes)} if self.notes else {}),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PhysicalPlan:
        return cls(
            mode=d["mode"],
            stages=tuple(PlanStage.from_dict(s) for s in d["stages"]),
            warnings=tuple(d.get("warnings", ())),
            options=dict(d.get("options", {})),
            notes=tuple(d.get("notes", ())),
        )

    def tree(self) -> Any:
        """The plan as a :class:`rich.tree.Tree` (what ``kur explain`` prints)."""
        from rich.markup import escape
        from rich.tree import Tree

        opts = ", ".join(f"{k}={v}" for k, v in self.options.items())
        runtimes = sorted({st.runtime for st in self.stages if not st.empty})
        root = Tree(
            f"[bold]PhysicalPlan[/] {self.mode} ({escape(opts)}) runtime={', '.join(runtimes)}"
        )
        for st in self.stages:
            t = st.traits
            if st.empty:
                where = "[dim]empty seam[/]"
            elif st.island is not None:
                where = f"[green]island {st.island}[/] {t.scope}"
            else:
                where = f"[yellow]barrier[/] {escape(st.barrier or '')}"
            if not st.empty and t.checkpoint != "none":
                where += f" checkpoint={t.checkpoint}"
            if not st.empty:
                where += f" executor={escape(st.executor)}"
            node = root.add(f"[bold]{st.kind}[/] {where}")
            for k, v in st.detail.items():
                node.add(f"[dim]{k}[/] = {escape(str(v))}")
            for c in st.components:
                ct = c.traits
                mark = "" if c.declared else " (default traits)"
                text = (
                    f"{c.kind} {c.name} {_short(c.params)} "
                    f"[{ct.scope}/{ct.shape}/{ct.fusion}, passes={ct.passes}, state={ct.state}]"
                    f"{mark}"
                )
                node.add(escape(text))
        if self.notes:
            n = root.add("[bold]notes[/]")
            for msg in self.notes:
                n.add(escape(msg))
        if self.warnings:
            w = root.add("[bold yellow]warnings[/]")
            for msg in self.warnings:
                w.add(escape(msg))
        return root

    def render(self, width: int = 120) -> str:
        """The tree as plain text."""
        from rich.console import Console

        console = Console(width=width, record=True, color_system=None, file=io.StringIO())
        console.print(self.tree())
        return console.export_text()


def _short(params: Mapping[str, Any], limit: int = 70) -> str:
    if not params:
        return ""
    text = json.dumps(dict(params), sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True)
class StageTelemetry:
    """Execution measurements of one stage (or group of stages run by one call).

    Attributes
    ----------
    stage : str
        A stage kind, or ``"+"``-joined kinds when one call ran several
        (``"read+segment+features"``).
    wall_s : float
        Wall-clock seconds.
    rows_in, rows_out : int or None
        Rows consumed and produced (sources, segments, tracks, shards -- the
        stage's unit); None when not measured.
    partitions : int or None
        Partitions processed (sources).
    bytes : int or None
        Bytes written or read, when measured.
    checkpoint_hits, checkpoint_misses : int or None
        Reused and rebuilt checkpointed partitions (shards on resume).
    queue_depth : int or None
        Largest number of in-flight batches.
    island : int or None
        The plan island the stage executed in; None for a barrier (or a
        step outside the plan's stages, such as the commit).
    streamed : bool or None
        True when the stage read its sources lazily (``streaming=True``).
    peak_rss_bytes : int or None
        The process's peak resident memory when the stage ended (``peak_rss_bytes``: VmHWM on Linux),
        recorded by streaming stages.
    executor : str or None
        The executor that ran the stage's batches (``local``, ``process``, ``ray``);
        None for a step the lead process runs by itself.
    batch_size : int or None
        Partitions (sources) per executor task.
    parts_s : tuple of (str, float) pairs, or None
        Where the stage's time went, seconds per part (``read``, ``segment``,
        ``features``, ``fingerprint`` of a fused scoring call; ``fsync`` and
        ``read`` -- sources read again in this process -- of the staging
        step), summed over partitions where they ran.
    batch_rows : int or None
        Rows per record batch, for a stage that moves Arrow batches (the disk pool).
    runtime : str or None
        The runtime whose code ran the stage (``reference-in-memory``, ``disk-index
        (duckdb)``, ``stream (two lazy passes)``), as the plan names runtimes.

    The last seven are left out of :meth:`to_dict` when None.
    """

    stage: str
    wall_s: float
    rows_in: int | None = None
    rows_out: int | None = None
    partitions: int | None = None
    bytes: int | None = None
    checkpoint_hits: int | None = None
    checkpoint_misses: int | None = None
    queue_depth: int | None = None
    island: int | None = None
    executor: str | None = None
    batch_size: int | None = None
    streamed: bool | None = None
    peak_rss_bytes: int | None = None
    parts_s: tuple[tuple[str, float], ...] | None = None
    batch_rows: int | None = None
    runtime: str | None = None

    def to_dict(self) -> dict[str, Any]:
        optional = (
            ("runtime", self.runtime),
            ("streamed", self.streamed),
            ("peak_rss_bytes", self.peak_rss_bytes),
            ("executor", self.executor),
            ("batch_size", self.batch_size),
            ("parts_s", None if self.parts_s is None else dict(self.parts_s)),
            ("batch_rows", self.batch_rows),
        )
        extra = {k: v for k, v in optional if v is not None}
        return {
            "stage": self.stage,
            "wall_s": self.wall_s,
            "rows_in": self.rows_in,
            "rows_out": self.rows_out,
            "partitions": self.partitions,
            "bytes": self.bytes,
            "checkpoint_hits": self.checkpoint_hits,
            "checkpoint_misses": self.checkpoint_misses,
            "queue_depth": self.queue_depth,
            "island": self.island,
            **extra,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StageTelemetry:
        kw: dict[str, Any] = {k: d.get(k) for k in cls.__dataclass_fields__}
        if kw["parts_s"] is not None:
            kw["parts_s"] = tuple((str(k), float(v)) for k, v in dict(kw["parts_s"]).items())
        return cls(**kw)


#: telemetry stage name -> the plan stages its call ran (transforms run inside the scoring
#: call that reads the sources, or inside the features pass when features are a barrier)
TELEMETRY_STAGES: Mapping[str, tuple[str, ...]] = {
    "read+segment+features": ("read", "segment", "features", "transforms"),
    "read+segment": ("read", "segment"),
    "features": ("features", "transforms"),
    "transforms": ("transforms",),
    "scorers": ("scorers",),
    "bin": ("bin",),
    "bin+select": ("bin", "select"),
    "bin+fill": ("bin", "fill"),
    "fill": ("fill",),
    "stage": ("tracks", "write"),
    "tracks+write": ("tracks", "write"),
    "enrich": ("enrich",),
}


#: the stages that are empty when nothing is registered into them (a bin stage without axes
#: still runs: it ranks the pool)
_SEAMS = ("transforms", "scorers", "enrich")


def _same_executor(planned: str, ran: str | None) -> bool:
    """Whether a plan's executor text names the executor a stage's telemetry recorded
    (None: the lead process ran it, which the plan calls ``driver`` or ``local (in the lead...``)."""
    head = planned.split(" ", 1)[0]
    if ran is None:
        return head == "driver" or planned.startswith("local (in the lead")
    return head == ran


def plan_mismatches(plan: PhysicalPlan, telemetry: Sequence[StageTelemetry]) -> list[str]:
    """Where a run's telemetry contradicts its plan: a non-empty plan stage no telemetry
    covers, or covered by a call on another runtime, or by none on the planned executor;
    a seam (transforms, scorers, enrich) the plan calls empty that ran.  Empty when the plan is what ran.

    Telemetry names a call (``read+segment+features``), mapped to plan stages by
    :data:`TELEMETRY_STAGES`; steps outside the plan's stages (``provenance``, ``index``,
    ``publish``...) are not compared.
    """
    problems: list[str] = []
    covered: dict[str, list[StageTelemetry]] = {}
    kinds = {s.kind: s for s in plan.stages}
    for t in telemetry:
        for kind in TELEMETRY_STAGES.get(t.stage, ()):
            s = kinds.get(kind)
            if s is None:
                continue
            if s.empty:
                if t.stage == kind and kind in _SEAMS:
                    problems.append(f"{kind}: ran ({t.stage}) but the plan's stage is empty")
                continue
            covered.setdefault(kind, []).append(t)
    for s in plan.stages:
        if s.empty:
            continue
        ran = covered.get(s.kind)
        if not ran:
            problems.append(f"{s.kind}: planned, but no telemetry says it ran")
            continue
        for t in ran:
            if t.runtime != s.runtime:
                problems.append(
                    f"{s.kind}: planned on {s.runtime!r}, ran ({t.stage}) on {t.runtime!r}"
                )
        if not any(_same_executor(s.executor, t.executor) for t in ran):
            problems.append(
                f"{s.kind}: planned on executor {s.executor!r}, ran on "
                f"{sorted({str(t.executor) for t in ran})}"
            )
    return problems
