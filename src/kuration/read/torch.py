"""PyTorch access to a curated dataset (the ``[torch]`` extra; torch is imported lazily).

>>> from kuration.read.torch import ShardDataset            # doctest: +SKIP
>>> from torch.utils.data import DataLoader            # doctest: +SKIP
>>> loader = DataLoader(ShardDataset("out/", split="train"), batch_size=8)  # doctest: +SKIP

A thin layer over :mod:`kuration.read.loaders`: every item is read, checked
and trimmed by the numpy reader, then turned into tensors.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import MissingExtraError
from .loaders import Dataset, read_shard_arrays

__all__ = ["ShardDataset"]


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise MissingExtraError(
            "kuration.read.torch needs PyTorch: pip install 'kuration-sdk[torch]'"
        ) from None
    return torch


class ShardDataset:
    """Map-style dataset: one shard is one item, each modality a tensor.

    Parameters
    ----------
    dataset : path or Dataset
        The dataset directory or its ``dataset_manifest.json``.
    split : str, optional
        Only this split.
    modalities : sequence of str, optional
        Only these modalities (``_present`` comes along when it was written).
    trim : bool
        Cut padded shards to their real length.  With ``short_policy="keep"``
        (or trimming) items have variable length: batch them with a
        ``collate_fn``, or write with ``short_policy="pad"`` and ``trim=False``.
    transform : callable, optional
        Applied to each item (a dict of tensors) before it is returned.
    include_meta : bool
        Attach ``item["_meta"]``: the shard's manifest entry (source_id,
        entity_id, split, padded, ...).
    verify : bool
        Check each shard's SHA-256 before decoding.

    Items are ``{name: tensor of shape (L, *shape)}`` in the declared dtype
    (``uint8`` stays ``torch.uint8``; ``_present`` is ``torch.bool``).  The
    object pickles cheaply, so ``DataLoader(num_workers=n)`` works; each read
    re-checks that the dataset was not replaced since it was opened.

    Raises
    ------
    ImportError
        PyTorch is not installed.
    DatasetIntegrityError
        The dataset is not committed or fails verification.
    KeyError
        An unknown modality.
    """

    def __init__(
        self,
        dataset: str | os.PathLike[str] | Dataset,
        *,
        split: str | None = None,
        modalities: Sequence[str] | None = None,
        trim: bool = True,
        transform: Callable[[dict[str, Any]], Any] | None = None,
        include_meta: bool = False,
        verify: bool = True,
    ) -> None:
        _torch()
        ds = dataset if isinstance(dataset, Dataset) else Dataset(dataset)
        mods = ds.manifest["modalities"]
        wanted = ds.select_modalities(modalities)
        self.root = ds.root
        self.container = ds.manifest["container"]
        self.modalities = {k: dict(mods[k]) for k in wanted}
        self.entries = ds.entries(split)
        self.trim = trim
        self.transform = transform
        self.include_meta = include_meta
        self.verify = verify

    def __len__(self) -> int:
        return len(self.entries)

    def __getitem__(self, index: int) -> Any:
        torch = _torch()
        if not -len(self) <= index < len(self):
            raise IndexError(f"shard index {index} out of range ({len(self)} shards)")
        entry = self.entries[index]
        arrays = read_shard_arrays(
            entry, self.container, root=self.root, modalities=self.modalities, verify=self.verify
        )
        n = int(arrays.pop("_n_steps", entry["n_steps"]))
        item: dict[str, Any] = {}
        masks = [f"_present_{k}" for k in self.modalities]  # media frame masks
        for name in (*self.modalities, "_present", *masks):
            if name in arrays:
                a = arrays[name][:n] if self.trim else arrays[name]
                item[name] = torch.from_numpy(a.copy())
        if self.include_meta:
            # None values (span_index of an unsplit track) are left out so the default
            # collate can batch the metadata
            item["_meta"] = {
                k: v for k, v in entry.items() if not k.startswith("_") and v is not None
            }
        return self.transform(item) if self.transform is not None else item
