"""Operators: every built-in method and filter by name, user macros, and docs/operators.md."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kuration import Pipeline
from kuration.cli.main import main
from kuration.errors import PipelineError, ScorerError, StrategyError
from kuration.extend import (
    get_operator,
    register_operator,
    registered_filters,
    registered_methods,
    registered_operators,
)
from kuration.pipeline.api.operators import _OPERATORS, operators_markdown
from kuration.selection.filters import get_filter
from kuration.selection.methods import get_method

ROOT = Path(__file__).resolve().parents[4]
EXAMPLE = ROOT / "examples" / "adsb_quickstart"


@pytest.fixture(scope="module")
def job() -> Pipeline:
    return Pipeline.from_job(EXAMPLE / "job.json")


def test_every_method_and_filter_is_an_operator_listing_its_declared_parameters() -> None:
    names = set(registered_operators())
    assert set(registered_methods()) <= names and set(registered_filters()) <= names
    for m in registered_methods():
        op = get_operator(m)
        assert op.kind == "method" and op.builtin
        assert dict(op.params) == dict(get_method(m).parameters)  # type: ignore[attr-defined]
    for f in registered_filters():
        assert dict(get_operator(f).params) == dict(get_filter(f).parameters)  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", ["top-k", "weighted", "filter", "uniform-bins", "target-distribution", "importance", "k-center", "facility-location"])  # fmt: skip
def test_declared_parameters_are_exactly_what_validate_accepts(name: str) -> None:
    method = get_method(name)
    with pytest.raises(StrategyError) as err:
        method.validate({"__bogus__": 1}, ["a", "b"], ["a"])
    # check_keys lists the keys it takes: the declaration is the validator's own set
    assert str(sorted(method.parameters)) in str(err.value)  # type: ignore[attr-defined]


def test_apply_finds_built_ins_by_name(job: Pipeline) -> None:
    kc = job.apply("k-center", limit=50)
    assert kc.strategy_.method == "k-center"  # type: ignore[union-attr]
    assert kc.strategy_.params["limit"] == 50  # type: ignore[union-attr]
    assert job.strategy_.method == "uniform-bins"  # type: ignore[union-attr]  (immutable)
    f = kc.apply("finite", features=["turn_p90"])
    assert f.strategy_.filters[-1] == {"filter": "finite", "features": ["turn_p90"]}  # type: ignore[union-attr]
    # the quickstart's two quality predicates, then the filter added here, then the method
    fill = [c.name for c in f.explain().stage("fill").components]
    assert fill == ["predicate", "predicate", "finite", "k-center"]
    with pytest.raises(StrategyError):
        job.apply("top-k", by="no_such_feature")
    with pytest.raises(PipelineError, match="k-center"):
        job.apply("k-centre")


def test_built_in_scorers_and_transforms_are_operators(job: Pipeline) -> None:
    """``Pipeline.apply("novelty")`` was "unknown operator": scorers were no operators."""
    from kuration.core.builtins import BUILTINS

    # the built-in ones: other test modules register their own transforms at import
    for name in (*BUILTINS["scorer"], *BUILTINS["transform"]):
        op = get_operator(name)
        assert op.builtin and op.kind in ("scorer", "transform") and op.doc
    scored = job.apply("novelty", params={"features": ["speed_p90", "turn_p90"], "k": 3})
    assert [s["name"] for s in scored.strategy_.scorers] == ["novelty"]  # type: ignore[union-attr]
    assert [c.name for c in scored.explain().stage("scorers").components] == ["novelty"]
    assert job.strategy_.scorers == ()  # type: ignore[union-attr]
    with pytest.raises(ScorerError, match="no_such_feature"):
        job.apply("novelty", params={"features": ["no_such_feature"]})


@pytest.fixture
def macro() -> Iterator[str]:
    def busiest(p: Pipeline, *, n: int = 10) -> Pipeline:
        """Top segments by turning, among finite ones."""
        return p.apply("finite").apply("top-k", by="turn_p90").select(n)

    register_operator("test-busiest", busiest, params={"n": "how many segments"})
    yield "test-busiest"
    _OPERATORS.unregister("test-busiest")


def test_register_operator_is_a_pipeline_macro(job: Pipeline, macro: str) -> None:
    p = job.apply(macro, n=5)
    assert p.selection.n == 5  # type: ignore[union-attr]
    assert p.strategy_.method == "top-k"  # type: ignore[union-attr]
    op = get_operator(macro)
    assert op.kind == "operator" and not op.builtin and op.doc.startswith("Top segments")
    with pytest.raises(ValueError, match="already registered"):
        register_operator(macro, lambda p: p)
    with pytest.raises(ValueError, match="already registered"):
        register_operator("k-center", lambda p: p)  # a built-in's name is taken
    assert macro not in operators_markdown()  # the docs list built-ins only


def test_docs_operators_md_is_generated_from_the_registry() -> None:
    on_disk = (ROOT / "docs" / "operators.md").read_text()
    assert on_disk == operators_markdown(), (
        "regenerate: kur operators --markdown > docs/operators.md"
    )
    for name in [*registered_methods(), *registered_filters(), "audit", "npz-128-pad"]:
        assert f"`{name}`" in on_disk


def test_kur_operators_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["operators", "--markdown"]) == 0
    assert capsys.readouterr().out == operators_markdown()
