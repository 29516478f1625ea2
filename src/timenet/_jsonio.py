"""Strict parsing of the JSON and YAML documents TimeNet reads.

Python's ``json`` and PyYAML keep the last of two duplicate keys, and
``json`` accepts ``NaN``/``Infinity``; pydantic's JSON parser does the same.
A document where one key appears twice (a second ``"sha256"`` for one
manifest entry) has no single meaning, so every document TimeNet reads --
``manifest.json``, ``dataset.yaml`` cards, the JSON stored in the catalog,
connectors' raw JSON -- goes through these loaders, which refuse it.

TimeNet keeps its own loader rather than importing kuration's: kuration
depends on TimeNet, never the other way round.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from timenet.errors import DocumentError, _Refused

__all__ = ["load_yaml_strict", "loads_strict"]


def _no_dupes(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _Refused(f"duplicate key {k!r}", k)
        out[k] = v
    return out


def _no_constant(name: str) -> Any:
    raise _Refused(f"non-finite number {name}")


def loads_strict(text: str | bytes, *, what: str, allow_nan: bool = False) -> Any:
    """Parse JSON, refusing duplicate object keys and (unless ``allow_nan``) NaN/Infinity.

    Parameters
    ----------
    text : str or bytes
        The JSON document (UTF-8 when bytes).
    what : str
        The document's name or path, used in the error.
    allow_nan : bool
        Accept ``NaN``, ``Infinity`` and ``-Infinity`` (raw third-party data only).

    Raises
    ------
    DocumentError
        Naming ``what`` and the duplicate key, the non-finite number or the
        JSON syntax error (with its line and column).
    """
    try:
        if allow_nan:
            return json.loads(text, object_pairs_hook=_no_dupes)
        return json.loads(text, object_pairs_hook=_no_dupes, parse_constant=_no_constant)
    except _Refused as exc:
        raise DocumentError(what, exc.reason, key=exc.key) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DocumentError(what, f"not valid JSON: {exc}") from None


def _yaml_loader() -> type:
    import yaml

    class StrictLoader(yaml.SafeLoader):
        """SafeLoader refusing a key that appears twice in one mapping."""

    def construct_mapping(loader: Any, node: Any, deep: bool = False) -> Any:
        loader.flatten_mapping(node)
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=deep)
            if key in seen:
                mark = key_node.start_mark
                raise _Refused(f"duplicate key {key!r} at line {mark.line + 1}", str(key))
            seen.add(key)
        return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)

    StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    return StrictLoader


def load_yaml_strict(path: str | Path) -> Any:
    """Read a YAML file, refusing duplicate keys and non-finite numbers.

    Raises
    ------
    DocumentError
        Naming ``path``, the key and its line, or the YAML syntax error.
    FileNotFoundError
        If ``path`` does not exist.
    """
    import yaml

    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    try:
        data = yaml.load(text, Loader=_yaml_loader())  # a SafeLoader subclass
    except _Refused as exc:
        raise DocumentError(str(path), exc.reason, key=exc.key) from None
    except yaml.YAMLError as exc:
        raise DocumentError(str(path), f"not valid YAML: {exc}") from None
    bad = _non_finite(data)
    if bad is not None:
        raise DocumentError(str(path), f"non-finite number at {bad}", key=bad)
    return data


def _non_finite(obj: Any, where: str = "$") -> str | None:
    if isinstance(obj, float) and not math.isfinite(obj):
        return where
    if isinstance(obj, dict):
        items = obj.items()
    elif isinstance(obj, list):
        items = enumerate(obj)  # type: ignore[assignment]
    else:
        return None
    for k, v in items:
        found = _non_finite(v, f"{where}.{k}")
        if found is not None:
            return found
    return None
