"""The grammar is closed and documented: every token in the table, in the docs, and nothing else."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from dsl_support import SCHEMA
from hypothesis import given, settings
from hypothesis import strategies as st

from kuration.errors import MetricCompileError
from kuration.extend import compile_metric
from kuration.metrics.dsl import grammar
from kuration.metrics.dsl.grammar import TOKENS, parse_metric

DOCS = Path(__file__).resolve().parents[4] / "docs" / "metrics.md"

# one compiling example per token of the table
EXAMPLES = {
    "field:<name>": "field:hp | mean",
    "global:<name>": "global:wind | mean",
    "event:<name>": "event:goal | frac",
    "feature:<name>": None,  # needs a define block: tests/kuration/metrics/test_features.py
    "speed": "field:pos | speed | mean",
    "accel": "field:pos | accel | mean",
    "jerk": "field:pos | jerk | mean",
    "heading": "field:geo | heading | angle_delta | abs | mean",
    "angle_delta": "field:heading | angle_delta | abs | mean",
    "angular_rate": "field:yaw | angular_rate | max",
    "norm": "field:pos | norm | mean",
    "diff": "field:hp | diff | mean",
    "abs": "field:hp | abs | mean",
    "bit:<bit>": "field:buttons | bit:fire | frac",
    "is:<label>": "field:team | is:red | frac",
    "to:<unit>": "field:hp | to:km | mean",
    "nn_dist": "field:pos | nn_dist | mean",
    "dist_to:<entity>": "field:pos | dist_to:7 | mean",
    "formation:speed": "field:pos | formation:speed | mean",
    "formation:spread": "field:pos | formation:spread | mean",
    "formation:area": "field:pos | formation:area | mean",
    "present": "field:hp | present | mean",
    "present:<percent>": "field:hp | present:80 | mean",
    "id:<entity>": "field:hp | id:a.b-1 | mean",
    "where:<cmp><number>": "field:hp | where:>=-1.5e2 | mean",
    "where:<field>=<label>": "field:hp | where:team=green | mean",
    "where:<field>.<bit>": "field:hp | where:buttons.jump | mean",
    **{
        f"entities:{a}": f"field:hp | entities:{a} | mean"
        for a in ("mean", "sum", "min", "max", "median", "std", "count")
    },
    "entities:any": "field:buttons | bit:fire | entities:any | frac",
    "entities:all": "field:buttons | bit:fire | entities:all | frac",
    **{
        r: f"field:hp | {r}"
        for r in (
            "mean",
            "sum",
            "std",
            "var",
            "rms",
            "min",
            "max",
            "median",
            "iqr",
            "count",
            "frac",
            "n_changes",
            "zero_crossings",
            "path_length",
            "duration_present",
        )
    },
    "p<percent>": "field:hp | p95",
    "entropy": "field:team | entropy",
    "entropy:<bins>": "field:hp | entropy:12",
    "rms_jerk": "field:pos3 | rms_jerk",
    "hull_area": "field:geo | hull_area",
}


def _doc() -> str:
    return DOCS.read_text(encoding="utf-8")


def test_every_token_has_an_example_and_the_example_compiles() -> None:
    spellings = [t.spelling for t in TOKENS]
    assert len(spellings) == len(set(spellings))
    assert set(EXAMPLES) == set(spellings)
    for spelling, expr in EXAMPLES.items():
        if expr is None:
            continue
        stages = compile_metric(expr, SCHEMA).stages
        ops = {(s.role, s.op) for s in stages}
        tok = next(t for t in TOKENS if t.spelling == spelling)
        assert (tok.role, tok.op) in ops, spelling


def test_every_token_is_documented_and_the_docs_add_none() -> None:
    doc = _doc()
    for t in TOKENS:
        assert f"`{t.spelling}`" in doc, t.spelling
    # first column of every table row: the documented token(s)
    documented = set()
    for line in doc.splitlines():
        if line.startswith("| `"):
            first = line.split("|")[1]
            documented.update(re.findall(r"`([^`]+)`", first))
    assert documented == {t.spelling for t in TOKENS}


def test_docs_ebnf_matches_the_grammar_docstring() -> None:
    block = re.search(r"```ebnf\n(.*?)```", _doc(), re.S)
    assert block is not None
    doc_src = grammar.__doc__ or ""
    code = doc_src.split(".. code-block:: ebnf\n\n", 1)[1].split("\n\n", 1)[0]
    assert textwrap.dedent(code).strip() == block.group(1).strip()


def test_docs_mention_nan_policy() -> None:
    doc = _doc()
    assert '`"exclude"`' in doc and '`"lowest"`' in doc


@pytest.mark.parametrize(
    "expr",
    [
        "field:hp|mean",
        "  field:hp  |   p0  ",
        "field:hp | where:==0 | count",
        "field:hp | where:<.5 | count",
        "field:hp | where:!=+3. | count",
        "field:team | is:red | entropy",
        "event:half-time | frac",
    ],
)
def test_blanks_and_number_forms_parse(expr: str) -> None:
    compile_metric(expr, SCHEMA)


def test_where_parses_three_forms() -> None:
    s = parse_metric("field:hp | where:>=2.5e1 | where:team=blue | where:buttons.fire | mean")
    assert [x.op for x in s[1:4]] == ["where_cmp", "where_label", "where_bit"]
    assert s[1].params == (">=", 25.0)
    assert s[2].params == ("team", "blue")
    assert s[3].params == ("buttons", "fire")


@pytest.mark.parametrize(
    ("expr", "token", "position"),
    [
        ("", None, None),
        ("field:hp | | mean", "|", 9),
        ("field:hp | mean |", "|", 16),
        ("field:hp | mean max", "mean max", 11),
        ("field:hp | entropy:x", "entropy:x", 11),
        ("field:hp | p-1", "p-1", 11),
        ("field:hp | id:", "id:", 11),
        ("field:hp | to: | mean", "to:", 11),
        ("field:hp | is: | mean", "is:", 11),
        ("field:1hp | mean", "field:1hp", 0),
        ("field:hp | where:=3 | mean", "where:=3", 11),
        ("field:hp | formation:size | mean", "formation:size", 11),
    ],
)
def test_malformed_expressions_fail_with_position(expr, token, position) -> None:
    with pytest.raises(MetricCompileError) as exc:
        compile_metric(expr, SCHEMA)
    assert exc.value.token == token
    assert exc.value.position == position


@pytest.mark.parametrize(
    ("expr", "token", "message"),
    [
        ("field:hp | p\u0669\u0660", "p\u0669\u0660", "ASCII digits"),  # Arabic-Indic 90
        ("field:hp | p\uff19\uff10", "p\uff19\uff10", "ASCII digits"),  # fullwidth 90
        ("field:hp | p0090", "p0090", "ASCII digits"),  # four digits: percent is 1 to 3
        ("field:hp | present:0050 | mean", "present:0050", "1 to 3 ASCII digits"),
        ("field:hp | present:\u0665\u0660 | mean", "present:\u0665\u0660", "ASCII digits"),
        ("field:hp | entropy:\u0668", "entropy:\u0668", "ASCII digits"),
        ("field:hp | entropy:00016", "entropy:00016", "1 to 4 ASCII digits"),
        ("field:hp | where:>\u0665 | count", "where:>\u0665", None),
    ],
)
def test_only_ascii_digits_in_the_documented_widths(expr, token, message) -> None:
    """docs/metrics.md: ``percent`` is 1-3 digits, ``bins`` what 2..4096 needs, digits are ASCII."""
    with pytest.raises(MetricCompileError, match=message) as exc:
        compile_metric(expr, SCHEMA)
    assert exc.value.token == token


def test_the_documented_widths_still_parse() -> None:
    assert parse_metric("field:hp | p090")[1].arg == "90"
    assert parse_metric("field:hp | present:100 | mean")[1].arg == "100"
    assert parse_metric("field:hp | entropy:4096")[1].arg == "4096"


def test_error_carries_expected_and_suggestion() -> None:
    with pytest.raises(MetricCompileError) as exc:
        compile_metric("field:pos | sped | p90", SCHEMA, name="fast")
    msg = str(exc.value)
    assert "did you mean 'speed'" in msg and "metric 'fast'" in msg and "position 12" in msg
    with pytest.raises(MetricCompileError, match="must end with a reduce .*mean"):
        compile_metric("field:pos | speed", SCHEMA)


_PIECES = [t.spelling.split("<")[0] for t in TOKENS] + [
    "hp",
    "pos",
    "team",
    "red",
    ">",
    "=",
    ".",
    ":",
    "|",
    " ",
    "p",
    "5",
    "fire",
    "x",
    "-",
]


@given(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=8).map("".join))
@settings(max_examples=150, deadline=None)
def test_the_grammar_is_closed(text: str) -> None:
    """Arbitrary token soup either compiles into table tokens or raises MetricCompileError."""
    for expr in (text, "field:hp | " + text, "field:hp | " + text + " | mean"):
        try:
            m = compile_metric(expr, SCHEMA)
        except MetricCompileError:
            continue
        known = {(t.role, t.op) for t in TOKENS}
        assert all((s.role, s.op) in known for s in m.stages), expr


@given(st.text(max_size=40))
@settings(max_examples=200, deadline=None)
def test_any_text_either_parses_or_raises_metric_compile_error(text: str) -> None:
    try:
        stages = parse_metric(text)
    except MetricCompileError:
        return
    assert stages[0].role == "source" and stages[-1].role == "reduce"
