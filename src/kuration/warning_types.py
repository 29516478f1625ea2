"""kuration's warning classes (the exceptions are in :mod:`kuration.errors`, which exports
these too).

``KurationWarning`` is the root; see the list in :mod:`kuration.errors`.
"""

from __future__ import annotations

__all__ = [
    "BudgetGranularityWarning",
    "DataOrderWarning",
    "DataRepairWarning",
    "KurationWarning",
    "NonExclusiveLeaseWarning",
    "PluginWarning",
    "SnapCollisionWarning",
]


class KurationWarning(UserWarning):
    """Root of kuration's warnings."""


class DataOrderWarning(KurationWarning):
    """Input rows were out of time order within an entity and were sorted."""


class SnapCollisionWarning(KurationWarning):
    """Rows of one entity snapped to one grid point and all but the nearest were dropped.

    Attributes
    ----------
    source : str
        The source URI or id.
    count : int
        Rows dropped in that source (also recorded per source in ``config.json``).
    """

    def __init__(self, message: str, *, source: str = "", count: int = 0) -> None:
        super().__init__(message)
        self.source = source
        self.count = count


class DataRepairWarning(KurationWarning):
    """An input defect was repaired because the user opted in (``source``, ``repair`` set)."""


class NonExclusiveLeaseWarning(KurationWarning):
    """A lease taken by check-then-create, as KURATION_NON_EXCLUSIVE_LEASE accepted."""


class PluginWarning(KurationWarning):
    """An installed entry-point plugin failed and was rolled back."""


class BudgetGranularityWarning(KurationWarning):
    """A split's admitted hours exceed its request by more than 10% because whole tracks
    (or spans) are admitted and the last one admitted is long next to the request.

    The fix is ``span_seconds`` (job key): tracks are cut into spans of that length, so the
    fill can stop within one span of the request.

    Attributes
    ----------
    split : str
    requested_s, admitted_s : float
        Seconds requested and admitted.
    unit_s : float
        Length of the longest admitted unit (track or span), seconds.
    """

    def __init__(
        self,
        message: str,
        *,
        split: str = "",
        requested_s: float = 0.0,
        admitted_s: float = 0.0,
        unit_s: float = 0.0,
    ) -> None:
        super().__init__(message)
        self.split = split
        self.requested_s = requested_s
        self.admitted_s = admitted_s
        self.unit_s = unit_s
