"""Lazy media: MediaSpec (the schema's media namespace), FrameRef, MediaColumn and MediaProvider.

Media never enters the metric grammar.  A schema declares media columns in its
own ``media`` namespace; an adapter attaches to each tick a *reference* to a
frame (:class:`FrameRef`), never pixels; a :class:`MediaProvider` turns a
bounded batch of references into a ``(N, H, W, C)`` uint8 array when (and
only when) the output layer asks for it.

Providers are registered by name (:func:`register_media_provider`); the
built-in ``"pyav"`` is listed by dotted path and imported on first use, so the
contracts import no decoder and no adapter.

Time is exact.  A frame's presentation time is ``pts * time_base`` with an
integer ``pts`` and a :class:`fractions.Fraction` time base, so a 29.97 fps
stream (``frame_rate = 30000/1001``, ``time_base = 1/30000``) never drifts:
frame ``i`` is at exactly ``i * 1001/30000`` seconds.  Rates and time bases
travel through JSON as ``"num/den"`` strings; floats are refused.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ..core.registry import Registry
from ..errors import MediaError, MissingExtraError, RegistrationError, SchemaError

__all__ = [
    "PIXEL_FORMATS",
    "FrameRef",
    "MediaColumn",
    "MediaProvider",
    "MediaSpec",
    "StreamInfo",
    "get_media_provider",
    "motion_energy",
    "parse_fraction",
    "register_media_provider",
    "registered_media_providers",
]

#: decoded pixel formats and their channel counts (the ``C`` of ``(N, H, W, C)``)
PIXEL_FORMATS = {"rgb24": 3, "bgr24": 3, "gray": 1}
_COLOR_SPACES = ("srgb", "bt601", "bt709", "unspecified")
_LAYOUTS = ("HWC",)


def parse_fraction(value: Any, what: str, *, column: str | None = None) -> Fraction:
    """An exact rational from an int, a Fraction or a ``"num/den"`` string.

    Floats are refused: ``29.97`` is not ``30000/1001``, and the difference
    is the drift this module exists to prevent.

    Raises
    ------
    SchemaError
        For a float, a bool, a malformed string or a zero denominator.
    """
    if isinstance(value, Fraction):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return Fraction(value)
    if isinstance(value, str):
        try:
            return Fraction(value.strip())
        except (ValueError, ZeroDivisionError):
            pass
    raise SchemaError(
        f"{what} must be an integer or an exact 'num/den' string (e.g. '30000/1001'), "
        f"got {value!r}",
        field=column,
    )


def _fraction_json(x: Fraction) -> str:
    return f"{x.numerator}/{x.denominator}" if x.denominator != 1 else str(x.numerator)


@dataclass(frozen=True)
class MediaSpec:
    """One media column of a schema: what its frames decode to, and how they are timed.

    Parameters
    ----------
    name : str
        Column name; output modalities read it as ``media:<name>``.
    shape : tuple of int
        Decoded frame shape ``(H, W, C)``, pixels and channels; frames are
        scaled to ``H x W`` at decode time.  ``C`` must match ``pixel_format``.
    layout : {"HWC"}
        Axis order of one decoded frame.
    pixel_format : {"rgb24", "bgr24", "gray"}
        Decoded pixel format (8 bits per channel).
    color_space : {"srgb", "bt601", "bt709", "unspecified"}
        Colour space of the decoded values (recorded, not converted).
    frame_rate : Fraction or None
        Nominal frame rate in frames per second, exact (``30000/1001``).
        ``VideoAdapter`` lays one tick per frame on this grid; checked
        against the probed stream when given.
    time_base : Fraction or None
        The stream's time base in seconds per pts unit; checked against the
        probed stream when given.
    start_offset : Fraction
        Time in seconds, on the schema's clock, of the stream's ``pts = 0``.
    stream : int
        Index of the video stream within its container.
    provider : str
        Registered :class:`MediaProvider` name.

    Raises
    ------
    SchemaError
        On any invalid value (checked at construction).
    """

    name: str
    shape: tuple[int, int, int]
    layout: str = "HWC"
    pixel_format: str = "rgb24"
    color_space: str = "srgb"
    frame_rate: Fraction | None = None
    time_base: Fraction | None = None
    start_offset: Fraction = Fraction(0)
    stream: int = 0
    provider: str = "pyav"

    def __post_init__(self) -> None:
        n = self.name
        if not isinstance(n, str) or not n or not n.replace("_", "a").isalnum():
            raise SchemaError(f"media column name must be a non-empty identifier, got {n!r}")
        shape = tuple(self.shape) if isinstance(self.shape, list | tuple) else ()
        if len(shape) != 3 or not all(
            isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in shape
        ):
            raise SchemaError(
                f"shape must be [H, W, C] positive integers, got {self.shape!r}", field=n
            )
        object.__setattr__(self, "shape", shape)
        if self.layout not in _LAYOUTS:
            raise SchemaError(f"layout must be one of {_LAYOUTS}, got {self.layout!r}", field=n)
        if self.pixel_format not in PIXEL_FORMATS:
            raise SchemaError(
                f"pixel_format must be one of {sorted(PIXEL_FORMATS)}, got {self.pixel_format!r}",
                field=n,
            )
        if shape[2] != PIXEL_FORMATS[self.pixel_format]:
            raise SchemaError(
                f"{self.pixel_format} has {PIXEL_FORMATS[self.pixel_format]} channel(s), "
                f"shape says {shape[2]}",
                field=n,
            )
        if self.color_space not in _COLOR_SPACES:
            raise SchemaError(
                f"color_space must be one of {_COLOR_SPACES}, got {self.color_space!r}", field=n
            )
        for attr in ("frame_rate", "time_base"):
            v = getattr(self, attr)
            if v is not None:
                v = parse_fraction(v, attr, column=n)
                if v <= 0:
                    raise SchemaError(f"{attr} must be positive, got {v}", field=n)
                object.__setattr__(self, attr, v)
        object.__setattr__(
            self, "start_offset", parse_fraction(self.start_offset, "start_offset", column=n)
        )
        if not isinstance(self.stream, int) or isinstance(self.stream, bool) or self.stream < 0:
            raise SchemaError(
                f"stream must be a non-negative integer, got {self.stream!r}", field=n
            )
        if not isinstance(self.provider, str) or not self.provider:
            raise SchemaError("provider must be a registered MediaProvider name", field=n)

    @property
    def size(self) -> tuple[int, int]:
        """``(H, W)`` in pixels, the ``size`` handed to :meth:`MediaProvider.decode_batch`."""
        return self.shape[0], self.shape[1]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (rationals as ``"num/den"``); round-trips through :meth:`from_dict`."""
        d: dict[str, Any] = {
            "shape": list(self.shape),
            "layout": self.layout,
            "pixel_format": self.pixel_format,
            "color_space": self.color_space,
            "start_offset": _fraction_json(self.start_offset),
            "stream": self.stream,
            "provider": self.provider,
        }
        if self.frame_rate is not None:
            d["frame_rate"] = _fraction_json(self.frame_rate)
        if self.time_base is not None:
            d["time_base"] = _fraction_json(self.time_base)
        return d

    @classmethod
    def from_dict(cls, name: str, d: Mapping[str, Any]) -> MediaSpec:
        """Build column ``name`` from its JSON form.

        Raises
        ------
        SchemaError
            On unknown keys, a missing ``shape`` or any invalid value.
        """
        if not isinstance(d, Mapping):
            raise SchemaError(
                f"a media column must be an object, got {type(d).__name__}", field=name
            )
        known = {
            "shape",
            "layout",
            "pixel_format",
            "color_space",
            "frame_rate",
            "time_base",
            "start_offset",
            "stream",
            "provider",
        }
        extra = set(d) - known
        if extra:
            raise SchemaError(f"unknown media keys {sorted(extra)}", field=name)
        if "shape" not in d:
            raise SchemaError("a media column needs a shape [H, W, C]", field=name)
        kw = dict(d)
        kw["shape"] = tuple(kw["shape"]) if isinstance(kw["shape"], list) else kw["shape"]
        return cls(name=name, **kw)


@dataclass(frozen=True, slots=True)
class FrameRef:
    """A pickle-safe locator of one decoded frame, never its pixels.

    Attributes
    ----------
    uri : str
        The media file.
    stream : int
        Stream index within the container.
    pts : int
        Presentation timestamp, in ``time_base`` units.
    time_base : Fraction
        Seconds per pts unit.
    index : int
        Position of the frame in presentation order (0-based).
    """

    uri: str
    stream: int
    pts: int
    time_base: Fraction
    index: int

    @property
    def time(self) -> Fraction:
        """Presentation time in seconds on the stream's clock: exactly ``pts * time_base``."""
        return self.pts * self.time_base


@dataclass(frozen=True)
class StreamInfo:
    """What :meth:`MediaProvider.probe` learns about one video stream.

    Attributes
    ----------
    uri : str
    stream : int
    width, height : int
        Coded frame size, pixels.
    frame_rate : Fraction or None
        Average frame rate (frames per second) as the container states it.
    time_base : Fraction
        Seconds per pts unit.
    n_frames : int or None
        Frame count when the container records it.
    duration : Fraction or None
        Stream duration, seconds.
    codec : str
    """

    uri: str
    stream: int
    width: int
    height: int
    frame_rate: Fraction | None
    time_base: Fraction
    n_frames: int | None
    duration: Fraction | None
    codec: str


@dataclass(frozen=True)
class MediaColumn:
    """A lazy media column: per-tick indices into one source's frame references.

    Attributes
    ----------
    spec : MediaSpec
    refs : tuple of FrameRef
        Every frame of the source's stream, in presentation order; shared
        (not copied) by every slice.
    index : ndarray, shape (T,), int64
        For tick ``t``, the position in ``refs`` of its frame, or ``-1`` where
        the tick has no frame (absent media; never a repeated frame).
    """

    spec: MediaSpec
    refs: tuple[FrameRef, ...]
    index: np.ndarray

    def __post_init__(self) -> None:
        idx = np.asarray(self.index, dtype=np.int64)
        if idx.ndim != 1 or (idx.size and (idx.min() < -1 or idx.max() >= len(self.refs))):
            raise MediaError(
                "MediaColumn.index must be (T,) int64 in [-1, len(refs))", uri=self.spec.name
            )
        object.__setattr__(self, "index", idx)

    @property
    def present(self) -> np.ndarray:
        """Shape (T,), bool: whether tick ``t`` has a frame."""
        return self.index >= 0

    def slice(self, start: int, stop: int) -> MediaColumn:
        """Ticks ``[start, stop)``; the reference list is shared."""
        return MediaColumn(self.spec, self.refs, self.index[start:stop].copy())

    def refs_at(self, rows: np.ndarray) -> list[FrameRef]:
        """The references of ``rows`` (which must all have a frame)."""
        return [self.refs[int(i)] for i in self.index[rows]]


def motion_energy(frames: np.ndarray, previous: np.ndarray | None = None) -> np.ndarray:
    """Mean absolute difference between consecutive frames (the motion-energy kernel).

    The kernel of the built-in ``motion_energy`` BatchTransform
    (:mod:`kuration.metrics.media_transforms`) and of the
    :class:`~kuration.sources.video.VideoAdapter` ``derived`` field; it lives
    here, below both stages, so that both use the same code.

    Parameters
    ----------
    frames : ndarray, shape (N, H, W, C), uint8
        Consecutive frames (downscaled by the decoder), presentation order.
    previous : ndarray, shape (H, W, C), uint8, optional
        The frame before ``frames[0]``.

    Returns
    -------
    ndarray, shape (N,), float64
        ``mean(|frames[i] - frames[i-1]|)`` over pixels and channels, in 8-bit
        intensity levels (0-255); NaN for the first frame when ``previous`` is None.
    """
    x = frames.astype(np.int16)
    out = np.full(x.shape[0], np.nan)
    if x.shape[0] > 1:
        out[1:] = np.abs(np.diff(x, axis=0)).mean(axis=(1, 2, 3))
    if previous is not None and x.shape[0]:
        out[0] = np.abs(x[0] - previous.astype(np.int16)).mean()
    return out


class MediaProvider(ABC):
    """The media seam: probe a stream, list its frames, decode bounded batches.

    Subclasses implement :meth:`_probe`, :meth:`_iter_refs` and
    :meth:`_decode_batch`; the public methods validate arguments and results.
    A provider is rebuilt by registered name in worker processes
    (:func:`kuration.extend.register_media_provider`), so it must be constructible
    without arguments.
    """

    name: str = ""

    def probe(self, uri: str, stream: int = 0) -> StreamInfo:
        """Describe video stream ``stream`` of ``uri``.

        Raises
        ------
        MediaError
            The file cannot be opened or has no such video stream.
        """
        return self._probe(str(uri), int(stream))

    def iter_refs(self, uri: str, stream: int = 0) -> Iterator[FrameRef]:
        """Every frame of the stream as a :class:`FrameRef`, in presentation order.

        Raises
        ------
        MediaError
            Unreadable file or stream, or a packet without a timestamp.
        """
        return self._iter_refs(str(uri), int(stream))

    def decode_batch(
        self,
        refs: Sequence[FrameRef],
        size: tuple[int, int] | None = None,
        format: str = "rgb24",
    ) -> np.ndarray:
        """Decode exactly the referenced frames, and no more than the bounded batch needs.

        Parameters
        ----------
        refs : sequence of FrameRef
            Frames of one stream of one file, in any order, repeats allowed.
        size : (int, int), optional
            Output ``(H, W)`` in pixels (scaled by the decoder); the coded size when None.
        format : {"rgb24", "bgr24", "gray"}
            Output pixel format.

        Returns
        -------
        ndarray, shape (N, H, W, C), uint8
            Frame ``k`` is ``refs[k]``.  Memory: the result plus the decoder's
            own reference frames.

        Raises
        ------
        MediaError
            Mixed files or streams, a bad size or format, or a reference whose
            pts the stream does not hold.
        """
        if format not in PIXEL_FORMATS:
            raise MediaError(
                f"format must be one of {sorted(PIXEL_FORMATS)}, got {format!r}",
                uri=refs[0].uri if refs else "<none>",
            )
        if not refs:
            h, w = size or (0, 0)
            return np.zeros((0, h, w, PIXEL_FORMATS[format]), dtype=np.uint8)
        first = refs[0]
        for r in refs:
            if not isinstance(r, FrameRef):
                raise MediaError(f"expected FrameRef, got {type(r).__name__}", uri=first.uri)
            if (r.uri, r.stream) != (first.uri, first.stream):
                raise MediaError(
                    f"one batch decodes one stream; got {r.uri!r} stream {r.stream} too",
                    uri=first.uri,
                    stream=first.stream,
                )
        if size is not None and (
            len(size) != 2 or not all(isinstance(s, int) and s > 0 for s in size)
        ):
            raise MediaError(f"size must be (H, W) positive integers, got {size!r}", uri=first.uri)
        out = self._decode_batch(list(refs), size, format)
        c = PIXEL_FORMATS[format]
        if out.dtype != np.uint8 or out.ndim != 4 or out.shape[0] != len(refs) or out.shape[3] != c:
            raise MediaError(
                f"provider {type(self).__name__} returned {out.dtype} {out.shape}, "
                f"expected uint8 ({len(refs)}, H, W, {c})",
                uri=first.uri,
                stream=first.stream,
            )
        return out

    @abstractmethod
    def _probe(self, uri: str, stream: int) -> StreamInfo: ...

    @abstractmethod
    def _iter_refs(self, uri: str, stream: int) -> Iterator[FrameRef]: ...

    @abstractmethod
    def _decode_batch(
        self, refs: list[FrameRef], size: tuple[int, int] | None, format: str
    ) -> np.ndarray: ...


# -- the provider registry --------------------------------------------------

Factory = Callable[[], MediaProvider]
#: built-ins: ``name -> ("module:attr", extra that installs its dependency)``
_BUILTIN = {
    "pyav": ("kuration.sources.pyav:PyAVProvider", "media"),
    "mcap": ("kuration.sources.mcap_media:McapImageProvider", "mcap"),
}
_PROVIDERS: Registry[Factory | str] = Registry("media provider")


def register_media_provider(name: str, factory: Factory | str, *, clobber: bool = False) -> None:
    """Register a provider factory (a zero-argument callable, or a ``"module:attr"`` path).

    Raises
    ------
    RegistrationError
        A ``ValueError``: ``name`` is taken by another factory and ``clobber`` is false.
    """
    _PROVIDERS.register(name, factory, clobber=clobber)


def registered_media_providers() -> tuple[str, ...]:
    return _PROVIDERS.names()


def _resolve(name: str, path: str) -> Factory:
    module, _, attr = path.partition(":")
    try:
        obj: Factory = getattr(importlib.import_module(module), attr)
    except ImportError as exc:
        extra = _BUILTIN.get(name, ("", ""))[1]
        hint = f": pip install 'kuration-sdk[{extra}]'" if extra else ""
        raise MissingExtraError(
            f"media provider {name!r} needs a package that is not installed ({exc}){hint}"
        ) from None
    return obj


def get_media_provider(name: str) -> MediaProvider:
    """A fresh instance of the provider registered as ``name``.

    Raises
    ------
    UnknownNameError
        No such provider (a ``KeyError``; the message lists close matches).
    MissingExtraError
        A built-in whose optional dependency is missing (the message names the extra).
    """
    factory = _PROVIDERS.get(name)
    if isinstance(factory, str):
        factory = _resolve(name, factory)
    provider = factory()
    if not isinstance(provider, MediaProvider):
        raise RegistrationError(f"media provider {name!r} built a {type(provider).__name__}")
    return provider


for _name, (_path, _extra) in _BUILTIN.items():
    register_media_provider(_name, _path)
