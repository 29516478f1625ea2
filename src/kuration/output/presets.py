"""Output presets: named, reusable output policies, validated through :class:`OutputSpec`.

A preset fixes the *policy* part of an output spec -- ``shard_length``,
``short_policy``, ``container``, ``presence_mask`` and, optionally, default
modalities -- so jobs share it by name::

    "output": {"preset": "npz-128-pad", "modalities": {...}}

Keys given next to ``preset`` override the preset's (``modalities`` are
merged, the job's winning per name).  :func:`resolve_output` turns such a
document into a plain :class:`OutputSpec`; a preset is validated when it is
registered, so a bad one fails at import, not in a job.

Built-in presets
----------------
``npz-128-pad``
    128-step NPZ shards, short tails zero-padded, a presence mask: the
    quickstart's policy (``examples/adsb_quickstart/job-preset.json``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ..core.registry import Registry
from ..errors import OutputSpecError
from .spec import OutputSpec

__all__ = ["OutputPreset", "get_preset", "register_preset", "registered_presets", "resolve_output"]

_POLICY_KEYS = ("shard_length", "short_policy", "container", "presence_mask", "modalities")
# a modality that satisfies OutputSpec's own checks, used to validate modality-free presets
_PROBE = {"probe": {"dtype": "float32", "shape": [], "source": "field:probe"}}


@dataclass(frozen=True)
class OutputPreset:
    """A registered output policy.

    Attributes
    ----------
    name : str
    policy : mapping
        A partial OutputSpec document (keys of :data:`_POLICY_KEYS`).
    doc : str
        One line shown by ``kur operators``.
    """

    name: str
    policy: Mapping[str, Any]
    doc: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "policy": dict(self.policy), "doc": self.doc}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> OutputPreset:
        return cls(name=d["name"], policy=dict(d["policy"]), doc=d.get("doc", ""))


_PRESETS: Registry[OutputPreset] = Registry("output preset", builtin="preset")


def _merge(policy: Mapping[str, Any], doc: Mapping[str, Any]) -> dict[str, Any]:
    merged = {**policy, **{k: v for k, v in doc.items() if k not in ("preset", "modalities")}}
    mods = {**dict(policy.get("modalities") or {}), **dict(doc.get("modalities") or {})}
    if mods:
        merged["modalities"] = mods
    return merged


def register_preset(
    name: str, policy: Mapping[str, Any], *, doc: str = "", clobber: bool = False
) -> OutputPreset:
    """Register an output policy under ``name`` after validating it through OutputSpec.

    Raises
    ------
    OutputSpecError
        Keys outside the policy keys, or values OutputSpec rejects.
    RegistrationError
        A ``ValueError``: ``name`` is taken and ``clobber`` is false.
    """
    if not isinstance(policy, Mapping):
        raise OutputSpecError(f"preset {name!r}: a policy is a mapping")
    extra = set(policy) - set(_POLICY_KEYS)
    if extra:
        raise OutputSpecError(
            f"preset {name!r}: unknown keys {sorted(extra)} (allowed: {list(_POLICY_KEYS)})"
        )
    if "shard_length" not in policy:
        raise OutputSpecError(f"preset {name!r} must fix shard_length")
    probe = dict(policy) if policy.get("modalities") else {**policy, "modalities": _PROBE}
    try:
        OutputSpec.from_dict(probe)
    except OutputSpecError as exc:
        raise OutputSpecError(f"preset {name!r}: {exc}") from None
    preset = OutputPreset(name, MappingProxyType(dict(policy)), doc)
    _PRESETS.register(name, preset, clobber=clobber)
    return preset


def get_preset(name: str) -> OutputPreset:
    """The preset registered as ``name`` (raises ``UnknownNameError``, a ``KeyError``)."""
    return _PRESETS.get(name)


def registered_presets() -> tuple[str, ...]:
    """Names of every registered output preset, sorted."""
    return _PRESETS.names()


def resolve_output(doc: Mapping[str, Any] | OutputSpec, *, what: str = "output spec") -> OutputSpec:
    """An :class:`OutputSpec` from ``doc``, expanding ``{"preset": name, ...overrides}``;
    ``what`` names the document in error messages.

    Raises
    ------
    OutputSpecError
        An unknown preset, or a merged document OutputSpec rejects.
    """
    if isinstance(doc, OutputSpec):
        return doc
    if not isinstance(doc, Mapping):
        raise OutputSpecError("output is an object (an OutputSpec document or {'preset': name})")
    if "preset" not in doc:
        return OutputSpec.from_dict(doc, what=what)
    name = doc["preset"]
    try:
        preset = _PRESETS.get(str(name))
    except KeyError as exc:
        raise OutputSpecError(str(exc)) from None
    return OutputSpec.from_dict(_merge(preset.policy, doc), what=what)


register_preset(
    "npz-128-pad",
    {"shard_length": 128, "short_policy": "pad", "container": "npz", "presence_mask": True},
    doc="128-step NPZ shards, short tails zero-padded, with a presence mask",
)
