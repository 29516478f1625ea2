"""kuration: curate multi-entity time series into verifiable training shards."""

from __future__ import annotations

__version__ = "0.1.0"

from .adapters import (
    InputAdapter,
    TimeseriesAdapter,
    get_adapter,
    register_adapter,
    registered_adapters,
)
from .adapters.curated import CuratedDatasetAdapter
from .binning import bin_segments, quantile_bins
from .buffer import WindowBatch, WindowBuffer, build_window
from .check import CheckResult, check_dataset
from .curate import (
    CurationResult,
    ExperimentResult,
    compare_strategies,
    curate,
    run_experiment,
    select_segments,
)
from .diff import compare_datasets
from .dsl import CompiledMetric, compile_metric
from .errors import (
    BudgetError,
    DataOrderWarning,
    DatasetExistsError,
    DatasetIntegrityError,
    DestinationError,
    EmptyPoolError,
    EmptySplitError,
    GroupCapError,
    JobError,
    KurationError,
    KurationWarning,
    MetricCompileError,
    OutputSpecError,
    SampleFetchError,
    SchemaError,
    SourceError,
    StrategyError,
)
from .features import FeatureEngine, register_metric, registered_metrics
from .filters import register_filter, registered_filters
from .inspect import InspectReport, inspect_dataset
from .job import load_job, run_job
from .output.containers import get_container, register_container, registered_containers
from .output.dataset import DatasetWriteResult, write_dataset
from .output.encoders import (
    OutputEncoder,
    PassthroughEncoder,
    get_encoder,
    register_encoder,
    registered_encoders,
)
from .output.loaders import Dataset, iter_shards, open_dataset, read_shard_arrays, shard_entries
from .output.spec import ModalitySpec, OutputSpec
from .output.track import Track, tracks_from_segment, tracks_from_ticks
from .output.writer import ShardWriter, write_track
from .plugins import load_plugins, plugin_failures
from .review import hours_selection_review
from .schema import FieldSpec, SchemaSpec
from .scoring import ScoringResult, score_sources
from .segment import Segment, Segmenter
from .select import apply_strategy, assign_splits, register_method, registered_methods
from .strategy import Strategy, load_strategy
from .tick import Tick, TickTable

__all__ = [
    "BudgetError",
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
    "ExperimentResult",
    "FeatureEngine",
    "FieldSpec",
    "GroupCapError",
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
    "PassthroughEncoder",
    "SampleFetchError",
    "SchemaError",
    "SchemaSpec",
    "ScoringResult",
    "Segment",
    "Segmenter",
    "ShardWriter",
    "SourceError",
    "Strategy",
    "StrategyError",
    "Tick",
    "TickTable",
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
