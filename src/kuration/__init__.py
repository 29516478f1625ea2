"""kuration: curate multi-entity time series into verifiable training shards.

The public names are listed in ``__all__``; all but the version and the
exception tree load on first use (PEP 562 ``__getattr__``), so ``import
kuration`` stays light (no pint registry, no TimeNet, no torch or matplotlib)
until a name is used.  ``from kuration import X`` works as before.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__
from .errors import (
    AdapterError,
    BudgetError,
    BudgetGranularityWarning,
    DataOrderWarning,
    DataRepairWarning,
    DatasetExistsError,
    DatasetIntegrityError,
    DestinationError,
    EmptyPoolError,
    EmptySplitError,
    EntityIdError,
    ExecutionTraitsError,
    ExecutorError,
    GroupCapError,
    InitError,
    JobError,
    KurationError,
    KurationWarning,
    MediaError,
    MemoryBudgetError,
    MetricCompileError,
    NonExclusiveLeaseWarning,
    OutputSpecError,
    OutputValueError,
    PipelineError,
    PluginError,
    PluginWarning,
    ReaderOptionError,
    RegistrationError,
    SampleFetchError,
    SchemaError,
    ScorerError,
    SnapCollisionWarning,
    SourceChangedError,
    SourceError,
    StrategyError,
    StreamingError,
    StreamOrderError,
    StrictJSONError,
    TimeRangeError,
    TransformError,
    UnknownModalityError,
    UnknownNameError,
    UnknownSplitError,
    UnsupportedURLError,
)

# module (relative to this package) -> the public names it provides
_LAZY_MODULES: dict[str, tuple[str, ...]] = {
    ".contracts.buffer": (
        "WindowBatch",
        "WindowBuffer",
        "build_window",
    ),
    ".contracts.media": (
        "FrameRef",
        "MediaColumn",
        "MediaProvider",
        "MediaSpec",
        "StreamInfo",
    ),
    ".contracts.schema": (
        "FieldSpec",
        "SchemaSpec",
    ),
    ".contracts.segment": (
        "Segment",
        "Segmenter",
    ),
    ".contracts.tick": (
        "Tick",
        "TickTable",
    ),
    ".contracts.track": (
        "Track",
        "tracks_from_segment",
        "tracks_from_ticks",
    ),
    ".core.executors": (
        "Executor",
        "LocalExecutor",
        "ProcessExecutor",
        "RayExecutor",
        "make_executor",
    ),
    ".core.plugins": (
        "load_plugins",
        "plugin_failures",
    ),
    ".core.traits": ("ExecutionTraits",),
    ".metrics.dsl": (
        "CompiledMetric",
        "compile_metric",
    ),
    ".metrics.features": (
        "FeatureEngine",
        "register_metric",
        "registered_metrics",
    ),
    ".metrics.media_transforms": ("MotionEnergy",),
    ".metrics.mutual_info": (
        "MutualInformationScorer",
        "ksg_mutual_information",
    ),
    ".metrics.scorers": (
        "NoveltyScorer",
        "ScorerContext",
        "SegmentScorer",
        "register_scorer",
        "registered_scorers",
    ),
    ".metrics.transforms": (
        "BatchTransform",
        "MediaRequest",
        "TransformContext",
        "register_transform",
        "registered_transforms",
    ),
    ".output.containers": (
        "get_container",
        "register_container",
        "registered_containers",
    ),
    ".output.encoders": (
        "OutputEncoder",
        "PassthroughEncoder",
        "get_encoder",
        "register_encoder",
        "registered_encoders",
    ),
    ".output.presets": (
        "OutputPreset",
        "get_preset",
        "register_preset",
        "registered_presets",
    ),
    ".output.spec": (
        "ModalitySpec",
        "OutputSpec",
    ),
    ".output.writer": (
        "ShardWriter",
        "write_track",
    ),
    ".pipeline.api.count": (
        "CurationResult",
        "ExperimentResult",
        "compare_strategies",
        "curate",
        "run_experiment",
        "select_segments",
    ),
    ".pipeline.api.entry": (
        "run_job",
        "write_dataset",
    ),
    ".pipeline.disk.checkpoint": ("StageCheckpoint",),
    ".pipeline.disk.pool": ("DiskSelection",),
    ".pipeline.dispatch.execute": ("PipelineRun",),
    ".pipeline.dispatch.hours": ("DatasetWriteResult",),
    ".pipeline.spec.budget": (
        "MemoryEstimate",
        "estimate_peak",
    ),
    ".onboard.init": (
        "InitResult",
        "init_job",
    ),
    ".pipeline.spec.job": ("load_job",),
    ".pipeline.api.operators": (
        "Operator",
        "get_operator",
        "operators_markdown",
        "register_operator",
        "registered_operators",
    ),
    ".pipeline.api.pipeline": (
        "CountSelection",
        "HoursSelection",
        "Pipeline",
        "PipelineOptions",
    ),
    ".pipeline.spec.plan": (
        "PhysicalPlan",
        "PlanComponent",
        "PlanStage",
        "StageTelemetry",
    ),
    ".pipeline.run.scorer_pass": ("run_scorers",),
    ".pipeline.disk.segment_batch": ("SegmentBatch",),
    ".pipeline.run.scoring": (
        "ScoringResult",
        "score_sources",
    ),
    ".pipeline.run.strategy": ("load_strategy",),
    ".read.curated": ("CuratedDatasetAdapter",),
    ".read.loaders": (
        "Dataset",
        "iter_shards",
        "open_dataset",
        "read_shard_arrays",
        "shard_entries",
    ),
    ".read.table": ("FeatureInfo",),
    ".read.windows": (
        "ModelWindows",
        "model_windows",
    ),
    ".selection.binning": (
        "bin_segments",
        "quantile_bins",
    ),
    ".selection.dedup": (
        "window_digest",
        "window_payload",
    ),
    ".selection.filters": (
        "register_filter",
        "registered_filters",
    ),
    ".selection.select": (
        "apply_strategy",
        "assign_splits",
        "register_method",
        "registered_methods",
    ),
    ".selection.strategy": ("Strategy",),
    ".sources.stream": ("TickStream",),
    ".sources": (
        "InputAdapter",
        "JoinedMediaAdapter",
        "TimeseriesAdapter",
        "VideoAdapter",
        "get_adapter",
        "get_media_provider",
        "register_adapter",
        "register_media_provider",
        "registered_adapters",
        "registered_media_providers",
    ),
    ".sources.video": ("motion_energy",),
    ".tools.analyzers": (
        "AnalysisSubject",
        "Analyzer",
        "get_analyzer",
        "register_analyzer",
        "registered_analyzers",
    ),
    ".tools.check": (
        "CheckResult",
        "check_dataset",
    ),
    ".tools.diff": ("compare_datasets",),
    ".tools.inspect": (
        "InspectReport",
        "inspect_dataset",
    ),
    ".tools.review": ("hours_selection_review",),
}
_LAZY: dict[str, str] = {n: m for m, names in _LAZY_MODULES.items() for n in names}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'kuration' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later look-ups skip this hook
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # the static view of the same names, for type checkers
    from .contracts.buffer import WindowBatch, WindowBuffer, build_window
    from .contracts.media import FrameRef, MediaColumn, MediaProvider, MediaSpec, StreamInfo
    from .contracts.schema import FieldSpec, SchemaSpec
    from .contracts.segment import Segment, Segmenter
    from .contracts.tick import Tick, TickTable
    from .contracts.track import Track, tracks_from_segment, tracks_from_ticks
    from .core.executors import (
        Executor,
        LocalExecutor,
        ProcessExecutor,
        RayExecutor,
        make_executor,
    )
    from .core.plugins import load_plugins, plugin_failures
    from .core.traits import ExecutionTraits
    from .metrics.dsl import CompiledMetric, compile_metric
    from .metrics.features import FeatureEngine, register_metric, registered_metrics
    from .metrics.media_transforms import MotionEnergy
    from .metrics.mutual_info import MutualInformationScorer, ksg_mutual_information
    from .metrics.scorers import (
        NoveltyScorer,
        ScorerContext,
        SegmentScorer,
        register_scorer,
        registered_scorers,
    )
    from .metrics.transforms import (
        BatchTransform,
        MediaRequest,
        TransformContext,
        register_transform,
        registered_transforms,
    )
    from .onboard.init import InitResult, init_job
    from .output.containers import get_container, register_container, registered_containers
    from .output.encoders import (
        OutputEncoder,
        PassthroughEncoder,
        get_encoder,
        register_encoder,
        registered_encoders,
    )
    from .output.presets import OutputPreset, get_preset, register_preset, registered_presets
    from .output.spec import ModalitySpec, OutputSpec
    from .output.writer import ShardWriter, write_track
    from .pipeline.api.count import (
        CurationResult,
        ExperimentResult,
        compare_strategies,
        curate,
        run_experiment,
        select_segments,
    )
    from .pipeline.api.entry import run_job, write_dataset
    from .pipeline.api.operators import (
        Operator,
        get_operator,
        operators_markdown,
        register_operator,
        registered_operators,
    )
    from .pipeline.api.pipeline import CountSelection, HoursSelection, Pipeline, PipelineOptions
    from .pipeline.disk.checkpoint import StageCheckpoint
    from .pipeline.disk.pool import DiskSelection
    from .pipeline.disk.segment_batch import SegmentBatch
    from .pipeline.dispatch.execute import PipelineRun
    from .pipeline.dispatch.hours import DatasetWriteResult
    from .pipeline.run.scorer_pass import run_scorers
    from .pipeline.run.scoring import ScoringResult, score_sources
    from .pipeline.run.strategy import load_strategy
    from .pipeline.spec.budget import MemoryEstimate, estimate_peak
    from .pipeline.spec.job import load_job
    from .pipeline.spec.plan import PhysicalPlan, PlanComponent, PlanStage, StageTelemetry
    from .read.curated import CuratedDatasetAdapter
    from .read.loaders import Dataset, iter_shards, open_dataset, read_shard_arrays, shard_entries
    from .read.table import FeatureInfo
    from .read.windows import ModelWindows, model_windows
    from .selection.binning import bin_segments, quantile_bins
    from .selection.dedup import window_digest, window_payload
    from .selection.filters import register_filter, registered_filters
    from .selection.select import apply_strategy, assign_splits, register_method, registered_methods
    from .selection.strategy import Strategy
    from .sources import (
        InputAdapter,
        JoinedMediaAdapter,
        TimeseriesAdapter,
        VideoAdapter,
        get_adapter,
        get_media_provider,
        register_adapter,
        register_media_provider,
        registered_adapters,
        registered_media_providers,
    )
    from .sources.stream import TickStream
    from .sources.video import motion_energy
    from .tools.analyzers import (
        AnalysisSubject,
        Analyzer,
        get_analyzer,
        register_analyzer,
        registered_analyzers,
    )
    from .tools.check import CheckResult, check_dataset
    from .tools.diff import compare_datasets
    from .tools.inspect import InspectReport, inspect_dataset
    from .tools.review import hours_selection_review

__all__ = [
    "AdapterError",
    "AnalysisSubject",
    "Analyzer",
    "BatchTransform",
    "BudgetError",
    "BudgetGranularityWarning",
    "CheckResult",
    "CompiledMetric",
    "CountSelection",
    "CuratedDatasetAdapter",
    "CurationResult",
    "DataOrderWarning",
    "DataRepairWarning",
    "Dataset",
    "DatasetExistsError",
    "DatasetIntegrityError",
    "DatasetWriteResult",
    "DestinationError",
    "DiskSelection",
    "EmptyPoolError",
    "EmptySplitError",
    "EntityIdError",
    "ExecutionTraits",
    "ExecutionTraitsError",
    "Executor",
    "ExecutorError",
    "ExperimentResult",
    "FeatureEngine",
    "FeatureInfo",
    "FieldSpec",
    "FrameRef",
    "GroupCapError",
    "HoursSelection",
    "InitError",
    "InitResult",
    "InputAdapter",
    "InspectReport",
    "JobError",
    "JoinedMediaAdapter",
    "KurationError",
    "KurationWarning",
    "LocalExecutor",
    "MediaColumn",
    "MediaError",
    "MediaProvider",
    "MediaRequest",
    "MediaSpec",
    "MemoryBudgetError",
    "MemoryEstimate",
    "MetricCompileError",
    "ModalitySpec",
    "ModelWindows",
    "MotionEnergy",
    "MutualInformationScorer",
    "NonExclusiveLeaseWarning",
    "NoveltyScorer",
    "Operator",
    "OutputEncoder",
    "OutputPreset",
    "OutputSpec",
    "OutputSpecError",
    "OutputValueError",
    "PassthroughEncoder",
    "PhysicalPlan",
    "Pipeline",
    "PipelineError",
    "PipelineOptions",
    "PipelineRun",
    "PlanComponent",
    "PlanStage",
    "PluginError",
    "PluginWarning",
    "ProcessExecutor",
    "RayExecutor",
    "ReaderOptionError",
    "RegistrationError",
    "SampleFetchError",
    "SchemaError",
    "SchemaSpec",
    "ScorerContext",
    "ScorerError",
    "ScoringResult",
    "Segment",
    "SegmentBatch",
    "SegmentScorer",
    "Segmenter",
    "ShardWriter",
    "SnapCollisionWarning",
    "SourceChangedError",
    "SourceError",
    "StageCheckpoint",
    "StageTelemetry",
    "Strategy",
    "StrategyError",
    "StreamInfo",
    "StreamOrderError",
    "StreamingError",
    "StrictJSONError",
    "Tick",
    "TickStream",
    "TickTable",
    "TimeRangeError",
    "TimeseriesAdapter",
    "Track",
    "TransformContext",
    "TransformError",
    "UnknownModalityError",
    "UnknownNameError",
    "UnknownSplitError",
    "UnsupportedURLError",
    "VideoAdapter",
    "WindowBatch",
    "WindowBuffer",
    "__version__",
    "apply_strategy",
    "assign_splits",
    "bin_segments",
    "build_window",
    "check_dataset",
    "compare_datasets",
    "compare_strategies",
    "compile_metric",
    "curate",
    "estimate_peak",
    "get_adapter",
    "get_analyzer",
    "get_container",
    "get_encoder",
    "get_media_provider",
    "get_operator",
    "get_preset",
    "hours_selection_review",
    "init_job",
    "inspect_dataset",
    "iter_shards",
    "ksg_mutual_information",
    "load_job",
    "load_plugins",
    "load_strategy",
    "make_executor",
    "model_windows",
    "motion_energy",
    "open_dataset",
    "operators_markdown",
    "plugin_failures",
    "quantile_bins",
    "read_shard_arrays",
    "register_adapter",
    "register_analyzer",
    "register_container",
    "register_encoder",
    "register_filter",
    "register_media_provider",
    "register_method",
    "register_metric",
    "register_operator",
    "register_preset",
    "register_scorer",
    "register_transform",
    "registered_adapters",
    "registered_analyzers",
    "registered_containers",
    "registered_encoders",
    "registered_filters",
    "registered_media_providers",
    "registered_methods",
    "registered_metrics",
    "registered_operators",
    "registered_presets",
    "registered_scorers",
    "registered_transforms",
    "run_experiment",
    "run_job",
    "run_scorers",
    "score_sources",
    "select_segments",
    "shard_entries",
    "tracks_from_segment",
    "tracks_from_ticks",
    "window_digest",
    "window_payload",
    "write_dataset",
    "write_track",
]
