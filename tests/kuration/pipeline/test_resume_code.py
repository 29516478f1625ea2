"""Resume rebuilds when code outside kuration that shapes the shards changed.

A real plugin package is written to ``tmp_path``, named in the job's
``plugins`` list and edited between ``kur run`` invocations; each run is a
subprocess, so no import cache hides the edit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kuration import iter_shards
from kuration.core.plugins import code_identity, run_code, used_names
from kuration.extend import register_metric
from kuration.metrics.features import _METRICS

PLUGIN = {
    "__init__.py": (
        "from kuration.extend import register_metric\n"
        "from .helpers import level\n\n\n"
        '@register_metric("plug_level")\n'
        "def plug_level(buf):\n"
        "    return level(buf)\n"
    ),
    "helpers.py": "def level(buf):\n    return float(buf.n_steps)\n",
}


def _write_job(tmp: Path) -> Path:
    rows = ["t,id,x"]
    for t in range(240):
        rows += [f"{t},a,{t * 1.0}", f"{t},b,{t * 2.0}"]
    (tmp / "walk.csv").write_text("\n".join(rows) + "\n")
    job = {
        "schema": {
            "name": "walk",
            "sample_hz": 1.0,
            "fields": [{"name": "x", "kind": "scalar", "unit": "m"}],
        },
        "adapter": {
            "type": "timeseries",
            "time_column": "t",
            "entity_column": "id",
            "fields": {"x": "x"},
        },
        "sources": ["walk.csv"],
        "plugins": ["kur_resume_plug"],
        "segmenter": {"window": 60, "stride": 60, "unit": "seconds"},
        "strategy": {
            "define": {"x_mean": "field:x | mean"},
            "registered": ["plug_level"],
            "method": "top-k",
            "params": {"by": "x_mean"},
        },
        "output": {
            "shard_length": 60,
            "modalities": {
                "x": {"dtype": "float32", "shape": [], "source": "field:x"},
                "level": {"dtype": "float32", "shape": [], "source": "segment:plug_level"},
            },
        },
        "budget": {"train_hours": 0.1, "test_hours": 0.0},
        "min_track_seconds": 60,
    }
    path = tmp / "job.json"
    path.write_text(json.dumps(job))
    return path


def _kur_run(tmp: Path, *flags: str) -> str:
    env = {**os.environ, "PYTHONPATH": f"{tmp}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "kuration.cli.main",
            "run",
            str(tmp / "job.json"),
            "--out",
            str(tmp / "out"),
            *flags,
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        cwd=tmp,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def _levels(root: Path) -> set[float]:
    return {float(np.unique(a["level"])[0]) for a in iter_shards(root)}


@pytest.mark.slow  # three `kur run` processes (a fresh import of the edited plugin each time)
def test_editing_a_plugin_helper_rebuilds_on_resume(tmp_path: Path) -> None:
    pkg = tmp_path / "kur_resume_plug"
    pkg.mkdir()
    for name, text in PLUGIN.items():
        (pkg / name).write_text(text)
    _write_job(tmp_path)
    _kur_run(tmp_path)
    assert _levels(tmp_path / "out") == {60.0}
    run = json.loads((tmp_path / "out" / ".kuration_output_spec.json").read_text())["run"]
    assert set(run["code"]["plugin_modules"]) == {"kur_resume_plug"}
    ident = run["code"]["registered"]["registered metric:plug_level"]
    assert ident["object"] == "kur_resume_plug.plug_level" and len(ident["sha256"]) == 64

    same = _kur_run(tmp_path, "--resume")  # nothing changed: everything is reused
    assert "0 rebuilt" in same

    # only the helper module's body changes: the registered function itself is untouched
    (pkg / "helpers.py").write_text("def level(buf):\n    return -float(buf.n_steps)\n")
    again = " ".join(_kur_run(tmp_path, "--resume").split())  # the console wraps lines
    assert "resume: 0 shards reused" in again and "resume note:" in again
    assert _levels(tmp_path / "out") == {-60.0}
    resume = json.loads((tmp_path / "out" / "config.json").read_text())["results"]["resume"]
    assert resume["reused_shards"] == 0 and resume["rebuilt_shards"] == 8
    why = " ".join(resume["notes"])
    assert "code.plugin_modules.kur_resume_plug" in why
    assert "code.registered.registered metric:plug_level.sha256" in why
    assert why in again


def test_kuration_code_is_identified_by_version_and_plugins_by_digest(tmp_path: Path) -> None:
    from kuration.output.containers import get_container

    assert code_identity(get_container("npz")) is None
    strategy = {
        "registered": [],
        "method": "filter",
        "params": {"where": [{"filter": "range"}], "then": {"method": "top-k"}},
    }
    used = used_names(strategy, "timeseries", "npz")
    assert used["filter"] == ["predicate", "range"]
    assert used["selection method"] == ["filter", "top-k"]
    assert run_code(used) == {}  # only kuration's own code: nothing is added to the fingerprint

    def local_metric(buf) -> float:
        return 0.0

    register_metric("test_local_metric")(local_metric)
    try:
        code = run_code({"registered metric": ["test_local_metric"]})
    finally:
        _METRICS.unregister("test_local_metric")
    ident = code["registered"]["registered metric:test_local_metric"]
    assert ident["object"].endswith("local_metric") and len(ident["sha256"]) == 64
    assert code == run_code({"registered metric": []}) | code  # stable
