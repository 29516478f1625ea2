"""The cameras of a LeRobot v3 export: one MP4 per camera, the episodes one after another.

Each camera's decoded frames (a ``media:`` modality of the curated dataset, uint8
``(H, W, 3)``) are encoded with PyAV (H.264, ``yuv420p``, QP 10 and one thread as the layout's
:mod:`.lerobot_cameras` encodes, so reruns give the same bytes; one frame per
``1/fps`` tick) into ``videos/<key>/chunk-000/file-000.mp4``; an episode's frames
start at ``from_timestamp = first frame / fps`` in that file, as LeRobot addresses
them.  The curated frames were decoded once already, so they are re-encoded, never
remuxed: the export's frames equal the curated ones up to the codec's loss.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from .lerobot_cameras import QP, X264_PARAMS

__all__ = ["VIDEO_PATH", "write_videos"]

VIDEO_PATH = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"


def write_videos(
    root: Path,
    episodes: Sequence[Mapping[str, Any]],
    cams: Mapping[str, str],
    fps: int,
    ep_rows: list[dict[str, Any]],
) -> dict[str, dict[str, Any]]:
    """Encode every camera; add each episode's window to ``ep_rows``; the video features.

    Parameters
    ----------
    cams : mapping of str to str
        Modality -> LeRobot camera key (``observation.images.<name>``).

    Raises
    ------
    MissingExtraError
        PyAV (the ``media`` extra) is not installed.
    """
    from ..errors import MissingExtraError

    try:
        import av
    except ImportError as exc:  # pragma: no cover - the extra is a dev dependency
        raise MissingExtraError("exporting cameras needs the [media] extra (PyAV)") from exc
    feats = {}
    for mod, key in cams.items():
        h, w = episodes[0]["frames"][mod].shape[1:3]
        path = root / VIDEO_PATH.format(video_key=key, chunk_index=0, file_index=0)
        path.parent.mkdir(parents=True, exist_ok=True)
        with av.open(str(path), "w") as out:
            opts = {"qp": QP, "threads": "1", "x264-params": X264_PARAMS}
            stream = out.add_stream("libx264", rate=fps, options=opts)
            stream.width, stream.height, stream.pix_fmt = w, h, "yuv420p"
            stream.codec_context.time_base = Fraction(1, fps)
            start = 0
            for ep, row in zip(episodes, ep_rows, strict=True):
                frames = np.ascontiguousarray(ep["frames"][mod])
                for i, img in enumerate(frames):
                    frame = av.VideoFrame.from_ndarray(img, format="rgb24")
                    frame.pts = start + i
                    out.mux(stream.encode(frame))
                pre = f"videos/{key}/"
                row[pre + "chunk_index"], row[pre + "file_index"] = 0, 0
                row[pre + "from_timestamp"] = start / fps
                row[pre + "to_timestamp"] = (start + len(frames)) / fps
                start += len(frames)
            out.mux(stream.encode(None))
        feats[key] = {
            "dtype": "video",
            "shape": [int(h), int(w), 3],
            "names": ["height", "width", "channels"],
            "info": {
                "video.height": int(h),
                "video.width": int(w),
                "video.codec": "h264",
                "video.pix_fmt": "yuv420p",
                "video.is_depth_map": False,
                "video.fps": fps,
                "video.channels": 3,
                "has_audio": False,
            },
        }
    return feats
