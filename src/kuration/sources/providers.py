"""The MediaProvider registry: built-ins by dotted path (with their install hint), plugins by object.

A provider is looked up by the name a :class:`~kuration.contracts.media.MediaSpec`
gives (``provider: "pyav"``), so worker processes rebuild it from the schema
rather than pickling a live decoder.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from ..contracts.media import MediaProvider
from ..core.registry import Registry
from ..errors import MissingExtraError

__all__ = ["get_media_provider", "register_media_provider", "registered_media_providers"]

Factory = Callable[[], MediaProvider]
#: built-ins: ``name -> ("module:attr", extra that installs its dependency)``
_BUILTIN = {"pyav": ("kuration.sources.pyav:PyAVProvider", "media")}
_PROVIDERS: Registry[Factory | str] = Registry("media provider")


def register_media_provider(name: str, factory: Factory | str, *, clobber: bool = False) -> None:
    """Register a provider factory (a zero-argument callable, or a ``"module:attr"`` path).

    Raises
    ------
    ValueError
        ``name`` is taken by another factory and ``clobber`` is false.
    """
    _PROVIDERS.register(name, factory, clobber=clobber)


def registered_media_providers() -> tuple[str, ...]:
    return _PROVIDERS.names()


def _resolve(name: str, path: str) -> Factory:
    module, _, attr = path.partition(":")
    try:
        obj: Factory = getattr(importlib.import_module(module), attr)
    except ImportError as exc:
        extra = _BUILTIN.get(name, ("", ""))[1]
        hint = f": pip install 'kuration-sdk[{extra}]'" if extra else ""
        raise MissingExtraError(
            f"media provider {name!r} needs a package that is not installed ({exc}){hint}"
        ) from None
    return obj


def get_media_provider(name: str) -> MediaProvider:
    """A fresh instance of the provider registered as ``name``.

    Raises
    ------
    UnknownNameError
        No such provider (a ``KeyError``; the message lists close matches).
    MissingExtraError
        A built-in whose optional dependency is missing (the message names the extra).
    """
    factory = _PROVIDERS.get(name)
    if isinstance(factory, str):
        factory = _resolve(name, factory)
    provider = factory()
    if not isinstance(provider, MediaProvider):
        raise TypeError(f"media provider {name!r} built a {type(provider).__name__}")
    return provider


for _name, (_path, _extra) in _BUILTIN.items():
    register_media_provider(_name, _path)
