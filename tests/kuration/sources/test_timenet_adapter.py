"""TimenetAdapter: TimeNet versions as tick tables, sources as timenet:// references."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import timenet as tn
from kuration import SchemaSpec
from kuration.errors import SnapCollisionWarning, SourceError
from kuration.sources import TimenetAdapter, adapter_from_dict
from kuration.sources.timenet import expand_source, parse_source

ROOT = Path(__file__).resolve().parents[3]
FOOTBALL = ROOT / "examples" / "football"

SCHEMA = SchemaSpec.from_dict(
    {
        "name": "pitch",
        "sample_hz": 10.0,
        "fields": [
            {"name": "position", "kind": "vector", "dims": 2, "semantics": "position", "unit": "m"},
        ],
    }
)


@pytest.fixture
def registry(tmp_path: Path) -> Path:
    """Two groups in centimetres: a 50 Hz one (absent at the end) and an irregular one."""
    reg = tmp_path / "reg"
    card = {"org": "acme", "name": "pitch", "version": "1.0", "license": "CC0-1.0"}
    with tn.TimeFWriter(reg, card) as w:
        for ent, dx in (("a", 0.0), ("b", 100.0)):
            rid = w.add_record(f"g1-{ent}", {"group": "g1", "entity": ent})
            x = np.arange(100, dtype=np.float32) * 10 + np.float32(dx)
            xm = np.ma.masked_array(x, mask=np.arange(100) >= 90)  # absent at the end
            spec = tn.SignalSpec("float32", "cm", rate_hz=50.0, start_ns=1_000_000_000)
            w.add_signal(rid, "x", xm, spec)
            w.add_signal(rid, "y", np.ma.masked_array(np.zeros(100, np.float32), xm.mask), spec)
        rid = w.add_record("g2-ball", {"group": "g2", "entity": "ball"})
        t = np.array([0, 100_000_000, 260_000_000, 300_000_000], dtype=np.int64)
        spec = tn.SignalSpec("float32", "cm", time_origin="2024-01-01T00:00:00+00:00")
        w.add_signal(rid, "x", np.array([100, 200, 300, 400], np.float32), spec, times=t)
        w.add_signal(rid, "y", np.zeros(4, np.float32), spec, times=t)
    return reg


def _adapter(reg: Path) -> TimenetAdapter:
    return TimenetAdapter(
        SCHEMA, fields={"position": {"signals": ["x", "y"], "unit": "m"}}, registries=[str(reg)]
    )


def test_expand_and_parse(registry: Path) -> None:
    assert parse_source("timenet://a/b@1?group_by=g&k=v#x%2Fy") == (
        "a/b@1",
        {"group_by": "g", "k": "v"},
        "x/y",
    )
    per_record = expand_source("timenet://acme/pitch", registries=[str(registry)])
    assert per_record == [
        "timenet://acme/pitch@1.0#g1-a",
        "timenet://acme/pitch@1.0#g1-b",
        "timenet://acme/pitch@1.0#g2-ball",
    ]
    groups = expand_source("timenet://acme/pitch@1.0?group_by=group", registries=[str(registry)])
    assert groups == [
        "timenet://acme/pitch@1.0?group_by=group#g1",
        "timenet://acme/pitch@1.0?group_by=group#g2",
    ]
    only = expand_source(
        "timenet://acme/pitch@1.0?group_by=group&entity=ball", registries=[str(registry)]
    )
    assert only == ["timenet://acme/pitch@1.0?entity=ball&group_by=group#g2"]
    with pytest.raises(SourceError):
        expand_source("timenet://acme/pitch?entity=nobody", registries=[str(registry)])


def test_group_is_one_source_with_entities_and_units(registry: Path) -> None:
    ad = _adapter(registry)
    with pytest.warns(SnapCollisionWarning, match="142 row"):
        table = ad.read_table("timenet://acme/pitch@1.0?group_by=group#g1")
    # four of every five 50 Hz steps land on a 10 Hz tick already taken
    assert table.counts == {"snap_collisions": 2 * (90 - 19)}
    assert table.entity_ids == ("a", "b")
    assert table.source_id == "g1"
    # 50 Hz resampled onto 10 Hz: every fifth step, starting 1 s after the origin
    assert table.k0 == 10
    assert table.n_steps == 19  # steps 0..89 (the last 10 are null): 1.00 s .. 2.78 s
    np.testing.assert_allclose(table.values["position"][:3, 0, 0], [0.0, 0.5, 1.0])
    np.testing.assert_allclose(table.values["position"][:3, 1, 0], [1.0, 1.5, 2.0])
    assert table.present.all()
    with pytest.warns(SnapCollisionWarning, match="1 row"):
        ball = ad.read_table("timenet://acme/pitch@1.0#g2-ball")
    assert ball.counts == {"snap_collisions": 1}
    t0 = 1704067200.0 * 10
    assert ball.k0 == t0
    # 0.26 s snaps to tick 3, then 0.30 s collides and the nearer (0.30) wins
    assert ball.present[:, 0].tolist() == [True, True, False, True]
    np.testing.assert_allclose(ball.values["position"][[0, 1, 3], 0, 0], [1.0, 2.0, 4.0])


def test_fingerprint_and_round_trip(registry: Path) -> None:
    ad = _adapter(registry)
    uri = "timenet://acme/pitch@1.0?group_by=group#g1"
    fp = ad.fingerprint(uri)
    assert fp == ad.fingerprint(uri) and len(fp) == 64
    assert fp != ad.fingerprint("timenet://acme/pitch@1.0#g2-ball")
    again = adapter_from_dict(json.loads(json.dumps(ad.to_dict())), SCHEMA)
    assert again.fingerprint(uri) == fp
    with pytest.warns(SnapCollisionWarning):
        assert next(iter(again.ticks(uri))).entities["a"]["position"][0] == 0.0


def test_bad_mappings_fail_loud(registry: Path) -> None:
    with pytest.raises(ValueError, match="components"):
        TimenetAdapter(SCHEMA, fields={"position": ["x"]})
    with pytest.raises(ValueError, match="contradicts"):
        TimenetAdapter(SCHEMA, fields={"position": {"signals": ["x", "y"], "unit": "s"}})
    with pytest.raises(ValueError, match="no signal mapping"):
        TimenetAdapter(SCHEMA, fields={})
    ad = TimenetAdapter(SCHEMA, fields={"position": ["x", "nope"]}, registries=[str(registry)])
    with pytest.raises(SourceError, match="no signal 'nope'"):
        ad.read_table("timenet://acme/pitch@1.0#g1-a")
    with pytest.raises(SourceError, match="expand"):
        ad.read_table("timenet://acme/pitch@1.0")


@pytest.mark.slow
def test_football_example_job_from_a_registry_reference(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kur run on examples/football/job.json: builds the dataset on first use, verified shards."""
    from kuration.cli.main import main as kur_main
    from kuration.tools.inspect import inspect_dataset

    reg = tmp_path_factory.getbasetemp() / "tn-session-registry"
    monkeypatch.setenv("TIMENET_REGISTRY", str(reg))
    out = tmp_path_factory.mktemp("football-out") / "fb"
    assert kur_main(["run", str(FOOTBALL / "job.json"), "--out", str(out), "--force"]) == 0
    rep = inspect_dataset(out, verify=True)
    assert rep.verification["valid"]
    assert rep.modalities["position"]["shape"] in ([2], (2,))
    manifest = json.loads((out / "dataset_manifest.json").read_text())
    text = json.dumps(manifest) + (out / "config.json").read_text()
    assert "skillcorner-2417-p1" in text and "skillcorner-2417-p2" in text
