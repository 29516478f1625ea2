"""Entity ids: canonical, type-tagged strings and a total sort order.

Ids come from raw data and can be ints, strings, bytes, tuples...  Shards and
manifests store them as type-tagged strings so that the integer ``1`` and the
string ``"1"`` never alias, and sort them by that tag so order is stable
across runs and machines.
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections.abc import Hashable
from typing import Any

import numpy as np

from ..errors import EntityIdError

__all__ = ["ENTITY_DTYPES", "entity_sort_key", "safe_name", "stable_hash12", "tag_entity_id"]

#: Declared types of an entity id column (adapters' ``entity_dtype`` option).
ENTITY_DTYPES = ("auto", "string", "int64")


def tag_entity_id(value: Any) -> str:
    """Type-tagged canonical string of an entity id.

    >>> tag_entity_id(1), tag_entity_id("1"), tag_entity_id(("a", 2))
    ('int:1', 'str:1', 'tuple:[str:a,int:2]')

    Raises
    ------
    EntityIdError
        For objects without a canonical representation (anything but None,
        bool, int, finite float, str, bytes, tuple, frozenset, NumPy scalars).
        It is a ``ValueError``.
    """
    if isinstance(value, np.generic):
        value = value.item()
    if value is None:
        return "none:"
    if isinstance(value, bool):
        return f"bool:{int(value)}"
    if isinstance(value, int):
        return f"int:{value}"
    if isinstance(value, float):
        if not math.isfinite(value):
            raise EntityIdError(f"entity id {value!r} is not finite")
        return f"float:{value!r}"
    if isinstance(value, str):
        return f"str:{value}"
    if isinstance(value, bytes):
        return f"bytes:{value.hex()}"
    if isinstance(value, tuple):
        return "tuple:[" + ",".join(tag_entity_id(v) for v in value) + "]"
    if isinstance(value, frozenset):
        return "frozenset:[" + ",".join(sorted(tag_entity_id(v) for v in value)) + "]"
    raise EntityIdError(f"entity id {value!r} of type {type(value).__name__} has no canonical form")


def entity_sort_key(value: Hashable) -> str:
    """Total order over heterogeneous ids (by their tagged form)."""
    return tag_entity_id(value)


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_name(text: str, max_len: int = 48) -> str:
    """A portable, length-bounded file-name fragment (ASCII letters, digits, ``._-``).

    Path separators, ``..``, spaces and non-ASCII characters never survive, so the
    result cannot escape a directory.  Uniqueness comes from a hash beside it,
    not from this prefix.
    """
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    out = _UNSAFE.sub("-", ascii_text).strip("-.")
    out = re.sub(r"\.{2,}", ".", out)
    return out[:max_len].rstrip("-.") or "x"


def stable_hash12(*parts: str) -> str:
    """First 12 hex digits of SHA-256 over the NUL-joined parts."""
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:12]
