"""API arguments that stand in for job keys (``seed``, ``workers``, ``memory_budget``),
checked as the job file's models check them."""

from __future__ import annotations

from typing import Any

from ..errors import JobError

__all__ = ["check_memory_budget", "check_seed", "check_workers"]


def check_seed(seed: Any) -> int:
    """``seed`` as a random seed.

    Raises
    ------
    JobError
        Unless ``seed`` is an integer >= 0.
    """
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise JobError(f"seed must be an integer >= 0, got {seed!r}", path="seed")
    return seed


def check_workers(workers: Any) -> int:
    """``workers`` as a count of scoring processes.

    Raises
    ------
    JobError
        Unless ``workers`` is an integer >= 1.
    """
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise JobError(f"workers must be an integer >= 1, got {workers!r}", path="workers")
    return workers


def check_memory_budget(value: Any) -> int:
    """``memory_budget`` in bytes.

    Parameters
    ----------
    value : int or str
        Bytes, or a size with a unit as pydantic's ``ByteSize`` reads it: decimal
        ``kB``/``MB``/``GB``/``TB`` and binary ``KiB``/``MiB``/``GiB``/``TiB``
        (``"2GB"`` is 2e9 bytes, ``"2GiB"`` 2**31).

    Raises
    ------
    JobError
        Unless ``value`` is a positive size.
    """
    from pydantic import ByteSize, TypeAdapter, ValidationError

    bad = JobError(
        f"memory_budget must be bytes or a size such as '2GB', got {value!r}",
        path="memory_budget",
    )
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise bad
    try:
        n = int(TypeAdapter(ByteSize).validate_python(value))
    except ValidationError:
        raise bad from None
    if n < 1:
        raise bad
    return n
