"""One small registry type used for adapters, methods, filters, metrics, containers and encoders."""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any, ClassVar, Generic, TypeVar

from ..errors import RegistrationError, UnknownNameError

__all__ = ["Registry", "UnknownNameError", "restore_registries", "snapshot_registries"]

T = TypeVar("T")


class Registry(Generic[T]):
    """Name -> object mapping with clobber protection and helpful misses.

    Parameters
    ----------
    kind : str
        What the registry holds, used in messages ("method", "container", ...).
    """

    _ALL: ClassVar[list[Registry[Any]]] = []

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}
        Registry._ALL.append(self)

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
            hint = difflib.get_close_matches(str(name), list(self._items), n=3)
            extra = f"; did you mean {', '.join(map(repr, hint))}?" if hint else ""
            raise UnknownNameError(
                f"unknown {self.kind} {name!r}{extra} (registered: {', '.join(sorted(self._items))})"
            ) from None

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._items))

    def names(self) -> tuple[str, ...]:
        return tuple(sorted(self._items))

    def view(self) -> Mapping[str, T]:
        """A read-only view of the current registrations."""
        return MappingProxyType(self._items)


def snapshot_registries() -> dict[int, dict[str, Any]]:
    """A copy of every registry's contents (for transactional plugin loading)."""
    return {id(r): dict(r._items) for r in Registry._ALL}


def restore_registries(snapshot: dict[int, dict[str, Any]]) -> None:
    """Put every registry back to ``snapshot`` (registries created since are emptied)."""
    for r in Registry._ALL:
        r._items.clear()
        r._items.update(snapshot.get(id(r), {}))


def all_registries() -> tuple[Registry[Any], ...]:
    return tuple(Registry._ALL)
