"""Warnings raised in a ``process`` or ``ray`` worker, handed to the lead.

A worker has its own warning machinery: a spawn worker starts with Python's default filters
(the lead's ``-W error`` or ``warnings.simplefilter("ignore")`` do not reach it) and prints
what it catches raw, with a source excerpt, on the stderr it shares with the lead; a Ray
worker's output is not even forwarded.  So each task runs under the lead's filters as they
were when the executor started it (:func:`relaying`), records what passes them, and the
lead re-issues each record in task order as it collects the outcome (:func:`replay`): the
lead's filters and display (``kur``'s one ``warning:`` line) apply, as for a ``local`` run.

A filter's category travels by its qualified name and is dropped in a worker that cannot
import it; a warning whose instance does not pickle travels as its category and text.
"""

from __future__ import annotations

import importlib
import pickle
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["relaying", "replay"]

# (action, message pattern, category "module:qualname", module pattern, lineno)
_Filter = tuple[str, str, str, str, int]


@dataclass(frozen=True)
class _Record:
    message: Warning | str
    category: type[Warning]
    filename: str
    lineno: int


@dataclass(frozen=True)
class _Relayed:
    """A task's outcome (its value or the exception it raised) and its warnings, in order."""

    outcome: Any
    records: tuple[_Record, ...]


@dataclass(frozen=True)
class _Relay:
    """``fn`` run under the lead's filters, its warnings recorded (pickles by reference)."""

    fn: Callable[[Any], Any]
    filters: tuple[_Filter, ...]

    def __call__(self, payload: Any) -> _Relayed:
        with warnings.catch_warnings(record=True) as caught:
            _install(self.filters)
            try:
                out = self.fn(payload)
            except Exception as exc:
                out = exc
        return _Relayed(out, tuple(_portable(w) for w in caught))


def relaying(fn: Callable[[Any], Any]) -> _Relay:
    """``fn`` wrapped to run in a worker under this process's current warning filters; its
    outcome (value or exception) comes back with the warnings it issued, for :func:`replay`."""
    return _Relay(fn, tuple(_exported(f) for f in warnings.filters))


def replay(out: Any) -> Any:
    """In the lead: re-issue a relayed task's warnings (this process's filters decide what is
    shown, ignored or raised) and return its outcome; anything else is returned as it is.
    A warning that a filter turns into an error is the task's outcome, as it would have been
    raised inside the task by a ``local`` run."""
    if not isinstance(out, _Relayed):
        return out
    try:
        for r in out.records:
            warnings.warn_explicit(r.message, r.category, r.filename, r.lineno)
    except Exception as exc:
        return exc
    return out.outcome


def _exported(f: Any) -> _Filter:
    action, message, category, module, lineno = f
    return (
        action,
        getattr(message, "pattern", message) or "",
        f"{category.__module__}:{category.__qualname__}",
        getattr(module, "pattern", module) or "",
        lineno,
    )


def _install(filters: tuple[_Filter, ...]) -> None:
    """Replace this process's filters (inside ``catch_warnings``) by the lead's, in order."""
    warnings.resetwarnings()
    for action, message, category, module, lineno in filters:
        cls = _category(category)
        if cls is not None:
            warnings.filterwarnings(
                action,  # type: ignore[arg-type]
                message=message,
                category=cls,
                module=module,
                lineno=lineno,
                append=True,
            )


def _category(name: str) -> type[Warning] | None:
    mod, _, qual = name.partition(":")
    try:
        obj: Any = importlib.import_module(mod)
        for part in qual.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        return None
    return obj if isinstance(obj, type) and issubclass(obj, Warning) else None


def _portable(w: warnings.WarningMessage) -> _Record:
    message: Warning | str = w.message
    category: type[Warning] = w.category
    try:
        pickle.loads(pickle.dumps((message, category)))
    except Exception:
        try:
            pickle.loads(pickle.dumps(category))
            message = str(w.message)
        except Exception:
            message, category = f"{w.category.__name__}: {w.message}", UserWarning
    return _Record(message, category, str(w.filename), int(w.lineno or 0))
