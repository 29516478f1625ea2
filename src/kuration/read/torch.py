"""PyTorch access to a curated dataset (the ``[torch]`` extra; torch is imported lazily).

>>> from kuration.read.torch import ShardDataset, FrameDataset      # doctest: +SKIP
>>> from torch.utils.data import DataLoader                      # doctest: +SKIP
>>> loader = DataLoader(ShardDataset("out/", split="train"), batch_size=8)  # doctest: +SKIP
>>> frames = FrameDataset("out/", split="train",
...                       delta_timestamps={"position": [-2.0, -1.0, 0.0, 1.0]})  # doctest: +SKIP

A thin layer over :mod:`kuration.read.loaders`: every shard is read, checked
and trimmed by the numpy reader, then turned into tensors.

* :class:`ShardDataset`: one shard is one item.  By default every item is
  padded to the dataset's ``shard_length`` (``pad_to="shard"``), so the
  default ``DataLoader`` collate batches it; ``pad_to=None`` keeps each
  shard's real length, batched with :func:`pad_collate` (pads to the longest
  item in the batch).
* :class:`FrameDataset`: one real step (frame) is one item, with LeRobot-style
  ``delta_timestamps``: for each listed key the values at the requested
  offsets in seconds, and ``<key>_is_pad`` where a neighbour falls outside the
  track.

Every item carries its timestamps (``_time_s``, float64 seconds since the
Unix epoch, NaN on pad rows); ``.features`` gives each modality's dtype,
shape and unit.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import MissingExtraError, ReaderOptionError
from .loaders import Dataset
from .shards import shard_arrays
from .table import FeatureInfo

__all__ = ["FrameDataset", "ShardDataset", "pad_collate"]

_NAN_PADDED = ("_time_s",)


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise MissingExtraError(
            "kuration.read.torch needs PyTorch: pip install 'kuration-sdk[torch]'"
        ) from None
    return torch


def _pad_value(key: str) -> float:
    return float("nan") if key.endswith(_NAN_PADDED) else 0.0


def pad_collate(batch: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Collate items of different lengths: every tensor with a leading (time) axis is padded
    at the end to the longest in the batch, then stacked; the rest goes through
    ``torch.utils.data.default_collate``.

    Pad rows are zero, ``False`` in ``_present`` and NaN in ``_time_s``; the
    real lengths are ``batch["_n_steps"]``, shape (B,), int64.  Use it as
    ``DataLoader(ShardDataset(path, pad_to=None), batch_size=B, collate_fn=pad_collate)``.

    Returns
    -------
    dict
        ``batch[name]`` of shape (B, T_max, *shape) for per-step tensors.
    """
    torch = _torch()
    from torch.nn.utils.rnn import pad_sequence
    from torch.utils.data import default_collate

    out: dict[str, Any] = {}
    for key in batch[0]:
        vals = [b[key] for b in batch]
        if isinstance(vals[0], torch.Tensor) and vals[0].ndim >= 1:
            out[key] = pad_sequence(vals, batch_first=True, padding_value=_pad_value(key))
        else:
            out[key] = default_collate(vals)
    return out


def _open(dataset: str | os.PathLike[str] | Dataset, split: str | None) -> Dataset:
    ds = dataset if isinstance(dataset, Dataset) else Dataset(dataset)
    ds.check_split(split)
    return ds if split is None else ds[split]


class ShardDataset:
    """Map-style dataset: one shard is one item, each modality a tensor.

    Parameters
    ----------
    dataset : path or Dataset
        The dataset directory, its ``dataset_manifest.json``, or a
        :class:`~kuration.Dataset` view (``ds["train"].shuffle(seed=0)``).
    split : str, optional
        Only this split.
    modalities : sequence of str, optional
        Only these modalities (``_present`` comes along when it was written).
    pad_to : "shard", int or None
        ``"shard"`` (default): every item has ``shard_length`` steps, real
        steps first, then zero rows (``_present`` false, ``_time_s`` NaN), so
        the default collate batches items.  An int: that many steps (at least
        ``shard_length``).  None: each item has its real ``n_steps``; batch
        with ``collate_fn=pad_collate``.
    transform : callable, optional
        Applied to each item (a dict of tensors) before it is returned.
    include_meta : bool
        Attach ``item["_meta"]``: the shard's manifest entry (source_id,
        entity_id, split, padded, ...).
    verify : bool
        Check each shard's SHA-256 before decoding.

    Items are ``{name: tensor of shape (L, *shape)}`` in the declared dtype
    (``uint8`` stays ``torch.uint8``; ``_present`` is ``torch.bool``), plus
    ``_time_s`` (L,) float64 seconds since the Unix epoch and ``_n_steps``
    (int64 scalar, the real length).  The object pickles cheaply, so
    ``DataLoader(num_workers=n)`` works; each read re-checks that the dataset
    was not replaced since it was opened.

    Raises
    ------
    ImportError
        PyTorch is not installed.
    DatasetIntegrityError
        The dataset is not committed or fails verification.
    UnknownSplitError
        A split the dataset does not have (the message names those it has).
    UnknownModalityError
        An unknown modality.
    ReaderOptionError
        ``pad_to`` shorter than ``shard_length``, or not "shard", an int or None.
    """

    collate = staticmethod(pad_collate)

    def __init__(
        self,
        dataset: str | os.PathLike[str] | Dataset,
        *,
        split: str | None = None,
        modalities: Sequence[str] | None = None,
        pad_to: str | int | None = "shard",
        transform: Callable[[dict[str, Any]], Any] | None = None,
        include_meta: bool = False,
        verify: bool = True,
    ) -> None:
        _torch()
        ds = _open(dataset, split)
        self.columns = ds.select_modalities(modalities)
        self._ds = ds.select_columns(self.columns)
        self.root = ds.root
        self.container = ds.manifest["container"]
        self.modalities = self._ds.modalities
        self.entries = self._ds.entries()
        length = int(ds.manifest["shard_length"])
        if pad_to == "shard":
            self.length: int | None = length
        elif pad_to is None:
            self.length = None
        elif isinstance(pad_to, int) and not isinstance(pad_to, bool) and pad_to >= length:
            self.length = pad_to
        else:
            raise ReaderOptionError(
                f"pad_to must be 'shard', None or an int >= shard_length ({length}), got {pad_to!r}"
            )
        self.transform = transform
        self.include_meta = include_meta
        self.verify = verify

    @property
    def features(self) -> dict[str, FeatureInfo]:
        """Modality -> dtype, per-step shape, unit and source."""
        return self._ds.features

    @property
    def units(self) -> dict[str, Any]:
        """Modality -> unit (a pint string, one per component, or None)."""
        return {k: f.unit for k, f in self.features.items()}

    def __len__(self) -> int:
        return len(self.entries)

    def __getitem__(self, index: int) -> Any:
        torch = _torch()
        if not -len(self) <= index < len(self):
            raise IndexError(f"shard index {index} out of range ({len(self)} shards)")
        entry = self.entries[index]
        arrays = shard_arrays(self._ds, entry, self.columns, trim=True, verify=self.verify)
        n = int(arrays["_time_s"].shape[0])
        item: dict[str, Any] = {}
        for name, a in arrays.items():
            if self.length is not None and self.length > n:
                full = np.full((self.length, *a.shape[1:]), _pad_value(name), dtype=a.dtype)
                full[:n] = a
                a = full
            item[name] = torch.from_numpy(np.array(a, copy=True))
        item["_n_steps"] = torch.tensor(n, dtype=torch.int64)
        if self.include_meta:
            # None values (span_index of an unsplit track) are left out so the default
            # collate can batch the metadata
            item["_meta"] = {
                k: v for k, v in entry.items() if not k.startswith("_") and v is not None
            }
        return self.transform(item) if self.transform is not None else item


def _offsets(
    delta_timestamps: Mapping[str, Sequence[float]], hz: float, tolerance_s: float, keys: Any
) -> dict[str, np.ndarray]:
    out = {}
    for key, deltas in delta_timestamps.items():
        if key not in keys:
            raise ReaderOptionError(
                f"delta_timestamps names {key!r}, which is not one of {sorted(keys)}"
            )
        d = np.asarray(list(deltas), dtype=np.float64)
        if d.ndim != 1 or d.size == 0 or not np.isfinite(d).all():
            raise ReaderOptionError(
                f"delta_timestamps[{key!r}] must be a non-empty list of seconds"
            )
        steps = np.rint(d * hz)
        off = np.abs(d - steps / hz)
        if (off > tolerance_s).any():
            bad = float(d[int(np.argmax(off))])
            raise ReaderOptionError(
                f"delta_timestamps[{key!r}]: {bad!r} s is not a multiple of 1/{hz:g} s "
                f"(the sample period) within tolerance_s={tolerance_s:g}"
            )
        out[key] = steps.astype(np.int64)
    return out


class FrameDataset:
    """Map-style dataset: one real step of a track is one item (LeRobot-style frames).

    Parameters
    ----------
    dataset : path or Dataset
        As for :class:`ShardDataset`.
    split : str, optional
        Only this split.
    modalities : sequence of str, optional
        Only these modalities.
    delta_timestamps : mapping of str to list of float, optional
        For each key (a modality, ``_present`` or ``_time_s``) the offsets in
        seconds, relative to the frame, at which to return values; each must
        be a multiple of the sample period (within ``tolerance_s``).
    tolerance_s : float
        Allowed distance of an offset from the sample grid.
    transform : callable, optional
        Applied to each item before it is returned.
    verify : bool
        Check each shard's SHA-256 before decoding.
    cache_shards : int
        Decoded shards kept per process (neighbours usually share a shard).

    Items hold, for a frame at step ``t`` of its track:

    * each modality not in ``delta_timestamps``: its value at ``t``, shape ``shape``;
    * each key in ``delta_timestamps`` with K offsets: shape ``(K, *shape)``, and
      ``<key>_is_pad`` (K,) bool, true where ``t + offset`` falls outside the
      track (no shard of this track in the view covers it); there the value is
      the nearest frame of the track (LeRobot clamps the same way);
    * ``_time_s`` (float64 scalar, or (K,) when listed), ``_present`` (bool),
      ``_index`` (the item index), ``_track_index`` (the track's index in this
      view) and ``_frame_index`` (``t``, counted from the track's first step in
      this view), int64.

    A track is one (source, entity, span) of the manifest; its shards are
    joined by ``start_idx``, so neighbours cross shard boundaries.

    Raises
    ------
    ImportError
        PyTorch is not installed.
    UnknownSplitError, UnknownModalityError
        An unknown split or modality.
    ReaderOptionError
        A ``delta_timestamps`` key that is not a column, or an offset off the grid.
    """

    def __init__(
        self,
        dataset: str | os.PathLike[str] | Dataset,
        *,
        split: str | None = None,
        modalities: Sequence[str] | None = None,
        delta_timestamps: Mapping[str, Sequence[float]] | None = None,
        tolerance_s: float = 1e-4,
        transform: Callable[[dict[str, Any]], Any] | None = None,
        verify: bool = True,
        cache_shards: int = 16,
    ) -> None:
        _torch()
        ds = _open(dataset, split)
        self.columns = ds.select_modalities(modalities)
        self._ds = ds.select_columns(self.columns)
        self.entries = self._ds.entries()
        self.hz = float(ds.manifest["sample_hz"])
        keys = {*self.columns, "_time_s"}
        if ds.manifest.get("presence_mask", True):
            keys.add("_present")
        self.deltas = _offsets(delta_timestamps or {}, self.hz, tolerance_s, keys)
        self.transform = transform
        self.verify = verify
        self.cache_shards = max(1, int(cache_shards))
        self._cache: OrderedDict[int, dict[str, np.ndarray]] = OrderedDict()
        self._index_frames()

    def _index_frames(self) -> None:
        """Tracks, their shards' step ranges and the frame -> (shard, row) map, vectorised."""
        keys = [(e["source_id"], e["entity_id"], e.get("span_index")) for e in self.entries]
        track_of: dict[Any, int] = {}
        track = np.array([track_of.setdefault(k, len(track_of)) for k in keys], dtype=np.int64)
        start = np.array([int(e["start_idx"]) for e in self.entries], dtype=np.int64)
        n = np.array([int(e["n_steps"]) for e in self.entries], dtype=np.int64)
        self.n_tracks = len(track_of)
        # shards sorted by (track, start): searchsorted finds the one that covers a step
        self._order = np.lexsort((start, track))
        self._track_sorted = track[self._order]
        self._start_sorted = start[self._order]
        self._stop_sorted = (start + n)[self._order]
        first = np.full(self.n_tracks, np.iinfo(np.int64).max, dtype=np.int64)
        last = np.full(self.n_tracks, -1, dtype=np.int64)
        np.minimum.at(first, track, start)
        np.maximum.at(last, track, start + n - 1)
        self._first, self._last = first, last
        self._shard_track, self._shard_start = track, start
        self._offsets = np.concatenate([[0], np.cumsum(n)])

    def __len__(self) -> int:
        return int(self._offsets[-1])

    @property
    def features(self) -> dict[str, FeatureInfo]:
        """Modality -> dtype, per-step shape, unit and source."""
        return self._ds.features

    @property
    def units(self) -> dict[str, Any]:
        """Modality -> unit (a pint string, one per component, or None)."""
        return {k: f.unit for k, f in self.features.items()}

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_cache"] = OrderedDict()  # each worker decodes its own shards
        return state

    def _shard(self, i: int) -> dict[str, np.ndarray]:
        hit = self._cache.get(i)
        if hit is not None:
            self._cache.move_to_end(i)
            return hit
        arrays = shard_arrays(
            self._ds, self.entries[i], self.columns, trim=True, verify=self.verify
        )
        self._cache[i] = arrays
        if len(self._cache) > self.cache_shards:
            self._cache.popitem(last=False)
        return arrays

    def _locate(self, track: int, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The shard (entry index, -1 if none) and row holding each step of ``track``."""
        lo = np.searchsorted(self._track_sorted, track, side="left")
        hi = np.searchsorted(self._track_sorted, track, side="right")
        starts, stops = self._start_sorted[lo:hi], self._stop_sorted[lo:hi]
        j = np.searchsorted(starts, steps, side="right") - 1
        ok = (j >= 0) & (steps < stops[np.clip(j, 0, None)])
        shard = np.where(ok, self._order[lo:hi][np.clip(j, 0, None)], -1)
        row = np.where(ok, steps - starts[np.clip(j, 0, None)], 0)
        return shard, row

    def _gather(self, key: str, shards: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return np.stack(
            [self._shard(int(s))[key][int(r)] for s, r in zip(shards, rows, strict=True)]
        )

    def __getitem__(self, index: int) -> Any:
        torch = _torch()
        if not -len(self) <= index < len(self):
            raise IndexError(f"frame index {index} out of range ({len(self)} frames)")
        index = index % len(self)
        shard = int(np.searchsorted(self._offsets, index, side="right") - 1)
        row = index - int(self._offsets[shard])
        track = int(self._shard_track[shard])
        step = int(self._shard_start[shard]) + row
        here = self._shard(shard)
        item: dict[str, Any] = {}
        for key in here:  # modalities, _present (and media frame masks), _time_s
            if key not in self.deltas:
                item[key] = torch.from_numpy(np.array(here[key][row], copy=True))
                continue
            want = step + self.deltas[key]
            pad = (want < self._first[track]) | (want > self._last[track])
            shards, rows = self._locate(track, np.clip(want, self._first[track], self._last[track]))
            gap = shards < 0  # a shard of the track left out of this view
            pad |= gap
            shards, rows = np.where(gap, shard, shards), np.where(gap, row, rows)
            item[key] = torch.from_numpy(self._gather(key, shards, rows))
            item[f"{key}_is_pad"] = torch.from_numpy(pad)
        item["_index"] = torch.tensor(index, dtype=torch.int64)
        item["_track_index"] = torch.tensor(track, dtype=torch.int64)
        item["_frame_index"] = torch.tensor(step - int(self._first[track]), dtype=torch.int64)
        return self.transform(item) if self.transform is not None else item
