"""Strict configuration models: wrong JSON types are errors naming the key path (issue 11, kind 8)."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kuration.cli.main import main
from kuration.contracts.schema import SchemaSpec
from kuration.core.config import JobModel, json_schema, validate_config
from kuration.errors import JobError, OutputSpecError, PolicyError, SchemaError, StrategyError
from kuration.output.spec import OutputSpec
from kuration.pipeline.api.entry import run_job
from kuration.pipeline.run.strategy import load_strategy
from kuration.pipeline.spec.job import job_components, load_job, resolve_sources
from kuration.tools.check import load_policy

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "examples" / "adsb_quickstart"
JOBS = sorted(ROOT.glob("examples/*/job.json"))
STRATEGIES = sorted(QUICKSTART.glob("strategies/*.json"))


@pytest.fixture(scope="module")
def job() -> dict[str, Any]:
    """The quickstart job with its schema, strategy and output inlined; the strategy is its
    default before issue 29, which has a group cap whose keys the cases below name."""
    raw, _ = load_job(QUICKSTART / "job.json")
    raw["strategy"] = json.loads((QUICKSTART / "strategies" / "turns-and-climbs.json").read_text())
    return raw


def _set(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of ``doc`` with ``value`` at a key path such as ``schema.fields[1].unit``."""
    out = copy.deepcopy(doc)
    parts: list[str | int] = []
    for name, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", path):
        parts.append(int(index) if index else name)
    cur: Any = out
    for p in parts[:-1]:
        cur = cur[p]
    cur[parts[-1]] = value
    return out


BAD_JOB_VALUES = [
    # (key path, value, error class, close match[, the key path named when it lies deeper])
    ("tag_coverage", "false", JobError, None),
    ("trian_hours", 4.0, JobError, "budget.train_hours"),  # a nested key written at the top
    ("shard_lenght", 64, JobError, "output.shard_length"),
    ("tag_coverage", 0, JobError, None),
    ("seed", 1.7, JobError, None),
    ("seed", "zero", JobError, None),
    ("seed", True, JobError, None),
    ("seed", -1, JobError, None),
    ("workers", 1.9, JobError, None),
    ("workers", 0, JobError, None),
    ("workers", True, JobError, None),
    ("budget.train_hours", "1", JobError, None),
    ("budget.train_hours", True, JobError, None),
    ("budget.train_hours", "lots", JobError, None),
    ("budget.train_hours", -1, JobError, None),
    ("budget.train_hour", 1, JobError, "train_hours"),
    ("min_track_seconds", "120", JobError, None),
    ("min_tag_frac", 1.5, JobError, None),
    ("clip_aggregate", "median", JobError, None),
    ("on_error", "ignore", JobError, None),
    ("max_group_overshoot", 0, JobError, None),
    ("span_steps", 2.5, JobError, None),
    ("group_of", {"a": 1}, JobError, None, "group_of.a"),
    ("plugins", "my_plugin", JobError, None),
    ("include_plugin_entry_points", 1, JobError, None),
    ("sources", [], JobError, None),
    ("sources.slice_minute", 5, JobError, "slice_minutes"),
    ("segmenter.window", "120", JobError, None),
    ("segmenter.unit", "minutes", JobError, None),
    ("segmenter.strid", 60, JobError, "stride"),
    ("adapter.time_unit", "min", JobError, None),
    ("adapter.time_colum", "t", JobError, "time_column"),
    ("adapter.snap_tolerance", 0.7, JobError, None),
    ("adapter.collisions", "average", JobError, None),
    ("adapter.entity_dtype", "str", JobError, None),
    ("adapter.entity_dtyp", "string", JobError, "entity_dtype"),
    ("adapter.fields.altitude", 5, JobError, None),
    ("encoder", {"type": 3}, JobError, None, "encoder.type"),
    ("descripton", "x", JobError, "description"),
    ("output.modalities.position.dtpye", "float64", OutputSpecError, "dtype"),
    ("output.modalities.position.dtype", 64, OutputSpecError, None),
    ("output.modalities.position.shape[0]", 2.0, OutputSpecError, None),
    ("output.modalities.position.shape[0]", 0, OutputSpecError, None),
    ("output.presence_mask", "true", OutputSpecError, None),
    ("output.shard_length", 12.5, OutputSpecError, None),
    ("output.short_policy", "trim", OutputSpecError, None),
    ("output.containr", "npz", OutputSpecError, "container"),
    ("strategy.seed", 1.5, StrategyError, None),
    ("strategy.bin.n_bins", "4", StrategyError, None),
    ("strategy.bin.n_bins", 0, StrategyError, None),
    ("strategy.nan_polcy", "exclude", StrategyError, "nan_policy"),
    ("strategy.nan_policy", "drop", StrategyError, None),
    ("strategy.group_cap.max_overshoot", "1.5", StrategyError, None),
    ("strategy.group_cap.max_overshot", 1.5, StrategyError, "max_overshoot"),
    ("strategy.define.speed_p90", 90, StrategyError, None),
    (
        "strategy.tag_coverage",
        {"turning": "0.2"},
        StrategyError,
        None,
        "strategy.tag_coverage.turning",
    ),
    ("schema.sample_hz", "1", SchemaError, None),
    ("schema.sample_hz", 0, SchemaError, None),
    ("schema.fields[0].dims", 2.0, SchemaError, None),
    ("schema.fields[1].unti", "ft", SchemaError, "unit"),
    ("schema.fields[0].max_rate", "400", SchemaError, None),
    ("schema.fields[0].unit[1]", 5, SchemaError, None),
]


@pytest.mark.parametrize("case", BAD_JOB_VALUES, ids=lambda c: f"{c[0]}={c[1]!r}")
def test_bad_job_values_name_the_key_path(job: dict[str, Any], case: tuple[Any, ...]) -> None:
    path, value, cls, close = case[:4]
    want = case[4] if len(case) > 4 else path
    with pytest.raises(cls) as exc:
        load_job(_set(job, path, value))
    err = exc.value
    assert err.path == want  # type: ignore[attr-defined]
    assert str(err).startswith(f"job: {want}: ")
    assert "\n" not in str(err)  # one problem, one line
    if close is not None:
        assert f"did you mean {close!r}?" in str(err)


@pytest.mark.parametrize(
    ("policy", "path", "close"),
    [
        ({"verify": "false"}, "verify", None),
        ({"min_sources": True}, "min_sources", None),
        ({"min_sources": 2.5}, "min_sources", None),
        ({"required_modalities": "position"}, "required_modalities", None),
        ({"min_shards": {"train": 1.5}}, "min_shards.train", None),
        ({"max_skipped_fraction": 2}, "max_skipped_fraction", None),
        ({"min_sourcs": 1}, "min_sourcs", "min_sources"),
    ],
)
def test_bad_policy_values_name_the_key(
    policy: dict[str, Any], path: str, close: str | None
) -> None:
    with pytest.raises(PolicyError, match=rf"^policy: {re.escape(path)}: ") as exc:
        load_policy(policy)
    assert exc.value.path == path
    if close is not None:
        assert f"did you mean {close!r}?" in str(exc.value)
    assert load_policy({"min_shards": {"train": 2}, "verify": True, "min_budget_utilization": 1})


def test_every_problem_is_named_in_one_line(job: dict[str, Any]) -> None:
    bad = _set(_set(job, "seed", "zero"), "budget.train_hours", "lots")
    with pytest.raises(JobError) as exc:
        load_job(bad)
    assert exc.value.problems == (
        'budget.train_hours: input should be a valid number, got "lots"',
        'seed: input should be a valid integer, got "zero"',
    )
    assert str(exc.value) == "job: 2 problems: " + "; ".join(exc.value.problems)


def test_unknown_key_without_close_match_lists_the_known_keys(job: dict[str, Any]) -> None:
    with pytest.raises(
        JobError, match=r"unknown key 'zzz' \(known keys: test_hours, train_hours\)"
    ):
        load_job(_set(job, "budget.zzz", 1))


def test_missing_key_and_wrong_part_types(job: dict[str, Any]) -> None:
    no_budget = copy.deepcopy(job)
    del no_budget["budget"]
    with pytest.raises(JobError, match="budget: required key is missing"):
        load_job(no_budget)
    with pytest.raises(StrategyError, match="strategy: strategy is an object or the path"):
        load_job(_set(job, "strategy", ["uniform-bins"]))
    with pytest.raises(JobError, match=r"sources: sources is a non-empty list.*got 5"):
        load_job(_set(job, "sources", 5))


def test_json_integers_are_accepted_for_numbers(job: dict[str, Any]) -> None:
    m = validate_config(JobModel, _set(job, "budget.train_hours", 4), kind="job", what="job")
    assert m.budget.train_hours == 4.0 and isinstance(m.budget.train_hours, float)
    schema = SchemaSpec.from_dict(_set(job["schema"], "fields[0].max_rate", 400))
    assert schema.fields[0].max_rate == 400.0


def test_strategy_counts_stay_integers(job: dict[str, Any]) -> None:
    """A floor of 1 is a count and 0.5 a fraction: strict validation keeps the JSON spelling."""
    schema = SchemaSpec.from_dict(job["schema"])
    spec = {
        **job["strategy"],
        "tags": {"climb": {"feature": "climb_std", "thresholds": [1200, 1600.5]}},
        "tag_coverage": {"climb": {"climb_std<1200": 1, "1200<=climb_std<1600.5": 0.5}},
    }
    s = load_strategy(spec, schema)
    assert s.tags["climb"]["labels"][0] == "climb_std<1200"
    floors = s.tag_coverage["climb"]
    assert type(floors["climb_std<1200"]) is int and type(floors["1200<=climb_std<1600.5"]) is float


def test_method_params_typo_names_the_close_match(job: dict[str, Any]) -> None:
    schema = SchemaSpec.from_dict(job["schema"])
    spec = {"define": job["strategy"]["define"], "method": "top-k", "params": {"bye": "turn_p90"}}
    with pytest.raises(StrategyError, match=r"params.bye: .*did you mean 'by'\?") as exc:
        load_strategy(spec, schema)
    assert exc.value.path == "params.bye"


def test_schema_file_errors_keep_the_field_name() -> None:
    with pytest.raises(
        SchemaError, match=r"fields\[0\]\.dims: input should be a valid integer"
    ) as e:
        SchemaSpec.from_json('{"sample_hz": 1, "fields": [{"name": "x", "dims": 1.0}]}')
    assert e.value.field == "x"
    assert e.value.path == "fields[0].dims"


@settings(max_examples=40, deadline=None)
@given(
    value=st.one_of(
        st.booleans(),
        st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: x != int(x)),
        st.text(max_size=5),
        st.lists(st.integers(), max_size=2),
        st.none(),
    )
)
def test_no_non_integer_is_taken_as_a_seed(value: Any) -> None:
    raw = json.loads((QUICKSTART / "job.json").read_text())
    raw["seed"] = value
    with pytest.raises(JobError) as exc:
        validate_config(JobModel, raw, kind="job", what="job")
    assert exc.value.path == "seed"


def test_workers_argument_below_one_is_refused_before_writing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with pytest.raises(JobError, match="workers must be an integer >= 1, got 0"):
        run_job(QUICKSTART / "job.json", out, workers=0)
    assert not out.exists()


def test_cli_reports_bad_values_in_one_line(
    job: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "job.json"
    path.write_text(json.dumps(_set(job, "budget.train_hours", "lots")))
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert (
        err
        == f'kur: error: {path}: budget.train_hours: input should be a valid number, got "lots"\n'
    )
    assert main(["run", str(QUICKSTART / "job.json"), "--out", str(out), "--workers", "0"]) == 1
    assert capsys.readouterr().err == "kur: error: workers must be an integer >= 1, got 0\n"
    assert not out.exists()


def test_a_source_listed_twice_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("t,x\n0,1\n")
    (tmp_path / "b.csv").write_text("t,x\n0,1\n")
    assert len(resolve_sources(["a.csv", "b.csv"], tmp_path)) == 2
    with pytest.raises(
        JobError, match=r"sources\[2\] './a.csv' is the same source as sources\[0\]"
    ):
        resolve_sources(["a.csv", "b.csv", "./a.csv"], tmp_path)
    with pytest.raises(JobError, match=r"sources\[1\]"):
        resolve_sources(["a.csv", str(tmp_path / "a.csv")], tmp_path)
    uri = "timenet://org/name@1.0?group_by=group"
    with pytest.raises(JobError, match=r"sources\[1\] 'timenet://org/name@1.0\?group_by=group'"):
        resolve_sources([uri, uri], tmp_path)  # refused before any registry is opened


# the football job's schema takes its units from the TimeNet catalog, so loading it builds
# the dataset from its connector first (23 s alone, 47 s in a loaded suite): a slow test
@pytest.mark.parametrize(
    "path",
    [pytest.param(p, marks=pytest.mark.slow) if p.parent.name == "football" else p for p in JOBS],
    ids=lambda p: p.parent.name,
)
def test_shipped_jobs_load(
    path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a TimeNet job whose schema leaves units to the catalog opens the catalog to validate:
    # the session registry holds the datasets the other tests build
    reg = tmp_path_factory.getbasetemp() / "tn-session-registry"
    monkeypatch.setenv("TIMENET_REGISTRY", str(reg))
    raw, _ = load_job(path)
    schema, _, _ = job_components(raw)
    load_strategy(raw["strategy"], schema)
    OutputSpec.from_dict(raw["output"])


@pytest.mark.parametrize("path", STRATEGIES, ids=lambda p: p.stem)
def test_shipped_strategies_load(path: Path) -> None:
    schema = SchemaSpec.from_json((QUICKSTART / "schema.json").read_text())
    assert load_strategy(str(path), schema).method


@pytest.mark.parametrize("kind", ["job", "strategy", "output", "schema", "policy"])
def test_kur_schema_prints_a_json_schema_the_examples_satisfy(
    kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["schema", kind]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema == json.loads(json.dumps(json_schema(kind)))
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    files = {
        "job": JOBS,
        "strategy": [*STRATEGIES, *ROOT.glob("examples/*/strategy.json")],
        "output": sorted(ROOT.glob("examples/*/output.json")),
        "schema": sorted(ROOT.glob("examples/*/schema.json")),
        "policy": [],
    }[kind]
    try:
        import jsonschema
    except ImportError:  # not a dependency: check the structure instead
        assert {"seed", "budget", "adapter"} <= set(schema["properties"]) or kind != "job"
        return
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for f in files:
        assert not list(validator.iter_errors(json.loads(f.read_text()))), f
    if kind == "job":
        bad = json.loads(JOBS[0].read_text())
        bad["seed"] = 1.7
        bad["budget"]["train_hour"] = 1
        assert len(list(validator.iter_errors(bad))) == 2


def test_unknown_registered_names_point_at_their_key(job: dict[str, Any]) -> None:
    raw = _set(job, "adapter.type", "timeserie")
    with pytest.raises(
        JobError, match=r"^adapter\.type: unknown adapter 'timeserie'; did you mean 'timeseries'"
    ) as exc:
        job_components(raw)
    assert exc.value.path == "adapter.type"
    schema = SchemaSpec.from_dict(job["schema"])
    with pytest.raises(
        StrategyError, match=r"method: unknown selection method 'top_k'.*'top-k'"
    ) as exc2:
        load_strategy({**job["strategy"], "method": "top_k"}, schema)
    assert exc2.value.path == "method"


def test_a_sample_option_it_does_not_take_is_named(tmp_path: Path) -> None:
    with pytest.raises(
        JobError, match=r"sample 'adsb-paris' does not take the options \['files'\]"
    ):
        resolve_sources({"sample": "adsb-paris", "files": ["bikes.mp4"]}, tmp_path)
