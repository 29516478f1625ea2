"""CuratedDatasetAdapter: a curated dataset re-ingested as sources, from every container."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kuration import (
    CuratedDatasetAdapter,
    OutputSpec,
    Segmenter,
    iter_shards,
    load_strategy,
    run_job,
    write_dataset,
)
from kuration.errors import SchemaError
from kuration.sources import adapter_from_dict, registered_adapters

# small budgets filled with whole 15-minute tracks overshoot their request on purpose here
pytestmark = pytest.mark.filterwarnings("ignore::kuration.errors.BudgetGranularityWarning")


@pytest.fixture(scope="module", params=["npz", "json", "hdf5", "parquet"])
def curated(request, tmp_path_factory, job_b, base_b):
    if request.param == "npz":
        return base_b
    job = json.loads(json.dumps(job_b))
    job["output"]["container"] = request.param
    return run_job(job, tmp_path_factory.mktemp(request.param) / "ds")


def test_one_source_per_track_gives_the_track_back(curated) -> None:
    ad = CuratedDatasetAdapter(curated.path)
    assert "curated" in registered_adapters()
    uris = ad.sources()
    tracks = {
        (e["split"], e["source_id"], e["entity_id"], e["span_index"])
        for e in curated.manifest["shards"]
    }
    assert len(uris) == len(tracks)
    # reassemble the first track from the reader and compare
    uri = uris[0]
    table = ad.read_table(uri)
    stem = uri.rpartition("#")[2]
    parts = [
        (a, m)
        for a, m in iter_shards(curated.path, with_meta=True)
        if m["path"].startswith(stem + "_shard")
    ]
    present = np.concatenate([a["_present"] for a, _ in parts])
    alt = np.concatenate([a["altitude"] for a, _ in parts]).astype(np.float64)
    pos = np.concatenate([a["position"] for a, _ in parts])
    assert table.present[:, 0].tolist() == present.tolist()
    np.testing.assert_array_equal(table.values["altitude"][present, 0, 0], alt[present])
    np.testing.assert_array_equal(table.values["position"][present, 0], pos[present])
    assert np.isnan(table.values["altitude"][~present]).all()  # absent, not zero
    meta0 = parts[0][1]
    assert table.entity_ids == (meta0["entity_id"].partition(":")[2],)
    assert table.k0 == round(meta0["start_time_s"] * table.sample_hz)
    assert len(ad.fingerprint(uri)) == 64


def test_one_source_per_shard_and_rebuild_from_dict(curated) -> None:
    ad = adapter_from_dict(
        {"type": "curated", "dataset": str(curated.path), "unit": "shard", "split": "test"},
        CuratedDatasetAdapter(curated.path).schema,
    )
    uris = ad.sources()
    test_shards = [e for e in curated.manifest["shards"] if e["split"] == "test"]
    assert len(uris) == len(test_shards)
    table = ad.read_table(uris[0])
    assert table.n_steps == test_shards[0]["n_steps"]
    assert ad.to_dict()["unit"] == "shard"


def test_schema_keeps_field_semantics_and_rejects_unknown_fields(base_b) -> None:
    ad = CuratedDatasetAdapter(base_b.path)
    pos = ad.schema.field("position")
    assert pos.semantics == "position" and pos.frame == "geodetic" and pos.dims == 2
    assert ad.schema.field("turn_p90").kind == "scalar"
    from kuration import SchemaSpec

    wrong = SchemaSpec.from_dict({"sample_hz": 1.0, "fields": [{"name": "nope", "kind": "scalar"}]})
    with pytest.raises(SchemaError, match="no modality"):
        CuratedDatasetAdapter(base_b.path, wrong)


def test_curating_a_curated_dataset(tmp_path, base_b, job_b) -> None:
    ad = CuratedDatasetAdapter(base_b.path, split="train")
    strategy = load_strategy(job_b["strategy"], ad.schema)
    spec = OutputSpec.from_dict(
        {
            "shard_length": 64,
            "modalities": {
                "altitude": {"dtype": "float32", "shape": [], "source": "field:altitude"},
                "turn": {"dtype": "float32", "shape": [], "source": "segment:turn_p90"},
            },
        }
    )
    res = write_dataset(
        tmp_path / "again",
        schema=ad.schema,
        adapter=ad,
        sources=ad.sources(),
        strategy=strategy,
        segmenter=Segmenter(120, 60, unit="seconds", sample_hz=1.0),
        spec=spec,
        train_hours=0.2,
        test_hours=0.05,
    )
    assert res.manifest["shards"]
    assert all(
        s["fingerprint"]
        for s in json.loads((res.path / ".kuration_output_spec.json").read_text())["run"]["sources"]
    )
    assert sum(1 for _ in iter_shards(res.path)) == len(res.manifest["shards"])
