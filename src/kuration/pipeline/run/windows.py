"""The window reader a runtime installs for filters that compare window values (``dedup``)."""

from __future__ import annotations

from contextlib import AbstractContextManager

from ...selection.dedup import TableWindowReader, use_window_reader
from ...sources.base import InputAdapter
from .reread import checked_reader
from .scoring import ScoringResult

__all__ = ["window_reader_scope"]


def window_reader_scope(
    adapter: InputAdapter, scoring: ScoringResult
) -> AbstractContextManager[None]:
    """A ``with`` scope in which the scored sources' windows can be read again through
    ``adapter`` (:class:`~kuration.selection.dedup.TableWindowReader`)."""
    uris = {sid: info.uri for sid, info in scoring.sources.items()}
    read = checked_reader(adapter, scoring.sources.values())
    return use_window_reader(TableWindowReader(read, uris))
