"""Later reads of a scored source: each must decode the bytes the score pass decoded.

The score pass records each source's :class:`~kuration.sources.identity.SourceDigest`
(:attr:`SourceInfo.expected <kuration.pipeline.scoring.SourceInfo.expected>`); every
later read of the run (features barrier, scorer buffers, the window reader, the stage
step, the disk runtime's filters) goes through :func:`reread` or :func:`checked_reader`,
which raise :class:`~kuration.errors.SourceChangedError` before anything is published
when the bytes differ.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from ...contracts.tick import TickTable
from ...sources.base import InputAdapter
from ...sources.identity import SourceDigest, check_digest
from .scoring import SourceInfo

__all__ = ["checked_reader", "held_still", "reread"]


def reread(
    adapter: InputAdapter, info: SourceInfo, entities: Iterable[Any] | None = None
) -> TickTable:
    """The source of ``info`` read again (all of it, or only ``entities``, as
    :meth:`~kuration.sources.base.InputAdapter.read_entities`).

    Raises
    ------
    SourceChangedError
        Its bytes differ from the score pass's (names both digests).
    SourceError
        As the adapter's read.
    """
    return adapter.read_checked(info.uri, entities=entities, expect=info.expected)[0]


def checked_reader(
    adapter: InputAdapter, sources: Iterable[SourceInfo]
) -> Callable[[str], TickTable]:
    """``read_table(uri)`` for the scored ``sources``, each read checked as by :func:`reread`
    (a URI the pool does not know is read unchecked)."""
    expected = {info.uri: info.expected for info in sources}

    def read(uri: str) -> TickTable:
        return adapter.read_checked(uri, expect=expected.get(str(uri)))[0]

    return read


@contextmanager
def held_still(
    adapter: InputAdapter, uri: str, expect: SourceDigest | None = None
) -> Iterator[SourceDigest]:
    """A ``with`` scope for a read that cannot hash what it decodes (a source streamed
    block by block): the source is fingerprinted before (checked against ``expect``) and
    after the body, which gets the digest.

    Raises
    ------
    SourceChangedError
        The source is not what ``expect`` names, or it changed while the body read it
        (raised on leaving the scope normally).
    """
    sid = adapter.source_id(uri)
    before = SourceDigest(adapter.fingerprint(uri))
    check_digest(uri, sid, expect, before)
    yield before
    check_digest(uri, sid, before, SourceDigest(adapter.fingerprint(uri)))
