"""HoursRun: the state of one hours run, read and filled by the named steps (:mod:`.steps`).

Its own module so that the staging modules, which the steps call, can name the
type without importing the steps.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...contracts.schema import SchemaSpec
from ...contracts.segment import Segmenter
from ...core.executors import Executor
from ...core.progress import ProgressCallback
from ...output.commit import Journal
from ...output.spec import OutputSpec
from ...selection.fill import Candidate, FillResult
from ...selection.strategy import Strategy
from ...sources.base import InputAdapter
from ..spec.logical import HoursSelection, PipelineOptions
from ..spec.plan import PhysicalPlan, StageTelemetry
from ..spec.runspec import RunSpec
from .scoring import ScoringResult

__all__ = ["HoursRun", "Planned"]


Planned = tuple[str, Candidate, list[dict[str, Any]]]


@dataclass
class HoursRun:
    """Everything one hours run reads (set before the first step) and builds (step by step).

    The first block is the run as planned: its :class:`~..spec.runspec.RunSpec` (the
    components, the hours selection :attr:`sel`, the options :attr:`opts`), the resolved
    sources, the plan and what the plan or the call resolved (``span_steps``, ``resume``,
    ``force``, the disk pool's ``index_bytes``); nothing in it is checked again.  The rest
    starts empty and each step fills its part.  ``telemetry`` collects one entry per
    executed step.
    """

    root: Path
    runspec: RunSpec
    sources: list[str]
    plan: PhysicalPlan | None
    encoder: Any  # the spec's, or a PassthroughEncoder
    group_fn: Callable[[str], str | None] | None
    span_steps: int | None = None  # the span length the plan's fill stage resolved
    resume: bool = False
    force: bool = False
    index_bytes: int | None = None  # the disk pool's index memory, when a budget chose it
    executor: Executor | None = None  # set for the run's duration (scoring and staging)
    disk: Any = None  # the disk runtime's state (kuration.pipeline.disk.hours), if it runs the pool
    started: str = ""
    scoring: ScoringResult | None = None
    edges: Any = None
    # a CandidateTable, or the disk runtime's CandidateStore (no Sequence: rows stay on disk)
    candidates: Any = field(default_factory=list)
    too_short: int = 0
    short_spans: int = 0  # candidates shorter than min_span_seconds (dropped)
    split_report: dict[str, Any] | None = None  # with a split rule (spec.split_rules)
    empty_spans: int = 0  # spans where the entity is never present (no candidates)
    groups: dict[str, str] = field(default_factory=dict)
    split_of: dict[str, str] = field(default_factory=dict)
    fill: FillResult | None = None
    overshoot: float | None = None
    tag_names: list[str] | None = None
    use_tags: bool = False
    run: dict[str, Any] = field(default_factory=dict)
    fingerprint: str = ""
    unidentified: Any = None
    admitted: list[Planned] = field(default_factory=list)
    binding: dict[str, Any] = field(default_factory=dict)
    trusted: dict[str, dict[str, Any]] = field(default_factory=dict)
    staged: dict[str, dict[str, Any]] = field(default_factory=dict)
    resume_notes: list[str] = field(default_factory=list)
    prev: dict[str, Any] | None = None
    journal: Journal | None = None
    entries: list[dict[str, Any]] = field(default_factory=list)
    to_move: list[str] = field(default_factory=list)
    reused: int = 0
    rebuilt: int = 0
    partitions: int = 0
    published: bool = False
    packed_files: list[dict[str, Any]] = field(default_factory=list)
    # layout 'lerobot' with cameras: how many videos were remuxed and re-encoded
    lerobot_videos: dict[str, Any] | None = None
    manifest: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    payload: dict[str, bytes] = field(default_factory=dict)  # encoded documents, by file name
    records: dict[str, bytes] = field(default_factory=dict)  # encoded commit records, by state
    telemetry: list[StageTelemetry] = field(default_factory=list)

    @property
    def hz(self) -> float:
        return float(self.schema.sample_hz)

    @property
    def sel(self) -> HoursSelection:
        """The run's hours selection (budgets, fill and span options)."""
        sel = self.runspec.selection
        assert isinstance(sel, HoursSelection)
        return sel

    @property
    def opts(self) -> PipelineOptions:
        """The run's execution options (seed, workers, executor, on_error, durable, ...)."""
        return self.runspec.opts

    @property
    def schema(self) -> SchemaSpec:
        assert self.runspec.schema is not None
        return self.runspec.schema

    @property
    def adapter(self) -> InputAdapter:
        assert self.runspec.adapter is not None
        return self.runspec.adapter

    @property
    def segmenter(self) -> Segmenter:
        assert self.runspec.segmenter is not None
        return self.runspec.segmenter

    @property
    def strategy(self) -> Strategy:
        assert self.runspec.strategy_ is not None
        return self.runspec.strategy_

    @property
    def spec(self) -> OutputSpec:
        """The output spec."""
        assert self.runspec.output_spec is not None
        return self.runspec.output_spec

    @property
    def progress(self) -> ProgressCallback | None:
        return self.opts.progress

    @property
    def job(self) -> Mapping[str, Any] | None:
        return self.runspec.job

    @property
    def plugins(self) -> list[str]:
        return list(self.runspec.plugin_modules)

    @property
    def include_entry_points(self) -> bool:
        return self.runspec.include_entry_points

    @property
    def resume_block(self) -> dict[str, Any]:
        return {
            "requested": bool(self.resume),
            "reused_shards": self.reused,
            "rebuilt_shards": self.rebuilt,
            "notes": self.resume_notes,
        }

    def pool(self) -> ScoringResult:
        assert self.scoring is not None
        return self.scoring

    def filled(self) -> FillResult:
        assert self.fill is not None
        return self.fill
