"""Built-in BatchTransforms over media: ``motion_energy``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..contracts.media import motion_energy
from ..errors import TransformError
from .transforms import BatchTransform, MediaRequest, TransformContext, register_transform

__all__ = ["MotionEnergy"]


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
