"""Whether a resumed run is the job whose dataset a destination holds.

``resume`` continues or repeats one job; it must never replace the committed dataset
of another.  The run description pinned by the fingerprint marker
(:data:`~kuration.output.commit.MARKER_NAME`) mixes what the user declared (the job's
settings: schema, adapter, strategy, segmenter, output spec, encoder, budget, seed,
split and budget-unit options, ...) with what the run found (source fingerprints and
the errors and groups read from them) and the code that ran (kuration's version,
plugin and encoder code).  Only a change of the first kind makes it another job: a
changed source or a new code version is the same job, which resume rebuilds where
stale.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.jsonio import canonical_json, loads_strict
from ..core.words import first_of
from ..errors import DatasetExistsError, DatasetIntegrityError
from .commit import COMMIT_NAME, CONFIG_NAME, FORMAT, MARKER_NAME, changed_paths, read_regular

__all__ = [
    "NOT_SETTINGS",
    "Occupant",
    "committed_run",
    "job_changes",
    "occupant",
    "occupant_here",
    "refuse_other_job",
    "refuse_other_job_here",
]

#: top-level parts of a run description that are not the job's settings: what the run
#: read from its sources and the identity of the code it ran
NOT_SETTINGS = frozenset({"kuration_version", "code", "sources", "source_errors", "groups"})

#: how many changed settings the refusal names before it counts the rest
SHOWN = 4


def _settings(run: Mapping[str, Any]) -> dict[str, Any]:
    """The job's settings in a run description, as canonical JSON values (an encoder's
    code digest is code, not a setting)."""
    out = {k: v for k, v in run.items() if k not in NOT_SETTINGS}
    enc = out.get("encoder")
    if isinstance(enc, Mapping):
        out["encoder"] = {k: v for k, v in enc.items() if k != "code_sha256"}
    parsed: dict[str, Any] = loads_strict(canonical_json(out), what="run settings")
    return parsed


def _code(run: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    enc = run.get("encoder")
    enc_code = enc.get("code_sha256") if isinstance(enc, Mapping) else None
    return run.get("kuration_version"), run.get("code"), enc_code


def job_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """Dotted paths of the job settings that differ between two run descriptions.

    ``new`` may lack what the run reads from its sources (checked before any source is
    read), but must hold the code identity: when that differs (kuration's version, plugin
    or encoder code), a setting present on one side only is taken for a field the new
    code added or dropped, not for another job.
    """
    return changed_paths(_settings(old), _settings(new), one_sided=_code(old) == _code(new))


def committed_run(commit: bytes | None, marker: bytes | None) -> dict[str, Any] | None:
    """The run description of a destination's committed dataset, from the bytes of its
    commit record and fingerprint marker; None when there is no committed dataset a
    reader would accept (no record, ``state="writing"``, a marker the commit does not
    pin)."""
    if commit is None or marker is None:
        return None
    try:
        rec = loads_strict(commit, what="commit record")
        doc = loads_strict(marker, what="fingerprint marker")
    except ValueError:
        return None
    if not (
        isinstance(rec, dict)
        and isinstance(doc, dict)
        and rec.get("format") == FORMAT
        and rec.get("state") == "committed"
        and rec.get("output_spec_sha256") == hashlib.sha256(marker).hexdigest()
        and doc.get("run_fingerprint") == rec.get("run_fingerprint")
        and isinstance(doc.get("run"), dict)
    ):
        return None
    run: dict[str, Any] = doc["run"]
    return run


@dataclass(frozen=True)
class Occupant:
    """The committed dataset a destination holds, as seen by a run of another job or of
    the same one.

    Attributes
    ----------
    name : str or None
        The ``name`` of the job that made it (its pinned ``config.json``), when readable.
    changed : tuple of str
        The job settings that differ from the run's (:func:`job_changes`); empty for the
        same job.
    """

    name: str | None
    changed: tuple[str, ...]

    def named(self) -> str:
        """`` ('<name>')`` when the name is known, else ``""``: to follow "job" in a message."""
        return f" ({self.name!r})" if self.name else ""

    def changes(self) -> str:
        """The first changed settings and how many more."""
        return first_of(list(self.changed), SHOWN)


def _job_name(commit: bytes, config: bytes | None) -> str | None:
    """The job's ``name`` in the ``config.json`` the commit record pins; None when absent."""
    if config is None:
        return None
    try:
        rec = loads_strict(commit, what="commit record")
        doc = loads_strict(config, what="config")
    except ValueError:
        return None
    if not isinstance(rec, dict) or rec.get("config_sha256") != hashlib.sha256(config).hexdigest():
        return None
    job = doc.get("job") if isinstance(doc, dict) else None
    name = job.get("name") if isinstance(job, dict) else None
    return name if isinstance(name, str) and name else None


def occupant(
    commit: bytes | None, marker: bytes | None, config: bytes | None, run: Mapping[str, Any]
) -> Occupant | None:
    """The committed dataset of a destination (from its commit record, fingerprint marker
    and config bytes; None: missing) compared with ``run`` (as :func:`job_changes` takes
    it); None when there is no committed dataset a reader would accept."""
    old = committed_run(commit, marker)
    if old is None or commit is None:
        return None
    return Occupant(_job_name(commit, config), tuple(job_changes(old, run)))


def refuse_other_job(
    where: str,
    commit: bytes | None,
    marker: bytes | None,
    run: Mapping[str, Any],
    config: bytes | None = None,
) -> None:
    """Refuse to resume into a destination whose committed dataset another job made.

    Parameters
    ----------
    where : str
        The destination as the user wrote it (folder or URL).
    commit, marker : bytes or None
        The destination's commit record and fingerprint marker (None: missing).
    run : mapping
        The resumed run's description, or its settings and code identity alone (see
        :func:`job_changes`).
    config : bytes or None
        Its ``config.json``: the message names the job that made the dataset.

    Raises
    ------
    DatasetExistsError
        The committed dataset's job settings differ; the message names the first
        changed settings, their count, and ``force`` or another destination.
    """
    occ = occupant(commit, marker, config, run)
    if occ is None or not occ.changed:
        return
    raise DatasetExistsError(
        f"{where} holds the committed dataset of a different job{occ.named()} (changed "
        f"settings: {occ.changes()}); resume only continues the same job. Write to another "
        "destination (kur run --out DIR), or replace that dataset with force=True "
        "(kur run --force)"
    )


def _read_here(root: Path) -> tuple[bytes | None, bytes | None, bytes | None]:
    """The commit record, fingerprint marker and config of the folder ``root`` (None for a
    missing one: no committed dataset)."""

    def read(name: str) -> bytes | None:
        try:
            return read_regular(root / name)
        except DatasetIntegrityError:  # missing or not a file
            return None

    return read(COMMIT_NAME), read(MARKER_NAME), read(CONFIG_NAME)


def refuse_other_job_here(root: Path, run: Mapping[str, Any], where: str | None = None) -> None:
    """:func:`refuse_other_job` for the local folder ``root`` (or the copy of a remote
    destination's metadata there; ``where`` names the destination in the message)."""
    commit, marker, config = _read_here(root)
    refuse_other_job(where or str(root), commit, marker, run, config)


def occupant_here(root: Path, run: Mapping[str, Any]) -> Occupant | None:
    """:func:`occupant` for the local folder ``root``."""
    return occupant(*_read_here(root), run)
