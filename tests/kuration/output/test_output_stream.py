"""write_stream: shards flushed from blocks hold the bytes ShardWriter.write cuts from the
whole track, for every short policy, with at most shard_length records buffered per track."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kuration import OutputSpec, SchemaSpec, TickTable
from kuration.contracts.track import track_from_table
from kuration.extend import ShardWriter
from kuration.output.stream import StreamTrack, write_stream
from kuration.output.writer import plan_entries

SCHEMA = SchemaSpec.from_dict(
    {
        "name": "t",
        "sample_hz": 2.0,
        "fields": [
            {"name": "pos", "kind": "vector", "dims": 2, "unit": ["m", "m"]},
            {"name": "n", "kind": "scalar", "dtype": "int64"},
        ],
    }
)


def source() -> TickTable:
    rng = np.random.default_rng(7)
    t, e = 90, 3
    present = rng.random((t, e)) < 0.8
    present[40:55] = False  # a gap the blocks leave out
    pos = rng.normal(size=(t, e, 2))
    pos[~present] = np.nan
    n = rng.integers(-5, 5, size=(t, e, 1)).astype(np.float64)
    n[~present] = np.nan
    ints = {"n": np.where(present[..., None], n, 0).astype(np.int64)}
    return TickTable("src", SCHEMA, 100, ("a", "b", "c"), {"pos": pos, "n": n}, present, ints=ints)


def blocks(tab: TickTable, bounds: list[tuple[int, int]]) -> list[TickTable]:
    return [
        TickTable(
            "src",
            SCHEMA,
            tab.k0 + a,
            tab.entity_ids,
            {k: v[a:b] for k, v in tab.values.items()},
            tab.present[a:b],
            ints={k: v[a:b] for k, v in tab.ints.items()},
        )
        for a, b in bounds
    ]


@pytest.mark.parametrize("policy", ["pad", "keep", "drop"])
def test_streamed_shards_are_the_whole_track_shards(tmp_path: Path, policy: str) -> None:
    spec = OutputSpec.from_dict(
        {
            "shard_length": 16,
            "short_policy": policy,
            "container": "json",
            "modalities": {
                "pos": {"dtype": "float32", "shape": [2], "source": "field:pos"},
                "n": {"dtype": "int16", "shape": [], "source": "field:n"},
                "p": {"dtype": "float64", "shape": [], "source": "segment:priority"},
            },
        }
    )
    tab = source()
    spans = [(0, 0, 89, None), (1, 3, 70, 0), (2, 10, 33, 4)]  # (entity, first, last, span)
    whole = ShardWriter(tmp_path / "whole", spec, SCHEMA)
    want = []
    for e, first, last, span in spans:
        track = track_from_table(tab, e, first, last, span, {"priority": 0.5})
        want.extend(whole.write(track, "train"))
    tracks = [
        StreamTrack(
            "train",
            tab.entity_ids[e],
            e,
            first,
            last,
            span,
            {"priority": 0.5},
            plan_entries(
                source_id="src",
                entity_id=tab.entity_ids[e],
                span_index=span,
                start_idx=first,
                n_steps=last - first + 1,
                k0=tab.k0,
                sample_hz=2.0,
                split="train",
                spec=spec,
            ),
        )
        for e, first, last, span in spans
    ]
    streamed = ShardWriter(tmp_path / "stream", spec, SCHEMA)
    parts = blocks(tab, [(0, 7), (7, 40), (55, 61), (61, 90)])
    most = write_stream(streamed, "src", tab.k0, parts, tracks)
    assert most == 3
    got = [e for t in tracks for e in t.planned]
    assert got == want  # paths, sizes and SHA-256 of every shard
    for e in want:
        assert (tmp_path / "stream" / e["path"]).read_bytes() == (
            tmp_path / "whole" / e["path"]
        ).read_bytes()
