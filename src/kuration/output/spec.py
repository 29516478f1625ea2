"""OutputSpec: what each timestep of a shard holds and where it comes from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..contracts.schema import SchemaSpec
from ..core.config import OutputModel, validate_config
from ..core.units import parse_unit
from ..errors import OutputSpecError
from .containers import container_can

__all__ = ["ModalitySpec", "OutputSpec"]

_ROUTES = ("field", "segment", "encoder", "media")
LAYOUTS = ("files", "packed", "lerobot")

# one set of defaults: the output spec file's model (core/config.py) is where they live
_DEFAULTS = {name: f.default for name, f in OutputModel.model_fields.items() if not f.is_required()}
TARGET_FILE_BYTES: int = _DEFAULTS["target_file_bytes"]
ROW_GROUP_BYTES: int = _DEFAULTS["row_group_bytes"]
_POLICIES = ("keep", "pad", "drop")
OVERFLOW_POLICIES = ("error", "saturate")
ROUNDING_POLICIES = ("error", "round", "floor", "ceil", "trunc")


@dataclass(frozen=True)
class ModalitySpec:
    """One output modality: ``dtype``, per-timestep ``shape`` and a ``source`` route
    (``field:<name>``, ``segment:<feature>``, ``encoder:<hook>`` or ``media:<column>``;
    a media modality is ``uint8`` of the column's decoded ``[H, W, C]``).

    Parameters
    ----------
    overflow : {"error", "saturate"}
        A value of a present step outside the dtype's range (integer bounds, or
        the largest finite value of a float dtype) raises
        :class:`~kuration.errors.OutputValueError` (``error``, the default) or is
        clipped to the nearest bound (``saturate``).
    rounding : {"error", "round", "floor", "ceil", "trunc"}
        Integer and bool dtypes: a non-integral value raises (``error``, the
        default) or is rounded (``round`` is half to even, :func:`numpy.rint`),
        before the range check.
    unit : str or tuple of str, optional
        The values' unit (pint syntax), one for every component or one per
        component.  Unset, a ``field:`` modality takes its schema field's unit
        and an ``encoder:`` modality the encoder's ``units[hook]`` (see
        :meth:`OutputSpec.units`).
    """

    name: str
    dtype: str
    shape: tuple[int, ...]
    source: str
    overflow: str = "error"
    rounding: str = "error"
    unit: str | tuple[str, ...] | None = None

    @property
    def route(self) -> str:
        return self.source.partition(":")[0]

    @property
    def arg(self) -> str:
        return self.source.partition(":")[2]

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"dtype": self.dtype, "shape": list(self.shape), "source": self.source}
        if self.overflow != "error":  # defaults stay out, so existing configs are unchanged
            d["overflow"] = self.overflow
        if self.rounding != "error":
            d["rounding"] = self.rounding
        if self.unit is not None:
            d["unit"] = self.unit if isinstance(self.unit, str) else list(self.unit)
        return d


def _check_unit(m: ModalitySpec) -> None:
    if m.unit is None:
        return
    units = (m.unit,) if isinstance(m.unit, str) else tuple(m.unit)
    if not isinstance(m.unit, str) and (not m.shape or len(units) != m.shape[-1]):
        raise OutputSpecError(
            f"modality {m.name!r}: {len(units)} units given for shape {list(m.shape)} "
            "(give one unit, or one per component of the last axis)"
        )
    for u in units:
        try:
            parse_unit(u)
        except ValueError:
            raise OutputSpecError(f"modality {m.name!r}: unknown unit {u!r}") from None


@dataclass(frozen=True)
class OutputSpec:
    """Declarative description of the shards.

    Parameters
    ----------
    shard_length : int
        Timesteps per shard (default 64, as in an output spec file: every default here is
        :class:`~kuration.core.config.OutputModel`'s).
    short_policy : {"keep", "pad", "drop"}
        Tail handling: keep a shorter last shard, pad it with zero rows (the
        real length is stored), or drop it.
    container : str
        Registered container name (``npz``).
    presence_mask : bool
        Emit ``_present`` (bool, per timestep): false where the entity is absent.
    modalities : mapping of str to ModalitySpec
    layout : {"files", "packed", "lerobot"}
        One file per shard, shards packed into Parquet files per split
        (:mod:`kuration.output.packed`), or a LeRobot v3 folder
        (:mod:`kuration.output.lerobot`; numeric modalities and RGB cameras, presence
        mask on); the
        last two need ``container="parquet"``.
    target_file_bytes, row_group_bytes : int
        ``packed``: close a file (a row group) once its rows hold this many
        fixed-width bytes (uncompressed); ``lerobot``: close a data file once its
        rows hold ``target_file_bytes`` (Arrow bytes).

    Raises
    ------
    OutputSpecError
        On any invalid value (checked at construction).
    """

    shard_length: int = _DEFAULTS["shard_length"]
    modalities: Mapping[str, ModalitySpec] = field(default_factory=dict)  # required: checked
    short_policy: str = _DEFAULTS["short_policy"]
    container: str = _DEFAULTS["container"]
    presence_mask: bool = _DEFAULTS["presence_mask"]
    extra: Mapping[str, Any] = field(default_factory=dict)
    layout: str = _DEFAULTS["layout"]
    target_file_bytes: int = TARGET_FILE_BYTES
    row_group_bytes: int = ROW_GROUP_BYTES

    def __post_init__(self) -> None:
        self._check_layout()
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
            if m.overflow not in OVERFLOW_POLICIES:
                raise OutputSpecError(
                    f"modality {name!r}: overflow must be one of {OVERFLOW_POLICIES}, "
                    f"got {m.overflow!r}"
                )
            if m.rounding not in ROUNDING_POLICIES:
                raise OutputSpecError(
                    f"modality {name!r}: rounding must be one of {ROUNDING_POLICIES}, "
                    f"got {m.rounding!r}"
                )
            _check_unit(m)
            if m.rounding != "error" and np.dtype(m.dtype).kind == "f":
                raise OutputSpecError(
                    f"modality {name!r}: rounding applies to integer and bool dtypes, "
                    f"not {m.dtype!r}"
                )

    def _check_layout(self) -> None:
        if self.layout not in LAYOUTS:
            raise OutputSpecError(f"layout must be one of {LAYOUTS}, got {self.layout!r}")
        for key in ("target_file_bytes", "row_group_bytes"):
            v = getattr(self, key)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise OutputSpecError(f"{key} must be a positive integer, got {v!r}")
        if self.layout == "files":
            if (self.target_file_bytes, self.row_group_bytes) != (
                TARGET_FILE_BYTES,
                ROW_GROUP_BYTES,
            ):
                raise OutputSpecError(
                    "target_file_bytes and row_group_bytes apply to layout 'packed' only"
                )
            return
        if not _packs(self.container):
            raise OutputSpecError(
                f"layout {self.layout!r} writes Parquet files: container must be 'parquet', "
                f"got {self.container!r} (npz and other per-file containers need layout 'files')"
            )

        if self.layout == "lerobot":
            cams = [k for k, m in self.modalities.items() if m.route == "media"]
            bad = [
                k
                for k in cams
                if self.modalities[k].dtype != "uint8"
                or len(self.modalities[k].shape) != 3
                or self.modalities[k].shape[2] != 3
            ]
            if bad:
                raise OutputSpecError(
                    f"layout 'lerobot' writes media modalities as RGB cameras: {bad} must be "
                    "uint8 of shape [H, W, 3]"
                )
            if not self.presence_mask:
                raise OutputSpecError(
                    "layout 'lerobot' needs presence_mask=true: it checks that every frame "
                    "of an episode holds a value"
                )

    @property
    def lerobot(self) -> bool:
        """Whether the dataset is written as a LeRobot v3 folder (``layout="lerobot"``)."""
        return self.layout == "lerobot"

    @property
    def shared_files(self) -> bool:
        """Whether shards live in files shared by many (``packed`` or ``lerobot``), written
        in the lead process to a local folder."""
        return self.layout in ("packed", "lerobot")

    @property
    def packed(self) -> bool:
        """Whether shards are packed into shared Parquet files (``layout="packed"``)."""
        return self.layout == "packed"

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, what: str = "output spec") -> OutputSpec:
        """Build from the JSON form, checked by :class:`~kuration.core.config.OutputModel` (strict
        types, unknown keys rejected, each error naming its key path).

        Raises
        ------
        OutputSpecError
        """
        return cls.from_model(validate_config(OutputModel, d, kind="output", what=what))

    @classmethod
    def from_model(cls, m: OutputModel) -> OutputSpec:
        """Build from a validated :class:`~kuration.core.config.OutputModel` (every key of a
        modality is a :class:`ModalitySpec` attribute of the same name).

        Raises
        ------
        OutputSpecError
            On values that are invalid together (routes, dtypes, reserved names), or a
            ``preset`` key (presets are expanded by ``resolve_output`` first).
        """
        if m.preset is not None:
            raise OutputSpecError(
                f"output names the preset {m.preset!r}: expand it with "
                "kuration.output.presets.resolve_output (job files do this)"
            )
        mods = {
            name: ModalitySpec(
                name=name,
                **{
                    **dict(mm),
                    "shape": tuple(mm.shape),
                    "unit": mm.unit if not isinstance(mm.unit, list) else tuple(mm.unit),
                },
            )
            for name, mm in m.modalities.items()
        }
        packed = m.layout in ("packed", "lerobot")
        return cls(
            shard_length=m.shard_length,
            modalities=mods,
            short_policy=m.short_policy,
            # a packed layout writes Parquet: that is its container unless one is named
            container="parquet"
            if packed and "container" not in m.model_fields_set
            else m.container,
            presence_mask=m.presence_mask,
            layout=m.layout,
            target_file_bytes=m.target_file_bytes,
            row_group_bytes=m.row_group_bytes,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "shard_length": self.shard_length,
            "short_policy": self.short_policy,
            "container": self.container,
            "presence_mask": self.presence_mask,
            "modalities": {k: m.to_dict() for k, m in self.modalities.items()},
            # the default layout stays out, so existing configs and fingerprints are unchanged
            **(
                {
                    "layout": self.layout,
                    "target_file_bytes": self.target_file_bytes,
                    "row_group_bytes": self.row_group_bytes,
                }
                if self.shared_files
                else {}
            ),
        }

    def units(self, schema: SchemaSpec | None, encoder: Any = None) -> dict[str, Any]:
        """Each modality's unit: a pint string, a list (one per component) or None.

        The modality's own ``unit`` wins; else a ``field:`` modality takes the
        schema field's unit and an ``encoder:`` modality ``encoder.units[hook]``
        (or ``[name]``) when the encoder has a ``units`` mapping.  A list whose
        entries are all equal collapses to one string.  ``segment:`` features
        have no unit unless declared.
        """
        enc_units = getattr(encoder, "units", None)
        out: dict[str, Any] = {}
        for name, m in self.modalities.items():
            unit: Any = m.unit
            if unit is None and m.route == "field" and schema is not None:
                try:
                    unit = schema.field(m.arg).unit
                except KeyError:
                    unit = None
            if unit is None and m.route == "encoder" and isinstance(enc_units, Mapping):
                unit = enc_units.get(m.arg, enc_units.get(name))
            if isinstance(unit, (list, tuple)):
                unit = [str(u) for u in unit]
                unit = unit[0] if unit and len(set(unit)) == 1 else unit
            out[name] = unit
        return out

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


def _packs(container: str) -> bool:
    """Whether ``container`` declares the ``packs`` capability (an unknown name: no; the
    container check names it)."""
    try:
        return container_can(container, "packs")
    except KeyError:
        return False
