"""Which differences between two run descriptions make another job (resume is refused)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from kuration.core.jsonio import canonical_json
from kuration.errors import DatasetExistsError
from kuration.output.commit import commit_bytes, marker_document
from kuration.output.job_match import committed_run, job_changes, refuse_other_job

RUN: dict[str, Any] = {
    "kuration_version": "1.0.0",
    "schema": {"sample_hz": 1.0, "fields": {"alt": {"dtype": "float64"}}},
    "adapter": {"name": "parquet", "entity_column": "icao24", "time_column": "time"},
    "strategy": {"method": "topk", "by": "alt_std"},
    "output": {"shard_length": 128, "container": "npz"},
    "encoder": {"class": "kuration.PassthroughEncoder", "state": None, "code_sha256": None},
    "budget": {"train_hours": 0.5, "test_hours": 0.1},
    "seed": 0,
    "groups": {"s1": "a"},
    "sources": [{"source_id": "s1", "fingerprint": "aa"}],
    "source_errors": [],
}


def _with(run: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    out = json.loads(json.dumps(run))
    *parents, last = path.split(".")
    node = out
    for key in parents:
        node = node[key]
    if value is _with:  # drop the key
        del node[last]
    else:
        node[last] = value
    return out


def test_the_same_job_over_other_sources_and_code_has_no_changes() -> None:
    changed = _with(RUN, "sources", [{"source_id": "s1", "fingerprint": "bb"}])
    changed = _with(changed, "source_errors", ["s2: unreadable"])
    changed = _with(changed, "groups", {"s1": "b"})
    changed = _with(changed, "kuration_version", "1.1.0")
    changed = _with(changed, "code", {"registered": {"metric:x": {"sha256": "cc"}}})
    changed = _with(changed, "encoder.code_sha256", "dd")
    assert job_changes(RUN, changed) == []


@pytest.mark.parametrize(
    "path",
    ["adapter.entity_column", "schema.sample_hz", "output.shard_length", "budget.train_hours"],
)
def test_a_changed_setting_is_named(path: str) -> None:
    assert job_changes(RUN, _with(RUN, path, 999)) == [path]


def test_an_added_or_dropped_setting_counts_unless_the_code_changed() -> None:
    dropped = _with(RUN, "adapter.time_column", _with)
    added = _with(RUN, "split", {"by": "time"})
    assert job_changes(RUN, dropped) == ["adapter.time_column"]
    assert job_changes(RUN, added) == ["split"]
    # under a new kuration a field may appear or go: that is the code, not the job
    newer = _with(dropped, "kuration_version", "2.0.0")
    assert job_changes(RUN, newer) == []
    # a value present on both sides still counts
    assert job_changes(RUN, _with(newer, "seed", 7)) == ["seed"]


def test_settings_known_before_the_sources_are_read_compare_alone() -> None:
    early = {k: v for k, v in RUN.items() if k not in ("sources", "source_errors", "groups")}
    assert job_changes(RUN, early) == []
    assert job_changes(RUN, _with(early, "strategy.by", "speed")) == ["strategy.by"]


def _committed(run: dict[str, Any], state: str = "committed") -> tuple[bytes, bytes]:
    marker = canonical_json(marker_document(run))
    rec = commit_bytes(
        state,
        run_fingerprint=marker_document(run)["run_fingerprint"],
        output_spec_sha256=hashlib.sha256(marker).hexdigest(),
    )
    return rec, marker


def test_only_a_committed_pinned_marker_is_read() -> None:
    rec, marker = _committed(RUN)
    assert committed_run(rec, marker) == RUN
    assert committed_run(None, marker) is None and committed_run(rec, None) is None
    assert committed_run(*_committed(RUN, "writing")) is None  # readers refuse it: nothing to lose
    assert committed_run(rec, marker + b" ") is None  # not the pinned bytes
    assert committed_run(b"{", marker) is None


def test_the_refusal_names_the_destination_the_changes_and_the_ways_out() -> None:
    rec, marker = _committed(RUN)
    other = RUN
    for i, path in enumerate(["adapter.entity_column", "budget.test_hours", "output.container"]):
        other = _with(other, path, f"v{i}")
    other = _with(_with(other, "seed", 3), "schema.sample_hz", 2.0)
    with pytest.raises(DatasetExistsError) as err:
        refuse_other_job("runs/adsb", rec, marker, other)
    msg = str(err.value)
    assert msg.startswith("runs/adsb holds the committed dataset of a different job")
    assert "adapter.entity_column, budget.test_hours, output.container, schema.sample_hz" in msg
    assert "and 1 more" in msg
    assert "kur run --force" in msg and "kur run --out DIR" in msg
    refuse_other_job("runs/adsb", rec, marker, _with(RUN, "kuration_version", "9"))  # same job
    refuse_other_job("runs/adsb", *_committed(RUN, "writing"), other)  # nothing committed
