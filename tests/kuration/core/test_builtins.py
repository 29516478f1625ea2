"""Built-ins by dotted path: every built-in name works in a fresh process, whatever was imported."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kuration.core.builtins import BUILTINS
from kuration.core.registry import Registry
from kuration.errors import MissingExtraError, RegistrationError

ROOT = Path(__file__).resolve().parents[3]


def _fresh(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_every_dotted_path_names_an_attribute_of_its_module() -> None:
    for kind, table in BUILTINS.items():
        for name, (path, _extra) in table.items():
            module, _, attr = path.partition(":")
            assert hasattr(importlib.import_module(module), attr), (kind, name, path)


def test_a_fresh_process_loads_each_built_in_on_first_use() -> None:
    # only the registry modules are imported: each built-in is loaded by its name
    code = """
import json, sys
from kuration.core.builtins import BUILTINS
from kuration.core.registry import Registry
import kuration.sources.base, kuration.output.containers, kuration.output.encoders
import kuration.output.presets, kuration.selection.methods.base, kuration.selection.filters
import kuration.metrics.seams, kuration.tools.analyzers
assert "kuration.read.curated" not in sys.modules
out = {}
for kind, table in BUILTINS.items():
    reg = Registry.of_builtin(kind)
    if reg is None:
        continue
    out[kind] = {n: (n in reg, type(reg.get(n)).__name__) for n in table}
print(json.dumps(out))
"""
    proc = _fresh(code)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    for kind in ("adapter", "container", "encoder", "preset", "method", "filter"):
        assert set(seen[kind]) == set(BUILTINS[kind]), kind
    for kind in ("transform", "scorer", "analyzer"):
        assert set(seen[kind]) == set(BUILTINS[kind]), kind
    assert all(inside for table in seen.values() for inside, _ in table.values())


def test_traits_of_a_built_in_are_known_before_its_module_is_imported() -> None:
    code = """
import sys
from kuration.core.traits import traits_of
import kuration.sources.base
assert "kuration.read.curated" not in sys.modules
t, declared = traits_of("adapter", "curated")
print(declared, t.scope)
"""
    proc = _fresh(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "source"]


def test_a_missing_extra_names_the_extra_and_a_silent_module_is_refused(monkeypatch) -> None:
    reg: Registry[object] = Registry("widget")
    monkeypatch.setattr(
        reg,
        "_builtins",
        {"gone": ("kuration_no_such_module:X", "widgets"), "silent": ("json:dumps", "")},
    )
    assert "gone" in reg and reg.names() == ("gone", "silent")
    with pytest.raises(MissingExtraError, match=r"kuration-sdk\[widgets\]"):
        reg.get("gone")
    with pytest.raises(RegistrationError, match="did not register"):
        reg.get("silent")
    with pytest.raises(KeyError, match="did you mean 'gone'"):
        reg.get("gon")


def test_kur_run_with_a_curated_adapter_in_a_fresh_process(tmp_path, base_b, job_b) -> None:
    """The bug: ``"adapter": {"type": "curated"}`` was unknown unless something imported it."""
    from kuration import CuratedDatasetAdapter, Segmenter

    ad = CuratedDatasetAdapter(base_b.path, split="train")
    job = {
        "schema": ad.schema.to_dict(),
        "adapter": {"type": "curated", "dataset": str(base_b.path), "split": "train"},
        "sources": ad.sources(),
        "segmenter": Segmenter(120, 60, unit="seconds", sample_hz=1.0).to_dict(),
        "strategy": job_b["strategy"],
        "output": {
            "shard_length": 64,
            "modalities": {
                "altitude": {"dtype": "float32", "shape": [], "source": "field:altitude"}
            },
        },
        "budget": {"train_hours": 0.2, "test_hours": 0.05},
    }
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    code = "import sys; from kuration.cli.main import main; sys.exit(main(sys.argv[1:]))"
    proc = _fresh(code, "run", str(path), "--out", str(tmp_path / "again"))
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((tmp_path / "again" / "dataset_manifest.json").read_text())
    assert manifest["shards"]


def test_capabilities_are_declared_not_read_from_names() -> None:
    from kuration.output.containers import container_can
    from kuration.sources.base import get_adapter

    assert get_adapter("timeseries").streams and not get_adapter("video").streams
    assert get_adapter("timenet").complete_schema  # type: ignore[attr-defined]
    assert [container_can(c, "streams") for c in ("npz", "json", "hdf5", "parquet")] == [
        False,
        True,
        True,
        True,
    ]
    assert [c for c in ("npz", "json", "hdf5", "parquet") if container_can(c, "packs")] == [
        "parquet"
    ]
