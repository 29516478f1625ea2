"""The built-in connectors on their real pinned data (download cache reused across sessions).

Builds go into one registry per test session (``<basetemp>/tn-session-registry``),
so a dataset is built once however many tests (and the kuration tests) use it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import timenet as tn
from timenet import build as tb


def _open(reg: Path, ref: str) -> tn.TimeFReader:
    res = tb.build(ref, reg)
    assert res.manifest.raw_inputs or res.manifest.card.parents
    return tn.TimeNet([reg], auto_build=False).open(ref)


def test_ais_rules(session_registry: Path) -> None:
    from timenet_connectors.datasets.marinecadastre.ais_ny_harbor import clean_cog, clean_heading

    cog, counts = clean_cog(np.array([10.0, -60.6, -49.6, -204.8, 500.0, np.nan]))
    np.testing.assert_allclose(cog, [10.0, 349.0, np.nan, 204.8, np.nan, np.nan])
    assert counts == {"cog_unwrapped": 2, "cog_not_available": 1, "cog_out_of_range": 1}
    heading, hc = clean_heading(np.array([511.0, 90.0, 400.0]))
    assert np.isnan(heading[[0, 2]]).all() and heading[1] == 90.0
    assert hc == {"heading_not_available": 1, "heading_out_of_range": 1}
    reader = _open(session_registry, "marinecadastre/ais-ny-harbor@1.0")
    assert reader.manifest.counts.records == 295
    sig = reader.signal("mmsi-367000140", "cog")
    vals = sig.to_arrow().to_numpy(zero_copy_only=False)
    ok = vals[~np.isnan(vals)]
    assert ((ok >= 0) & (ok < 360)).all()
    assert sig.spec.rate_hz is None and np.all(np.diff(sig.times()) > 0)
    heading = reader.signal("mmsi-367022550", "heading").to_arrow()
    assert heading.null_count > 0  # 511 = not available
    assert reader.signal("mmsi-367000140", "sog").spec.unit == "kt"


def test_imu_units_tasks_and_ts_reader(session_registry: Path) -> None:
    from timenet_connectors.datasets.aeon.body_imu.tsfile import read_ts

    reader = _open(session_registry, "aeon/body-imu@1.0")
    acc = reader.signal("daphnet-S06R02E0", "ankle_vert")
    assert acc.spec.rate_hz == 64.0 and len(acc) == 7040
    g = acc.to_numpy(unit="m/s^2")
    assert 5 < np.median(np.abs(g)) < 15  # about one g on the vertical axis
    tasks = reader.tasks(name="activity")
    assert len(tasks) == 80
    assert {t.content.value for t in tasks} == {"Standing", "Running", "Walking", "Badminton"}
    assert reader.signal("basicmotions-test-000", "gyro_z").spec.rate_hz == 10.0
    head = "@problemName p\n@timeStamps false\n@missing false\n@equalLength true\n"
    head += "@classLabel true a b\n@data\n"
    ok = read_ts(head + "1,2,3:4,5,6:a\n", "x.ts")
    assert ok.values.shape == (1, 2, 3) and ok.labels == ("a",)
    for body, msg in (
        ("1,2,3:4,5:a\n", "lengths"),
        ("1,2,x:4,5,6:a\n", "non-numeric"),
        ("1,2,3:4,5,6:c\n", "not declared"),
        ("", "no cases"),
    ):
        with pytest.raises(tb.RawInputError, match=msg) as info:
            read_ts(head + body, "bad.ts")
        assert info.value.path == "bad.ts"
    with pytest.raises(tb.RawInputError, match="@data"):
        read_ts("@problemName p\n", "bad.ts")


@pytest.mark.slow
def test_adsb_and_flight_phases_child(session_registry: Path) -> None:
    parent = _open(session_registry, "opensky/adsb-traffic@1.0")
    assert parent.manifest.counts.records == 1055
    units = {s.name: s.unit for s in parent.schema.signals}
    assert units == {
        "latitude": "deg",
        "longitude": "deg",
        "altitude": "ft",
        "groundspeed": "kt",
        "track": "deg",
        "vertical_rate": "ft/min",
        "onground": "",
    }
    alt = parent.signal("quickstart-0101de", "altitude")
    assert alt.spec.time_origin.startswith("1970-01-01") and np.all(np.diff(alt.times()) > 0)
    child = _open(session_registry, "opensky/flight-phases@1.0")
    assert child.card.parents == ("opensky/adsb-traffic@1.0",)
    rec = child.get("record", "quickstart-0101de", parent="opensky/adsb-traffic@1.0")
    assert rec.id == "fp-quickstart-0101de"
    np.testing.assert_array_equal(
        child.signal(rec.id, "altitude").to_arrow().to_numpy(zero_copy_only=False),
        alt.to_arrow().to_numpy(zero_copy_only=False),
    )
    labels = {a.content.value for a in child.annotations()}
    assert labels == {"climb", "cruise", "descent", "on ground"}
    assert not any(f.path.startswith("values/") for f in child.manifest.files)


@pytest.mark.slow
def test_auto_build_copies_a_missing_parent_from_fetch_from(
    session_registry: Path, tmp_path: Path, s3: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The installed builder (entry point) gets the client's fetch_from: the parent release
    comes from the S3 registry, and its connector is never run."""
    from timenet.build import engine

    _open(session_registry, "opensky/adsb-traffic@1.0")  # built once per session
    parent = session_registry / "opensky" / "adsb-traffic" / "1.0"
    url = f"s3://{s3['bucket']}/public"
    tn.publish(parent, url, storage_options=s3["storage_options"])

    def no_parent_build(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"the parent was built, not fetched: {args}")

    monkeypatch.setattr(engine, "_build_parent", no_parent_build)
    local = tmp_path / "local"
    client = tn.TimeNet(
        [local], fetch_from=url, storage_options=s3["storage_options"], cache_dir=tmp_path / "c"
    )
    child = client.open("opensky/flight-phases@1.0")
    copied = local / "opensky" / "adsb-traffic" / "1.0" / "manifest.json"
    assert copied.read_bytes() == (parent / "manifest.json").read_bytes()
    assert child.manifest.effective_access.level == "open"
    assert len(child) == len(tn.TimeNet([session_registry]).open("opensky/flight-phases@1.0"))


@pytest.mark.slow
def test_football_tracking(session_registry: Path) -> None:
    # built (unless an earlier test did) by auto_build from a plain script without a
    # `if __name__ == "__main__":` guard: its parse workers must not re-run the script
    script = session_registry.parent / "football_unguarded.py"
    script.write_text(
        "import timenet as tn\n"
        f"reader = tn.TimeNet([{str(session_registry)!r}]).open('kloppy/football-tracking@1.0')\n"
        "print('records', len(reader))\n"
    )
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert res.returncode == 0 and "bootstrapping" not in res.stderr, res.stderr
    reader = _open(session_registry, "kloppy/football-tracking@1.0")
    assert res.stdout.splitlines() == [f"records {len(reader)}"]
    groups: dict[str, list[tn.Record]] = {}
    for rec in reader.records():
        groups.setdefault(rec.metadata["group"], []).append(rec)
    he = [g for g in groups if g.startswith("hawkeye")]
    sc = [g for g in groups if g.startswith("skillcorner")]
    assert len(he) == 2 and len(sc) == 2
    for g in he:
        kinds = [r.metadata["kind"] for r in groups[g]]
        assert kinds.count("ball") == 1 and kinds.count("player") == 22
    ball = next(r for r in groups[he[0]] if r.metadata["kind"] == "ball")
    x = reader.signal(ball.id, "x")
    assert x.spec.rate_hz == 50.0 and x.spec.unit == "m" and "z" in ball.signal_names
    player = next(r for r in groups[sc[0]] if r.metadata["kind"] == "player")
    px = reader.signal(player.id, "x")
    assert px.spec.rate_hz == 10.0
    vals = px.to_arrow().to_numpy(zero_copy_only=False)
    assert np.nanmax(np.abs(vals)) < 60  # metres on a pitch-centred frame
    lengths = {len(reader.signal(r.id, "x")) for r in groups[sc[0]]}
    assert len(lengths) == 1  # one time grid per period
