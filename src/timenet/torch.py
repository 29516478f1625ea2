"""A map-style PyTorch dataset over a TimeF version (requires torch).

This module imports torch; the rest of :mod:`timenet` never does, so the
package works without it. Obtain one through :meth:`timenet.TimeNet.open_torch`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

from timenet.reader import TimeFReader

__all__ = ["TorchDataset"]


class TorchDataset(Dataset[Any]):
    """One item per record: ``{"record_id": str, "index": int, "signals": {name: Tensor}}``.

    Each tensor has shape ``(T, *spec.shape)`` and the signal's dtype
    (timestamps become int64 ns; values converted with ``units`` are float64).
    The dataset pickles (the reader drops its open files), so it works with
    ``DataLoader(num_workers=N)``.

    Parameters
    ----------
    reader : TimeFReader
        An open version.
    signals : sequence of str, optional
        Only these signal names (default: all of each record).
    units : mapping of str to str, optional
        Convert a signal's values to a unit, e.g. ``{"temp": "degF"}``.
    transform : callable, optional
        Applied to each item before it is returned.
    """

    def __init__(
        self,
        reader: TimeFReader,
        *,
        signals: Sequence[str] | None = None,
        units: Mapping[str, str] | None = None,
        transform: Callable[[dict[str, Any]], Any] | None = None,
    ) -> None:
        self.reader = reader
        self.record_ids = [r.id for r in reader.records()]
        self.signal_names = None if signals is None else tuple(signals)
        self.units = dict(units or {})
        self.transform = transform

    def __len__(self) -> int:
        return len(self.record_ids)

    def __getitem__(self, index: int) -> Any:
        rid = self.record_ids[index]
        sigs = self.reader.signals(rid)
        names = self.signal_names if self.signal_names is not None else tuple(sigs)
        tensors = {}
        for name in names:
            sig = sigs[name] if name in sigs else self.reader.signal(rid, name)
            arr = sig.to_numpy(unit=self.units.get(name))
            if arr.dtype.kind == "M":
                arr = arr.view(np.int64)
            # Arrow-backed arrays are read-only; copy so the tensor owns writable memory.
            tensors[name] = torch.from_numpy(np.array(arr, copy=True))
        item: dict[str, Any] = {"record_id": rid, "index": index, "signals": tensors}
        return self.transform(item) if self.transform is not None else item
