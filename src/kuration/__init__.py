"""kuration: curate multi-entity time series into verifiable training shards."""

from __future__ import annotations

from ._version import __version__
from .contracts.buffer import WindowBatch, WindowBuffer, build_window
from .contracts.schema import FieldSpec, SchemaSpec
from .contracts.segment import Segment, Segmenter
from .contracts.tick import Tick, TickTable
from .contracts.track import Track, tracks_from_segment, tracks_from_ticks
from .core.plugins import load_plugins, plugin_failures
from .errors import (
    BudgetError,
    BudgetGranularityWarning,
    DataOrderWarning,
    DatasetExistsError,
    DatasetIntegrityError,
    DestinationError,
    EmptyPoolError,
    EmptySplitError,
    EntityIdError,
    GroupCapError,
    InitError,
    JobError,
    KurationError,
    KurationWarning,
    MetricCompileError,
    OutputSpecError,
    OutputValueError,
    SampleFetchError,
    SchemaError,
    SnapCollisionWarning,
    SourceError,
    StrategyError,
    TimeRangeError,
)
from .metrics.dsl import CompiledMetric, compile_metric
from .metrics.features import FeatureEngine, register_metric, registered_metrics
from .output.containers import get_container, register_container, registered_containers
from .output.encoders import (
    OutputEncoder,
    PassthroughEncoder,
    get_encoder,
    register_encoder,
    registered_encoders,
)
from .output.spec import ModalitySpec, OutputSpec
from .output.writer import ShardWriter, write_track
from .pipeline.count import (
    CurationResult,
    ExperimentResult,
    compare_strategies,
    curate,
    run_experiment,
    select_segments,
)
from .pipeline.hours import DatasetWriteResult, write_dataset
from .pipeline.init import InitResult, init_job
from .pipeline.job import load_job, run_job
from .pipeline.scoring import ScoringResult, score_sources
from .pipeline.strategy import load_strategy
from .read.curated import CuratedDatasetAdapter
from .read.loaders import Dataset, iter_shards, open_dataset, read_shard_arrays, shard_entries
from .selection.binning import bin_segments, quantile_bins
from .selection.filters import register_filter, registered_filters
from .selection.select import apply_strategy, assign_splits, register_method, registered_methods
from .selection.strategy import Strategy
from .sources import (
    InputAdapter,
    TimeseriesAdapter,
    get_adapter,
    register_adapter,
    registered_adapters,
)
from .tools.check import CheckResult, check_dataset
from .tools.diff import compare_datasets
from .tools.inspect import InspectReport, inspect_dataset
from .tools.review import hours_selection_review

__all__ = [
    "BudgetError",
    "BudgetGranularityWarning",
    "CheckResult",
    "CompiledMetric",
    "CuratedDatasetAdapter",
    "CurationResult",
    "DataOrderWarning",
    "Dataset",
    "DatasetExistsError",
    "DatasetIntegrityError",
    "DatasetWriteResult",
    "DestinationError",
    "EmptyPoolError",
    "EmptySplitError",
    "EntityIdError",
    "ExperimentResult",
    "FeatureEngine",
    "FieldSpec",
    "GroupCapError",
    "InitError",
    "InitResult",
    "InputAdapter",
    "InspectReport",
    "JobError",
    "KurationError",
    "KurationWarning",
    "MetricCompileError",
    "ModalitySpec",
    "OutputEncoder",
    "OutputSpec",
    "OutputSpecError",
    "OutputValueError",
    "PassthroughEncoder",
    "SampleFetchError",
    "SchemaError",
    "SchemaSpec",
    "ScoringResult",
    "Segment",
    "Segmenter",
    "ShardWriter",
    "SnapCollisionWarning",
    "SourceError",
    "Strategy",
    "StrategyError",
    "Tick",
    "TickTable",
    "TimeRangeError",
    "TimeseriesAdapter",
    "Track",
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
    "get_adapter",
    "get_container",
    "get_encoder",
    "hours_selection_review",
    "init_job",
    "inspect_dataset",
    "iter_shards",
    "load_job",
    "load_plugins",
    "load_strategy",
    "open_dataset",
    "plugin_failures",
    "quantile_bins",
    "read_shard_arrays",
    "register_adapter",
    "register_container",
    "register_encoder",
    "register_filter",
    "register_method",
    "register_metric",
    "registered_adapters",
    "registered_containers",
    "registered_encoders",
    "registered_filters",
    "registered_methods",
    "registered_metrics",
    "run_experiment",
    "run_job",
    "score_sources",
    "select_segments",
    "shard_entries",
    "tracks_from_segment",
    "tracks_from_ticks",
    "write_dataset",
    "write_track",
]
