"""The closed metric grammar: tokenizer and parser.

A metric is a pipeline of stages separated by ``|``::

    metric  = source , { "|" , stage } ;
    source  = "field:" , NAME ;
    stage   = map | agg | reduce ;
    map     = "speed" | "angle_delta" | "diff" | "abs" | "norm" | "bit:" , NAME ;
    agg     = "entities:" , ( "mean" | "min" | "max" | "sum" | "median" | "std" | "count" ) ;
    reduce  = "mean" | "std" | "min" | "max" | "median" | "p" , DIGITS
            | "entropy" | "entropy:" , DIGITS ;
    NAME    = letter , { letter | digit | "_" } ;

The last stage must be a reduce; nothing may follow it.  See
``docs/metrics.md`` for what each token accepts and returns.  Parsing only
checks form; :func:`kuration.dsl.compile.compile_metric` checks types against a
schema.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import MetricCompileError

__all__ = ["AGGS", "MAPS", "REDUCES", "SOURCES", "Stage", "parse_metric"]

SOURCES = ("field",)
MAPS = ("speed", "angle_delta", "diff", "abs", "norm", "bit")
AGGS = ("mean", "min", "max", "sum", "median", "std", "count")
REDUCES = ("mean", "std", "min", "max", "median", "entropy")  # plus pNN

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_PCT = re.compile(r"p(\d{1,3})\Z")


@dataclass(frozen=True)
class Stage:
    """One parsed token: ``role`` is source/map/agg/reduce, ``op`` the operation, ``arg`` its
    argument (a field or bit name, a percentile, a bin count) and ``pos`` its offset."""

    role: str
    op: str
    arg: str | None
    pos: int
    text: str


def _all_tokens() -> list[str]:
    toks = [f"{s}:" for s in SOURCES] + [m for m in MAPS if m != "bit"] + ["bit:"]
    toks += [f"entities:{a}" for a in AGGS] + list(REDUCES) + ["p50", "p90", "entropy:"]
    return toks


def _suggest(text: str) -> str:
    hint = difflib.get_close_matches(text, _all_tokens(), n=2, cutoff=0.6)
    return f"; did you mean {' or '.join(map(repr, hint))}?" if hint else ""


def _split(expr: str) -> list[tuple[str, int]]:
    parts: list[tuple[str, int]] = []
    pos = 0
    for chunk in expr.split("|"):
        lead = len(chunk) - len(chunk.lstrip())
        parts.append((chunk.strip(), pos + lead))
        pos += len(chunk) + 1
    return parts


def parse_metric(expr: str, *, metric: str | None = None) -> list[Stage]:
    """Parse ``expr`` into stages (source first, reduce last).

    Raises
    ------
    MetricCompileError
        Naming the token, its position, what was expected and a close match.
    """
    if not isinstance(expr, str) or not expr.strip():
        raise MetricCompileError("empty metric expression", expr=str(expr), metric=metric)

    def fail(msg: str, text: str, pos: int) -> MetricCompileError:
        return MetricCompileError(
            msg + _suggest(text), expr=expr, token=text, position=pos, metric=metric
        )

    parts = _split(expr)
    stages: list[Stage] = []
    for i, (text, pos) in enumerate(parts):
        if not text:
            raise MetricCompileError(
                "empty stage (stray '|')",
                expr=expr,
                token="|",
                position=max(pos - 1, 0),
                metric=metric,
            )
        if i == 0:
            head, sep, arg = text.partition(":")
            if not sep or head not in SOURCES:
                raise fail(
                    f"expected a source ({', '.join(s + ':<name>' for s in SOURCES)})", text, pos
                )
            if not _NAME.match(arg):
                raise fail(f"expected a field name after '{head}:'", text, pos)
            stages.append(Stage("source", head, arg, pos, text))
            continue
        if stages[-1].role == "reduce":
            raise fail("nothing may follow a reduce", text, pos)
        stages.append(_parse_stage(text, pos, fail))
    if stages[-1].role != "reduce":
        last = stages[-1]
        raise MetricCompileError(
            "a metric must end with a reduce (mean, std, min, max, median, pNN, entropy)",
            expr=expr,
            token=last.text,
            position=last.pos,
            metric=metric,
        )
    return stages


def _parse_stage(text: str, pos: int, fail: Callable[[str, str, int], MetricCompileError]) -> Stage:
    head, sep, arg = text.partition(":")
    if head == "bit" and sep:
        if not _NAME.match(arg):
            raise fail("expected a bit name after 'bit:'", text, pos)
        return Stage("map", "bit", arg, pos, text)
    if head == "entities" and sep:
        if arg not in AGGS:
            raise fail(f"expected an entity aggregation entities:({'|'.join(AGGS)})", text, pos)
        return Stage("agg", arg, None, pos, text)
    if head == "entropy" and sep:
        if not arg.isdigit() or not 2 <= int(arg) <= 4096:
            raise fail("expected a bin count 2..4096 after 'entropy:'", text, pos)
        return Stage("reduce", "entropy", arg, pos, text)
    if sep:
        raise fail("unknown token", text, pos)
    if text in MAPS and text != "bit":
        return Stage("map", text, None, pos, text)
    if text in REDUCES:
        return Stage("reduce", text, None, pos, text)
    m = _PCT.match(text)
    if m:
        q = int(m.group(1))
        if q > 100:
            raise fail("a percentile is p0..p100", text, pos)
        return Stage("reduce", "percentile", str(q), pos, text)
    raise fail("unknown token", text, pos)
