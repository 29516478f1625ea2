"""Fixed-length model windows from a committed dataset, as numpy arrays (no torch).

:func:`model_windows` turns the shards of a dataset back into the ``(N, T, D)`` array a
sequence model trains on: the shards of one entity in one source are joined by their
``start_idx`` into runs of consecutive steps (the shards of a span, and the spans of a
track where they touch), and windows of ``length`` steps are cut every ``stride``
steps inside each run, never across a gap.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..errors import ReaderOptionError
from .loaders import Dataset, open_dataset
from .shards import shard_arrays

__all__ = ["ModelWindows", "model_windows"]


@dataclass(frozen=True)
class ModelWindows:
    """Windows cut by :func:`model_windows`.

    Attributes
    ----------
    values : ndarray, shape (N, T, D), ``dtype``
        The modalities side by side: each step's values of ``columns[0]`` flattened,
        then ``columns[1]``, ...; ``slices[name]`` is a modality's range of ``D``.
    time_s : ndarray, shape (N, T), float64
        Each step's time, seconds since the Unix epoch.
    present : ndarray, shape (N, T), bool
        Whether the entity holds a value at the step (all true with ``require_present``).
    entity : ndarray, shape (N,), object
        The entity's tagged id as the manifest writes it (``str:39c902``).
    source_id : ndarray, shape (N,), object
    span_index : ndarray, shape (N,), int64
        The span of the window's first step (-1 for a whole track).
    start_idx : ndarray, shape (N,), int64
        The first step on the source's tick grid.
    columns : tuple of str
    slices : dict of str to slice
    """

    values: np.ndarray
    time_s: np.ndarray
    present: np.ndarray
    entity: np.ndarray
    source_id: np.ndarray
    span_index: np.ndarray
    start_idx: np.ndarray
    columns: tuple[str, ...]
    slices: dict[str, slice]

    def __len__(self) -> int:
        return int(self.values.shape[0])

    def __repr__(self) -> str:
        # the arrays run to millions of values; their shape says what a reader needs
        n_ent = len(set(self.entity.tolist()))
        return (
            f"ModelWindows(values={self.values.shape} {self.values.dtype}, "
            f"columns={list(self.columns)}, entities={n_ent}, sources={len(set(self.source_id))})"
        )


def model_windows(
    dataset: str | os.PathLike[str] | Dataset,
    split: str | None = None,
    modalities: Sequence[str] | None = None,
    *,
    length: int,
    stride: int = 1,
    require_present: bool = True,
    dtype: Any = np.float64,
    verify: bool = True,
) -> ModelWindows:
    """Every window of ``length`` steps, every ``stride`` steps, of a dataset's tracks.

    The shards of one ``(source_id, entity_id)`` are sorted by ``start_idx`` and joined
    where one ends at the step the next starts (``start_idx + n_steps``; pad rows are
    trimmed first); a run of ``L`` steps gives windows starting at ``0, stride, ...,
    <= L - length``, counted from the run's first step.  Runs are taken in manifest
    order of their first shard.

    Parameters
    ----------
    dataset : path or Dataset
    split : str, optional
        Only this split (default: all).
    modalities : sequence of str, optional
        The modalities side by side in ``values`` (default: every one); each must be
        numeric.
    length, stride : int
        Window length ``T`` and hop, in steps (>= 1).
    require_present : bool
        Drop a window holding a step where the entity is absent (``_present`` false)
        or a value is not finite.
    dtype : numpy dtype
        Of ``values``.
    verify : bool
        Check every shard's SHA-256 before decoding it.

    Returns
    -------
    ModelWindows

    Raises
    ------
    ReaderOptionError
        ``length`` or ``stride`` below 1, or a non-numeric modality.
    UnknownSplitError, UnknownModalityError, DatasetIntegrityError
        As the dataset's own readers.
    """
    if int(length) < 1 or int(stride) < 1:
        raise ReaderOptionError(f"length and stride must be >= 1, got {length!r} and {stride!r}")
    ds = dataset if isinstance(dataset, Dataset) else open_dataset(dataset)
    ds.check_split(split)
    columns = ds.select_modalities(modalities)
    mods = ds.manifest["modalities"]
    for c in columns:
        if not np.issubdtype(np.dtype(mods[c].get("dtype", "float32")), np.number):
            raise ReaderOptionError(f"modality {c!r} is not numeric ({mods[c].get('dtype')})")
    widths = [int(np.prod(mods[c].get("shape") or [1])) for c in columns]
    offs = np.r_[0, np.cumsum(widths)].astype(int)
    slices = {
        c: slice(int(a), int(b)) for c, a, b in zip(columns, offs[:-1], offs[1:], strict=True)
    }
    parts: list[dict[str, Any]] = []
    for run in _runs(ds.entries(split)):
        parts.append(_cut(ds, run, columns, int(length), int(stride), require_present, verify))
    return _stack(parts, columns, slices, int(length), int(offs[-1]), dtype)


def _runs(entries: Sequence[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """Each entity's shards per source, sorted by ``start_idx`` and cut where they do not
    touch; runs in the order of their first shard in the manifest."""
    by_track: dict[tuple[str, Any], list[tuple[int, Mapping[str, Any]]]] = {}
    for i, e in enumerate(entries):
        by_track.setdefault((e["source_id"], e["entity_id"]), []).append((i, e))
    runs: list[tuple[int, list[Mapping[str, Any]]]] = []
    for shards in by_track.values():
        shards.sort(key=lambda x: int(x[1]["start_idx"]))
        cur: list[Mapping[str, Any]] = []
        first = 0
        for i, e in shards:
            if cur and int(cur[-1]["start_idx"]) + int(cur[-1]["n_steps"]) != int(e["start_idx"]):
                runs.append((first, cur))
                cur = []
            if not cur:
                first = i
            cur.append(e)
        if cur:
            runs.append((first, cur))
    runs.sort(key=lambda r: r[0])
    return [r for _, r in runs]


def _cut(
    ds: Dataset,
    run: Sequence[Mapping[str, Any]],
    columns: Sequence[str],
    length: int,
    stride: int,
    require_present: bool,
    verify: bool,
) -> dict[str, Any]:
    """The windows of one run of touching shards."""
    arrays = [shard_arrays(ds, e, columns, trim=True, verify=verify) for e in run]
    n = sum(int(e["n_steps"]) for e in run)
    if n < length:
        return {}
    vals = np.concatenate(
        [
            np.concatenate([a[c].reshape(len(a[c]), -1).astype(np.float64) for c in columns], 1)
            for a in arrays
        ]
    )
    time_s = np.concatenate([a["_time_s"] for a in arrays])
    present = np.concatenate([a.get("_present", np.ones(len(a["_time_s"]), bool)) for a in arrays])
    span = np.concatenate(
        [
            np.full(int(e["n_steps"]), -1 if e.get("span_index") is None else e["span_index"])
            for e in run
        ]
    )
    starts = np.arange(0, n - length + 1, stride)
    win = sliding_window_view(vals, length, axis=0)[starts].transpose(0, 2, 1)
    pres = sliding_window_view(present, length)[starts]
    keep = np.ones(starts.size, bool)
    if require_present:
        keep = pres.all(axis=1) & np.isfinite(win).all(axis=(1, 2))
    s = starts[keep]
    return {
        "values": win[keep],
        "time_s": sliding_window_view(time_s, length)[s],
        "present": pres[keep],
        "entity": np.full(s.size, run[0]["entity_id"], dtype=object),
        "source_id": np.full(s.size, run[0]["source_id"], dtype=object),
        "span_index": span[s].astype(np.int64),
        "start_idx": int(run[0]["start_idx"]) + s.astype(np.int64),
    }


def _stack(
    parts: list[dict[str, Any]],
    columns: Sequence[str],
    slices: dict[str, slice],
    length: int,
    width: int,
    dtype: Any,
) -> ModelWindows:
    parts = [p for p in parts if p and len(p["values"])]

    def cat(key: str, empty: np.ndarray) -> np.ndarray:
        return np.concatenate([p[key] for p in parts]) if parts else empty

    return ModelWindows(
        values=cat("values", np.zeros((0, length, width))).astype(dtype, copy=False),
        time_s=cat("time_s", np.zeros((0, length))),
        present=cat("present", np.zeros((0, length), bool)),
        entity=cat("entity", np.zeros(0, object)),
        source_id=cat("source_id", np.zeros(0, object)),
        span_index=cat("span_index", np.zeros(0, np.int64)),
        start_idx=cat("start_idx", np.zeros(0, np.int64)),
        columns=tuple(columns),
        slices=slices,
    )
