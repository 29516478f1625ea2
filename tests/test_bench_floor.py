"""``bench/e2e_floor.py``: the floor of ``bench_e2e.py``'s job does the job's work.  Its
window features equal the ones ``kur run`` scores (every window of the quickstart sources,
all seven features), and its run writes shards that load, whose hashes are their bytes', and
a manifest naming each source's SHA-256."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np

from kuration import run_job

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, mod)
    spec.loader.exec_module(mod)
    return mod


floor = _load("e2e_floor")
bench_e2e = _load("bench_e2e")


def test_floor_features_are_the_runs(tmp_path: Path, adsb_sources: list[Path]) -> None:
    files = adsb_sources[:4]
    result = run_job(bench_e2e.job_for(files), tmp_path / "out", workers=1)
    want = {(s.source_id, s.entity, s.start_idx): s.features for s in result.scoring.segments}
    got = {}
    for f in files:
        grid, _ = floor.read_grid(f)
        starts, ents, feats = floor.window_features(grid)
        for i in range(starts.size):
            key = (f.stem, f"str:{grid.ids[ents[i]]}", int(starts[i]))
            got[key] = {k: float(v[i]) for k, v in feats.items()}
    assert got.keys() == want.keys() and len(got) > 1000
    for key, feats in got.items():
        assert feats.keys() == want[key].keys()
        for name, v in feats.items():
            assert np.isclose(v, want[key][name], rtol=1e-9, atol=1e-12, equal_nan=True), (
                key,
                name,
            )


def test_floor_run_writes_hashed_shards(tmp_path: Path, adsb_sources: list[Path]) -> None:
    out = tmp_path / "floor"
    for reread in (False, True):
        got = floor.floor_run(adsb_sources, out, reread=reread)
        manifest = json.loads((out / "manifest.json").read_bytes())
        assert manifest["sources"] == [
            hashlib.sha256(f.read_bytes()).hexdigest() for f in adsb_sources
        ]
        assert got["shards"] == len(manifest["shards"]) > 0
        present = 0
        for e in manifest["shards"]:
            data = (out / e["path"]).read_bytes()
            assert hashlib.sha256(data).hexdigest() == e["sha256"] and len(data) == e["size"]
            with np.load(out / e["path"]) as z:
                assert z["position"].shape == (floor.SHARD, 2) and z["_entity"].ndim == 0
                present += int(z["_present"].sum())
        assert present > len(manifest["shards"]) * floor.SHARD // 2
        if not reread:
            first = got
    assert got == first  # the reread writes the same bytes
