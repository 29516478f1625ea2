"""The closed metric grammar: the token table, the tokenizer and the parser.

A metric is a pipeline of stages separated by ``|``: one source, any number
of maps, filters and entity aggregations, and one final reduce.

.. code-block:: ebnf

    metric      = source , { "|" , step } , "|" , reduce ;
    source      = "field:" , name | "global:" , name | "event:" , ref | "feature:" , ref ;
    step        = map | filter | aggregation ;
    map         = "speed" | "accel" | "jerk" | "heading"
                | "angle_delta" | "angular_rate" | "norm" | "diff" | "abs"
                | "bit:" , name | "is:" , label | "to:" , unit
                | "nn_dist" | "dist_to:" , ref
                | "formation:speed" | "formation:spread" | "formation:area" ;
    filter      = "present" | "present:" , percent | "id:" , ref
                | "where:" , comparison , number
                | "where:" , name , "=" , label
                | "where:" , name , "." , name ;
    aggregation = "entities:" , ( "mean" | "sum" | "min" | "max" | "median" | "std"
                                | "count" | "any" | "all" ) ;
    reduce      = "mean" | "sum" | "std" | "var" | "rms" | "min" | "max" | "median"
                | "iqr" | "p" , percent | "count" | "frac" | "entropy" | "entropy:" , bins
                | "n_changes" | "zero_crossings" | "path_length" | "rms_jerk"
                | "hull_area" | "duration_present" ;
    comparison  = ">=" | "<=" | "==" | "!=" | ">" | "<" ;
    name        = ( letter | "_" ) , { letter | digit | "_" } ;
    ref         = ( letter | digit | "_" ) , { letter | digit | "_" | "." | "-" } ;
    label       = visible , { character - "|" } ;   (* no leading or trailing blank *)
    unit        = visible , { character - "|" } ;   (* a pint unit, e.g. "km/h" *)
    percent     = digit , [ digit , [ digit ] ] ;   (* 0 .. 100 *)
    bins        = digit , { digit } ;               (* 2 .. 4096 *)
    number      = [ "-" | "+" ] , decimal , [ ( "e" | "E" ) , [ "-" | "+" ] , digit , { digit } ] ;
    decimal     = digit , { digit } , [ "." , { digit } ] | "." , digit , { digit } ;

Blanks around ``|`` are ignored; a token holds no blank except inside a
label.  Every token is listed in :data:`TOKENS` (and in ``docs/metrics.md``);
anything else is a :class:`~kuration.errors.MetricCompileError`.  Parsing only
checks form; :func:`kuration.metrics.dsl.compile.compile_metric` checks every stage
against the schema and the value type flowing into it.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from ...errors import MetricCompileError

__all__ = [
    "AGGS",
    "MAPS",
    "REDUCES",
    "SOURCES",
    "TOKENS",
    "Stage",
    "TokenSpec",
    "parse_metric",
]


@dataclass(frozen=True)
class TokenSpec:
    """One entry of the token table.

    ``spelling`` is the token as documented (``<...>`` marks an argument),
    ``role`` one of source/map/filter/agg/reduce and ``op`` the operation the
    compiler dispatches on.
    """

    spelling: str
    role: str
    op: str


def _t(spelling: str, role: str, op: str | None = None) -> TokenSpec:
    return TokenSpec(spelling, role, op or spelling.split(":")[0])


TOKENS: tuple[TokenSpec, ...] = (
    _t("field:<name>", "source"),
    _t("global:<name>", "source"),
    _t("event:<name>", "source"),
    _t("feature:<name>", "source"),
    _t("speed", "map"),
    _t("accel", "map"),
    _t("jerk", "map"),
    _t("heading", "map"),
    _t("angle_delta", "map"),
    _t("angular_rate", "map"),
    _t("norm", "map"),
    _t("diff", "map"),
    _t("abs", "map"),
    _t("bit:<bit>", "map"),
    _t("is:<label>", "map"),
    _t("to:<unit>", "map"),
    _t("nn_dist", "map"),
    _t("dist_to:<entity>", "map"),
    _t("formation:speed", "map", "formation_speed"),
    _t("formation:spread", "map", "formation_spread"),
    _t("formation:area", "map", "formation_area"),
    _t("present", "filter"),
    _t("present:<percent>", "filter"),
    _t("id:<entity>", "filter"),
    _t("where:<cmp><number>", "filter", "where_cmp"),
    _t("where:<field>=<label>", "filter", "where_label"),
    _t("where:<field>.<bit>", "filter", "where_bit"),
    *(
        _t(f"entities:{a}", "agg", a)
        for a in ("mean", "sum", "min", "max", "median", "std", "count", "any", "all")
    ),
    *(_t(r, "reduce") for r in ("mean", "sum", "std", "var", "rms", "min", "max", "median", "iqr")),
    _t("p<percent>", "reduce", "percentile"),
    _t("count", "reduce"),
    _t("frac", "reduce"),
    _t("entropy", "reduce"),
    _t("entropy:<bins>", "reduce"),
    _t("n_changes", "reduce"),
    _t("zero_crossings", "reduce"),
    _t("path_length", "reduce"),
    _t("rms_jerk", "reduce"),
    _t("hull_area", "reduce"),
    _t("duration_present", "reduce"),
)

SOURCES = tuple(t.op for t in TOKENS if t.role == "source")
MAPS = tuple(t.op for t in TOKENS if t.role == "map")
AGGS = tuple(t.op for t in TOKENS if t.role == "agg")
REDUCES = tuple(dict.fromkeys(t.op for t in TOKENS if t.role == "reduce"))

# argument-free tokens, by exact text
_WORDS: dict[str, TokenSpec] = {t.spelling: t for t in TOKENS if "<" not in t.spelling}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_REF = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*\Z")
# ASCII digits only (``\d`` would also match "٩"), in the widths the EBNF above allows.
_PCT = re.compile(r"p([0-9]{1,3})\Z")
_PERCENT = re.compile(r"[0-9]{1,3}\Z")
_BINS = re.compile(r"[0-9]{1,4}\Z")
_CMP = re.compile(r"(>=|<=|==|!=|>|<)([-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)\Z")
_LABEL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(\S(?:.*\S)?)\Z")
_BIT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)\Z")


@dataclass(frozen=True)
class Stage:
    """One parsed token.

    Attributes
    ----------
    role : str
        source, map, filter, agg or reduce.
    op : str
        The operation (``TokenSpec.op``).
    arg : str or None
        Its argument: a field, bit, label, unit or entity name, a percentile, a bin count.
    pos : int
        Character offset of the token in the expression.
    text : str
        The token as written.
    params : tuple
        Structured arguments of ``where:`` filters: ``(comparison, number)``,
        ``(field, label)`` or ``(field, bit)``.
    """

    role: str
    op: str
    arg: str | None
    pos: int
    text: str
    params: tuple[str | float, ...] = ()


def suggestion(text: str, candidates: list[str] | tuple[str, ...]) -> str:
    """``"; did you mean 'x'?"`` for the closest candidates of ``text`` (empty if none)."""
    hint = difflib.get_close_matches(text, list(candidates), n=2, cutoff=0.6)
    return f"; did you mean {' or '.join(map(repr, hint))}?" if hint else ""


def _token_suggest(text: str) -> str:
    cands = [t.spelling.split("<")[0] for t in TOKENS] + ["p90"]
    head = text.split(":")[0] + ":" if ":" in text else text
    hint = suggestion(text, cands) or suggestion(head, cands)
    return hint


def _split(expr: str) -> list[tuple[str, int, int]]:
    """``(token, offset of the token, offset of the '|' next to it)`` for every stage."""
    parts: list[tuple[str, int, int]] = []
    pos = 0
    for i, chunk in enumerate(expr.split("|")):
        lead = len(chunk) - len(chunk.lstrip())
        bar = pos - 1 if i else pos + len(chunk)
        parts.append((chunk.strip(), pos + lead, bar))
        pos += len(chunk) + 1
    return parts


Fail = Callable[[str, str, int], MetricCompileError]


def parse_metric(expr: str, *, metric: str | None = None) -> list[Stage]:
    """Parse ``expr`` into stages (source first, reduce last).

    Parameters
    ----------
    expr : str
        A metric expression, e.g. ``"field:position | speed | p90"``.
    metric : str, optional
        The metric's name, for error messages.

    Returns
    -------
    list of Stage

    Raises
    ------
    MetricCompileError
        Naming the token, its position, what was expected and a close match.
    """
    if not isinstance(expr, str) or not expr.strip():
        raise MetricCompileError("empty metric expression", expr=str(expr), metric=metric)

    def fail(msg: str, text: str, pos: int) -> MetricCompileError:
        return MetricCompileError(msg, expr=expr, token=text, position=pos, metric=metric)

    stages: list[Stage] = []
    for i, (text, pos, bar) in enumerate(_split(expr)):
        if not text:
            raise MetricCompileError(
                "empty stage (stray '|')", expr=expr, token="|", position=bar, metric=metric
            )
        if i == 0:
            stages.append(_parse_source(text, pos, fail))
            continue
        if stages[-1].role == "reduce":
            raise fail("nothing may follow a reduce", text, pos)
        stages.append(_parse_stage(text, pos, fail))
    if stages[-1].role != "reduce":
        last = stages[-1]
        raise MetricCompileError(
            "a metric must end with a reduce (" + ", ".join(_reduce_words()) + ")",
            expr=expr,
            token=last.text,
            position=last.pos,
            metric=metric,
        )
    return stages


def _reduce_words() -> list[str]:
    return [t.spelling for t in TOKENS if t.role == "reduce"]


def _parse_source(text: str, pos: int, fail: Fail) -> Stage:
    head, sep, arg = text.partition(":")
    if not sep or head not in SOURCES:
        raise fail(
            "expected a source (field:<name>, global:<name>, event:<name> or feature:<name>)"
            + _token_suggest(text),
            text,
            pos,
        )
    pattern = _NAME if head in ("field", "global") else _REF
    if not pattern.match(arg):
        raise fail(f"expected a name after '{head}:'", text, pos)
    return Stage("source", head, arg, pos, text)


def _parse_stage(text: str, pos: int, fail: Fail) -> Stage:
    word = _WORDS.get(text)
    if word is not None:
        if word.role == "source":  # pragma: no cover - sources always carry an argument
            raise fail("a source may only come first", text, pos)
        return Stage(word.role, word.op, None, pos, text)
    m = _PCT.match(text)
    if m:
        q = int(m.group(1))
        if q > 100:
            raise fail("a percentile is p0..p100", text, pos)
        return Stage("reduce", "percentile", str(q), pos, text)
    if text[:1] == "p" and text[1:].isdigit():
        raise fail("a percentile is p0..p100, written with 1 to 3 ASCII digits", text, pos)
    head, sep, arg = text.partition(":")
    if not sep:
        raise fail("unknown token" + _token_suggest(text), text, pos)
    if head in SOURCES:
        raise fail("a source may only come first", text, pos)
    if head == "entities":
        raise fail(f"expected an entity aggregation entities:({'|'.join(AGGS)})", text, pos)
    if head == "formation":
        raise fail("expected formation:speed, formation:spread or formation:area", text, pos)
    if head in ("bit", "is", "to", "dist_to"):
        if head == "bit" and not _NAME.match(arg):
            raise fail("expected a bit name after 'bit:'", text, pos)
        if head == "dist_to" and not _REF.match(arg):
            raise fail("expected an entity id after 'dist_to:'", text, pos)
        if not arg or arg != arg.strip():
            raise fail(f"expected an argument after '{head}:'", text, pos)
        return Stage("map", head, arg, pos, text)
    if head == "id":
        if not _REF.match(arg):
            raise fail("expected an entity id after 'id:'", text, pos)
        return Stage("filter", "id", arg, pos, text)
    if head == "present":
        if not _PERCENT.match(arg) or not 1 <= int(arg) <= 100:
            raise fail(
                "expected a percentage 1..100 (1 to 3 ASCII digits) after 'present:'", text, pos
            )
        return Stage("filter", "present", str(int(arg)), pos, text)
    if head == "where":
        return _parse_where(text, arg, pos, fail)
    if head == "entropy":
        if not _BINS.match(arg) or not 2 <= int(arg) <= 4096:
            raise fail(
                "expected a bin count 2..4096 (1 to 4 ASCII digits) after 'entropy:'", text, pos
            )
        return Stage("reduce", "entropy", str(int(arg)), pos, text)
    raise fail("unknown token" + _token_suggest(text), text, pos)


def _parse_where(text: str, arg: str, pos: int, fail: Fail) -> Stage:
    m = _CMP.match(arg)
    if m:
        value = float(m.group(2))
        if not math.isfinite(value):
            raise fail("the constant of a comparison must be finite", text, pos)
        return Stage("filter", "where_cmp", arg, pos, text, (m.group(1), value))
    m = _LABEL.match(arg)
    if m:
        return Stage("filter", "where_label", arg, pos, text, (m.group(1), m.group(2)))
    m = _BIT.match(arg)
    if m:
        return Stage("filter", "where_bit", arg, pos, text, (m.group(1), m.group(2)))
    raise fail(
        "expected where:<cmp><number> (cmp one of > >= < <= == !=), "
        "where:<field>=<label> or where:<field>.<bit>",
        text,
        pos,
    )
