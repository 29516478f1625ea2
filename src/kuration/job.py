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
      "seed": 0, "clip_aggregate": "max", "min_track_seconds": 0, "workers": 1, "on_error": "skip"
    }

Relative paths resolve against the job file's directory.
"""

from __future__ import annotations

import glob as _glob
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .adapters.base import adapter_from_dict
from .errors import JobError, KurationError
from .jsonio import loads_strict
from .output.dataset import DatasetWriteResult, write_dataset
from .output.spec import OutputSpec
from .progress import ProgressCallback
from .samples import build_adsb_sources, cache_dir
from .schema import SchemaSpec
from .segment import Segmenter
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
        paths = [s if os.path.isabs(s) else str(base / s) for s in spec]
        missing = [p for p in paths if not os.path.exists(p)]
        if missing:
            raise JobError(f"source files not found: {missing}")
        return paths
    raise JobError(
        "sources must be a non-empty list of paths, {'glob': pattern} or {'sample': name}"
    )


def run_job(
    job: str | os.PathLike[str] | Mapping[str, Any],
    out: str | os.PathLike[str],
    *,
    force: bool = False,
    workers: int | None = None,
    progress: ProgressCallback | None = None,
) -> DatasetWriteResult:
    """Run a job end to end: validate everything, fetch/resolve sources, curate and write.

    Raises
    ------
    JobError, SchemaError, StrategyError, MetricCompileError, OutputSpecError
        Before any data is read.
    KurationError
        From scoring and writing (e.g. EmptyPoolError, DatasetExistsError).
    """
    raw, base = load_job(job)
    try:
        schema = SchemaSpec.from_dict(raw["schema"])
        adapter = adapter_from_dict(raw["adapter"], schema)
        strategy = load_strategy(raw["strategy"], schema)
        spec = OutputSpec.from_dict(raw["output"])
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
    spec.validate_against(schema, strategy.feature_names)
    budget = raw["budget"]
    if not isinstance(budget, Mapping) or set(budget) - {"train_hours", "test_hours"}:
        raise JobError("budget is {'train_hours': h, 'test_hours': h}")
    sources = resolve_sources(raw["sources"], base)
    return write_dataset(
        out,
        schema=schema,
        adapter=adapter,
        sources=sources,
        strategy=strategy,
        segmenter=segmenter,
        spec=spec,
        train_hours=float(budget.get("train_hours", 0)),
        test_hours=float(budget.get("test_hours", 0)),
        seed=int(raw.get("seed", 0)),
        clip_aggregate=raw.get("clip_aggregate", "max"),
        min_track_seconds=float(raw.get("min_track_seconds", 0.0)),
        workers=int(workers if workers is not None else raw.get("workers", 1)),
        on_error=raw.get("on_error", "skip"),
        force=force,
        progress=progress,
        job=raw,
    )
