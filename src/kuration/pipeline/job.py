"""Job files: one JSON document naming everything a curation run needs.

::

    {
      "name": "...",
      "schema": {...} | "schema.json",
      "adapter": {"type": "timeseries", ...},
      "sources": ["a.parquet", ...] | {"glob": "data/*.parquet"} | {"sample": "adsb-paris", "slice_minutes": 15},
      "segmenter": {"window": 60, "stride": 30, "unit": "seconds"},
      "strategy": {...} | "strategy.json",
      "output": {...} | "output.json",
      "budget": {"train_hours": 3.0, "test_hours": 1.0},
      "seed": 0, "clip_aggregate": "max", "min_track_seconds": 0, "workers": 1, "on_error": "skip",
      "span_seconds": 300 | "span_steps": 300,
      "group_of": {"<source id>": "<group>", ...}, "max_group_overshoot": 1.5,
      "tag_coverage": false, "min_tag_frac": 0.1,
      "encoder": {"type": "<registered encoder>", ...options}
    }

Relative paths resolve against the job file's directory.
"""

from __future__ import annotations

import glob as _glob
import os
from collections.abc import Mapping
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from ..contracts.schema import SchemaSpec
from ..contracts.segment import Segmenter
from ..core.jsonio import loads_strict
from ..core.plugins import load_plugins, without_entry_point_plugins
from ..core.progress import ProgressCallback
from ..errors import JobError, KurationError
from ..output.encoders import get_encoder
from ..output.presets import resolve_output
from ..sources.base import InputAdapter, adapter_from_dict
from ..sources.samples import build_adsb_sources, cache_dir
from .hours import DatasetWriteResult, preflight, write_dataset
from .strategy import load_strategy

__all__ = ["load_job", "resolve_sources", "run_job"]

_KEYS = {
    "name",
    "schema",
    "adapter",
    "sources",
    "segmenter",
    "strategy",
    "output",
    "budget",
    "seed",
    "clip_aggregate",
    "min_track_seconds",
    "workers",
    "on_error",
    "description",
    "span_steps",
    "span_seconds",
    "group_of",
    "max_group_overshoot",
    "tag_coverage",
    "min_tag_frac",
    "encoder",
    "plugins",
    "include_plugin_entry_points",
}
_SAMPLES = {"adsb-paris": build_adsb_sources}


def _load_part(value: Any, base: Path, what: str) -> Any:
    if isinstance(value, str):
        p = (base / value) if not os.path.isabs(value) else Path(value)
        try:
            return loads_strict(p.read_bytes(), what=str(p))
        except FileNotFoundError:
            raise JobError(f"{what}: file {p} not found") from None
        except ValueError as exc:
            raise JobError(str(exc)) from None
    return value


def load_job(job: str | os.PathLike[str] | Mapping[str, Any]) -> tuple[dict[str, Any], Path]:
    """Parse a job (path or dict) strictly; returns it with every part inlined, and its base directory.

    Raises
    ------
    JobError
        Malformed JSON, unknown or missing keys, referenced files that do not exist.
    """
    if isinstance(job, Mapping):
        raw, base = dict(job), Path.cwd()
    else:
        p = Path(job)
        try:
            raw = loads_strict(p.read_bytes(), what=str(p))
        except FileNotFoundError:
            raise JobError(f"job file {p} not found") from None
        except ValueError as exc:
            raise JobError(str(exc)) from None
        base = p.parent.resolve()
    if not isinstance(raw, dict):
        raise JobError("a job must be a JSON object")
    extra = set(raw) - _KEYS
    if extra:
        raise JobError(f"unknown job keys {sorted(extra)} (allowed: {sorted(_KEYS)})")
    for key in ("schema", "adapter", "sources", "segmenter", "strategy", "output", "budget"):
        if key not in raw:
            raise JobError(f"job is missing {key!r}")
    for key in ("schema", "strategy", "output"):
        raw[key] = _load_part(raw[key], base, key)
    return raw, base


def resolve_sources(spec: Any, base: Path) -> list[str]:
    """Expand the job's ``sources`` into a sorted list of paths.

    ``timenet://org/name@version`` entries become one URI per TimeNet record
    (or per group with ``?group_by=<key>``), see :mod:`kuration.sources.timenet`.

    Raises
    ------
    JobError
        An unknown sample, a glob matching nothing, a listed file that does not exist.
    """
    if isinstance(spec, Mapping) and "sample" in spec:
        name = spec["sample"]
        if name not in _SAMPLES:
            raise JobError(f"unknown sample {name!r} (known: {sorted(_SAMPLES)})")
        opts = {k: v for k, v in spec.items() if k != "sample"}
        out = cache_dir() / "sources" / f"{name}-{opts.get('slice_minutes', 15)}min"
        return [str(p) for p in _SAMPLES[name](out, **opts)]
    if isinstance(spec, Mapping) and "glob" in spec:
        pattern = str(spec["glob"])
        pattern = pattern if os.path.isabs(pattern) else str(base / pattern)
        found = sorted(_glob.glob(pattern))
        if not found:
            raise JobError(f"sources glob {pattern!r} matches no file")
        return found
    if isinstance(spec, list) and spec and all(isinstance(s, str) for s in spec):
        if any(s.startswith("timenet://") for s in spec):
            from ..sources.timenet import expand_source

            # one source per TimeNet record (or group), pinned to the exact version
            out: list[str] = []
            for s in spec:
                if s.startswith("timenet://"):
                    out.extend(expand_source(s))
                else:
                    out.extend(resolve_sources([s], base))
            return out
        paths = [s if os.path.isabs(s) else str(base / s) for s in spec]
        missing = [p for p in paths if not os.path.exists(p)]
        if missing:
            raise JobError(f"source files not found: {missing}")
        return paths
    raise JobError(
        "sources must be a non-empty list of paths, {'glob': pattern} or {'sample': name}"
    )


def job_components(raw: Mapping[str, Any]) -> tuple[SchemaSpec, InputAdapter, Segmenter]:
    """Build a loaded job's schema, adapter and segmenter.

    Raises
    ------
    JobError, SchemaError
        On malformed parts (before any data is read).
    """
    try:
        schema = SchemaSpec.from_dict(raw["schema"])
        adapter = adapter_from_dict(raw["adapter"], schema)
        seg_opts = dict(raw["segmenter"])
        if seg_opts.get("unit") == "seconds":
            seg_opts.setdefault("sample_hz", schema.sample_hz)
        segmenter = Segmenter(**seg_opts)
    except TypeError as exc:
        raise JobError(str(exc)) from None
    except (KeyError, ValueError) as exc:
        if isinstance(exc, KurationError):
            raise
        raise JobError(str(exc)) from None
    return schema, adapter, segmenter


def run_job(
    job: str | os.PathLike[str] | Mapping[str, Any],
    out: str | os.PathLike[str],
    *,
    force: bool = False,
    resume: bool = False,
    workers: int | None = None,
    progress: ProgressCallback | None = None,
) -> DatasetWriteResult:
    """Run a job end to end: validate everything, fetch/resolve sources, curate and write.

    ``force`` replaces an existing dataset at ``out``; ``resume`` continues (or
    repeats) the same run there, reusing shards whose checksums still match.

    Raises
    ------
    JobError, SchemaError, StrategyError, MetricCompileError, OutputSpecError
        Before any data is read.
    KurationError
        From scoring and writing (e.g. EmptyPoolError, DatasetExistsError).
    """
    raw, base = load_job(job)
    plugins = raw.get("plugins", [])
    include_eps = raw.get("include_plugin_entry_points", True)
    if not (isinstance(plugins, list) and all(isinstance(m, str) for m in plugins)):
        raise JobError("plugins is a list of module names")
    if not isinstance(include_eps, bool):
        raise JobError("include_plugin_entry_points is true or false")
    load_plugins(plugins, include_entry_points=include_eps)
    scope = nullcontext() if include_eps else without_entry_point_plugins()
    with scope:
        return _run_loaded(
            raw,
            base,
            out,
            force=force,
            resume=resume,
            workers=workers,
            progress=progress,
            plugins=plugins,
            include_eps=include_eps,
        )


def _run_loaded(
    raw: dict[str, Any],
    base: Path,
    out: str | os.PathLike[str],
    *,
    force: bool,
    resume: bool,
    workers: int | None,
    progress: ProgressCallback | None,
    plugins: list[str],
    include_eps: bool,
) -> DatasetWriteResult:
    schema, adapter, segmenter = job_components(raw)
    try:
        strategy = load_strategy(raw["strategy"], schema)
        spec = resolve_output(raw["output"])  # {"preset": name, ...} or a full spec
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, KurationError):
            raise
        raise JobError(str(exc)) from None
    encoder = None
    if raw.get("encoder") is not None:
        enc = raw["encoder"]
        if not isinstance(enc, Mapping) or not isinstance(enc.get("type"), str):
            raise JobError("encoder is {'type': registered name, ...options}")
        try:
            encoder = get_encoder(enc["type"], **{k: v for k, v in enc.items() if k != "type"})
        except (KeyError, TypeError) as exc:
            raise JobError(str(exc)) from None
    group_of = raw.get("group_of")
    if group_of is not None and not (
        isinstance(group_of, Mapping) and all(isinstance(v, str) for v in group_of.values())
    ):
        raise JobError("group_of maps source ids to group names")
    budget = raw["budget"]
    if not isinstance(budget, Mapping) or set(budget) - {"train_hours", "test_hours"}:
        raise JobError("budget is {'train_hours': h, 'test_hours': h}")
    options: dict[str, Any] = {
        "train_hours": float(budget.get("train_hours", 0)),
        "test_hours": float(budget.get("test_hours", 0)),
        "clip_aggregate": raw.get("clip_aggregate", "max"),
        "span_steps": raw.get("span_steps"),
        "span_seconds": raw.get("span_seconds"),
        "max_group_overshoot": raw.get("max_group_overshoot"),
        "min_tag_frac": float(raw.get("min_tag_frac", 0.1)),
        "resume": resume,
        "force": force,
    }
    # every write option is checked before any source is fetched or read
    preflight(schema=schema, strategy=strategy, spec=spec, encoder=encoder, **options)
    sources = resolve_sources(raw["sources"], base)
    return write_dataset(
        out,
        schema=schema,
        adapter=adapter,
        sources=sources,
        strategy=strategy,
        segmenter=segmenter,
        spec=spec,
        encoder=encoder,
        seed=int(raw.get("seed", 0)),
        min_track_seconds=float(raw.get("min_track_seconds", 0.0)),
        workers=int(workers if workers is not None else raw.get("workers", 1)),
        on_error=raw.get("on_error", "skip"),
        group_of=group_of,
        tag_coverage=bool(raw.get("tag_coverage", False)),
        progress=progress,
        job=raw,
        plugins=plugins,
        include_entry_points=include_eps,
        **options,
    )
