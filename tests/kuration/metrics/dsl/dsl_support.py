"""Shared schema, window builders and hypothesis strategies for the DSL tests."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from kuration import SchemaSpec, TickTable
from kuration.extend import WindowBuffer

HZ = 2.0

SCHEMA = SchemaSpec.from_dict(
    {
        "name": "toy",
        "sample_hz": HZ,
        "fields": [
            {"name": "pos", "kind": "vector", "dims": 2, "semantics": "position", "unit": "cm"},
            {
                "name": "pos3",
                "kind": "vector",
                "dims": 3,
                "semantics": "position",
                "unit": "m",
                "max_rate": 50.0,
            },
            {
                "name": "geo",
                "kind": "vector",
                "dims": 2,
                "semantics": "position",
                "frame": "geodetic",
                "unit": ["deg", "deg"],
            },
            {"name": "heading", "kind": "scalar", "semantics": "angular", "unit": "deg"},
            {"name": "yaw", "kind": "scalar", "semantics": "angular", "unit": "rad"},
            {"name": "hp", "kind": "scalar", "unit": "m"},
            {"name": "temp", "kind": "scalar", "unit": "degC"},
            {"name": "raw", "kind": "scalar"},
            {
                "name": "buttons",
                "kind": "scalar",
                "semantics": "bitmask",
                "dtype": "uint8",
                "bits": {"fire": 0, "jump": 3},
            },
            {"name": "team", "kind": "categorical", "vocab": ["red", "blue", "green"]},
        ],
        "globals": [
            {"name": "wind", "kind": "scalar", "unit": "m/s"},
            {"name": "phase", "kind": "categorical", "vocab": ["warmup", "live"]},
        ],
        "events": ["goal", "half-time"],
    }
)

FIELDS = {f.name: f for f in SCHEMA.fields}


def random_values(rng: np.random.Generator, t: int, e: int) -> dict[str, np.ndarray]:
    """Plausible random values for every field, shape (T, E, D)."""
    walk = np.cumsum(rng.normal(size=(t, e, 3)) * 3.0, axis=0)
    return {
        "pos": walk[..., :2] * 100.0,
        "pos3": walk,
        "geo": np.stack([48.0 + walk[..., 0] * 1e-4, 2.0 + walk[..., 1] * 1e-4], axis=-1),
        "heading": rng.uniform(0, 360, (t, e, 1)),
        "yaw": rng.uniform(-np.pi, np.pi, (t, e, 1)),
        "hp": np.round(rng.normal(size=(t, e, 1)) * 10, 1),
        "temp": rng.normal(20, 5, (t, e, 1)),
        "raw": rng.integers(-2, 3, (t, e, 1)).astype(float),
        "buttons": rng.integers(0, 16, (t, e, 1)).astype(float),
        "team": rng.integers(0, 3, (t, e, 1)).astype(float),
    }


def make_buf(
    values: dict[str, np.ndarray],
    present: np.ndarray,
    *,
    globals_: dict[str, np.ndarray] | None = None,
    events: dict[str, np.ndarray] | None = None,
    ids: tuple | None = None,
) -> WindowBuffer:
    """A WindowBuffer over ``present`` (T, E); absent samples become NaN, fields not given are 0."""
    t, e = present.shape
    full = {}
    for f in SCHEMA.fields:
        v = np.asarray(values.get(f.name, np.zeros((t, e, f.dims))), dtype=np.float64)
        full[f.name] = np.where(present[..., None], v, np.nan)
    glob = {
        "wind": np.zeros((t, 1)),
        "phase": np.zeros((t, 1)),
        **(globals_ or {}),
    }
    ev = {"goal": np.zeros(t, bool), "half-time": np.zeros(t, bool), **(events or {})}
    return WindowBuffer(full, present, ids or tuple(range(e)), SCHEMA, glob, ev)


def make_table(
    values: dict[str, np.ndarray],
    present: np.ndarray,
    *,
    globals_: dict[str, np.ndarray] | None = None,
    events: dict[str, np.ndarray] | None = None,
    ids: tuple | None = None,
) -> TickTable:
    buf = make_buf(values, present, globals_=globals_, events=events, ids=ids)
    return TickTable(
        "toy", SCHEMA, 0, buf.entity_ids, buf.values, buf.present, buf.globals, buf.events
    )


def valid_of(buf: WindowBuffer, name: str) -> np.ndarray:
    return buf.present & ~np.isnan(buf.values[name]).any(axis=-1)


@st.composite
def windows(draw: st.DrawFn, max_t: int = 24, max_e: int = 4, min_e: int = 0) -> WindowBuffer:
    """A random window: shape, presence pattern, NaN holes and values."""
    t = draw(st.integers(1, max_t))
    e = draw(st.integers(min_e, max_e))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    p_absent = draw(st.sampled_from([0.0, 0.2, 0.6, 1.0]))
    present = rng.random((t, e)) >= p_absent
    vals = random_values(rng, t, e)
    p_hole = draw(st.sampled_from([0.0, 0.15]))
    for k, v in vals.items():
        holes = rng.random((t, e)) < p_hole
        vals[k] = np.where(holes[..., None], np.nan, v)
    wind = np.where(rng.random((t, 1)) < p_hole, np.nan, rng.normal(5, 2, (t, 1)))
    phase = rng.integers(0, 2, (t, 1)).astype(float)
    goal = rng.random(t) < 0.3
    return make_buf(vals, present, globals_={"wind": wind, "phase": phase}, events={"goal": goal})
