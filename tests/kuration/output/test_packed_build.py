"""Packed row groups built a source at a time (kuration.output.packed_build): the same files as
the per-track build on real quickstart data, the same errors, and row-group digests equal to the
documented per-shard digest."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kuration import run_job
from kuration.errors import BudgetGranularityWarning, OutputSpecError
from kuration.output import packed
from kuration.output.packed import shard_digest, shard_view
from kuration.output.packed_build import row_group_digests

#: run-specific (timings, and the commit record hashing them)
SKIP = ("config.json", "dataset.commit.json")


def _job(job_b: dict, **output: Any) -> dict[str, Any]:
    job = json.loads(json.dumps(job_b))
    job["output"].update(
        container="parquet", layout="packed", target_file_bytes=60_000, row_group_bytes=15_000
    )
    job["output"].update(output)
    return job


def _files(job: dict, out: Path) -> dict[str, bytes]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetGranularityWarning)
        run_job(job, out)
    names = [p for p in sorted(out.rglob("*")) if p.is_file() and p.name not in SKIP]
    return {str(p.relative_to(out)): p.read_bytes() for p in names}


@pytest.mark.parametrize("short_policy", ["pad", "keep"])
def test_batched_build_writes_the_per_track_files(
    job_b: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, short_policy: str
) -> None:
    """Spans, padded or kept short tails, a segment feature and a uint8 field: every file and
    the manifest are byte-identical to the track-by-track build."""
    job = _job(job_b, short_policy=short_policy)
    batched = _files(job, tmp_path / "batched")
    assert sum(k.endswith(".parquet") for k in batched) >= 3
    monkeypatch.setattr(packed, "batchable", lambda spec: False)
    per_track = _files(job, tmp_path / "per-track")
    assert batched.keys() == per_track.keys()
    for name in batched:
        assert batched[name] == per_track[name], name


def test_a_failing_batch_names_the_track_and_row(
    job_b: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """altitude (feet, up to ~40,000) does not fit int8: the batch fails, is rebuilt track by
    track, and the error is the per-track one (source, entity, row)."""
    mods = {"altitude": {"dtype": "int8", "shape": [], "source": "field:altitude"}}
    job = _job(job_b, modalities=mods)
    with pytest.raises(OutputSpecError) as batched:
        _files(job, tmp_path / "batched")
    monkeypatch.setattr(packed, "batchable", lambda spec: False)
    with pytest.raises(OutputSpecError) as per_track:
        _files(job, tmp_path / "per-track")
    assert "row" in str(batched.value) and "int8" in str(batched.value)
    assert str(batched.value) == str(per_track.value)


@settings(max_examples=40, deadline=None)
@given(
    rows=st.lists(st.integers(1, 9), min_size=1, max_size=8),
    seed=st.integers(0, 2**32 - 1),
    upper=st.booleans(),
)
def test_row_group_digests_equal_the_per_shard_digest(
    rows: list[int], seed: int, upper: bool
) -> None:
    rng = np.random.default_rng(seed)
    total = sum(rows)
    starts = np.concatenate([[0], np.cumsum(rows)[:-1]]).astype(int).tolist()
    cols = {
        "position": rng.normal(size=(total, 2)),
        "altitude": rng.normal(size=total).astype(np.float32),
        "frame": rng.integers(0, 255, size=(total, 2, 3), dtype=np.uint8),
        "_present": rng.random(total) < 0.5,
        "_time_s": rng.normal(size=total),
        "_n_steps": np.repeat(rng.integers(1, 9, size=len(rows)), rows),
        "_source": np.array(["s"] * total),  # string columns are not part of the digest
    }
    if upper:  # a name sorting before "_entity": part of the stream before the entity
        cols["Alt"] = rng.normal(size=total).astype(">f8")
    ents = [f"str:e{i}" + "x" * int(rng.integers(0, 4)) for i in range(len(rows))]
    fast = row_group_digests(cols, starts, rows, ents)
    slow = [
        shard_digest(shard_view(cols, s, n, e)) for s, n, e in zip(starts, rows, ents, strict=True)
    ]
    assert fast == slow


def test_dictionary_and_statistics_only_where_documented(job_b: dict, tmp_path: Path) -> None:
    """docs/format.md: dictionary encoding for strings, small integers and _n_steps;
    min/max statistics for _time_s only."""
    _files(_job(job_b), tmp_path / "p")
    meta = pq.ParquetFile(next((tmp_path / "p" / "train").glob("part-*.parquet"))).metadata
    dictionary, stats = set(), set()
    for rg in range(meta.num_row_groups):
        for i in range(meta.num_columns):
            col = meta.row_group(rg).column(i)
            name = col.path_in_schema.split(".")[0]
            if "RLE_DICTIONARY" in col.encodings or "PLAIN_DICTIONARY" in col.encodings:
                dictionary.add(name)
            if col.is_stats_set:
                stats.add(name)
    assert dictionary == {"onground", "_n_steps", "_entity", "_source"}
    assert stats == {"_time_s"}


def test_a_staged_file_is_reused_only_when_its_planned_shards_agree(
    job_b: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The journal records a staged file's plan digest and shard digests: a run stopped at
    the third file reuses the first two; one whose recorded plan differs is rebuilt."""
    from kuration.pipeline.run import stage_packed as hours_packed

    real = hours_packed.write_packed_file
    calls: list[int] = []

    def stop_at_the_third_file(*a: Any, **kw: Any) -> dict[str, Any]:
        calls.append(1)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        return real(*a, **kw)

    job = _job(job_b)
    out = tmp_path / "stopped"
    out.mkdir()  # a folder the run did not create keeps its staging area on failure
    monkeypatch.setattr(hours_packed, "write_packed_file", stop_at_the_third_file)
    with pytest.raises(OSError), warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetGranularityWarning)
        run_job(job, out)
    monkeypatch.setattr(hours_packed, "write_packed_file", real)
    (journal,) = out.rglob("journal.jsonl")
    lines = [json.loads(x) for x in journal.read_text().splitlines()]
    packed_lines = [x for x in lines if x.get("packed") is True]
    assert len(packed_lines) == 2 and all(len(x["plan"]) == 64 for x in packed_lines)
    packed_lines[0]["plan"] = "0" * 64  # as if the first file had held other shards
    journal.write_text("".join(json.dumps(x) + "\n" for x in lines))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetGranularityWarning)
        res = run_job(job, out, resume=True)
    files = res.manifest["files"]
    assert res.resume["reused_shards"] == files[1]["shards"]
    assert res.resume["rebuilt_shards"] == len(res.manifest["shards"]) - files[1]["shards"]


@pytest.mark.slow  # two runs with a per-step Python encoder
def test_an_encoder_modality_is_built_track_by_track_with_the_per_file_values(
    job_b: dict, tmp_path: Path
) -> None:
    """An encoder hook is per track, so those row groups are built track by track through the
    same writer: every shard reads back as the per-file layout's."""
    from kuration import iter_shards
    from kuration.extend import register_encoder
    from kuration.output.encoders import _ENCODERS

    class FeetToMetres:
        def encode_batch(self, records: list, ctx: dict) -> dict:
            return {"alt_m": np.array([r["altitude"] * 0.3048 if r else 0.0 for r in records])}

    register_encoder("feet-to-metres-packed-test", FeetToMetres)
    try:
        job = _job(job_b)
        job["encoder"] = {"type": "feet-to-metres-packed-test"}
        alt_m = {"dtype": "float32", "shape": [], "source": "encoder:alt_m"}
        job["output"]["modalities"]["alt_m"] = alt_m
        _files(job, tmp_path / "packed")
        per_file = json.loads(json.dumps(job))
        for key in ("layout", "target_file_bytes", "row_group_bytes"):
            per_file["output"].pop(key)
        _files(per_file, tmp_path / "files")
    finally:
        _ENCODERS.unregister("feet-to-metres-packed-test")
    key = ("split", "source_id", "entity_id", "span_index", "shard_index")
    want = {tuple(m[k] for k in key): a for a, m in iter_shards(tmp_path / "files", with_meta=True)}
    got = {tuple(m[k] for k in key): a for a, m in iter_shards(tmp_path / "packed", with_meta=True)}
    assert list(got) == list(want) and got
    for k, arrays in got.items():
        assert sorted(arrays) == sorted(want[k])
        for name, a in arrays.items():
            np.testing.assert_array_equal(a, want[k][name], err_msg=name)
    assert any(np.any(a["alt_m"] > 0) for a in got.values())
