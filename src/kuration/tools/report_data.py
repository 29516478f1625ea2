"""The data behind the HTML report's pictures: tracks on a map and example windows.

Selected tracks are read from the dataset's shards; the pool behind them and the
example windows are read again from the run's sources (``config.json`` names them
and the adapter that read them).  Sources that cannot be read any more (moved
files, another machine) leave those pictures out with a note saying why.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..contracts.schema import FieldSpec, SchemaSpec
from ..errors import KurationError
from ..read.loaders import Dataset, read_shard_arrays
from ..sources.identity import SourceDigest

if TYPE_CHECKING:
    from ..sources.base import InputAdapter

__all__ = ["SourceReader", "feature_units", "metric_fields", "position_field", "shard_tracks"]

_FIELD = re.compile(r"^\s*field:([A-Za-z_][A-Za-z0-9_]*)")
_MAX_POINTS = 400


def position_field(schema: SchemaSpec) -> FieldSpec | None:
    """The schema's first position field, if any."""
    return next((f for f in schema.fields if f.semantics == "position"), None)


def plane(values: np.ndarray, f: FieldSpec) -> tuple[np.ndarray, np.ndarray, str, str]:
    """(horizontal, vertical, x label, y label) of positions ``(T, D)`` for a map.

    Geodetic positions are (latitude, longitude, ...) and are drawn as longitude
    across, latitude up; cartesian ones as their first two components.
    """
    units = list(f.units) * (f.dims if len(f.units) == 1 else 1) if f.units else [""] * f.dims
    if f.frame == "geodetic":
        return values[:, 1], values[:, 0], f"longitude ({units[1]})", f"latitude ({units[0]})"
    return values[:, 0], values[:, 1], f"x ({units[0]})", f"y ({units[1]})"


def thin(a: np.ndarray, n: int = _MAX_POINTS) -> np.ndarray:
    """At most ``n`` evenly spaced rows of ``a`` (first and last kept)."""
    if len(a) <= n:
        return a
    return a[np.unique(np.linspace(0, len(a) - 1, n).round().astype(np.int64))]


def shard_tracks(ds: Dataset, modality: str) -> dict[str, list[np.ndarray]]:
    """Per split, every admitted track's positions ``(T, D)``, NaN where absent.

    Shards of one track (source, entity, span) are joined in step order.
    """
    pieces: dict[tuple[str, str, str, Any], list[tuple[int, np.ndarray]]] = {}
    for e in ds.entries():
        arrays = read_shard_arrays(
            e, ds.manifest["container"], root=ds.root, modalities=ds.manifest["modalities"]
        )
        n = int(e["n_steps"])
        pos = np.asarray(arrays[modality], dtype=np.float64)[:n]
        present = np.asarray(arrays.get("_present", np.ones(n, bool)), dtype=bool)[:n]
        pos = pos.reshape(n, -1).copy()
        pos[~present] = np.nan
        key = (e["split"], e["source_id"], e["entity_id"], e.get("span_index"))
        pieces.setdefault(key, []).append((int(e["start_idx"]), pos))
    out: dict[str, list[np.ndarray]] = {}
    for key in sorted(pieces, key=str):
        parts = [p for _, p in sorted(pieces[key], key=lambda x: x[0])]
        out.setdefault(key[0], []).append(np.concatenate(parts))
    return out


def metric_fields(config: Mapping[str, Any]) -> dict[str, str]:
    """Metric name to the schema field it reads first (``field:<name> | ...``)."""
    define = (config.get("strategy") or {}).get("define") or {}
    out = {}
    for name, expr in define.items():
        m = _FIELD.match(str(expr))
        if m:
            out[name] = m.group(1)
    return out


def feature_units(config: Mapping[str, Any], schema: SchemaSpec) -> dict[str, str]:
    """Each defined metric's unit, compiled against the run's schema ('' when unitless)."""
    from ..metrics.dsl.compile import compile_metric

    define = (config.get("strategy") or {}).get("define") or {}
    out: dict[str, str] = {}
    compiled: dict[str, Any] = {}
    for name, expr in define.items():
        try:
            cm = compile_metric(str(expr), schema, name=name, features=compiled)
        except KurationError:
            continue
        compiled[name] = cm
        out[name] = cm.unit or ""
    return out


class SourceReader:
    """Reads the run's sources again, with the adapter recorded in ``config.json``.

    ``error`` holds why no source can be read (then every read returns None).
    """

    def __init__(self, config: Mapping[str, Any], schema: SchemaSpec) -> None:
        from ..sources.base import adapter_from_dict

        recorded = config.get("pipeline", {}).get("sources", [])
        self.uris = {r["source_id"]: r["uri"] for r in recorded}
        # what the run read: a source changed since then is not shown as the run's
        self.digests = {r["source_id"]: str(r.get("sha256") or "") for r in recorded}
        self.error: str | None = None
        self._cache: dict[str, Any] = {}
        self.adapter: InputAdapter | None
        try:
            self.adapter = adapter_from_dict(config["pipeline"]["adapter"], schema)
        except (KurationError, KeyError, TypeError, ValueError) as exc:
            self.adapter, self.error = None, f"the run's adapter cannot be rebuilt: {exc}"

    def table(self, source_id: str) -> Any:
        """The source's TickTable, or None when it cannot be read (``error`` says why)."""
        if self.adapter is None or source_id not in self.uris:
            return None
        if source_id not in self._cache:
            try:
                expect = SourceDigest(self.digests.get(source_id, ""))
                uri = self.uris[source_id]
                self._cache[source_id] = self.adapter.read_checked(uri, expect=expect)[0]
            except (KurationError, OSError, ValueError) as exc:
                self.error = f"source {source_id} cannot be read again: {exc}"
                self._cache[source_id] = None
        return self._cache[source_id]


def speed(values: np.ndarray, f: FieldSpec, hz: float) -> tuple[np.ndarray, str]:
    """Per-step speed of positions ``(T, E, D)`` (metres per second for geodetic ones)."""
    if f.frame == "geodetic":
        import pymap3d

        alt = values[..., 2] if values.shape[-1] > 2 else np.zeros(values.shape[:-1])
        xyz = np.stack(pymap3d.geodetic2ecef(values[..., 0], values[..., 1], alt), axis=-1)
        unit = "m/s"
    else:
        xyz = values
        unit = f"{f.units[0]}/s" if f.units else "/s"
    v = np.linalg.norm(np.diff(xyz, axis=0), axis=-1) * hz
    return np.concatenate([np.full((1, v.shape[1]), np.nan), v]), unit


def example_windows(
    config: Mapping[str, Any], schema: SchemaSpec, reader: SourceReader
) -> list[dict[str, Any]]:
    """The ranking's example windows with, per binned metric, its field over the window.

    Returns
    -------
    list of dict
        ``rank`` (``"top 1"``, ``"bottom 1"``, ...), the window (``source_id``,
        ``start_idx``, ``end_idx``, ``priority``, ``features``) and ``series``: per
        binned metric ``(metric, label, t, values)``, ``t`` seconds from the window
        start ``(T,)``, ``values`` ``(T, E)`` (a position field as its speed); empty
        when the source cannot be read.
    """
    examples = config.get("results", {}).get("examples") or {}
    axes = ((config.get("strategy") or {}).get("bin") or {}).get("axes") or []
    fields = metric_fields(config)
    hz = float(schema.sample_hz)
    out = []
    for side in ("top", "bottom"):
        for i, w in enumerate(examples.get(side, [])):
            row = {"rank": f"{side} {i + 1}", **w, "series": []}
            table = reader.table(w["source_id"])
            for metric in axes:
                name = fields.get(metric)
                if table is None or name is None or name not in table.values:
                    continue
                f = schema.field(name)
                vals = np.asarray(table.values[name][w["start_idx"] : w["end_idx"]])
                if f.semantics == "position":
                    v, unit = speed(vals, f, hz)
                    label = f"{name} speed ({unit})"
                else:
                    v = vals[..., 0]
                    label = f"{name} ({f.units[0]})" if f.units else name
                t = np.arange(len(v)) / hz
                row["series"].append((metric, label, t, v))
            out.append(row)
    return out
