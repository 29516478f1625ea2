"""TimeNet: the TimeF dataset format, its reader/writer, registries and client.

Import from here; submodules are private except :mod:`timenet.torch` (needs
torch) and :mod:`timenet.units` (the shared pint registry).
"""

from __future__ import annotations

from timenet.client import DatasetListing, TimeNet, register_builder
from timenet.errors import (
    DatasetNotFoundError,
    DocumentError,
    IntegrityError,
    InvalidRefError,
    ManifestError,
    MissingSignalsError,
    NullValuesError,
    OptionError,
    QueryError,
    RecordIndexError,
    RecordNotFoundError,
    RegistryError,
    SchemaError,
    SignalNotFoundError,
    StepRangeError,
    TermsNotAcceptedError,
    TimeNetError,
    UnitError,
    VersionExistsError,
)
from timenet.models import (
    AccessRequirements,
    Counts,
    DatasetCard,
    DatasetSchema,
    EffectiveAccess,
    FileEntry,
    InheritedAccess,
    Manifest,
    SignalSchema,
)
from timenet.publish import publish
from timenet.reader import LoadedDataset, Signal, TimeFReader
from timenet.records import Annotation, Record, Task
from timenet.registry import (
    LocalRegistry,
    Registry,
    RemoteRegistry,
    VersionHandle,
    default_registries,
)
from timenet.specs import Label, Numeric, QuestionAnswer, SignalSpec, Text
from timenet.terms import TermsStore
from timenet.units import get_unit_registry
from timenet.versions import Ref, parse_ref, version_key
from timenet.writer import TimeFWriter

__all__ = [
    "AccessRequirements",
    "Annotation",
    "Counts",
    "DatasetCard",
    "DatasetListing",
    "DatasetNotFoundError",
    "DatasetSchema",
    "DocumentError",
    "EffectiveAccess",
    "FileEntry",
    "InheritedAccess",
    "IntegrityError",
    "InvalidRefError",
    "Label",
    "LoadedDataset",
    "LocalRegistry",
    "Manifest",
    "ManifestError",
    "MissingSignalsError",
    "NullValuesError",
    "Numeric",
    "OptionError",
    "QueryError",
    "QuestionAnswer",
    "Record",
    "RecordIndexError",
    "RecordNotFoundError",
    "Ref",
    "Registry",
    "RegistryError",
    "RemoteRegistry",
    "SchemaError",
    "Signal",
    "SignalNotFoundError",
    "SignalSchema",
    "SignalSpec",
    "StepRangeError",
    "Task",
    "TermsNotAcceptedError",
    "TermsStore",
    "Text",
    "TimeFReader",
    "TimeFWriter",
    "TimeNet",
    "TimeNetError",
    "UnitError",
    "VersionExistsError",
    "VersionHandle",
    "default_registries",
    "get_unit_registry",
    "parse_ref",
    "publish",
    "register_builder",
    "version_key",
]
