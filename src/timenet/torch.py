"""A map-style PyTorch dataset over a TimeF version (requires torch).

This module imports torch; the rest of :mod:`timenet` never does, so the
package works without it. Obtain one through :meth:`timenet.TimeNet.open_torch`.

Everything that could fail part way through an epoch is decided when the
dataset is built, from the catalog alone (no value is read): the signal set,
records that lack a requested signal, stored nulls under ``nulls="error"`` and
window lengths.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import torch
from torch.utils.data import Dataset

from timenet.errors import MissingSignalsError, NullValuesError, OptionError, SchemaError
from timenet.reader import Signal, TimeFReader
from timenet.specs import SignalSpec

__all__ = ["TorchDataset", "pad_collate"]

Policy = Literal["fill", "error"]


def _fill_value(dtype: np.dtype[Any]) -> Any:
    """NaN for floating dtypes, else 0 (``False`` for bool): what null, missing and pad steps hold."""
    return np.nan if dtype.kind == "f" else dtype.type(0)


def _check_option(name: str, value: Any, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise OptionError(name, value, " or ".join(repr(a) for a in allowed))


def _check_positive(name: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise OptionError(name, value, "a positive integer number of steps")
    return int(value)


class TorchDataset(Dataset[Any]):
    """One item per record (or per window of ``window`` steps), every tensor masked and timed.

    An item is a dict::

        {"record_id": str, "index": int, "start": int,
         "signals": {name: Tensor (T, *shape)},   # values, dtype below
         "mask":    {name: BoolTensor (T,)},      # True where the step holds a value
         "times":   {name: LongTensor (T,)}}      # int64 ns after the signal's time_origin

    ``start`` is the first step of the item in its record (0 without windows).
    Values keep the signal's dtype (timestamps become int64 ns; values
    converted with ``units`` are float64). Null steps, steps of a signal the
    record lacks, and padding hold NaN in floating signals and 0 (``False``) in
    integer and bool ones, and are ``False`` in ``mask``: the mask, not the
    value, is authoritative. Items of different lengths batch with
    :meth:`collate`; with ``window`` every item has exactly ``window`` steps and
    the default collate works too. The dataset pickles (the reader drops its open
    files), so it works with ``DataLoader(num_workers=N)``.

    Parameters
    ----------
    reader : TimeFReader
        An open version.
    signals : sequence of str, optional
        Signal names to return. Default: the signals every record holds.
    units : mapping of str to str, optional
        Convert a signal's values to a unit, e.g. ``{"temp": "degF"}``.
    transform : callable, optional
        Applied to each item before it is returned.
    nulls : {"fill", "error"}
        ``"fill"``: null steps become the fill value with ``mask`` False.
        ``"error"``: refuse nulls: stored nulls are found in the catalog when the
        dataset is built; values that the spec declares missing or out of range
        are found when read (:class:`NullValuesError`).
    missing : {"fill", "error"}
        A record that lacks a requested signal: ``"fill"`` gives that signal
        the fill value and a False mask over the record's time axis (the steps
        and times of its first requested signal that it has); ``"error"``
        raises :class:`MissingSignalsError` naming the records when the dataset
        is built.
    window : int, optional
        Cut every record into items of ``window`` steps; the last window of a
        record is padded (mask False, times 0). Every requested signal a record
        holds must then have the same number of steps.
    stride : int, optional
        Steps between window starts (default ``window``: no overlap). Windows
        start at 0, ``stride``, ... until one reaches the end of the record.

    Attributes
    ----------
    signal_names : tuple of str
        The signals of every item, in order.
    signal_units : dict of str to str
        Unit of each returned signal (after ``units`` conversion).
    specs : dict of str to SignalSpec
        Spec of each signal (dtype, shape, time base) as stored.

    Raises
    ------
    MissingSignalsError
        If records share no signal (``signals`` unset), a requested signal is in
        no record, or ``missing="error"`` and some records lack one.
    NullValuesError
        If ``nulls="error"`` and a requested signal stores nulls.
    SchemaError
        If ``window`` is set and a record's signals differ in length.
    OptionError
        On an unknown policy or a window or stride that is not a positive int.
    """

    def __init__(
        self,
        reader: TimeFReader,
        *,
        signals: Sequence[str] | None = None,
        units: Mapping[str, str] | None = None,
        transform: Callable[[dict[str, Any]], Any] | None = None,
        nulls: Policy = "fill",
        missing: Policy = "fill",
        window: int | None = None,
        stride: int | None = None,
    ) -> None:
        _check_option("nulls", nulls, ("fill", "error"))
        _check_option("missing", missing, ("fill", "error"))
        self.window = _check_positive("window", window)
        self.stride = _check_positive("stride", stride) or self.window
        if self.stride is not None and self.window is None:
            raise OptionError("stride", stride, "to be used with window")
        self.reader = reader
        self.units = dict(units or {})
        self.transform = transform
        self.nulls = nulls
        self.missing = missing
        records = reader.records()
        self.record_ids = [r.id for r in records]
        rows = [reader._catalog.signal_rows(r.index) for r in records]
        self._regular_axes: dict[Any, np.ndarray] = {}  # times of a rate, start and length
        self._rows = rows  # each record's catalog rows: an item makes its handles from them
        self.signal_names = self._choose_signals(rows, signals, missing)
        self.specs: dict[str, SignalSpec] = {}
        for per_record in rows:
            for name in self.signal_names:
                if name in per_record and name not in self.specs:
                    self.specs[name] = per_record[name].spec
        self.signal_units = {n: self.units.get(n, s.unit) for n, s in self.specs.items()}
        self._dtypes = {n: self._out_dtype(n) for n in self.signal_names}
        if nulls == "error":
            self._refuse_stored_nulls(rows)
        lengths = self._record_lengths(rows)
        self._lengths = lengths
        if self.window is None:
            self._item_record = np.arange(len(records), dtype=np.int64)
            self._item_start = np.zeros(len(records), dtype=np.int64)
        else:
            w, s = self.window, self.stride
            assert s is not None
            counts = np.where(lengths > 0, 1 + np.ceil(np.maximum(lengths - w, 0) / s), 0)
            counts = counts.astype(np.int64)
            self._item_record = np.repeat(np.arange(len(records), dtype=np.int64), counts)
            first = np.cumsum(counts) - counts  # item number of each record's first window
            self._item_start = (np.arange(int(counts.sum())) - np.repeat(first, counts)) * s

    def _choose_signals(
        self, rows: list[dict[str, Any]], signals: Sequence[str] | None, missing: Policy
    ) -> tuple[str, ...]:
        ids, total = self.record_ids, len(self.record_ids)
        schema_names = [s.name for s in self.reader.schema.signals]
        have = {n: np.array([n in r for r in rows], dtype=bool) for n in schema_names}
        if signals is None:
            names = tuple(n for n in schema_names if have[n].all())
            if names or not total:
                return names
            lacking = {n: tuple(np.asarray(ids)[~have[n]].tolist()) for n in schema_names}
            raise MissingSignalsError(
                lacking,
                total,
                "choose signals= (missing='fill' masks the records that lack one)",
                lead=f"the records of {self.reader.ref} share no signal: ",
            )
        names = tuple(signals)
        nowhere = [n for n in names if n not in have or not have[n].any()]
        if nowhere:
            raise MissingSignalsError(
                {n: tuple(ids) for n in nowhere},
                total,
                f"{self.reader.ref} has signals {schema_names}",
            )
        lacking = {n: tuple(np.asarray(ids)[~have[n]].tolist()) for n in names if not have[n].all()}
        if lacking and missing == "error":
            common = [n for n in schema_names if have[n].all()]
            raise MissingSignalsError(
                lacking,
                total,
                f"pass missing='fill' to read them as fill values with a False mask, "
                f"or choose among the signals every record has: {common}",
            )
        return names

    def _out_dtype(self, name: str) -> np.dtype[Any]:
        spec = self.specs[name]
        if name in self.units:
            return np.dtype(np.float64)
        dtype = spec.numpy_dtype
        return np.dtype(np.int64) if dtype.kind == "M" else dtype

    def _refuse_stored_nulls(self, rows: list[dict[str, Any]]) -> None:
        for rid, per_record in zip(self.record_ids, rows, strict=True):
            for name in self.signal_names:
                row = per_record.get(name)
                if row is not None and row.null_count:
                    raise NullValuesError(
                        name,
                        rid,
                        row.null_count,
                        hint="nulls='error' refuses them (nulls='fill' masks them)",
                    )

    def _record_lengths(self, rows: list[dict[str, Any]]) -> np.ndarray:
        """Steps of each record's time axis: its first requested signal that it holds."""
        out = np.zeros(len(rows), dtype=np.int64)
        for i, per_record in enumerate(rows):
            lengths = {n: per_record[n].length for n in self.signal_names if n in per_record}
            if not lengths:
                continue
            out[i] = next(iter(lengths.values()))
            if self.window is not None and len(set(lengths.values())) > 1:
                raise SchemaError(
                    f"window={self.window} needs the signals of a record to have the same "
                    f"number of steps, found {lengths}",
                    record=self.record_ids[i],
                )
        return out

    def __len__(self) -> int:
        return len(self._item_record)

    def _signal(
        self, sig: Signal, start: int, steps: int, size: int, axes: dict[Any, np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Values, mask and times of ``sig``'s steps ``[start, start + steps)``, padded to
        ``size`` steps (fill value, False, 0); a null step gets the fill value (or is
        refused).  Each array is the item's own (writable, shared with nothing)."""
        name = sig.name
        data, ok = sig.read_steps_valid(start, start + steps, unit=self.units.get(name))
        if data.dtype.kind == "M":
            data = data.view(np.int64)
        dtype, axis = self._dtypes[name], self._time_axis(sig, start, steps, axes)
        if steps == size:  # one allocation and copy each (the common, unpadded case)
            v = data.astype(dtype, copy=True)
            m = np.ones(size, dtype=bool) if ok is None else np.array(ok, dtype=bool)
            t = axis.copy()
        else:
            v = np.full((size, *self.specs[name].shape), _fill_value(dtype), dtype=dtype)
            v[:steps] = data
            m = np.zeros(size, dtype=bool)
            m[:steps] = True if ok is None else ok
            t = np.zeros(size, dtype=np.int64)
            t[:steps] = axis
        if ok is not None:
            if self.nulls == "error":
                n_null = int(steps - np.count_nonzero(ok))
                raise NullValuesError(
                    name, sig.record_id, n_null, hint="nulls='error' refuses them"
                )
            v[:steps][~ok] = _fill_value(dtype)
        return v, m, t

    def _time_axis(
        self, sig: Signal, start: int, steps: int, axes: dict[Any, np.ndarray]
    ) -> np.ndarray:
        """Times of ``sig``'s steps (read-only: callers copy): an axis shared by several
        signals of the item (one region of a times file) is read once, a regular axis (a
        rate and a start) once for every record with that time base."""
        h, spec = sig._times, sig.spec
        if h is None:
            key: Any = (spec.rate_hz, spec.start_ns, start, steps)
            got = self._regular_axes.get(key)
            if got is None:
                if len(self._regular_axes) >= 256:  # bounded: windows of many lengths
                    self._regular_axes.clear()
                got = self._regular_axes[key] = sig.read_times(start, start + steps)
            return got
        key = (id(h.source), h.offset + start, steps)
        got = axes.get(key)
        if got is None:
            got = axes[key] = sig.read_times(start, start + steps)
        return got

    def __getitem__(self, index: int) -> Any:
        if not -len(self) <= index < len(self):
            raise IndexError(f"item {index} is out of range: {len(self)} item(s)")
        r = int(self._item_record[index])
        start = int(self._item_start[index])
        rid, total = self.record_ids[r], int(self._lengths[r])
        rows, make = self._rows[r], self.reader._make_signal
        sigs = {n: make(rid, rows[n]) for n in self.signal_names if n in rows}
        values: dict[str, Any] = {}
        mask: dict[str, Any] = {}
        times: dict[str, Any] = {}
        axes: dict[Any, np.ndarray] = {}
        axis: np.ndarray | None = None  # times of the first present signal
        window = self.window
        for name in self.signal_names:
            # without windows each signal keeps its own length; a missing one takes the axis
            sig = sigs.get(name)
            length = total if sig is None else len(sig)
            steps = length - start if window is None else min(window, length - start)
            size = steps if window is None else window
            if sig is None:
                dtype = self._dtypes[name]
                v = np.full((size, *self.specs[name].shape), _fill_value(dtype), dtype=dtype)
                m, t = np.zeros(size, dtype=bool), np.zeros(size, dtype=np.int64)
            else:
                v, m, t = self._signal(sig, start, steps, size, axes)
                axis = t[:steps] if axis is None else axis
            values[name], mask[name], times[name] = v, m, t
        for name in self.signal_names:
            if name not in sigs and axis is not None:
                times[name][: len(axis)] = axis
        item: dict[str, Any] = {
            "record_id": rid,
            "index": int(index),
            "start": start,
            "signals": {n: torch.from_numpy(a) for n, a in values.items()},
            "mask": {n: torch.from_numpy(a) for n, a in mask.items()},
            "times": {n: torch.from_numpy(a) for n, a in times.items()},
        }
        return self.transform(item) if self.transform is not None else item

    @staticmethod
    def collate(items: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """Batch items of different lengths: see :func:`pad_collate`."""
        return pad_collate(items)


def pad_collate(items: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Batch :class:`TorchDataset` items, padding each signal to its longest item.

    Parameters
    ----------
    items : sequence of dict
        Items as returned by :meth:`TorchDataset.__getitem__` (no ``transform``).

    Returns
    -------
    dict
        ``record_id`` (list of str), ``index`` and ``start`` (LongTensor (B,)),
        ``signals`` {name: Tensor (B, T_max, *shape)} padded with NaN (floating)
        or 0, ``mask`` {name: BoolTensor (B, T_max)} False at padding,
        ``times`` {name: LongTensor (B, T_max)} 0 at padding, and ``lengths``
        {name: LongTensor (B,)} the steps of each item.
    """
    out: dict[str, Any] = {
        "record_id": [it["record_id"] for it in items],
        "index": torch.tensor([it["index"] for it in items], dtype=torch.int64),
        "start": torch.tensor([it["start"] for it in items], dtype=torch.int64),
        "signals": {},
        "mask": {},
        "times": {},
        "lengths": {},
    }
    if not items:
        return out
    for name in items[0]["signals"]:
        vals = [it["signals"][name] for it in items]
        lengths = torch.tensor([len(v) for v in vals], dtype=torch.int64)
        size = int(lengths.max()) if len(vals) else 0
        fill = float("nan") if vals[0].is_floating_point() else 0
        batch = torch.full((len(vals), size, *vals[0].shape[1:]), fill, dtype=vals[0].dtype)
        mask = torch.zeros((len(vals), size), dtype=torch.bool)
        times = torch.zeros((len(vals), size), dtype=torch.int64)
        for i, it in enumerate(items):
            n = len(vals[i])
            batch[i, :n] = vals[i]
            mask[i, :n] = it["mask"][name]
            times[i, :n] = it["times"][name]
        out["signals"][name], out["mask"][name] = batch, mask
        out["times"][name], out["lengths"][name] = times, lengths
    return out
