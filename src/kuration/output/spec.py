"""OutputSpec: what each timestep of a shard holds and where it comes from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..contracts.schema import SchemaSpec
from ..errors import OutputSpecError

__all__ = ["ModalitySpec", "OutputSpec"]

_ROUTES = ("field", "segment", "encoder", "media")
_POLICIES = ("keep", "pad", "drop")


@dataclass(frozen=True)
class ModalitySpec:
    """One output modality: ``dtype``, per-timestep ``shape`` and a ``source`` route
    (``field:<name>``, ``segment:<feature>``, ``encoder:<hook>`` or ``media:<column>``;
    a media modality is ``uint8`` of the column's decoded ``[H, W, C]``)."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    source: str

    @property
    def route(self) -> str:
        return self.source.partition(":")[0]

    @property
    def arg(self) -> str:
        return self.source.partition(":")[2]

    def to_dict(self) -> dict[str, Any]:
        return {"dtype": self.dtype, "shape": list(self.shape), "source": self.source}


@dataclass(frozen=True)
class OutputSpec:
    """Declarative description of the shards.

    Parameters
    ----------
    shard_length : int
        Timesteps per shard.
    short_policy : {"keep", "pad", "drop"}
        Tail handling: keep a shorter last shard, pad it with zero rows (the
        real length is stored), or drop it.
    container : str
        Registered container name (``npz``).
    presence_mask : bool
        Emit ``_present`` (bool, per timestep): false where the entity is absent.
    modalities : mapping of str to ModalitySpec

    Raises
    ------
    OutputSpecError
        On any invalid value (checked at construction).
    """

    shard_length: int
    modalities: Mapping[str, ModalitySpec]
    short_policy: str = "keep"
    container: str = "npz"
    presence_mask: bool = True
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if (
            not isinstance(self.shard_length, int)
            or isinstance(self.shard_length, bool)
            or self.shard_length < 1
        ):
            raise OutputSpecError(
                f"shard_length must be a positive integer, got {self.shard_length!r}"
            )
        if self.short_policy not in _POLICIES:
            raise OutputSpecError(
                f"short_policy must be one of {_POLICIES}, got {self.short_policy!r}"
            )
        if not self.modalities:
            raise OutputSpecError("an OutputSpec needs at least one modality")
        for name, m in self.modalities.items():
            if name.startswith("_"):
                raise OutputSpecError(f"modality {name!r}: names starting with '_' are reserved")
            if m.route not in _ROUTES or not m.arg:
                raise OutputSpecError(
                    f"modality {name!r}: source must be field:/segment:/encoder:/media:<name>, "
                    f"got {m.source!r}"
                )
            if m.route == "media" and m.dtype != "uint8":
                raise OutputSpecError(
                    f"modality {name!r}: media frames are uint8, got dtype {m.dtype!r}"
                )
            try:
                np.dtype(m.dtype)
            except TypeError:
                raise OutputSpecError(f"modality {name!r}: unknown dtype {m.dtype!r}") from None
            if np.dtype(m.dtype).kind not in "biuf":
                raise OutputSpecError(
                    f"modality {name!r}: dtype must be bool, integer or float, got {m.dtype!r}"
                )

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> OutputSpec:
        """Build from the JSON form (see the output docs).

        Raises
        ------
        OutputSpecError
        """
        if not isinstance(d, Mapping):
            raise OutputSpecError("an output spec must be an object")
        known = {"shard_length", "short_policy", "container", "presence_mask", "modalities"}
        extra = set(d) - known
        if extra:
            raise OutputSpecError(f"unknown output spec keys {sorted(extra)}")
        mods_in = d.get("modalities")
        if not isinstance(mods_in, Mapping):
            raise OutputSpecError("output spec 'modalities' must be an object")
        mods: dict[str, ModalitySpec] = {}
        for name, m in mods_in.items():
            if (
                not isinstance(m, Mapping)
                or set(m) - {"dtype", "shape", "source"}
                or "source" not in m
            ):
                raise OutputSpecError(f"modality {name!r} is {{'dtype', 'shape', 'source'}}")
            shape = m.get("shape", [])
            if not isinstance(shape, list | tuple) or not all(
                isinstance(s, int) and s > 0 for s in shape
            ):
                raise OutputSpecError(
                    f"modality {name!r}: shape must be a list of positive integers"
                )
            mods[name] = ModalitySpec(
                name, str(m.get("dtype", "float32")), tuple(shape), str(m["source"])
            )
        presence = d.get("presence_mask", True)
        if not isinstance(presence, bool):
            raise OutputSpecError("presence_mask must be true or false")
        return cls(
            shard_length=d.get("shard_length", 64),
            modalities=mods,
            short_policy=d.get("short_policy", "keep"),
            container=d.get("container", "npz"),
            presence_mask=presence,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "shard_length": self.shard_length,
            "short_policy": self.short_policy,
            "container": self.container,
            "presence_mask": self.presence_mask,
            "modalities": {k: m.to_dict() for k, m in self.modalities.items()},
        }

    def validate_against(
        self, schema: SchemaSpec, features: tuple[str, ...] = (), *, has_encoder: bool = False
    ) -> None:
        """Check every route against the schema and the strategy's features (preflight).

        Raises
        ------
        OutputSpecError
            A field that does not exist or whose dims disagree with ``shape``,
            a segment feature the strategy does not define, an encoder route
            without an encoder, a media route to a column the schema does not
            declare or whose decoded shape differs from ``shape``.
        """
        for name, m in self.modalities.items():
            if m.route == "field":
                try:
                    f = schema.field(m.arg)
                except KeyError:
                    raise OutputSpecError(
                        f"modality {name!r}: schema has no field {m.arg!r}"
                    ) from None
                want = () if f.dims == 1 else (f.dims,)
                if m.shape not in (want, (f.dims,)):
                    raise OutputSpecError(
                        f"modality {name!r}: field {m.arg!r} has {f.dims} component(s), "
                        f"shape {list(m.shape)} does not fit"
                    )
            elif m.route == "segment":
                if features and m.arg not in features:
                    raise OutputSpecError(
                        f"modality {name!r}: the strategy defines no feature {m.arg!r}"
                    )
                if m.shape:
                    raise OutputSpecError(
                        f"modality {name!r}: a segment feature is a scalar (shape [])"
                    )
            elif m.route == "media":
                try:
                    media = schema.media_column(m.arg)
                except KeyError:
                    raise OutputSpecError(
                        f"modality {name!r}: schema has no media column {m.arg!r}"
                    ) from None
                if m.shape != media.shape:
                    raise OutputSpecError(
                        f"modality {name!r}: media column {m.arg!r} decodes to "
                        f"{list(media.shape)}, shape {list(m.shape)} does not match"
                    )
            elif m.route == "encoder" and not has_encoder:
                raise OutputSpecError(f"modality {name!r}: encoder: routes need an OutputEncoder")
