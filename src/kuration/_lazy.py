"""PEP 562 lazy exports: a package lists ``module -> names`` and loads a module on first use.

Shared by :mod:`kuration` and :mod:`kuration.extend` so that importing either stays light
(no pint registry, TimeNet, torch or numpy until a name is used).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, namespace: dict[str, Any], modules: Mapping[str, tuple[str, ...]]
) -> tuple[dict[str, str], Callable[[str], Any]]:
    """Return ``(name -> module, __getattr__)`` for a module's lazy public names.

    Parameters
    ----------
    package
        The importing module's ``__name__`` (relative module names resolve against it).
    namespace
        Its ``globals()``; a loaded name is stored there so later look-ups skip the hook.
    modules
        Module (absolute or relative to ``package``) -> the public names it provides.

    Returns
    -------
    tuple
        The flat ``name -> module`` map and the ``__getattr__`` hook, which raises
        ``AttributeError`` for any other name.
    """
    lazy = {n: m for m, names in modules.items() for n in names}

    def __getattr__(name: str) -> Any:
        module = lazy.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    return lazy, __getattr__
