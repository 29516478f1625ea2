"""The built-in MediaProvider over PyAV (FFmpeg bindings; the ``[media]`` extra).

References come from the demuxer (packet timestamps, no decode); a batch is
decoded by seeking to the keyframe at or before its earliest frame, decoding
forward, keeping only the requested frames and stopping after the last one.
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import numpy as np

from ..contracts.media import PIXEL_FORMATS, FrameRef, MediaProvider, StreamInfo
from ..errors import MediaError, MissingExtraError

__all__ = ["PyAVProvider"]


def _av() -> Any:
    try:
        import av
    except ImportError:
        raise MissingExtraError(
            "the pyav media provider needs PyAV: pip install 'kuration-sdk[media]'"
        ) from None
    return av


def _open(uri: str, stream: int) -> tuple[Any, Any]:
    av = _av()
    try:
        container = av.open(uri)
    except (av.FFmpegError, OSError) as exc:
        raise MediaError(f"cannot open media: {exc}", uri=uri) from None
    if not 0 <= stream < len(container.streams) or container.streams[stream].type != "video":
        kinds = [s.type for s in container.streams]
        container.close()
        raise MediaError(f"no video stream {stream} (streams: {kinds})", uri=uri, stream=stream)
    return container, container.streams[stream]


class PyAVProvider(MediaProvider):
    """Decode video with PyAV.  Stateless: every call opens and closes the file.

    Memory of :meth:`decode_batch`: the ``(N, H, W, C)`` result plus FFmpeg's
    own reference frames (a few coded-size frames), whatever the video length.
    Cost: the frames from the keyframe before the batch's first frame up to
    its last frame are decoded (a whole GOP at most beyond the batch).
    """

    name = "pyav"

    def _probe(self, uri: str, stream: int) -> StreamInfo:
        container, vs = _open(uri, stream)
        with container:
            tb = Fraction(vs.time_base)
            rate = vs.average_rate
            return StreamInfo(
                uri=uri,
                stream=stream,
                width=int(vs.codec_context.width),
                height=int(vs.codec_context.height),
                frame_rate=Fraction(rate) if rate else None,
                time_base=tb,
                n_frames=int(vs.frames) or None,
                duration=vs.duration * tb if vs.duration is not None else None,
                codec=str(vs.codec_context.name),
            )

    def _iter_refs(self, uri: str, stream: int) -> Iterator[FrameRef]:
        av = _av()
        container, vs = _open(uri, stream)
        pts: list[int] = []
        with container:
            tb = Fraction(vs.time_base)
            try:
                for i, pkt in enumerate(container.demux(vs)):
                    if pkt.size == 0:  # the demuxer's end-of-stream flush packet
                        continue
                    if pkt.pts is None:
                        raise MediaError(f"packet {i} has no timestamp", uri=uri, stream=stream)
                    pts.append(int(pkt.pts))
            except av.FFmpegError as exc:
                raise MediaError(f"cannot demux: {exc}", uri=uri, stream=stream) from None
        pts.sort()
        for i in range(1, len(pts)):
            if pts[i] == pts[i - 1]:
                raise MediaError(f"two frames share pts {pts[i]}", uri=uri, stream=stream, frame=i)
        return iter([FrameRef(uri, stream, p, tb, i) for i, p in enumerate(pts)])

    def _decode_batch(
        self, refs: list[FrameRef], size: tuple[int, int] | None, format: str
    ) -> np.ndarray:
        uri, stream = refs[0].uri, refs[0].stream
        container, vs = _open(uri, stream)
        with container:
            h, w = size or (int(vs.codec_context.height), int(vs.codec_context.width))
            out = np.empty((len(refs), h, w, PIXEL_FORMATS[format]), dtype=np.uint8)
            rows: dict[int, list[int]] = {}
            for k, r in enumerate(refs):
                rows.setdefault(r.pts, []).append(k)
            first = min(rows)
            found = self._decode_into(container, vs, rows, out, (h, w, format), seek=first)
            if len(found) < len(rows):
                # an open GOP can put a frame before the keyframe found by the seek:
                # decode again from the start of the stream (slower, same memory)
                found = self._decode_into(container, vs, rows, out, (h, w, format), seek=None)
            missing = sorted(set(rows) - found)
            if missing:
                r = refs[rows[missing[0]][0]]
                raise MediaError(
                    f"no frame with pts {r.pts} in the stream",
                    uri=uri,
                    stream=stream,
                    frame=r.index,
                )
        return out

    @staticmethod
    def _decode_into(
        container: Any,
        vs: Any,
        rows: dict[int, list[int]],
        out: np.ndarray,
        how: tuple[int, int, str],
        seek: int | None,
    ) -> set[int]:
        av = _av()
        h, w, fmt = how
        last = max(rows)
        found: set[int] = set()
        try:
            container.seek(seek if seek is not None else 0, stream=vs, backward=True)
            for frame in container.decode(vs):
                p = frame.pts
                if p in rows and p not in found:
                    img = frame.to_ndarray(format=fmt, width=w, height=h, interpolation="BILINEAR")
                    img = img.reshape(h, w, -1)
                    for k in rows[p]:
                        out[k] = img
                    found.add(p)
                if p is not None and (p > last or len(found) == len(rows)):
                    break  # decoder output is in presentation order: nothing later is wanted
        except av.FFmpegError as exc:
            raise MediaError(
                f"cannot decode: {exc}", uri=str(container.name), stream=vs.index
            ) from None
        return found
