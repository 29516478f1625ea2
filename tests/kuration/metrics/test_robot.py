"""Episode-quality metrics (kuration.metrics.robot) and the robot strategy, checked against rdq.

Data: rdq 0.3.4's synthetic LeRobot v3 writer (MIT) with its own fault injectors; rdq is
a dev dependency, so a missing one fails these tests.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from kuration.contracts.buffer import build_window
from kuration.contracts.schema import SchemaSpec
from kuration.metrics import robot
from kuration.sources.lerobot import LeRobotAdapter

RDQ = str(Path(sys.executable).parent / "rdq")
#: episode -> rdq injector; each is an episode-level defect the robot strategy must keep out
FAULTS = {
    1: "make_idle",
    2: "add_spike",
    3: "drop_frames",
    4: "delay_action",
    5: "add_glitch",
    6: "pad_idle",
}
EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "lerobot" / "strategy.json"


def _adapter() -> LeRobotAdapter:
    schema = SchemaSpec.from_dict(
        {
            "name": "so101",
            "sample_hz": 30,
            "fields": [
                {"name": "state", "kind": "vector", "dims": 6},
                {"name": "action", "kind": "vector", "dims": 6},
                {"name": "gripper", "kind": "scalar"},
            ],
        }
    )
    fields = {"state": "observation.state", "action": "action"}
    return LeRobotAdapter(schema, fields={**fields, "gripper": "observation.state[gripper]"})


@pytest.fixture(scope="module")
def faulty(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """12 rdq episodes: FAULTS injected, episode 7 a copy of episode 0, the rest clean."""
    from rdq import synthetic

    root = tmp_path_factory.mktemp("rdq") / "faulty"
    eps = synthetic.make_episodes(n_episodes=12, length=90, fps=30, seed=3)
    for i, name in FAULTS.items():
        getattr(synthetic, name)(eps[i])
    eps[7] = dict(eps[0])
    synthetic.write_dataset(root, eps, fps=30, with_video=False)
    return root


@pytest.mark.slow
def test_ldj_equals_rdq_on_the_same_episodes(faulty: Path) -> None:
    """rdq scores LDJ (its ``ldlj``) on each joint robust-standardised over the dataset
    (median, IQR / 1.349); the same positions through :func:`robot.ldj` give its value."""
    out = faulty.parent / "rank.json"
    subprocess.run([RDQ, "rank", str(faulty), "--json", str(out)], check=True, capture_output=True)
    ref = json.loads(out.read_text())["episodes"]
    a = _adapter()
    tables = [a.read_table(u) for u in a.expand(str(faulty))]
    states = [t.values["state"][t.present[:, 0], 0] for t in tables]
    every = np.concatenate(states)
    q75, q25 = np.percentile(every, [75, 25], axis=0)
    center, scale = np.median(every, axis=0), (q75 - q25) / 1.349
    for ep, s in enumerate(states):
        got = robot.ldj((s - center) / scale, 30.0)
        assert got == pytest.approx(ref[str(ep)]["ldlj"], rel=1e-9, abs=1e-9), ep


def test_each_injected_defect_is_flagged_by_its_metric(faulty: Path) -> None:
    a = _adapter()
    whole = {}
    for uri in a.expand(str(faulty)):
        t = a.read_table(uri)
        whole[int(uri.rsplit("=", 1)[1])] = build_window(t, 0, t.n_steps)
    clean = [whole[i] for i in (0, 8, 9, 10, 11)]
    assert robot.static_fraction_action(whole[1]) == 1.0  # rdq make_idle: a frozen action
    assert max(robot.static_fraction_action(b) for b in clean) == 0.0
    assert robot.spike_z_state(whole[2]) > 30 and robot.spike_z_state(whole[5]) > 30
    assert max(robot.spike_z_state(b) for b in clean) < 30
    assert robot.gap_fraction(whole[3]) == pytest.approx(15 / whole[3].n_steps)  # 15 dropped
    assert robot.action_state_lag_s(whole[4]) < 0  # action written 10 frames late: state leads
    assert [robot.action_state_lag_s(b) for b in clean] == pytest.approx([2 / 30] * 5)  # rdq: 2


@pytest.mark.slow
def test_the_robot_strategy_keeps_every_flagged_episode_out(faulty: Path, tmp_path: Path) -> None:
    """The shipped strategy (examples/lerobot, as kur init writes it) admits exactly the
    clean episodes; rdq's own rule flags land on episodes it kept out."""
    from kuration.onboard.init import init_job

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = init_job([faulty], tmp_path / "job", fraction=1.0)
    job = json.loads((tmp_path / "job" / "job.json").read_text())
    job["budget"] = {"train_hours": 1.0, "test_hours": 0.0}  # room for every clean episode
    job["allow_empty_split"] = True
    (tmp_path / "job" / "job.json").write_text(json.dumps(job))
    assert res.job["strategy"]["filters"] == json.loads(EXAMPLE.read_text())["filters"]
    kur = str(Path(sys.executable).parent / "kur")
    done = subprocess.run(
        [kur, "run", str(tmp_path / "job" / "job.json"), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    cfg = json.loads((tmp_path / "out" / "config.json").read_text())
    admitted = {int(s[2:8]) for s in _admitted(tmp_path / "out")}
    assert admitted == {0, 8, 9, 10, 11}  # 1-6 injected, 7 a duplicate of 0
    assert cfg["results"]["budget"]["train"]["nonfinite_excluded"] == 7
    subprocess.run([RDQ, "rank", str(faulty), "--json", str(tmp_path / "r.json")], check=True)
    flagged = {
        int(k)
        for k, v in json.loads((tmp_path / "r.json").read_text())["episodes"].items()
        if v["rule_flags"]
    }
    assert flagged and not flagged & admitted


def _admitted(out: Path) -> set[str]:
    return {p.name.split("_robot_")[0] for p in (out / "train").glob("*.npz")}


@settings(max_examples=40, deadline=None)
@given(
    arrays(np.float64, (40, 3), elements=st.floats(-100, 100)),
    st.floats(0.01, 1000),
)
def test_ldj_is_dimensionless(x: np.ndarray, k: float) -> None:
    a, b = robot.ldj(x, 30.0), robot.ldj(k * x, 30.0)
    if np.isnan(a) or np.isnan(b):
        return
    assert b == pytest.approx(a, abs=1e-6)


@settings(max_examples=40, deadline=None)
@given(st.integers(-10, 10), st.integers(0, 2**31))
def test_lag_recovers_a_known_shift(shift: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = np.cumsum(rng.normal(size=(200, 2)), axis=0)
    s = np.roll(a, shift, axis=0)
    assert robot.action_state_lag(a[20:-20], s[20:-20], 15) == shift


def test_kernels_on_known_signals() -> None:
    g = np.array([0, 1, 0, 1, 0, 1, 1, 1], dtype=float)
    assert robot.direction_reversals(g) == 4
    assert robot.static_fraction(np.ones((10, 2))) == 1.0
    x = np.c_[np.arange(10.0), np.zeros(10)]
    assert robot.dead_dims(x) == 1 and robot.static_fraction(x) == 0.0
    ramp = np.linspace(0, 1, 50)[:, None]
    assert robot.hampel_z(ramp).max() == pytest.approx(0.0, abs=1e-9)
    ramp[25] += 1
    assert robot.hampel_z(ramp).argmax() == 25
