"""PipelineView: what planning and the runtimes read of a :class:`~kuration.Pipeline`.

The planner, the dispatch and the runtimes take the user's pipeline and read its
resolved fields; annotating them with this protocol instead of the class keeps
every import of the wing pointing down (``api`` imports them, never the reverse).
The three builder methods are those the dispatch still calls (the disk-pool
fallback and :meth:`~kuration.Pipeline.compare`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, Self

from .logical import CountSelection, HoursSelection, PipelineOptions, SeamUse

if TYPE_CHECKING:
    from ...contracts.schema import SchemaSpec
    from ...contracts.segment import Segmenter
    from ...output.spec import OutputSpec
    from ...selection.strategy import Strategy
    from ...sources.base import InputAdapter

__all__ = ["PipelineView"]


class PipelineView(Protocol):
    """The read-only fields of a Pipeline (see :class:`~kuration.Pipeline` for each one)."""

    @property
    def schema(self) -> SchemaSpec | None: ...
    @property
    def adapter(self) -> InputAdapter | None: ...
    @property
    def sources(self) -> Any: ...
    @property
    def base(self) -> Path: ...
    @property
    def segmenter(self) -> Segmenter | None: ...
    @property
    def strategy_(self) -> Strategy | None: ...
    @property
    def transforms(self) -> tuple[SeamUse, ...]: ...
    @property
    def scorers(self) -> tuple[SeamUse, ...]: ...
    @property
    def selection(self) -> CountSelection | HoursSelection | None: ...
    @property
    def output_spec(self) -> OutputSpec | None: ...
    @property
    def encoder(self) -> Any: ...
    @property
    def opts(self) -> PipelineOptions: ...
    @property
    def analyzers(self) -> tuple[SeamUse, ...]: ...
    @property
    def plugin_modules(self) -> tuple[str, ...]: ...
    @property
    def include_entry_points(self) -> bool: ...
    @property
    def job(self) -> Mapping[str, Any] | None: ...

    def options(self, **kw: Any) -> Self: ...
    def metrics(self, strategy: Any) -> Self: ...
    def select(self, n: int) -> Self: ...
