"""Strict JSON: duplicate keys and non-finite numbers are errors, output is canonical."""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any

from ..errors import StrictJSONError

__all__ = [
    "canonical_json",
    "canonical_sha256",
    "dump_json_atomic",
    "load_json_strict",
    "loads_strict",
    "sha256_file",
]


def _no_dupes(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise StrictJSONError(f"duplicate key {k!r}")
        out[k] = v
    return out


class _NonFinite:
    """Stands where the text has NaN or +/-Infinity, so the error can name its key path."""

    def __init__(self, name: str) -> None:
        self.name = name


def _non_finite_path(obj: Any, where: str = "") -> tuple[str, str] | None:
    """``(constant, key path)`` of the first :class:`_NonFinite` in ``obj``, in document order."""
    if isinstance(obj, _NonFinite):
        return obj.name, where or "(top level)"
    items = (
        obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    )
    for k, v in items:
        sub = f"{where}[{k}]" if isinstance(k, int) else (f"{where}.{k}" if where else str(k))
        found = _non_finite_path(v, sub)
        if found is not None:
            return found
    return None


def loads_strict(text: str | bytes, *, what: str = "JSON") -> Any:
    """Parse JSON rejecting duplicate object keys and NaN/Infinity.

    Raises
    ------
    StrictJSONError
        A ``ValueError``, naming ``what`` and the problem.
    """
    seen: list[_NonFinite] = []

    def constant(name: str) -> _NonFinite:
        seen.append(_NonFinite(name))
        return seen[-1]

    try:
        out = json.loads(text, object_pairs_hook=_no_dupes, parse_constant=constant)
        if seen:
            name, where = _non_finite_path(out) or (seen[0].name, "(top level)")
            raise StrictJSONError(f"non-finite number {name} at {where}")
        return out
    except StrictJSONError as exc:
        raise StrictJSONError(f"{what}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise StrictJSONError(f"{what}: malformed JSON: {exc}") from None


def load_json_strict(path: str | os.PathLike[str]) -> Any:
    """Read and strictly parse a JSON file."""
    p = Path(path)
    return loads_strict(p.read_bytes(), what=str(p))


def _check_finite(obj: Any, where: str = "$") -> None:
    if isinstance(obj, float) and not math.isfinite(obj):
        raise StrictJSONError(f"non-finite number at {where}")
    if isinstance(obj, dict):
        for k, v in obj.items():
            _check_finite(v, f"{where}.{k}")
    elif isinstance(obj, list | tuple):
        for i, v in enumerate(obj):
            _check_finite(v, f"{where}[{i}]")


def _encoder() -> json.JSONEncoder:
    return json.JSONEncoder(sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)


def canonical_json(obj: Any) -> bytes:
    """Deterministic UTF-8 JSON bytes (sorted keys, fixed separators, trailing newline).

    Raises
    ------
    StrictJSONError
        A ``ValueError``: ``obj`` holds NaN or infinity.
    """
    parts: list[bytes] = []
    _write_canonical(obj, parts.append)  # a few large pieces, not every small string
    return b"".join(parts)


#: characters of encoded JSON gathered before one write (and one hash update)
_WRITE_CHARS = 1 << 16


def _write_canonical(obj: Any, put: Any) -> None:
    """Hand the bytes of :func:`canonical_json` of ``obj`` to ``put`` a few tens of KB at a
    time: with ``indent`` the encoder is pure Python, and :func:`json.dumps` would first
    hold every one of its small string pieces at once (about 50 MB for the
    ``config.json`` of a run over 15,000 sources)."""
    _check_finite(obj)
    parts: list[str] = []
    held = 0
    for chunk in _encoder().iterencode(obj):
        parts.append(chunk)
        held += len(chunk)
        if held >= _WRITE_CHARS:
            put("".join(parts).encode())
            parts, held = [], 0
    put("".join([*parts, "\n"]).encode())


def canonical_sha256(obj: Any) -> str:
    """Hex SHA-256 of :func:`canonical_json` of ``obj``, hashed as it is encoded.

    Raises
    ------
    StrictJSONError
        ``obj`` holds NaN or infinity.
    """
    h = hashlib.sha256()
    _write_canonical(obj, h.update)
    return h.hexdigest()


def dump_json_atomic(path: str | os.PathLike[str], obj: Any) -> str:
    """Write :func:`canonical_json` of ``obj`` via a same-directory temp file and
    ``os.replace``, encoded, hashed and written a few tens of KB at a time; returns its
    SHA-256.

    Raises
    ------
    StrictJSONError
        ``obj`` holds NaN or infinity (nothing is written).
    """
    _check_finite(obj)
    p = Path(path)
    tmp = p.with_name(f".{p.name}.tmp-{os.getpid()}")
    h = hashlib.sha256()
    with open(tmp, "wb") as fh:

        def put(data: bytes) -> None:
            fh.write(data)
            h.update(data)

        _write_canonical(obj, put)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, p)
    return h.hexdigest()


def sha256_file(path: str | os.PathLike[str], chunk: int = 1 << 20) -> str:
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()
