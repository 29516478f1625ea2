"""The generic tick builder: missing entity ids and times outside int64 ns are errors."""

from __future__ import annotations

import pytest

from kuration import SchemaSpec
from kuration.contracts.tick import Tick, table_from_ticks
from kuration.errors import EntityIdError, SourceError, TimeRangeError

SCHEMA = SchemaSpec.from_dict({"sample_hz": 1.0, "fields": [{"name": "v", "kind": "scalar"}]})


def _ticks(ids: list, times: list[float] | None = None) -> list[Tick]:
    times = times or [float(i) for i in range(len(ids))]
    return [Tick(time=t, entities={e: {"v": 1.0}}) for t, e in zip(times, ids, strict=True)]


@pytest.mark.parametrize("bad", [None, "", "  ", float("nan"), 1.5j])
def test_missing_or_uncanonical_ids_name_the_source_and_tick(bad) -> None:
    with pytest.raises(EntityIdError, match=r"^gen, row 1: ") as exc:
        table_from_ticks(SCHEMA, _ticks(["a", bad]), "gen")
    assert exc.value.source == "gen" and exc.value.row == 1


def test_ids_keep_their_type() -> None:
    table = table_from_ticks(SCHEMA, _ticks(["007", "7", 7]), "gen")
    assert table.entity_ids == (7, "007", "7")


@pytest.mark.parametrize("t", [1e10, -1e10, 9.3e9])
def test_times_outside_int64_nanoseconds(t: float) -> None:
    with pytest.raises(TimeRangeError, match=r"row 1: tick time") as exc:
        table_from_ticks(SCHEMA, _ticks(["a", "a"], [0.0, t]), "g")
    assert isinstance(exc.value, SourceError)


def test_a_repeated_tick_is_refused_not_dropped() -> None:
    with pytest.raises(SourceError, match="strictly increase"):
        table_from_ticks(SCHEMA, _ticks(["a", "a"], [1.0, 1.0]), "gen")


def test_ticks_at_the_half_step_go_to_the_later_grid_point() -> None:
    # Python's round() is half to even: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2 refused the third tick
    ticks = _ticks(["a"] * 4, [0.5, 1.5, 2.5, 3.5])
    table = table_from_ticks(SCHEMA, ticks, "gen", snap_tolerance=0.5)
    assert table.k0 == 1 and table.present[:, 0].tolist() == [True] * 4
