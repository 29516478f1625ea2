"""kur init's grid phase: mid-interval stamps get a grid offset, not an irregular-steps verdict."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kuration import SchemaSpec, TimeseriesAdapter
from kuration.cli.main import main as kur_main
from kuration.onboard.init_phase import grid_phase
from kuration.onboard.init_rate import choose_rate, collisions_at


def jittered(hz: float, n: int, phase: float, seed: int = 11) -> np.ndarray:
    """``n`` rows ``phase`` steps after each tick with N(0, 2 us) clock jitter, seconds."""
    rng = np.random.default_rng(seed)
    return (np.arange(n) + phase) / hz + rng.normal(0.0, 2e-6, n)


@pytest.mark.parametrize("hz", [100.0, 30.0])
def test_mid_interval_stamps_get_half_a_step(hz: float) -> None:
    t = jittered(hz, 4000, 0.5)
    gp = grid_phase(t, hz)
    assert abs(gp.phase - 0.5) < 1e-3 and gp.concentration > 0.99
    assert gp.offset_s == pytest.approx(0.5 / hz, rel=5e-3) and gp.offset_s < 1.0 / hz
    ent = np.zeros(t.size, dtype=np.int64)
    assert collisions_at(t, ent, hz, 0.0) > 0.2 * t.size  # on the boundary: a quarter collide
    assert collisions_at(t, ent, hz) == 0  # counted with the offset init proposes
    rc = choose_rate(t, ent, coarse=False)
    assert rc.hz == hz and rc.regular and rc.collisions == 0
    assert not any("irregular" in line for line in rc.lines), rc.lines


@pytest.mark.parametrize("phase", [0.0, 0.1, 0.9, 0.999])
def test_stamps_far_from_the_half_step_keep_the_plain_grid(phase: float) -> None:
    assert grid_phase(jittered(100.0, 2000, phase), 100.0).offset_s == 0.0


def test_irregular_stamps_have_no_common_phase() -> None:
    rng = np.random.default_rng(0)
    t = np.cumsum(rng.uniform(0.001, 0.02, 3000))
    gp = grid_phase(t, 100.0)
    assert gp.concentration < 0.2 and gp.offset_s == 0.0
    assert grid_phase(np.array([]), 100.0).offset_s == 0.0


@pytest.mark.parametrize(("hz", "decimals"), [(100.0, 7), (30.0, 9)])
def test_init_proposes_the_offset_and_the_job_loses_no_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], hz: float, decimals: int
) -> None:
    n = 3000
    t = jittered(hz, n, 0.5, seed=4)
    csv = tmp_path / "rec.csv"
    csv.write_text("time_s,x_m\n" + "".join(f"{a:.{decimals}f},{i}\n" for i, a in enumerate(t)))
    assert kur_main(["init", str(csv), "--out", str(tmp_path / "job")]) == 0
    out = capsys.readouterr().out
    assert "irregular" not in out and "--rate" not in out
    assert "grid phase" in out and "grid_offset_s" in out
    assert f"{n} rows, {n} kept on their own tick" in out  # init's dry read
    job = json.loads((tmp_path / "job" / "job.json").read_text())
    opts = {k: v for k, v in job["adapter"].items() if k != "type"}
    assert opts["grid_offset_s"] == pytest.approx(0.5 / hz, rel=5e-3)
    assert "collisions" not in opts  # nothing left to merge
    schema = SchemaSpec.from_dict(json.loads((tmp_path / "job" / "schema.json").read_text()))
    table = TimeseriesAdapter(schema, **opts).read_table(str(csv))
    assert table.counts["snap_collisions"] == 0 and int(table.present.sum()) == n


@settings(max_examples=100, deadline=None)
@given(
    hz=st.floats(min_value=0.1, max_value=1000.0),
    phase=st.floats(min_value=0.3, max_value=0.7),
    jitter=st.floats(min_value=0.0, max_value=0.03),  # steps, standard deviation
    t0=st.integers(min_value=0, max_value=10**5),
    seed=st.integers(min_value=0, max_value=2**16),
)
def test_the_proposed_offset_keeps_a_jittered_series_one_row_per_tick(
    hz: float, phase: float, jitter: float, t0: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    n = 400
    t = (t0 + np.arange(n) + phase + rng.normal(0.0, jitter, n)) / hz
    t.sort()
    gp = grid_phase(t, hz)
    assert 0.0 < gp.offset_s < 1.0 / hz
    assert collisions_at(t, np.zeros(n, dtype=np.int64), hz, gp.offset_s) == 0
