"""Built-in BatchTransforms over media: ``motion_energy`` and ``frozen_frames``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..contracts.media import motion_energy
from ..errors import TransformError
from .transforms import BatchTransform, MediaRequest, TransformContext, register_transform

__all__ = ["FrozenFrames", "MotionEnergy", "frozen_pairs"]


class MotionEnergy(BatchTransform):
    """Mean motion energy of a segment's frames.

    For each row, :func:`~kuration.contracts.media.motion_energy` (mean
    absolute difference of consecutive frames, gray, downscaled to ``size``,
    8-bit intensity levels) is taken for every tick of the segment whose frame
    and previous tick's frame both exist; the output is their mean.  With
    ``lookbehind=1`` the segment's first tick is compared with the tick before
    it, which reproduces ``field:motion | mean`` of the
    :class:`~kuration.sources.video.VideoAdapter` ``derived`` field exactly.

    Parameters
    ----------
    size : (int, int)
        ``(H, W)`` the frames are decoded at (default 36 x 64).

    Output
    ------
    motion_energy : float, intensity levels (0-255)
    """

    def __init__(self, size: Sequence[int] = (36, 64)) -> None:
        self.size = (int(size[0]), int(size[1]))

    def transform(self, batch: Mapping[str, Any], ctx: TransformContext) -> dict[str, Any]:
        token = ctx.input_token("frames")
        frames = batch[token]  # (B, T, H, W, 1) uint8
        have = ctx.present[token]
        out = np.empty(frames.shape[0])
        for i in range(frames.shape[0]):
            off = int(ctx.offsets[token][i])
            stop = off + int(ctx.lengths[i])  # the segment's own ticks: [off, stop)
            first = max(off, 1)
            pair = have[i, first:stop] & have[i, first - 1 : stop - 1]
            energy = motion_energy(frames[i, first - 1 : stop])[1:]
            if not pair.any():
                raise TransformError(
                    "no tick of the segment has a frame and a previous frame",
                    transform=ctx.name,
                    segment=ctx.segment_ids[i],
                    token=token,
                )
            out[i] = float(energy[pair].mean())
        return {"motion_energy": out, "segment_ids": ctx.segment_ids}


def _request(params: Mapping[str, Any]) -> MediaRequest:
    size = params.get("size", (36, 64))
    return MediaRequest(size=tuple(size) if isinstance(size, list | tuple) else size, format="gray")


register_transform(
    "motion_energy",
    MotionEnergy,
    inputs={"frames": "media:frame"},
    outputs=["motion_energy"],
    media={"frames": _request},
    batch_size=8,
    execution_traits={"scope": "window", "shape": "map", "state": "bounded"},
)


#: a frame is frozen when no pixel differs from the previous frame's by more than this
#: many 8-bit gray levels (exact repeats give 0; a codec's drift over a still picture
#: stays within a level or two)
FROZEN_TOL = 2


def frozen_pairs(gray: np.ndarray, tol: int = FROZEN_TOL) -> np.ndarray:
    """Whether each frame repeats the one before it.

    Parameters
    ----------
    gray : ndarray, shape (T, H, W, 1) or (T, H, W), uint8
        Consecutive decoded frames, gray levels 0-255.
    tol : int
        Largest per-pixel difference, levels, of a repeated frame.

    Returns
    -------
    ndarray, shape (T - 1,), bool
        Element ``t - 1``: ``max |gray[t] - gray[t - 1]| <= tol``.
    """
    g = gray.reshape(gray.shape[0], -1).astype(np.int16)
    if g.shape[0] < 2:
        return np.zeros(0, dtype=bool)
    return np.asarray(np.abs(np.diff(g, axis=0)).max(axis=1) <= tol)


class FrozenFrames(BatchTransform):
    """Share of a segment's frames that repeat the frame before them (a frozen camera).

    For every tick of the segment whose frame and the previous tick's frame both
    exist, the pair is frozen when no pixel of the gray frames (decoded at ``size``,
    default the column's declared size) differs by more than ``tol`` levels
    (:func:`frozen_pairs`); the output is the frozen pairs over all pairs.  A
    frozen camera (a driver repeating its last buffer, a stalled stream) gives
    exact repeats; a scene that moves, even slowly, changes some pixel by more.
    The definition is ours (no peer tool grades video frames); use ``lookbehind=1``
    so that the segment's first frame is compared with the one before it.

    Parameters
    ----------
    size : (int, int), optional
        ``(H, W)`` the frames are decoded at.
    tol : int
        Largest per-pixel difference (8-bit levels) of a repeated frame.

    Output
    ------
    frozen_fraction : float in [0, 1]

    Raises
    ------
    TransformError
        A segment without a tick that has a frame and a previous frame.
    """

    def __init__(self, size: Sequence[int] | None = None, tol: int = FROZEN_TOL) -> None:
        self.size = None if size is None else (int(size[0]), int(size[1]))
        self.tol = int(tol)

    def transform(self, batch: Mapping[str, Any], ctx: TransformContext) -> dict[str, Any]:
        token = ctx.input_token("frames")
        frames = batch[token]  # (B, T, H, W, 1) uint8
        have = ctx.present[token]
        out = np.empty(frames.shape[0])
        for i in range(frames.shape[0]):
            off = int(ctx.offsets[token][i])
            stop = off + int(ctx.lengths[i])
            first = max(off, 1)
            pair = have[i, first:stop] & have[i, first - 1 : stop - 1]
            if not pair.any():
                raise TransformError(
                    "no tick of the segment has a frame and a previous frame",
                    transform=ctx.name,
                    segment=ctx.segment_ids[i],
                    token=token,
                )
            frozen = frozen_pairs(frames[i, first - 1 : stop], self.tol)
            out[i] = float(frozen[pair].mean())
        return {"frozen_fraction": out, "segment_ids": ctx.segment_ids}


def _gray_request(params: Mapping[str, Any]) -> MediaRequest:
    size = params.get("size")
    return MediaRequest(size=None if size is None else (int(size[0]), int(size[1])), format="gray")


register_transform(
    "frozen_frames",
    FrozenFrames,
    inputs={"frames": "media:frame"},
    outputs=["frozen_fraction"],
    media={"frames": _gray_request},
    batch_size=8,
    execution_traits={"scope": "window", "shape": "map", "state": "bounded"},
)
