"""TimeNet: the TimeF dataset format, its reader/writer, registries and client.

Import from here; submodules are private except :mod:`timenet.torch` (needs
torch) and :mod:`timenet.units` (the shared pint registry).

The public names are listed in ``__all__``; all but the exception tree load on
first use (PEP 562 ``__getattr__``), so ``import timenet`` (and ``import
timenet._cli``) stays light: no pydantic, pyarrow or numpy until a name is used.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

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

# module (relative to this package) -> the public names it provides
_LAZY_MODULES: dict[str, tuple[str, ...]] = {
    ".client": (
        "DatasetListing",
        "TimeNet",
        "register_builder",
    ),
    ".models": (
        "AccessRequirements",
        "Counts",
        "DatasetCard",
        "DatasetSchema",
        "EffectiveAccess",
        "FileEntry",
        "InheritedAccess",
        "Manifest",
        "SignalSchema",
    ),
    ".publish": ("publish",),
    ".reader": (
        "LoadedDataset",
        "Signal",
        "TimeFReader",
    ),
    ".records": (
        "Annotation",
        "Record",
        "Task",
    ),
    ".registry": (
        "LocalRegistry",
        "Registry",
        "RemoteRegistry",
        "VersionHandle",
        "default_registries",
    ),
    ".specs": (
        "Label",
        "Numeric",
        "QuestionAnswer",
        "SignalSpec",
        "Text",
    ),
    ".terms": ("TermsStore",),
    ".units": ("get_unit_registry",),
    ".versions": (
        "Ref",
        "parse_ref",
        "version_key",
    ),
    ".writer": ("TimeFWriter",),
}
_LAZY: dict[str, str] = {n: m for m, names in _LAZY_MODULES.items() for n in names}

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


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'timenet' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later look-ups skip this hook
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _Package(types.ModuleType):
    """Importing a submodule binds its name on the package; where a public name has the
    same spelling (``timenet.publish``, the function, and ``timenet/publish.py``), the
    public name wins, as it did when this file imported everything eagerly."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _LAZY and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


if TYPE_CHECKING:  # the static view of the same names, for type checkers
    from timenet.client import DatasetListing, TimeNet, register_builder
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
