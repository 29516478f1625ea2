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
from .binning import bin_segments, quantile_bins
from .buffer import WindowBuffer, build_window
from .dsl import CompiledMetric, compile_metric
from .errors import (
    DataOrderWarning,
    DatasetExistsError,
    DatasetIntegrityError,
    EmptyPoolError,
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
from .inspect import InspectReport, inspect_dataset
from .job import load_job, run_job
from .output.containers import get_container, register_container, registered_containers
from .output.dataset import DatasetWriteResult, write_dataset
from .output.loaders import iter_shards, open_dataset, read_shard_arrays, shard_entries
from .output.spec import ModalitySpec, OutputSpec
from .output.track import Track, tracks_from_ticks
from .output.writer import ShardWriter, write_track
from .schema import FieldSpec, SchemaSpec
from .scoring import ScoringResult, score_sources
from .segment import Segment, Segmenter
from .select import assign_splits, register_method, registered_methods
from .strategy import Strategy, load_strategy
from .tick import Tick, TickTable

__all__ = [
    "CompiledMetric",
    "DataOrderWarning",
    "DatasetExistsError",
    "DatasetIntegrityError",
    "DatasetWriteResult",
    "EmptyPoolError",
    "FeatureEngine",
    "FieldSpec",
    "InputAdapter",
    "InspectReport",
    "JobError",
    "KurationError",
    "KurationWarning",
    "MetricCompileError",
    "ModalitySpec",
    "OutputSpec",
    "OutputSpecError",
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
    "WindowBuffer",
    "__version__",
    "assign_splits",
    "bin_segments",
    "build_window",
    "compile_metric",
    "get_adapter",
    "get_container",
    "inspect_dataset",
    "iter_shards",
    "load_job",
    "load_strategy",
    "open_dataset",
    "quantile_bins",
    "read_shard_arrays",
    "register_adapter",
    "register_container",
    "register_method",
    "register_metric",
    "registered_adapters",
    "registered_containers",
    "registered_methods",
    "registered_metrics",
    "run_job",
    "score_sources",
    "shard_entries",
    "tracks_from_ticks",
    "write_dataset",
    "write_track",
]
