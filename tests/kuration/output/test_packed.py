"""The packed layout's planning and canonical shard digest (kuration.output.packed)."""

from __future__ import annotations

import hashlib
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kuration.errors import OutputSpecError
from kuration.output.packed import (
    pack_plan,
    row_bytes,
    shard_digest,
)
from kuration.output.spec import OutputSpec

MODS = {
    "position": {"dtype": "float64", "shape": [2], "source": "field:position"},
    "altitude": {"dtype": "float32", "shape": [], "source": "field:altitude"},
}


def _spec(**kw: object) -> OutputSpec:
    return OutputSpec.from_dict({"shard_length": 8, "modalities": MODS, **kw})


def test_packed_defaults_to_parquet_and_refuses_per_file_containers() -> None:
    spec = _spec(layout="packed")
    assert spec.container == "parquet" and spec.packed
    assert spec.to_dict()["layout"] == "packed"
    assert "layout" not in _spec().to_dict()  # the default layout keeps old fingerprints
    with pytest.raises(OutputSpecError, match="container must be 'parquet', got 'npz'"):
        _spec(layout="packed", container="npz")
    with pytest.raises(OutputSpecError, match="apply to layout 'packed' only"):
        _spec(target_file_bytes=1024)
    with pytest.raises(OutputSpecError, match="layout"):
        _spec(layout="zip")
    assert OutputSpec.from_dict(spec.to_dict()) == spec


def test_row_bytes_counts_fixed_width_columns() -> None:
    # position 2 x 8, altitude 4, _present 1, _time_s 8, _n_steps 8
    assert row_bytes(_spec(layout="packed")) == 16 + 4 + 1 + 8 + 8
    assert row_bytes(_spec(layout="packed", presence_mask=False)) == 16 + 4 + 8 + 8


def _entries(shards: list[tuple[str, int, bool]]) -> list[dict]:
    return [
        {"path": f"{split}/s{i:03d}.parquet", "split": split, "n_steps": n, "padded": pad}
        for i, (split, n, pad) in enumerate(shards)
    ]


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(
        st.tuples(st.sampled_from(["test", "train"]), st.integers(1, 8), st.booleans()),
        min_size=1,
        max_size=60,
    ),
    rg=st.integers(1, 2000),
    target=st.integers(1, 5000),
)
def test_pack_plan_invariants(sizes: list, rg: int, target: int) -> None:
    sizes.sort(key=lambda s: s[0])  # manifest order: split first
    spec = _spec(layout="packed", row_group_bytes=rg, target_file_bytes=target)
    width = row_bytes(spec)
    entries = _entries(sizes)
    files = pack_plan(entries, spec)
    assert [e for f in files for e in f.entries] == entries  # every shard once, in order
    for split in ("test", "train"):
        names = [f.path for f in files if f.split == split]
        assert names == [f"{split}/part-{i:05d}.parquet" for i in range(len(names))]
    for f in files:
        row = 0
        for e in f.entries:
            assert e["path"] == f.path and e["split"] == f.split
            assert e["row_start"] == row  # rows are contiguous, never shared
            assert e["n_rows"] == (8 if e["padded"] else e["n_steps"])
            row += e["n_rows"]
        assert row == f.rows
        firsts = np.cumsum([0, *f.row_groups])
        for e in f.entries:  # a shard lies inside its row group
            assert firsts[e["row_group"]] <= e["row_start"]
            assert e["row_start"] + e["n_rows"] <= firsts[e["row_group"] + 1]
        for rows in f.row_groups[:-1]:  # only the last row group of a file may be small
            assert rows * width >= rg
        if f is not files[-1] and files[files.index(f) + 1].split == f.split:
            assert f.rows * width >= target  # a file closes once it holds its target


def test_file_count_grows_with_bytes_not_shards() -> None:
    spec = _spec(layout="packed", row_group_bytes=1000, target_file_bytes=10_000)
    few = pack_plan(_entries([("train", 8, False)] * 100), spec)
    many = pack_plan(_entries([("train", 1, False)] * 800), spec)  # 8x the shards, same rows
    assert len(few) == len(many) == -(-100 * 8 * row_bytes(spec) // 10_000)


def _reference_digest(arrays: dict[str, np.ndarray]) -> tuple[int, str]:
    """docs/format.md's byte stream, written out independently."""
    out = b""
    for name in sorted(arrays):
        a = arrays[name]
        if a.dtype.kind == "U":
            kind, body = "str", str(a.item()).encode()
        else:
            le = a.astype(a.dtype.newbyteorder("<"))
            kind, body = le.dtype.str, le.tobytes(order="C")
        head = f"{name}\0{kind}\0{','.join(map(str, a.shape))}\0".encode()
        out += head + struct.pack("<Q", len(body)) + body
    return len(out), hashlib.sha256(out).hexdigest()


@settings(max_examples=80, deadline=None)
@given(
    rows=st.integers(1, 12),
    values=st.lists(st.floats(allow_nan=True, width=32), min_size=24, max_size=24),
    big=st.booleans(),
)
def test_shard_digest_is_the_documented_stream(rows: int, values: list, big: bool) -> None:
    pos = np.array(values[: rows * 2], dtype=np.float64).reshape(rows, 2)
    arrays = {
        "position": pos.astype(">f8") if big else pos,  # byte order is normalised
        "altitude": np.asfortranarray(np.array(values[:rows], dtype=np.float32)),
        "_present": np.arange(rows) % 2 == 0,
        "_n_steps": np.array(rows, dtype=np.int64),
        "_entity": np.array("str:3c6444"),
    }
    assert shard_digest(arrays) == _reference_digest(arrays)
    changed = dict(arrays, _present=~arrays["_present"])
    assert shard_digest(changed)[1] != shard_digest(arrays)[1]
    wide = dict(arrays, altitude=arrays["altitude"].astype(np.float64))
    assert shard_digest(wide)[1] != shard_digest(arrays)[1]  # the dtype is hashed too
