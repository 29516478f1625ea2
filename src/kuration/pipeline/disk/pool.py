"""The disk-backed pool runtime: a count selection over a pool larger than memory.

``Pipeline.options(pool="disk")`` (job key ``"pool": "disk"``) runs an
eligible count plan (:func:`disk_ineligible`) on this runtime instead of the
reference in-memory one; :meth:`kuration.Pipeline.explain` names the runtime
of each stage.  An eligible hours plan runs there too: its score stage is this
module's, and :mod:`kuration.pipeline.disk.hours` ranks every segment in the
index and builds the track candidates one source at a time.  The runtime:

1. **score** (:mod:`kuration.pipeline.disk.score`) -- reads, windows and scores
   each source (metrics, then transforms) on the run's executor (inline in
   the lead for ``local``, one source per task in ``process`` or ``ray``
   workers) and writes its segments as :class:`SegmentBatch` record batches
   of at most ``batch_rows`` rows into one checkpointed partition per source
   (:class:`~kuration.pipeline.disk.checkpoint.StageCheckpoint`); a partition whose
   key (run fingerprint, source URI and adapter fingerprint) matches a valid
   earlier commit is reused by the lead, not recomputed.  With a ``dedup``
   filter each window's SHA-256 is computed there, from the table already in
   memory.
2. **index** -- loads the partitions into a DuckDB database file inside the
   run's checkpoint namespace, with ``memory_limit`` and a ``temp_directory``
   there, so sorts and window functions spill to disk.
3. **bin+select** -- filters, quantile-bin edges (exact order statistics,
   interpolated as :func:`numpy.quantile` does), joint-bin ranks and the
   stable ``(priority desc, source_id, start_idx)`` order run in SQL.  Exact
   dedup looks digests up in the index and compares a window that shares one
   byte for byte with the distinct windows of that digest seen before it (only
   those are stored in the index; one source is read at a time).
   Tags are label columns; coverage floors are reserved and rows taken within
   each group's cap (:func:`~kuration.pipeline.disk.index.cap_groups`) in SQL
   (:mod:`kuration.pipeline.disk.tags`).
   Only the ``n`` selected rows return to Python.

The selection equals the in-memory path's for the same pool and seed (the
same segments, in the same order, with the same priorities and bins).
``uniform-bins`` draws its seeded shuffle and tie-break for the eligible rows
as numpy does (two float64 arrays of that length: 16 bytes a row); ``weighted``
reads its weighted feature columns of the eligible rows (8 bytes a row and
feature) and normalises them with the in-memory code, so floating-point sums
agree to the last bit.

Methods covered: ``top-k``, ``uniform-bins``, ``weighted``, ``random``, for a count or an
hours budget.  Not covered yet (the plan stays on the reference runtime, and
``explain`` says why): other methods, whole-pool scorers and ``near_dedup``; for
hours also analyzers (they read the whole pool's segments) and ``streaming=True``
(its own two-pass runtime).
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...contracts.schema import SchemaSpec
from ...contracts.segment import Segment, Segmenter
from ...core.executors import Executor, make_executor, worker_environment
from ...errors import EmptyPoolError, MemoryBudgetError, PipelineError
from ...selection.constraints import assign_groups, resolve_floors, source_group
from ...selection.strategy import Strategy
from ...sources.base import InputAdapter
from ...sources.identity import SourceDigest
from ..spec.budget import default_memory_budget, estimate_peak
from ..spec.logical import CountSelection, HoursSelection
from ..spec.plan import PlanStage, StageTelemetry
from ..spec.runspec import RunSpec
from .checkpoint import StageCheckpoint
from .index import (
    apply_filter,
    bin_pool,
    cap_groups,
    connect,
    load_partitions,
    n_eligible,
    rank_pool_sql,
    top_rows,
)
from .score import score_stage
from .tags import select_with_floors, tag_pool, tag_report

__all__ = [
    "DISK_RUNTIME",
    "DiskSelection",
    "PoolChoice",
    "auto_pool_note",
    "budget_pool",
    "disk_ineligible",
    "disk_meets_budget",
    "plan_pool",
    "select_on_disk",
]

#: The runtime name :meth:`Pipeline.explain` shows for stages this module runs.
DISK_RUNTIME = "disk-index (duckdb)"
_FILTERS = ("finite", "source", "predicate", "dedup")


def disk_ineligible(st: Strategy) -> str | None:
    """Why the count plan of ``st`` cannot run on the disk runtime, or None when it can."""
    if st.method not in ("top-k", "uniform-bins", "weighted", "random"):
        return (
            f"method {st.method!r} has no disk-backed reducer (top-k, uniform-bins, weighted "
            "and random do)"
        )
    if st.scorers:
        return "whole-pool scorers need the pool in memory"
    for f in st.filters:
        name = f.get("filter", "predicate")
        if name not in _FILTERS:
            return f"filter {name!r} is not disk-backed (finite, source, predicate, dedup are)"
    return None


#: DuckDB's memory_limit for the index when nothing else sets it, and the least it gets
#: (DuckDB itself needs a few blocks: below about 16 MiB even small sorts fail).  The index
#: spills past its limit into the namespace's temporary folder, so the limit is what the
#: index adds to a run's peak however large the pool: at 32 MiB the quickstart job's hours
#: index over 15,360 sources peaked 22 MB lower than at 256 MiB, in the same time
INDEX_MEMORY, INDEX_MEMORY_MIN = 32 * 2**20, 16 * 2**20


def disk_meets_budget(
    parts: Mapping[str, int], budget: int, workers: int = 1, *, index_min: int | None = None
) -> int | None:
    """The index memory (bytes) with which the disk pool meets ``budget``, or None.

    ``parts`` are a :class:`~kuration.pipeline.spec.budget.MemoryEstimate`'s: the disk pool
    holds the baseline, one source in memory at a time (per worker) and
    its index (up to :data:`INDEX_MEMORY`, at least ``index_min``, default
    :data:`INDEX_MEMORY_MIN`), never the pool.
    """
    index_min = INDEX_MEMORY_MIN if index_min is None else index_min
    per_source = int(parts["per_source_in_memory"]) // max(1, int(workers))
    room = int(budget) - int(parts["baseline"]) - per_source
    return min(room, INDEX_MEMORY) if room >= index_min else None


@dataclass(frozen=True)
class PoolChoice:
    """How the planner chose the pool of a plan that did not fix it: ``disk`` when its
    estimated in-memory peak ``estimate`` exceeds ``budget`` (bytes), the ``memory_budget``
    the user set or the default one (``by`` says which, and where it comes from); the disk
    index then gets ``index_bytes``."""

    disk: bool
    estimate: int
    budget: int
    by: str
    index_bytes: int = 0
    origin: str = ""

    def note(self) -> str:
        """What the plan, config.json and the run summary say about the choice."""
        est = f"{self.estimate / 1e6:,.0f} MB"
        budget = f"{self.by} of {self.budget / 1e6:,.0f} MB" + (
            f" ({self.origin})" if self.origin else ""
        )
        if self.disk:
            return (
                f"pool: disk, chosen automatically: the estimated in-memory peak {est} "
                f"exceeds {budget}"
            )
        return (
            f"pool: memory, chosen automatically: the estimated in-memory peak {est} "
            f"is within {budget}"
        )


def _count_ineligible(st: Strategy, tie_break: str) -> str | None:
    """:func:`disk_ineligible`, and a count plan's seeded ties: the disk index's top-n
    orders equal priorities by its row order (source, start) only."""
    if tie_break == "seed":
        return "tie_break 'seed' orders a count selection's ties in memory only"
    return disk_ineligible(st)


def _auto_eligible(p: RunSpec) -> bool:
    """A count or hours plan (hours without analyzers), not streamed, that the disk runtime
    runs."""
    if p.opts.streaming or p.strategy_ is None:
        return False
    hours = isinstance(p.selection, HoursSelection) and not p.analyzers
    if isinstance(p.selection, CountSelection):
        return _count_ineligible(p.strategy_, p.selection.tie_break) is None
    if not hours:
        return False
    return disk_ineligible(p.strategy_) is None


def budget_pool(p: RunSpec, sources: Sequence[str]) -> PoolChoice | None:
    """The automatic choice of the runtime, or None when there is none to make (a fixed
    pool, an ineligible plan, no budget).  The disk runtime is chosen:

    * with a ``memory_budget`` that the in-memory plan exceeds, and the disk pool meets
      (``pool`` unset or ``memory``);
    * with neither ``memory_budget`` nor ``pool``, when the in-memory plan exceeds the
      default budget (:func:`~kuration.pipeline.spec.budget.default_memory_budget`): the
      disk runtime runs it even where it cannot meet that budget either, as it holds less.

    Only for eligible plans (see :func:`disk_ineligible`; hours plans without analyzers,
    never streamed).  The artifact is byte-identical on either runtime.
    """
    if p.opts.pool == "disk" or not _auto_eligible(p):
        return None
    given, by, how = p.opts.memory_budget, "memory_budget", ""
    default = given is None
    if given is None:
        found = default_memory_budget() if p.opts.pool is None else None
        if found is None:
            return None
        (budget, how), by = found, "the default memory budget"
    else:
        budget = int(given)  # bytes: PipelineOptions parsed a size such as "2GB"
    est = estimate_peak(p, sources)
    if est.in_memory <= budget:
        return PoolChoice(False, int(est.in_memory), int(budget), by, 0, how)
    index = disk_meets_budget(est.parts, budget, p.opts.workers)
    if index is None:
        if not default:
            return None  # check_plan_memory says what would meet it
        index = INDEX_MEMORY_MIN
    elif not default:  # the user's hard budget needs the checkpoints
        assert p.adapter is not None  # an eligible plan has one
        _require_identity(p.adapter, sources)
    return PoolChoice(True, int(est.in_memory), int(budget), by, index, how)


def _require_identity(adapter: InputAdapter, sources: Sequence[str]) -> None:
    """Checkpoints need every source's strong identity (spec 000, Parallelism & scale): a
    local file has its content hash; anything else must have an adapter fingerprint (a
    remote object's version or ETag).

    Raises
    ------
    MemoryBudgetError
        Naming the first source without one and what would give it one.
    """
    for uri in sources:
        if os.path.exists(str(uri)):
            continue  # a local file or folder: its bytes are hashed
        if not adapter.fingerprint(str(uri)):
            raise MemoryBudgetError(
                f"memory_budget needs the disk-backed pool's checkpoints, and {uri} has no "
                "strong identity to key them by (no object version, ETag or content hash); "
                "serve it with an ETag or a versioned bucket, copy it to a local file, or give "
                "the adapter a fingerprint (InputAdapter.fingerprint)"
            )


def auto_pool_note(p: RunSpec) -> str | None:
    """What :meth:`~kuration.Pipeline.explain` says of a plan whose pool is chosen when it
    runs (from the sources' metadata), or None when the pool is fixed."""
    if p.opts.pool == "disk" or not _auto_eligible(p):
        return None
    if p.opts.memory_budget is not None:
        budget, by = f"memory_budget of {int(p.opts.memory_budget) / 1e6:,.0f} MB", ""
    elif p.opts.pool is None:
        found = default_memory_budget()
        if found is None:
            return None
        budget, by = f"the default memory budget of {found[0] / 1e6:,.0f} MB", f" ({found[1]})"
    else:
        return None
    return (
        f"pool: chosen when the run starts, from the sources' metadata: the disk runtime if "
        f"the estimated in-memory peak exceeds {budget}{by}, else memory (set pool to fix it)"
    )


#: the stages the disk runtime runs, and what each does there
_DISK_STAGES = {
    "read": "one source per task, one at a time per worker (the lead reuses checkpoints)",
    "segment": "windows of one source at a time, in its task",
    "features": "SegmentBatch partitions, one checkpointed Arrow IPC file per source",
    "transforms": "per source, inside scoring",
    "bin": "exact quantile edges from order statistics in DuckDB (spills to disk)",
    "select": "filters, joint-bin ranks and the stable top-n order in DuckDB",
}


#: what the disk runtime does at the stages of an hours plan that the count plan lacks
_DISK_HOURS_STAGES = {
    **_DISK_STAGES,
    "fill": "spans built a chunk of sources at a time into a Parquet candidate file, "
    "admitted from it in priority order a page at a time (DuckDB)",
    "tracks": "admitted sources reread one at a time",
    "write": "shards staged per source, committed at the end",
}


def _hours_ineligible(stages: Sequence[PlanStage], st: Strategy, streaming: bool) -> str | None:
    """Why the hours plan cannot run on the disk runtime, or None when it can."""
    if streaming:
        return "streaming=True runs its own two-pass runtime"
    if any(s.kind == "enrich" and not s.empty for s in stages):
        return "analyzers read the whole pool's segments"
    return disk_ineligible(st)


def plan_pool(
    stages: Sequence[PlanStage],
    st: Strategy,
    mode: str,
    pool: str | None,
    *,
    streaming: bool = False,
    tie_break: str = "name",
) -> tuple[tuple[PlanStage, ...], list[str]]:
    """The planner's choice of runtime: with ``pool="disk"`` and an eligible count or hours
    plan, the stages this runtime covers get :data:`DISK_RUNTIME` (and a ``runtime`` detail);
    otherwise the stages are unchanged and a warning says why the plan stays in memory
    (a count plan with ``tie_break="seed"`` among them: see :func:`_count_ineligible`)."""
    if pool != "disk":
        return tuple(stages), []
    hours = mode != "count"
    why = _hours_ineligible(stages, st, streaming) if hours else _count_ineligible(st, tie_break)
    if why is not None:
        return tuple(stages), [f"pool='disk' requested, but {why}: the reference runtime runs it"]
    covered = _DISK_HOURS_STAGES if hours else _DISK_STAGES
    out = []
    for s in stages:
        if s.kind in covered and not s.empty:
            detail = {**dict(s.detail), "runtime": covered[s.kind]}
            traits = s.traits
            if s.kind == "features":  # one checkpointed partition per source
                traits = traits.model_copy(update={"checkpoint": "partition"})
            s = dataclasses.replace(s, runtime=DISK_RUNTIME, detail=detail, traits=traits)
        out.append(s)
    return tuple(out), []


@dataclass(frozen=True)
class DiskSelection:
    """A count selection made on the disk runtime.

    Attributes
    ----------
    strategy : Strategy
    n_requested, seed : int
    selected : tuple of Segment
        Best first, with features, priority and (with bin axes) bin set.
    n_pool : int
        Segments scored.
    n_eligible : int
        Segments with a finite priority.
    edges : dict of str to list of float
        Interior quantile-bin edges per axis.
    sources : dict
        ``total``, ``scored``, ``failed`` and ``short`` counts.
    errors : dict of str to str
        Skipped source URIs and why.
    checkpoint : dict
        ``root`` (None for a temporary one, removed), ``run`` (the run fingerprint), ``hits``, ``misses``, ``rejected``,
        ``unidentified`` (sources without a strong identity: scored afresh, never reused),
        ``bytes_read``, ``bytes_written``.
    telemetry : tuple of StageTelemetry
    groups : dict or None
        With a group cap: ``max_overshoot``, ``groups`` (count), ``cap`` and
        ``per_group`` (``eligible``, ``selected``, ``at_cap``), as the in-memory path reports.
    tags : dict or None
        With tags: per tag and label ``pool``, ``eligible``, ``selected`` and, under a
        coverage floor, ``floor``, ``met`` and ``why`` (as ``CurationResult.tags``).
    execution : dict
        How the score stage ran (:attr:`~kuration.pipeline.disk.score.ScoredStage.execution`):
        ``executor``, ``workers``, ``batch_size``, ``max_in_flight``, ``queue_depth``, ``tasks``.
    """

    strategy: Strategy
    n_requested: int
    seed: int
    selected: tuple[Segment, ...]
    n_pool: int
    n_eligible: int
    edges: dict[str, list[float]]
    sources: dict[str, int]
    errors: dict[str, str] = field(default_factory=dict)
    checkpoint: dict[str, Any] = field(default_factory=dict)
    telemetry: tuple[StageTelemetry, ...] = ()
    groups: dict[str, Any] | None = None
    tags: dict[str, Any] | None = None
    execution: dict[str, Any] = field(default_factory=dict)

    @property
    def n_selected(self) -> int:
        return len(self.selected)

    @property
    def shortfall(self) -> int:
        return self.n_requested - self.n_selected

    def to_dict(self, segments: bool = True) -> dict[str, Any]:
        """JSON-ready summary (with the selected segments when ``segments``)."""
        d: dict[str, Any] = {
            "runtime": DISK_RUNTIME,
            "strategy": self.strategy.to_dict(),
            "n_requested": self.n_requested,
            "n_selected": self.n_selected,
            "seed": self.seed,
            "n_pool": self.n_pool,
            "n_eligible": self.n_eligible,
            "edges": self.edges,
            "sources": dict(self.sources),
            "errors": dict(self.errors),
            "checkpoint": dict(self.checkpoint),
            "telemetry": [t.to_dict() for t in self.telemetry],
            "execution": dict(self.execution),
            "groups": self.groups,
            "tags": self.tags,
        }
        if segments:
            d["selected"] = [s.to_dict() for s in self.selected]
        return d


# ---- the runtime ---------------------------------------------------------------------------


def select_on_disk(
    schema: SchemaSpec,
    adapter: InputAdapter,
    sources: Sequence[str],
    segmenter: Segmenter,
    strategy: Strategy,
    n: int,
    *,
    seed: int = 0,
    on_error: str = "skip",
    checkpoint_dir: str | Path | None = None,
    batch_rows: int = 65536,
    memory_limit: str = "32MiB",
    durable: bool = True,
    run_key: Mapping[str, Any] | None = None,
    executor: Executor | str | None = None,
    workers: int = 1,
    executor_options: Mapping[str, Any] | None = None,
    plugins: Sequence[str] = (),
    include_entry_points: bool = True,
) -> DiskSelection:
    """Select ``n`` segments on the disk runtime (see the module docs).

    Parameters
    ----------
    schema, adapter, sources, segmenter, strategy, n, seed, on_error
        As for :func:`kuration.curate`.
    checkpoint_dir : path, optional
        Checkpoint root; a run reuses the valid partitions of an earlier run with
        the same run key.  None: a temporary directory, removed afterwards.
    batch_rows : int
        Rows per :class:`SegmentBatch` (bounds one Arrow batch).
    memory_limit : str
        DuckDB's ``memory_limit`` (it spills beyond it).
    durable : bool
        Make the stage's checkpoint files durable (one sync) before its stage commit.
    run_key : mapping, optional
        Extra run identity (the physical plan); the strategy, schema, adapter,
        segmenter and component fingerprints are always part of it.
    executor : Executor or {"local", "process", "ray"}, optional
        Scores the sources (:mod:`~kuration.pipeline.disk.score`); an :class:`Executor`
        is used as is (its owner closes it), a name (None: the one ``workers`` implies)
        is made here and closed at the end.  The selection and every partition's bytes
        are the same for any executor.
    workers, executor_options
        The executor's workers and its own settings (as for :func:`kuration.curate`).
    plugins, include_entry_points
        Modules (and whether entry-point plugins) a worker imports first.

    Raises
    ------
    PipelineError
        The strategy is not eligible (:func:`disk_ineligible`), or bad ``n``/``on_error``.
    EmptyPoolError
        No source produced a segment.
    DatasetIntegrityError
        A partition fails its checksum when the stage commit is published.
    KurationError
        With ``on_error="raise"``, the first source error; two sources sharing an id.
    ExecutorError
        A worker process or Ray task died.
    """
    why = disk_ineligible(strategy)
    if why is not None:
        raise PipelineError(f"the disk pool cannot run this plan: {why}", step="select")
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise PipelineError(f"n must be an integer >= 0, got {n!r}", step="select")
    if on_error not in ("skip", "raise"):
        raise PipelineError(f"on_error must be 'skip' or 'raise', got {on_error!r}", step="score")
    if not re.fullmatch(r"\d+(\.\d+)?\s*[KMGT]i?B", str(memory_limit)):
        raise PipelineError(f"memory_limit must look like '256MB', got {memory_limit!r}")
    adapter.assign_source_ids([str(u) for u in sources])  # unique ids, before any read
    from ..._version import __version__
    from ...core.plugins import run_code, used_names

    key = {
        "format": "kuration-disk-pool/1",
        "strategy": strategy.to_dict(),
        "schema": schema.to_dict(),
        "adapter": adapter.to_dict(),
        "segmenter": segmenter.to_dict(),
        "components": {
            "kuration": __version__,
            **run_code(used_names(strategy.to_dict(), adapter.name, "none")),
        },
        "batch_rows": batch_rows,
        **dict(run_key or {}),
    }
    tmp = None if checkpoint_dir is not None else tempfile.mkdtemp(prefix="kuration-pool-")
    root = Path(checkpoint_dir if checkpoint_dir is not None else tmp)  # type: ignore[arg-type]
    own = not isinstance(executor, Executor)
    if isinstance(executor, Executor):
        ex = executor
    else:
        ex = make_executor(executor, workers, options=executor_options)
    run = _DiskRun(schema, adapter, segmenter, strategy, on_error, batch_rows, durable)
    try:
        env = worker_environment(plugins, include_entry_points)
        res = _run(run, sources, n, seed, root, key, memory_limit, ex, env)
        if tmp is not None:  # removed below: nothing to point at
            res = dataclasses.replace(res, checkpoint={**res.checkpoint, "root": None})
        return res
    finally:
        if own:
            ex.close()
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


@dataclass(frozen=True)
class _DiskRun:
    """The validated inputs of one count selection on the disk runtime."""

    schema: SchemaSpec
    adapter: InputAdapter
    segmenter: Segmenter
    st: Strategy
    on_error: str
    batch_rows: int
    durable: bool


def plan_identity(plan: Any) -> dict[str, Any]:
    """The plan as part of a checkpoint key: options that change no result (progress
    display, fsync, where checkpoints live, which executor and how many workers score:
    the partitions are byte-identical under each) are left out, and so is each stage's
    executor, so a run resumed with other workers reuses the partitions."""
    doc: dict[str, Any] = plan.to_dict()
    skip = ("progress", "durable", "checkpoint_dir", "executor", "workers", "executor_options")
    doc["options"] = {k: v for k, v in doc["options"].items() if k not in skip}
    doc.pop("notes", None)  # how the pool was chosen changes no partition
    doc["stages"] = [{k: v for k, v in s.items() if k != "executor"} for s in doc["stages"]]
    return doc


def _group_cap(
    con: Any, st: Strategy, n: int, uris: Mapping[str, str]
) -> tuple[int, dict[str, int] | None]:
    """The cap and each group's eligible rows when the strategy has a group cap, else None."""
    if not st.group_cap or st.group is None:
        return 0, None
    return cap_groups(con, st, n, {sid: source_group(st.group, sid) for sid in sorted(uris)})


def _select(
    con: Any, st: Strategy, n: int, cap: int | None
) -> tuple[list[Segment], dict[str, Any] | None]:
    """The selected segments and, with tags, the per-tag report: the first ``n`` rows, or
    with tags or a group cap, floors reserved first and rows taken within the cap
    (:mod:`.disk_tags`)."""
    if not st.tags and cap is None:
        return top_rows(con, st, n), None
    label_sets = tag_pool(con, st) if st.tags else {}
    floors = resolve_floors(st.tag_coverage, label_sets, n) if st.tag_coverage else {}
    select_with_floors(con, st, n, floors, label_sets, cap)
    selected = top_rows(con, st, n, "sel", label_sets)
    report = tag_report(con, st, n, label_sets, floors, cap is not None) if st.tags else None
    return selected, report


def _group_report(
    st: Strategy, cap: int, eligible: Mapping[str, int], selected: Sequence[Segment]
) -> dict[str, Any]:
    """The group-cap report of the in-memory count path: per group eligible, selected, at cap."""
    assert st.group_cap is not None  # called only under a group cap
    got = Counter(s.group for s in selected)
    return {
        "max_overshoot": float(st.group_cap["max_overshoot"]),
        "groups": len(eligible),
        "cap": int(cap),
        "per_group": {
            g: {"eligible": e, "selected": got[g], "at_cap": got[g] >= cap}
            for g, e in eligible.items()
        },
    }


def _run(
    run: _DiskRun,
    sources: Sequence[str],
    n: int,
    seed: int,
    root: Path,
    key: Mapping[str, Any],
    memory_limit: str,
    ex: Executor,
    env: Mapping[str, Any],
) -> DiskSelection:
    schema, adapter, st, batch_rows = run.schema, run.adapter, run.st, run.batch_rows
    t0 = time.perf_counter()
    ck = StageCheckpoint(root, key, "score")
    scored = score_stage(
        ck,
        adapter,
        [str(u) for u in sources],
        run.segmenter,
        st,
        schema,
        batch_rows=batch_rows,
        on_error=run.on_error,
        durable=run.durable,
        executor=ex,
        env=env,
    )
    n_pool = scored.n_pool
    t1 = time.perf_counter()
    if n_pool == 0:
        raise EmptyPoolError(
            f"no segments: all {len(sources)} sources failed, were shorter than one window "
            "or had no entity in any window",
            errors=dict(scored.errors),
        )
    con = connect(ck.dir.parent, memory_limit)
    try:
        load_partitions(con, ck, scored.commits, len(st.feature_names))
        t2 = time.perf_counter()
        uris = {c.meta["source_id"]: c.meta["uri"] for c in scored.commits.values()}
        fps = {c.meta["source_id"]: c.meta.get("fingerprint", "") for c in scored.commits.values()}

        def reread(sid: str) -> Any:  # the bytes the partition was scored from, or fail
            return adapter.read_checked(uris[sid], expect=SourceDigest(fps[sid]))[0]

        for entry in st.filters:
            apply_filter(con, st, entry, reread)
        edges = bin_pool(con, st) if st.bin_axes else {}
        rank_pool_sql(con, st, seed)
        eligible = n_eligible(con)
        cap, groups = _group_cap(con, st, n, uris)
        selected, tags = _select(con, st, n, None if groups is None else cap)
    finally:
        con.close()
    t3 = time.perf_counter()
    scored_n = sum(1 for c in scored.commits.values() if c.rows)
    assign_groups(selected, st.group)
    tele: tuple[StageTelemetry, ...] = (
        scored.telemetry(ck, t1 - t0, len(sources), batch_rows),
        StageTelemetry(
            "index", t2 - t1, rows_in=n_pool, rows_out=n_pool, partitions=len(scored.commits)
        ),
        StageTelemetry("bin+select", t3 - t2, rows_in=n_pool, rows_out=len(selected)),
    )
    tele = tuple(dataclasses.replace(t, runtime=DISK_RUNTIME) for t in tele)
    return DiskSelection(
        strategy=st,
        n_requested=n,
        seed=seed,
        selected=tuple(selected),
        n_pool=n_pool,
        n_eligible=eligible,
        edges=edges,
        sources={
            "total": len(sources),
            "scored": scored_n,
            "failed": len(scored.errors),
            "short": len(scored.commits) - scored_n,
        },
        errors=dict(scored.errors),
        groups=None if groups is None else _group_report(st, cap, groups, selected),
        tags=tags,
        checkpoint={
            "root": str(root),
            "run": ck.run_fingerprint,
            "hits": ck.hits,
            "misses": ck.misses,
            "rejected": ck.rejected,
            "unidentified": list(scored.unidentified),
            "bytes_read": ck.bytes_read,
            "bytes_written": ck.bytes_written,
        },
        telemetry=tele,
        execution=dict(scored.execution),
    )
