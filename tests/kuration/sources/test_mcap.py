"""McapAdapter: a real recording converted to MCAP by the ``mcap`` writers curates exactly as
the same recording in Parquet.

The recording is the project's ADS-B sample (OpenSky Network data from the pinned
``traffic==2.13`` wheel, MIT; see kuration.sources.samples), two 15-minute slices.  Each
slice is written, unchanged, as one MCAP file by the ``mcap`` 1.6.0 writer (JSON messages)
and by the ``mcap-ros2-support`` 0.6.0 writer (ROS 2 CDR messages of a message definition
written here): converted data, labelled as such.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from kuration import run_job
from kuration.contracts.schema import SchemaSpec
from kuration.errors import AdapterError, SourceError
from kuration.sources.mcap import McapAdapter, parse_path
from kuration.sources.timeseries import TimeseriesAdapter

pytest.importorskip("mcap_ros2", reason="mcap extra")  # a dev dependency: present in CI
pytestmark = pytest.mark.slow  # writing the MCAP files and curating twice: ~20 s

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "adsb_quickstart"
COLUMNS = ("latitude", "longitude", "altitude", "groundspeed", "track", "vertical_rate")
MSGDEF = "string icao24\n" + "".join(f"float64 {c}\n" for c in COLUMNS) + "bool onground\n"
FIELDS = {
    "position": ["/adsb.latitude", "/adsb.longitude"],
    "altitude": "/adsb.altitude",
    "groundspeed": "/adsb.groundspeed",
    "track": "/adsb.track",
    "vertical_rate": "/adsb.vertical_rate",
    "onground": "/adsb.onground",
}


def _rows(parquet: Path) -> list[dict]:
    t = pq.read_table(parquet, columns=["timestamp", "icao24", *COLUMNS, "onground"])
    return t.to_pylist()


def write_json_mcap(parquet: Path, out: Path) -> Path:
    """One JSON message per row on ``/adsb``, logged at the row's time (ms -> ns)."""
    from mcap.writer import Writer

    with open(out, "wb") as fh:
        w = Writer(fh)
        w.start()
        sid = w.register_schema("adsb.State", "jsonschema", json.dumps({"type": "object"}).encode())
        ch = w.register_channel("/adsb", "json", sid)
        for r in _rows(parquet):
            t = r.pop("timestamp") * 1_000_000
            w.add_message(ch, log_time=t, data=json.dumps(r).encode(), publish_time=t)
        w.finish()
    return out


def write_ros2_mcap(parquet: Path, out: Path) -> Path:
    """The same rows as ROS 2 CDR messages (a missing float is NaN in CDR)."""
    from mcap_ros2.writer import Writer

    with open(out, "wb") as fh:
        w = Writer(fh)
        schema = w.register_msgdef("adsb_msgs/State", MSGDEF)
        for r in _rows(parquet):
            t = r.pop("timestamp") * 1_000_000
            msg = {k: (float("nan") if v is None else v) for k, v in r.items()}
            w.write_message("/adsb", schema, msg, log_time=t, publish_time=t)
        w.finish()
    return out


def _job(tmp: Path, sources: list[str], adapter: dict) -> Path:
    job = json.loads((EXAMPLE / "job.json").read_text())
    for part in ("schema", "strategy", "output"):
        job[part] = json.loads((EXAMPLE / job[part]).read_text())
    job.update(sources=sources, adapter=adapter, budget={"train_hours": 0.3, "test_hours": 0.1})
    job["span_seconds"] = 60  # spans short next to the request: no granularity warning
    path = tmp / f"job-{adapter['type']}.json"
    path.write_text(json.dumps(job))
    return path


@pytest.fixture(scope="module")
def recordings(adsb_sources: list[Path], tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("mcap")
    parquet = [shutil.copy(p, out / p.name) for p in adsb_sources[:2]]
    stems = [Path(p).stem for p in parquet]
    (out / "ros2").mkdir()
    return {
        "parquet": [str(p) for p in parquet],
        "json": [
            str(write_json_mcap(Path(p), out / f"{s}.mcap"))
            for p, s in zip(parquet, stems, strict=True)
        ],
        "ros2": [
            str(write_ros2_mcap(Path(p), out / "ros2" / f"{s}.mcap"))
            for p, s in zip(parquet, stems, strict=True)
        ],
    }


def _schema() -> SchemaSpec:
    return SchemaSpec.from_dict(json.loads((EXAMPLE / "schema.json").read_text()))


@pytest.mark.parametrize("encoding", ["json", "ros2"])
def test_tables_equal_the_parquet_recording(recordings: dict, encoding: str) -> None:
    job = json.loads((EXAMPLE / "job.json").read_text())
    pq_adapter = TimeseriesAdapter(
        _schema(), **{k: v for k, v in job["adapter"].items() if k != "type"}
    )
    mc = McapAdapter(_schema(), fields=FIELDS, entity="/adsb.icao24")
    for p, m in zip(recordings["parquet"], recordings[encoding], strict=True):
        a, b = pq_adapter.read_table(p), mc.read_table(m)
        assert (b.source_id, b.k0, b.entity_ids) == (a.source_id, a.k0, a.entity_ids)
        np.testing.assert_array_equal(b.present, a.present)
        for name in a.values:
            np.testing.assert_array_equal(b.values[name], a.values[name])
        rows = pq.ParquetFile(p).metadata.num_rows
        assert b.counts["messages:/adsb"] == rows
        assert b.counts["snap_collisions:/adsb"] == a.counts["snap_collisions"]


@pytest.mark.slow
def test_curates_to_the_same_spans_and_arrays(recordings: dict, tmp_path: Path) -> None:
    job = json.loads((EXAMPLE / "job.json").read_text())
    mcap_adapter = {"type": "mcap", "fields": FIELDS, "entity": "/adsb.icao24"}
    runs = {}
    for kind, sources, adapter in (
        ("parquet", recordings["parquet"], job["adapter"]),
        ("mcap", recordings["json"], mcap_adapter),
    ):
        runs[kind] = tmp_path / kind
        run_job(_job(tmp_path, sources, adapter), runs[kind])
    manifests = {k: json.loads((d / "dataset_manifest.json").read_text()) for k, d in runs.items()}
    keys = ("split", "source_id", "entity_id", "span_index", "shard_index", "n_steps", "path")
    spans = {k: [{x: e[x] for x in keys} for e in m["shards"]] for k, m in manifests.items()}
    assert spans["mcap"] == spans["parquet"] and len(spans["parquet"]) > 0
    for e in manifests["parquet"]["shards"]:
        a, b = (np.load(runs[k] / e["path"]) for k in ("parquet", "mcap"))
        assert sorted(a.files) == sorted(b.files)
        for name in a.files:
            np.testing.assert_array_equal(a[name], b[name])


def test_paths_and_errors(recordings: dict, tmp_path: Path) -> None:
    assert parse_path("/joint_states.position[3]") == ("/joint_states", ("position", 3))
    assert parse_path("/imu.linear_acceleration.x") == ("/imu", ("linear_acceleration", "x"))
    with pytest.raises(AdapterError, match="not a message path"):
        parse_path("adsb.latitude")
    with pytest.raises(AdapterError, match="spans topics"):
        McapAdapter(_schema(), fields={**FIELDS, "position": ["/a.x", "/b.y"]})
    bad = McapAdapter(
        _schema(), fields={**FIELDS, "altitude": "/adsb.no_such"}, entity="/adsb.icao24"
    )
    with pytest.raises(SourceError, match="lacks the path"):
        bad.read_table(recordings["json"][0])
    missing = McapAdapter(_schema(), fields={**FIELDS, "altitude": "/nothing.x"})
    with pytest.raises(SourceError, match="topic '/nothing' has no message"):
        missing.read_table(recordings["json"][0])
