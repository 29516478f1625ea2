"""Accepted access terms: which versions' terms this user has accepted, kept on disk.

A version whose effective access (its own and its parents', see
:class:`timenet.EffectiveAccess`) is not ``open`` is read only after the user
accepted its terms explicitly, with ``TimeNet(..., accept_terms=[ref])`` (this
client only) or :meth:`timenet.TimeNet.accept_terms` / ``timenet accept REF``
(persisted here). An acceptance is recorded against the exact version and the
SHA-256 of its requirement, so a registry serving other terms under the same
reference is not covered by it.

The file is ``$TIMENET_TERMS_FILE``, else ``~/.config/timenet/accepted-terms.json``::

    {"physionet/ecg-qa-cot@1.0": {"sha256": "...", "level": "credentialed", "accepted": "..."}}
"""

from __future__ import annotations

import json
import os
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from timenet._jsonio import loads_strict
from timenet.errors import DocumentError
from timenet.models import EffectiveAccess

__all__ = ["TermsStore", "default_terms_file"]


def default_terms_file() -> Path:
    """``$TIMENET_TERMS_FILE`` or ``~/.config/timenet/accepted-terms.json``."""
    env = os.environ.get("TIMENET_TERMS_FILE")
    return Path(env) if env else Path("~/.config/timenet/accepted-terms.json").expanduser()


class TermsStore:
    """The user's accepted terms, one JSON file (see the module docstring).

    Parameters
    ----------
    path : path, optional
        Default :func:`default_terms_file`.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else default_terms_file()

    def _read(self) -> dict[str, Any]:
        try:
            text = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        data = loads_strict(text, what=str(self.path))
        if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
            raise DocumentError(str(self.path), "not a mapping of reference to acceptance")
        return data

    def accepted(self, ref: str, access: EffectiveAccess) -> bool:
        """True if the terms ``access`` of version ``ref`` were accepted.

        Raises
        ------
        DocumentError
            If the file is malformed.
        """
        entry = self._read().get(ref)
        return entry is not None and entry.get("sha256") == access.digest()

    def accept(self, ref: str, access: EffectiveAccess) -> None:
        """Record that the user accepted the terms ``access`` of version ``ref``.

        The file is replaced atomically.

        Raises
        ------
        DocumentError
            If the existing file is malformed.
        OSError
            If it cannot be written.
        """
        data = self._read()
        data[ref] = {
            "sha256": access.digest(),
            "level": access.level,
            "accepted": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{uuid.uuid4().hex[:8]}")
        try:
            tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
            os.replace(tmp, self.path)
        finally:
            tmp.unlink(missing_ok=True)
