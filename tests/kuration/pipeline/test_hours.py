"""write_dataset on the real ADS-B sources: containers, layout, spans, options, commit and resume."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from kuration import iter_shards, run_job, shard_entries
from kuration.core.ids import tag_entity_id
from kuration.errors import (
    BudgetGranularityWarning,
    DatasetExistsError,
    DatasetIntegrityError,
    EmptyPoolError,
    OutputSpecError,
)
from kuration.extend import register_encoder
from kuration.output.commit import JOURNAL_FORMAT
from kuration.output.encoders import _ENCODERS

# small budgets filled with whole 15-minute tracks overshoot their request on purpose here
pytestmark = pytest.mark.filterwarnings("ignore::kuration.errors.BudgetGranularityWarning")

CONTAINERS = ("json", "hdf5", "parquet")


def _job(base: dict, **changes) -> dict:
    job = json.loads(json.dumps(base))
    for key, value in changes.items():
        if key.startswith("output."):
            job["output"][key.split(".", 1)[1]] = value
        else:
            job[key] = value
    return job


@pytest.fixture(scope="module")
def by_container(tmp_path_factory, job_b, base_b):
    out = {"npz": base_b}
    for c in CONTAINERS:
        out[c] = run_job(_job(job_b, **{"output.container": c}), tmp_path_factory.mktemp(c) / "ds")
    return out


def test_every_container_reads_back_the_same_arrays_and_dtypes(by_container) -> None:
    ref = list(iter_shards(by_container["npz"].path, with_meta=True))
    dtypes = {
        k: np.dtype(m["dtype"]) for k, m in by_container["npz"].manifest["modalities"].items()
    }
    assert dtypes["onground"] == np.uint8
    for name in CONTAINERS:
        res = by_container[name]
        got = list(iter_shards(res.path, with_meta=True))
        assert len(got) == len(ref)
        for (a, ma), (b, mb) in zip(ref, got, strict=True):
            assert Path(ma["path"]).stem == Path(mb["path"]).stem
            assert mb["path"].endswith(
                {"json": ".json", "hdf5": ".h5", "parquet": ".parquet"}[name]
            )
            assert set(a) == set(b)
            for k in a:
                assert b[k].dtype == a[k].dtype and b[k].shape == a[k].shape, (name, k)
                np.testing.assert_array_equal(b[k], a[k])
            for k in dtypes:
                assert b[k].dtype == dtypes[k]


def test_containers_are_byte_deterministic_end_to_end(
    tmp_path, job_b, by_container, digests
) -> None:
    for name in ("hdf5", "parquet"):
        again = run_job(_job(job_b, **{"output.container": name}), tmp_path / name)
        assert digests(again.path) == digests(by_container[name].path)


def test_layout_names_and_manifest_order(base_b) -> None:
    root, man = base_b.path, base_b.manifest
    pat = re.compile(r"^(train|test)/[A-Za-z0-9._-]{1,64}_[0-9a-f]{12}_shard\d{4}\.npz$")
    entries = man["shards"]
    assert all(pat.match(e["path"]) for e in entries)
    key = [
        (
            e["split"],
            e["source_id"],
            e["entity_id"],
            -1 if e["span_index"] is None else e["span_index"],
            e["shard_index"],
        )
        for e in entries
    ]
    assert key == sorted(key)
    on_disk = {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}
    meta = {
        "dataset_manifest.json",
        "config.json",
        "dataset.commit.json",
        ".kuration_output_spec.json",
        ".kuration-writer.lock",
    }
    assert on_disk == {e["path"] for e in entries} | meta
    commit = json.loads((root / "dataset.commit.json").read_text())
    marker = json.loads((root / ".kuration_output_spec.json").read_text())
    assert commit["state"] == "committed"
    assert commit["run_fingerprint"] == marker["run_fingerprint"] == man["run_fingerprint"]
    assert set(marker["run"]) >= {"output", "sources", "kuration_version", "strategy", "budget"}
    assert all(s["fingerprint"] for s in marker["run"]["sources"])
    for split in ("train", "test"):
        b = man["budget"][split]
        assert {"requested_s", "candidate_s", "admitted_s", "emitted_s", "underfill_s"} <= set(b)
        assert {"dropped_tail_s", "nonfinite_excluded", "group_cap_excluded"} <= set(b)


def test_spans_subdivide_tracks(tmp_path, job_b) -> None:
    res = run_job(_job(job_b, span_seconds=300), tmp_path / "spans")
    entries = res.manifest["shards"]
    assert all(e["span_index"] is not None for e in entries)
    assert all("_span" in e["path"] for e in entries)
    spans = {(e["source_id"], e["entity_id"], e["span_index"]) for e in entries}
    assert res.manifest["budget"]["span_steps"] == 300
    lengths: dict[tuple, int] = {}
    for e in entries:
        k = (e["source_id"], e["entity_id"], e["span_index"])
        lengths[k] = lengths.get(k, 0) + e["n_steps"]
    assert max(lengths.values()) <= 300 and len(spans) == len(lengths)
    b = res.manifest["budget"]["train"]
    assert b["requested_s"] <= b["admitted_s"] < b["requested_s"] + 300
    # segment: modalities hold the span's own aggregate (clip_aggregate "mean" in this job)
    first: dict[tuple, int] = {}
    for e in entries:
        k = (e["source_id"], e["entity_id"], e["span_index"])
        first.setdefault(k, e["start_idx"])
    checked = 0
    for arr, meta in iter_shards(res.path, with_meta=True, modalities=["turn_p90"]):
        if meta["shard_index"] != 0:
            continue
        k = (meta["source_id"], meta["entity_id"], meta["span_index"])
        a, b = first[k], first[k] + lengths[k] - 1
        vals = [
            s.features["turn_p90"]
            for s in res.scoring.segments
            if s.source_id == k[0] and s.start_idx <= b and s.end_idx > a
        ]
        want = np.float32(np.mean([v for v in vals if np.isfinite(v)]))
        got = arr["turn_p90"][arr["_present"]]
        assert np.all(got == want), k
        checked += 1
    assert checked == len(spans)


def test_options_are_checked_before_any_work(tmp_path, job_b) -> None:
    job = _job(
        job_b, span_steps=64, sources=["/no/such/source.parquet"], **{"output.short_policy": "drop"}
    )
    with pytest.raises(OutputSpecError, match="zero shards"):
        run_job(job, tmp_path / "x")
    with pytest.raises(OutputSpecError, match="mutually exclusive"):
        run_job(job_b, tmp_path / "x", resume=True, force=True)
    with pytest.raises(OutputSpecError, match="span_steps or span_seconds"):
        run_job(_job(job_b, span_steps=10, span_seconds=10), tmp_path / "x")
    with pytest.raises(OutputSpecError, match="unknown container"):
        run_job(_job(job_b, **{"output.container": "zarr9"}), tmp_path / "x")
    assert not (tmp_path / "x").exists()


def test_failure_before_publication_leaves_the_old_dataset_byte_identical(
    tmp_path, job_a, job_b, gen_a, all_bytes
) -> None:
    dest = tmp_path / "dest"
    shutil.copytree(gen_a.path, dest)
    before = all_bytes(dest)
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet")
    # resume is for the dataset's own job (job_a), here over sources that changed
    for job, flags in ((job_b, {"force": True}), (job_a, {"resume": True})):
        with pytest.raises(EmptyPoolError):
            run_job(_job(job, sources=[str(bad)]), dest, **flags)
        assert all_bytes(dest) == before
    # another job's run is there: not resume (refused), another destination or force
    with pytest.raises(DatasetExistsError, match="not empty: it holds the committed dataset of"):
        run_job(job_b, dest)
    with pytest.raises(DatasetExistsError, match="not empty .the committed dataset of job"):
        run_job(job_a, dest)  # its own job: resume it
    assert sum(1 for _ in iter_shards(dest)) == len(gen_a.manifest["shards"])


def test_a_data_error_while_encoding_leaves_the_old_dataset_byte_identical(
    tmp_path, job_b, gen_a, all_bytes
) -> None:
    class Flaky:
        def __init__(self) -> None:
            self.calls = 0

        def encode_batch(self, records, ctx):
            self.calls += 1
            return {} if self.calls == 3 else {"x": np.zeros(len(records))}

    register_encoder("flaky-test", Flaky)
    dest = tmp_path / "dest"
    shutil.copytree(gen_a.path, dest)
    before = all_bytes(dest)
    job = _job(job_b, encoder={"type": "flaky-test"})
    job["output"]["modalities"]["x"] = {"dtype": "float32", "shape": [], "source": "encoder:x"}
    try:
        with pytest.raises(OutputSpecError, match=r"encode_batch gave no 'x'.*entity"):
            run_job(job, dest, force=True)
    finally:
        _ENCODERS.unregister("flaky-test")
    assert all_bytes(dest) == before  # the shards written so far are only staged
    assert sum(1 for _ in iter_shards(dest)) == len(gen_a.manifest["shards"])


def test_a_reader_never_mixes_generations(tmp_path, job_b, gen_a) -> None:
    dest = tmp_path / "dest"
    shutil.copytree(gen_a.path, dest)
    it = iter_shards(dest, verify=False)
    next(it)
    run_job(job_b, dest, force=True)  # replaces the dataset under the open reader
    with pytest.raises(DatasetIntegrityError, match="changed while it was being read"):
        next(it)
    assert [m["path"] for _, m in iter_shards(dest, with_meta=True)] == [
        e["path"] for e in shard_entries(dest)
    ]


def test_resume_rebuilds_truncated_and_zero_byte_shards(tmp_path, job_b, base_b, digests) -> None:
    dest = tmp_path / "dest"
    shutil.copytree(base_b.path, dest)
    entries = base_b.manifest["shards"]
    cut, empty = entries[0], entries[-1]
    p = dest / cut["path"]
    p.write_bytes(p.read_bytes()[: cut["size"] // 2])
    (dest / empty["path"]).write_bytes(b"")
    with pytest.raises(DatasetIntegrityError):
        list(iter_shards(dest))
    res = run_job(job_b, dest, resume=True)
    assert digests(dest) == digests(base_b.path)

    def track(e):
        return (e["split"], e["source_id"], e["entity_id"], e["span_index"])

    damaged = {track(cut), track(empty)}
    n_damaged = sum(1 for e in entries if track(e) in damaged)
    assert res.resume["rebuilt_shards"] == n_damaged
    assert res.resume["reused_shards"] == len(entries) - n_damaged


def test_resume_into_an_empty_destination_says_nothing_was_there(tmp_path, job_b) -> None:
    res = run_job(job_b, tmp_path / "fresh", resume=True)
    assert res.resume["reused_shards"] == 0
    assert res.resume["notes"] == [
        "nothing committed or staged there: every shard is written afresh"
    ]


def test_resume_into_a_folder_of_other_files_is_refused_and_keeps_them(tmp_path, job_b) -> None:
    dest = tmp_path / "mine"
    dest.mkdir()
    (dest / "my.txt").write_text("not a dataset")
    with pytest.raises(DatasetExistsError, match="holds no kuration run to resume"):
        run_job(job_b, dest, resume=True)
    assert sorted(p.name for p in dest.iterdir()) == ["my.txt"]
    assert (dest / "my.txt").read_text() == "not a dataset"


def test_the_result_repr_is_one_short_line(base_b) -> None:
    text = repr(base_b)
    budget = base_b.config["results"]["budget"]
    shards = base_b.manifest["splits"]["train"]["shards"]
    assert text.startswith(f"DatasetWriteResult(path={str(base_b.path)!r}, shards=")
    assert f"train={shards} shards/{budget['train']['emitted_s'] / 3600:.2f} h" in text
    assert f"fingerprint='{base_b.fingerprint[:12]}...'" in text
    assert "\n" not in text and len(text) < 300 and str(base_b) == text


def test_resume_needs_the_commit_pinned_marker(tmp_path, job_b, base_b, digests) -> None:
    dest = tmp_path / "dest"
    shutil.copytree(base_b.path, dest)
    marker = dest / ".kuration_output_spec.json"
    doc = json.loads(marker.read_text())
    doc["run"]["seed"] = 99
    marker.write_text(json.dumps(doc))
    with pytest.raises(DatasetIntegrityError, match="kuration_output_spec.json does not match"):
        list(iter_shards(dest))
    res = run_job(job_b, dest, resume=True)
    assert res.resume["reused_shards"] == 0
    assert any("marker" in n for n in res.resume["notes"])
    marker.unlink()  # a legacy, unpinned dataset: the commit's pin no longer finds its marker
    res = run_job(job_b, dest, resume=True)
    assert res.resume["reused_shards"] == 0
    assert digests(dest) == digests(base_b.path)
    res = run_job(job_b, dest, resume=True)
    assert res.resume["reused_shards"] == len(base_b.manifest["shards"])


@pytest.mark.parametrize(
    "runtime", [{}, {"pool": "disk"}, {"streaming": True}], ids=["memory", "disk", "stream"]
)
def test_resume_of_a_different_job_is_refused_and_keeps_its_dataset(
    tmp_path, job_a, job_b, gen_a, base_b, all_bytes, digests, runtime
) -> None:
    dest = tmp_path / "dest"
    if runtime.get("streaming"):  # the stream writes a container that streams
        job_a, job_b = (_job(j, **{"output.container": "parquet"}) for j in (job_a, job_b))
        with pytest.warns(BudgetGranularityWarning):
            run_job(job_a, dest)
    else:
        shutil.copytree(gen_a.path, dest)
    before = all_bytes(dest)
    names = sorted(str(p.relative_to(dest)) for p in dest.rglob("*"))
    events: list[dict] = []
    with pytest.raises(DatasetExistsError) as err:
        run_job(job_b, dest, resume=True, progress=events.append, **runtime)
    msg = str(err.value)
    assert f"{dest} holds the committed dataset of a different job" in msg
    assert "changed settings: output.shard_length)" in msg  # names what changed
    assert "force=True (kur run --force)" in msg and "another destination" in msg
    assert not [e for e in events if e["phase"] == "scoring"]  # refused before reading
    assert all_bytes(dest) == before  # the committed dataset, byte for byte
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*")) == names  # no lock left
    assert sum(1 for _ in iter_shards(dest)) == len(shard_entries(dest))  # still readable
    if runtime.get("streaming"):
        return  # these recordings are not time-ordered: the stream refuses them (test_streaming)
    res = run_job(job_b, dest, force=True, **runtime)  # the way out it names
    assert digests(dest) == digests(base_b.path)
    assert (
        res.fingerprint == json.loads((dest / "dataset.commit.json").read_text())["run_fingerprint"]
    )


def test_staged_work_of_another_run_does_not_open_the_way(
    tmp_path, job_b, gen_a, all_bytes
) -> None:
    """Staged work defers the check to the resume lookup, which knows the fingerprint: only
    this very run's staged work (a force run of it that failed) lets it replace the dataset."""
    dest = tmp_path / "dest"
    shutil.copytree(gen_a.path, dest)
    journal = dest / ".kuration_staging" / ("f" * 32) / "journal.jsonl"
    journal.parent.mkdir(parents=True)
    journal.write_text(json.dumps({"format": JOURNAL_FORMAT, "run_fingerprint": "f" * 64}) + "\n")
    before = all_bytes(dest)
    with pytest.raises(DatasetExistsError, match="different job .*changed settings: output"):
        run_job(job_b, dest, resume=True)
    assert all_bytes(dest) == before
    assert sum(1 for _ in iter_shards(dest)) == len(gen_a.manifest["shards"])


def test_the_same_job_under_a_new_kuration_resumes_and_rebuilds(
    tmp_path, job_b, base_b, digests, monkeypatch
) -> None:
    from kuration.pipeline.run import steps

    dest = tmp_path / "dest"
    shutil.copytree(base_b.path, dest)
    monkeypatch.setattr(steps, "__version__", "99.0.0")  # the run description's version
    res = run_job(job_b, dest, resume=True)
    assert res.resume["reused_shards"] == 0  # other code: nothing is trusted
    assert any("changed kuration_version" in n for n in res.resume["notes"])
    shards = {k: v for k, v in digests(dest).items() if k.split("/")[0] in ("train", "test")}
    assert shards == {k: v for k, v in digests(base_b.path).items() if k in shards}
    assert len(shards) == len(base_b.manifest["shards"])


def test_group_cap_and_encoder_through_a_job(tmp_path, job_b) -> None:
    class FeetToMetres:
        def encode_batch(self, records, ctx):
            return {"alt_m": np.array([r["altitude"] * 0.3048 if r else 0.0 for r in records])}

    register_encoder("feet-to-metres-test", FeetToMetres)
    try:
        sources = [Path(s).name.split(".")[0] for s in job_b["sources"]]
        job = _job(
            job_b,
            group_of={s: f"g{i % 2}" for i, s in enumerate(sources)},
            max_group_overshoot=1.0,
            encoder={"type": "feet-to-metres-test"},
        )
        job["output"]["modalities"]["alt_m"] = {
            "dtype": "float32",
            "shape": [],
            "source": "encoder:alt_m",
        }
        res = run_job(job, tmp_path / "capped")
    finally:
        _ENCODERS.unregister("feet-to-metres-test")
    b = res.manifest["budget"]["train"]
    assert b["group_cap_s"] == pytest.approx(1.0 * b["requested_s"] / b["groups"])
    per_group: dict[str, float] = {}
    for arr, meta in iter_shards(res.path, with_meta=True, split="train"):
        g = job["group_of"][meta["source_id"]]
        per_group[g] = per_group.get(g, 0.0) + meta["n_steps"]
        present = arr["_present"]
        np.testing.assert_allclose(
            arr["alt_m"][present], arr["altitude"][present] * np.float32(0.3048), rtol=1e-6
        )
    assert all(v <= b["group_cap_s"] for v in per_group.values())
    assert res.config["provenance"]["encoder"]["class"].endswith("FeetToMetres")


def test_entity_ids_are_type_tagged_in_the_manifest(base_b) -> None:
    ids = {e["entity_id"] for e in base_b.manifest["shards"]}
    assert ids and all(i == tag_entity_id(i.partition(":")[2]) for i in ids)  # icao24 strings
