"""model_windows: (N, T, D) numpy windows across the shards of a span, on a real ADS-B
dataset (the shipped job on four sources, shards of 128 steps, 5-minute spans)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst

from kuration import model_windows, open_dataset
from kuration.errors import ReaderOptionError, UnknownModalityError, UnknownSplitError


@pytest.fixture(scope="module")
def dataset(base_b) -> Path:
    return Path(base_b.path)


def _runs(ds_path: Path, split: str) -> list[list[dict]]:
    """The manifest's shards per (source, entity), cut where they do not touch (reference)."""
    by: dict = {}
    for e in open_dataset(ds_path).entries(split):
        by.setdefault((e["source_id"], e["entity_id"]), []).append(e)
    runs = []
    for shards in by.values():
        shards.sort(key=lambda e: e["start_idx"])
        cur = [shards[0]]
        for e in shards[1:]:
            if cur[-1]["start_idx"] + cur[-1]["n_steps"] == e["start_idx"]:
                cur.append(e)
            else:
                runs.append(cur)
                cur = [e]
        runs.append(cur)
    return runs


def test_windows_join_the_shards_of_a_span(dataset: Path) -> None:
    w = model_windows(dataset, "train", ["position", "altitude"], length=91, stride=10)
    assert w.values.shape[1:] == (91, 3) and w.values.dtype == np.float64
    assert w.slices == {"position": slice(0, 2), "altitude": slice(2, 3)}
    assert len(w) == w.time_s.shape[0] == w.entity.shape[0] == w.start_idx.shape[0]
    text = repr(w)  # shapes, not the arrays (a fresh user's print ran to 39 kB)
    assert text.startswith(f"ModelWindows(values=({len(w)}, 91, 3) float64, ") and len(text) < 300
    hz = open_dataset(dataset).manifest["sample_hz"]
    np.testing.assert_allclose(np.diff(w.time_s, axis=1), 1.0 / hz)  # never across a gap
    assert w.present.all() and np.isfinite(w.values).all()
    # some window crosses a shard boundary (128 steps) and equals the joined shards
    crossing = [i for i in range(len(w)) if (w.start_idx[i] % 128) > 128 - 91]
    assert crossing
    ds = open_dataset(dataset)
    i = crossing[0]
    shards = [
        e
        for e in ds.entries("train")
        if e["source_id"] == w.source_id[i] and e["entity_id"] == w.entity[i]
    ]
    shards.sort(key=lambda e: e["start_idx"])
    got = []
    for e in shards:
        arr = ds.item(e)
        n = e["n_steps"]
        for k in range(n):
            got.append((e["start_idx"] + k, [*arr["position"][k], arr["altitude"][k]]))
    step = dict(got)
    want = np.array([step[int(w.start_idx[i]) + k] for k in range(91)], np.float64)
    np.testing.assert_array_equal(w.values[i], want)


@settings(max_examples=12, deadline=None)
@given(length=hst.integers(1, 400), stride=hst.integers(1, 200))
def test_the_count_is_the_runs_formula(dataset: Path, length: int, stride: int) -> None:
    """Without ``require_present`` a run of L steps gives ``floor((L - T) / S) + 1`` windows
    (none when ``L < T``)."""
    w = model_windows(
        dataset, "test", ["groundspeed"], length=length, stride=stride, require_present=False
    )
    lengths = [sum(e["n_steps"] for e in run) for run in _runs(dataset, "test")]
    assert len(w) == sum((n - length) // stride + 1 for n in lengths if n >= length)
    assert w.values.shape == (len(w), length, 1)


def test_absent_steps_are_dropped_unless_asked(dataset: Path) -> None:
    every = model_windows(dataset, None, length=30, stride=30, require_present=False)
    kept = model_windows(dataset, None, length=30, stride=30)
    assert len(kept) <= len(every)
    assert kept.present.all() and not np.isnan(kept.values).any()
    assert np.isnan(every.values[~every.present.all(axis=1)]).any() or every.present.all()
    f32 = model_windows(dataset, None, ["position"], length=30, stride=30, dtype=np.float32)
    assert f32.values.dtype == np.float32


def test_bad_options_are_named(dataset: Path) -> None:
    with pytest.raises(ReaderOptionError, match="length and stride"):
        model_windows(dataset, "train", length=0)
    with pytest.raises(UnknownModalityError):
        model_windows(dataset, "train", ["nope"], length=4)
    with pytest.raises(UnknownSplitError):
        model_windows(dataset, "validation", length=4)
    assert len(model_windows(dataset, "train", ["position"], length=10**6)) == 0
