"""An entity's part of a checked table (:meth:`TickTable.view`, used by track-scoped scoring)
equals that part built as a new table (the checks run again), and shares the arrays."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kuration import SchemaSpec, TickTable
from kuration.contracts.buffer import entity_columns, entity_table
from kuration.errors import KurationError

SCHEMA = SchemaSpec.from_dict(
    {
        "sample_hz": 2.0,
        "fields": [
            {
                "name": "pos",
                "kind": "vector",
                "dims": 2,
                "semantics": "position",
                "frame": "geodetic",
                "unit": ["deg", "deg"],
            },
            {"name": "alt", "kind": "scalar", "missing_value": -1.0, "valid_max": 900.0},
            {"name": "n", "kind": "scalar", "dtype": "int64", "missing_value": 7},
        ],
        "globals": [{"name": "wind", "kind": "scalar", "valid_min": 0.0}],
        "events": ["gust"],
    }
)


def _table(seed: int, n_t: int, n_e: int) -> TickTable:
    rng = np.random.default_rng(seed)
    pos = np.stack([rng.uniform(-80, 80, (n_t, n_e)), rng.uniform(-170, 350, (n_t, n_e))], -1)
    alt = rng.choice([-1.0, 10.0, 500.0, 950.0, np.nan], (n_t, n_e, 1))
    n = rng.integers(0, 10, (n_t, n_e, 1))
    wind = rng.choice([-2.0, 3.0, np.nan], (n_t, 1))
    return TickTable(
        "src",
        SCHEMA,
        int(rng.integers(-5, 5)),
        tuple(f"ac{i}" for i in range(n_e)),
        {"pos": pos, "alt": alt, "n": n.astype(np.float64)},
        rng.random((n_t, n_e)) < 0.7,
        {"wind": wind},
        {"gust": rng.random(n_t) < 0.3},
        {"snap_collisions": 2},
        {"n": n},
    )


def _rebuilt(t: TickTable, start: int, stop: int, e: int) -> TickTable:
    """The part as a new table: every check and mask of the constructor applied again."""
    sl = slice(start, stop)
    return TickTable(
        t.source_id,
        t.schema,
        t.k0 + start,
        (t.entity_ids[e],),
        {k: v[sl, e : e + 1] for k, v in t.values.items()},
        t.present[sl, e : e + 1],
        {k: v[sl] for k, v in t.globals.items()},
        {k: v[sl] for k, v in t.events.items()},
        t.counts,
        {k: v[sl, e : e + 1] for k, v in t.ints.items()},
    )


def _same(a: TickTable, b: TickTable) -> None:
    assert (a.source_id, a.k0, a.entity_ids, dict(a.counts)) == (
        b.source_id,
        b.k0,
        b.entity_ids,
        dict(b.counts),
    )
    np.testing.assert_array_equal(a.present, b.present)
    for got, want in ((a.values, b.values), (a.globals, b.globals), (a.events, b.events)):
        assert got.keys() == want.keys()
        for k in got:
            np.testing.assert_array_equal(got[k], want[k])
    assert a.ints.keys() == b.ints.keys()
    for k in a.ints:
        assert a.ints[k].dtype == b.ints[k].dtype
        np.testing.assert_array_equal(a.ints[k], b.ints[k])


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    n_t=st.integers(1, 30),
    n_e=st.integers(1, 6),
    data=st.data(),
)
def test_an_entity_view_equals_the_part_rebuilt_and_checked(
    seed: int, n_t: int, n_e: int, data: st.DataObject
) -> None:
    t = _table(seed, n_t, n_e)
    start = data.draw(st.integers(0, n_t - 1))
    stop = data.draw(st.integers(start + 1, n_t))
    e = data.draw(st.integers(0, n_e - 1))
    want = _rebuilt(t, start, stop, e)
    _same(entity_table(t, f"str:ac{e}", start, stop), want)
    _same(entity_table(t, f"str:ac{e}", start, stop, entity_columns(t)), want)


def test_a_view_shares_the_tables_arrays() -> None:
    t = _table(1, 12, 3)
    v = entity_table(t, "str:ac1", 2, 9, entity_columns(t))
    assert v.n_steps == 7 and v.n_entities == 1 and v.media == {}
    for k in t.values:
        assert np.shares_memory(v.values[k], t.values[k])
    assert np.shares_memory(v.present, t.present)
    assert np.shares_memory(v.ints["n"], t.ints["n"])


@pytest.mark.parametrize("columns", [False, True])
def test_an_entity_not_in_the_roster_is_named(columns: bool) -> None:
    t = _table(2, 5, 2)
    with pytest.raises(KurationError, match="no entity 'str:zz' in the source's roster"):
        entity_table(t, "str:zz", 0, 5, entity_columns(t) if columns else None)
