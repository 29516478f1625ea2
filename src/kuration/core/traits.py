"""Execution traits: what a registered component tells the planner about how it runs.

Every registration seam (``register_metric``, ``register_filter``,
``register_method``, ``register_analyzer``, later transforms and scorers) takes
an optional ``execution_traits=`` argument.  The traits are validated when the
component is registered -- an inconsistent declaration raises
:class:`~kuration.errors.ExecutionTraitsError` at import, never mid-run -- and
:meth:`kuration.Pipeline.explain` reads them to decide which stages fuse into
one window-local island and which are barriers.

=================== =====================================================================
trait               meaning
=================== =====================================================================
scope               ``window`` (one segment at a time), ``source`` (one source),
                    ``pool`` (the whole scored pool) or ``artifact`` (a written dataset)
shape               ``map``, ``filter``, ``rank``, ``reduce``, ``source`` or ``sink``
fusion              ``fusible`` (may share a pipeline-parallel island with its
                    neighbours) or ``barrier`` (materializes its input first)
passes              how many passes over its input it makes (>= 1)
state               ``none``, ``bounded`` (fixed size), ``per-source`` or ``pool``
projected_columns   the feature/field names it reads; None means "all"
resources           ``cpu`` and ``gpu`` per running instance, ``memory_mb`` (0: unknown)
deterministic       identical inputs and seed give identical output
checkpoint          ``none``, ``partition`` (per source) or ``stage``
=================== =====================================================================

Consistency rules (checked): a ``fusible`` component is ``window`` or
``source`` scoped, makes one pass and holds at most bounded state; a
``pool``/``artifact`` component is a barrier.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..errors import ExecutionTraitsError
from .registry import Registry

__all__ = [
    "DEFAULT_TRAITS",
    "ExecutionTraits",
    "Resources",
    "checked_traits",
    "coerce_traits",
    "declare_traits",
    "declared_traits",
    "register_with_traits",
    "traits_of",
]


class Resources(BaseModel):
    """Per-instance resources: ``cpu`` cores, ``gpu`` devices, ``memory_mb`` (0: unknown)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cpu: float = Field(default=1.0, gt=0)
    gpu: float = Field(default=0.0, ge=0)
    memory_mb: int = Field(default=0, ge=0)


class ExecutionTraits(BaseModel):
    """Validated, frozen execution traits of one component (see the module table).

    Raises
    ------
    pydantic.ValidationError
        From the constructor; :func:`coerce_traits` turns it into
        :class:`~kuration.errors.ExecutionTraitsError`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    scope: Literal["window", "source", "pool", "artifact"] = "window"
    shape: Literal["map", "filter", "rank", "reduce", "source", "sink"] = "map"
    fusion: Literal["fusible", "barrier"] = "fusible"
    passes: int = Field(default=1, ge=1)
    state: Literal["none", "bounded", "per-source", "pool"] = "none"
    projected_columns: tuple[str, ...] | None = None
    resources: Resources = Field(default_factory=Resources)
    deterministic: bool = True
    checkpoint: Literal["none", "partition", "stage"] = "none"

    @model_validator(mode="after")
    def _consistent(self) -> ExecutionTraits:
        if self.fusion == "fusible":
            if self.scope not in ("window", "source"):
                raise ValueError(
                    f"a fusible component is window or source scoped, not {self.scope}"
                )
            if self.passes != 1:
                raise ValueError(f"a fusible component makes one pass, not {self.passes}")
            if self.state not in ("none", "bounded"):
                raise ValueError(f"a fusible component holds bounded state, not {self.state!r}")
        return self

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``projected_columns`` as a list or None)."""
        d = self.model_dump(mode="json")
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ExecutionTraits:
        """Inverse of :meth:`to_dict` (raises ``ExecutionTraitsError``)."""
        return coerce_traits(d)


def coerce_traits(
    value: ExecutionTraits | Mapping[str, Any], *, component: str | None = None
) -> ExecutionTraits:
    """``value`` as validated :class:`ExecutionTraits`.

    Raises
    ------
    ExecutionTraitsError
        Unknown keys, out-of-range values or an inconsistent combination.
    """
    if isinstance(value, ExecutionTraits):
        return value
    if not isinstance(value, Mapping):
        raise ExecutionTraitsError(
            f"execution_traits must be ExecutionTraits or a mapping, got {type(value).__name__}",
            component=component,
        )
    try:
        return ExecutionTraits.model_validate(dict(value))
    except ValidationError as exc:
        msgs = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'traits'}: {e['msg']}" for e in exc.errors()
        )
        raise ExecutionTraitsError(
            f"invalid execution_traits: {msgs}", component=component
        ) from None


#: What the planner assumes for a component that declares nothing: metrics are
#: window-local maps, anything else conservatively a single-pass pool barrier.
DEFAULT_TRAITS: Mapping[str, ExecutionTraits] = {
    "adapter": ExecutionTraits(scope="source", shape="source", state="bounded"),
    "metric": ExecutionTraits(),
    "filter": ExecutionTraits(scope="pool", shape="filter", fusion="barrier"),
    "method": ExecutionTraits(scope="pool", shape="rank", fusion="barrier", state="pool"),
    "transform": ExecutionTraits(scope="window", shape="map", state="bounded"),
    "scorer": ExecutionTraits(scope="pool", shape="map", fusion="barrier", state="pool"),
    "analyzer": ExecutionTraits(scope="artifact", shape="reduce", fusion="barrier", state="pool"),
}

_TRAITS: dict[str, Registry[ExecutionTraits]] = {}


def declare_traits(
    kind: str, name: str, traits: ExecutionTraits | Mapping[str, Any] | None
) -> ExecutionTraits | None:
    """Record (or, with None, forget) the traits of the ``kind`` component ``name``.

    A registration function validates first with :func:`coerce_traits`,
    registers the component, then calls this, so an invalid declaration
    leaves nothing registered and a clobbered component never keeps stale traits.

    Raises
    ------
    ExecutionTraitsError
        See :func:`coerce_traits`.
    """
    reg = _TRAITS.get(kind)
    if reg is None:
        reg = _TRAITS[kind] = Registry(f"{kind} execution traits")
    if traits is None:
        reg.unregister(name)
        return None
    t = coerce_traits(traits, component=f"{kind}:{name}")
    reg.register(name, t, clobber=True)
    return t


def checked_traits(
    kind: str, name: str, value: ExecutionTraits | Mapping[str, Any] | None
) -> ExecutionTraits | None:
    """``value`` validated for the ``kind`` component ``name`` (None stays None), before
    anything is registered.

    Raises
    ------
    ExecutionTraitsError
        See :func:`coerce_traits`.
    """
    return None if value is None else coerce_traits(value, component=f"{kind}:{name}")


def register_with_traits(
    registry: Registry[Any],
    kind: str,
    name: str,
    obj: Any,
    *,
    clobber: bool,
    execution_traits: ExecutionTraits | Mapping[str, Any] | None,
) -> None:
    """Register ``obj`` as ``name`` in ``registry`` with its declared traits: traits are
    validated first, so an invalid declaration registers nothing.

    Raises
    ------
    ExecutionTraitsError
        See :func:`coerce_traits`.
    RegistrationError
        ``name`` is taken and ``clobber`` is false.
    """
    traits = checked_traits(kind, name, execution_traits)
    registry.register(name, obj, clobber=clobber)
    declare_traits(kind, name, traits)


def declared_traits(kind: str, name: str) -> ExecutionTraits | None:
    """The traits declared for ``name``, or None (a built-in not yet loaded is loaded first)."""
    component = Registry.of_builtin(kind)
    if component is not None and name not in _TRAITS.get(kind, {}):
        component.load(name)
    reg = _TRAITS.get(kind)
    return reg.view().get(name) if reg is not None else None


def traits_of(kind: str, name: str) -> tuple[ExecutionTraits, bool]:
    """``(traits, declared)``: the declared traits, else the kind's default with ``False``."""
    t = declared_traits(kind, name)
    if t is not None:
        return t, True
    return DEFAULT_TRAITS.get(kind, ExecutionTraits(scope="pool", fusion="barrier")), False
