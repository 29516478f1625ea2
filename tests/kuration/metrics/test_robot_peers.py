"""Episode-quality metrics whose definition a peer tool shares, checked against that tool's
own value on the same episodes.

Data: rdq 0.3.4's synthetic LeRobot v3 writer (MIT) with its fault injectors (idle
action, spike, dropped frames, late action, glitch, idle padding; episode 7 a copy of
episode 0).  References: ``robovet`` 0.2.2's ``jerk_rms`` (its scan of the action
stream) and ``lerobot-doctor`` 0.2.0's "consecutive identical actions" share (its
``check --json`` report); both are dev dependencies, run as their users run them.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from kuration.contracts.buffer import build_window
from kuration.contracts.schema import SchemaSpec
from kuration.metrics import robot
from kuration.sources.lerobot import LeRobotAdapter, parse_episode_uri

BIN = Path(sys.executable).parent
FAULTS = {
    1: "make_idle",
    2: "add_spike",
    3: "drop_frames",
    4: "delay_action",
    5: "add_glitch",
    6: "pad_idle",
}
FROZEN = re.compile(r"action: (\d+)% of episode (\d+) is consecutive identical actions")


@pytest.fixture(scope="module")
def faulty(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from rdq import synthetic

    root = tmp_path_factory.mktemp("rdqpeers") / "faulty"
    eps = synthetic.make_episodes(n_episodes=12, length=90, fps=30, seed=3)
    for i, name in FAULTS.items():
        getattr(synthetic, name)(eps[i])
    eps[7] = dict(eps[0])
    synthetic.write_dataset(root, eps, fps=30, with_video=False)
    return root


def _episodes(root: Path) -> dict[int, object]:
    """Each episode as one window over its recorded rows."""
    schema = SchemaSpec.from_dict(
        {
            "name": "so101",
            "sample_hz": 30,
            "fields": [
                {"name": "state", "kind": "vector", "dims": 6},
                {"name": "action", "kind": "vector", "dims": 6},
            ],
        }
    )
    a = LeRobotAdapter(schema, fields={"state": "observation.state", "action": "action"})
    out = {}
    for uri in a.expand(str(root)):
        t = a.read_table(uri)
        out[parse_episode_uri(uri)[1]] = build_window(t, 0, t.n_steps)
    return out


def test_jerk_rms_equals_robovet(faulty: Path) -> None:
    from robovet.dataset import LeRobotDataset
    from robovet.scan import scan_dataset

    ref = {e.index: e.jerk_rms for e in scan_dataset(LeRobotDataset(str(faulty))).episodes}
    ours = {ep: robot.jerk_rms_action(w) for ep, w in _episodes(faulty).items()}
    assert ours.keys() == ref.keys() and len(ref) == 12
    for ep, want in ref.items():
        assert ours[ep] == pytest.approx(want, rel=1e-6, abs=1e-9), ep
    assert ref[1] == 0.0 and ref[3] > 10 * np.median(list(ref.values()))  # idle, dropped


def test_frozen_run_equals_lerobot_doctor(faulty: Path) -> None:
    out = subprocess.run(
        [str(BIN / "lerobot-doctor"), "check", str(faulty), "--json"],
        capture_output=True,
        text=True,
    )
    report = json.loads(out.stdout)
    found = {
        int(m.group(2)): int(m.group(1))
        for c in report["checks"]
        if c["name"] == "Action Quality"
        for msg in c["messages"]
        if (m := FROZEN.search(msg["message"]))
    }
    assert found == {1: 99, 4: 12, 6: 50}  # idle action, late action, idle padding
    for ep, w in _episodes(faulty).items():
        share = robot.frozen_run_action(w)
        if ep in found:  # the doctor prints the share in whole percent
            assert round(share * 100) == found[ep], ep
        else:  # the doctor reports runs of 5 % and more
            assert share * 100 < 5, ep


@settings(max_examples=60, deadline=None)
@given(
    arrays(np.int8, st.tuples(st.integers(0, 40), st.integers(1, 3)), elements=st.integers(0, 2))
)
def test_longest_repeat_counts_the_longest_run(x: np.ndarray) -> None:
    best = run = 0
    for i in range(1, len(x)):
        run = run + 1 if (x[i] == x[i - 1]).all() else 0
        best = max(best, run)
    assert robot.longest_repeat(x) == best


@settings(max_examples=60, deadline=None)
@given(
    arrays(
        np.float64, st.tuples(st.integers(4, 30), st.integers(1, 4)), elements=st.floats(-1e3, 1e3)
    ),
    st.sampled_from([10.0, 30.0, 50.0]),
)
def test_jerk_rms_is_the_rms_of_third_differences(x: np.ndarray, hz: float) -> None:
    terms = [
        ((x[i + 3, j] - 3 * x[i + 2, j] + 3 * x[i + 1, j] - x[i, j]) * hz**3) ** 2
        for i in range(len(x) - 3)
        for j in range(x.shape[1])
    ]
    assert robot.jerk_rms(x, hz) == pytest.approx(np.sqrt(np.mean(terms)), rel=1e-9, abs=1e-3)
