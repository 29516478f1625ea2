"""A real recording written by lerobot's own writer goes through kur init and kur run.

Two slices of the project's ADS-B sample are converted with lerobot 0.6.1's
``LeRobotDataset.create/add_frame/save_episode/finalize`` (lerobot_convert_adsb.py; each
episode one gap-free run of one aircraft's track: converted data, labelled so) in the cached
Python 3.12 environment of lerobot_env.py.  The environment is built on first use (minutes);
a build that fails fails this test (it does not skip).
"""

from __future__ import annotations

import json
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from kuration.cli.main import main as kur_main
from kuration.contracts.schema import SchemaSpec
from kuration.sources import adapter_from_dict
from lerobot_env import lerobot_python

HERE = Path(__file__).resolve().parent

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def converted(adsb_sources: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("lerobot-writer") / "adsb"
    cmd = [lerobot_python(), str(HERE / "lerobot_convert_adsb.py"), str(out), "300"]
    subprocess.run([*cmd, *map(str, adsb_sources[:2])], check=True, capture_output=True)
    return out


def test_lerobots_own_writer_reads_and_curates(converted: Path, tmp_path: Path, capsys) -> None:
    assert kur_main(["init", str(converted), "--out", str(tmp_path / "job")]) == 0
    printed = capsys.readouterr().out
    assert "45 episodes, 28929 frames at 1 fps" in printed
    assert "defect:" not in printed  # lerobot's own metadata passes every check
    job = json.loads((tmp_path / "job" / "job.json").read_text())
    assert "repair" not in job["adapter"] and job["segmenter"]["window"] == 30
    schema = SchemaSpec.from_dict(json.loads((tmp_path / "job" / "schema.json").read_text()))
    adapter = adapter_from_dict(job["adapter"], schema)
    data = pq.read_table(converted / "data" / "chunk-000" / "file-000.parquet").to_pydict()
    ep = np.asarray(data["episode_index"])
    state = np.asarray(data["observation.state"], dtype=np.float64)
    for uri in adapter.expand(str(converted))[:5]:
        table = adapter.read_table(uri)
        rows = ep == int(uri.rsplit("=", 1)[1])
        np.testing.assert_array_equal(table.values["state"][:, 0], state[rows])
        assert table.present.all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # whole episodes against the budget: granularity
        assert (
            kur_main(["run", str(tmp_path / "job" / "job.json"), "--out", str(tmp_path / "o")]) == 0
        )
    budget = json.loads((tmp_path / "o" / "config.json").read_text())["results"]["budget"]
    for split in ("train", "test"):
        b = budget[split]
        assert b["requested_s"] <= b["admitted_s"] == b["emitted_s"]
    assert budget["train"]["admitted_tracks"] + budget["test"]["admitted_tracks"] < 45
