"""Pydantic validation errors as one line per problem, each naming its key path.

:func:`problems_of` turns a :class:`pydantic.ValidationError` raised on a
parsed JSON document into ``(path, message)`` pairs: locations that are union
branches rather than keys are dropped, an unknown key names the closest known
key of the object it appears in (from the model's JSON Schema), and the
branches of a union that failed at one path are merged into one message.
:mod:`kuration.core.config` raises them as the package's own errors.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

__all__ = ["problems_of"]


@functools.cache
def _schema_of(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema(by_alias=True)


def _resolve(node: Any, defs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every concrete object schema a node can be (through $ref and unions)."""
    if not isinstance(node, Mapping):
        return []
    if "$ref" in node:
        return _resolve(defs[node["$ref"].rsplit("/", 1)[1]], defs)
    out: list[dict[str, Any]] = []
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in node.get(key, []):
            out.extend(_resolve(sub, defs))
    return out or [dict(node)]


def _known_keys(model: type[BaseModel], path: Sequence[str | int]) -> list[str]:
    """The keys the schema allows in the object at ``path`` (real keys and indexes only)."""
    root = _schema_of(model)
    defs = root.get("$defs", {})
    nodes = _resolve(root, defs)
    for part in path:
        nxt: list[dict[str, Any]] = []
        for n in nodes:
            if isinstance(part, int):
                nxt.extend(_resolve(n.get("items"), defs))
            elif part in n.get("properties", {}):
                nxt.extend(_resolve(n["properties"][part], defs))
            elif isinstance(n.get("additionalProperties"), Mapping):
                nxt.extend(_resolve(n["additionalProperties"], defs))
        nodes = nxt
    return sorted({k for n in nodes for k in n.get("properties", {})})


def _real_path(loc: Sequence[str | int], data: Any, kind: str) -> list[str | int]:
    """The key path of a pydantic location: parts that are union branches (not keys or
    indexes of ``data``) are left out; a missing key is kept."""
    out: list[str | int] = []
    cur = data
    for i, part in enumerate(loc):
        in_map = isinstance(cur, Mapping) and part in cur
        in_list = isinstance(cur, list) and isinstance(part, int) and 0 <= part < len(cur)
        if in_map or in_list:
            cur = cur[part]
        elif not (i == len(loc) - 1 and kind == "missing"):
            continue
        out.append(part)
    return out


def _format_path(path: Sequence[str | int]) -> str:
    """``("output", "modalities", "x", "shape", 0)`` -> ``output.modalities.x.shape[0]``."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def _short(v: Any) -> str:
    """The value as JSON spells it (``"1"``, ``true``), cut short."""
    try:
        r = json.dumps(v, ensure_ascii=False)
    except (TypeError, ValueError):
        r = repr(v)
    return r if len(r) <= 60 else r[:57] + "..."


def _nested_match(
    model: type[BaseModel], where: list[str | int], key: str, known: Sequence[str]
) -> list[str]:
    """``["budget.train_hours"]`` for ``trian_hours`` at the top level: the closest key of
    an object one level below ``where`` (as close as a same-level hint needs), or none."""
    below = {f"{k}.{sub}": sub for k in known for sub in _known_keys(model, [*where, k])}
    score = {d: difflib.SequenceMatcher(None, key, sub).ratio() for d, sub in below.items()}
    best = max(score, key=score.__getitem__, default=None)
    return [best] if best is not None and score[best] >= 0.8 else []


def _problem(err: Mapping[str, Any], path: list[str | int], model: type[BaseModel]) -> str:
    kind = err["type"]
    if kind == "extra_forbidden":
        key = str(path[-1])
        known = _known_keys(model, path[:-1])
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        if not close:  # a key of an object one level down, written at this level
            close = _nested_match(model, [*path[:-1]], key, known)
        hint = f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(known)}"
        return f"unknown key {key!r} ({hint})"
    if kind == "missing":
        return "required key is missing"
    msg = re.sub(r"a valid dictionary or instance of \w+", "an object", str(err["msg"]))
    msg = msg.replace("a valid dictionary", "an object")
    return msg[0].lower() + msg[1:]


def problems_of(exc: ValidationError, data: Any, model: type[BaseModel]) -> list[tuple[str, str]]:
    """(path, message) per problem; the branches of a union that failed are merged into one line."""
    found: dict[tuple[str | int, ...], list[str]] = {}
    given: dict[tuple[str | int, ...], Any] = {}
    for err in exc.errors(include_url=False):
        path = tuple(_real_path(err["loc"], data, err["type"]))
        msgs = found.setdefault(path, [])
        msg = _problem(err, list(path), model)
        if msg not in msgs:
            msgs.append(msg)
        if err["type"] not in ("extra_forbidden", "missing"):
            given.setdefault(path, err.get("input"))
    # a branch that failed deeper down says more than the branches that failed at the top
    keep = [p for p in found if not any(len(q) > len(p) and q[: len(p)] == p for q in found)]
    out = []
    for p in keep:
        first, *rest = found[p]
        text = " or ".join([first, *(m.removeprefix("input should be ") for m in rest)])
        if p in given:
            text += f", got {_short(given[p])}"
        out.append((_format_path(p), text))
    return out
