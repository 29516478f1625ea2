"""The kuration exception tree.

::

    KurationError
    ├── SchemaError (ValueError)            a SchemaSpec or field declaration is invalid
    ├── MetricCompileError (ValueError)     a metric expression does not compile against a schema
    ├── StrategyError (ValueError)          a strategy file is malformed or inconsistent
    ├── JobError (ValueError)               a job file is malformed
    │   └── InitError                       ``kur init`` cannot guess a job from its inputs
    ├── PolicyError (ValueError)            a quality policy (``kur check``) is malformed
    ├── SourceError (ValueError)            raw input is malformed (names source and row)
    │   ├── EntityIdError                   an entity id is missing or has no canonical form (names column)
    │   ├── TimeRangeError                  a time is outside the int64-nanosecond range (names column)
    │   ├── StreamOrderError                a streamed source is not time-ordered (names source and row)
    │   └── SourceChangedError              a source's bytes differ from the ones its fingerprint names
    ├── EmptyPoolError (RuntimeError)       scoring produced no segments at all
    ├── OutputSpecError (ValueError)        an OutputSpec is invalid or a modality cannot be filled
    │   └── OutputValueError                a value does not fit its modality's dtype (range, integrality)
    ├── BudgetError (ValueError)            the hours budget cannot be met as configured
    │   ├── GroupCapError                   the group cap starves every group of a split
    │   └── EmptySplitError                 a split with a non-zero request would end empty
    ├── DestinationError (OSError)          the output destination cannot be created or written
    ├── UnsupportedURLError (ValueError)    a URL scheme kuration cannot read or write (FTP, SFTP, HTTP writes)
    ├── DatasetExistsError (FileExistsError) the destination holds a dataset and neither resume nor force was given
    ├── DatasetIntegrityError (ValueError)  an artifact fails verification (checksum, layout, commit state)
    ├── UnknownSplitError (KeyError)        a reader was asked for a split the dataset does not have
    ├── UnknownModalityError (KeyError)     a reader was asked for a modality the dataset does not have
    ├── ReaderOptionError (ValueError)      a reader option is invalid (pad_to, delta_timestamps)
    ├── SampleFetchError (RuntimeError)     a pinned sample could not be fetched or failed its checksum
    ├── MediaError (ValueError)             a media file, stream or frame cannot be probed or decoded
    ├── TransformError (ValueError)         a BatchTransform use is invalid or its output is (names transform, source, segment, token)
    ├── ScorerError (RuntimeError)          a SegmentScorer use is invalid or it failed (names scorer, source, segment)
    ├── PipelineError (ValueError)          a Pipeline is built or used inconsistently (unknown seam name, no source)
    │   ├── StreamingError                  ``streaming=True`` cannot honour bounded memory for this plan (names the part)
    │   └── MemoryBudgetError               the plan's estimated peak exceeds ``memory_budget`` (names what would meet it)
    ├── ExecutorError (RuntimeError)        an executor cannot start, or a worker process or Ray task died
    ├── ExecutionTraitsError (ValueError)   a component declares invalid execution traits (raised at registration)
    ├── AdapterError (ValueError)           an adapter's options do not fit its schema or format (names adapter)
    ├── StrictJSONError (ValueError)        a JSON document has duplicate keys, NaN/Infinity or bad syntax
    ├── RegistrationError (ValueError, TypeError)  a name is taken or empty, or a component lacks its interface
    ├── UnknownNameError (KeyError)         a name is not registered (the message lists close matches)
    ├── PluginError (ImportError)           an explicitly listed plugin module could not be imported
    └── MissingExtraError (ImportError)     an optional feature's extra is not installed

Warnings (defined in :mod:`kuration.warning_types`, exported here too): ``KurationWarning`` (root),
``DataOrderWarning`` (input rows were reordered),
``SnapCollisionWarning`` (rows of one entity snapped to one grid point; all but one dropped),
``DataRepairWarning`` (an input defect repaired because the user opted into that repair),
``BudgetGranularityWarning`` (a split's admitted hours miss its request by more than 10% because
its smallest admissible unit, a whole track or span, is too long) and ``PluginWarning`` (an
installed entry-point plugin failed and was rolled back); ``NonExclusiveLeaseWarning``: no atomic lease.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._csvline import row_place
from .warning_types import (
    BudgetGranularityWarning,
    DataOrderWarning,
    DataRepairWarning,
    KurationWarning,
    NonExclusiveLeaseWarning,
    PluginWarning,
    SnapCollisionWarning,
)

__all__ = [
    "AdapterError",
    "BudgetError",
    "BudgetGranularityWarning",
    "DataOrderWarning",
    "DataRepairWarning",
    "DatasetExistsError",
    "DatasetIntegrityError",
    "DestinationError",
    "EmptyPoolError",
    "EmptySplitError",
    "EntityIdError",
    "ExecutionTraitsError",
    "ExecutorError",
    "GroupCapError",
    "InitError",
    "JobError",
    "KurationError",
    "KurationWarning",
    "MediaError",
    "MemoryBudgetError",
    "MetricCompileError",
    "MissingExtraError",
    "NonExclusiveLeaseWarning",
    "OutputSpecError",
    "OutputValueError",
    "PipelineError",
    "PluginError",
    "PluginWarning",
    "PolicyError",
    "ReaderOptionError",
    "RegistrationError",
    "SampleFetchError",
    "SchemaError",
    "ScorerError",
    "SnapCollisionWarning",
    "SourceChangedError",
    "SourceError",
    "StrategyError",
    "StreamOrderError",
    "StreamingError",
    "StrictJSONError",
    "TimeRangeError",
    "TransformError",
    "UnknownModalityError",
    "UnknownNameError",
    "UnknownSplitError",
    "UnsupportedURLError",
]


class KurationError(Exception):
    """Root of every error raised by kuration.

    Every subclass pickles with its attributes (a failure in a ``process`` or
    ``ray`` worker travels back to the lead process as the same error), even
    where ``__init__`` takes keyword-only arguments.
    """

    def __reduce__(self) -> tuple[object, ...]:
        # rebuilt without calling __init__ (keyword-only attributes are not in ``args``)
        return (_rebuild_error, (type(self), self.args), self.__dict__)


def _rebuild_error(cls: type[Exception], args: tuple[object, ...]) -> Exception:
    err = cls.__new__(cls)
    Exception.__init__(err, *args)
    return err


class SchemaError(KurationError, ValueError):
    """A schema or one of its fields is invalid.

    Attributes
    ----------
    field : str or None
        The offending field name, when there is one.

    path : str or None
        Key path of the (first) problem in the schema document, e.g. ``fields[0].dims``.
    problems : tuple of str
        One line per problem.
    """

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        path: str | None = None,
        problems: Sequence[str] = (),
    ) -> None:
        super().__init__(f"field {field!r}: {message}" if field else message)
        self.field = field
        self.path = path
        self.problems = tuple(problems) or (message,)


class MetricCompileError(KurationError, ValueError):
    """A metric expression failed validation against the grammar or the schema.

    Attributes
    ----------
    expr : str
        The whole expression.
    token : str or None
        The token at fault.
    position : int or None
        Character offset of ``token`` in ``expr``.
    """

    def __init__(
        self,
        message: str,
        *,
        expr: str = "",
        token: str | None = None,
        position: int | None = None,
        metric: str | None = None,
    ) -> None:
        where = ""
        if token is not None:
            where = f" at token {token!r}"
            if position is not None:
                where += f" (position {position})"
        head = f"metric {metric!r}: " if metric else ""
        tail = f" in {expr!r}" if expr else ""
        super().__init__(f"{head}{message}{where}{tail}")
        self.expr = expr
        self.token = token
        self.position = position
        self.metric = metric


class StrategyError(KurationError, ValueError):
    """A strategy is malformed, names an unknown method, or references a missing feature.

    Attributes
    ----------
    path : str or None
        Key path of the (first) problem, e.g. ``budget.train_hours``, when known.
    problems : tuple of str
        One line per problem.
    """

    def __init__(
        self, message: str, *, path: str | None = None, problems: Sequence[str] = ()
    ) -> None:
        super().__init__(message)
        self.path = path
        self.problems = tuple(problems) or (message,)


class JobError(KurationError, ValueError):
    """A job file is malformed or names something that does not exist.

    Attributes
    ----------
    path : str or None
        Key path of the (first) problem, e.g. ``budget.train_hours``, when known.
    problems : tuple of str
        One line per problem.
    """

    def __init__(
        self, message: str, *, path: str | None = None, problems: Sequence[str] = ()
    ) -> None:
        super().__init__(message)
        self.path = path
        self.problems = tuple(problems) or (message,)


class InitError(JobError):
    """``kur init`` cannot write a job for its inputs (no time column, an unreadable file,
    a unit in a hint file that pint does not know, a job folder that already exists).

    Attributes
    ----------
    source : str or None
        The input (file or ``timenet://`` reference) at fault, when one is.
    """

    def __init__(self, message: str, *, source: str | None = None) -> None:
        super().__init__(message)
        self.source = source


class PolicyError(KurationError, ValueError):
    """A quality policy (``kur check``) is malformed.

    Attributes
    ----------
    path : str or None
        Key path of the (first) problem, e.g. ``min_sources``, when known.
    problems : tuple of str
        One line per problem.
    """

    def __init__(
        self, message: str, *, path: str | None = None, problems: Sequence[str] = ()
    ) -> None:
        super().__init__(message)
        self.path = path
        self.problems = tuple(problems) or (message,)


class SourceError(KurationError, ValueError):
    """Raw input is malformed.

    Attributes
    ----------
    source : str
        The source URI or id.
    row : int or None
        Zero-based data row in the source file, when known; the message names a CSV
        file's line as an editor shows it instead (1-based, header counted).
    detail : str
        The message without the source and row in front of it.
    """

    def __init__(self, message: str, *, source: str, row: int | None = None) -> None:
        where = f"{source}" + (f", {row_place(source, row)}" if row is not None else "")
        super().__init__(f"{where}: {message}")
        self.source = source
        self.row = row
        self.detail = message


class EntityIdError(SourceError):
    """An entity id is missing (null, NaN, empty text) or cannot be represented canonically.

    Attributes
    ----------
    source : str
        The source URI or id ("" when the id is not tied to a source).
    column : str or None
        The id column (or record metadata key), when known.
    row : int or None
        Zero-based row (or record index), when known.
    """

    def __init__(
        self, message: str, *, source: str = "", row: int | None = None, column: str | None = None
    ) -> None:
        where = f"column {column!r}: " if column is not None else ""
        if source:
            super().__init__(where + message, source=source, row=row)
        else:
            KurationError.__init__(self, where + message)
            self.source, self.row = source, row
        self.column = column


class TimeRangeError(SourceError):
    """A time cannot be held as int64 nanoseconds since the Unix epoch.

    The representable range is 1677-09-21T00:12:43.145224193Z to
    2262-04-11T23:47:16.854775807Z.

    Attributes
    ----------
    source : str
    column : str or None
        The time column (or signal).
    row : int or None
        Zero-based row (or step) of the first time out of range.
    """

    def __init__(
        self, message: str, *, source: str, row: int | None = None, column: str | None = None
    ) -> None:
        where = f"column {column!r}: " if column is not None else ""
        super().__init__(where + message, source=source, row=row)
        self.column = column


class StreamOrderError(SourceError):
    """A streamed source goes back in time: a bounded stream cannot sort a whole source
    (``streaming=True`` needs time-ordered input).  ``source`` and ``row`` name the file row."""


class SourceChangedError(SourceError):
    """A source's bytes are not the ones the run fingerprinted: it was rewritten, truncated or
    replaced between two reads of one run (or since the run whose record pins it).

    Raised by the read that noticed, before anything is published; it is never skipped by
    ``on_error="skip"`` (the run's record would otherwise name bytes it did not read).

    Attributes
    ----------
    source : str
        The source URI.
    source_id : str
        The source id.
    expected : str
        The digest the run recorded (a SHA-256 hex digest, or a remote object's
        ``version:...``/``etag:...`` identity).
    actual : str
        The digest of what the read found (same kind; ``""`` when the object is gone).
    """

    def __init__(self, *, source: str, source_id: str, expected: str, actual: str) -> None:
        super().__init__(
            f"the source changed during the run (source {source_id!r}: the run recorded "
            f"{expected or '(none)'}, the read found {actual or '(nothing)'}); nothing was "
            "published -- run again to use its new bytes",
            source=source,
        )
        self.source_id = source_id
        self.expected = expected
        self.actual = actual


class EmptyPoolError(KurationError, RuntimeError):
    """Scoring produced an empty segment pool; ``errors`` lists why each source was skipped."""

    def __init__(self, message: str, *, errors: dict[str, str] | None = None) -> None:
        # one line (a command prints it as its one error line); ``errors`` holds every reason
        detail = ""
        if errors:
            items = sorted(errors.items())
            detail = "; " + "; ".join(f"{k}: {v}" for k, v in items[:3])
            if len(items) > 3:
                detail += f"; and {len(items) - 3} more"
        super().__init__(message + detail)
        self.errors = dict(errors or {})


class OutputSpecError(KurationError, ValueError):
    """An OutputSpec is invalid, or a declared modality cannot be filled for a present entity.

    Attributes
    ----------
    path : str or None
        Key path of the (first) problem, e.g. ``budget.train_hours``, when known.
    problems : tuple of str
        One line per problem.
    """

    def __init__(
        self, message: str, *, path: str | None = None, problems: Sequence[str] = ()
    ) -> None:
        super().__init__(message)
        self.path = path
        self.problems = tuple(problems) or (message,)


class OutputValueError(OutputSpecError):
    """A value of a present entity does not fit its modality's dtype and no policy allows it.

    Attributes
    ----------
    modality : str
    dtype : str
    source : str
    entity : object
        The entity id.
    row : int
        Step index within the source's grid.
    value : float or int
        The offending value.
    """

    def __init__(
        self,
        message: str,
        *,
        modality: str,
        dtype: str,
        source: str,
        entity: object,
        row: int,
        value: float | int,
    ) -> None:
        super().__init__(
            f"modality {modality!r} ({dtype}): {message} for source {source!r}, "
            f"entity {entity!r}, row {row}"
        )
        self.modality = modality
        self.dtype = dtype
        self.source = source
        self.entity = entity
        self.row = row
        self.value = value


class BudgetError(KurationError, ValueError):
    """The hours budget cannot be met as configured; raised while planning, before any shard.

    Attributes
    ----------
    split : str
        The split at fault.
    requested_s : float
        Its request in seconds.
    """

    def __init__(self, message: str, *, split: str, requested_s: float) -> None:
        super().__init__(message)
        self.split = split
        self.requested_s = requested_s


class GroupCapError(BudgetError):
    """The group cap is shorter than the shortest candidate track of every group of a split.

    Attributes
    ----------
    cap_s : float
        The cap, ``max_group_overshoot * requested_s / n_groups`` seconds.
    shortest_s : float
        The shortest candidate track (or span) of the split, seconds.
    n_groups : int
    """

    def __init__(
        self,
        message: str,
        *,
        split: str,
        requested_s: float,
        cap_s: float,
        shortest_s: float,
        n_groups: int,
    ) -> None:
        super().__init__(message, split=split, requested_s=requested_s)
        self.cap_s = cap_s
        self.shortest_s = shortest_s
        self.n_groups = n_groups


class EmptySplitError(BudgetError):
    """A split with a non-zero request would end with no shard (and the job does not allow it).

    Attributes
    ----------
    binding : str or None
        The constraint that emptied it: ``"group cap"``, ``"pool size"`` or ``"track length"``.
    """

    def __init__(
        self, message: str, *, split: str, requested_s: float, binding: str | None
    ) -> None:
        super().__init__(message, split=split, requested_s=requested_s)
        self.binding = binding


class DestinationError(KurationError, OSError):
    """The output destination cannot be created, locked or written (permissions, disk, a file
    in the way).

    Attributes
    ----------
    path : str
        The path the operating system refused.
    """

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path


class DatasetExistsError(KurationError, FileExistsError):
    """The output destination already holds a dataset and neither ``resume`` nor ``force`` was set."""


class DatasetIntegrityError(KurationError, ValueError):
    """A curated dataset failed verification: bad JSON, wrong commit state, checksum or layout."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path


class UnknownSplitError(KurationError, KeyError):
    """A reader was asked for a split the dataset does not have.

    Attributes
    ----------
    split : str
        The name asked for.
    available : tuple of str
        The dataset's splits.
    path : str or None
        The dataset.
    """

    def __init__(
        self, split: str, available: Sequence[str], *, path: str | None = None, hint: str = ""
    ) -> None:
        self.split = split
        self.available = tuple(available)
        self.path = path
        msg = (
            f"no split {split!r} (the dataset has {', '.join(map(repr, self.available)) or 'none'})"
        )
        self.message = f"{path}: {msg}{hint}" if path else f"{msg}{hint}"
        super().__init__(self.message)

    def __str__(self) -> str:  # KeyError would print the repr of the message
        return self.message


class UnknownModalityError(KurationError, KeyError):
    """A reader was asked for a modality the dataset does not have (the message lists them)."""

    def __str__(self) -> str:  # KeyError would print the repr of the message
        return str(self.args[0]) if self.args else ""


class ReaderOptionError(KurationError, ValueError):
    """A reader option is invalid: a ``pad_to`` shorter than a shard, a ``delta_timestamps``
    offset off the sample grid or naming an unknown key."""


class UnsupportedURLError(KurationError, ValueError):
    """A URL scheme kuration cannot use there (FTP/SFTP/HTTP writes); has ``url``, ``scheme``."""

    def __init__(self, message: str, *, url: str, scheme: str) -> None:
        super().__init__(f"{url}: {message}")
        self.url, self.scheme = url, scheme


class MissingExtraError(KurationError, ImportError):
    """An optional feature needs a package from an extra that is not installed."""


class SampleFetchError(KurationError, RuntimeError):
    """A pinned public sample could not be downloaded or did not match its pinned SHA-256."""


class MediaError(KurationError, ValueError):
    """A media source cannot be probed or decoded, or a frame reference does not resolve.

    Attributes
    ----------
    uri : str
        The media file.
    stream : int or None
        Stream index within the container, when known.
    frame : int or None
        Frame index (presentation order) at fault, when known.
    """

    def __init__(
        self, message: str, *, uri: str, stream: int | None = None, frame: int | None = None
    ) -> None:
        where = str(uri)
        if stream is not None:
            where += f", stream {stream}"
        if frame is not None:
            where += f", frame {frame}"
        super().__init__(f"{where}: {message}")
        self.uri = str(uri)
        self.stream = stream
        self.frame = frame


class PipelineError(KurationError, ValueError):
    """A :class:`~kuration.Pipeline` is incomplete or inconsistent (checked before any row is read).

    Attributes
    ----------
    step : str or None
        The builder step at fault (``"source"``, ``"transform"``, ...), when there is one.
    """

    def __init__(self, message: str, *, step: str | None = None) -> None:
        super().__init__(f"{step}: {message}" if step else message)
        self.step = step


class StreamingError(PipelineError):
    """``streaming=True`` cannot honour bounded memory for this plan (npz or packed output, an
    adapter or source that cannot be read lazily, a whole-pool scorer, a transform); raised
    before any row is read.  ``step`` names the part at fault."""


class MemoryBudgetError(PipelineError):
    """The plan's estimated peak exceeds ``memory_budget`` (raised before any row is read);
    the message names the option that would meet it, ``estimate`` holds the breakdown (bytes)."""

    def __init__(self, message: str, *, estimate: dict[str, object] | None = None) -> None:
        super().__init__(message, step="memory_budget")
        self.estimate = dict(estimate or {})

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_error, (type(self), self.args), self.__dict__)


class ExecutorError(KurationError, RuntimeError):
    """An executor (``process`` pool, ``ray``) cannot start, or one of its workers died (an
    exception *inside* a task is not this: it comes back as the task's outcome).
    ``executor`` names the executor, ``task`` what the lost task ran (a source URI)."""

    def __init__(self, message: str, *, executor: str | None = None, task: str | None = None):
        super().__init__(message)
        self.executor = executor
        self.task = task


class ExecutionTraitsError(KurationError, ValueError):
    """A registered component's ``execution_traits`` are invalid (raised at registration).

    Attributes
    ----------
    component : str or None
        ``"<kind>:<name>"`` of the component being registered.
    """

    def __init__(self, message: str, *, component: str | None = None) -> None:
        super().__init__(f"{component}: {message}" if component else message)
        self.component = component


class AdapterError(KurationError, ValueError):
    """An adapter's options do not fit its schema or its input format (a column mapping
    naming no schema field, an unknown time unit, a missing option).

    Attributes
    ----------
    adapter : str
        The adapter's registered name.
    """

    def __init__(self, message: str, *, adapter: str) -> None:
        super().__init__(message)
        self.adapter = adapter


class StrictJSONError(KurationError, ValueError):
    """A JSON document is malformed, repeats a key or holds NaN/Infinity (strict JSON)."""


class RegistrationError(KurationError, ValueError, TypeError):
    """A registration is refused: the name is empty or taken (without ``clobber``), or the
    component lacks the interface its registry needs.  A ``ValueError`` and a ``TypeError``,
    the two builtins registration raised before this class existed."""


class UnknownNameError(KurationError, KeyError):
    """A name is not registered; the message lists close matches."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class PluginError(KurationError, ImportError):
    """An explicitly listed plugin module could not be imported."""


def _where(kind: str, name: str, source: str | None, segment: str | None, token: str | None) -> str:
    parts = [f"{kind} {name!r}"]
    if source is not None:
        parts.append(f"source {source!r}")
    if segment is not None:
        parts.append(f"segment {segment!r}")
    if token is not None:
        parts.append(f"token {token!r}")
    return ", ".join(parts)


class TransformError(KurationError, ValueError):
    """A BatchTransform use is invalid (raised when the strategy is built, before any data
    is read) or a transform returned an unusable output (raised while scoring a source).

    Attributes
    ----------
    transform : str
        The registered transform name.
    source : str or None
        The source id being scored, when the error arose on data.
    segment : str or None
        The stable segment id (``"<source_id>:<start_idx>"``) at fault, when known.
    token : str or None
        The input token (``field:position``, ``media:frame``) or output name at fault.
    """

    def __init__(
        self,
        message: str,
        *,
        transform: str,
        source: str | None = None,
        segment: str | None = None,
        token: str | None = None,
    ) -> None:
        super().__init__(f"{_where('transform', transform, source, segment, token)}: {message}")
        self.transform, self.source = transform, source
        self.segment, self.token = segment, token


class ScorerError(KurationError, RuntimeError):
    """A SegmentScorer use is invalid (raised when the strategy is built) or a scorer failed
    on the whole pool, or returned an unusable output.

    Attributes
    ----------
    scorer : str
        The registered scorer name.
    source, segment : str or None
        The source id and stable segment id at fault, when the failure is attributable.
    """

    def __init__(
        self,
        message: str,
        *,
        scorer: str,
        source: str | None = None,
        segment: str | None = None,
    ) -> None:
        super().__init__(f"{_where('scorer', scorer, source, segment, None)}: {message}")
        self.scorer = scorer
        self.source = source
        self.segment = segment
