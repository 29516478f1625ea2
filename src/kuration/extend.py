"""The extension seams: what a plugin author subclasses, registers and looks up.

``kuration`` itself holds the user's API; this module gathers the base classes and
contexts of each seam (input adapters, media providers, transforms, scorers, metrics,
encoders, containers, presets, analyzers, operators, executors), their ``register_*`` /
``registered_*`` / ``get_*`` functions and plugin loading.  Names load on first use, as
in :mod:`kuration`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_exports

# module -> the public names it provides
_LAZY_MODULES: dict[str, tuple[str, ...]] = {
    "kuration.contracts.buffer": (
        "WindowBatch",
        "WindowBuffer",
        "build_window",
    ),
    "kuration.contracts.media": (
        "FrameRef",
        "MediaColumn",
        "MediaProvider",
        "StreamInfo",
    ),
    "kuration.contracts.track": (
        "tracks_from_segment",
        "tracks_from_ticks",
    ),
    "kuration.core.executors": (
        "Executor",
        "LocalExecutor",
        "ProcessExecutor",
        "RayExecutor",
        "make_executor",
    ),
    "kuration.core.plugins": (
        "load_plugins",
        "plugin_failures",
    ),
    "kuration.core.traits": ("ExecutionTraits",),
    "kuration.metrics.dsl": (
        "CompiledMetric",
        "compile_metric",
    ),
    "kuration.metrics.features": (
        "FeatureEngine",
        "register_metric",
        "registered_metrics",
    ),
    "kuration.metrics.media_transforms": ("MotionEnergy",),
    "kuration.metrics.mutual_info": ("MutualInformationScorer",),
    "kuration.metrics.scorers": (
        "NoveltyScorer",
        "ScorerContext",
        "SegmentScorer",
        "register_scorer",
        "registered_scorers",
    ),
    "kuration.metrics.transforms": (
        "BatchTransform",
        "MediaRequest",
        "TransformContext",
        "register_transform",
        "registered_transforms",
    ),
    "kuration.output.containers": (
        "get_container",
        "register_container",
        "registered_containers",
    ),
    "kuration.output.encoders": (
        "OutputEncoder",
        "PassthroughEncoder",
        "get_encoder",
        "register_encoder",
        "registered_encoders",
    ),
    "kuration.output.presets": (
        "OutputPreset",
        "get_preset",
        "register_preset",
        "registered_presets",
    ),
    "kuration.output.writer": ("ShardWriter",),
    "kuration.pipeline.api.operators": (
        "Operator",
        "get_operator",
        "register_operator",
        "registered_operators",
    ),
    "kuration.selection.filters": (
        "register_filter",
        "registered_filters",
    ),
    "kuration.selection.select": (
        "register_method",
        "registered_methods",
    ),
    "kuration.sources": (
        "InputAdapter",
        "get_adapter",
        "get_media_provider",
        "register_adapter",
        "register_media_provider",
        "registered_adapters",
        "registered_media_providers",
    ),
    "kuration.tools.analyzers": (
        "AnalysisSubject",
        "Analyzer",
        "get_analyzer",
        "register_analyzer",
        "registered_analyzers",
    ),
}
_LAZY, __getattr__ = lazy_exports(__name__, globals(), _LAZY_MODULES)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # the static view of the same names, for type checkers
    from kuration.contracts.buffer import WindowBatch, WindowBuffer, build_window
    from kuration.contracts.media import FrameRef, MediaColumn, MediaProvider, StreamInfo
    from kuration.contracts.track import tracks_from_segment, tracks_from_ticks
    from kuration.core.executors import (
        Executor,
        LocalExecutor,
        ProcessExecutor,
        RayExecutor,
        make_executor,
    )
    from kuration.core.plugins import load_plugins, plugin_failures
    from kuration.core.traits import ExecutionTraits
    from kuration.metrics.dsl import CompiledMetric, compile_metric
    from kuration.metrics.features import FeatureEngine, register_metric, registered_metrics
    from kuration.metrics.media_transforms import MotionEnergy
    from kuration.metrics.mutual_info import MutualInformationScorer
    from kuration.metrics.scorers import (
        NoveltyScorer,
        ScorerContext,
        SegmentScorer,
        register_scorer,
        registered_scorers,
    )
    from kuration.metrics.transforms import (
        BatchTransform,
        MediaRequest,
        TransformContext,
        register_transform,
        registered_transforms,
    )
    from kuration.output.containers import get_container, register_container, registered_containers
    from kuration.output.encoders import (
        OutputEncoder,
        PassthroughEncoder,
        get_encoder,
        register_encoder,
        registered_encoders,
    )
    from kuration.output.presets import (
        OutputPreset,
        get_preset,
        register_preset,
        registered_presets,
    )
    from kuration.output.writer import ShardWriter
    from kuration.pipeline.api.operators import (
        Operator,
        get_operator,
        register_operator,
        registered_operators,
    )
    from kuration.selection.filters import register_filter, registered_filters
    from kuration.selection.select import register_method, registered_methods
    from kuration.sources import (
        InputAdapter,
        get_adapter,
        get_media_provider,
        register_adapter,
        register_media_provider,
        registered_adapters,
        registered_media_providers,
    )
    from kuration.tools.analyzers import (
        AnalysisSubject,
        Analyzer,
        get_analyzer,
        register_analyzer,
        registered_analyzers,
    )

__all__ = [
    "AnalysisSubject",
    "Analyzer",
    "BatchTransform",
    "CompiledMetric",
    "ExecutionTraits",
    "Executor",
    "FeatureEngine",
    "FrameRef",
    "InputAdapter",
    "LocalExecutor",
    "MediaColumn",
    "MediaProvider",
    "MediaRequest",
    "MotionEnergy",
    "MutualInformationScorer",
    "NoveltyScorer",
    "Operator",
    "OutputEncoder",
    "OutputPreset",
    "PassthroughEncoder",
    "ProcessExecutor",
    "RayExecutor",
    "ScorerContext",
    "SegmentScorer",
    "ShardWriter",
    "StreamInfo",
    "TransformContext",
    "WindowBatch",
    "WindowBuffer",
    "build_window",
    "compile_metric",
    "get_adapter",
    "get_analyzer",
    "get_container",
    "get_encoder",
    "get_media_provider",
    "get_operator",
    "get_preset",
    "load_plugins",
    "make_executor",
    "plugin_failures",
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
    "tracks_from_segment",
    "tracks_from_ticks",
]
