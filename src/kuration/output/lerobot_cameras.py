"""The cameras of the ``lerobot`` output layout: one MP4 per episode and camera.

An admitted span's frames are referenced in a source video (``FrameRef``: file,
stream, pts).  When the span is a run of consecutive frames of one stream whose
coded packets (in decode order) begin with a keyframe, hold no frame outside the
span, and are followed by a keyframe or the end of the stream, the packets are
copied as they are (:func:`remux_span`, PyAV, no decode): the cut falls on
keyframes, so the copy decodes alone.  Otherwise the span's decoded frames are
encoded again (:func:`encode_frames`: H.264, ``yuv420p``, constant QP :data:`QP`).

The encode is set up for byte-identical reruns: one thread (the bytes do not depend
on the machine's cores), and constant QP without scene-cut detection, adaptive
B-frames or weighted prediction.  With CRF, x264's low-resolution lookahead, which
those features share, gave different bytes for the same frames within one process
(4 distinct files in 25 encodes of robovet's 160x120 frames, seemingly from memory
it reads before writing); with these settings 60 of 60 encodes were identical.

Each file starts at time 0 and holds exactly the episode's frames, one per
``1/fps`` tick, so the episodes table gives ``from_timestamp = 0`` and
``to_timestamp = length / fps``; LeRobot v3 allows a file per episode (the
``videos/<key>/file_index`` column).  A file depends only on its own episode, so
a rerun or resume leaves an unchanged episode's video byte-identical.

:func:`read_frames` decodes frames of a written file as kuration's readers return
them; the caller compares them with the source's frames and falls back to
encoding when a remux does not decode to the same pixels.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from ..contracts.media import FrameRef, get_media_provider
from ..errors import MissingExtraError

__all__ = [
    "PROVIDER",
    "QP",
    "camera_feature",
    "encode_frames",
    "read_frames",
    "remux_span",
    "video_rel",
]

QP = "10"
#: x264 settings that keep its low-resolution lookahead off (see the module docstring)
X264_PARAMS = "scenecut=0:b-adapt=0:weightp=0"
#: the media provider that decodes the written videos
PROVIDER = "pyav"
#: a remuxed frame's time may differ from ``i / fps`` by this much (LeRobot's tolerance)
TOLERANCE_S = 1e-4


def _av() -> Any:
    try:
        import av
    except ImportError:  # pragma: no cover - the extra is a dev dependency
        raise MissingExtraError("writing cameras needs the [media] extra (PyAV)") from None
    return av


def video_rel(key: str, episode: int, chunks_size: int = 1000) -> tuple[str, int, int]:
    """The file of ``episode``'s camera ``key``, relative to the dataset root, with its
    chunk and file index (``file_index`` runs ``0 .. chunks_size - 1`` per chunk)."""
    chunk, file = divmod(episode, chunks_size)
    return f"videos/{key}/chunk-{chunk:03d}/file-{file:03d}.mp4", chunk, file


def _contiguous(refs: Sequence[FrameRef]) -> bool:
    first = refs[0]
    return all(
        r.uri == first.uri and r.stream == first.stream and r.index == first.index + i
        for i, r in enumerate(refs)
    )


def _span_packets(container: Any, vs: Any, refs: Sequence[FrameRef]) -> list[Any] | None:
    """The coded packets of exactly the span's frames when the cut falls on keyframes."""
    want = {r.pts for r in refs}
    container.seek(refs[0].pts, stream=vs, backward=True, any_frame=False)
    kept: list[Any] = []
    for pkt in container.demux(vs):
        if pkt.size == 0:
            continue
        if not kept:
            if pkt.pts not in want:
                if pkt.pts is not None and pkt.pts > refs[-1].pts:
                    return None
                continue  # frames of the GOP before the span
            if not pkt.is_keyframe:
                return None
            kept.append(pkt)
        elif len(kept) < len(want):
            if pkt.pts not in want:
                return None  # a frame outside the span in the middle of its packets
            kept.append(pkt)
        else:
            return kept if pkt.is_keyframe else None
    return kept if len(kept) == len(want) else None


def remux_span(refs: Sequence[FrameRef], out: Path, fps: int, size: tuple[int, int]) -> bool:
    """Copy the packets of the frames ``refs`` into ``out`` when the cut allows it.

    Parameters
    ----------
    refs : sequence of FrameRef
        The span's frames in presentation order (of the ``pyav`` provider).
    out : Path
        The MP4 to write (its folder exists).
    fps : int
        Frames per second; frame ``i`` of the copy must lie at ``i / fps`` s.
    size : (int, int)
        ``(H, W)``: the source's coded size must be it (a copy is not scaled).

    Returns
    -------
    bool
        Whether ``out`` was written; False (nothing written) when the frames are not
        one run of one stream, the file is not one PyAV reads, the size differs, the cut
        is not on keyframes, or the frames are off the ``1/fps`` grid.
    """
    if not refs or not _contiguous(refs):
        return False
    av = _av()
    base = refs[0].pts
    tb = refs[0].time_base
    off_grid = any(
        abs(float((r.pts - base) * tb - Fraction(i, fps))) > TOLERANCE_S for i, r in enumerate(refs)
    )
    if off_grid:
        return False
    try:
        src = av.open(refs[0].uri)
    except (av.FFmpegError, OSError):
        return False  # not a file PyAV reads: the frames are encoded instead
    with src:
        vs = src.streams[refs[0].stream]
        if (int(vs.codec_context.height), int(vs.codec_context.width)) != tuple(size):
            return False
        packets = _span_packets(src, vs, refs)
        if packets is None:
            return False
        with av.open(str(out), "w", format="mp4") as dst:
            ost = dst.add_stream_from_template(vs)
            for pkt in packets:
                pkt.pts -= base
                if pkt.dts is not None:
                    pkt.dts -= base
                pkt.stream = ost
                dst.mux(pkt)
    return True


def encode_frames(frames: np.ndarray, out: Path, fps: int) -> None:
    """Encode ``(N, H, W, 3)`` uint8 RGB frames into ``out`` (H.264, ``yuv420p``, QP
    :data:`QP`, one thread, :data:`X264_PARAMS`), frame ``i`` at ``i / fps`` s.

    Raises
    ------
    MissingExtraError
        PyAV is not installed.
    """
    av = _av()
    h, w = frames.shape[1:3]
    with av.open(str(out), "w", format="mp4") as dst:
        opts = {"qp": QP, "threads": "1", "x264-params": X264_PARAMS}
        stream = dst.add_stream("libx264", rate=fps, options=opts)
        stream.width, stream.height, stream.pix_fmt = w, h, "yuv420p"
        stream.codec_context.time_base = Fraction(1, fps)
        for i, img in enumerate(np.ascontiguousarray(frames)):
            frame = av.VideoFrame.from_ndarray(img, format="rgb24")
            frame.pts = i
            dst.mux(stream.encode(frame))
        dst.mux(stream.encode(None))


def read_frames(path: Path | str, first: int, n: int, size: tuple[int, int]) -> np.ndarray:
    """Frames ``[first, first + n)`` (presentation order) of a written camera file,
    ``(n, H, W, 3)`` uint8 RGB at ``size`` = ``(H, W)``.

    Raises
    ------
    MediaError
        The file cannot be decoded or holds fewer frames.
    """
    from ..errors import MediaError

    provider = get_media_provider(PROVIDER)
    refs = list(provider.iter_refs(str(path), 0))[first : first + n]
    if len(refs) != n:
        raise MediaError(f"holds {len(refs)} of the frames {first}..{first + n}", uri=str(path))
    if n == 0:
        return np.zeros((0, *size, 3), dtype=np.uint8)
    return provider.decode_batch(refs, size=size, format="rgb24")


def camera_feature(shape: Sequence[int], fps: int, codec: str) -> dict[str, Any]:
    """The ``info.json`` feature of a camera of frames ``(H, W, 3)``."""
    h, w = int(shape[0]), int(shape[1])
    return {
        "dtype": "video",
        "shape": [h, w, 3],
        "names": ["height", "width", "channels"],
        "info": {
            "video.height": h,
            "video.width": w,
            "video.codec": codec,
            "video.pix_fmt": "yuv420p",
            "video.is_depth_map": False,
            "video.fps": fps,
            "video.channels": 3,
            "has_audio": False,
        },
    }
