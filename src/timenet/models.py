"""Wire types: immutable pydantic models for ``dataset.yaml`` and ``manifest.json``.

These models describe a version to the outside world. They are frozen and
reject unknown fields, so a manifest either validates completely or is refused.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from timenet.errors import DocumentError, ManifestError
from timenet.versions import Ref, check_part

__all__ = [
    "AccessRequirements",
    "Counts",
    "DatasetCard",
    "DatasetSchema",
    "EffectiveAccess",
    "FileEntry",
    "InheritedAccess",
    "Manifest",
    "PayloadSource",
    "RawInput",
    "SignalSchema",
]

FORMAT_NAME: Final = "timef"
FORMAT_VERSION: Final = 1

AccessLevel = Literal["open", "registration", "credentialed", "restricted"]
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class AccessRequirements(_Frozen):
    """Who may use the data.

    Attributes
    ----------
    level : {"open", "registration", "credentialed", "restricted"}
        ``open`` needs nothing; the others need the user to agree to ``terms``.
    terms : str
        Human-readable conditions (data use agreement, training, ...).
    url : str or None
        Where to obtain access.
    """

    level: AccessLevel = "open"
    terms: str = ""
    url: str | None = None

    @property
    def rank(self) -> int:
        """How restrictive ``level`` is: 0 (open) to 3 (restricted)."""
        return ACCESS_LEVELS.index(self.level)


ACCESS_LEVELS: tuple[AccessLevel, ...] = ("open", "registration", "credentialed", "restricted")


class InheritedAccess(_Frozen):
    """The access requirement of one release (a version or one of its ancestors)."""

    ref: str
    access: AccessRequirements


class EffectiveAccess(_Frozen):
    """What using a version requires: the most restrictive of its own and its ancestors'.

    Attributes
    ----------
    level : {"open", "registration", "credentialed", "restricted"}
        The most restrictive level of :attr:`sources` (``open`` when empty).
    sources : tuple of InheritedAccess
        Every release whose requirement is not ``open``: the version itself
        first (if it has one), then its parents' effective sources, each once.
    """

    level: AccessLevel = "open"
    sources: tuple[InheritedAccess, ...] = ()

    @classmethod
    def combine(
        cls, ref: str, own: AccessRequirements, parents: tuple[EffectiveAccess, ...] = ()
    ) -> EffectiveAccess:
        """The effective access of release ``ref`` with requirement ``own`` and these parents'."""
        sources: list[InheritedAccess] = []
        if own.level != "open":
            sources.append(InheritedAccess(ref=ref, access=own))
        for parent in parents:
            sources += [s for s in parent.sources if s.ref not in {x.ref for x in sources}]
        rank = max((s.access.rank for s in sources), default=0)
        return cls(level=ACCESS_LEVELS[rank], sources=tuple(sources))

    @property
    def requires_acceptance(self) -> bool:
        """True unless the level is ``open``: terms must be accepted before use."""
        return self.level != "open"

    @property
    def terms(self) -> str:
        """Every source's terms, each prefixed by its release."""
        return "; ".join(f"{s.ref}: {s.access.terms or '(no text)'}" for s in self.sources)

    @property
    def url(self) -> str | None:
        """Where to obtain access: the URL of the most restrictive source that has one."""
        ranked = sorted(self.sources, key=lambda s: -s.access.rank)
        return next((s.access.url for s in ranked if s.access.url), None)

    def digest(self) -> str:
        """SHA-256 of this requirement (what an acceptance is recorded against)."""
        import hashlib

        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()


class DatasetCard(_Frozen):
    """Content of a connector's ``dataset.yaml``: who publishes what, under which terms.

    ``parents`` lists exact releases (``org/name@version``) the dataset derives
    from; their access requirements also apply to this dataset.
    """

    org: str
    name: str
    version: str
    description: str = ""
    license: str
    origin: str = ""
    citation: str = ""
    access: AccessRequirements = AccessRequirements()
    parents: tuple[str, ...] = ()

    @field_validator("org", "name")
    @classmethod
    def _check_part(cls, v: str) -> str:
        return check_part(v, "name", v)

    @field_validator("version")
    @classmethod
    def _check_version(cls, v: str) -> str:
        return check_part(v, "version", v)

    @field_validator("parents")
    @classmethod
    def _check_parents(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        from timenet.versions import parse_ref

        for p in v:
            if parse_ref(p).version is None:
                raise ValueError(f"parent {p!r} must pin a version: org/name@version")
        return v

    @property
    def ref(self) -> Ref:
        """The exact reference ``org/name@version`` of this card."""
        return Ref(self.org, self.name, self.version)

    @classmethod
    def from_yaml(cls, path: str | Path) -> DatasetCard:
        """Read and validate a ``dataset.yaml`` file.

        Raises
        ------
        DocumentError
            If a key appears twice in one mapping, a number is not finite, or
            the YAML is malformed (the path and key are named).
        pydantic.ValidationError
            If fields are missing or invalid.
        """
        from timenet._jsonio import load_yaml_strict

        return cls.model_validate(load_yaml_strict(path))

    def to_yaml(self) -> str:
        """Serialise as YAML text (the ``dataset.yaml`` form)."""
        import yaml

        return str(yaml.safe_dump(self.model_dump(mode="json"), sort_keys=False))


class SignalSchema(_Frozen):
    """Derived description of every signal instance sharing one name.

    Attributes
    ----------
    name : str
        Signal name as used in records.
    dtype, unit : str
        Scalar dtype and pint unit, identical for every instance.
    shape : tuple of int
        Per-timestep shape, identical for every instance.
    storage : {"parquet", "zarr"}
        Values plane holding the values.
    rates_hz : tuple of float
        Distinct sampling rates seen (sorted); empty if all are irregular.
    irregular : bool
        True if any instance carries explicit timestamps.
    count : int
        Number of records holding this signal.
    """

    name: str
    dtype: str
    unit: str
    shape: tuple[int, ...] = ()
    storage: Literal["parquet", "zarr"]
    rates_hz: tuple[float, ...] = ()
    irregular: bool = False
    count: int = Field(ge=0)


class DatasetSchema(_Frozen):
    """Schema derived from the written content."""

    signals: tuple[SignalSchema, ...] = ()
    annotation_kinds: tuple[str, ...] = ()
    task_names: tuple[str, ...] = ()


class Counts(_Frozen):
    """How many objects of each kind the version holds."""

    records: int = Field(ge=0)
    signals: int = Field(ge=0)
    samples: int = Field(ge=0)
    annotations: int = Field(ge=0)
    tasks: int = Field(ge=0)


class FileEntry(_Frozen):
    """One file of a version: POSIX path relative to the version root, byte size, SHA-256."""

    path: str
    size: int = Field(ge=0)
    sha256: str

    @field_validator("path")
    @classmethod
    def _relative(cls, v: str) -> str:
        p = PurePosixPath(v)
        if not v or p.is_absolute() or ".." in p.parts or "\\" in v or str(p) != v:
            raise ValueError(f"file path {v!r} must be a normalised relative POSIX path")
        if v == "manifest.json":
            raise ValueError("manifest.json cannot list itself")
        return v

    @field_validator("sha256")
    @classmethod
    def _hex(cls, v: str) -> str:
        if not _SHA256.match(v):
            raise ValueError(f"sha256 {v!r} is not 64 lowercase hex digits")
        return v


class RawInput(_Frozen):
    """One raw input a connector built the version from, pinned by SHA-256.

    Attributes
    ----------
    package, version : str
        Distribution the file came from (empty for a file not fetched from a
        package registry).
    filename : str
        Name of the distribution file (wheel, sdist) or raw file.
    size : int
        Byte size of the file.
    sha256 : str
        SHA-256 of the whole file, checked before it was read.
    members : tuple of str
        Archive members that were read from it.
    """

    package: str = ""
    version: str = ""
    filename: str
    size: int = Field(ge=0)
    sha256: str
    members: tuple[str, ...] = ()

    @field_validator("sha256")
    @classmethod
    def _hex(cls, v: str) -> str:
        if not _SHA256.match(v):
            raise ValueError(f"sha256 {v!r} is not 64 lowercase hex digits")
        return v


class PayloadSource(_Frozen):
    """Files of another release (a parent) whose values this version reads.

    Each file is pinned by its path inside that release, size and SHA-256; a
    read refuses a file that no longer matches.
    """

    ref: str
    files: tuple[FileEntry, ...]

    @field_validator("ref")
    @classmethod
    def _exact(cls, v: str) -> str:
        from timenet.versions import parse_ref

        if parse_ref(v).version is None:
            raise ValueError(f"payload source {v!r} must pin a version: org/name@version")
        return v


class Manifest(_Frozen):
    """``manifest.json``: the entry point and commit marker of a version."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    format: Literal["timef"] = FORMAT_NAME
    format_version: Literal[1] = FORMAT_VERSION
    card: DatasetCard
    dataset_schema: DatasetSchema = Field(alias="schema")
    counts: Counts
    files: tuple[FileEntry, ...]
    created: str
    raw_inputs: tuple[RawInput, ...] = ()
    payloads: tuple[PayloadSource, ...] = ()
    access: EffectiveAccess | None = None

    @property
    def effective_access(self) -> EffectiveAccess:
        """The recorded effective access; the card's own one in manifests that lack it."""
        if self.access is not None:
            return self.access
        return EffectiveAccess.combine(str(self.ref), self.card.access)

    @field_validator("files")
    @classmethod
    def _unique(cls, v: tuple[FileEntry, ...]) -> tuple[FileEntry, ...]:
        seen = {f.path for f in v}
        if len(seen) != len(v):
            raise ValueError("file paths must be unique")
        if "control.duckdb" not in seen:
            raise ValueError("a version must list control.duckdb")
        return v

    @property
    def ref(self) -> Ref:
        """The exact reference of this version."""
        return self.card.ref

    def file(self, path: str) -> FileEntry:
        """Return the entry for ``path``.

        Raises
        ------
        KeyError
            If the manifest does not list ``path``.
        """
        for f in self.files:
            if f.path == path:
                return f
        raise KeyError(path)

    def to_json(self) -> str:
        """Serialise to the ``manifest.json`` text."""
        return self.model_dump_json(by_alias=True, indent=2)

    @classmethod
    def from_json(cls, text: str | bytes, *, path: str = "manifest.json") -> Manifest:
        """Parse ``manifest.json`` text.

        Raises
        ------
        ManifestError
            If the text is not JSON, holds a duplicate key or a non-finite
            number, or does not validate; ``path`` is named.
        """
        from pydantic import ValidationError

        from timenet._jsonio import loads_strict

        try:
            # pydantic's JSON parser keeps the last of two duplicate keys: parse strictly first
            loads_strict(text, what=path)
            return cls.model_validate_json(text)
        except DocumentError as exc:
            raise ManifestError(path, exc.reason) from exc
        except ValidationError as exc:
            kinds = {e["type"] for e in exc.errors()}
            reason = "not valid JSON" if "json_invalid" in kinds else f"invalid content: {exc}"
            raise ManifestError(path, reason) from exc
