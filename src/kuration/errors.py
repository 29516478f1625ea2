"""The kuration exception tree.

::

    KurationError
    ├── SchemaError (ValueError)            a SchemaSpec or field declaration is invalid
    ├── MetricCompileError (ValueError)     a metric expression does not compile against a schema
    ├── StrategyError (ValueError)          a strategy file is malformed or inconsistent
    ├── JobError (ValueError)               a job file is malformed
    ├── SourceError (ValueError)            raw input is malformed (names source and row)
    ├── EmptyPoolError (RuntimeError)       scoring produced no segments at all
    ├── OutputSpecError (ValueError)        an OutputSpec is invalid or a modality cannot be filled
    ├── DatasetExistsError (FileExistsError) the destination holds a dataset and neither resume nor force was given
    ├── DatasetIntegrityError (ValueError)  an artifact fails verification (checksum, layout, commit state)
    ├── SampleFetchError (RuntimeError)     a pinned sample could not be fetched or failed its checksum
    ├── PipelineError (ValueError)          a Pipeline is built or used inconsistently (unknown seam name, no source)
    ├── ExecutionTraitsError (ValueError)   a component declares invalid execution traits (raised at registration)
    └── MissingExtraError (ImportError)     an optional feature's extra is not installed

Warnings: ``KurationWarning`` (root) and ``DataOrderWarning`` (input rows were reordered).
"""

from __future__ import annotations

__all__ = [
    "DataOrderWarning",
    "DatasetExistsError",
    "DatasetIntegrityError",
    "EmptyPoolError",
    "ExecutionTraitsError",
    "JobError",
    "KurationError",
    "KurationWarning",
    "MetricCompileError",
    "MissingExtraError",
    "OutputSpecError",
    "PipelineError",
    "SampleFetchError",
    "SchemaError",
    "SourceError",
    "StrategyError",
]


class KurationError(Exception):
    """Root of every error raised by kuration."""


class SchemaError(KurationError, ValueError):
    """A schema or one of its fields is invalid.

    Attributes
    ----------
    field : str or None
        The offending field name, when there is one.
    """

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(f"field {field!r}: {message}" if field else message)
        self.field = field


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
    """A strategy is malformed, names an unknown method, or references a missing feature."""


class JobError(KurationError, ValueError):
    """A job file is malformed or names something that does not exist."""


class SourceError(KurationError, ValueError):
    """Raw input is malformed.

    Attributes
    ----------
    source : str
        The source URI or id.
    row : int or None
        Zero-based row in the source file, when known.
    """

    def __init__(self, message: str, *, source: str, row: int | None = None) -> None:
        where = f"{source}" + (f", row {row}" if row is not None else "")
        super().__init__(f"{where}: {message}")
        self.source = source
        self.row = row


class EmptyPoolError(KurationError, RuntimeError):
    """Scoring produced an empty segment pool; ``errors`` lists why each source was skipped."""

    def __init__(self, message: str, *, errors: dict[str, str] | None = None) -> None:
        detail = ""
        if errors:
            detail = "\n" + "\n".join(f"  {k}: {v}" for k, v in sorted(errors.items()))
        super().__init__(message + detail)
        self.errors = dict(errors or {})


class OutputSpecError(KurationError, ValueError):
    """An OutputSpec is invalid, or a declared modality cannot be filled for a present entity."""


class DatasetExistsError(KurationError, FileExistsError):
    """The output destination already holds a dataset and neither ``resume`` nor ``force`` was set."""


class DatasetIntegrityError(KurationError, ValueError):
    """A curated dataset failed verification: bad JSON, wrong commit state, checksum or layout."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path


class MissingExtraError(KurationError, ImportError):
    """An optional feature needs a package from an extra that is not installed."""


class SampleFetchError(KurationError, RuntimeError):
    """A pinned public sample could not be downloaded or did not match its pinned SHA-256."""


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


class KurationWarning(UserWarning):
    """Root of kuration's warnings."""


class DataOrderWarning(KurationWarning):
    """Input rows were out of time order within an entity and were sorted."""
