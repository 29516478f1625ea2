"""kur init on an animal track: x/y without units, a frame counter.

The data is generated in the shape of traja 25.0.1's ``traja/tests/data/3527.csv``
(Frame, Time, TrackId, x, y, ValueChanged at 50 Hz); traja is not pinned as a recording.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kuration import init_job
from kuration.errors import InitError
from kuration.onboard.guess import counter_step


def _track(path: Path, n: int = 400) -> Path:
    rows = [
        f"{8 + i},{0.16 + i * 0.02:.2f},8,{195 - 40 * math.sin(i / 30):.7f},"
        f"{30 * math.cos(i / 25):.7f},{'TRUE' if i % 3 else 'FALSE'}"
        for i in range(n)
    ]
    path.write_text("Frame,Time,TrackId,x,y,ValueChanged\n" + "\n".join(rows) + "\n")
    return path


def _metrics(job: Path) -> list[str]:
    strategy = json.loads((job / "strategy.json").read_text())
    return list(strategy["define"])


def test_unitless_x_y_stay_scalars_and_init_prints_the_units_hint(tmp_path: Path) -> None:
    res = init_job([_track(tmp_path / "3527.csv")], tmp_path / "job")
    x = next(line for line in res.lines if line.strip().startswith("x: "))
    assert "named like cartesian coordinates" in x
    assert """--units '{"x":"m","y":"m"}'""" in x
    assert "x_std" in _metrics(tmp_path / "job")
    # the hint as printed, given as JSON text, pairs them into one position
    res = init_job([tmp_path / "3527.csv"], tmp_path / "job2", units='{"x":"cm","y":"cm"}')
    schema = json.loads((tmp_path / "job2" / "schema.json").read_text())
    pos = next(f for f in schema["fields"] if f["name"] == "position")
    assert pos["semantics"] == "position" and pos["dims"] == 2 and pos["unit"] == "cm"
    assert "speed_p90" in _metrics(tmp_path / "job2")
    with pytest.raises(InitError, match="--units"):  # broken JSON text is named, not a file
        init_job([tmp_path / "3527.csv"], tmp_path / "job3", units='{"x": "cm",')


def test_a_frame_counter_is_no_field_and_no_metric(tmp_path: Path) -> None:
    res = init_job([_track(tmp_path / "3527.csv")], tmp_path / "job")
    schema = json.loads((tmp_path / "job" / "schema.json").read_text())
    assert "frame" not in [f["name"] for f in schema["fields"]]
    assert not any(m.startswith("frame") for m in _metrics(tmp_path / "job"))
    assert any("Frame (a counter: its integers rise by 1 a row" in line for line in res.lines)


def test_counter_step_needs_the_name_and_the_shape() -> None:
    ramp = np.arange(10, 60)
    assert counter_step("Frame", ramp) == 1
    assert counter_step("frameNo", ramp * 2) == 2
    assert counter_step("sample_index", np.r_[ramp, ramp]) == 1  # one restart: a new take
    assert counter_step("speed", ramp) is None  # a ramp not named like a counter
    assert counter_step("step_count", np.cumsum(np.arange(50) % 3 + 1)) is None  # a pedometer
    assert counter_step("frame", np.r_[ramp, ramp, ramp, ramp][::-1]) is None  # falling
    assert counter_step("frame", np.repeat(ramp, 2)) == 1  # two players share each frame


@given(st.integers(-1000, 1000), st.integers(1, 7), st.integers(3, 200))
def test_any_constant_step_ramp_is_a_counter(start: int, step: int, n: int) -> None:
    values = start + step * np.arange(n)
    assert counter_step("idx", values) == step
    jolted = values.copy()
    jolted[n // 2 :] += 1  # one uneven step: no longer a counter
    assert counter_step("idx", jolted) is None
