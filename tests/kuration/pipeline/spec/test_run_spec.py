"""The frozen run spec: the hours checked once, by the job file's budget model, on every
entry path; planning and the runtimes take the spec; ``train_hours`` crosses five modules."""

from __future__ import annotations

import ast
import dataclasses
import math
from pathlib import Path

import pytest

import kuration
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


# ---- the chain a job file's train_hours follows to the fill ------------------------------

#: where code names ``train_hours`` besides the chain: the function-style entry's parameter
#: (it builds the same budget model) and ``kur init``, which writes job files
_OTHER_ENTRIES = {
    "kuration/pipeline/api/entry.py",
    "kuration/onboard/init.py",
    "kuration/onboard/init_files.py",
    "kuration/onboard/init_lerobot.py",
}
#: job model -> run spec's selection -> plan -> runtime step (-> the fill, in seconds)
_CHAIN = [
    "kuration/core/config.py",
    "kuration/pipeline/spec/logical.py",
    "kuration/pipeline/dispatch/planner.py",
    "kuration/pipeline/run/steps.py",
]


def _names(tree: ast.AST, name: str) -> bool:
    """Whether code (not prose) names ``name``: an attribute, a keyword, a variable or
    parameter, or a string key equal to it (a docstring or message mentioning it is no use)."""
    for node in ast.walk(tree):
        if (
            (isinstance(node, ast.Attribute) and node.attr == name)
            or (isinstance(node, ast.keyword | ast.arg) and node.arg == name)
            or (isinstance(node, ast.Name) and node.id == name)
            or (isinstance(node, ast.Constant) and node.value == name)
        ):
            return True
    return False


def _modules_naming(name: str) -> set[str]:
    root = Path(kuration.__file__).parent.parent
    return {
        f.relative_to(root).as_posix()
        for f in root.joinpath("kuration").rglob("*.py")
        if _names(ast.parse(f.read_text(encoding="utf-8")), name)
    }


def test_train_hours_crosses_five_modules_from_a_job_file_to_the_fill() -> None:
    """The modules that read or reshape a job's ``train_hours``: the strict model checks it,
    the run spec's selection holds it, the planner shows it, the runtime step turns it into
    seconds for the fill (``selection/fill.py``, or the disk runtime's ``disk/fill.py``,
    which take budgets in seconds and never name it).  A module that starts reading it
    (a runtime rebuilding an options dict, a second check) fails this test."""
    assert _modules_naming("train_hours") - _OTHER_ENTRIES == set(_CHAIN)
    steps = ast.parse(Path(kuration.__file__).parent.joinpath("pipeline/run/steps.py").read_text())
    assert _names(steps, "fill_budgets")  # the step hands the budgets to the fill
    assert len([*_CHAIN, "kuration/selection/fill.py"]) <= 5


def test_the_run_spec_and_its_selection_are_frozen(small_job: dict) -> None:
    spec = Pipeline.from_job(small_job).run_spec()
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.opts = spec.opts  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.selection.train_hours = 9.0  # type: ignore[union-attr]


def test_planning_and_the_runtime_take_the_run_spec(
    small_job: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Pipeline.execute`` hands the planner and the hours runtime its frozen run spec, and
    the run's steps read the budget from that spec's selection."""
    from kuration.pipeline.dispatch import execute, planner
    from kuration.pipeline.run import steps
    from kuration.pipeline.spec.runspec import RunSpec

    seen: list[str] = []

    def spy(name: str, real):  # type: ignore[no-untyped-def]
        def call(spec, *a, **kw):  # type: ignore[no-untyped-def]
            assert type(spec) is RunSpec, f"{name} got a {type(spec).__name__}"
            seen.append(name)
            return real(spec, *a, **kw)

        return call

    monkeypatch.setattr(execute, "compile_plan", spy("compile_plan", planner.compile_plan))
    monkeypatch.setattr(execute, "run_hours", spy("run_hours", execute.run_hours))
    budgets: list[dict] = []
    real_fill = steps.step_fill

    def fill(r, **kw):  # type: ignore[no-untyped-def]
        assert r.runspec.selection is r.sel and r.sel.train_hours == want
        out = real_fill(r, **kw)
        budgets.append(dict(r.fill.budget["train"]))
        return out

    monkeypatch.setattr(
        hours, "STEPS", tuple((n, fill if n == "fill" else f) for n, f in steps.STEPS)
    )
    want = small_job["budget"]["train_hours"]
    Pipeline.from_job({**small_job, "span_seconds": 60}).execute(tmp_path / "o")
    assert seen == ["compile_plan", "run_hours"]
    assert budgets and budgets[0]["requested_s"] == want * 3600.0


def test_the_run_spec_carries_every_part_of_a_pipeline() -> None:
    """A part added to ``Pipeline`` but not to ``RunSpec`` would never reach a runtime."""
    from kuration.pipeline.spec.runspec import RunSpec

    names = [f.name for f in dataclasses.fields(RunSpec)]
    assert names == [f.name for f in dataclasses.fields(Pipeline)]
