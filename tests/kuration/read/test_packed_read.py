"""Packed output (``layout="packed"``) on real quickstart data: every reader returns the same
arrays per shard as the per-file layout, verification catches a changed byte, resume reuses
whole files only, and the same job writes byte-identical files."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

from kuration import iter_shards, open_dataset, run_job
from kuration.errors import BudgetGranularityWarning, DatasetIntegrityError
from kuration.tools.check import check_dataset
from kuration.tools.diff import compare_datasets
from kuration.tools.inspect import inspect_dataset

KEY = ("split", "source_id", "entity_id", "span_index", "shard_index")


def _packed_job(job_b: dict) -> dict[str, Any]:
    job = json.loads(json.dumps(job_b))
    job["output"].update(
        container="parquet", layout="packed", target_file_bytes=40_000, row_group_bytes=10_000
    )
    return job


def _run(job: dict, out: Path, **kw: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetGranularityWarning)
        return run_job(job, out, **kw)


@pytest.fixture(scope="session")
def packed(tmp_path_factory: pytest.TempPathFactory, job_b: dict) -> Path:
    """job_b (4 real sources, 0.5 h train, 0.1 h test) written packed: several files."""
    return _run(_packed_job(job_b), tmp_path_factory.mktemp("packed") / "p").path


def _key(e: dict) -> tuple:
    return tuple(e[k] for k in KEY)


def _same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert sorted(a) == sorted(b)
    for k in a:
        assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape, k
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)  # NaN == NaN here


def test_layout_on_disk(packed: Path) -> None:
    man = json.loads((packed / "dataset_manifest.json").read_text())
    assert man["layout"] == "packed" and man["container"] == "parquet"
    on_disk = sorted(str(p.relative_to(packed)) for p in packed.glob("*/*.parquet"))
    assert on_disk == sorted(f["path"] for f in man["files"])
    assert len(man["files"]) >= 4 and len(man["shards"]) > 4 * len(man["files"])
    assert {Path(f["path"]).parent.name for f in man["files"]} == {"train", "test"}
    for f in man["files"]:
        md = pq.ParquetFile(packed / f["path"]).metadata
        assert md.num_rows == f["rows"]
        assert [md.row_group(i).num_rows for i in range(md.num_row_groups)] == f["row_groups"]
        assert sum(e["path"] == f["path"] for e in man["shards"]) == f["shards"]


def test_every_reader_gives_the_per_file_arrays(packed: Path, quick: dict[str, Path]) -> None:
    files = {_key(m): a for a, m in iter_shards(quick["parquet"], with_meta=True)}
    got = {_key(m): a for a, m in iter_shards(packed, with_meta=True)}
    assert list(got) == list(files)  # same shards, same order
    for k, arrays in got.items():
        _same(arrays, files[k])
    untrimmed = list(iter_shards(packed, split="test", trim=False, modalities=["altitude"]))
    reference = list(
        iter_shards(quick["parquet"], split="test", trim=False, modalities=["altitude"])
    )
    for a, b in zip(untrimmed, reference, strict=True):
        _same(a, b)
    ds, ref = open_dataset(packed), open_dataset(quick["parquet"])
    assert len(ds) == len(ref) and ds.splits == ref.splits
    for i in (0, len(ds) // 2, -1):
        a, b = ds[i], ref[i]
        assert a.pop("_shard") == b.pop("_shard").rsplit(".", 1)[0]
        _same({k: np.asarray(v) for k, v in a.items()}, {k: np.asarray(v) for k, v in b.items()})
    left = ds["train"].to_arrow().drop_columns(["_shard"]).combine_chunks()
    right = ref["train"].to_arrow().drop_columns(["_shard"]).combine_chunks()
    assert left.schema == right.schema and left.num_rows == right.num_rows
    for a, b in zip(left.columns, right.columns, strict=True):  # bit for bit (NaN included)
        bufs = [(x.to_pybytes() if x is not None else None) for x in a.chunk(0).buffers()]
        assert bufs == [(x.to_pybytes() if x is not None else None) for x in b.chunk(0).buffers()]


def test_torch_shard_dataset_reads_packed(packed: Path, quick: dict[str, Path]) -> None:
    pytest.importorskip("torch")  # the [torch] extra is in dev: present in CI
    from kuration.read.torch import ShardDataset

    a, b = ShardDataset(packed, split="train"), ShardDataset(quick["parquet"], split="train")
    assert len(a) == len(b)
    for i in (0, len(a) - 1):
        x, y = a[i], b[i]
        for k in ("position", "altitude", "_present"):
            np.testing.assert_array_equal(np.asarray(x[k]), np.asarray(y[k]))


def test_curated_adapter_reads_packed_tracks(packed: Path) -> None:
    from kuration.read.curated import CuratedDatasetAdapter

    ad = CuratedDatasetAdapter(str(packed))
    srcs = ad.sources()
    assert srcs and all("part-" not in s for s in srcs)  # tracks, not files
    table = ad.read_table(srcs[0])
    assert table.n_steps > 0


def test_inspect_check_and_diff(packed: Path, tmp_path: Path, job_b: dict, all_bytes: Any) -> None:
    rep = inspect_dataset(packed, verify=True)
    assert rep.verification["valid"] and rep.verification["checked"] > 0
    files = {e["path"] for e in json.loads((packed / "dataset_manifest.json").read_text())["files"]}
    assert rep.packed_files == len(files) > 0  # the layout is reported, not only the container
    res = check_dataset(packed, {"verify": True, "required_modalities": ["position"]})
    assert res.ok
    again = _run(_packed_job(job_b), tmp_path / "again").path
    assert compare_datasets(packed, again, verify=True)["identical"]
    mine, theirs = all_bytes(packed), all_bytes(again)  # the same job: byte-identical files
    skip = {"config.json", "dataset.commit.json"}  # timestamps
    assert {k: v for k, v in mine.items() if k not in skip} == {
        k: v for k, v in theirs.items() if k not in skip
    }


def _flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("where", ["data", "footer"])
def test_a_changed_byte_is_caught_before_values(
    packed: Path, tmp_path: Path, where: str, all_bytes: Any
) -> None:
    copy = tmp_path / "copy"
    for rel, data in all_bytes(packed).items():
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        (copy / rel).write_bytes(data)
    man = json.loads((copy / "dataset_manifest.json").read_text())
    victim = man["files"][1]
    path = copy / victim["path"]
    md = pq.ParquetFile(path).metadata
    col = md.row_group(0).column(0)
    # a byte of the first column chunk's values, or of the footer's key-value metadata
    offset = col.data_page_offset + 40 if where == "data" else path.stat().st_size - 30
    _flip(path, offset)
    bad = {e["shard"] for e in man["shards"] if e["path"] == victim["path"]}
    seen = []
    with pytest.raises(DatasetIntegrityError, match="SHA-256") as info:
        for _, m in iter_shards(copy, with_meta=True):
            seen.append(m["shard"])
    assert not bad & set(seen) and victim["path"] in str(info.value)
    rep = inspect_dataset(copy, verify=True)
    assert not rep.verification["valid"] and len(rep.verification["failures"]) == len(bad)
    assert not check_dataset(copy, {"verify": True}).ok
    if where == "footer":
        return  # the CLI reads the same report: once is enough
    cli = subprocess.run(
        [sys.executable, "-m", "kuration.cli.main", "inspect", str(copy), "--verify"],
        capture_output=True,
        text=True,
    )
    assert cli.returncode == 1 and "INVALID" in cli.stdout


def test_resume_reuses_whole_files_only(packed: Path, tmp_path: Path, job_b: dict) -> None:
    job = _packed_job(job_b)
    out = tmp_path / "r"
    first = _run(job, out)
    files = sorted(p for p in out.glob("*/*.parquet"))
    before = {p: p.read_bytes() for p in files}
    n = len(first.manifest["shards"])
    same = _run(job, out, resume=True)
    assert same.resume["reused_shards"] == n and same.resume["rebuilt_shards"] == 0
    man = first.manifest
    victim = man["files"][0]
    _flip(out / victim["path"], 100)  # one file no longer matches: only it is rebuilt
    redo = _run(job, out, resume=True)
    assert redo.resume["rebuilt_shards"] == victim["shards"]
    assert redo.resume["reused_shards"] == n - victim["shards"]
    assert {p: p.read_bytes() for p in files} == before
    assert redo.manifest["shards"] == man["shards"]


def test_an_interrupted_run_resumes_from_its_staged_files(
    packed: Path, tmp_path: Path, job_b: dict, monkeypatch: pytest.MonkeyPatch, all_bytes: Any
) -> None:
    from kuration.pipeline.run import stage_packed as hours_packed

    real = hours_packed.write_packed_file
    calls = []

    def fail_on_the_third_file(*a: Any, **kw: Any) -> dict[str, Any]:
        calls.append(1)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")  # a real failure mid-stage
        return real(*a, **kw)

    monkeypatch.setattr(hours_packed, "write_packed_file", fail_on_the_third_file)
    out = tmp_path / "killed"
    out.mkdir()  # a folder the run did not create keeps its staging area on failure
    job = _packed_job(job_b)
    with pytest.raises(OSError):
        _run(job, out)
    monkeypatch.setattr(hours_packed, "write_packed_file", real)
    assert not (out / "dataset.commit.json").exists()  # nothing was published
    res = _run(job, out, resume=True)
    man = res.manifest
    first_two = man["files"][0]["shards"] + man["files"][1]["shards"]
    assert res.resume["reused_shards"] == first_two  # the two staged files were reused
    assert res.resume["rebuilt_shards"] == len(man["shards"]) - first_two
    skip = {"config.json", "dataset.commit.json"}
    assert {k: v for k, v in all_bytes(out).items() if k not in skip} == {
        k: v for k, v in all_bytes(packed).items() if k not in skip
    }


def test_streaming_refuses_packed_output_before_reading(tmp_path: Path, job_b: dict) -> None:
    from kuration.errors import StreamingError

    job = _packed_job(job_b)
    job["streaming"] = True
    missing = tmp_path / "never-read.parquet"  # proves no source is opened first
    job["sources"] = [str(missing)]
    with pytest.raises(StreamingError, match="output: .*layout 'packed'"):
        _run(job, tmp_path / "out")
    assert not (tmp_path / "out").exists()
