"""Job sources: timenet:// references are expanded in the registries the adapter reads."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import timenet as tn
from kuration.errors import SourceError
from kuration.pipeline.api.entry import run_job
from kuration.pipeline.spec.job import job_components, resolve_sources

SCHEMA = {
    "name": "pitch",
    "sample_hz": 10.0,
    "fields": [
        {"name": "position", "kind": "vector", "dims": 2, "semantics": "position", "unit": "m"}
    ],
}


def _registry(root: Path, name: str, groups: tuple[str, ...]) -> Path:
    """A registry holding acme/<name>@1.0: one 20 s, 10 Hz walker per group."""
    card = {"org": "acme", "name": name, "version": "1.0", "license": "CC0-1.0"}
    with tn.TimeFWriter(root, card) as w:
        for g in groups:
            rid = w.add_record(f"{g}-a", {"group": g, "entity": "a"})
            spec = tn.SignalSpec("float32", "m", rate_hz=10.0, start_ns=0)
            w.add_signal(rid, "x", np.arange(200, dtype=np.float32) * 0.5, spec)
            w.add_signal(rid, "y", np.zeros(200, np.float32), spec)
    return root


def _job(registries: list[str] | None, source: str) -> dict:
    adapter = {"type": "timenet", "fields": {"position": {"signals": ["x", "y"]}}}
    if registries is not None:
        adapter["registries"] = registries
    return {
        "schema": SCHEMA,
        "adapter": adapter,
        "sources": [source],
        "segmenter": {"window": 50, "stride": 50},
        "strategy": {
            "define": {"v": "field:position | speed | mean"},
            "method": "top-k",
            "params": {"by": "v"},
        },
        "output": {
            "shard_length": 50,
            "modalities": {
                "position": {"dtype": "float32", "shape": [2], "source": "field:position"}
            },
        },
        "budget": {"train_hours": 0.01, "test_hours": 0.0},
        "min_track_seconds": 5,
    }


@pytest.fixture
def no_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No $TIMENET_REGISTRY, and a home whose default registry is empty."""
    monkeypatch.delenv("TIMENET_REGISTRY", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path


def test_timenet_sources_use_the_adapters_registries(no_env: Path) -> None:
    reg = _registry(no_env / "reg", "pitch", ("g1", "g2"))
    job = _job([str(reg)], "timenet://acme/pitch@1.0?group_by=group")
    _, adapter, _ = job_components({**job, "schema": SCHEMA})
    got = resolve_sources(job["sources"], no_env, adapter=adapter)
    assert got == [
        "timenet://acme/pitch@1.0?group_by=group#g1",
        "timenet://acme/pitch@1.0?group_by=group#g2",
    ]
    # without the adapter there is no registry to look in
    with pytest.raises(SourceError, match="acme/pitch"):
        resolve_sources(job["sources"], no_env)


def test_adapter_registries_win_over_the_environment(
    no_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine = _registry(no_env / "mine", "pitch", ("g1",))
    other = _registry(no_env / "other", "pitch", ("x1", "x2", "x3"))
    monkeypatch.setenv("TIMENET_REGISTRY", str(other))
    job = _job([str(mine)], "timenet://acme/pitch@1.0?group_by=group")
    _, adapter, _ = job_components(job)
    assert resolve_sources(job["sources"], no_env, adapter=adapter) == [
        "timenet://acme/pitch@1.0?group_by=group#g1"
    ]
    # an adapter without registries falls back on the environment
    _, plain, _ = job_components(_job(None, job["sources"][0]))
    assert len(resolve_sources(job["sources"], no_env, adapter=plain)) == 3


def test_run_job_reads_a_registry_named_only_by_the_adapter(no_env: Path) -> None:
    reg = _registry(no_env / "reg", "walk", ("g1",))
    res = run_job(_job([str(reg)], "timenet://acme/walk@1.0?group_by=group"), no_env / "out")
    assert [s["source_id"] for s in res.config["pipeline"]["sources"]] == ["g1"]
    assert res.manifest["splits"]["train"]["shards"] > 0
