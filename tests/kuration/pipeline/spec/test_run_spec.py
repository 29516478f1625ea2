"""The hours budget: checked once, by the job file's budget model, on every entry path."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from kuration import Pipeline, write_dataset
from kuration.errors import JobError, OutputSpecError, PipelineError
from kuration.pipeline.dispatch import hours


def test_a_job_with_no_hours_fails_when_it_loads(small_job: dict) -> None:
    job = {**small_job, "budget": {"train_hours": 0.0, "test_hours": 0}}
    with pytest.raises(JobError, match=r"budget: train_hours \+ test_hours must be positive") as e:
        Pipeline.from_job(job)
    assert e.value.path == "budget"


@pytest.mark.parametrize(
    ("hours", "test_hours", "match"),
    [
        (0.0, 0.0, r"train_hours \+ test_hours must be positive"),
        (-1.0, 0.0, "train_hours: input should be greater than or equal to 0"),
        (math.inf, 0.0, "train_hours: input should be a finite number"),
        (1.0, math.nan, "test_hours: input should be a finite number"),
        (True, 0.0, "train_hours: input should be a valid number"),
        ("1", 0.0, "train_hours: input should be a valid number"),
    ],
)
def test_sample_checks_the_hours_with_the_job_model(
    hours: object, test_hours: object, match: str
) -> None:
    with pytest.raises(PipelineError, match=match):
        Pipeline().sample(hours=hours, test_hours=test_hours)  # type: ignore[arg-type]


def test_write_dataset_reports_bad_hours_before_any_work(small_job: dict, tmp_path: Path) -> None:
    p = Pipeline.from_job(small_job)
    with pytest.raises(OutputSpecError, match=r"write_dataset: train_hours \+ test_hours"):
        write_dataset(
            tmp_path / "out",
            schema=p.schema,
            adapter=p.adapter,
            sources=[],
            strategy=p.strategy_,
            segmenter=p.segmenter,
            spec=p.output_spec,
            train_hours=0.0,
            test_hours=0.0,
        )
    assert not (tmp_path / "out").exists()


def test_the_run_does_not_check_the_hours_again() -> None:
    """The write options' preflight takes no hours: nothing after the model re-checks them."""
    import inspect

    params = inspect.signature(hours.preflight).parameters
    assert not {"train_hours", "test_hours"} & set(params)
