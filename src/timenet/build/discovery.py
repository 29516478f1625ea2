"""Finding connectors: built-in ones by directory, third-party ones by entry point.

A built-in connector for ``org/name`` lives in the package
``timenet_connectors.datasets.<org>.<name>`` (``-`` and ``.`` in either part
become ``_`` in the directory name) and exposes ``CONNECTOR``, a
:class:`~timenet.build.Connector` subclass. Another distribution adds
connectors through the entry-point group ``timenet.connectors``: the entry
name is ``org/name`` and the object is the connector class (or a module
exposing ``CONNECTOR``). A built-in connector wins over a plugin of the same
name; a plugin that fails to load becomes a :class:`ConnectorWarning` and an
entry in :data:`FAILED`, never an exception, when listing.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import warnings
from importlib.metadata import entry_points
from types import ModuleType
from typing import Any

from timenet.build.connector import Connector
from timenet.errors import ConnectorDefinitionError, ConnectorNotFoundError, ConnectorWarning
from timenet.versions import parse_ref

__all__ = ["ENTRY_POINT_GROUP", "FAILED", "ConnectorWarning", "available", "resolve"]

BUILTIN_PACKAGE = "timenet_connectors.datasets"
ENTRY_POINT_GROUP = "timenet.connectors"
#: Plugins that failed to load during the last :func:`available` call: name -> reason.
FAILED: dict[str, str] = {}


def _ident(part: str) -> str:
    return re.sub(r"[^0-9A-Za-z_]", "_", part)


def _from_module(module: ModuleType | Any, where: str) -> type[Connector]:
    obj = getattr(module, "CONNECTOR", module)
    if isinstance(obj, type) and issubclass(obj, Connector):
        return obj
    raise ConnectorDefinitionError(f"{where} does not expose a Connector subclass as CONNECTOR")


def _check_card(cls: type[Connector], org: str, name: str, where: str) -> type[Connector]:
    card = cls().metadata()
    if (card.org, card.name) != (org, name):
        raise ConnectorNotFoundError(
            f"{org}/{name}", f"{where} builds {card.org}/{card.name} according to its card"
        )
    return cls


def _builtin(org: str, name: str) -> type[Connector] | None:
    modname = f"{BUILTIN_PACKAGE}.{_ident(org)}.{_ident(name)}"
    try:
        module = importlib.import_module(modname)
    except ModuleNotFoundError as exc:
        if exc.name is not None and modname.startswith(exc.name):
            return None
        raise
    return _check_card(_from_module(module, modname), org, name, modname)


def resolve(ref: str) -> type[Connector]:
    """The connector class that builds ``org/name`` (a version in ``ref`` is ignored).

    Raises
    ------
    InvalidRefError
        If ``ref`` is malformed.
    ConnectorNotFoundError
        If neither a built-in connector nor an entry point provides it.
    """
    r = parse_ref(ref)
    found = _builtin(r.org, r.name)
    if found is not None:
        return found
    key = f"{r.org}/{r.name}"
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == key:
            return _check_card(
                _from_module(ep.load(), f"entry point {ep.value}"), r.org, r.name, ep.value
            )
    raise ConnectorNotFoundError(
        key, f"no {BUILTIN_PACKAGE} package and no {ENTRY_POINT_GROUP!r} entry point"
    )


def available() -> dict[str, type[Connector]]:
    """Every installed connector, ``org/name`` -> class, built-ins first, sorted by name."""
    out: dict[str, type[Connector]] = {}
    FAILED.clear()
    try:
        pkg = importlib.import_module(BUILTIN_PACKAGE)
    except ModuleNotFoundError:
        pkg = None
    if pkg is not None:
        for org in pkgutil.iter_modules(pkg.__path__):
            if not org.ispkg:
                continue
            orgpkg = importlib.import_module(f"{BUILTIN_PACKAGE}.{org.name}")
            for ds in pkgutil.iter_modules(orgpkg.__path__):
                if not ds.ispkg:
                    continue
                modname = f"{BUILTIN_PACKAGE}.{org.name}.{ds.name}"
                cls = _from_module(importlib.import_module(modname), modname)
                card = cls().metadata()
                out[f"{card.org}/{card.name}"] = cls
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in out:
            continue
        try:
            out[ep.name] = _from_module(ep.load(), f"entry point {ep.value}")
        except Exception as exc:  # a broken plugin must not break listing
            FAILED[ep.name] = f"{type(exc).__name__}: {exc}"
            warnings.warn(
                f"connector plugin {ep.name!r} ({ep.value}) failed to load: {exc}",
                ConnectorWarning,
                stacklevel=2,
            )
    return dict(sorted(out.items()))
