"""Parts of the job ``kur init`` writes that every kind of input shares: strategy, adapter."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import InitError
from .guess import FieldGuess
from .inventory import Inventory

__all__ = ["adapter_options", "split_promise", "starter_strategy"]


def split_promise(requests_s: Sequence[float], unit_s: float, unit: str) -> str:
    """What init can promise about how close each split lands to its request.

    The run admits whole units (spans, or whole tracks without spans), so a split overshoots
    its request by less than one unit; ``kur run`` warns past
    :data:`~kuration.selection.fill.BUDGET_TOLERANCE`.  The promise is made only when the
    longest unit (``unit_s``, seconds) is within that share of the smallest request.
    """
    from ..selection.fill import BUDGET_TOLERANCE as tol

    smallest = min(requests_s)
    if unit_s <= tol * smallest:
        return f"each split lands within {tol:.0%} of its request"
    return (
        f"a split may overshoot its request by up to one {unit} ({unit_s:.3g} s, "
        f"+{unit_s / smallest:.0%} of the smallest request, {smallest:.3g} s), and kur run "
        f"warns about it; requests of at least {unit_s / tol:.3g} s each (a larger --fraction "
        f"or more data) land within {tol:.0%}"
    )


def starter_strategy(
    fields: Sequence[FieldGuess], entity: bool
) -> tuple[dict[str, Any], list[str]]:
    define: dict[str, str] = {}
    pos = next((f for f in fields if f.spec.get("semantics") == "position"), None)
    ang = next((f for f in fields if f.spec.get("semantics") == "angular"), None)
    if pos is not None:
        define["speed_p90"] = f"field:{pos.name} | speed | p90"
    if ang is not None:
        define["turn_p90"] = f"field:{ang.name} | angle_delta | abs | p90"
    scalars = [
        f
        for f in fields
        if f.spec["kind"] == "scalar" and "semantics" not in f.spec and f.output["dtype"] != "uint8"
    ]
    for f in scalars[: max(0, 3 - len(define))]:
        define[f"{f.name}_std"] = f"field:{f.name} | std"
    if pos is not None and len(define) < 2:
        define["speed_std"] = f"field:{pos.name} | speed | std"
    if pos is not None and entity:
        define["entities_mean"] = f"field:{pos.name} | speed | entities:count | mean"
    if not define:
        raise InitError(
            "no numeric field to score: kur init needs a position, an angle or a numeric column"
        )
    axes = [k for k in define if k != "entities_mean"][:2]
    strategy = {
        "name": "starter",
        "define": define,
        "bin": {"axes": axes, "n_bins": 3},
        "method": "uniform-bins",
        "nan_policy": "exclude",
        "seed": 0,
    }
    return strategy, axes


def adapter_options(inv: Inventory, fields: Sequence[FieldGuess], out: Path) -> dict[str, Any]:
    """The job's ``adapter``: timenet or timeseries, with the inventory's columns and policies.

    ``out`` is the job file's folder: local registries are written relative to it."""
    mapping = {f.name: (list(f.columns) if len(f.columns) > 1 else f.columns[0]) for f in fields}
    if inv.kind == "timenet":
        ad: dict[str, Any] = {
            "type": "timenet",
            "fields": {
                k: {"signals": v if isinstance(v, list) else [v]} for k, v in mapping.items()
            },
        }
        if inv.registries:
            ad["registries"] = inv.job_registries(out)
    else:
        ad = {"type": "timeseries", "time_column": str(inv.time_column)}
        if inv.time_unit:
            ad["time_unit"] = inv.time_unit
        if inv.time_format:
            ad["time_format"] = inv.time_format
        if inv.entity_column:
            ad["entity_column"] = inv.entity_column
        ad["fields"] = mapping
        if inv.duplicates:
            ad["duplicates"] = "first"
    if inv.irregular:
        ad["collisions"] = "mean"
    return ad


def starter_job(
    inv: Inventory,
    out: Path,
    *,
    name: str,
    fields: Sequence[FieldGuess],
    hz: float,
    axes: Sequence[str],
    adapter: dict[str, Any],
    segmenter: dict[str, Any],
    strategy: dict[str, Any],
    budget: dict[str, float],
    shard_length: int,
    min_track_s: float,
) -> dict[str, Any]:
    """The job ``kur init`` writes, in the key order of the files it wrote before: schema
    from the fields, npz shards padded to ``shard_length`` with the first bin axis as a
    ``segment:`` modality, the starter strategy and a seeded, mean-aggregated hours fill."""
    output = {
        "shard_length": shard_length,
        "short_policy": "pad",
        "container": "npz",
        "presence_mask": True,
        "modalities": {
            **{f.name: f.output for f in fields},
            axes[0]: {"dtype": "float32", "shape": [], "source": f"segment:{axes[0]}"},
        },
    }
    return {
        "name": name,
        "description": f"Written by kur init from {', '.join(inv.job_sources(out))}.",
        "schema": {"name": name, "sample_hz": hz, "fields": [f.spec for f in fields]},
        "adapter": adapter,
        "sources": inv.job_sources(out),
        "segmenter": segmenter,
        "strategy": strategy,
        "output": output,
        "budget": budget,
        "seed": 0,
        "clip_aggregate": "mean",
        "min_track_seconds": min_track_s,
    }
