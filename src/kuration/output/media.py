"""The ``media:<column>`` route: one shard's frame references decoded in one bounded batch.

For a shard of ``L`` steps and a media modality ``name`` of shape ``(H, W, C)``
the shard holds:

* ``name`` : ``(L, H, W, C)`` uint8 — the decoded frames; all zeros where the
  step has no frame;
* ``_present_<name>`` : ``(L,)`` bool — true exactly where a frame was
  decoded: the entity is present (``_present``) *and* the tick has a frame
  (the adapter matched one within tolerance).  Padded rows are false.

So ``_present_<name>`` implies ``_present``; a present entity without a frame
(a gap in the video, a series tick with no frame in tolerance) is
``_present=True, _present_<name>=False`` and zeros, never a repeated frame.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..contracts.media import get_media_provider
from ..contracts.schema import SchemaSpec
from ..contracts.track import Track
from ..errors import OutputSpecError
from .spec import ModalitySpec

__all__ = ["media_mask_name", "shard_media"]


def media_mask_name(modality: str) -> str:
    """Name of the per-step frame mask stored next to media modality ``modality``."""
    return f"_present_{modality}"


def shard_media(
    mods: Sequence[ModalitySpec], track: Track, schema: SchemaSpec, start: int, stop: int
) -> dict[str, np.ndarray]:
    """Decode the frames of track steps ``[start, stop)`` for every media modality.

    One :meth:`~kuration.contracts.media.MediaProvider.decode_batch` call per
    modality; peak memory is about twice the shard's decoded frames
    (``(stop - start) * H * W * C`` bytes: the decoded batch and the shard array).

    Returns
    -------
    dict of str to ndarray
        ``name`` : (L, H, W, C) uint8 and ``_present_<name>`` : (L,) bool per modality.

    Raises
    ------
    OutputSpecError
        The track carries no such media column (the adapter attached none).
    MediaError
        A frame cannot be decoded (names uri, stream and frame).
    """
    out: dict[str, np.ndarray] = {}
    n = stop - start
    for m in mods:
        col = track.media.get(m.arg)
        if col is None:
            raise OutputSpecError(
                f"modality {m.name!r}: source {track.source_id!r}, entity {track.entity_id!r} "
                f"has no media column {m.arg!r} (its adapter attaches none)"
            )
        spec = schema.media_column(m.arg)
        rows = track.present[start:stop] & (col.index[start:stop] >= 0)
        refs = col.refs_at(np.flatnonzero(rows) + start)
        frames = get_media_provider(spec.provider).decode_batch(
            refs, size=spec.size, format=spec.pixel_format
        )
        if len(refs) == n:
            arr = frames
        else:
            arr = np.zeros((n, *spec.shape), dtype=np.uint8)
            arr[rows] = frames
            del frames
        out[m.name] = arr
        out[media_mask_name(m.name)] = rows.copy()
    return out
