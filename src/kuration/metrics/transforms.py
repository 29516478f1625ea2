"""BatchTransform: bounded model/device features over batches of segments.

A transform is registered under a name with its input **roles** (each of one
kind: ``field``, ``feature`` or ``media``, optionally with a default token),
its output feature names and its execution traits::

    register_transform(
        "motion_energy", MotionEnergy,
        inputs={"frames": "media:frame"}, outputs=["motion_energy"],
        media={"frames": lambda params: MediaRequest(size=params.get("size", (36, 64)), format="gray")},
        batch_size=8,
    )

A strategy uses it with a per-use remap (one same-kind token per role),
boundary context and parameters::

    "transforms": [{"name": "motion_energy", "inputs": {"frames": "media:cam2"},
                    "lookbehind": 1, "params": {"size": [36, 64]},
                    "outputs": {"motion_energy": "motion_cam2"}}]

:func:`resolve_transform` checks such a use against the schema (and the
features defined before it) when the strategy is loaded, before any data is
read, and returns a frozen :class:`TransformUse`; media requests are checked
against the column's :class:`~kuration.contracts.media.MediaSpec` there, so a
bad size, pixel format or rate fails before any decode.  Execution (batching,
padding, decoding, output checks) is :mod:`kuration.metrics.transform_exec`.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from ..contracts.media import PIXEL_FORMATS, MediaSpec
from ..contracts.schema import SchemaSpec
from ..core.traits import ExecutionTraits, checked_traits, declare_traits
from ..errors import TransformError
from .seams import TRANSFORMS as _TRANSFORMS
from .seams import registered_transforms

__all__ = [
    "BatchTransform",
    "MediaRequest",
    "TransformContext",
    "TransformInfo",
    "TransformUse",
    "get_transform",
    "register_transform",
    "registered_transforms",
    "resolve_transform",
]

KINDS = ("field", "feature", "media")


@dataclass(frozen=True)
class MediaRequest:
    """What a transform asks of a ``media:`` input: frames decoded at ``size`` in ``format``.

    Attributes
    ----------
    size : (int, int) or None
        ``(H, W)`` pixels to scale to (downscaling only: at most the column's
        declared shape); None keeps the declared shape.
    format : {"rgb24", "bgr24", "gray"}
        Decoded pixel format; the batch array has ``C`` = 3 or 1 channels.
    frame_rate : Fraction or None
        When given, the column's declared ``frame_rate`` must equal it exactly.
    """

    size: tuple[int, int] | None = None
    format: str = "rgb24"
    frame_rate: Fraction | None = None

    def check(self, spec: MediaSpec, *, transform: str, token: str) -> tuple[int, int, int]:
        """The decoded frame shape ``(H, W, C)``, checked against ``spec`` (no decode).

        Raises
        ------
        TransformError
            An unknown format, a size that is not positive or exceeds the
            declared shape, or a rate that differs from the declared one.
        """
        if self.format not in PIXEL_FORMATS:
            raise TransformError(
                f"pixel format {self.format!r} is not one of {sorted(PIXEL_FORMATS)}",
                transform=transform,
                token=token,
            )
        h, w = spec.shape[0], spec.shape[1]
        if self.size is not None:
            sz = tuple(self.size)
            if len(sz) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in sz):
                raise TransformError(
                    f"size must be (H, W) integers, got {self.size!r}",
                    transform=transform,
                    token=token,
                )
            if not (0 < sz[0] <= h and 0 < sz[1] <= w):
                raise TransformError(
                    f"size {list(sz)} must be positive and at most the column's "
                    f"declared {h}x{w} (frames are only downscaled)",
                    transform=transform,
                    token=token,
                )
            h, w = sz
        if self.frame_rate is not None and spec.frame_rate != self.frame_rate:
            raise TransformError(
                f"needs frames at exactly {self.frame_rate} fps, the column declares "
                f"{spec.frame_rate}",
                transform=transform,
                token=token,
            )
        return (h, w, PIXEL_FORMATS[self.format])


MediaRequests = Mapping[str, MediaRequest | Callable[[Mapping[str, Any]], MediaRequest]]


@dataclass(frozen=True)
class TransformInfo:
    """One registration: ``factory(**params)`` builds the transform (once per runner).

    ``inputs`` maps each role to its kind (``field``/``feature``/``media``) or
    to a default token of that kind; ``media`` holds a :class:`MediaRequest`
    (or a function of the use's params returning one) per media role.
    """

    name: str
    factory: Callable[..., Any]
    inputs: Mapping[str, str]
    outputs: tuple[str, ...]
    batch_size: int = 16
    media: MediaRequests = field(default_factory=dict)

    @property
    def implementation(self) -> Any:
        """The code the run fingerprint identifies (the factory)."""
        return self.factory


def _kind(token_or_kind: str) -> str:
    return token_or_kind.split(":", 1)[0]


def register_transform(
    name: str,
    factory: Callable[..., Any],
    *,
    inputs: Mapping[str, str],
    outputs: Sequence[str],
    batch_size: int = 16,
    execution_traits: ExecutionTraits | Mapping[str, Any] | None = None,
    media: MediaRequests | None = None,
    clobber: bool = False,
) -> TransformInfo:
    """Register a BatchTransform.

    Parameters
    ----------
    name : str
    factory : callable
        ``factory(**params)`` returns an object with ``transform(batch, ctx)``
        (a :class:`BatchTransform`); called once per runner (per worker process).
    inputs : mapping of str to str
        Role to kind (``"field"``, ``"feature"``, ``"media"``) or to a default
        token of that kind (``"media:frame"``).
    outputs : sequence of str
        Output names; each becomes a feature (renamable per use).
    batch_size : int
        Segments per call (>= 1); bounds the memory of a ``media:`` batch.
    execution_traits : ExecutionTraits or mapping, optional
        What the planner (:meth:`kuration.Pipeline.explain`) is told
        (:mod:`kuration.core.traits`: resources such as ``gpu``, determinism);
        default: a window-scoped map with bounded state.
    media : mapping of str to MediaRequest or callable, optional
        Per media role, the decode request (or ``fn(params) -> MediaRequest``).

    Raises
    ------
    TransformError
        A bad role kind, no outputs, duplicate outputs, a bad batch size or a
        media request for a role that is not a media role.
    ExecutionTraitsError
        Invalid ``execution_traits``.
    ValueError
        If ``name`` is taken and ``clobber`` is false.
    """
    ins = dict(inputs)
    for role, k in ins.items():
        if _kind(k) not in KINDS or (":" in k and not k.split(":", 1)[1]):
            raise TransformError(
                f"input role {role!r}: {k!r} is not one of {KINDS} or a token of one",
                transform=name,
            )
    outs = tuple(outputs)
    if not outs or len(set(outs)) != len(outs) or not all(isinstance(o, str) and o for o in outs):
        raise TransformError(
            f"outputs must be distinct non-empty names, got {outs!r}", transform=name
        )
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise TransformError(
            f"batch_size must be an integer >= 1, got {batch_size!r}", transform=name
        )
    traits = checked_traits("transform", name, execution_traits)
    med = dict(media or {})
    for role in med:
        if _kind(ins.get(role, "")) != "media":
            raise TransformError(
                f"media request for {role!r}, which is not a media role", transform=name
            )
    info = TransformInfo(name, factory, ins, outs, batch_size, med)
    _TRANSFORMS.register(name, info, clobber=clobber)
    declare_traits("transform", name, traits)
    return info


def get_transform(name: str) -> TransformInfo:
    """The registration of ``name``.

    Raises
    ------
    UnknownNameError
        With close matches.
    """
    return _TRANSFORMS.get(name)


@dataclass(frozen=True)
class TransformUse:
    """One resolved use of a transform in a strategy (plain data; picklable).

    Attributes
    ----------
    name : str
    inputs : mapping of role to token
        The resolution (defaults filled in, remaps applied).
    lookbehind, lookahead : mapping of token to int
        Ticks of context before/after each segment, per input token.
    params : mapping
        Factory keyword arguments (JSON values).
    outputs : mapping of declared output to feature name
    media : mapping of token to (size (H, W) or None, format)
        The checked decode request per media token.
    batch_size : int
    """

    name: str
    inputs: Mapping[str, str]
    lookbehind: Mapping[str, int]
    lookahead: Mapping[str, int]
    params: Mapping[str, Any]
    outputs: Mapping[str, str]
    media: Mapping[str, tuple[tuple[int, int, int], str]]
    batch_size: int

    def to_dict(self) -> dict[str, Any]:
        """The descriptor recorded in the strategy (config.json) and the run fingerprint."""
        return {
            "name": self.name,
            "inputs": dict(self.inputs),
            "lookbehind": dict(self.lookbehind),
            "lookahead": dict(self.lookahead),
            "params": json.loads(json.dumps(dict(self.params))),
            "outputs": dict(self.outputs),
        }


def _context(value: Any, tokens: Mapping[str, str], what: str, name: str) -> dict[str, int]:
    """One count for every token, or a mapping keyed by role or token."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise TransformError(f"{what} must be >= 0, got {value}", transform=name)
        return dict.fromkeys(tokens.values(), value)
    out = dict.fromkeys(tokens.values(), 0)
    for key, n in dict(value or {}).items():
        token = tokens.get(key, key)
        if token not in out:
            raise TransformError(
                f"{what} names {key!r}, which is neither a role ({', '.join(tokens)}) "
                f"nor an input token ({', '.join(tokens.values())})",
                transform=name,
            )
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise TransformError(
                f"{what}[{key!r}] must be an integer >= 0, got {n!r}", transform=name, token=token
            )
        out[token] = n
    return out


def _check_token(
    token: str, kind: str, schema: SchemaSpec, features: Sequence[str], name: str
) -> None:
    body = token.split(":", 1)[1] if ":" in token else ""
    if _kind(token) != kind or not body:
        raise TransformError(
            f"input must be a {kind}: token, got {token!r}", transform=name, token=token
        )
    if kind == "field":
        f = next((f for f in schema.fields if f.name == body), None)
        if f is None:
            raise TransformError(
                "no such per-entity field in the schema", transform=name, token=token
            )
        if f.kind == "categorical":
            raise TransformError("a categorical field is not numeric", transform=name, token=token)
    elif kind == "feature" and body not in features:
        raise TransformError(
            f"not a feature computed before this transform ({', '.join(features) or 'none'})",
            transform=name,
            token=token,
        )
    elif kind == "media" and body not in {m.name for m in schema.media}:
        raise TransformError("no such media column in the schema", transform=name, token=token)


def resolve_transform(
    use: Mapping[str, Any], schema: SchemaSpec, features: Sequence[str]
) -> TransformUse:
    """Check one strategy ``transforms`` entry and resolve its roles (no data read).

    Parameters
    ----------
    use : mapping
        ``name``, and optionally ``inputs`` (role -> token), ``lookbehind``,
        ``lookahead`` (int or mapping keyed by role or token), ``params``,
        ``outputs`` (declared output -> feature name).
    schema : SchemaSpec
    features : sequence of str
        Features computed before this transform (``feature:`` inputs may read them).

    Raises
    ------
    TransformError
        An unknown transform, role, kind mismatch, missing token, a token the
        schema does not have, bad context counts, an unknown output, or a
        media request the column's MediaSpec cannot serve.
    """
    name = str(use["name"])
    try:
        info = get_transform(name)
    except KeyError as exc:
        raise TransformError(str(exc), transform=name) from None
    remap = dict(use.get("inputs") or {})
    unknown = sorted(set(remap) - set(info.inputs))
    if unknown:
        raise TransformError(
            f"inputs names unknown roles {unknown} (declared: {', '.join(info.inputs)})",
            transform=name,
        )
    tokens: dict[str, str] = {}
    for role, declared in info.inputs.items():
        token = remap.get(role, declared if ":" in declared else None)
        if token is None:
            raise TransformError(
                f"role {role!r} ({declared}) needs a token in inputs", transform=name
            )
        _check_token(str(token), _kind(declared), schema, features, name)
        tokens[role] = str(token)
    params = dict(use.get("params") or {})
    media: dict[str, tuple[tuple[int, int, int], str]] = {}
    specs = {m.name: m for m in schema.media}
    for role, token in tokens.items():
        if _kind(token) != "media":
            continue
        req = info.media.get(role, MediaRequest())
        if callable(req):
            req = req(params)
        size = tuple(req.size) if req.size is not None else None
        req = MediaRequest(size, req.format, req.frame_rate)  # type: ignore[arg-type]
        media[token] = (
            req.check(specs[token.split(":", 1)[1]], transform=name, token=token),
            req.format,
        )
    rename = dict(use.get("outputs") or {})
    bad = sorted(set(rename) - set(info.outputs))
    if bad:
        raise TransformError(
            f"outputs renames unknown outputs {bad} (declared: {', '.join(info.outputs)})",
            transform=name,
        )
    return TransformUse(
        name=name,
        inputs=tokens,
        lookbehind=_context(use.get("lookbehind", 0), tokens, "lookbehind", name),
        lookahead=_context(use.get("lookahead", 0), tokens, "lookahead", name),
        params=params,
        outputs={o: str(rename.get(o, o)) for o in info.outputs},
        media=media,
        batch_size=info.batch_size,
    )


@dataclass(frozen=True)
class TransformContext:
    """What a transform learns of one batch besides the arrays.

    Attributes
    ----------
    name : str
        The transform's registered name.
    inputs : mapping of role to token
        The resolution of this use: read ``batch[ctx.input_token(role)]``.
    params : mapping
        The use's parameters.
    segment_ids : tuple of str
        Stable segment ids (``"<source_id>:<start_idx>"``), one per batch row.
    lengths : ndarray, shape (B,), int64
        Ticks of each segment itself (without lookbehind/lookahead).
    valid_steps : mapping of token to ndarray, shape (B,), int64
        Real ticks per row of each ``field:``/``media:`` input (the rest is padding).
    offsets : mapping of token to ndarray, shape (B,), int64
        Row position of each segment's first tick (the lookbehind actually available).
    present : mapping of token to ndarray, shape (B, T), bool
        For ``media:`` inputs, where a frame was decoded; for ``field:``
        inputs, where a tick is real and any entity is present.
    sample_hz : float
    entity_ids : mapping of token to tuple of tuple
        For ``field:`` inputs, each row's entity roster (the ``E`` axis, in order).
    """

    name: str
    inputs: Mapping[str, str]
    params: Mapping[str, Any]
    segment_ids: tuple[str, ...]
    lengths: np.ndarray
    valid_steps: Mapping[str, np.ndarray]
    offsets: Mapping[str, np.ndarray]
    present: Mapping[str, np.ndarray]
    sample_hz: float
    entity_ids: Mapping[str, tuple[tuple[Any, ...], ...]] = field(default_factory=dict)

    def input_token(self, role: str) -> str:
        """The token ``role`` resolves to in this use.

        Raises
        ------
        TransformError
            An unknown role.
        """
        try:
            return self.inputs[role]
        except KeyError:
            raise TransformError(
                f"no input role {role!r} (roles: {', '.join(self.inputs)})", transform=self.name
            ) from None


class BatchTransform(ABC):
    """Base of a bounded model/device feature.

    ``transform`` validates nothing itself: the runner builds the batch
    (see :mod:`kuration.metrics.transform_exec`) and checks the result.
    Subclasses implement :meth:`transform`.
    """

    @abstractmethod
    def transform(self, batch: Mapping[str, Any], ctx: TransformContext) -> Mapping[str, Any]:
        """Compute the outputs of one batch of ``B`` segments.

        Parameters
        ----------
        batch : mapping
            Per input token: ``field:`` -> ndarray (B, T, E, D) float64,
            NaN-padded to the widest row and roster; ``feature:`` -> ndarray
            (B,) float64; ``media:`` -> ndarray (B, T, H, W, C) uint8,
            zero where there is no frame.  ``"valid_steps"`` -> ``ctx.valid_steps``.
        ctx : TransformContext

        Returns
        -------
        mapping of str to array-like, shape (B,)
            One finite float per row and declared output, in row order; an
            optional ``"segment_ids"`` entry is checked against ``ctx.segment_ids``.
        """
