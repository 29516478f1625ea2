"""``kur init`` on a LeRobot v3 dataset folder: propose a job that reads it episode by episode.

The proposal:

* rate: the dataset's ``fps``;
* fields: ``state`` (``observation.state``) and ``action`` as vectors, ``gripper``
  (the component named ``gripper``) as a scalar, and one scalar per named state
  component (``state_<name>``) for coverage.  A component is an angle (``angular``,
  in ``deg`` or ``rad``) only when the dataset says so: a ``unit``/``units`` entry
  in the feature, or a name ending in ``_deg``/``.deg``/``_rad``/``.rad``; LeRobot's
  plain names (``shoulder_pan``) give no unit, so they stay plain numbers;
* cameras: one lazy ``media:`` column each, at the feature's shape;
* repairs: every episode is read once; the defects found are listed and the
  repairs they need are proposed (``repair``) so that the job runs, and the note
  says what each repair does;
* strategy: the robot strategy (``examples/lerobot/strategy.json``): the
  episode-quality metrics, a ``whole_source`` filter that keeps out every
  episode with a flagged window, then ``k-center`` over the joints' window
  means (coverage of the state space);
* budget: ``fraction`` of the episodes' hours, a fifth of it for test.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..contracts.schema import SchemaSpec
from ..errors import DataRepairWarning, InitError, KurationError
from ..sources._lerobot_meta import REPAIRS, LeRobotMeta, load_meta
from ..sources.lerobot import LeRobotAdapter
from .init_parts import split_promise

__all__ = ["ROBOT_FILTERS", "ROBOT_METRICS", "compose_lerobot"]

#: the episode-quality metrics the robot strategy computes (kuration.metrics.robot)
ROBOT_METRICS = (
    "ldj_state",
    "jerk_p50_state",
    "jerk_p95_state",
    "static_fraction_action",
    "gripper_chatter_hz",
    "action_state_lag_s",
    "dead_dims_state",
    "spike_z_state",
    "gap_fraction",
)
#: what flags a window (and so its episode): thresholds on those metrics
ROBOT_FILTERS: tuple[dict[str, Any], ...] = (
    {"feature": "static_fraction_action", "op": "<=", "value": 0.9},
    {"feature": "spike_z_state", "op": "<", "value": 30},
    {"feature": "gap_fraction", "op": "==", "value": 0},
    {"feature": "action_state_lag_s", "op": "between", "value": [0, 0.25]},
    {"feature": "gripper_chatter_hz", "op": "<=", "value": 3},
    {"filter": "dedup"},
)
#: the fewest steps a window holds (the spike score needs 7, the lag search more)
MIN_WINDOW_STEPS = 30
_ANGLE = re.compile(r"[._](deg|rad)$")
_TASK = r"_task(\d+)$"


def _names(meta: LeRobotMeta, key: str) -> list[str]:
    names = meta.features[key].get("names")
    if isinstance(names, Mapping):
        names = next(iter(names.values()), None)
    dims = int(meta.features[key].get("shape", [1])[0])
    if isinstance(names, list) and len(names) == dims:
        return [str(n) for n in names]
    return [str(i) for i in range(dims)]


def _angle_unit(meta: LeRobotMeta, key: str, name: str) -> str | None:
    feat = meta.features[key]
    unit = feat.get("unit") or feat.get("units")
    if isinstance(unit, list):
        names = _names(meta, key)
        unit = unit[names.index(name)] if name in names and len(unit) == len(names) else None
    if isinstance(unit, str) and unit.lower() in ("deg", "degree", "degrees", "rad", "radian"):
        return "deg" if unit.lower().startswith("deg") else "rad"
    m = _ANGLE.search(name)
    return m.group(1) if m else None


def _field_name(name: str) -> str:
    return "state_" + re.sub(r"[^0-9A-Za-z_]", "_", name)


def _fields(meta: LeRobotMeta, lines: list[str]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    if "observation.state" not in meta.features:
        raise InitError("kur init needs an observation.state feature", source=meta.root)
    keys = [k for k in ("observation.state", "action") if k in meta.features]
    dims = {k: int(meta.features[k].get("shape", [1])[0]) for k in keys}
    fields: list[dict[str, Any]] = [
        {"name": "state", "kind": "vector", "dims": dims["observation.state"]}
    ]
    mapping: dict[str, Any] = {"state": "observation.state"}
    if "action" in dims:
        fields.append({"name": "action", "kind": "vector", "dims": dims["action"]})
        mapping["action"] = "action"
    names = _names(meta, "observation.state")
    grip = next((n for n in names if "gripper" in n.lower()), None)
    if grip is not None:
        fields.append({"name": "gripper", "kind": "scalar"})
        mapping["gripper"] = f"observation.state[{grip}]"
    lines.append(
        f"fields: state ({dims['observation.state']} components)"
        + (f", action ({dims['action']})" if "action" in dims else ", no action feature")
        + (f", gripper (observation.state[{grip}])" if grip else ", no gripper component")
    )
    for n in names:
        spec: dict[str, Any] = {"name": _field_name(n), "kind": "scalar"}
        unit = _angle_unit(meta, "observation.state", n)
        if unit is not None:
            spec.update(semantics="angular", unit=unit)
        fields.append(spec)
        mapping[spec["name"]] = f"observation.state[{n}]"
        why = f"angle in {unit} (the dataset says so)" if unit else "a number (no unit given)"
        lines.append(f"  {spec['name']}: observation.state[{n}], {why}")
    return fields, mapping


def _cameras(meta: LeRobotMeta) -> dict[str, tuple[str, list[int]]]:
    out = {}
    for key in meta.camera_keys():
        if meta.features[key].get("dtype") != "video":
            continue
        col = re.sub(r"[^0-9A-Za-z_]", "_", key.rsplit(".", 1)[-1])
        out[col] = (key, [int(v) for v in meta.features[key]["shape"]])
    return out


def _repairs(adapter: LeRobotAdapter, root: str, lines: list[str]) -> tuple[list[str], list[str]]:
    """Read the dataset once with every repair allowed: the repairs it needed, and the
    source ids of the episodes a repair left without some camera frames."""
    lost: list[str] = []
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always", DataRepairWarning)
        for uri in adapter.expand(root):
            counts = adapter.read_table(uri).counts
            if any(v for k, v in counts.items() if k.startswith("missing_frames:")):
                lost.append(adapter.source_id(uri))
    found = [w.message for w in rec if isinstance(w.message, DataRepairWarning)]
    for w in found:
        lines.append(f"  defect: {w}")
    needed = sorted({w.repair for w in found})  # type: ignore[attr-defined]  # see _lerobot_meta
    if needed:
        lines.append(
            f"repairs proposed ({', '.join(needed)}): without them kur run refuses the dataset; "
            "each repaired episode is counted in config.json"
        )
    if lost:
        lines.append(
            f"kept out (a source filter): {', '.join(lost)}, whose camera windows lack frames "
            "(vision and state out of step)"
        )
    return needed, lost


#: the fields each flag reads (a flag whose field the dataset lacks is left out)
_NEEDS = {
    "static_fraction_action": "action",
    "action_state_lag_s": "action",
    "gripper_chatter_hz": "gripper",
}


def _strategy(joints: list[dict[str, Any]], have: set[str]) -> dict[str, Any]:
    flags = [dict(e) for e in ROBOT_FILTERS if _NEEDS.get(e.get("feature", ""), "state") in have]
    define = {}
    for f in joints:
        if f.get("semantics") == "angular":
            define[f"{f['name']}_motion"] = f"field:{f['name']} | angle_delta | abs | mean"
        else:
            define[f"{f['name']}_mean"] = f"field:{f['name']} | mean"
    return {
        "name": "robot",
        "define": define,
        "registered": list(ROBOT_METRICS),
        "filters": [{"filter": "whole_source", "where": flags}],
        "method": "k-center",
        "params": {"features": list(define)},
        "tags": {"task": {"source": {"regex": _TASK}}},
        "group": {"regex": _TASK},
        "nan_policy": "lowest",
        "seed": 0,
    }


def compose_lerobot(
    root: Path, *, name: str, fraction: float
) -> tuple[dict[str, Any], list[str], list[str]]:
    """The job, its evidence lines and the fields without a unit, for the dataset at ``root``.

    Raises
    ------
    InitError
        No state or action feature, episodes too short for one window, or a defect no
        repair accepts (time that runs backwards).
    """
    meta = load_meta(str(root))
    lines = [
        f"LeRobot {meta.info.get('codebase_version')} dataset: {len(meta.episodes)} episodes, "
        f"{sum(e.length for e in meta.episodes.values())} frames at {meta.fps} fps, "
        f"robot {meta.info.get('robot_type')!r}, {len(meta.tasks)} task(s)",
        f"sample rate: {meta.fps} Hz (info.json fps)",
    ]
    fields, mapping = _fields(meta, lines)
    cams = _cameras(meta)
    media = {
        c: {"shape": s, "layout": "HWC", "pixel_format": "rgb24", "frame_rate": str(meta.fps)}
        for c, (_, s) in cams.items()
    }
    schema = {
        "name": name,
        "sample_hz": meta.fps,
        "fields": fields,
        **({"media": media} if media else {}),
    }
    adapter: dict[str, Any] = {"type": "lerobot", "fields": mapping}
    if cams:
        adapter["media"] = {c: k for c, (k, _) in cams.items()}
        lines.append(
            f"cameras (lazy media): {', '.join(f'{c} <- {k}' for c, (k, _) in cams.items())}"
        )
    try:
        spec = SchemaSpec.from_dict(schema, what="schema.json")
        probe = LeRobotAdapter(spec, fields=mapping, media=adapter.get("media"), repair=REPAIRS)
        needed, lost = _repairs(probe, str(root), lines)
    except KurationError as exc:
        raise InitError(f"the dataset cannot be read: {exc}", source=str(root)) from exc
    if needed:
        adapter["repair"] = needed
    shortest = min(e.length for e in meta.episodes.values()) / meta.fps
    total_s = sum(e.length for e in meta.episodes.values()) / meta.fps
    # two seconds, and at least MIN_WINDOW_STEPS steps (the metrics need them), within the
    # shortest episode so that every episode is scored
    want = max(2.0, MIN_WINDOW_STEPS / meta.fps)
    window = min(want, float(int(shortest * meta.fps)) / meta.fps)
    test_share = 0.2 if len(meta.episodes) >= 2 else 0.0
    want_h = fraction * total_s / 3600
    budget = {
        "train_hours": float(f"{want_h * (1 - test_share):.2g}"),
        "test_hours": float(f"{want_h * test_share:.2g}") if test_share else 0.0,
    }
    joints = [f for f in fields if f["name"].startswith("state_")]
    strategy = _strategy(joints, set(mapping))
    if lost:
        keep_out = "^(" + "|".join(re.escape(s) for s in lost) + ")$"
        strategy["filters"].insert(0, {"filter": "source", "regex": keep_out, "exclude": True})
    lines += [
        f"windows: {window:g} s, stride {window / 2:g} s (the shortest episode is {shortest:.3g} s)",
        "strategy: the robot strategy: an episode with any flagged window is kept out "
        "(whole_source filter over the episode-quality metrics), then k-center over the "
        "joints' window features fills the budget for coverage",
        f"budget: train {budget['train_hours']:g} h, test {budget['test_hours']:g} h = "
        f"{fraction:.0%} of {total_s / 3600:.3g} h in {len(meta.episodes)} episodes",
    ]
    reqs = [h * 3600 for h in budget.values() if h > 0]
    if reqs:  # the run admits whole episodes
        longest = max(e.length for e in meta.episodes.values()) / meta.fps
        lines.append(f"spans: none (whole episodes); {split_promise(reqs, longest, 'episode')}")
    vectors = {f["name"]: f["dims"] for f in fields if f["kind"] == "vector"}
    output = {
        "shard_length": max(1, round(window * meta.fps)),
        "short_policy": "keep",
        "container": "npz",
        "presence_mask": True,
        "modalities": {
            **{
                k: {"dtype": "float32", "shape": [d], "source": f"field:{k}"}
                for k, d in vectors.items()
            },
            **{
                c: {"dtype": "uint8", "shape": s, "source": f"media:{c}"}
                for c, (_, s) in cams.items()
            },
        },
    }
    job: dict[str, Any] = {
        "name": name,
        "description": f"Written by kur init from the LeRobot dataset {root}.",
        "schema": schema,
        "adapter": adapter,
        "sources": [str(root)],
        "segmenter": {"window": window, "stride": window / 2, "unit": "seconds"},
        "strategy": strategy,
        "output": output,
        "budget": budget,
        "seed": 0,
        "clip_aggregate": "mean",
        "min_track_seconds": window,
    }
    missing = [f["name"] for f in joints if "unit" not in f]
    return job, lines, missing
