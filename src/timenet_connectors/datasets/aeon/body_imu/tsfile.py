"""A strict reader for the sktime/aeon ``.ts`` time-series classification format.

Supported: ``@equalLength true``, ``@timeStamps false``, ``@missing false``,
``@classLabel true <labels...>``, one case per line after ``@data`` with
dimensions separated by ``:`` and the class label last. Anything else
(unknown or missing headers, a wrong number of dimensions, a non-numeric
value, unequal lengths, an undeclared label) raises :class:`RawInputError`
naming the file and the 0-based case row; nothing is guessed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from timenet.build.errors import RawInputError

__all__ = ["TsProblem", "read_ts"]

_KNOWN = {
    "problemname",
    "timestamps",
    "missing",
    "univariate",
    "dimensions",
    "equallength",
    "serieslength",
    "classlabel",
    "data",
}


@dataclass(frozen=True)
class TsProblem:
    """Content of one ``.ts`` file.

    Attributes
    ----------
    name : str
    values : ndarray, shape (N, D, T), float64
        N cases, D dimensions, T steps.
    labels : tuple of str, length N
    class_labels : tuple of str
        Declared labels, in header order.
    """

    name: str
    values: np.ndarray
    labels: tuple[str, ...]
    class_labels: tuple[str, ...]


def _flag(headers: dict[str, str], key: str, where: str) -> bool:
    v = headers.get(key, "").split(" ", 1)[0].lower()
    if v not in ("true", "false"):
        raise RawInputError(where, f"header @{key} must be true or false, got {v!r}")
    return v == "true"


def read_ts(text: str, where: str) -> TsProblem:
    """Parse ``.ts`` text.

    Raises
    ------
    RawInputError
        On any deviation from the supported subset (see the module docstring).
    """
    headers: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    for i, raw in enumerate(lines):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if not line.startswith("@"):
            raise RawInputError(where, f"line {i + 1}: data before @data")
        key, _, value = line[1:].partition(" ")
        key = key.lower()
        if key not in _KNOWN:
            raise RawInputError(where, f"line {i + 1}: unknown header @{key}")
        if key in headers:
            raise RawInputError(where, f"line {i + 1}: header @{key} repeated")
        headers[key] = value.strip()
        if key == "data":
            break
    else:
        raise RawInputError(where, "no @data section")
    for key in ("problemname", "classlabel", "equallength", "timestamps", "missing"):
        if key not in headers:
            raise RawInputError(where, f"missing header @{key}")
    if _flag(headers, "timestamps", where):
        raise RawInputError(where, "@timeStamps true is not supported")
    if _flag(headers, "missing", where):
        raise RawInputError(where, "@missing true is not supported")
    if not _flag(headers, "equallength", where):
        raise RawInputError(where, "@equalLength false is not supported")
    if not _flag(headers, "classlabel", where):
        raise RawInputError(where, "@classLabel false is not supported")
    classes = tuple(headers["classlabel"].split()[1:])
    if not classes or len(set(classes)) != len(classes):
        raise RawInputError(where, f"@classLabel must list distinct labels, got {classes}")
    dims = int(headers["dimensions"]) if "dimensions" in headers else None
    length = int(headers["serieslength"]) if "serieslength" in headers else None
    cases: list[np.ndarray] = []
    labels: list[str] = []
    for raw in lines[i + 1 :]:
        line = raw.strip()
        if not line:
            continue
        row = len(cases)
        parts = line.split(":")
        label = parts[-1].strip()
        if label not in classes:
            raise RawInputError(where, f"label {label!r} is not declared in {classes}", row=row)
        if dims is not None and len(parts) - 1 != dims:
            raise RawInputError(
                where, f"{len(parts) - 1} dimensions, header declares {dims}", row=row
            )
        try:
            series = [np.array([float(v) for v in p.split(",")]) for p in parts[:-1]]
        except ValueError as exc:
            raise RawInputError(where, f"non-numeric value: {exc}", row=row) from None
        lens = {len(s) for s in series}
        want = length if length is not None else (len(cases[0][0]) if cases else None)
        if len(lens) != 1 or (want is not None and lens != {want}):
            raise RawInputError(where, f"series lengths {sorted(lens)} differ from {want}", row=row)
        arr = np.stack(series)
        if not np.isfinite(arr).all():
            raise RawInputError(where, "non-finite value", row=row)
        cases.append(arr)
        labels.append(label)
    if not cases:
        raise RawInputError(where, "no cases after @data")
    return TsProblem(headers["problemname"], np.stack(cases), tuple(labels), classes)
