"""In-memory sources: their errors, their names, and ids equal to the files they mirror."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

from kuration.cli.main import main as kur_main
from kuration.errors import SourceError
from kuration.sources.memory import spill_sources, to_arrow


def test_not_a_memory_source_is_a_source_error() -> None:
    with pytest.raises(SourceError, match="not an in-memory source: int"):
        to_arrow(3)


def test_rows_arrow_cannot_type_are_a_source_error() -> None:
    with pytest.raises(SourceError, match="cannot turn it into an Arrow table"):
        to_arrow([{"a": 1}, {"a": "x"}])


def test_mixed_sources_are_a_source_error(tmp_path: Path) -> None:
    t = pa.table({"time": [1, 2]})
    with pytest.raises(SourceError, match="in-memory objects and paths are mixed"):
        spill_sources([t, "x.csv"], tmp_path)


@pytest.mark.parametrize("name", ["../x", ".hidden", "a/b", "a..b", ""])
def test_unsafe_names_are_refused(name: str, tmp_path: Path) -> None:
    t = pa.table({"time": [1, 2]})
    if name == "":
        assert spill_sources({name: t}, tmp_path)[0].endswith(".arrows")  # unnamed default
        return
    with pytest.raises(SourceError, match="in-memory source name"):
        spill_sources({name: t}, tmp_path)


def test_a_dotted_name_is_the_file_stem(tmp_path: Path) -> None:
    (path,) = spill_sources({"run.2024.01": pa.table({"time": [1, 2]})}, tmp_path)
    assert Path(path).name == "run.2024.01.arrows"


def _files(tmp_path: Path) -> list[Path]:
    paths = []
    for k, name in enumerate(["run.2024.01", "run.2024.02", "run.2024.03"]):
        rows = [
            f"{1_700_000_000 + k * 100_000 + i},{math.sin(i / 10 + k):.4f}" for i in range(2400)
        ]
        path = tmp_path / "data" / f"{name}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("time,value\n" + "\n".join(rows) + "\n")
        paths.append(path)
    return paths


def _shards(out: Path) -> list[Path]:
    return sorted(p for p in out.rglob("*.npz"))


def _entries(out: Path) -> Any:
    doc = json.loads((out / "dataset_manifest.json").read_text())
    return doc.get("shards") or doc.get("entries") or doc


def test_several_named_frames_write_what_their_files_write(tmp_path: Path) -> None:
    from kuration import Pipeline

    paths = _files(tmp_path)
    assert kur_main(["init", *map(str, paths), "--out", str(tmp_path / "job")]) == 0
    job = tmp_path / "job" / "job.json"
    assert kur_main(["run", str(job), "--out", str(tmp_path / "out")]) == 0
    p = Pipeline.from_job(job)
    frames = {path.name[: -len(".csv")]: pacsv.read_csv(path) for path in paths}
    p.source(p.adapter, frames).write(tmp_path / "mem")
    files, mem = _shards(tmp_path / "out"), _shards(tmp_path / "mem")
    assert files, "the run wrote no shard"
    assert [f.relative_to(tmp_path / "out") for f in files] == [
        f.relative_to(tmp_path / "mem") for f in mem
    ]
    for a, b in zip(files, mem, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name
    assert _entries(tmp_path / "out") == _entries(tmp_path / "mem")
    assert "run.2024.02" in json.dumps(_entries(tmp_path / "mem"))
    from kuration.tools.diff import compare_datasets

    # kur diff: only what each source was read from differs (its bytes' fingerprint)
    res = compare_datasets(tmp_path / "out", tmp_path / "mem")
    assert {c["path"] for c in res["changes"]} <= {
        f"pipeline.sources[{i}].{k}" for i in range(3) for k in ("sha256", "uri", "format")
    }, res["changes"]
