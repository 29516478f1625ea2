"""Plugin discovery: explicit modules and the ``kuration.plugins`` entry-point group.

A plugin is a module imported for its registrations (``register_method``,
``register_metric``, ``register_container``...), or an installed
distribution exposing a zero-argument initializer::

    [project.entry-points."kuration.plugins"]
    my_plugin = "my_package.kuration_plugin:register"

Explicit modules fail fast.  Entry points are discovered once per process
(idempotent); each one runs inside a transaction over every registry: if it
raises, whatever it registered is rolled back, a :class:`PluginWarning` is
issued, and the failure is kept for :func:`plugin_failures` and
``kur plugin-check``.  Later entry points still load.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import sys
import traceback
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar

from ..errors import KurationError, KurationWarning
from .registry import all_registries, restore_registries, snapshot_registries

__all__ = [
    "ENTRY_POINT_GROUP",
    "PluginError",
    "PluginFailure",
    "PluginLoadResult",
    "PluginWarning",
    "implementation_fingerprints",
    "load_plugins",
    "plugin_failures",
    "without_entry_point_plugins",
]

ENTRY_POINT_GROUP = "kuration.plugins"


class PluginError(KurationError, ImportError):
    """An explicitly listed plugin module could not be imported."""


class PluginWarning(KurationWarning):
    """An installed entry-point plugin failed and was rolled back."""


@dataclass(frozen=True)
class PluginFailure:
    """A failed entry point: its ``name``, target ``value``, one-line ``error`` and full ``traceback``."""

    name: str
    value: str
    error: str
    traceback: str


@dataclass(frozen=True)
class PluginLoadResult:
    """Explicit ``modules`` imported, entry points ``loaded`` and their ``failures`` (this process)."""

    modules: tuple[str, ...]
    loaded: tuple[str, ...]
    failures: tuple[PluginFailure, ...]


class _State:
    discovered: ClassVar[bool] = False
    loaded: ClassVar[dict[str, list[tuple[int, str, Any]]]] = {}
    failures: ClassVar[list[PluginFailure]] = []
    modules: ClassVar[list[str]] = []


def _import_explicit(modules: Sequence[str]) -> None:
    for mod in modules:
        try:
            importlib.import_module(mod)
        except Exception as exc:
            raise PluginError(
                f"plugin module {mod!r} failed to import: {type(exc).__name__}: {exc}"
            ) from exc
        if mod not in _State.modules:
            _State.modules.append(mod)


def _added(before: dict[int, dict[str, Any]]) -> list[tuple[int, str, Any]]:
    out = []
    for reg in all_registries():
        old = before.get(id(reg), {})
        for name, obj in reg.view().items():
            if name not in old or old[name] is not obj:
                out.append((id(reg), name, obj))
    return out


def _discover() -> None:
    if _State.discovered:
        return
    _State.discovered = True
    seen: set[str] = set()
    eps = sorted(
        importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: (e.name, e.value)
    )
    for ep in eps:
        if ep.name in seen:
            continue  # a name already provided by another distribution; first one wins
        seen.add(ep.name)
        before = snapshot_registries()
        try:
            init = ep.load()
            init()
        except Exception as exc:
            restore_registries(before)
            fail = PluginFailure(
                ep.name, ep.value, f"{type(exc).__name__}: {exc}", traceback.format_exc()
            )
            _State.failures.append(fail)
            warnings.warn(
                f"kuration plugin {ep.name!r} ({ep.value}) failed and was rolled back: {fail.error}; "
                "run `kur plugin-check` for the full error",
                PluginWarning,
                stacklevel=3,
            )
            continue
        _State.loaded[ep.name] = _added(before)


def load_plugins(
    modules: Sequence[str] = (), *, include_entry_points: bool = True
) -> PluginLoadResult:
    """Import ``modules`` and (once per process) the installed entry points.

    Raises
    ------
    PluginError
        If an explicit module fails to import.
    """
    _import_explicit(modules)
    if include_entry_points:
        _discover()
    return PluginLoadResult(tuple(_State.modules), tuple(_State.loaded), tuple(_State.failures))


def plugin_failures() -> tuple[PluginFailure, ...]:
    """Entry points that failed in this process (kept after the warning has been shown)."""
    return tuple(_State.failures)


def _reset_for_tests() -> None:
    _State.discovered = False
    _State.loaded = {}
    _State.failures = []


@contextmanager
def without_entry_point_plugins() -> Iterator[None]:
    """Hide every registration made by entry-point plugins for the duration of the block."""
    regs = {id(r): r for r in all_registries()}
    hidden: list[tuple[int, str, Any]] = []
    for entries in _State.loaded.values():
        for rid, name, obj in entries:
            reg = regs.get(rid)
            if reg is not None and reg.view().get(name) is obj:
                reg.unregister(name)
                hidden.append((rid, name, obj))
    try:
        yield
    finally:
        for rid, name, obj in hidden:
            regs[rid].register(name, obj, clobber=True)


def implementation_fingerprints() -> dict[str, Any]:
    """Provenance: every registered implementation's module with the SHA-256 of its source file,
    plus explicit plugin modules, loaded entry points and a marker for failed ones."""
    modules: dict[str, str] = {}
    for reg in all_registries():
        for obj in reg.view().values():
            mod = getattr(obj, "__module__", None) or type(obj).__module__
            if mod in modules:
                continue
            m = sys.modules.get(mod)
            path = getattr(m, "__file__", None)
            digest = ""
            if path:
                try:
                    with open(path, "rb") as fh:
                        digest = hashlib.sha256(fh.read()).hexdigest()
                except OSError:
                    digest = "unreadable"
            modules[mod] = digest
    out: dict[str, Any] = {
        "modules": dict(sorted(modules.items())),
        "plugin_modules": list(_State.modules),
        "entry_points": sorted(_State.loaded),
    }
    if _State.failures:
        out["failed_entry_points"] = {
            f.name: "failed to load; run `kur plugin-check` for the full error"
            for f in _State.failures
        }
    return out
