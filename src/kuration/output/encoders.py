"""OutputEncoder: the domain seam of the writer, and the encoder registry.

An encoder fills the ``encoder:<hook>`` modalities of an :class:`OutputSpec`.
It implements ``timestep(record, ctx)`` (one present timestep at a time)
and/or ``encode_batch(records, ctx)`` (the whole track at once, preferred when
present).  Both return a mapping whose keys are hook names (the part after
``encoder:``); ``timestep`` values have the modality's shape, ``encode_batch``
values lead with ``len(records)``.

A record maps each field (and global) to its value at the timestep: a float
for scalars, the label for categoricals (None when missing), an array of
shape (D,) for vectors.  ``ctx`` is ``{"schema": SchemaSpec, "track":
{**track.meta, "source_id", "entity_id", "span_index", "start_idx"}}``.  In
``encode_batch`` an absent timestep's record is an empty dict; whatever the
encoder returns there is zeroed by the writer.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from ..core.plugins import code_identity
from ..core.registry import Registry

__all__ = [
    "OutputEncoder",
    "PassthroughEncoder",
    "encoder_identity",
    "get_encoder",
    "register_encoder",
    "registered_encoders",
]


@runtime_checkable
class OutputEncoder(Protocol):
    """Per-timestep hook: ``timestep(record, ctx) -> {hook: array}``."""

    def timestep(self, record: Mapping[str, Any], ctx: Mapping[str, Any]) -> Mapping[str, Any]: ...


class PassthroughEncoder:
    """The default encoder: contributes nothing (specs without ``encoder:`` modalities)."""

    hooks: tuple[str, ...] = ()

    def timestep(self, record: Mapping[str, Any], ctx: Mapping[str, Any]) -> Mapping[str, Any]:
        return {}

    def encode_batch(
        self, records: Sequence[Mapping[str, Any]], ctx: Mapping[str, Any]
    ) -> Mapping[str, Any]:
        return {}

    def to_dict(self) -> dict[str, Any]:
        return {"type": "passthrough"}


_ENCODERS: Registry[Callable[..., Any]] = Registry("encoder", builtin="encoder")


def register_encoder(name: str, factory: Callable[..., Any], *, clobber: bool = False) -> None:
    """Register an encoder factory (``factory(**options) -> encoder``) under ``name``.

    Registered names let a job file or a worker process rebuild the encoder
    (``{"type": name, **options}``).

    Raises
    ------
    RegistrationError
        A ``ValueError``: ``name`` is taken and ``clobber`` is false.
    """
    _ENCODERS.register(name, factory, clobber=clobber)


def get_encoder(name: str, **options: Any) -> Any:
    """Build the encoder registered as ``name`` with ``options``.

    Raises
    ------
    UnknownNameError
        If no encoder has that name.
    """
    enc = _ENCODERS.get(name)(**options)
    if getattr(enc, "_kuration_spec", None) is None:
        with contextlib.suppress(AttributeError):  # slotted encoders keep no spec
            enc._kuration_spec = {"type": name, **options}
    return enc


def registered_encoders() -> tuple[str, ...]:
    return _ENCODERS.names()


def encoder_identity(encoder: Any) -> dict[str, Any] | None:
    """What the run fingerprint records of an encoder: its class, registered spec or
    ``to_dict()`` state, and ``code_sha256``, a digest of its package's source (so a
    code change is seen; see :func:`kuration.core.plugins.code_identity`).  kuration's own
    encoders have ``code_sha256`` None: kuration is identified by its version."""
    if encoder is None:
        return None
    cls = type(encoder)
    state: Any = getattr(encoder, "_kuration_spec", None)
    to_dict = getattr(encoder, "to_dict", None)
    if callable(to_dict):
        state = to_dict()
    return {
        "class": f"{cls.__module__}.{cls.__qualname__}",
        "state": state,
        "code_sha256": (code_identity(type(encoder)) or {}).get("sha256"),
    }


register_encoder("passthrough", PassthroughEncoder)
