"""Source ids: unique for ordinary layouts, checked before any source is read, nameable.

The id of a file source is its path relative to the sources' common folder with the
format suffix removed (and a compression suffix before it): ``run.2024.01.csv`` ->
``run.2024.01``, ``2024-01-01/flights.csv`` -> ``2024-01-01/flights``, ``x.csv.gz`` -> ``x``.
Sources of one folder keep their file names' ids (the shipped examples' ids did not
change: tests/kuration/pipeline/test_golden.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kuration.cli.main import main as kur_main
from kuration.errors import SourceError
from kuration.sources.base import adapter_from_dict, file_source_id, folder_source_ids


@pytest.mark.parametrize(
    ("uri", "sid"),
    [
        ("/d/run.2024.01.csv", "run.2024.01"),
        ("/d/x.csv.gz", "x"),
        ("/d/x.CSV.GZ", "x"),
        ("/d/adsb_paris_000.parquet", "adsb_paris_000"),
        ("/d/trips/", "trips"),
        ("s3://bucket/a/b.c.parquet", "b.c"),
        ("relative/name", "name"),
    ],
)
def test_file_source_id_removes_the_format_suffix_only(uri: str, sid: str) -> None:
    assert file_source_id(uri) == sid


def test_folder_ids_are_paths_relative_to_the_common_folder() -> None:
    assert folder_source_ids(["/d/2024-01-01/flights.csv", "/d/2024-01-02/flights.csv"]) == {
        "/d/2024-01-01/flights.csv": "2024-01-01/flights",
        "/d/2024-01-02/flights.csv": "2024-01-02/flights",
    }
    flat = ["/d/run.2024.01.csv", "/d/run.2024.02.csv"]
    assert list(folder_source_ids(flat).values()) == ["run.2024.01", "run.2024.02"]
    assert list(folder_source_ids(["/a/x.csv", "/b/y/x.csv"]).values()) == ["a/x", "b/y/x"]
    s3 = ["s3://bk/p/a/x.csv", "s3://bk/p/b/x.csv"]
    assert list(folder_source_ids(s3).values()) == ["a/x", "b/x"]
    mixed = ["s3://bk/a/x.csv", "/local/b/y.csv"]  # no common folder: the file names
    assert list(folder_source_ids(mixed).values()) == ["x", "y"]


def _ramp_csv(path: Path, entity: str, slope: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [f"{i},{entity},{slope * i:.3f}" for i in range(1800)]
    path.write_text("time,entity,x\n" + "\n".join(rows) + "\n")


@pytest.mark.parametrize(
    ("names", "ids"),
    [
        (["run.2024.01.csv", "run.2024.02.csv"], ["run.2024.01", "run.2024.02"]),
        (
            ["2024-01-01/flights.csv", "2024-01-02/flights.csv"],
            ["2024-01-01/flights", "2024-01-02/flights"],
        ),
    ],
)
def test_ordinary_layouts_run_with_distinct_ids(tmp_path: Path, names, ids) -> None:
    data = tmp_path / "data"
    for k, name in enumerate(names):
        _ramp_csv(data / name, f"e{k}", 0.1 + k)
    job = tmp_path / "job"
    assert kur_main(["init", *[str(data / n) for n in names], "--out", str(job)]) == 0
    assert kur_main(["run", str(job / "job.json"), "--out", str(tmp_path / "ds"), "--json"]) == 0
    manifest = json.loads((tmp_path / "ds" / "dataset_manifest.json").read_text())
    assert sorted({e["source_id"] for e in manifest["shards"]}) == ids


def test_a_shared_id_is_refused_before_any_source_is_read(tmp_path: Path, capsys) -> None:
    data = tmp_path / "data"
    _ramp_csv(data / "x.csv", "e0", 0.1)
    (data / "x.parquet").write_bytes(b"not parquet at all")  # reading it would fail first
    job = tmp_path / "job"
    assert kur_main(["init", str(data / "x.csv"), "--out", str(job)]) == 0
    doc = json.loads((job / "job.json").read_text())
    doc["sources"] = ["../data/x.csv", "../data/x.parquet"]
    (job / "job.json").write_text(json.dumps(doc))
    assert kur_main(["run", str(job / "job.json"), "--out", str(tmp_path / "ds")]) == 1
    err = capsys.readouterr().err
    assert "two sources would share the id 'x'" in err and "x.parquet" in err, err
    assert "not parquet" not in err and "Parquet" not in err
    assert not (tmp_path / "ds").exists()


def test_a_job_names_its_sources(tmp_path: Path) -> None:
    data = tmp_path / "data"
    for k in range(2):
        _ramp_csv(data / f"d{k}" / "same.csv", f"e{k}", 0.1 + k)
    job = tmp_path / "job"
    srcs = [str(data / f"d{k}" / "same.csv") for k in range(2)]
    assert kur_main(["init", *srcs, "--out", str(job)]) == 0
    doc = json.loads((job / "job.json").read_text())
    doc["sources"] = {"named": {"jan": "../data/d0/same.csv", "feb": "../data/d1/same.csv"}}
    (job / "job.json").write_text(json.dumps(doc))
    out = tmp_path / "ds"
    assert kur_main(["run", str(job / "job.json"), "--out", str(out), "--json"]) == 0
    manifest = json.loads((out / "dataset_manifest.json").read_text())
    assert sorted({e["source_id"] for e in manifest["shards"]}) == ["feb", "jan"]
    cfg = json.loads((out / "config.json").read_text())
    by_id = {s["source_id"]: s["uri"] for s in cfg["pipeline"]["sources"]}
    assert by_id["jan"].endswith("d0/same.csv") and by_id["feb"].endswith("d1/same.csv")


def test_named_sources_must_name_files(tmp_path: Path, capsys) -> None:
    job = tmp_path / "job.json"
    data = tmp_path / "x.csv"
    _ramp_csv(data, "e0", 0.1)
    assert kur_main(["init", str(data), "--out", str(tmp_path)]) == 0
    doc = json.loads(job.read_text())
    doc["sources"] = {"named": {"": "x.csv"}}
    job.write_text(json.dumps(doc))
    assert kur_main(["run", str(job), "--out", str(tmp_path / "ds")]) == 1
    assert "sources.named" in capsys.readouterr().err


def test_assign_source_ids_raises_a_source_error(adsb_job_dict, adsb_schema) -> None:
    adsb_adapter = adapter_from_dict(adsb_job_dict["adapter"], adsb_schema)  # its own
    with pytest.raises(SourceError, match=r"share the id 'x' \(/a/x.csv, /a/x.parquet\)"):
        adsb_adapter.assign_source_ids(["/a/x.csv", "/a/x.parquet"])
    ids = adsb_adapter.assign_source_ids(["/a/x.csv", "/b/x.csv"])
    assert ids == {"/a/x.csv": "a/x", "/b/x.csv": "b/x"}
    assert adsb_adapter.source_id("/b/x.csv") == "b/x"
    adsb_adapter.assign_source_ids(["/b/x.csv"])  # a new run: its own ids
    assert adsb_adapter.source_id("/b/x.csv") == "x"
