"""compile_plan: a :class:`~kuration.pipeline.spec.runspec.RunSpec` -> :class:`~kuration.pipeline.spec.plan.PhysicalPlan`.

Reads only the run spec's resolved logical state and the execution traits
declared in the registries: no source is resolved, fetched or opened.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...core.traits import ExecutionTraits, traits_of
from ...errors import PipelineError
from ...selection.strategy import Strategy
from ..disk.pool import DISK_RUNTIME, auto_pool_note, plan_pool
from ..run.stage_parallel import encoder_pickles
from ..spec.logical import CountSelection, HoursSelection
from ..spec.plan import (
    REFERENCE_RUNTIME,
    STREAM_RUNTIME,
    PhysicalPlan,
    PlanComponent,
    PlanStage,
    fuse_stages,
)
from .hours import preflight
from .workers_fit import countable_sources, pool_too_small

if TYPE_CHECKING:
    from ..spec.logical import SeamUse
    from ..spec.runspec import RunSpec

__all__ = ["compile_plan"]

_WINDOW = ExecutionTraits(scope="window", shape="map")
_POOL = ExecutionTraits(scope="pool", shape="reduce", fusion="barrier", state="pool")
_RANK = ExecutionTraits(scope="pool", shape="rank", fusion="barrier", state="pool")

# what the reference runtime does at each stage, for the plan's warnings
_REFERENCE = {
    "read": "each source is read whole into a TickTable",
    "segment": "windows of one in-memory source at a time",
    "features": "the whole scored pool is held in memory",
    "transforms": "batch transforms run per source after its metrics, inside scoring",
    "scorers": "segment scorers run once over the whole scored pool",
    "bin": "quantile edges over the in-memory pool",
    "select": "ranking and constraints over the in-memory pool",
    "fill": "track candidates and budgets over the in-memory pool",
    "tracks": "each admitted source is reread whole",
    "write": "shards staged per source, committed at the end",
    "enrich": "analyzers see the finished pool at once (stream analyzers included)",
}


def _component(kind: str, name: str, params: dict[str, Any] | None = None) -> PlanComponent:
    traits, declared = traits_of(kind, name)
    return PlanComponent(kind, name, params or {}, traits, declared)


def _require(p: RunSpec) -> tuple[Strategy, Any]:
    missing = [
        what
        for what, v in (
            ("source", p.adapter),
            ("segment", p.segmenter),
            ("metrics", p.strategy_),
            ("select or sample", p.selection),
        )
        if v is None
    ]
    if missing:
        raise PipelineError(f"the pipeline has no {', '.join(missing)} step yet", step="explain")
    assert p.strategy_ is not None
    if p.segmenter is not None and p.segmenter.scope == "track" and p.strategy_.transforms:
        raise PipelineError(
            "strategy transforms read each window over the whole source: they need the "
            "segmenter's scope 'scene', not 'track'",
            step="segment",
        )
    if p.segmenter is not None and p.segmenter.present_where is not None:
        reread = [f.get("filter") for f in p.strategy_.filters if f.get("filter") == "dedup"]
        if reread or p.strategy_.scorers:
            raise PipelineError(
                "the dedup filter and whole-pool scorers reread the recorded ticks: they "
                "cannot be combined with the segmenter's present_where",
                step="segment",
            )
    return p.strategy_, p.selection


def _input_stages(p: RunSpec, st: Strategy) -> list[PlanStage]:
    assert p.adapter is not None and p.segmenter is not None
    src = p.sources
    if isinstance(src, Mapping) and "uris" in src:
        src = f"{len(src['uris'])} resolved"
    detail = {"sources": src if not isinstance(src, list) else f"{len(src)} listed"}
    adapter_name = str(p.adapter.to_dict().get("type", type(p.adapter).__name__))
    metrics = [
        PlanComponent("metric", name, {"expr": expr}, ExecutionTraits(), True)
        for name, expr in st.define.items()
    ] + [_component("metric", name) for name in st.registered]
    read_traits = ExecutionTraits(scope="source", shape="source", state="bounded")
    return [
        PlanStage("read", read_traits, (_component("adapter", adapter_name),), detail=detail),
        PlanStage("segment", _WINDOW, detail=p.segmenter.to_dict()),
        PlanStage("features", _WINDOW, tuple(metrics)),
        # what the run executes: the strategy's uses (a strategy file's and the builders')
        _seam_stage("transforms", "transform", _uses(st.transforms), _WINDOW),
        _seam_stage("scorers", "scorer", _uses(st.scorers), _POOL),
    ]


def _uses(entries: Sequence[Mapping[str, Any]]) -> tuple[tuple[str, dict[str, Any]], ...]:
    """A strategy's ``transforms``/``scorers`` entries as ``(name, params)``."""
    return tuple((str(e["name"]), {k: v for k, v in e.items() if k != "name"}) for e in entries)


def _seam_stage(
    kind: str,
    registry_kind: str,
    uses: Sequence[SeamUse] | Sequence[tuple[str, dict[str, Any]]],
    traits: ExecutionTraits,
) -> PlanStage:
    pairs = [u if isinstance(u, tuple) else (u.name, dict(u.params)) for u in uses]
    comps = tuple(_component(registry_kind, name, params) for name, params in pairs)
    return PlanStage(kind, traits, comps, empty=not comps)


#: what the streaming runtime does at each stage of an hours plan
_STREAM = {
    "read": "each source read lazily in record batches, twice: pass 1 scores, pass 2 writes",
    "segment": "windows cut from the stream of one source at a time",
    "features": "metrics per window as the stream passes; only the scored segments stay",
    "scorers": "segment scorers over the scored segments (no source is held)",
    "bin": "quantile edges over the scored segments (no source is held)",
    "fill": "track candidates and budgets over the scored segments",
    "tracks": "admitted sources streamed again (pass 2), one at a time",
    "write": "shards flushed from the stream into staging, committed at the end",
}


def _stream_stages(stages: Sequence[PlanStage]) -> tuple[PlanStage, ...]:
    """``streaming=True``: the stages the streaming runtime runs name it and what it does."""
    out = []
    for s in stages:
        if s.kind in _STREAM and not s.empty:
            detail = {**dict(s.detail), "runtime": _STREAM[s.kind]}
            s = dataclasses.replace(s, runtime=STREAM_RUNTIME, detail=detail)
        out.append(s)
    return tuple(out)


def _selection_components(st: Strategy) -> tuple[PlanComponent, ...]:
    filters = [
        _component(
            "filter",
            str(f.get("filter", "predicate")),
            {k: v for k, v in f.items() if k != "filter"},
        )
        for f in st.filters
    ]
    return (*filters, _component("method", st.method, dict(st.params)))


def _tie(sel: CountSelection) -> dict[str, str]:
    """The count selection's ``tie_break`` for the plan, only where it is not the default."""
    return {} if sel.tie_break == "name" else {"tie_break": sel.tie_break}


def _selection_stages(p: RunSpec, st: Strategy, sel: Any) -> list[PlanStage]:
    bin_detail = {"axes": list(st.bin_axes), "n_bins": st.n_bins}
    stages = [PlanStage("bin", _POOL, detail=bin_detail, empty=not st.bin_axes)]
    constraints = {
        "nan_policy": st.nan_policy,
        "tag_coverage": dict(st.tag_coverage) or None,
        "group_cap": dict(st.group_cap) if st.group_cap else None,
        "seed": p.opts.seed,
    }
    if isinstance(sel, CountSelection):
        stages.append(
            PlanStage(
                "select",
                _RANK,
                _selection_components(st),
                detail={"n": sel.n, **constraints, **_tie(sel)},
            )
        )
        return stages
    assert p.output_spec is not None
    span, _ = preflight(
        schema=p.schema,  # type: ignore[arg-type]
        strategy=st,
        spec=p.output_spec,
        encoder=p.encoder,
        **sel.write_options(),
    )
    fill = {
        "train_hours": sel.train_hours,
        "test_hours": sel.test_hours,
        "clip_aggregate": sel.clip_aggregate,
        "span_steps": span,
        "max_group_overshoot": sel.max_group_overshoot,
        **sel.unit_options(),
        **constraints,
    }
    spec = p.output_spec
    tracks_traits = ExecutionTraits(scope="source", shape="map", state="bounded")
    write_traits = ExecutionTraits(
        scope="source", shape="sink", state="bounded", checkpoint="partition"
    )
    write = {
        "container": spec.container,
        "shard_length": spec.shard_length,
        "short_policy": spec.short_policy,
        "modalities": ", ".join(spec.modalities),
        "commit": "staged shards, checksummed manifest, dataset.commit.json last",
    }
    return [
        *stages,
        PlanStage("fill", _RANK, _selection_components(st), detail=fill),
        PlanStage("tracks", tracks_traits, detail={"min_track_seconds": sel.min_track_seconds}),
        PlanStage("write", write_traits, detail=write),
    ]


def compile_plan(p: RunSpec) -> PhysicalPlan:
    """The physical plan of ``p`` (see :mod:`kuration.pipeline.spec.plan`).

    Raises
    ------
    PipelineError
        A missing step, or an hours selection without an output spec.
    OutputSpecError
        Hours options or an output spec that do not fit (``preflight``).
    """
    st, sel = _require(p)
    if isinstance(sel, HoursSelection) and p.output_spec is None:
        raise PipelineError("an hours budget needs .output(spec)", step="explain")
    enrich = _seam_stage("enrich", "analyzer", p.analyzers, _POOL)
    stages = fuse_stages([*_input_stages(p, st), *_selection_stages(p, st, sel), enrich])
    mode = "hours" if isinstance(sel, HoursSelection) else "count"
    stages, warnings = plan_pool(
        stages,
        st,
        mode,
        p.opts.pool,
        streaming=p.opts.streaming,
        tie_break=getattr(sel, "tie_break", "name") if mode == "count" else "name",
    )
    if p.opts.streaming and mode == "hours":
        stages = _stream_stages(stages)
    for s in stages:
        if s.empty or s.runtime != REFERENCE_RUNTIME:
            continue
        warnings.append(f"{s.kind}: runs on the {REFERENCE_RUNTIME} runtime ({_REFERENCE[s.kind]})")
        for c in s.components:
            if not c.declared:
                warnings.append(
                    f"{s.kind}: {c.kind} {c.name!r} declares no execution_traits "
                    f"(planned as {c.traits.scope}/{c.traits.fusion})"
                )
    small = pool_too_small(p.opts, countable_sources(p.sources))
    if small is not None:  # the run keeps to the lead (execute decides it again, counted)
        p = p.with_options(workers=1)
    stages = _place(stages, p)
    note = auto_pool_note(p)
    notes = tuple(n for n in (small, note) if n is not None)
    return PhysicalPlan(mode, stages, tuple(warnings), p.opts.to_dict(), notes)


def _place(stages: tuple[PlanStage, ...], p: RunSpec) -> tuple[PlanStage, ...]:
    """Name the executor of each stage: the run's executor for the fused island that starts
    at ``read`` (when ``features`` is in it; on the disk pool each source is a task, read
    ahead by the lead for ``local``) and for ``tracks``/``write`` (when its encoder pickles;
    otherwise the lead writes, ``local``); ``driver`` (the lead process, whole-pool work)
    for everything else."""
    o = p.opts
    name = o.resolved_executor
    if o.streaming:  # the lead reads every source itself, one at a time, in both passes
        lead = "local (in the lead, one source at a time)"
        return tuple(
            dataclasses.replace(s, executor=lead)
            if s.runtime == STREAM_RUNTIME and s.kind in (*_ISLAND_KINDS, "tracks", "write")
            else s
            for s in stages
        )
    if name == "local":
        ex = "local (lead reads ahead, 1 scoring thread)"
    else:
        ex = f"{name} x{o.workers}" + _options_text(o.executor_options or {})
    read_island = next(s.island for s in stages if s.kind == "read")
    fused = read_island is not None and any(
        s.kind == "features" and s.island == read_island for s in stages
    )
    packed = bool(getattr(p.output_spec, "shared_files", False))  # packed files are written here
    writes_in_workers = name != "local" and not packed and encoder_pickles(p.encoder)

    def executor_of(s: PlanStage) -> str:
        if s.runtime == DISK_RUNTIME and s.kind in _ISLAND_KINDS:
            return ex  # local: the lead reads ahead, the thread scores and writes partitions
        if s.kind in ("tracks", "write"):
            return ex if writes_in_workers else "local (in the lead)"
        return ex if fused and s.island == read_island and s.kind in _ISLAND_KINDS else s.executor

    return tuple(dataclasses.replace(s, executor=executor_of(s)) for s in stages)


_ISLAND_KINDS = ("read", "segment", "features", "transforms")


def _options_text(options: Mapping[str, Any]) -> str:
    """How a plan names the executor's options: Ray's ``address`` as `` at ADDR``, any other
    as `` (key=value, ...)``."""
    rest = {k: v for k, v in options.items() if k != "address"}
    text = f" at {options['address']}" if "address" in options else ""
    return text + (f" ({', '.join(f'{k}={v}' for k, v in rest.items())})" if rest else "")
