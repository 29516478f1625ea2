"""The method contract, its registry, and helpers shared by the built-in methods.

A method ranks a pool of scored (and, when the strategy has axes, binned)
segments: ``priorities(segments, params, seed, nan_policy)`` returns one
float per segment, higher first; ``-inf`` means "never select".  The count
path keeps the ``n`` highest, the hours path aggregates them per track.  The
selection engine only hands a method the segments that passed the strategy's
filters, in canonical ``(source_id, start_idx)`` order.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ...contracts.segment import Segment
from ...core.registry import Registry
from ...core.traits import ExecutionTraits, register_with_traits
from ...errors import RegistrationError, StrategyError
from ..binning import feature_matrix

__all__ = [
    "NAN_POLICIES",
    "NORMALIZERS",
    "Method",
    "check_keys",
    "check_normalize",
    "feature_list",
    "get_method",
    "nan_rows",
    "normalize_columns",
    "order_to_priorities",
    "pool_matrix",
    "rank_nan_lowest",
    "register_method",
    "registered_methods",
]

NAN_POLICIES = ("exclude", "lowest")
NORMALIZERS = ("zscore", "minmax", "rank", "none")


@runtime_checkable
class Method(Protocol):
    """A selection method.

    ``validate(params, features, axes)`` raises :class:`StrategyError` on bad
    parameters, before any data is read.  ``priorities(segments, params, seed,
    nan_policy)`` returns an array of shape (N,), float64, aligned with
    ``segments``.  A method may also define ``explain(segments, params)``
    returning, per segment, why it was given ``-inf`` (or None).
    """

    def validate(
        self, params: Mapping[str, Any], features: Sequence[str], axes: Sequence[str]
    ) -> None: ...

    def priorities(
        self, segments: Sequence[Segment], params: Mapping[str, Any], seed: int, nan_policy: str
    ) -> np.ndarray: ...


_METHODS: Registry[Method] = Registry("selection method", builtin="method")


def register_method(
    name: str,
    method: Method,
    *,
    clobber: bool = False,
    execution_traits: ExecutionTraits | Mapping[str, Any] | None = None,
) -> None:
    """Register a selection method under ``name``.

    ``execution_traits`` (see :mod:`kuration.core.traits`) tell
    :meth:`kuration.Pipeline.explain` how the method runs; a method may
    also declare ``parameters`` (name -> one-line description), listed by
    its built-in operator.

    Raises
    ------
    RegistrationError
        A ``ValueError``: ``name`` is taken and ``clobber`` is false.
    RegistrationError
        If ``method`` lacks ``validate`` or ``priorities``.
    ExecutionTraitsError
        Invalid ``execution_traits`` (nothing is registered).
    """
    if not isinstance(method, Method):
        raise RegistrationError(
            f"a method needs validate() and priorities(), got {type(method).__name__}"
        )
    register_with_traits(
        _METHODS, "method", name, method, clobber=clobber, execution_traits=execution_traits
    )


def get_method(name: str) -> Method:
    """The method registered as ``name`` (raises ``UnknownNameError``, a ``KeyError``)."""
    return _METHODS.get(name)


def registered_methods() -> tuple[str, ...]:
    """Names of every registered selection method, sorted."""
    return _METHODS.names()


def check_keys(params: Mapping[str, Any], allowed: set[str], method: str) -> None:
    """Raise :class:`StrategyError` if ``params`` has a key outside ``allowed``."""
    if not isinstance(params, Mapping):
        raise StrategyError(f"method {method!r} params must be an object")
    extra = sorted(set(params) - allowed)
    if extra:
        close = difflib.get_close_matches(extra[0], sorted(allowed), n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}?" if close else f"takes {sorted(allowed)}"
        raise StrategyError(
            f"params.{extra[0]}: method {method!r} does not take {extra} ({hint})",
            path=f"params.{extra[0]}",
        )


def feature_list(
    params: Mapping[str, Any],
    features: Sequence[str],
    axes: Sequence[str],
    method: str,
    key: str = "features",
) -> list[str]:
    """``params[key]`` validated against ``features``; default the bin axes, else every feature."""
    names = params.get(key)
    if names is None:
        return list(axes) if axes else list(features)
    if (
        not isinstance(names, list)
        or not names
        or not all(isinstance(n, str) for n in names)
        or len(set(names)) != len(names)
    ):
        raise StrategyError(f"method {method!r} {key!r} must be a non-empty list of feature names")
    unknown = [n for n in names if n not in features]
    if unknown:
        raise StrategyError(
            f"method {method!r} {key!r} names unknown features {unknown} "
            f"(features: {', '.join(features)})"
        )
    return list(names)


def nan_rows(x: np.ndarray) -> np.ndarray:
    """Rows of ``x`` (N, F) holding a non-finite value, shape (N,), bool."""
    return ~np.isfinite(x).all(axis=1) if x.ndim == 2 else ~np.isfinite(x)


def normalize_columns(x: np.ndarray, how: str, fit: np.ndarray | None = None) -> np.ndarray:
    """Scale each column of ``x`` (N, F) so features of different units are comparable.

    ``zscore``: ``(x - mean) / std``; ``minmax``: onto [0, 1]; ``rank``: the
    mid-rank ECDF value in (0, 1) (ties share their average rank, as
    ``scipy.stats.rankdata``); ``none``: unchanged.  Statistics come from the
    finite values of the rows in ``fit`` (default all); a constant column maps
    to 0 (0.5 for ``rank``).  Non-finite entries stay NaN.
    """
    x = np.asarray(x, dtype=np.float64)
    out = np.full_like(x, np.nan)
    rows = np.ones(x.shape[0], dtype=bool) if fit is None else np.asarray(fit, dtype=bool)
    for j in range(x.shape[1]):
        col = x[:, j]
        ok = np.isfinite(col)
        ref = col[ok & rows]
        if how == "none":
            out[ok, j] = col[ok]
        elif ref.size == 0:
            continue
        elif how == "zscore":
            sd = ref.std()
            out[ok, j] = (col[ok] - ref.mean()) / sd if sd > 0 else 0.0
        elif how == "minmax":
            lo, hi = ref.min(), ref.max()
            out[ok, j] = (col[ok] - lo) / (hi - lo) if hi > lo else 0.0
        elif how == "rank":
            srt = np.sort(ref)
            if srt[0] == srt[-1]:
                out[ok, j] = 0.5
            else:  # mid-rank - 1/2, over the reference values
                lo = np.searchsorted(srt, col[ok], side="left")
                hi = np.searchsorted(srt, col[ok], side="right")
                out[ok, j] = (lo + hi) / (2.0 * srt.size)
        else:
            raise StrategyError(f"normalize must be one of {', '.join(NORMALIZERS)}, got {how!r}")
    return out


def check_normalize(params: Mapping[str, Any], method: str) -> None:
    how = params.get("normalize", "zscore")
    if how not in NORMALIZERS:
        raise StrategyError(
            f"method {method!r} 'normalize' must be one of {', '.join(NORMALIZERS)}, got {how!r}"
        )


def rank_nan_lowest(prio: np.ndarray, bad: np.ndarray, nan_policy: str) -> np.ndarray:
    """Apply ``nan_policy`` to the rows ``bad``: ``-inf`` (exclude) or one step below the lowest
    finite priority (lowest)."""
    out = np.asarray(prio, dtype=np.float64).copy()
    if not bad.any():
        return out
    if nan_policy == "exclude":
        out[bad] = -np.inf
    else:
        good = out[~bad & np.isfinite(out)]
        out[bad] = (good.min() if good.size else 0.0) - 1.0
    return out


def order_to_priorities(order: np.ndarray, n: int) -> np.ndarray:
    """Priorities of shape (n,) such that the top ``k`` of them are exactly ``order[:k]``.

    ``order`` lists row indices, best first; it gets ``len(order), ..., 1``;
    rows not in ``order`` get ``-inf``.
    """
    prio = np.full(n, -np.inf)
    order = np.asarray(order, dtype=np.int64)
    prio[order] = np.arange(order.size, 0, -1, dtype=np.float64)
    return prio


def pool_matrix(
    segments: Sequence[Segment], names: Sequence[str], how: str
) -> tuple[np.ndarray, np.ndarray]:
    """``(x, bad)``: normalised features (N, F) and the rows with a non-finite feature (N,)."""
    raw = feature_matrix(segments, names)
    bad = nan_rows(raw)
    return normalize_columns(raw, how, fit=~bad), bad
