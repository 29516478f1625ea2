"""Synthetic scored pools for selection tests (features are drawn, not computed)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from kuration import SchemaSpec, Segment, Strategy, load_strategy

SCHEMA = SchemaSpec.from_dict(
    {
        "name": "synthetic",
        "sample_hz": 1.0,
        "fields": [
            {"name": "x", "kind": "scalar"},
            {"name": "y", "kind": "scalar"},
            {"name": "z", "kind": "scalar"},
        ],
    }
)
DEFINE = {"a": "field:x | mean", "b": "field:y | mean", "c": "field:z | p90"}


def strategy(**spec: Any) -> Strategy:
    """A strategy over the synthetic features ``a``, ``b``, ``c``."""
    return load_strategy({"name": "t", "define": DEFINE, **spec}, SCHEMA)


def make_pool(
    n: int, seed: int = 0, n_sources: int = 4, nan_frac: float = 0.0, lengths: bool = False
) -> list[Segment]:
    """``n`` segments over ``n_sources`` sources with normal features (a NaN in ``a`` with
    probability ``nan_frac``); ``lengths`` makes ``c`` grow with the source index."""
    rng = np.random.default_rng(seed)
    segs = []
    for i in range(n):
        src = i % n_sources
        f = {"a": float(rng.normal()), "b": float(rng.normal()), "c": float(rng.normal())}
        if lengths:
            f["c"] = float(src + rng.random())
        if rng.random() < nan_frac:
            f["a"] = math.nan
        segs.append(Segment(f"src{src}", 30 * (i // n_sources), 30 * (i // n_sources) + 60, f))
    return segs
