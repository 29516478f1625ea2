"""TimenetAdapter input policies: entity ids, snap collisions, time range, naive origins."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

import timenet as tn
from kuration import SchemaSpec
from kuration.errors import EntityIdError, SnapCollisionWarning, SourceError, TimeRangeError
from kuration.sources import TimenetAdapter

SCHEMA = SchemaSpec.from_dict({"sample_hz": 125.0, "fields": [{"name": "v", "kind": "scalar"}]})
CARD = {"org": "icu", "name": "vitals", "version": "1.0", "license": "CC0-1.0"}
NAIVE = "2024-03-31T01:00:00"


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Group "p1": an ECG at 250 Hz and a blood pressure at 125 Hz; odd entity ids elsewhere."""
    reg = tmp_path_factory.mktemp("tn") / "reg"
    with tn.TimeFWriter(reg, CARD) as w:
        for ent, rate, n in (("ecg", 250.0, 250), ("bp", 125.0, 125)):
            rid = w.add_record(f"p1-{ent}", {"group": "p1", "entity": ent})
            spec = tn.SignalSpec("float64", "", rate_hz=rate, time_origin=NAIVE)
            w.add_signal(rid, "v", np.arange(n, dtype=np.float64), spec)
        for rid, ent in (
            ("z-a", "0042"),
            ("z-b", 42),
            ("e-a", ""),
            ("e-b", 1.5),
            ("d-a", 7),
            ("w-a", "p7 "),
        ):
            group = rid.split("-")[0]
            w.add_record(rid, {"group": group, "entity": ent})
            spec = tn.SignalSpec("float64", "", rate_hz=125.0)
            w.add_signal(rid, "v", np.ones(3), spec)
        w.add_record("d-b", {"group": "d", "entity": 7})
        w.add_signal("d-b", "v", np.ones(3), tn.SignalSpec("float64", "", rate_hz=125.0))
        late = tn.SignalSpec("float64", "", time_origin="2262-04-11T00:00:00+00:00")
        w.add_record("late", {"group": "late"})
        w.add_signal("late", "v", np.ones(2), late, times=np.array([0, 8_000_000], np.int64))
    return reg


def _adapter(reg: Path, **kw) -> TimenetAdapter:
    return TimenetAdapter(SCHEMA, fields={"v": "v"}, registries=[str(reg)], **kw)


def _src(group: str) -> str:
    return f"timenet://icu/vitals@1.0?group_by=group#{group}"


def test_ecg_at_250_hz_read_at_125_hz_is_counted_and_warned(registry: Path) -> None:
    # step i at i/250 s lands on tick floor(i/2 + 0.5): steps 2j-1 and 2j share tick j, the
    # first and last steps have a tick of their own (half steps go to the later tick)
    with pytest.warns(SnapCollisionWarning, match=r"124 row\(s\) of 1 entity") as rec:
        table = _adapter(registry).read_table(_src("p1"))
    assert rec[0].message.count == 124
    assert table.counts == {"snap_collisions": 124}
    ecg = table.entity_ids.index("ecg")
    assert table.present[:, ecg].sum() == 126


def test_mean_and_raise(registry: Path) -> None:
    table = _adapter(registry, collisions="mean").read_table(_src("p1"))
    ecg = table.entity_ids.index("ecg")
    t = np.arange(250) / 250.0
    k = np.floor(t * 125.0 + 0.5).astype(int)
    want = np.array([np.arange(250)[k == j].mean() for j in range(126)])
    np.testing.assert_allclose(table.values["v"][:, ecg, 0], want)
    with pytest.raises(SourceError, match=r"record 'p1-ecg', field 'v': 124 step"):
        _adapter(registry, collisions="raise").read_table(_src("p1"))
    with pytest.raises(ValueError, match="collisions"):
        _adapter(registry, collisions="drop")


def test_entity_ids_keep_their_json_type(registry: Path) -> None:
    table = _adapter(registry).read_table(_src("z"))
    assert table.entity_ids == (42, "0042")  # int:42 sorts before str:0042; two entities
    assert _adapter(registry, entity_dtype="string").read_table(_src("z")).entity_ids == (
        "0042",
        "42",
    )
    with pytest.raises(EntityIdError, match="same entity id 42"):
        _adapter(registry, entity_dtype="int64").read_table(_src("z"))
    with pytest.raises(EntityIdError, match="records 'd-a' and 'd-b' have the same entity id 7"):
        _adapter(registry).read_table(_src("d"))


@pytest.mark.parametrize(("group", "match"), [("e", r"missing entity id \(''\)")])
def test_missing_ids_name_the_record_and_key(registry: Path, group: str, match: str) -> None:
    with pytest.raises(EntityIdError, match=match) as exc:
        _adapter(registry).read_table(_src(group))
    assert exc.value.column == "entity" and exc.value.source == _src(group)
    with pytest.raises(EntityIdError, match=r"entity id 'p7 ' starts or ends with white space"):
        _adapter(registry).read_table(_src("w"))  # else another entity than 'p7'
    one = _adapter(registry).read_table("timenet://icu/vitals@1.0#z-a")
    assert one.entity_ids == ("0042",)
    with pytest.raises(EntityIdError, match=r"record 'e-b' metadata key 'entity'.*1\.5"):
        _adapter(registry).read_table("timenet://icu/vitals@1.0#e-b")
    assert _adapter(registry, entity_dtype="int64").read_table(
        "timenet://icu/vitals@1.0#z-a"
    ).entity_ids == (42,)


def test_time_past_the_int64_range_names_signal_and_step(registry: Path) -> None:
    ok = _adapter(registry).read_table(_src("late"))
    assert ok.n_steps == 2
    # 2262-04-11T00:00Z + 1 day no longer fits: refused at write time, naming the step
    spec = tn.SignalSpec("float64", "", time_origin="2262-04-11T00:00:00+00:00")
    w = tn.TimeFWriter(registry.parent / "reg2", {**CARD, "name": "late"})
    try:
        w.add_record("r")
        with pytest.raises(tn.SchemaError, match=r"signal 'v'.*step 1 .*int64-nanosecond"):
            w.add_signal("r", "v", np.ones(2), spec, times=np.array([0, 86_400 * 10**9]))
    finally:
        w.abort()
    assert issubclass(TimeRangeError, SourceError)


_CHILD = """
import sys, hashlib
from kuration import SchemaSpec
from kuration.sources import TimenetAdapter
schema = SchemaSpec.from_dict({"sample_hz": 125.0, "fields": [{"name": "v", "kind": "scalar"}]})
ad = TimenetAdapter(schema, fields={"v": "v"}, registries=[sys.argv[1]], collisions="mean")
tab = ad.read_table(sys.argv[2])
print(tab.k0, tab.n_steps, hashlib.sha256(tab.values["v"].tobytes()).hexdigest())
"""


def test_naive_time_origin_is_utc_under_any_machine_zone(registry: Path) -> None:
    outs = []
    for tz in ("UTC", "Asia/Tokyo"):
        res = subprocess.run(
            [sys.executable, "-c", _CHILD, str(registry), _src("p1")],
            env={**os.environ, "TZ": tz},
            capture_output=True,
            text=True,
            check=True,
        )
        outs.append(res.stdout)
    assert outs[0] == outs[1]
    utc = datetime.fromisoformat(NAIVE).replace(tzinfo=UTC).timestamp()
    assert int(outs[0].split()[0]) == round(utc * 125.0)
