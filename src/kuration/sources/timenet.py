"""TimenetAdapter: a TimeNet dataset version as the canonical tick stream.

Sources are references into a TimeNet registry::

    timenet://org/name@version                          every record, one source each
    timenet://org/name@version#<record id>              one record
    timenet://org/name@version?group_by=<key>           one source per value of a
                                                        record metadata key
    timenet://org/name@version?group_by=<key>#<value>   one group (its records are the entities)
    ...?<key>=<value>                                   keep records whose metadata matches

:func:`expand_source` turns the first and third forms into one URI per
record or group, pinned to the exact version (``kur run`` does this for
``timenet://`` entries of a job's ``sources``).

Each record of a source is one entity (its id: the metadata key ``entity``,
else the record id).  Ids keep their JSON type (text or integer) unless
``entity_dtype`` declares one; a missing id (null, empty text, a float, a
list) or two records with one id are an :class:`EntityIdError`. Every schema field is mapped to one signal per
component, converted with pint to the field's unit::

    {"fields": {"position": {"signals": ["x", "y"], "unit": "m"}}}

Times come from the signals (regular or explicit, plus the spec's
``time_origin``; an origin without a UTC offset is UTC, never the machine's
zone) and are snapped to the schema's ``sample_hz`` grid: a step farther
than ``snap_tolerance`` steps from its grid point is dropped (``grid_offset_s``
moves the rounding boundary as :class:`~kuration.sources.timeseries.TimeseriesAdapter`'s
does; tick ``k`` stays at ``k / sample_hz``).  Several steps
of one entity's field that land on one tick collide (a 50 Hz signal read by
a 10 Hz schema: four of every five steps); they are counted
(``TickTable.counts["snap_collisions"]``) and handled by ``collisions``:
``nearest`` (default) keeps the nearest step and warns, ``mean`` averages
float fields (circular mean for angular ones), ``raise`` refuses.  A time
that with its origin leaves the int64-nanosecond range is a
:class:`TimeRangeError` naming the signal and step. An entity is
present at a tick when any of its mapped values there is not null. The
fingerprint of a source is the SHA-256 over the manifest checksums of the
catalog and of every value file the source reads.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar
from urllib.parse import parse_qsl, quote, unquote, urlencode

import numpy as np

from ..contracts.schema import FieldSpec, SchemaSpec
from ..contracts.tick import Tick, TickTable, field_ints, is_int_field
from ..core.ids import ENTITY_DTYPES, entity_sort_key
from ..core.units import parse_unit, to_unit
from ..errors import AdapterError, EntityIdError, SourceError, TimeRangeError
from ._snap import (
    COLLISION_POLICIES,
    check_grid_offset,
    group_starts,
    merge_groups,
    snap_ticks,
    warn_dropped,
)
from .base import SOURCE_READER_TRAITS, InputAdapter, register_adapter

__all__ = ["TimenetAdapter", "expand_source", "parse_source", "schema_with_catalog_units"]

SCHEME = "timenet://"


def parse_source(uri: str) -> tuple[str, dict[str, str], str | None]:
    """Split a ``timenet://`` URI into (reference, query parameters, fragment).

    Raises
    ------
    AdapterError
        If the URI does not start with ``timenet://``.
    """
    if not uri.startswith(SCHEME):
        raise AdapterError(
            f"not a timenet source: {uri!r} (expected {SCHEME}org/name@version)", adapter="timenet"
        )
    rest, _, frag = uri[len(SCHEME) :].partition("#")
    ref, _, query = rest.partition("?")
    params = dict(parse_qsl(query, keep_blank_values=True))
    return ref, params, (unquote(frag) if frag else None)


def _format(ref: str, params: Mapping[str, str], fragment: str | None) -> str:
    query = f"?{urlencode(sorted(params.items()))}" if params else ""
    frag = f"#{quote(fragment, safe='')}" if fragment is not None else ""
    return f"{SCHEME}{ref}{query}{frag}"


def _client(registries: Sequence[str] | None) -> Any:
    import timenet as tn

    return tn.TimeNet(list(registries) if registries else None)


def _matches(meta: Mapping[str, Any], filters: Mapping[str, str]) -> bool:
    return all(str(meta.get(k)) == v for k, v in filters.items())


def expand_source(uri: str, *, registries: Sequence[str] | None = None) -> list[str]:
    """One URI per record (or per group with ``group_by``), pinned to the exact version.

    A URI that already has a fragment is returned pinned but otherwise as is.

    Raises
    ------
    SourceError
        If the dataset cannot be opened or no record matches.
    """
    ref, params, frag = parse_source(uri)
    import timenet as tn

    try:
        reader = _client(registries).open(ref)
    except tn.TimeNetError as exc:
        raise SourceError(f"cannot open {ref}: {exc}", source=uri) from exc
    exact = str(reader.ref)
    if frag is not None:
        return [_format(exact, params, frag)]
    group_by = params.get("group_by")
    filters = {k: v for k, v in params.items() if k != "group_by"}
    out: list[str] = []
    seen: set[str] = set()
    for rec in reader.records():
        if not _matches(rec.metadata, filters):
            continue
        if group_by is None:
            out.append(_format(exact, params, rec.id))
            continue
        if group_by not in rec.metadata:
            raise SourceError(f"record {rec.id!r} has no metadata key {group_by!r}", source=uri)
        value = str(rec.metadata[group_by])
        if value not in seen:
            seen.add(value)
            out.append(_format(exact, params, value))
    if not out:
        raise SourceError("no record matches", source=uri)
    return out


def _mapped_signals(spec: Any) -> tuple[list[str], str | None]:
    if isinstance(spec, str):
        return [spec], None
    if isinstance(spec, Mapping):
        sigs = spec.get("signals", [])
        return ([sigs] if isinstance(sigs, str) else list(sigs)), spec.get("unit")
    return list(spec), None


def schema_with_catalog_units(
    schema: Mapping[str, Any],
    fields: Mapping[str, Any],
    sources: Sequence[str],
    *,
    registries: Sequence[str] | None = None,
) -> dict[str, Any]:
    """A schema dict whose fields without a unit take the TimeNet catalog's units.

    A field that declares no ``unit`` (and whose adapter mapping names none) is
    read in its signals' catalog units, so the schema says so: the unit of each
    mapped signal is looked up in the catalog of every ``timenet://`` source and
    written into the field (one unit, or one per component when they differ).
    Fields with a unit, and signals the catalog gives no unit, are left as they are.

    Parameters
    ----------
    schema : mapping
        The job's schema (``fields`` a list of field dicts).
    fields : mapping
        The adapter's ``fields`` mapping.
    sources : sequence of str
        The job's sources; only ``timenet://`` entries are read.
    registries : sequence of str, optional

    Returns
    -------
    dict
        A copy of ``schema`` with units filled in.

    Raises
    ------
    SourceError
        A dataset cannot be opened, or two sources give one signal different units.
    """
    import timenet as tn

    todo = {
        f["name"]: _mapped_signals(fields[f["name"]])[0]
        for f in schema.get("fields", [])
        if isinstance(f, Mapping)
        and f.get("unit") in (None, "", [])
        and f.get("name") in fields
        and _mapped_signals(fields[f["name"]])[1] is None
    }
    if not todo:
        return dict(schema)
    units: dict[str, str] = {}
    for uri in sources:
        if not str(uri).startswith(SCHEME):
            continue
        ref = parse_source(str(uri))[0]
        try:
            catalog = _client(registries).open(ref).schema.signals
        except tn.TimeNetError as exc:
            raise SourceError(f"cannot open {ref}: {exc}", source=str(uri)) from exc
        for sig in catalog:
            if not sig.unit:
                continue
            if units.setdefault(sig.name, sig.unit) != sig.unit:
                raise SourceError(
                    f"signal {sig.name!r} is in {units[sig.name]!r} in one source and "
                    f"{sig.unit!r} in another; declare the field's unit in the schema",
                    source=str(uri),
                )
    out = dict(schema)
    new_fields = []
    for f in schema.get("fields", []):
        sigs = todo.get(f.get("name")) if isinstance(f, Mapping) else None
        if sigs and all(s in units for s in sigs):
            found = [units[s] for s in sigs]
            f = {**f, "unit": found[0] if len(set(found)) == 1 else found}
        new_fields.append(f)
    out["fields"] = new_fields
    return out


def _seconds(sig: Any, uri: str, record: str, name: str) -> np.ndarray:
    """A signal's times as float64 seconds since the epoch (or since its record's start).

    Raises
    ------
    TimeRangeError
        If a time plus the origin leaves the int64-nanosecond range.
    """
    from timenet._timebase import first_out_of_range

    ns = sig.times()
    origin = sig.spec.origin_ns  # naive origins are UTC (timenet._timebase.iso_to_ns)
    bad = first_out_of_range(ns, origin or 0)
    if bad is not None:
        raise TimeRangeError(
            f"record {record!r}: step {bad} at {int(ns[bad])} ns after "
            f"{sig.spec.time_origin!r} is outside the int64-nanosecond range",
            source=uri,
            row=bad,
            column=name,
        )
    return ns.astype(np.float64) * 1e-9 + (origin or 0) / 1_000_000_000


class TimenetAdapter(InputAdapter):
    """Read records of a TimeNet version as entities of one source.

    Parameters
    ----------
    schema : SchemaSpec
    fields : mapping
        Field name to ``{"signals": [names...], "unit": str}`` (unit optional:
        default the field's unit; no conversion when neither is given), or to
        a signal name / list of names. Every schema field must be mapped and a
        field of ``dims`` components names ``dims`` signals.
    entity : str or None
        Record metadata key holding the entity id (default ``"entity"``;
        records without it use their record id).
    entity_dtype : {"auto", "string", "int64"}
        ``auto`` keeps the id's JSON type (text or integer); ``string`` turns
        integers into their decimal text; ``int64`` parses text as an integer.
    registries : list of str, optional
        TimeNet registries (default ``$TIMENET_REGISTRY`` or
        ``~/.cache/timenet/registry``); a missing dataset is built from an
        installed connector when a local registry is configured.
    snap_tolerance : float
        Largest distance from the grid, in steps, of a kept step (0.5 keeps all).
    grid_offset_s : float
        Seconds in ``[0, 1 / sample_hz)`` the rounding boundaries move later (signals
        stamped mid-interval take half a step), as in ``TimeseriesAdapter``.
    collisions : {"nearest", "mean", "raise"}
        Steps of one entity's field that snap to one tick (see above).
    verify : bool
        Verify TimeNet files against their checksums before reading.

    Raises
    ------
    AdapterError
        On unmapped or unknown fields, a wrong number of signals, or a unit
        that contradicts the schema.
    """

    name: ClassVar[str] = "timenet"

    @staticmethod
    def complete_schema(
        schema: Mapping[str, Any], options: Mapping[str, Any], sources: Sequence[str]
    ) -> dict[str, Any]:
        """A job's schema completed before the adapter is built: fields without a unit are
        read in the catalog's units (:func:`schema_with_catalog_units`)."""
        return schema_with_catalog_units(
            schema, options.get("fields", {}), sources, registries=options.get("registries")
        )

    def __init__(
        self,
        schema: SchemaSpec,
        *,
        fields: Mapping[str, Any],
        entity: str | None = "entity",
        entity_dtype: str = "auto",
        registries: Sequence[str] | None = None,
        snap_tolerance: float = 0.5,
        verify: bool = True,
        collisions: str = "nearest",
        grid_offset_s: float = 0.0,
    ) -> None:
        super().__init__(schema)
        if not 0 <= snap_tolerance <= 0.5:
            raise AdapterError(
                f"snap_tolerance must be within [0, 0.5], got {snap_tolerance!r}", adapter="timenet"
            )
        if entity_dtype not in ENTITY_DTYPES:
            raise AdapterError(
                f"entity_dtype must be one of {ENTITY_DTYPES}, got {entity_dtype!r}",
                adapter="timenet",
            )
        if collisions not in COLLISION_POLICIES:
            raise AdapterError(
                f"collisions must be one of {COLLISION_POLICIES}, got {collisions!r}",
                adapter="timenet",
            )
        self.collisions = collisions
        self.entity = entity
        self.entity_dtype = entity_dtype
        self.registries = list(registries) if registries else None
        self.snap_tolerance = float(snap_tolerance)
        self.grid_offset_s = check_grid_offset(grid_offset_s, schema.sample_hz, "timenet")
        self.verify = bool(verify)
        self.fields: dict[str, dict[str, Any]] = {}
        declared = set(schema.field_names)
        unknown = set(fields) - declared
        if unknown:
            raise AdapterError(f"fields {sorted(unknown)} are not in the schema", adapter="timenet")
        missing = declared - set(fields)
        if missing:
            raise AdapterError(
                f"schema fields {sorted(missing)} have no signal mapping", adapter="timenet"
            )
        for fname, spec in fields.items():
            if isinstance(spec, str):
                spec = {"signals": [spec]}
            elif isinstance(spec, Sequence):
                spec = {"signals": list(spec)}
            if not isinstance(spec, Mapping) or set(spec) - {"signals", "unit"}:
                raise AdapterError(
                    f"field {fname!r}: mapping is {{'signals': [...], 'unit': ...}}",
                    adapter="timenet",
                )
            sigs = [spec["signals"]] if isinstance(spec["signals"], str) else list(spec["signals"])
            f = schema.field(fname)
            if f.kind == "categorical":
                raise AdapterError(
                    f"field {fname!r}: categorical fields are not supported here", adapter="timenet"
                )
            if len(sigs) != f.dims or not all(isinstance(s, str) and s for s in sigs):
                raise AdapterError(
                    f"field {fname!r} has {f.dims} components but signals {sigs}", adapter="timenet"
                )
            unit = spec.get("unit")
            targets = list(f.units) if f.units else []
            if len(targets) == 1:
                targets = targets * f.dims
            if unit is not None:
                if targets and any(parse_unit(unit) != parse_unit(t) for t in targets):
                    raise AdapterError(
                        f"field {fname!r}: unit {unit!r} contradicts the schema's {f.unit!r}",
                        adapter="timenet",
                    )
                targets = [unit] * f.dims
            self.fields[fname] = {"signals": sigs, "unit": unit, "targets": targets}
        self._readers: dict[str, Any] = {}

    def options(self) -> dict[str, Any]:
        return {
            "fields": {
                k: {"signals": list(v["signals"]), **({"unit": v["unit"]} if v["unit"] else {})}
                for k, v in self.fields.items()
            },
            "entity": self.entity,
            "entity_dtype": self.entity_dtype,
            "registries": self.registries,
            "snap_tolerance": self.snap_tolerance,
            "verify": self.verify,
            "collisions": self.collisions,
            **({"grid_offset_s": self.grid_offset_s} if self.grid_offset_s else {}),
        }

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_readers"] = {}
        return state

    # -- sources -----------------------------------------------------------------------
    def _reader(self, ref: str, uri: str) -> Any:
        reader = self._readers.get(ref)
        if reader is None:
            import timenet as tn

            try:
                reader = _client(self.registries).open(ref, verify=self.verify)
            except tn.TimeNetError as exc:
                raise SourceError(f"cannot open {ref}: {exc}", source=uri) from exc
            self._readers[ref] = reader
        return reader

    def _records(self, uri: str) -> tuple[Any, list[Any]]:
        ref, params, frag = parse_source(uri)
        if frag is None:
            raise SourceError(
                "a source names one record or group (#...); expand the dataset first "
                "(kuration.sources.timenet.expand_source)",
                source=uri,
            )
        reader = self._reader(ref, uri)
        group_by = params.get("group_by")
        filters = {k: v for k, v in params.items() if k != "group_by"}
        if group_by is None:
            import timenet as tn

            try:
                recs = [reader.record(frag)]
            except tn.RecordNotFoundError:
                raise SourceError(f"no record {frag!r} in {reader.ref}", source=uri) from None
        else:
            recs = [
                r
                for r in reader.records()
                if str(r.metadata.get(group_by)) == frag and _matches(r.metadata, filters)
            ]
            if not recs:
                raise SourceError(f"no record has {group_by}={frag!r}", source=uri)
        return reader, recs

    def source_id(self, uri: str) -> str:
        if not str(uri).startswith(SCHEME):
            return super().source_id(uri)
        _ref, _params, frag = parse_source(str(uri))
        return re.sub(r"[^A-Za-z0-9_.-]+", "_", frag or "all")

    def fingerprint(self, uri: str) -> str:
        """SHA-256 over the manifest checksums of the catalog and of every file the source reads."""
        reader, recs = self._records(uri)
        handle = reader.handle
        files = {"control.duckdb"}
        wanted = {s for f in self.fields.values() for s in f["signals"]}
        for rec in recs:
            rows = reader._catalog.signal_rows(rec.index)
            for name in wanted & set(rows):
                row = rows[name]
                for path in (row.file, row.times_file):
                    if path is None:
                        continue
                    if row.storage == "zarr" and path == row.file:
                        files.update(
                            e.path for e in handle.manifest.files if e.path.startswith(path + "/")
                        )
                    else:
                        files.add(path)
        entries = sorted((p, handle.entry(p).sha256) for p in files)
        body = json.dumps(
            {"ref": str(reader.ref), "uri": uri, "files": entries}, sort_keys=True
        ).encode()
        return hashlib.sha256(body).hexdigest()

    # -- reading -------------------------------------------------------------------------
    def _entity_id(self, rec: Any, uri: str = "") -> Any:
        """The record's entity id, typed by ``entity_dtype``.

        Raises
        ------
        EntityIdError
            For a missing id (null, empty or blank text), text with surrounding
            white space, a value that is not text or an integer, or one that does not convert to ``entity_dtype``.
        """
        key = self.entity if self.entity and self.entity in rec.metadata else None
        value = rec.metadata[key] if key else rec.id

        def fail(msg: str) -> EntityIdError:
            where = f"record {rec.id!r}" + (f" metadata key {key!r}" if key else " id")
            return EntityIdError(f"{where}: {msg}", source=uri, row=rec.index, column=key)

        if isinstance(value, str):
            if not value.strip():
                raise fail(f"missing entity id ({value!r})")
            if self.entity_dtype == "int64":
                if re.fullmatch(r"\s*[+-]?[0-9]+\s*", value) is None:
                    raise fail(f"entity id {value!r} is not an integer (entity_dtype int64)")
                value = int(value)
            elif value != value.strip():
                raise fail(
                    f"entity id {value!r} starts or ends with white space: ids are compared "
                    f"as text, so it would be another entity than {value.strip()!r}"
                )
        elif isinstance(value, int) and not isinstance(value, bool):
            if self.entity_dtype == "string":
                value = str(value)
        else:
            raise fail(f"missing entity id ({value!r}); ids are text or integers")
        if isinstance(value, int) and not -(2**63) <= value < 2**63:
            raise fail(f"entity id {value} is outside int64")
        return value

    def _field_steps(
        self, reader: Any, rec: Any, fname: str, uri: str
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(times in s, values (T, D) float64 in the field's unit, exact integers (T, D) of an
        integer-dtype field or None) of one entity."""
        import pyarrow as pa
        import pyarrow.compute as pc

        m = self.fields[fname]
        spec = self.schema.field(fname)
        exact_cols: list[np.ndarray] | None = [] if is_int_field(spec) else None
        cols = []
        times: np.ndarray | None = None
        for j, sname in enumerate(m["signals"]):
            try:
                sig = reader.signal(rec.id, sname)
            except KeyError:
                raise SourceError(
                    f"record {rec.id!r} has no signal {sname!r} (field {fname!r})", source=uri
                ) from None
            if sig.spec.shape != ():
                raise SourceError(f"signal {sname!r} is not scalar", source=uri)
            arr = sig.to_arrow()
            if pa.types.is_boolean(arr.type):
                arr = arr.cast(pa.float64())
            vals = np.asarray(
                # integers above 2**53 round here; integer fields also carry them exactly
                pc.fill_null(pc.cast(arr, pa.float64(), safe=False), np.nan).to_numpy(
                    zero_copy_only=False
                ),
                dtype=np.float64,
            )
            converted = bool(m["targets"]) and m["targets"][j] != (sig.spec.unit or "")
            if m["targets"]:
                try:
                    vals = to_unit(vals, sig.spec.unit or "dimensionless", m["targets"][j])
                except Exception as exc:
                    raise SourceError(
                        f"signal {sname!r} in {sig.spec.unit!r} cannot be converted to "
                        f"{m['targets'][j]!r}: {exc}",
                        source=uri,
                    ) from None
            t = _seconds(sig, uri, rec.id, sname)
            if times is None:
                times = t
            elif t.shape != times.shape or not np.array_equal(t, times):
                raise SourceError(
                    f"signals {m['signals']} of field {fname!r} have different times "
                    f"in record {rec.id!r}",
                    source=uri,
                )
            cols.append(vals)
            if exact_cols is not None:
                exact_cols.append(
                    _exact_ints(spec, vals if converted else arr, uri, f"signal {sname!r}")
                )
        assert times is not None
        exact = None if exact_cols is None else np.stack(exact_cols, axis=1)
        return times, np.stack(cols, axis=1), exact

    def read_table(self, uri: str) -> TickTable:
        """Vectorised read of one record or group onto the ``sample_hz`` grid.

        Raises
        ------
        SourceError
            If the dataset or record cannot be opened, a mapped signal is
            missing, units do not convert, the source has no value, or (with
            ``collisions="raise"``) two steps snap to one tick.
        TimeRangeError
            If a time leaves the int64-nanosecond range.
        EntityIdError
            For a missing or duplicated entity id.
        """
        reader, recs = self._records(uri)
        hz = float(self.schema.sample_hz)
        ids = {r.id: self._entity_id(r, uri) for r in recs}
        ents = sorted(recs, key=lambda r: entity_sort_key(ids[r.id]))
        for a, b in itertools.pairwise(ents):
            if entity_sort_key(ids[a.id]) == entity_sort_key(ids[b.id]):
                raise EntityIdError(
                    f"records {a.id!r} and {b.id!r} have the same entity id {ids[a.id]!r}",
                    source=uri,
                    row=b.index,
                    column=self.entity,
                )
        per: list[dict[str, tuple[np.ndarray, np.ndarray, np.ndarray | None]]] = []
        kmin, kmax = None, None
        collided, hit = 0, set[str]()
        for rec in ents:
            got: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray | None]] = {}
            for f in self.schema.fields:
                got[f.name], n_coll = self._snap_field(reader, rec, f, hz, uri)
                collided += n_coll
                if n_coll:
                    hit.add(rec.id)
                k = got[f.name][0]
                if k.size:
                    lo, hi = int(k.min()), int(k.max())
                    kmin = lo if kmin is None else min(kmin, lo)
                    kmax = hi if kmax is None else max(kmax, hi)
            per.append(got)
        if kmin is None or kmax is None:
            raise SourceError("the source holds no value", source=uri)
        if collided and self.collisions == "nearest":
            warn_dropped(uri, collided, hz, len(hit))
        n_t = kmax - kmin + 1
        present = np.zeros((n_t, len(ents)), dtype=bool)
        values = {f.name: np.full((n_t, len(ents), f.dims), np.nan) for f in self.schema.fields}
        ints = {
            f.name: np.zeros((n_t, len(ents), f.dims), dtype=f.dtype)
            for f in self.schema.fields
            if is_int_field(f)
        }
        for e, got in enumerate(per):
            for fname, (k, v, exact) in got.items():
                values[fname][k - kmin, e] = v
                present[k - kmin, e] = True
                if exact is not None:
                    ints[fname][k - kmin, e] = exact
        glob = {g.name: np.full((n_t, g.dims), np.nan) for g in self.schema.globals}
        events = {ev: np.zeros(n_t, dtype=bool) for ev in self.schema.events}
        return TickTable(
            self.source_id(uri),
            self.schema,
            kmin,
            tuple(ids[r.id] for r in ents),
            values,
            present,
            glob,
            events,
            counts={"snap_collisions": collided},
            ints=ints,
        )

    def _snap_field(
        self, reader: Any, rec: Any, f: FieldSpec, hz: float, uri: str
    ) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray | None], int]:
        """One entity's field on the grid: (ticks, values (K, D), exact ints or None) and
        the number of steps that collided (merged by the ``collisions`` policy).

        Raises
        ------
        SourceError
            With ``collisions="raise"``, when two steps snap to one tick.
        """
        t, v, exact = self._field_steps(reader, rec, f.name, uri)
        k, off = snap_ticks(t, hz, self.grid_offset_s)
        keep = (off <= self.snap_tolerance + 1e-9) & ~np.all(np.isnan(v), axis=1)
        k, off, v = k[keep], off[keep], v[keep]
        order = np.lexsort((np.arange(k.size), off, k))
        starts = group_starts(k[order])
        n_coll = k.size - starts.size
        if n_coll and self.collisions == "raise":
            raise SourceError(
                f"record {rec.id!r}, field {f.name!r}: {n_coll} step(s) snap to a "
                f"{hz:g} Hz tick already taken",
                source=uri,
            )
        sel = order[starts]
        # exact integers are never averaged: an integer field keeps its nearest step
        ints = None if exact is None else exact[keep][sel]
        return (k[sel], merge_groups(v[order], starts, f, self.collisions), ints), int(n_coll)

    def ticks(self, uri: str) -> Iterator[Tick]:
        return self.read_table(uri).iter_ticks()


def _exact_ints(f: FieldSpec, data: Any, uri: str, what: str) -> np.ndarray:
    """Values of an integer-dtype field in its dtype, exactly: from the Arrow values as
    stored, or from unit-converted floats (which must then be integral).  0 where missing.

    Raises
    ------
    SourceError
        A non-integral value or one outside the field's dtype, naming the signal and step.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(data, np.ndarray):
        return field_ints(f, data, ~np.isnan(data), uri, what)
    valid = np.asarray(data.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    fill = False if pa.types.is_boolean(data.type) else 0
    x = np.asarray(pc.fill_null(data, fill).to_numpy(zero_copy_only=False))
    return field_ints(f, x, valid, uri, what)


register_adapter("timenet", TimenetAdapter, execution_traits=SOURCE_READER_TRAITS)
