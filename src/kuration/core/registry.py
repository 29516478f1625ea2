"""One small registry type used for adapters, methods, filters, metrics, containers and encoders.

A registry built with ``builtin=KIND`` knows its built-ins by dotted path
(:mod:`kuration.core.builtins`): a name asked for and not yet registered is loaded by
importing its module, so every built-in works in a fresh process whatever was imported
before; a missing optional dependency says which extra installs it.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any, ClassVar, Generic, TypeVar

from ..errors import MissingExtraError, RegistrationError, UnknownNameError
from .builtins import Builtin, builtins_of

__all__ = ["Registry", "UnknownNameError", "restore_registries", "snapshot_registries"]

T = TypeVar("T")


class Registry(Generic[T]):
    """Name -> object mapping with clobber protection and helpful misses.

    Parameters
    ----------
    kind : str
        What the registry holds, used in messages ("method", "container", ...).
    builtin : str, optional
        The kind in :data:`kuration.core.builtins.BUILTINS` whose names this registry
        loads on first use (``"adapter"``, ``"method"``...); None for none.
    """

    _ALL: ClassVar[list[Registry[Any]]] = []
    _BY_BUILTIN: ClassVar[dict[str, Registry[Any]]] = {}

    def __init__(self, kind: str, *, builtin: str | None = None) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}
        self._builtins: Mapping[str, Builtin] = builtins_of(builtin) if builtin else {}
        Registry._ALL.append(self)
        if builtin:
            Registry._BY_BUILTIN[builtin] = self

    @classmethod
    def of_builtin(cls, kind: str) -> Registry[Any] | None:
        """The registry that loads the built-ins of ``kind`` (None before its module is imported)."""
        return cls._BY_BUILTIN.get(kind)

    def load(self, name: str) -> bool:
        """Register the built-in ``name`` by importing its module, if it is one and is not
        registered yet; whether ``name`` is registered afterwards.

        Raises
        ------
        MissingExtraError
            The module needs an optional package that is not installed (names the extra).
        RegistrationError
            The module imported but did not register ``name`` (a broken built-in table).
        """
        if name in self._items:
            return True
        entry = self._builtins.get(name) if isinstance(name, str) else None
        if entry is None:
            return False
        path, extra = entry
        module = path.partition(":")[0]
        try:
            importlib.import_module(module)
        except ImportError as exc:
            hint = f": pip install 'kuration-sdk[{extra}]'" if extra else ""
            raise MissingExtraError(
                f"{self.kind} {name!r} needs a package that is not installed ({exc}){hint}"
            ) from exc
        if name not in self._items:
            raise RegistrationError(f"built-in {self.kind} {name!r}: {module} did not register it")
        return True

    def load_all(self) -> None:
        """Load every built-in whose optional dependencies are installed."""
        for name in self._builtins:
            try:
                self.load(name)
            except MissingExtraError:
                continue

    def register(self, name: str, obj: T, *, clobber: bool = False) -> T:
        """Register ``obj`` under ``name``.

        Raises
        ------
        RegistrationError
            If ``name`` is empty, or taken by a different object and ``clobber`` is false.
        """
        if not isinstance(name, str) or not name:
            raise RegistrationError(f"{self.kind} name must be a non-empty string, got {name!r}")
        if name in self._items and self._items[name] is not obj and not clobber:
            raise RegistrationError(
                f"{self.kind} {name!r} is already registered (pass clobber=True)"
            )
        self._items[name] = obj
        return obj

    def unregister(self, name: str) -> None:
        self._items.pop(name, None)

    def get(self, name: str) -> T:
        """Look ``name`` up.

        Raises
        ------
        UnknownNameError
            With close-match suggestions.
        """
        try:
            return self._items[name]
        except KeyError:
            if self.load(name):
                return self._items[name]
            known = self.names()
            hint = difflib.get_close_matches(str(name), list(known), n=3)
            extra = f"; did you mean {', '.join(map(repr, hint))}?" if hint else ""
            raise UnknownNameError(
                f"unknown {self.kind} {name!r}{extra} (registered: {', '.join(known)})"
            ) from None

    def __contains__(self, name: object) -> bool:
        return name in self._items or (isinstance(name, str) and name in self._builtins)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def names(self) -> tuple[str, ...]:
        """Every registered name and every built-in one (loaded or not), sorted."""
        return tuple(sorted(set(self._items) | set(self._builtins)))

    def view(self) -> Mapping[str, T]:
        """A read-only view of the current registrations (built-ins not yet loaded left out)."""
        return MappingProxyType(self._items)


def snapshot_registries() -> dict[int, dict[str, Any]]:
    """A copy of every registry's contents (for transactional plugin loading)."""
    return {id(r): dict(r._items) for r in Registry._ALL}


def restore_registries(snapshot: dict[int, dict[str, Any]]) -> None:
    """Put every registry back to ``snapshot`` (registries created since are emptied).

    A built-in first loaded since the snapshot stays: its module is imported now and would
    not register it again."""
    for r in Registry._ALL:
        before = snapshot.get(id(r), {})
        loaded = {n: o for n, o in r._items.items() if n in r._builtins and n not in before}
        r._items.clear()
        r._items.update(before)
        r._items.update(loaded)


def all_registries() -> tuple[Registry[Any], ...]:
    return tuple(Registry._ALL)
