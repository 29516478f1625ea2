"""Images in MCAP files as lazy media: the ``mcap`` MediaProvider.

An image topic's messages are frames.  A :class:`~kuration.contracts.media.FrameRef`
names the file, the channel (``stream`` is the MCAP channel id), and the message's
log time in nanoseconds (``pts``, ``time_base = 1/1e9``); listing the frames reads
the message records but decodes no message (:func:`image_messages`).  Pixels are
decoded only in :meth:`McapImageProvider.decode_batch`, one bounded batch at a time,
by reading the messages between the batch's first and last log time.

Message types (by their fields, so ROS 2 CDR and JSON messages alike):

* raw images, ``sensor_msgs/msg/Image`` (``height``, ``width``, ``encoding``,
  ``step``, ``data``): encodings ``rgb8``, ``bgr8``, ``rgba8``, ``bgra8``, ``mono8``;
* compressed images, ``sensor_msgs/msg/CompressedImage`` and
  ``foxglove.CompressedImage`` (``format``, ``data``): JPEG or PNG, decoded with PyAV.

In JSON messages ``data`` is base64 text (the convention of JSON-encoded MCAP) or a
list of byte values.  Frames are converted to the requested pixel format and scaled
with PyAV's bilinear scaler, as the ``pyav`` provider scales video frames.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Mapping
from fractions import Fraction
from typing import Any

import numpy as np

from ..contracts.media import PIXEL_FORMATS, FrameRef, MediaProvider, StreamInfo
from ..errors import MediaError, MissingExtraError

__all__ = ["NS", "McapImageProvider", "image_messages"]

#: the time base of an MCAP frame reference: nanoseconds
NS = Fraction(1, 10**9)
_RAW = {"rgb8": ("rgb24", 3), "bgr8": ("bgr24", 3), "rgba8": ("rgba", 4), "bgra8": ("bgra", 4)}
_RAW["mono8"] = ("gray", 1)
_RAW["8UC1"] = ("gray", 1)
_RAW["8UC3"] = ("bgr24", 3)  # OpenCV's default channel order


def _modules() -> tuple[Any, Any, Any]:
    try:
        import av
        from mcap.reader import make_reader
        from mcap_ros2.decoder import DecoderFactory
    except ImportError as exc:
        raise MissingExtraError(f"MCAP images need the [mcap] and [media] extras ({exc})") from None
    return av, make_reader, DecoderFactory


def image_messages(uri: str, topic: str) -> tuple[int, np.ndarray, np.ndarray]:
    """The channel id of ``topic`` and its messages' log and publish times (ns, int64), in
    log-time order; no message is decoded.

    Raises
    ------
    MediaError
        The file cannot be read, it has no such topic, or two of its messages share a
        log time (a frame is addressed by it).
    """
    _, make_reader, _ = _modules()
    log, pub, chan = [], [], None
    try:
        with open(uri, "rb") as fh:
            for _, channel, message in make_reader(fh).iter_messages(topics=[topic]):
                if chan is None:
                    chan = channel.id
                elif channel.id != chan:
                    raise MediaError(f"topic {topic!r} spans several channels", uri=uri)
                log.append(message.log_time)
                pub.append(message.publish_time)
    except OSError as exc:
        raise MediaError(f"cannot read MCAP: {exc}", uri=uri) from None
    if chan is None:
        raise MediaError(f"topic {topic!r} has no message", uri=uri)
    t = np.asarray(log, dtype=np.int64)
    if np.any(np.diff(t) == 0):
        i = int(np.flatnonzero(np.diff(t) == 0)[0]) + 1
        raise MediaError(f"two images share log time {int(t[i])} ns", uri=uri, frame=i)
    return chan, t, np.asarray(pub, dtype=np.int64)


def _bytes(data: Any) -> bytes:
    if isinstance(data, str):  # JSON: base64 text
        return base64.b64decode(data)
    if isinstance(data, list):
        return bytes(data)
    return bytes(data)


def _field(msg: Any, name: str) -> Any:
    return msg[name] if isinstance(msg, Mapping) else getattr(msg, name)


def _has(msg: Any, name: str) -> bool:
    return name in msg if isinstance(msg, Mapping) else hasattr(msg, name)


class McapImageProvider(MediaProvider):
    """Decode image messages of MCAP files (see the module docstring).  Stateless."""

    name = "mcap"

    def _topic(self, reader: Any, uri: str, stream: int) -> str:
        summary = reader.get_summary()
        channels = summary.channels if summary is not None else {}
        if stream not in channels:
            raise MediaError(f"no channel {stream}", uri=uri, stream=stream)
        return str(channels[stream].topic)

    def _messages(
        self, uri: str, stream: int, start: int | None = None, end: int | None = None
    ) -> Iterator[tuple[int, Any]]:
        """``(log_time, decoded message)`` of channel ``stream`` in ``[start, end]`` ns."""
        _, make_reader, factory = _modules()
        ros2 = factory()
        decoder = None
        try:
            with open(uri, "rb") as fh:
                reader = make_reader(fh)
                topic = self._topic(reader, uri, stream)
                for schema, channel, message in reader.iter_messages(
                    topics=[topic], starting_at=start, ending_at=end
                ):
                    if channel.message_encoding == "json":
                        yield message.log_time, json.loads(message.data)
                    elif channel.message_encoding == "cdr":
                        decoder = decoder or ros2.decoder_for("cdr", schema)
                        yield message.log_time, decoder(message.data)
                    else:
                        raise MediaError(
                            f"message encoding {channel.message_encoding!r} is not read "
                            "(json, cdr)",
                            uri=uri,
                            stream=stream,
                        )
        except OSError as exc:
            raise MediaError(f"cannot read MCAP: {exc}", uri=uri, stream=stream) from None

    def _frame(self, msg: Any, uri: str, stream: int, t: int) -> Any:
        """The message's picture as a PyAV VideoFrame."""
        av = _modules()[0]
        data = _bytes(_field(msg, "data"))
        if _has(msg, "encoding") and _has(msg, "width"):
            enc = str(_field(msg, "encoding"))
            if enc not in _RAW:
                raise MediaError(
                    f"image encoding {enc!r} is not read ({sorted(_RAW)})", uri=uri, stream=stream
                )
            fmt, c = _RAW[enc]
            h, w, step = (
                int(_field(msg, "height")),
                int(_field(msg, "width")),
                int(_field(msg, "step")),
            )
            if step < w * c or len(data) < step * h:
                raise MediaError(
                    f"image at {t} ns: {len(data)} bytes for {h} rows of step {step}",
                    uri=uri,
                    stream=stream,
                )
            rows = np.frombuffer(data, dtype=np.uint8, count=step * h).reshape(h, step)
            img = np.ascontiguousarray(rows[:, : w * c].reshape(h, w, c))
            return av.VideoFrame.from_ndarray(img[..., 0] if c == 1 else img, format=fmt)
        if _has(msg, "format"):
            kind = str(_field(msg, "format")).lower()
            codec = (
                "png" if "png" in kind else "mjpeg" if ("jpeg" in kind or "jpg" in kind) else None
            )
            if codec is None:
                raise MediaError(f"compressed format {kind!r} is not read (jpeg, png)", uri=uri)
            try:
                ctx = av.CodecContext.create(codec, "r")
                frames = ctx.decode(av.Packet(data)) + ctx.decode(None)
            except av.FFmpegError as exc:
                raise MediaError(f"image at {t} ns: {exc}", uri=uri, stream=stream) from None
            if not frames:
                raise MediaError(f"image at {t} ns decodes to nothing", uri=uri, stream=stream)
            return frames[0]
        raise MediaError(f"message at {t} ns is not an image", uri=uri, stream=stream)

    def _probe(self, uri: str, stream: int) -> StreamInfo:
        for t, msg in self._messages(uri, stream):
            frame = self._frame(msg, uri, stream, t)
            _, make_reader, _ = _modules()
            with open(uri, "rb") as fh:
                summary = make_reader(fh).get_summary()
            counts = summary.statistics.channel_message_counts if summary else {}
            return StreamInfo(
                uri=uri,
                stream=stream,
                width=int(frame.width),
                height=int(frame.height),
                frame_rate=None,
                time_base=NS,
                n_frames=int(counts[stream]) if stream in counts else None,
                duration=None,
                codec="image",
            )
        raise MediaError("the image topic has no message", uri=uri, stream=stream)

    def _iter_refs(self, uri: str, stream: int) -> Iterator[FrameRef]:
        _, make_reader, _ = _modules()
        with open(uri, "rb") as fh:
            topic = self._topic(make_reader(fh), uri, stream)
        _, log, _ = image_messages(uri, topic)
        return iter([FrameRef(uri, stream, int(t), NS, i) for i, t in enumerate(log)])

    def _decode_batch(
        self, refs: list[FrameRef], size: tuple[int, int] | None, format: str
    ) -> np.ndarray:
        uri, stream = refs[0].uri, refs[0].stream
        rows: dict[int, list[int]] = {}
        for k, r in enumerate(refs):
            rows.setdefault(r.pts, []).append(k)
        out: np.ndarray | None = None
        found = 0
        for t, msg in self._messages(uri, stream, min(rows), max(rows)):
            if t not in rows:
                continue
            frame = self._frame(msg, uri, stream, t)
            h, w = size or (int(frame.height), int(frame.width))
            img = frame.to_ndarray(format=format, width=w, height=h, interpolation="BILINEAR")
            img = img.reshape(h, w, -1)
            if out is None:
                out = np.empty((len(refs), h, w, PIXEL_FORMATS[format]), dtype=np.uint8)
            for k in rows.pop(t):
                out[k] = img
            found += 1
        if rows:
            r = refs[next(iter(rows.values()))[0]]
            raise MediaError(
                f"no image logged at {r.pts} ns", uri=uri, stream=stream, frame=r.index
            )
        assert out is not None  # every reference was found
        return out
