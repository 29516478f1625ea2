"""Runtime objects returned by readers: records, annotations and tasks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from timenet.specs import Content

__all__ = ["Annotation", "Record", "Task"]


@dataclass(frozen=True)
class Record:
    """One record (e.g. a patient visit or a recording session).

    Attributes
    ----------
    id : str
        Identifier unique within the version.
    index : int
        Position in the version's read order (0-based).
    metadata : dict
        JSON-compatible metadata given at write time.
    signal_names : tuple of str
        Names of the signals this record holds, in write order.
    """

    id: str
    index: int
    metadata: dict[str, Any] = field(default_factory=dict, hash=False)
    signal_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class Annotation:
    """An interval or point annotation on a record or on one of its signals.

    Attributes
    ----------
    id : int
        Identifier unique within the version.
    record_id : str
        Record the annotation belongs to.
    start_ns : int
        Start (or the point) in int64 nanoseconds on the record's time axis.
    stop_ns : int or None
        End of the interval (exclusive), ``None`` for a point annotation.
    content : Label | Text | Numeric | QuestionAnswer
        Typed payload.
    signal : str or None
        Signal name when the annotation targets one signal, else ``None``.
    """

    id: int
    record_id: str
    start_ns: int
    stop_ns: int | None
    content: Content
    signal: str | None = None

    @property
    def is_point(self) -> bool:
        """True for a point annotation (no ``stop_ns``)."""
        return self.stop_ns is None


@dataclass(frozen=True)
class Task:
    """A supervised target attached to a record: a label or a question/answer.

    Attributes
    ----------
    id : int
        Identifier unique within the version.
    record_id : str
        Record the task is about.
    name : str
        Task name, e.g. ``"rhythm"`` or ``"ecg-qa"``.
    content : Label | Text | Numeric | QuestionAnswer
        Target.
    """

    id: int
    record_id: str
    name: str
    content: Content
