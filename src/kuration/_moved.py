"""Names the top level of ``kuration`` exported in 0.1.0, and where each lives now.

``kuration.__getattr__`` still resolves them, with a ``DeprecationWarning`` naming the new
module, so code written against the old surface keeps running while it is updated; they are
not in ``kuration.__all__`` or ``dir(kuration)``.
"""

from __future__ import annotations

from .extend import __all__ as _SEAMS

# every extension seam of ``kuration.extend`` was a top-level name in 0.1.0: its list is
# that module's own, not a copy of it
MOVED: dict[str, tuple[str, ...]] = {
    "kuration.extend": tuple(_SEAMS),
    "kuration.errors": (
        "AdapterError",
        "BudgetError",
        "BudgetGranularityWarning",
        "DataOrderWarning",
        "DataRepairWarning",
        "DatasetExistsError",
        "DatasetIntegrityError",
        "DestinationError",
        "EmptyPoolError",
        "EmptySplitError",
        "EntityIdError",
        "ExecutionTraitsError",
        "ExecutorError",
        "GroupCapError",
        "InitError",
        "JobError",
        "MediaError",
        "MemoryBudgetError",
        "MetricCompileError",
        "NonExclusiveLeaseWarning",
        "OutputSpecError",
        "OutputValueError",
        "PipelineError",
        "PluginError",
        "PluginWarning",
        "ReaderOptionError",
        "RegistrationError",
        "SampleFetchError",
        "SchemaError",
        "ScorerError",
        "SnapCollisionWarning",
        "SourceError",
        "StrategyError",
        "StreamOrderError",
        "StreamingError",
        "StrictJSONError",
        "TimeRangeError",
        "TransformError",
        "UnknownModalityError",
        "UnknownNameError",
        "UnknownSplitError",
        "UnsupportedURLError",
    ),
    "kuration.metrics.mutual_info": ("ksg_mutual_information",),
    "kuration.pipeline.api.operators": ("operators_markdown",),
    "kuration.pipeline.disk.checkpoint": ("StageCheckpoint",),
    "kuration.pipeline.disk.pool": ("DiskSelection",),
    "kuration.pipeline.disk.segment_batch": ("SegmentBatch",),
    "kuration.pipeline.dispatch.execute": ("PipelineRun",),
    "kuration.pipeline.run.scorer_pass": ("run_scorers",),
    "kuration.pipeline.spec.budget": (
        "MemoryEstimate",
        "estimate_peak",
    ),
    "kuration.pipeline.spec.plan": (
        "PhysicalPlan",
        "PlanComponent",
        "PlanStage",
        "StageTelemetry",
    ),
    "kuration.selection.binning": (
        "bin_segments",
        "quantile_bins",
    ),
    "kuration.selection.dedup": (
        "window_digest",
        "window_payload",
    ),
    "kuration.selection.select": (
        "apply_strategy",
        "assign_splits",
    ),
    "kuration.sources.video": ("motion_energy",),
}
WHERE: dict[str, str] = {n: module for module, names in MOVED.items() for n in names}
