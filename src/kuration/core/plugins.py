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
import inspect
import os
import sys
import traceback
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ..errors import PluginError, PluginWarning
from .registry import all_registries, restore_registries, snapshot_registries

__all__ = [
    "ENTRY_POINT_GROUP",
    "PluginError",
    "PluginFailure",
    "PluginLoadResult",
    "PluginWarning",
    "code_identity",
    "code_unidentified",
    "implementation_fingerprints",
    "load_plugins",
    "plugin_failures",
    "run_code",
    "used_names",
    "without_entry_point_plugins",
]

ENTRY_POINT_GROUP = "kuration.plugins"


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
        for entry in reg.view().values():
            obj = getattr(entry, "implementation", entry)  # a registration record: its code
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


# -- what the run fingerprint records of code -------------------------------------------


def _is_kuration(module: str) -> bool:
    return module == "kuration" or module.startswith("kuration.")


def _module_files(module: str) -> list[Path]:
    """The source files of ``module``'s top-level package (or of the module alone):
    a registered function may call helpers anywhere in its package."""
    top = sys.modules.get(module.split(".")[0])
    if top is None or module == "__main__":
        top = sys.modules.get(module)
    if top is None:
        return []
    paths = [Path(p) for p in getattr(top, "__path__", [])]  # a package: all its .py files
    if paths:
        return sorted({f for d in paths for f in d.rglob("*.py") if "__pycache__" not in f.parts})
    file = getattr(top, "__file__", None)
    return [Path(file)] if file else []


def _files_digest(files: Sequence[Path]) -> str | None:
    if not files:
        return None
    root = os.path.commonpath([str(f.parent) for f in files])
    h = hashlib.sha256()
    for f in files:
        try:
            data = f.read_bytes()
        except OSError:
            return None
        h.update(os.path.relpath(f, root).encode() + b"\0")
        h.update(hashlib.sha256(data).digest())
    return h.hexdigest()


def code_identity(obj: Any) -> dict[str, Any] | None:
    """What identifies the code of a registered object, for the run fingerprint.

    kuration's own implementations return None: kuration is identified by its
    version.  Anything else gets its qualified name and ``sha256``, a digest
    of every source file of its top-level package (of the module alone when
    it is not in a package), so an edit anywhere in a plugin changes it.

    Returns
    -------
    dict or None
        ``{"object": "module.qualname", "sha256": hex or None}``; ``sha256`` is
        None when the source cannot be found (code defined interactively).
    """
    obj = getattr(obj, "implementation", obj)  # a registration record: the code it wraps
    module = getattr(obj, "__module__", None) or type(obj).__module__
    if _is_kuration(module):
        return None
    qual = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    digest = _files_digest(_module_files(module))
    if digest is None:
        try:
            digest = hashlib.sha256(inspect.getsource(obj).encode()).hexdigest()
        except (OSError, TypeError):
            digest = None
    return {"object": f"{module}.{qual}", "sha256": digest}


def run_code(used: Mapping[str, Iterable[str]], modules: Sequence[str] = ()) -> dict[str, Any]:
    """The code outside kuration that a run uses: part of its fingerprint.

    Parameters
    ----------
    used : mapping of str to iterable of str
        Registry kind (``"registered metric"``, ``"batch transform"``, ``"segment scorer"``,
        ``"filter"``, ``"selection method"``, ``"adapter"``, ``"container"``,
        ``"encoder"``) to the names
        the run looks up in it.
    modules : sequence of str
        The job's explicit plugin modules.

    Returns
    -------
    dict
        ``{"plugin_modules": {module: sha256}, "registered": {"kind:name":
        code_identity}}`` with empty parts left out; empty when the run uses
        kuration's own code only.
    """
    regs = {r.kind: r for r in all_registries()}
    registered: dict[str, Any] = {}
    for kind, names in used.items():
        reg = regs.get(kind)
        for name in sorted(set(names)):
            obj = reg.view().get(name) if reg is not None else None
            ident = None if obj is None else code_identity(obj)
            if ident is not None:
                registered[f"{kind}:{name}"] = ident
    out: dict[str, Any] = {}
    mods = {m: _files_digest(_module_files(m)) for m in sorted(set(modules))}
    if mods:
        out["plugin_modules"] = mods
    if registered:
        out["registered"] = registered
    return out


def code_unidentified(code: Mapping[str, Any]) -> list[str]:
    """Entries of :func:`run_code` whose source could not be digested."""
    bad = [m for m, d in code.get("plugin_modules", {}).items() if d is None]
    bad += [k for k, v in code.get("registered", {}).items() if v.get("sha256") is None]
    return bad


def _values_under(doc: Any, key: str) -> list[str]:
    """Every string value of ``key`` in any object nested in ``doc``."""
    out: list[str] = []
    if isinstance(doc, Mapping):
        for k, v in doc.items():
            if k == key and isinstance(v, str):
                out.append(v)
            else:
                out.extend(_values_under(v, key))
    elif isinstance(doc, list | tuple):
        for v in doc:
            out.extend(_values_under(v, key))
    return out


def used_names(strategy: Mapping[str, Any], adapter: str, container: str) -> dict[str, list[str]]:
    """The registered names a run looks up, by registry kind (see :func:`run_code`).

    ``strategy`` is ``Strategy.to_dict()``: its registered metrics, transforms, scorers, every
    ``"filter"`` and ``"method"`` named at any depth (filters and methods nest
    in method parameters) and the predicate filter that un-named entries use.
    """
    return {
        "registered metric": list(strategy.get("registered", [])),
        "batch transform": [t["name"] for t in strategy.get("transforms", [])],
        "segment scorer": [t["name"] for t in strategy.get("scorers", [])],
        "filter": ["predicate", *_values_under(strategy, "filter")],
        "selection method": _values_under(strategy, "method"),
        "adapter": [adapter],
        "container": [container],
    }
