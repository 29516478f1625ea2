"""A non-empty destination: resume only what a kuration run left, never a stranger's folder."""

from __future__ import annotations

import pytest

from kuration.errors import DatasetExistsError
from kuration.output.job_match import Occupant
from kuration.pipeline.destination.occupied import holds_run, refuse_occupied


def test_a_run_is_its_metadata_or_its_staging_area() -> None:
    assert holds_run(["dataset_manifest.json", "train/s.npz"])
    assert holds_run([".kuration_staging/abc/journal.jsonl"])  # an interrupted first run
    assert not holds_run(["my.txt", "notes/dataset_manifest.json"])  # only the top level counts
    assert not holds_run([])


def test_the_refusal_suggests_resume_only_when_there_is_a_run() -> None:
    with pytest.raises(DatasetExistsError, match="d is not empty; resume it"):
        refuse_occupied("d", has_run=True, resume=False, force=False)
    with pytest.raises(DatasetExistsError, match="holds no kuration run;") as info:
        refuse_occupied("d", has_run=False, resume=False, force=False)
    assert "--resume" not in str(info.value)
    with pytest.raises(DatasetExistsError, match="d holds no kuration run to resume"):
        refuse_occupied("d", has_run=False, resume=True, force=False)
    refuse_occupied("d", has_run=True, resume=True, force=False)
    refuse_occupied("d", has_run=False, resume=False, force=True)


def test_another_jobs_dataset_is_named_and_resume_is_not_offered() -> None:
    other = Occupant("bunny-loudness", ("output.shard_length", "strategy.name"))
    with pytest.raises(DatasetExistsError) as info:
        refuse_occupied("runs/job", has_run=True, resume=False, force=False, occupant=other)
    msg = str(info.value)
    assert "of another job ('bunny-loudness') (changed settings: output.shard_length, " in msg
    assert "resume" not in msg and msg.index("--out DIR") < msg.index("--force")
    same = Occupant("bunny-loudness", ())
    with pytest.raises(DatasetExistsError, match=r"dataset of job 'bunny-loudness'\); resume it"):
        refuse_occupied("runs/job", has_run=True, resume=False, force=False, occupant=same)
    refuse_occupied("runs/job", has_run=True, resume=False, force=True, occupant=other)
