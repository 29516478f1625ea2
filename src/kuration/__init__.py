"""kuration: curate multi-entity time series into verifiable training shards.

The top level holds the user's API: the specs, the sources, :class:`Pipeline` and the
function-style entry points, the read side and the dataset tools, plus the roots of the
exception tree.  What a plugin author needs (base classes, ``register_*`` /
``registered_*`` / ``get_*``, executors, plugin loading) is in :mod:`kuration.extend`;
every exception and warning class is in :mod:`kuration.errors`; engine internals stay in
their own modules.

All but the version and the exception roots load on first use (PEP 562 ``__getattr__``),
so ``import kuration`` stays light (no pint registry, no TimeNet, no torch or matplotlib)
until a name is used.  A name the top level exported in 0.1.0 and no longer does still
resolves, with a ``DeprecationWarning`` naming its new module.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

from ._lazy import lazy_exports
from ._version import __version__
from .errors import KurationError, KurationWarning

# module (relative to this package) -> the public names it provides
_LAZY_MODULES: dict[str, tuple[str, ...]] = {
    ".contracts.media": ("MediaSpec",),
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
    ".contracts.track": ("Track",),
    ".onboard.init": (
        "InitResult",
        "init_job",
    ),
    ".output.spec": (
        "ModalitySpec",
        "OutputSpec",
    ),
    ".output.writer": ("write_track",),
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
    ".pipeline.api.pipeline": (
        "CountSelection",
        "HoursSelection",
        "Pipeline",
        "PipelineOptions",
    ),
    ".pipeline.dispatch.hours": ("DatasetWriteResult",),
    ".pipeline.run.scoring": (
        "ScoringResult",
        "score_sources",
    ),
    ".pipeline.run.strategy": ("load_strategy",),
    ".pipeline.spec.job": ("load_job",),
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
    ".selection.strategy": ("Strategy",),
    ".sources": (
        "JoinedMediaAdapter",
        "TimeseriesAdapter",
        "VideoAdapter",
    ),
    ".sources.stream": ("TickStream",),
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
_LAZY, _lazy_getattr = lazy_exports(__name__, globals(), _LAZY_MODULES)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return _lazy_getattr(name)
    from ._moved import WHERE

    module = WHERE.get(name)
    if module is None:
        errors = importlib.import_module(".errors", __name__)
        hint = f"; it is kuration.errors.{name}" if name in errors.__all__ else ""
        raise AttributeError(f"module 'kuration' has no attribute {name!r}{hint}")
    # not cached, so every use of the old path warns
    warnings.warn(
        f"kuration.{name} moved to {module}.{name}; import it from there",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # the static view of the same names, for type checkers
    from .contracts.media import MediaSpec
    from .contracts.schema import FieldSpec, SchemaSpec
    from .contracts.segment import Segment, Segmenter
    from .contracts.tick import Tick, TickTable
    from .contracts.track import Track
    from .onboard.init import InitResult, init_job
    from .output.spec import ModalitySpec, OutputSpec
    from .output.writer import write_track
    from .pipeline.api.count import (
        CurationResult,
        ExperimentResult,
        compare_strategies,
        curate,
        run_experiment,
        select_segments,
    )
    from .pipeline.api.entry import run_job, write_dataset
    from .pipeline.api.pipeline import CountSelection, HoursSelection, Pipeline, PipelineOptions
    from .pipeline.dispatch.hours import DatasetWriteResult
    from .pipeline.run.scoring import ScoringResult, score_sources
    from .pipeline.run.strategy import load_strategy
    from .pipeline.spec.job import load_job
    from .read.curated import CuratedDatasetAdapter
    from .read.loaders import Dataset, iter_shards, open_dataset, read_shard_arrays, shard_entries
    from .read.table import FeatureInfo
    from .read.windows import ModelWindows, model_windows
    from .selection.strategy import Strategy
    from .sources import JoinedMediaAdapter, TimeseriesAdapter, VideoAdapter
    from .sources.stream import TickStream
    from .tools.check import CheckResult, check_dataset
    from .tools.diff import compare_datasets
    from .tools.inspect import InspectReport, inspect_dataset
    from .tools.review import hours_selection_review

__all__ = [
    "CheckResult",
    "CountSelection",
    "CuratedDatasetAdapter",
    "CurationResult",
    "Dataset",
    "DatasetWriteResult",
    "ExperimentResult",
    "FeatureInfo",
    "FieldSpec",
    "HoursSelection",
    "InitResult",
    "InspectReport",
    "JoinedMediaAdapter",
    "KurationError",
    "KurationWarning",
    "MediaSpec",
    "ModalitySpec",
    "ModelWindows",
    "OutputSpec",
    "Pipeline",
    "PipelineOptions",
    "SchemaSpec",
    "ScoringResult",
    "Segment",
    "Segmenter",
    "Strategy",
    "Tick",
    "TickStream",
    "TickTable",
    "TimeseriesAdapter",
    "Track",
    "VideoAdapter",
    "__version__",
    "check_dataset",
    "compare_datasets",
    "compare_strategies",
    "curate",
    "hours_selection_review",
    "init_job",
    "inspect_dataset",
    "iter_shards",
    "load_job",
    "load_strategy",
    "model_windows",
    "open_dataset",
    "read_shard_arrays",
    "run_experiment",
    "run_job",
    "score_sources",
    "select_segments",
    "shard_entries",
    "write_dataset",
    "write_track",
]
