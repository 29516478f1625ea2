"""Typed descriptors: signal specs and annotation/task content.

These are plain frozen dataclasses, so they pickle (DataLoader workers) and
round-trip through the catalog via :meth:`to_dict` / ``from_dict`` without any
runtime class synthesis.
"""

from __future__ import annotations

import math
import numbers
import zoneinfo
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from timenet._timebase import NS_MAX, NS_MIN, iso_to_ns
from timenet.errors import SchemaError

__all__ = [
    "SUPPORTED_DTYPES",
    "Content",
    "Label",
    "Numeric",
    "QuestionAnswer",
    "SignalSpec",
    "Text",
    "content_from_dict",
]

#: Scalar dtypes a signal may declare (NumPy names).
SUPPORTED_DTYPES: tuple[str, ...] = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float32",
    "float64",
    "datetime64[ns]",
)


@dataclass(frozen=True)
class SignalSpec:
    """What one signal holds and how its steps map to time.

    Parameters
    ----------
    dtype : str
        Scalar NumPy dtype name, one of :data:`SUPPORTED_DTYPES`.
    unit : str
        pint unit expression of the values (``""`` for dimensionless); parsed
        by the shared registry when written.
    shape : tuple of int
        Per-timestep shape: ``()`` for a scalar signal, ``(3,)`` for a
        tri-axial sensor. Values have shape ``(T, *shape)``.
    rate_hz : float or None
        Sampling rate in hertz. ``None`` means the signal carries explicit
        int64 nanosecond timestamps instead.
    start_ns : int
        Time of step 0 in nanoseconds after ``time_origin`` (regular signals);
        within int64 (the int64 minimum excluded).
    time_origin : str or None
        ISO 8601 instant that time zero refers to; ``None`` means time is
        relative to the start of the record.  Without a UTC offset it is
        taken as UTC (never the machine's zone); it must lie within the
        int64-nanosecond range (1677-09-21..2262-04-11).
    timezone : str or None
        IANA zone name for local-time display (e.g. ``"Europe/Berlin"``).
    missing_value : number or tuple of numbers, optional
        Values that mean "no measurement" (the CF conventions' ``missing_value``),
        compared exactly in the signal's dtype (integers need integral values in
        its range).
    valid_min, valid_max : number, optional
        Inclusive valid range (CF ``valid_min``/``valid_max``).  The values are
        stored as written; the reader returns a step holding a sentinel or an
        out-of-range element (any element, for a shaped signal) as null, like a
        stored null.  Numeric dtypes only.

    Raises
    ------
    SchemaError
        If any field is invalid.
    """

    dtype: str
    unit: str = ""
    shape: tuple[int, ...] = ()
    rate_hz: float | None = None
    start_ns: int = 0
    time_origin: str | None = None
    timezone: str | None = None
    missing_value: int | float | tuple[int | float, ...] | None = None
    valid_min: int | float | None = None
    valid_max: int | float | None = None

    def __post_init__(self) -> None:
        dtype = str(np.dtype(self.dtype)) if isinstance(self.dtype, np.dtype) else self.dtype
        if dtype not in SUPPORTED_DTYPES:
            raise SchemaError(f"dtype {self.dtype!r} is not one of {SUPPORTED_DTYPES}")
        object.__setattr__(self, "dtype", dtype)
        try:
            shape = tuple(int(n) for n in self.shape)
        except (TypeError, ValueError) as exc:
            raise SchemaError(f"shape {self.shape!r} is not a tuple of ints") from exc
        if any(n <= 0 for n in shape):
            raise SchemaError(f"shape {shape} must have positive sizes")
        object.__setattr__(self, "shape", shape)
        if self.rate_hz is not None:
            rate = float(self.rate_hz)
            if not math.isfinite(rate) or rate <= 0:
                raise SchemaError(f"rate_hz must be a positive finite number, got {self.rate_hz!r}")
            object.__setattr__(self, "rate_hz", rate)
        try:
            start = int(self.start_ns)
        except (TypeError, ValueError, OverflowError) as exc:
            raise SchemaError(f"start_ns {self.start_ns!r} is not an integer") from exc
        if not NS_MIN <= start <= NS_MAX:
            raise SchemaError(f"start_ns {start} is outside int64 nanoseconds")
        object.__setattr__(self, "start_ns", start)
        if self.time_origin is not None:
            try:
                iso_to_ns(self.time_origin)
            except (TypeError, ValueError) as exc:
                raise SchemaError(f"time_origin {self.time_origin!r}: {exc}") from exc
        if self.timezone is not None:
            try:
                zoneinfo.ZoneInfo(self.timezone)
            except (zoneinfo.ZoneInfoNotFoundError, ValueError, TypeError) as exc:
                raise SchemaError(f"timezone {self.timezone!r} is not an IANA zone") from exc
        if not isinstance(self.unit, str):
            raise SchemaError(f"unit must be a string, got {self.unit!r}")
        self._check_validity()

    def _check_validity(self) -> None:
        mv = self.missing_value
        if isinstance(mv, list | tuple):
            object.__setattr__(self, "missing_value", tuple(mv))
        if not self.has_validity:
            return
        if self.dtype in ("bool", "datetime64[ns]"):
            raise SchemaError(
                f"missing_value/valid_min/valid_max need a numeric dtype, not {self.dtype}"
            )
        integral = self.numpy_dtype.kind in "iu"
        named = [("missing_value", v) for v in self.sentinels]
        named += [(k, getattr(self, k)) for k in ("valid_min", "valid_max")]
        for key, v in named:
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                raise SchemaError(f"{key} must be a finite number, got {v!r}")
            if key == "missing_value" and integral:
                info = np.iinfo(self.numpy_dtype)
                if not float(v).is_integer() or not int(info.min) <= int(v) <= int(info.max):
                    raise SchemaError(f"missing_value {v!r} is not a {self.dtype} value")
        lo, hi = self.valid_min, self.valid_max
        if lo is not None and hi is not None and lo > hi:
            raise SchemaError(f"valid_min {lo!r} > valid_max {hi!r}")

    @property
    def has_validity(self) -> bool:
        """Whether the spec declares sentinels or a valid range."""
        return not (
            self.missing_value is None and self.valid_min is None and self.valid_max is None
        )

    @property
    def sentinels(self) -> tuple[int | float, ...]:
        """The ``missing_value`` sentinels as a tuple (empty when none)."""
        mv = self.missing_value
        if mv is None:
            return ()
        return tuple(mv) if isinstance(mv, tuple) else (mv,)

    def invalid_steps(self, values: np.ndarray) -> np.ndarray:
        """Steps holding a sentinel or an out-of-range element.

        Parameters
        ----------
        values : ndarray, shape (T, *shape), the signal's dtype
            Stored values (the entries of null steps are ignored by the caller).

        Returns
        -------
        ndarray, shape (T,), bool
        """
        x = np.asarray(values)
        bad = np.zeros(x.shape, dtype=bool)
        if self.sentinels:
            sent = [int(v) for v in self.sentinels] if x.dtype.kind in "iu" else self.sentinels
            bad |= np.isin(x, np.array(sent, dtype=x.dtype))
        if self.valid_min is not None:
            bad |= x < self.valid_min
        if self.valid_max is not None:
            bad |= x > self.valid_max
        return np.asarray(bad.reshape(x.shape[0], -1).any(axis=1)) if x.ndim > 1 else bad

    @property
    def origin_ns(self) -> int | None:
        """``time_origin`` in nanoseconds since the Unix epoch (naive means UTC), or None."""
        return None if self.time_origin is None else iso_to_ns(self.time_origin)

    @property
    def regular(self) -> bool:
        """True when steps are evenly spaced at ``rate_hz``."""
        return self.rate_hz is not None

    @property
    def numpy_dtype(self) -> np.dtype[Any]:
        """The scalar dtype as a :class:`numpy.dtype`."""
        return np.dtype(self.dtype)

    @property
    def arrow_type(self) -> pa.DataType:
        """The scalar dtype as an Arrow type (timestamps are ``timestamp[ns]``)."""
        if self.dtype == "datetime64[ns]":
            return pa.timestamp("ns")
        return pa.from_numpy_dtype(self.numpy_dtype)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping; inverse of :meth:`from_dict`.  The validity keys appear only
        when declared, so catalogs written before they existed keep their bytes."""
        out: dict[str, Any] = {
            "dtype": self.dtype,
            "unit": self.unit,
            "shape": list(self.shape),
            "rate_hz": self.rate_hz,
            "start_ns": self.start_ns,
            "time_origin": self.time_origin,
            "timezone": self.timezone,
        }
        if self.missing_value is not None:
            mv = self.missing_value
            out["missing_value"] = list(mv) if isinstance(mv, tuple) else mv
        for key in ("valid_min", "valid_max"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SignalSpec:
        """Build a spec from :meth:`to_dict` output."""
        return cls(
            dtype=data["dtype"],
            unit=data.get("unit", ""),
            shape=tuple(data.get("shape", ())),
            rate_hz=data.get("rate_hz"),
            start_ns=data.get("start_ns", 0),
            time_origin=data.get("time_origin"),
            timezone=data.get("timezone"),
            missing_value=data.get("missing_value"),
            valid_min=data.get("valid_min"),
            valid_max=data.get("valid_max"),
        )


class _ContentBase:
    kind: ClassVar[str]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping with a ``kind`` discriminator."""
        out: dict[str, Any] = {"kind": self.kind}
        out.update(self.__dict__)
        return out


@dataclass(frozen=True)
class Label(_ContentBase):
    """A categorical label, e.g. a rhythm class."""

    value: str
    kind: ClassVar[str] = "label"


@dataclass(frozen=True)
class Text(_ContentBase):
    """Free text, e.g. a clinician's note."""

    text: str
    kind: ClassVar[str] = "text"


@dataclass(frozen=True)
class Numeric(_ContentBase):
    """A number with an optional pint unit, e.g. a measured heart rate."""

    value: float
    unit: str = ""
    kind: ClassVar[str] = "numeric"


@dataclass(frozen=True)
class QuestionAnswer(_ContentBase):
    """A question about a record with its reference answer."""

    question: str
    answer: str
    kind: ClassVar[str] = "qa"


Content = Label | Text | Numeric | QuestionAnswer

_CONTENT_KINDS: dict[str, type[Any]] = {
    cls.kind: cls for cls in (Label, Text, Numeric, QuestionAnswer)
}


def content_from_dict(data: dict[str, Any]) -> Content:
    """Rebuild annotation/task content from its ``to_dict`` form.

    Raises
    ------
    SchemaError
        If the ``kind`` is unknown or fields do not match.
    """
    fields = dict(data)
    kind = fields.pop("kind", None)
    cls = _CONTENT_KINDS.get(str(kind))
    if cls is None:
        raise SchemaError(f"unknown content kind {kind!r}; known: {sorted(_CONTENT_KINDS)}")
    try:
        obj: Content = cls(**fields)
    except TypeError as exc:
        raise SchemaError(f"bad fields for content kind {kind!r}: {exc}") from exc
    return obj


def check_content(content: object) -> Content:
    """Return ``content`` if it is one of the content descriptors, else raise SchemaError."""
    if not isinstance(content, Label | Text | Numeric | QuestionAnswer):
        raise SchemaError(
            f"content must be Label, Text, Numeric or QuestionAnswer, got {type(content).__name__}"
        )
    if isinstance(content, Numeric) and not (
        isinstance(content.value, numbers.Real) and math.isfinite(content.value)
    ):
        # stored as strict JSON, which has no NaN or infinity
        raise SchemaError(f"a Numeric value must be a finite number, got {content.value!r}")
    return content
