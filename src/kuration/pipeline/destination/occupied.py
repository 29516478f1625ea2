"""What a non-empty destination holds: a kuration run to resume, or only other files.

``resume`` continues a run (a committed dataset, or the staging area an interrupted
run left); a folder or prefix holding none of those has nothing to continue, so a
resume there is refused instead of writing a dataset next to the user's files.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...errors import DatasetExistsError
from ...output.commit import METADATA_NAMES, STAGING_NAME
from ...output.job_match import Occupant

__all__ = ["RUN_NAMES", "holds_run", "refuse_occupied"]

#: top-level names only a kuration run writes (its metadata and its staging area)
RUN_NAMES = frozenset((*METADATA_NAMES, STAGING_NAME))


def holds_run(names: Iterable[str]) -> bool:
    """Whether any of ``names`` (paths relative to the destination, ``/``-separated) is
    one a kuration run writes at the top level."""
    return any(n.split("/", 1)[0] in RUN_NAMES for n in names)


def refuse_occupied(
    where: str, *, has_run: bool, resume: bool, force: bool, occupant: Occupant | None = None
) -> None:
    """Refuse a run into a non-empty destination unless the options allow it.

    Parameters
    ----------
    where : str
        The destination as the user wrote it (folder or URL).
    has_run : bool
        :func:`holds_run` over its listing.
    resume, force : bool
        The run's options.
    occupant : Occupant, optional
        The committed dataset there, compared with this run's job
        (:func:`~kuration.output.job_match.occupant`): the message names the job that made
        it, and for another job suggests another destination, never ``resume``.

    Raises
    ------
    DatasetExistsError
        Neither option is given (the message suggests ``resume`` only when ``has_run`` and
        no other job made the dataset), or ``resume`` is given and there is no run to
        resume.
    """
    if force or (resume and has_run):
        return
    if resume:
        raise DatasetExistsError(
            f"{where} holds no kuration run to resume (no dataset_manifest.json, commit "
            "record or staged shards); write to an empty folder, or write the dataset next "
            "to its files (force=True, kur run --force)"
        )
    if occupant is not None and occupant.changed:
        raise DatasetExistsError(
            f"{where} is not empty: it holds the committed dataset of another "
            f"job{occupant.named()} (changed settings: {occupant.changes()}); write to "
            "another destination (kur run --out DIR), or replace that dataset "
            "(force=True, kur run --force)"
        )
    if has_run:
        of = ""
        if occupant is not None:  # the same job's settings
            of = f" (the committed dataset of job {occupant.name!r})" if occupant.name else ""
        raise DatasetExistsError(
            f"{where} is not empty{of}; resume it (resume=True, kur run --resume) to continue "
            "the same run or replace it (force=True, kur run --force)"
        )
    raise DatasetExistsError(
        f"{where} is not empty and holds no kuration run; write to an empty folder, or "
        "write the dataset next to its files (force=True, kur run --force)"
    )
