"""grid_offset_s: rows stamped mid-interval with clock jitter keep one tick each."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kuration import SchemaSpec, TickStream, TimeseriesAdapter
from kuration.errors import AdapterError, JobError, SnapCollisionWarning
from kuration.sources._snap import snap_ticks


def schema(hz: float) -> SchemaSpec:
    return SchemaSpec.from_dict(
        {"name": "g", "sample_hz": hz, "fields": [{"name": "x", "kind": "scalar"}]}
    )


def mid_interval_csv(path: Path, hz: float, n: int, decimals: int, seed: int = 3) -> Path:
    """``n`` rows stamped half a step after each tick, N(0, 2 us) jitter, ``decimals`` digits."""
    rng = np.random.default_rng(seed)
    t = (np.arange(n) + 0.5) / hz + rng.normal(0.0, 2e-6, n)
    lines = ["t,x"] + [f"{a:.{decimals}f},{i}" for i, a in enumerate(t)]
    path.write_text("\n".join(lines) + "\n")
    return path


def adapter(hz: float, **kw) -> TimeseriesAdapter:
    return TimeseriesAdapter(schema(hz), time_column="t", fields={"x": "x"}, **kw)


@pytest.mark.parametrize(("hz", "decimals"), [(100.0, 7), (30.0, 9)])
def test_mid_interval_rows_collide_at_offset_zero_and_not_at_half_a_step(
    tmp_path: Path, hz: float, decimals: int
) -> None:
    path = str(mid_interval_csv(tmp_path / "rec.csv", hz, 3000, decimals))
    with pytest.warns(SnapCollisionWarning):
        before = adapter(hz).read_table(path)
    assert before.counts["snap_collisions"] > 0.2 * 3000  # the user's quarter of the rows
    with warnings.catch_warnings():
        warnings.simplefilter("error", SnapCollisionWarning)
        after = adapter(hz, grid_offset_s=0.5 / hz).read_table(path)
    assert after.counts["snap_collisions"] == 0
    assert after.present.all() and after.n_steps == 3000
    # tick k is at k / hz: the row stamped 0.5 step after tick k is on tick k, in file order
    assert after.k0 == 0
    np.testing.assert_array_equal(after.values["x"][:, 0, 0], np.arange(3000.0))
    np.testing.assert_array_equal(after.times(), np.arange(3000) / hz)


def test_streaming_snaps_with_the_offset_as_the_whole_read(tmp_path: Path) -> None:
    path = str(mid_interval_csv(tmp_path / "rec.csv", 100.0, 2000, 7))
    ad = adapter(100.0, grid_offset_s=0.005)
    whole = ad.read_table(path)
    blocks = list(TickStream(ad, path, batch_rows=300).blocks())
    assert sum(b.n_steps for b in blocks) == whole.n_steps == 2000
    got = np.concatenate([b.values["x"] for b in blocks])
    np.testing.assert_array_equal(got, whole.values["x"])


def test_the_offset_is_recorded_only_when_set() -> None:
    assert "grid_offset_s" not in adapter(100.0).options()  # old jobs' configs unchanged
    opts = adapter(100.0, grid_offset_s=0.005).options()
    assert opts["grid_offset_s"] == 0.005
    assert TimeseriesAdapter(schema(100.0), **opts).grid_offset_s == 0.005


@pytest.mark.parametrize("bad", [-0.001, 0.01, 0.5, math.nan, math.inf, "0.005", True, None])
def test_an_invalid_offset_is_refused_naming_the_option(bad: object) -> None:
    with pytest.raises(AdapterError, match=r"grid_offset_s must be"):
        adapter(100.0, grid_offset_s=bad)


def test_a_job_adapter_with_a_negative_offset_is_refused_at_load_time() -> None:
    from kuration.core.config import TimeseriesAdapterModel, validate_config

    adapter_doc = {"type": "timeseries", "time_column": "t", "fields": {"x": "x"}}
    ok = validate_config(TimeseriesAdapterModel, adapter_doc, kind="job", what="job.json")
    assert ok.grid_offset_s == 0.0
    with pytest.raises(JobError, match="grid_offset_s"):
        validate_config(
            TimeseriesAdapterModel, {**adapter_doc, "grid_offset_s": -0.1}, kind="job", what="j"
        )


def test_timenet_and_mcap_refuse_a_whole_step() -> None:
    from kuration.sources import TimenetAdapter
    from kuration.sources.mcap import McapAdapter  # the adapter imports mcap lazily

    with pytest.raises(AdapterError, match="grid_offset_s"):
        TimenetAdapter(schema(10.0), fields={"x": "x"}, grid_offset_s=0.1)
    assert TimenetAdapter(schema(10.0), fields={"x": "x"}).options().get("grid_offset_s") is None
    with pytest.raises(AdapterError, match="grid_offset_s"):
        McapAdapter(schema(10.0), fields={"x": "/t.x"}, grid_offset_s=0.1)
    assert "grid_offset_s" not in McapAdapter(schema(10.0), fields={"x": "/t.x"}).options()


@settings(max_examples=200, deadline=None)
@given(
    hz=st.floats(min_value=0.01, max_value=2000.0),
    phase=st.floats(min_value=0.0, max_value=0.999),
    jitter=st.floats(min_value=0.0, max_value=0.2),  # steps, standard deviation
    t0=st.integers(min_value=-1000, max_value=10**6),
    seed=st.integers(min_value=0, max_value=2**16),
)
@example(hz=100.0, phase=0.5, jitter=2e-4, t0=0, seed=0)  # the user's recorder
@example(hz=30.0, phase=0.5, jitter=6e-5, t0=0, seed=1)
def test_snapping_at_the_stamps_phase_keeps_one_row_per_tick(
    hz: float, phase: float, jitter: float, t0: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    n = 500
    # jitter bounded to 0.45 step: a row within half a step of its own shifted grid point
    noise = np.clip(rng.normal(0.0, jitter, n), -0.45, 0.45)
    t = (t0 + np.arange(n) + phase + noise) / hz
    offset = phase / hz
    if not offset < 1.0 / hz:  # phase / hz can round up to one step
        return
    k, off = snap_ticks(t, hz, offset)
    np.testing.assert_array_equal(k, t0 + np.arange(n))
    assert np.all(off <= 0.5)


def test_a_timenet_signal_stamped_mid_interval_keeps_its_steps(tmp_path: Path) -> None:
    import timenet as tn
    from kuration.sources import TimenetAdapter

    reg = tmp_path / "reg"
    rng = np.random.default_rng(5)
    ns = np.round((np.arange(1000) + 0.5) * 1e7 + rng.normal(0.0, 2e3, 1000)).astype(np.int64)
    with tn.TimeFWriter(
        reg, {"org": "lab", "name": "rec", "version": "1.0", "license": "CC0-1.0"}
    ) as w:
        w.add_record("r1", {"entity": "a"})
        spec = tn.SignalSpec("float64", "")  # times from 0 s: no epoch to round
        w.add_signal("r1", "x", np.arange(1000.0), spec, times=ns)
    src = "timenet://lab/rec@1.0#r1"
    kw = {"fields": {"x": "x"}, "registries": [str(reg)]}
    with pytest.warns(SnapCollisionWarning):
        before = TimenetAdapter(schema(100.0), **kw).read_table(src)
    assert before.counts["snap_collisions"] > 100
    after = TimenetAdapter(schema(100.0), grid_offset_s=0.005, **kw).read_table(src)
    assert after.counts["snap_collisions"] == 0 and after.present.all()
    np.testing.assert_array_equal(after.values["x"][:, 0, 0], np.arange(1000.0))
