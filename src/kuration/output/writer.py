"""ShardWriter: cut a Track into fixed-length shards and write them atomically.

A track of ``n`` steps becomes ``ceil(n / shard_length)`` shards; the short
tail is kept as is (``keep``), padded with zero rows (``pad``, the real length
is stored in ``_n_steps`` and the manifest) or dropped (``drop``).  Each shard
holds every declared modality as ``(L, *shape)`` in its declared dtype, the
``_present`` mask (unless ``presence_mask`` is off), ``_n_steps``, and the
reserved ``_time_s`` (float64 seconds since the Unix epoch per step, NaN on
pad rows) and ``_entity`` (the type-tagged entity id, a 0-d string).  The
layout is specified in ``docs/format.md``.

Shards go to a same-directory temp file moved into place with ``os.replace``,
so a shard path never holds a partial file.

``media:<column>`` modalities are decoded one shard at a time
(:func:`kuration.output.media.shard_media`): shards are produced, written and
released in turn, so peak memory is bounded by one shard's decoded frames
(times a container-dependent constant), whatever the track's length.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import os
import stat
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..contracts.schema import SchemaSpec
from ..contracts.track import Track
from ..core.ids import safe_name, stable_hash12, tag_entity_id
from ..errors import (
    DatasetIntegrityError,
    DestinationError,
    KurationError,
    OutputSpecError,
    OutputValueError,
)
from .containers import get_container
from .encoders import PassthroughEncoder
from .media import shard_media
from .spec import ROUNDING_POLICIES, ModalitySpec, OutputSpec

__all__ = [
    "PLAN_KEYS",
    "ShardSlot",
    "ShardWriter",
    "plan_entries",
    "shard_plan",
    "shard_stem",
    "write_track",
]

#: the manifest keys of a shard that its plan fixes: what must agree for an earlier shard to be reused
PLAN_KEYS = (
    "split",
    "source_id",
    "entity_id",
    "span_index",
    "shard_index",
    "start_idx",
    "start_time_s",
    "n_steps",
    "padded",
)


def shard_stem(source_id: str, entity_id: Any, span_index: int | None) -> str:
    """``<readable prefix>_<hash12>``: portable, bounded, and unique per (source, entity, span).

    The prefix is a sanitized, length-bounded rendering (no path separators,
    ``..``, spaces or non-ASCII); the hash of the exact ``(source_id, tagged
    entity id, span)`` keeps ids that flatten alike apart.

    Raises
    ------
    ValueError
        For an entity id without a canonical form (see :func:`kuration.core.ids.tag_entity_id`).
    """
    tag = tag_entity_id(entity_id)
    readable = f"{source_id}_{tag.partition(':')[2]}"
    if span_index is not None:
        readable += f"_span{span_index:03d}"
    return f"{safe_name(readable, 64)}_{stable_hash12(source_id, tag, str(span_index))}"


@dataclass(frozen=True)
class ShardSlot:
    """Shard ``index`` covers track steps ``[start, stop)``; ``padded`` when it was filled to length."""

    index: int
    start: int
    stop: int
    padded: bool

    @property
    def n_steps(self) -> int:
        return self.stop - self.start


def shard_plan(n_steps: int, spec: OutputSpec) -> list[ShardSlot]:
    """The shards a track of ``n_steps`` becomes under ``spec`` (short policy applied)."""
    length = spec.shard_length
    out = []
    for i, start in enumerate(range(0, n_steps, length)):
        stop = min(start + length, n_steps)
        short = stop - start < length
        if short and spec.short_policy == "drop":
            break
        out.append(ShardSlot(i, start, stop, short and spec.short_policy == "pad"))
    return out


def plan_entries(
    *,
    source_id: str,
    entity_id: Any,
    span_index: int | None,
    start_idx: int,
    n_steps: int,
    k0: int,
    sample_hz: float,
    split: str,
    spec: OutputSpec,
) -> list[dict[str, Any]]:
    """Manifest entries of one track, without ``size``/``sha256`` (known only once written)."""
    suffix = get_container(spec.container).suffix
    stem = shard_stem(source_id, entity_id, span_index)
    tag = tag_entity_id(entity_id)
    return [
        {
            "path": f"{split}/{stem}_shard{s.index:04d}{suffix}",
            "split": split,
            "source_id": source_id,
            "entity_id": tag,
            "span_index": span_index,
            "shard_index": s.index,
            "start_idx": start_idx + s.start,
            "start_time_s": (k0 + start_idx + s.start) / sample_hz,
            "n_steps": s.n_steps,
            "padded": s.padded,
        }
        for s in shard_plan(n_steps, spec)
    ]


def _where(track: Track, row: int | None = None) -> str:
    out = f"source {track.source_id!r}, entity {track.entity_id!r}"
    if row is not None:
        out += f", row {track.start_idx + row}"
    return out


def _first_present(track: Track) -> int:
    idx = np.flatnonzero(track.present)
    return int(idx[0]) if idx.size else 0


def _coerce(m: ModalitySpec, raw: np.ndarray, track: Track) -> np.ndarray:
    """Cast to the declared dtype with absent rows zeroed.  Present rows are checked first:
    no missing value for an integer/bool dtype, no non-integral value (unless ``rounding``
    says how), nothing outside the dtype's range (unless ``overflow="saturate"``)."""
    n = track.n_steps
    dt = np.dtype(m.dtype)
    raw = np.asarray(raw)
    want = (n, *m.shape)
    if raw.shape != want:
        if raw.size != int(np.prod(want)):
            raise OutputSpecError(
                f"modality {m.name!r}: got shape {raw.shape}, expected {want} for {_where(track)}"
            )
        raw = raw.reshape(want)
    present = np.asarray(track.present, dtype=bool).reshape((n,) + (1,) * (raw.ndim - 1))
    if raw.dtype.kind == "f":
        raw = _fit_float(m, dt, raw, np.broadcast_to(present, raw.shape), track)
    elif dt.kind in "iub" and raw.dtype.kind in "iub":
        raw = _fit_int(m, dt, raw, np.broadcast_to(present, raw.shape), track)
    if present.all():
        return raw if raw.dtype == dt else raw.astype(dt)
    out = np.zeros(want, dtype=dt)
    np.copyto(out, raw, casting="unsafe", where=present)
    return out


def _int_bounds(dt: np.dtype) -> tuple[int, int]:
    if dt.kind == "b":
        return 0, 1
    info = np.iinfo(dt)
    return int(info.min), int(info.max)


def _refuse(
    m: ModalitySpec, raw: np.ndarray, bad: np.ndarray, track: Track, why: str
) -> OutputValueError:
    flat = np.flatnonzero(bad.reshape(bad.shape[0], -1).any(axis=1))
    row = int(flat[0])
    value = raw[row][bad[row]].reshape(-1)[0].item()
    return OutputValueError(
        f"{value!r} {why}",
        modality=m.name,
        dtype=m.dtype,
        source=track.source_id,
        entity=track.entity_id,
        row=track.start_idx + row,
        value=value,
    )


_ROUND = {"round": np.rint, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc}


def _fit_float(
    m: ModalitySpec, dt: np.dtype, raw: np.ndarray, present: np.ndarray, track: Track
) -> np.ndarray:
    """Float values of present rows checked (and, by policy, rounded/clipped) for ``dt``."""
    if dt.kind == "f":
        if raw.dtype.itemsize <= dt.itemsize:  # every finite value fits
            return raw
        big = np.finfo(dt).max
        mag = np.abs(raw)
        if not (mag > big).any():  # one pass in the common case (NaN compares False)
            return raw
        over = present & np.isfinite(raw) & (mag > big)
        if over.any():
            if m.overflow == "error":
                raise _refuse(m, raw, over, track, f"overflows {m.dtype} (|x| <= {big:.6g})")
            raw = np.clip(raw, -big, big)
        return raw
    finite = np.isfinite(raw)
    if not finite[present].all():
        bad = present & ~finite
        row = int(np.flatnonzero(bad.reshape(bad.shape[0], -1).any(axis=1))[0])
        raise OutputSpecError(
            f"modality {m.name!r} ({m.dtype}): missing value for present {_where(track, row)}"
        )
    frac = present & finite & (raw != np.trunc(np.where(finite, raw, 0.0)))
    if frac.any():
        if m.rounding == "error":
            raise _refuse(
                m, raw, frac, track, f"is not an integer (declare a rounding: {ROUNDING_POLICIES})"
            )
        raw = _ROUND[m.rounding](raw)
    lo, hi = _int_bounds(dt)
    # bounds as exact floats: ``hi + 1`` is a power of two, so ``x >= hi + 1`` is exact
    low, high = present & (raw < float(lo)), present & (raw >= float(hi) + 1.0)
    if low.any() or high.any():
        if m.overflow == "error":
            raise _refuse(m, raw, low | high, track, f"is outside {m.dtype} range [{lo}, {hi}]")
        safe = np.where(low | high | ~finite, 0.0, raw)
        out = safe.astype(dt)
        out[low] = lo
        out[high] = hi
        return out
    return raw


def _fit_int(
    m: ModalitySpec, dt: np.dtype, raw: np.ndarray, present: np.ndarray, track: Track
) -> np.ndarray:
    """Integer values of present rows range-checked (exactly, never through float) for ``dt``."""
    lo, hi = _int_bounds(dt)
    src_lo, src_hi = _int_bounds(raw.dtype)
    if src_lo >= lo and src_hi <= hi:
        return raw
    low = present & (raw < lo) if src_lo < lo else np.zeros(raw.shape, bool)
    high = present & (raw > hi) if src_hi > hi else np.zeros(raw.shape, bool)
    if low.any() or high.any():
        if m.overflow == "error":
            raise _refuse(m, raw, low | high, track, f"is outside {m.dtype} range [{lo}, {hi}]")
        out = np.where(low | high, 0, raw).astype(dt)
        out[low] = lo
        out[high] = hi
        return out
    return raw


def _field_array(m: ModalitySpec, track: Track) -> np.ndarray:
    """The field's values for ``m``: its exact integers for an integer/bool modality of an
    integer field (missing values of present rows refused here, as NaN is for floats)."""
    src = track.fields.get(m.arg)
    if src is None:
        src = track.globals.get(m.arg)
    if src is None:
        raise OutputSpecError(
            f"modality {m.name!r}: no field {m.arg!r} for present "
            f"{_where(track, _first_present(track))}"
        )
    exact = track.ints.get(m.arg)
    if exact is not None and np.dtype(m.dtype).kind in "iub":
        missing = np.isnan(src).reshape(src.shape[0], -1).any(axis=1) & track.present
        if missing.any():
            raise OutputSpecError(
                f"modality {m.name!r} ({m.dtype}): missing value for present "
                f"{_where(track, int(np.flatnonzero(missing)[0]))}"
            )
        src = exact
    return src[:, 0] if m.shape == () and src.ndim == 2 and src.shape[1] == 1 else src


def _segment_array(m: ModalitySpec, track: Track) -> np.ndarray:
    if m.arg not in track.meta:
        raise OutputSpecError(
            f"modality {m.name!r}: no segment feature {m.arg!r} for present "
            f"{_where(track, _first_present(track))}"
        )
    value = track.meta[m.arg]
    return np.full(track.n_steps, np.nan if value is None else float(value))


def _pick(out: Mapping[str, Any], m: ModalitySpec) -> Any:
    if m.arg in out:
        return out[m.arg]
    return out.get(m.name)


def _records(track: Track, schema: SchemaSpec) -> list[dict[str, Any]]:
    """Per-timestep records for encoders: fields merged with globals, scalars as floats
    (integer-dtype fields as exact ints), categoricals as their labels (None when missing),
    vectors as arrays; ``{}`` where absent."""
    kinds = {f.name: f for f in (*schema.fields, *schema.globals)}

    def value(name: str, v: np.ndarray, t: int) -> Any:
        f = kinds.get(name)
        exact = track.ints.get(name)
        if exact is not None and not np.isnan(v).any():  # integer fields: exact values
            return int(exact[t][0]) if f is not None and f.kind == "scalar" else exact[t]
        if f is None or f.kind == "vector":
            return v
        x = float(v[0])
        if f.kind == "categorical":
            return None if np.isnan(x) else f.vocab[int(x)]
        return x

    out: list[dict[str, Any]] = []
    for t in range(track.n_steps):
        if not track.present[t]:
            out.append({})
            continue
        rec = {k: value(k, v[t], t) for k, v in track.fields.items()}
        rec.update({k: value(k, v[t], t) for k, v in track.globals.items()})
        out.append(rec)
    return out


def _encode(
    encoder: Any, mods: list[ModalitySpec], track: Track, schema: SchemaSpec
) -> dict[str, np.ndarray]:
    if not mods:
        return {}
    if encoder is None or isinstance(encoder, PassthroughEncoder):
        raise OutputSpecError(f"modalities {[m.name for m in mods]} need an OutputEncoder")
    ctx = {
        "schema": schema,
        "track": {
            **track.meta,
            "source_id": track.source_id,
            "entity_id": track.entity_id,
            "span_index": track.span_index,
            "start_idx": track.start_idx,
        },
    }
    recs = _records(track, schema)
    n = track.n_steps
    result: dict[str, np.ndarray] = {}
    batch = getattr(encoder, "encode_batch", None)
    if callable(batch):
        out = batch(recs, ctx)
        if not isinstance(out, Mapping):
            raise OutputSpecError(f"encode_batch must return a mapping for {_where(track)}")
        for m in mods:
            val = _pick(out, m)
            if val is None:
                raise OutputSpecError(
                    f"modality {m.name!r}: encode_batch gave no {m.arg!r} hook for present "
                    f"{_where(track, _first_present(track))}"
                )
            arr = np.asarray(val)
            if arr.shape[:1] != (n,):
                raise OutputSpecError(
                    f"modality {m.name!r}: encode_batch returned {arr.shape[:1]} rows, "
                    f"expected {n} for {_where(track)}"
                )
            result[m.name] = arr
        return result
    hook = getattr(encoder, "timestep", None)
    if not callable(hook):
        raise OutputSpecError(
            f"encoder {type(encoder).__name__} has neither timestep() nor encode_batch()"
        )
    bufs: dict[str, np.ndarray | None] = {m.name: None for m in mods}
    for t, rec in enumerate(recs):
        if not track.present[t]:
            continue
        out = hook(rec, ctx)
        for m in mods:
            val = _pick(out, m) if isinstance(out, Mapping) else None
            if val is None:
                raise OutputSpecError(
                    f"modality {m.name!r}: encoder hook {m.arg!r} returned no value for "
                    f"present {_where(track, t)}"
                )
            v = np.asarray(val)
            buf = bufs[m.name]
            if buf is None:
                kind = np.result_type(v.dtype, np.dtype(m.dtype))
                buf = bufs[m.name] = np.zeros((n, *m.shape), dtype=kind)
            try:
                buf[t] = v.reshape(m.shape)
            except ValueError:
                raise OutputSpecError(
                    f"modality {m.name!r}: hook value of shape {v.shape} does not fit "
                    f"{list(m.shape)} at {_where(track, t)}"
                ) from None
    for m in mods:
        buf = bufs[m.name]
        result[m.name] = buf if buf is not None else np.zeros((n, *m.shape), dtype=m.dtype)
    return result


def track_arrays(
    track: Track, spec: OutputSpec, schema: SchemaSpec, encoder: Any = None
) -> dict[str, np.ndarray]:
    """Every declared modality of a whole track, ``(n_steps, *shape)`` in its declared dtype.

    Raises
    ------
    OutputSpecError
        A missing field, encoder hook value or segment feature for a present
        entity, or a non-finite value in an integer/bool modality (names the
        source, entity and row).
    """
    enc_mods = [m for m in spec.modalities.values() if m.route == "encoder"]
    encoded = _encode(encoder, enc_mods, track, schema)
    out: dict[str, np.ndarray] = {}
    for name, m in spec.modalities.items():
        if m.route == "media":
            continue  # decoded per shard by ShardWriter (bounded memory)
        if m.route == "field":
            raw = _field_array(m, track)
        elif m.route == "segment":
            raw = _segment_array(m, track)
        elif m.route == "encoder":
            raw = encoded[name]
        else:  # pragma: no cover - OutputSpec rejects other routes
            raise OutputSpecError(f"modality {name!r}: route {m.route!r} is not supported")
        out[name] = _coerce(m, raw, track)
    return out


def _pad(a: np.ndarray, length: int) -> np.ndarray:
    out = np.zeros((length, *a.shape[1:]), dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


def ensure_dir(path: Path) -> None:
    """Create ``path`` (one level) and refuse a symlink or non-directory in its place.

    Raises
    ------
    DatasetIntegrityError
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        os.makedirs(path, exist_ok=True)
        st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise DatasetIntegrityError("refusing to write through a non-directory", path=str(path))


def write_bytes_atomic(path: Path, data: bytes, *, fsync: bool = False) -> None:
    """Write ``data`` to a same-directory temp file and ``os.replace`` it onto ``path``."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)  # a full disk leaves no partial temp file
        raise


class ShardWriter:
    """Write tracks as shards of ``spec.shard_length`` steps under ``root/<split>/``.

    Parameters
    ----------
    root : path
    spec : OutputSpec
    schema : SchemaSpec
    encoder : OutputEncoder, optional
        Needed when ``spec`` has ``encoder:`` modalities.
    on_shard : callable, optional
        Called with each entry right after its shard is in place (journaling).
    fsync : bool
        ``fsync`` each shard before it is moved into place.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        spec: OutputSpec,
        schema: SchemaSpec,
        encoder: Any = None,
        *,
        on_shard: Callable[[dict[str, Any]], None] | None = None,
        fsync: bool = False,
    ) -> None:
        self.root = Path(root)
        self.spec = spec
        self.schema = schema
        self.encoder = encoder
        self.container = get_container(spec.container)
        self.on_shard = on_shard
        self.fsync = fsync
        self.bytes_written = 0
        units = spec.units(schema, encoder)
        self.attrs: dict[str, dict[str, Any]] = {
            name: {"name": name} if units[name] is None else {"name": name, "unit": units[name]}
            for name in spec.modalities
        }
        self.attrs["_time_s"] = {"name": "_time_s", "unit": "s"}
        for name in ("_present", "_n_steps", "_entity"):
            self.attrs[name] = {"name": name}
        try:
            params = inspect.signature(self.container.dumps).parameters
        except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
            params = {}  # type: ignore[assignment]
        self._takes_attrs = "attrs" in params

    def _dumps(self, chunk: Mapping[str, np.ndarray]) -> bytes:
        if self._takes_attrs:
            return self.container.dumps(chunk, attrs=self.attrs)  # type: ignore[call-arg]
        return self.container.dumps(chunk)

    def shard_arrays(self, track: Track) -> list[tuple[ShardSlot, dict[str, np.ndarray]]]:
        """The arrays of each shard of ``track``, as they will be written (all at once)."""
        return list(self.iter_shard_arrays(track))

    def iter_shard_arrays(self, track: Track) -> Iterator[tuple[ShardSlot, dict[str, np.ndarray]]]:
        """The arrays of each shard of ``track``, one shard at a time (media decoded per shard).

        Raises
        ------
        OutputSpecError
            A missing value for a present entity, or a media column the track lacks.
        MediaError
            A frame that cannot be decoded (names uri, stream and frame).
        """
        spec = self.spec
        arrays = track_arrays(track, spec, self.schema, self.encoder)
        media = [m for m in spec.modalities.values() if m.route == "media"]
        entity = np.array(tag_entity_id(track.entity_id))
        first = track.k0 + track.start_idx
        for slot in shard_plan(track.n_steps, spec):
            chunk = {k: v[slot.start : slot.stop] for k, v in arrays.items()}
            chunk.update(shard_media(media, track, self.schema, slot.start, slot.stop))
            present = track.present[slot.start : slot.stop]
            length = spec.shard_length if slot.padded else slot.n_steps
            steps = np.arange(first + slot.start, first + slot.start + length, dtype=np.int64)
            time_s = steps / float(track.sample_hz)
            if slot.padded:
                chunk = {k: _pad(v, spec.shard_length) for k, v in chunk.items()}
                present = _pad(present, spec.shard_length)
                time_s[slot.n_steps :] = np.nan
            if spec.presence_mask:
                chunk["_present"] = present.astype(bool)
            chunk["_n_steps"] = np.array(slot.n_steps, dtype=np.int64)
            chunk["_time_s"] = time_s
            chunk["_entity"] = entity
            yield slot, chunk

    def write(self, track: Track, split: str) -> list[dict[str, Any]]:
        """Write one track; returns its manifest entries (paths relative to the root).

        Raises
        ------
        OutputSpecError
            A missing field, encoder value or segment feature for a present entity.
        DatasetIntegrityError
            The split directory is a symlink or not a directory.
        DestinationError
            A directory or shard cannot be created or written (permissions, disk, a file
            in the way), naming the path.
        """
        try:
            return self._write(track, split)
        except OSError as exc:
            if isinstance(exc, KurationError):
                raise
            where = os.fsdecode(exc.filename) if exc.filename is not None else str(self.root)
            raise DestinationError(
                f"cannot write a shard: {exc.strerror or exc}", path=where
            ) from exc

    def _write(self, track: Track, split: str) -> list[dict[str, Any]]:
        entries = plan_entries(
            source_id=track.source_id,
            entity_id=track.entity_id,
            span_index=track.span_index,
            start_idx=track.start_idx,
            n_steps=track.n_steps,
            k0=track.k0,
            sample_hz=track.sample_hz,
            split=split,
            spec=self.spec,
        )
        if entries:
            ensure_dir(self.root / split)
        shards = self.iter_shard_arrays(track)
        for entry, (_, chunk) in zip(entries, shards, strict=True):
            self.write_shard(entry, chunk)
            del chunk  # one shard's decoded frames at a time
        return entries

    def write_shard(self, entry: dict[str, Any], chunk: Mapping[str, np.ndarray]) -> None:
        """Encode one planned shard's arrays to ``entry["path"]`` (atomically), fill the
        entry's ``size`` and ``sha256`` and hand it to ``on_shard``."""
        data = self._dumps(chunk)
        write_bytes_atomic(self.root / entry["path"], data, fsync=self.fsync)
        entry["size"] = len(data)
        entry["sha256"] = hashlib.sha256(data).hexdigest()
        self.bytes_written += len(data)
        if self.on_shard is not None:
            self.on_shard(entry)


def write_track(
    root: str | os.PathLike[str],
    track: Track,
    spec: OutputSpec,
    *,
    schema: SchemaSpec,
    split: str = "train",
    encoder: Any = None,
) -> list[dict[str, Any]]:
    """Low level: write one track's shards under ``root/<split>/`` and return their manifest
    entries.  No manifest, config or commit record is written; ``segment:`` modalities read
    ``track.meta``.

    Raises
    ------
    OutputSpecError
        The spec does not fit the schema, or a value is missing for a present entity.
    """
    spec.validate_against(schema, tuple(track.meta), has_encoder=encoder is not None)
    return ShardWriter(root, spec, schema, encoder).write(track, split)
