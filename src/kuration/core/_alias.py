"""Forwarding modules for import paths the documentation shows under ``kuration.core``.

The reader lives in :mod:`kuration.read`, a layer above ``core``; a static import from
here would point up the stages, so each alias resolves its names on first use instead.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def forward(alias: str, target: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Return ``(__getattr__, __dir__)`` for module ``alias`` serving module ``target``'s names.

    Raises
    ------
    AttributeError
        From ``__getattr__``, for a name ``target`` does not define.
    """

    def __getattr__(name: str) -> Any:
        module = importlib.import_module(target)
        if name.startswith("_") or not hasattr(module, name):
            raise AttributeError(f"module {alias!r} has no attribute {name!r}")
        return getattr(module, name)

    def __dir__() -> list[str]:
        return list(importlib.import_module(target).__all__)

    return __getattr__, __dir__
