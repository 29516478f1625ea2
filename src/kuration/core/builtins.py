"""Every built-in component by name, as a dotted path, with the extra that installs its dependency.

A registry looks a built-in up here when its name is asked for and nothing has registered
it yet: it imports the module (whose import registers the component) and tries again, so
``{"adapter": {"type": "curated"}}`` works in a fresh process that never imported
:mod:`kuration.read.curated`.  Nothing here is imported eagerly, so naming a module of a
higher stage (``read`` for the ``curated`` adapter) adds no import edge: this table is
data, as fsspec's ``known_implementations`` is.

``BUILTINS[kind][name] = (path, extra)``: ``path`` is ``"module:attr"`` (the module's
import registers ``name``; ``attr`` is the implementation, for a reader); ``extra`` is the
``kuration-sdk[...]`` extra to install when the module's import fails, or ``""``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["BUILTINS", "Builtin", "builtins_of"]

#: ``(dotted path "module:attr", extra that installs its dependency or "")``
Builtin = tuple[str, str]

_TABLE: dict[str, dict[str, Builtin]] = {
    "adapter": {
        "timeseries": ("kuration.sources.timeseries:TimeseriesAdapter", ""),
        "timenet": ("kuration.sources.timenet:TimenetAdapter", ""),
        "video": ("kuration.sources.video:VideoAdapter", ""),
        "joined-media": ("kuration.sources.video:JoinedMediaAdapter", ""),
        "curated": ("kuration.read.curated:CuratedDatasetAdapter", ""),
    },
    "container": {
        "npz": ("kuration.output.containers:NpzContainer", ""),
        "json": ("kuration.output.containers:JsonContainer", ""),
        "hdf5": ("kuration.output.containers:Hdf5Container", "array"),
        "parquet": ("kuration.output.containers:ParquetContainer", ""),
    },
    "encoder": {
        "passthrough": ("kuration.output.encoders:PassthroughEncoder", ""),
    },
    "preset": {
        "npz-128-pad": ("kuration.output.presets:register_preset", ""),
    },
    "method": {
        name: (f"kuration.selection.methods:{attr}", "")
        for name, attr in {
            "uniform-bins": "UniformBins",
            "target-distribution": "TargetDistribution",
            "top-k": "TopK",
            "weighted": "Weighted",
            "filter": "FilterMethod",
            "k-center": "KCenter",
            "facility-location": "FacilityLocation",
            "importance": "ImportanceResampling",
        }.items()
    },
    "filter": {
        "predicate": ("kuration.selection.filters:Predicate", ""),
        "finite": ("kuration.selection.filters:Finite", ""),
        "source": ("kuration.selection.filters:SourceMatch", ""),
        "dedup": ("kuration.selection.dedup:ExactDedup", ""),
        "near_dedup": ("kuration.selection.dedup:NearDedup", ""),
    },
    "transform": {
        "motion_energy": ("kuration.metrics.media_transforms:MotionEnergy", ""),
    },
    "scorer": {
        "novelty": ("kuration.metrics.scorers:NoveltyScorer", "scorers"),
        "mutual_information": ("kuration.metrics.mutual_info:MutualInformationScorer", "scorers"),
    },
    "analyzer": {
        "audit": ("kuration.tools.analyzers:AuditAnalyzer", ""),
    },
    "executor": {
        "local": ("kuration.core.executors:LocalExecutor", ""),
        "process": ("kuration.core.executors:ProcessExecutor", ""),
        "ray": ("kuration.core.executors:RayExecutor", "ray"),
    },
}

#: kind -> name -> (dotted path, extra): read-only
BUILTINS: Mapping[str, Mapping[str, Builtin]] = MappingProxyType(
    {k: MappingProxyType(v) for k, v in _TABLE.items()}
)


def builtins_of(kind: str) -> Mapping[str, Builtin]:
    """The built-ins of ``kind`` (empty for a kind without any)."""
    return BUILTINS.get(kind, MappingProxyType({}))
