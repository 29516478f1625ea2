"""WindowBuffer: the per-window extraction every metric reads."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field

import numpy as np

from .schema import SchemaSpec
from .tick import TickTable

__all__ = ["WindowBuffer", "build_window"]


@dataclass(frozen=True)
class WindowBuffer:
    """Every field of one window over the window's entity roster.

    Attributes
    ----------
    values : mapping of str to ndarray, shape (T, E, D), float64
        NaN-padded per-entity field values in their declared units.
    present : ndarray, shape (T, E), bool
        Entity has a record at the tick.
    entity_ids : tuple
        The roster: entities present at least once in the window.
    schema : SchemaSpec
    globals : mapping of str to ndarray, shape (T, D), float64
    events : mapping of str to ndarray, shape (T,), bool
    source_id : str
    start_idx : int
    """

    values: Mapping[str, np.ndarray]
    present: np.ndarray
    entity_ids: tuple[Hashable, ...]
    schema: SchemaSpec
    globals: Mapping[str, np.ndarray] = field(default_factory=dict)
    events: Mapping[str, np.ndarray] = field(default_factory=dict)
    source_id: str = ""
    start_idx: int = 0

    @property
    def sample_hz(self) -> float:
        return float(self.schema.sample_hz)

    @property
    def n_steps(self) -> int:
        return int(self.present.shape[0])

    def valid(self, name: str) -> np.ndarray:
        """Mask (T, E) of ticks where the entity is present and ``name`` has no NaN component."""
        return self.present & ~np.isnan(self.values[name]).any(axis=-1)

    @property
    def vocabs(self) -> dict[str, tuple[str, ...]]:
        return {f.name: f.vocab for f in self.schema.fields if f.kind == "categorical"}


def build_window(
    table: TickTable, start: int, stop: int, schema: SchemaSpec | None = None
) -> WindowBuffer:
    """Extract ticks ``[start, stop)`` of ``table`` over the entities present in that range."""
    present = table.present[start:stop]
    roster = np.flatnonzero(present.any(axis=0))
    return WindowBuffer(
        values={k: v[start:stop][:, roster] for k, v in table.values.items()},
        present=present[:, roster],
        entity_ids=tuple(table.entity_ids[i] for i in roster),
        schema=schema or table.schema,
        globals={k: v[start:stop] for k, v in table.globals.items()},
        events={k: v[start:stop] for k, v in table.events.items()},
        source_id=table.source_id,
        start_idx=start,
    )
