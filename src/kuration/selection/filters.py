"""Pre-selection exclusions: registered filters and feature predicates.

A strategy's ``filters`` list, and the ``where`` list of the ``filter``
method, hold entries of two forms::

    {"feature": "speed_p90", "op": ">=", "value": 150}        # a predicate
    {"feature": "turn_p90", "op": "between", "quantile": [0.05, 0.95]}
    {"filter": "finite", "features": ["turn_p90"]}            # a registered filter
    {"filter": "source", "regex": "^adsb_paris_00[0-3]$", "exclude": true}

A segment passes when every entry keeps it.  A segment that fails is never
selected: it gets priority ``-inf`` even when the budget has room, and
coverage post-passes cannot bring it back.

Predicate operators: ``<  <=  >  >=  ==  !=`` take one threshold,
``between`` (inclusive) and ``outside`` (strictly outside) take ``[lo, hi]``,
``finite`` takes none.  A threshold is either an absolute ``value`` or a
``quantile`` in [0, 1] of the feature's finite values over the pool being
filtered (numpy linear interpolation).  A NaN or infinite feature fails every
predicate.

Built-in registered filters: ``predicate`` (the form above, also usable with
an explicit ``"filter": "predicate"``), ``finite`` (every listed feature, by
default every feature, is finite) and ``source`` (the source id matches
``regex`` with :func:`re.search`; ``exclude: true`` inverts it); ``dedup``
and ``near_dedup`` live in :mod:`kuration.selection.dedup`.  A filter whose
class sets ``kept_only = True`` sees only the segments the entries before it
kept (its mask is over those).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from ..contracts.segment import Segment
from ..core.registry import Registry
from ..core.traits import ExecutionTraits, register_with_traits
from ..errors import RegistrationError, StrategyError

__all__ = [
    "Filter",
    "apply_filters",
    "describe_filter",
    "get_filter",
    "normalize_filters",
    "register_filter",
    "registered_filters",
]


@runtime_checkable
class Filter(Protocol):
    """A reusable pre-selection exclusion.

    ``validate(params, features)`` raises :class:`StrategyError` before any
    data is read; ``mask(segments, params)`` returns shape (N,), bool, True
    for the segments to keep.  ``describe(params)`` names the rule in audit
    reasons.
    """

    def validate(self, params: Mapping[str, Any], features: Sequence[str]) -> None: ...

    def mask(self, segments: Sequence[Segment], params: Mapping[str, Any]) -> np.ndarray: ...

    def describe(self, params: Mapping[str, Any]) -> str: ...


_FILTERS: Registry[Filter] = Registry("filter", builtin="filter")


def register_filter(
    name: str,
    flt: Filter,
    *,
    clobber: bool = False,
    execution_traits: ExecutionTraits | Mapping[str, Any] | None = None,
) -> None:
    """Register a reusable filter under ``name`` (usable as ``{"filter": name, ...}``).

    ``execution_traits`` (see :mod:`kuration.core.traits`) tell
    :meth:`kuration.Pipeline.explain` whether the filter is window-local.

    Raises
    ------
    RegistrationError
        A ``ValueError``: ``name`` is taken and ``clobber`` is false.
    RegistrationError
        If ``flt`` lacks ``validate``, ``mask`` or ``describe``.
    ExecutionTraitsError
        Invalid ``execution_traits`` (nothing is registered).
    """
    if not isinstance(flt, Filter):
        raise RegistrationError(
            f"a filter needs validate(), mask() and describe(), got {type(flt).__name__}"
        )
    register_with_traits(
        _FILTERS, "filter", name, flt, clobber=clobber, execution_traits=execution_traits
    )


def get_filter(name: str) -> Filter:
    """The filter registered as ``name`` (raises ``UnknownNameError``, a ``KeyError``)."""
    return _FILTERS.get(name)


def registered_filters() -> tuple[str, ...]:
    """Names of every registered filter, sorted."""
    return _FILTERS.names()


_ONE = ("<", "<=", ">", ">=", "==", "!=")
_TWO = ("between", "outside")
_OPS = (*_ONE, *_TWO, "finite")


def _is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


@dataclass(frozen=True)
class Predicate:
    """``{"feature": name, "op": op, "value" | "quantile": threshold(s)}`` (see module docs)."""

    #: the parameters this filter takes
    parameters: ClassVar[Mapping[str, str]] = MappingProxyType(
        {
            "feature": "the feature to test (required)",
            "op": "<, <=, >, >=, ==, !=, between, outside or finite (required)",
            "value": "absolute threshold, [lo, hi] for between/outside",
            "quantile": "threshold as a quantile in [0, 1] of the pool's finite values",
        }
    )

    def validate(self, params: Mapping[str, Any], features: Sequence[str]) -> None:
        extra = set(params) - {"feature", "op", "value", "quantile"}
        if extra:
            raise StrategyError(
                f"a predicate takes feature, op and value or quantile, not {sorted(extra)}"
            )
        feat = params.get("feature")
        if feat not in features:
            raise StrategyError(
                f"predicate feature {feat!r} is not a feature ({', '.join(features)})"
            )
        op = params.get("op")
        if op not in _OPS:
            raise StrategyError(f"predicate op must be one of {', '.join(_OPS)}, got {op!r}")
        has_v, has_q = "value" in params, "quantile" in params
        if op == "finite":
            if has_v or has_q:
                raise StrategyError("predicate op 'finite' takes no value")
            return
        if has_v == has_q:
            raise StrategyError(f"predicate {feat} {op} needs exactly one of 'value' or 'quantile'")
        key = "value" if has_v else "quantile"
        t = params[key]
        if op in _TWO:
            ok = isinstance(t, list) and len(t) == 2 and all(_is_num(x) for x in t) and t[0] <= t[1]
            if not ok:
                raise StrategyError(f"predicate {feat} {op} needs {key} [lo, hi] with lo <= hi")
            vals = t
        else:
            if not _is_num(t):
                raise StrategyError(f"predicate {feat} {op} needs a finite number as {key}")
            vals = [t]
        if has_q and not all(0.0 <= float(q) <= 1.0 for q in vals):
            raise StrategyError(f"predicate {feat} {op}: quantiles must lie in [0, 1]")

    def mask(self, segments: Sequence[Segment], params: Mapping[str, Any]) -> np.ndarray:
        x = np.array([s.features[params["feature"]] for s in segments], dtype=np.float64)
        ok = np.isfinite(x)
        op = params["op"]
        if op == "finite":
            return ok
        if "quantile" in params:
            if not ok.any():
                return ok
            t = np.atleast_1d(np.quantile(x[ok], params["quantile"]))
        else:
            t = np.atleast_1d(np.asarray(params["value"], dtype=np.float64))
        xs = np.where(ok, x, 0.0)
        res = {
            "<": lambda: xs < t[0],
            "<=": lambda: xs <= t[0],
            ">": lambda: xs > t[0],
            ">=": lambda: xs >= t[0],
            "==": lambda: xs == t[0],
            "!=": lambda: xs != t[0],
            "between": lambda: (xs >= t[0]) & (xs <= t[1]),
            "outside": lambda: (xs < t[0]) | (xs > t[1]),
        }[op]()
        return ok & res

    def describe(self, params: Mapping[str, Any]) -> str:
        op = params["op"]
        if op == "finite":
            return f"{params['feature']} is finite"
        if "quantile" in params:
            q = params["quantile"]
            thr = f"quantile {q}" if not isinstance(q, list) else f"quantiles {q}"
        else:
            thr = str(params["value"])
        return f"{params['feature']} {op} {thr}"


@dataclass(frozen=True)
class Finite:
    """``{"features": [...]}``: every listed feature (default: every feature) is finite."""

    #: the parameters this filter takes
    parameters: ClassVar[Mapping[str, str]] = MappingProxyType(
        {
            "features": "features that must be finite (default: every feature)",
        }
    )

    def validate(self, params: Mapping[str, Any], features: Sequence[str]) -> None:
        extra = set(params) - {"features"}
        if extra:
            raise StrategyError(f"filter 'finite' takes only 'features', not {sorted(extra)}")
        names = params.get("features")
        if names is None:
            return
        if not isinstance(names, list) or not all(n in features for n in names):
            raise StrategyError(
                f"filter 'finite' features must list defined features ({', '.join(features)})"
            )

    def mask(self, segments: Sequence[Segment], params: Mapping[str, Any]) -> np.ndarray:
        names = params.get("features")
        keep = np.ones(len(segments), dtype=bool)
        for i, s in enumerate(segments):
            vals = [s.features[n] for n in names] if names is not None else s.features.values()
            keep[i] = all(math.isfinite(v) for v in vals)
        return keep

    def describe(self, params: Mapping[str, Any]) -> str:
        names = params.get("features")
        return f"finite({', '.join(names) if names is not None else 'every feature'})"


@dataclass(frozen=True)
class SourceMatch:
    """``{"regex": pattern, "exclude": false}``: keep sources whose id matches (or, with
    ``exclude``, those that do not)."""

    #: the parameters this filter takes
    parameters: ClassVar[Mapping[str, str]] = MappingProxyType(
        {
            "regex": "pattern searched in the source id (required)",
            "exclude": "true: keep the sources that do not match",
        }
    )

    def validate(self, params: Mapping[str, Any], features: Sequence[str]) -> None:
        extra = set(params) - {"regex", "exclude"}
        if extra:
            raise StrategyError(f"filter 'source' takes regex and exclude, not {sorted(extra)}")
        pat = params.get("regex")
        if not isinstance(pat, str):
            raise StrategyError("filter 'source' needs a 'regex' string")
        try:
            re.compile(pat)
        except re.error as exc:
            raise StrategyError(f"filter 'source' regex {pat!r}: {exc}") from None
        if not isinstance(params.get("exclude", False), bool):
            raise StrategyError("filter 'source' 'exclude' must be true or false")

    def mask(self, segments: Sequence[Segment], params: Mapping[str, Any]) -> np.ndarray:
        rx = re.compile(params["regex"])
        hit: dict[str, bool] = {}
        keep = np.array(
            [hit.setdefault(s.source_id, rx.search(s.source_id) is not None) for s in segments],
            dtype=bool,
        )
        return ~keep if params.get("exclude", False) else keep

    def describe(self, params: Mapping[str, Any]) -> str:
        return f"source {'!~' if params.get('exclude') else '~'} /{params['regex']}/"


# a quantile threshold is a statistic of the whole pool: a barrier
register_filter(
    "predicate",
    Predicate(),
    execution_traits={"scope": "pool", "shape": "filter", "fusion": "barrier", "passes": 2},
)
register_filter("finite", Finite(), execution_traits={"scope": "window", "shape": "filter"})
register_filter("source", SourceMatch(), execution_traits={"scope": "source", "shape": "filter"})


def _split(entry: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    params = {k: v for k, v in entry.items() if k != "filter"}
    return str(entry.get("filter", "predicate")), params


def normalize_filters(
    entries: Any, features: Sequence[str], where: str = "filters"
) -> list[dict[str, Any]]:
    """Validate a list of filter entries; returns them as ``{"filter": name, **params}``.

    Raises
    ------
    StrategyError
        A malformed entry, an unknown filter name or bad parameters.
    """
    if entries is None:
        return []
    if not isinstance(entries, list):
        raise StrategyError(f"{where!r} must be a list of filter entries")
    out: list[dict[str, Any]] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            raise StrategyError(f"{where}[{i}] must be an object, got {entry!r}")
        if "filter" not in entry and "feature" not in entry:
            raise StrategyError(
                f"{where}[{i}] needs 'filter' (a registered filter) or 'feature' (a predicate)"
            )
        name, params = _split(entry)
        try:
            flt = get_filter(name)
        except KeyError as exc:
            raise StrategyError(f"{where}[{i}]: {exc}") from None
        try:
            flt.validate(params, features)
        except StrategyError as exc:
            raise StrategyError(f"{where}[{i}]: {exc}") from None
        out.append({"filter": name, **params})
    return out


def describe_filter(entry: Mapping[str, Any]) -> str:
    """A one-line description of a normalised entry, as used in audit reasons."""
    name, params = _split(entry)
    text = get_filter(name).describe(params)
    return text if name == "predicate" else f"{name}: {text}"


def apply_filters(
    segments: Sequence[Segment], entries: Sequence[Mapping[str, Any]]
) -> tuple[np.ndarray, list[str | None]]:
    """Evaluate normalised entries over ``segments``.

    Returns
    -------
    keep : ndarray, shape (N,), bool
        True where every entry keeps the segment.
    reasons : list of (str or None), length N
        For a dropped segment, the first entry it failed.
    """
    n = len(segments)
    keep = np.ones(n, dtype=bool)
    reasons: list[str | None] = [None] * n
    for entry in entries:
        name, params = _split(entry)
        flt = get_filter(name)
        if getattr(flt, "kept_only", False):  # sees only the segments kept so far (dedup)
            rows = np.flatnonzero(keep)
            sub = np.asarray(flt.mask([segments[i] for i in rows.tolist()], params), dtype=np.bool_)
            if sub.shape != rows.shape:
                raise StrategyError(
                    f"filter {name!r} returned a mask of shape {sub.shape}, not {rows.shape}"
                )
            m = np.ones(n, dtype=bool)
            m[rows] = sub
        else:
            m = np.asarray(flt.mask(segments, params), dtype=bool)
        if m.shape != (n,):
            raise StrategyError(f"filter {name!r} returned a mask of shape {m.shape}, not ({n},)")
        newly = keep & ~m
        if newly.any():
            why = f"filtered out: {describe_filter(entry)}"
            for i in np.flatnonzero(newly):
                reasons[i] = why
        keep &= m
    return keep, reasons
