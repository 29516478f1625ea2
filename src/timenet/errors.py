"""Exceptions raised by :mod:`timenet`.

Every error derives from :class:`TimeNetError`. Where callers would naturally
catch a builtin, the error also inherits that builtin, so ``except KeyError``
or ``except FileNotFoundError`` keeps working::

    TimeNetError (Exception)
    ├── InvalidRefError (ValueError)          ref
    ├── DatasetNotFoundError (FileNotFoundError)  ref, registries
    ├── VersionExistsError (FileExistsError)  path
    ├── ManifestError (ValueError)            path
    ├── DocumentError (ValueError)            path, reason, key
    ├── IntegrityError (ValueError)           path, expected, actual
    ├── SchemaError (ValueError)              signal, record
    ├── UnitError (ValueError)                signal, unit
    ├── NullValuesError (ValueError)          signal, record, null_count
    ├── OptionError (ValueError)              option, value
    ├── StepRangeError (IndexError)           signal, start, stop, length
    ├── RecordIndexError (IndexError)         index, length
    ├── RecordNotFoundError (KeyError)        record
    ├── SignalNotFoundError (KeyError)        record, signal
    │   └── MissingSignalsError               missing (signal -> record ids)
    ├── QueryError (ValueError)               ref, sql, reason
    ├── TermsNotAcceptedError (PermissionError)  ref, level, terms, url, sources
    ├── RegistryError (OSError)               url, path
    └── BuildError (RuntimeError)             ref        (building from a connector)
        ├── FetchError (OSError)              package, filename, path
        ├── RawInputError (ValueError)        path, row
        ├── ConnectorNotFoundError (LookupError)  ref
        ├── ConnectorDefinitionError (TypeError)  ref
        └── ParentError                       ref, parent

    ConnectorWarning (UserWarning)            a third-party connector could not be loaded

Internal control flow, never seen by callers: ``HasNullsError`` (Arrow nulls in
requested rows, turned into :class:`NullValuesError`) and ``_Refused`` (a strict JSON/YAML
refusal, turned into :class:`DocumentError`).  ``timenet.build.errors`` re-exports the
build branch.  A failed build publishes nothing: the writer's staging directory is removed.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "BuildError",
    "ConnectorDefinitionError",
    "ConnectorNotFoundError",
    "ConnectorWarning",
    "DatasetNotFoundError",
    "DocumentError",
    "FetchError",
    "IntegrityError",
    "InvalidRefError",
    "ManifestError",
    "MissingSignalsError",
    "NullValuesError",
    "OptionError",
    "ParentError",
    "QueryError",
    "RawInputError",
    "RecordIndexError",
    "RecordNotFoundError",
    "RegistryError",
    "SchemaError",
    "SignalNotFoundError",
    "StepRangeError",
    "TermsNotAcceptedError",
    "TimeNetError",
    "UnitError",
    "VersionExistsError",
]


class TimeNetError(Exception):
    """Root of every exception raised by :mod:`timenet`."""


class InvalidRefError(TimeNetError, ValueError):
    """A dataset reference is not of the form ``org/name`` or ``org/name@version``."""

    def __init__(self, ref: str, reason: str) -> None:
        self.ref = ref
        super().__init__(f"invalid dataset reference {ref!r}: {reason}")


class DatasetNotFoundError(TimeNetError, FileNotFoundError):
    """No registry holds the requested dataset version."""

    def __init__(self, ref: str, registries: Sequence[str], detail: str = "") -> None:
        self.ref = ref
        self.registries = tuple(registries)
        searched = ", ".join(self.registries) or "<no registries configured>"
        extra = f" ({detail})" if detail else ""
        super().__init__(f"dataset {ref!r} not found; searched: {searched}{extra}")


class VersionExistsError(TimeNetError, FileExistsError):
    """A committed version already exists at the target; versions are immutable."""

    def __init__(self, path: str, ref: str = "") -> None:
        self.path = path
        self.ref = ref
        what = f"{ref} " if ref else ""
        super().__init__(f"version {what}already exists at {path}; versions are immutable")


class ManifestError(TimeNetError, ValueError):
    """``manifest.json`` is missing, unreadable, a symlink, or invalid."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"bad manifest {path}: {reason}")


class DocumentError(TimeNetError, ValueError):
    """A JSON or YAML document is malformed: a key appears twice in one object, a number
    is NaN or infinite, or the syntax is invalid.

    Attributes
    ----------
    path : str
        The document (file path, or what it is inside the catalog).
    reason : str
    key : str or None
        The duplicate key, or the location of the non-finite number.
    """

    def __init__(self, path: str, reason: str, *, key: str | None = None) -> None:
        self.path = path
        self.reason = reason
        self.key = key
        super().__init__(f"{path}: {reason}")


class IntegrityError(TimeNetError, ValueError):
    """A version file does not match the size or SHA-256 recorded in the manifest."""

    def __init__(self, path: str, what: str, expected: object, actual: object) -> None:
        self.path = path
        self.what = what
        self.expected = expected
        self.actual = actual
        super().__init__(f"{what} mismatch for {path}: manifest says {expected}, found {actual}")


class SchemaError(TimeNetError, ValueError):
    """Values, timestamps or specs do not agree with the declared schema."""

    def __init__(self, message: str, *, signal: str | None = None, record: str | None = None):
        self.signal = signal
        self.record = record
        where = []
        if record is not None:
            where.append(f"record {record!r}")
        if signal is not None:
            where.append(f"signal {signal!r}")
        prefix = (", ".join(where) + ": ") if where else ""
        super().__init__(prefix + message)


class UnitError(TimeNetError, ValueError):
    """A unit is unknown to the shared registry, or a conversion is impossible."""

    def __init__(self, unit: str, reason: str, *, signal: str | None = None) -> None:
        self.unit = unit
        self.signal = signal
        where = f"signal {signal!r}: " if signal is not None else ""
        super().__init__(f"{where}unit {unit!r}: {reason}")


class NullValuesError(TimeNetError, ValueError):
    """NumPy conversion was asked for values that contain nulls."""

    def __init__(self, signal: str, record: str, null_count: int, *, hint: str = "") -> None:
        self.signal = signal
        self.record = record
        self.null_count = null_count
        super().__init__(
            f"signal {signal!r} of record {record!r} has {null_count} null value(s); "
            + (hint or "NumPy arrays cannot hold them: use to_arrow() to keep nulls")
        )


class OptionError(TimeNetError, ValueError):
    """An argument has a value the function does not accept (an unknown policy, a window
    that is not a positive integer, ...)."""

    def __init__(self, option: str, value: object, expected: str) -> None:
        self.option = option
        self.value = value
        super().__init__(f"{option}={value!r}: expected {expected}")


class StepRangeError(TimeNetError, IndexError):
    """A ``read_steps`` range falls outside the signal."""

    def __init__(self, signal: str, start: int, stop: int, length: int) -> None:
        self.signal = signal
        self.start = start
        self.stop = stop
        self.length = length
        super().__init__(
            f"signal {signal!r}: steps [{start}, {stop}) are outside [0, {length}] or reversed"
        )


class RecordIndexError(TimeNetError, IndexError):
    """An integer record index is outside ``[-len, len)`` of the version."""

    def __init__(self, index: int, length: int, ref: str = "") -> None:
        self.index = index
        self.length = length
        where = f" of {ref}" if ref else ""
        super().__init__(f"record index {index} is out of range: {length} record(s){where}")


class RecordNotFoundError(TimeNetError, KeyError):
    """No record with this id exists in the version."""

    def __init__(self, record: str) -> None:
        self.record = record
        super().__init__(f"no record {record!r}")

    def __str__(self) -> str:
        return str(self.args[0])


class SignalNotFoundError(TimeNetError, KeyError):
    """The record has no signal of this name."""

    def __init__(self, record: str, signal: str) -> None:
        self.record = record
        self.signal = signal
        super().__init__(f"record {record!r} has no signal {signal!r}")

    def __str__(self) -> str:
        return str(self.args[0])


class QueryError(TimeNetError, ValueError):
    """A catalog query was refused (not one read-only ``SELECT``, or it reached outside
    the version) or failed in DuckDB.

    Attributes
    ----------
    ref : str
        The version queried.
    sql : str
    reason : str
    """

    def __init__(self, ref: str, sql: str, reason: str) -> None:
        self.ref = ref
        self.sql = sql
        self.reason = reason
        super().__init__(f"query on {ref}: {reason}")


class TermsNotAcceptedError(TimeNetError, PermissionError):
    """A version's (effective) access requirement asks the user to accept terms first.

    Attributes
    ----------
    ref : str
        The version refused.
    level : str
        The effective access level (``registration``, ``credentialed``, ``restricted``).
    terms : str
        The terms to accept (each release's own, named).
    url : str or None
        Where to obtain access.
    sources : tuple of str
        The releases whose requirements apply (the version itself and/or its parents).
    """

    def __init__(
        self,
        ref: str,
        level: str,
        terms: str,
        url: str | None = None,
        sources: Sequence[str] = (),
    ) -> None:
        self.ref = ref
        self.level = level
        self.terms = terms
        self.url = url
        self.sources = tuple(sources)
        where = f" (from {', '.join(self.sources)})" if self.sources else ""
        link = f"; access: {url}" if url else ""
        super().__init__(
            f"{ref} requires accepting its terms ({level}{where}): {terms or '(no text)'}{link}; "
            f"accept them with TimeNet(..., accept_terms=[{ref!r}]), "
            f"TimeNet(...).accept_terms({ref!r}) or `timenet accept {ref}`"
        )


class RegistryError(TimeNetError, OSError):
    """A registry cannot be read or written (e.g. writing to a remote registry, or a local
    one the user may not write); ``path`` is the file or directory refused, if known."""

    def __init__(self, url: str, reason: str, *, path: str | None = None) -> None:
        self.url = url
        self.path = path
        super().__init__(f"registry {url}: {reason}")


class MissingSignalsError(SignalNotFoundError):
    """Requested signals are missing from some records (found before any value is read).

    Attributes
    ----------
    missing : dict of str to tuple of str
        Each signal lacking somewhere, and the ids of the records that lack it.
    record, signal : str
        The first record and signal concerned (as for :class:`SignalNotFoundError`).
    """

    def __init__(
        self, missing: dict[str, tuple[str, ...]], total: int, advice: str, *, lead: str = ""
    ) -> None:
        self.missing = missing
        parts = []
        for name, ids in missing.items():
            shown = ", ".join(ids[:5]) + (f", ... ({len(ids) - 5} more)" if len(ids) > 5 else "")
            parts.append(f"{name!r} is missing from {len(ids)} of {total} records ({shown})")
        first = next(iter(missing.items()))
        super().__init__(first[1][0], first[0])
        self.args = (lead + "; ".join(parts) + f"; {advice}",)


class BuildError(TimeNetError, RuntimeError):
    """A connector build failed; nothing was published.

    Attributes
    ----------
    ref : str
        The dataset being built (may be empty when unknown).
    """

    def __init__(self, message: str, *, ref: str = "") -> None:
        self.ref = ref
        super().__init__(f"building {ref}: {message}" if ref else message)


class FetchError(BuildError, OSError):
    """A pinned file could not be fetched, or its SHA-256 differs from the pin.

    Attributes
    ----------
    package, filename : str
        The pinned distribution and file.
    path : str
        The file that failed (download location or the user's copy), if any.
    """

    def __init__(self, message: str, *, package: str, filename: str, path: str = "") -> None:
        self.package = package
        self.filename = filename
        self.path = path
        BuildError.__init__(self, message)

    def __str__(self) -> str:
        return str(self.args[0])


class RawInputError(BuildError, ValueError):
    """A raw input file is malformed (truncated, duplicated column, bad value).

    Attributes
    ----------
    path : str
        The file (``archive!member`` for a member of a wheel or sdist).
    row : int or None
        0-based data row at fault, when known.
    """

    def __init__(self, path: str, message: str, *, row: int | None = None) -> None:
        self.path = path
        self.row = row
        where = f"{path}, row {row}" if row is not None else path
        BuildError.__init__(self, f"{where}: {message}")


class ConnectorNotFoundError(BuildError, LookupError):
    """No installed connector builds this dataset."""

    def __init__(self, ref: str, detail: str = "") -> None:
        extra = f" ({detail})" if detail else ""
        BuildError.__init__(self, f"no connector found for {ref!r}{extra}")
        self.ref = ref


class ParentError(BuildError):
    """A parent release of a child dataset cannot be prepared or does not verify.

    Attributes
    ----------
    parent : str
        The parent release ``org/name@version``.
    """

    def __init__(self, ref: str, parent: str, message: str) -> None:
        self.parent = parent
        BuildError.__init__(self, f"parent {parent}: {message}", ref=ref)


class ConnectorDefinitionError(BuildError, TypeError):
    """A connector module or entry point does not expose a ``Connector`` subclass."""


class ConnectorWarning(UserWarning):
    """A third-party connector could not be loaded."""


class HasNullsError(Exception):
    """Internal: the requested rows contain ``count`` nulls."""

    def __init__(self, count: int) -> None:
        self.count = count
        super().__init__(count)


class _Refused(Exception):
    """Internal: a strict JSON/YAML document is refused (``reason``, offending ``key``)."""

    def __init__(self, reason: str, key: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.key = key
