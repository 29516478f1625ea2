"""Connector: turns one raw source into a TimeF version.

A connector is a class in ``timenet_connectors/datasets/<org>/<name>/``
(exposed there as ``CONNECTOR``) with a ``dataset.yaml`` card beside its
module. The engine (:func:`timenet.build.run_pipeline`) calls, in order:

``metadata()``
    Read and validate the card.
``download()``
    Fetch every raw input with :meth:`Connector.fetch` (pinned by SHA-256;
    each becomes a ``raw_inputs`` entry of the manifest).
``convert(writer)``
    Stream records, signals, annotations and tasks into the
    :class:`timenet.TimeFWriter`. A child dataset imports from its parents
    through ``self.parents``.
``derive_schema(schema)``
    Check (and return) the schema derived from what was written; the default
    checks :attr:`Connector.expected_signals`.

Everything a connector raises aborts the build before anything is published.
"""

from __future__ import annotations

import inspect
import os
from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from timenet.build.errors import BuildError
from timenet.build.fetch import PinnedFile, fetch_pinned, read_member
from timenet.build.progress import BuildProgress
from timenet.models import DatasetCard, DatasetSchema, RawInput

if TYPE_CHECKING:
    from timenet.build.inherit import ParentRelease
    from timenet.writer import TimeFWriter

__all__ = ["Connector"]


class Connector(ABC):
    """Base class of every dataset connector.

    Parameters
    ----------
    fetch_from : path, optional
        The user's own copy of the raw inputs: a directory holding the pinned
        files (or a file). Checked against the same pins.
    cache_dir : path, optional
        Download cache (default ``$TIMENET_BUILD_CACHE`` or
        ``~/.cache/timenet/downloads``).
    progress : BuildProgress, optional

    Attributes
    ----------
    created : str
        ISO 8601 instant written as the manifest's ``created`` so that two
        builds are identical (``$SOURCE_DATE_EPOCH`` overrides it).
    expected_signals : mapping of str to str
        Signal name to unit that every build must produce.
    stats : dict of str to int
        Counters the connector reports (rows dropped, values nulled, ...).
    """

    card_file: ClassVar[str] = "dataset.yaml"
    created: ClassVar[str] = "2025-01-01T00:00:00+00:00"
    expected_signals: ClassVar[Mapping[str, str]] = {}

    def __init__(
        self,
        *,
        fetch_from: str | os.PathLike[str] | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        progress: BuildProgress | None = None,
    ) -> None:
        self.fetch_from = fetch_from
        self.cache_dir = cache_dir
        self.progress = progress or BuildProgress(enabled=False)
        self.raw_inputs: list[RawInput] = []
        self.parents: dict[str, ParentRelease] = {}
        self.stats: dict[str, int] = {}
        self._card: DatasetCard | None = None

    # -- card ------------------------------------------------------------------
    @classmethod
    def card_path(cls) -> Path:
        """``dataset.yaml`` beside the module defining the connector class."""
        return Path(inspect.getfile(cls)).with_name(cls.card_file)

    def metadata(self) -> DatasetCard:
        """The validated dataset card.

        Raises
        ------
        BuildError
            If the card is missing or invalid (the path is named).
        """
        if self._card is None:
            from pydantic import ValidationError

            path = self.card_path()
            try:
                self._card = DatasetCard.from_yaml(path)
            except FileNotFoundError:
                raise BuildError(f"{path}: dataset card not found") from None
            except (ValidationError, ValueError) as exc:
                raise BuildError(f"{path}: invalid dataset card: {exc}") from None
        return self._card

    # -- raw inputs --------------------------------------------------------------
    def fetch(self, pin: PinnedFile, members: tuple[str, ...] = ()) -> Path:
        """Fetch a pinned file (cache, ``fetch_from`` or pip) and record it as a raw input.

        Raises
        ------
        FetchError
            If it cannot be fetched or its SHA-256 differs from the pin.
        """
        path = fetch_pinned(pin, cache_dir=self.cache_dir, fetch_from=self.fetch_from)
        self.raw_inputs = [r for r in self.raw_inputs if r.filename != pin.filename]
        self.raw_inputs.append(pin.raw_input(path, members))
        return path

    def read(self, archive: Path, member: str) -> bytes:
        """Bytes of ``member`` of a fetched archive (see :func:`timenet.build.read_member`)."""
        return read_member(archive, member)

    def count(self, key: str, n: int = 1) -> None:
        """Add ``n`` to the counter ``key`` of :attr:`stats`."""
        self.stats[key] = self.stats.get(key, 0) + int(n)

    # -- pipeline stages -------------------------------------------------------------
    @abstractmethod
    def download(self) -> None:
        """Fetch every raw input with :meth:`fetch`."""

    @abstractmethod
    def convert(self, writer: TimeFWriter) -> None:
        """Write the dataset's content into ``writer``.

        Raises
        ------
        RawInputError
            On malformed raw input, naming the file (and row).
        """

    def derive_schema(self, schema: DatasetSchema) -> DatasetSchema:
        """Check the schema derived from the written content; return it.

        Raises
        ------
        BuildError
            If an expected signal is missing or has another unit.
        """
        have = {s.name: s.unit for s in schema.signals}
        for name, unit in self.expected_signals.items():
            if name not in have:
                raise BuildError(f"expected signal {name!r} was not written")
            if have[name] != unit:
                raise BuildError(f"signal {name!r} has unit {have[name]!r}, expected {unit!r}")
        return schema

    def describe(self) -> dict[str, Any]:
        """Card summary for listings."""
        card = self.metadata()
        return {
            "ref": str(card.ref),
            "license": card.license,
            "origin": card.origin,
            "parents": list(card.parents),
        }
