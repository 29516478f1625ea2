"""Small jobs choose their workers: a process pool that costs more to start than it saves
is not started.

A spawn-based pool of ``W`` processes imports kuration, numpy, pyarrow and the job's
plugins in every worker before the first task: ``bench/bench_small_jobs.py`` measured
0.65-0.68 s of CPU a worker (2.8-6.0 s of wall on the loaded 2-core development VM) for
the imports alone, while a quickstart source (15 minutes of ADS-B at 1 Hz, ~24,000 rows)
reads, scores and writes in about 13 ms of CPU.  Below
:data:`SOURCES_PER_WORKER` sources a worker the pool cannot pay for itself on such
sources, so a run whose executor was *derived* from ``workers`` (none named) runs in the
lead with one worker, and says so in its plan's notes.  A named executor (``process``, ``ray``)
is always kept: the caller asked for it.  The artifact is the same either way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from ..spec.logical import PipelineOptions
from ..spec.plan import PhysicalPlan

__all__ = ["SOURCES_PER_WORKER", "countable_sources", "pool_too_small", "with_note"]

#: Sources a worker needs before a derived process pool is started (see the module docs).
SOURCES_PER_WORKER = 64


def pool_too_small(opts: PipelineOptions, n_sources: int | None) -> str | None:
    """Why the run keeps to one worker in the lead, or None when its options stand.

    Parameters
    ----------
    opts : PipelineOptions
    n_sources : int or None
        Sources the run reads (None: not known yet, the options stand).

    Returns
    -------
    str or None
        The note the plan carries.
    """
    w = opts.workers
    if opts.executor is not None or w < 2 or n_sources is None:
        return None
    least = SOURCES_PER_WORKER * w
    if n_sources >= least:
        return None
    return (
        f"workers: {n_sources} source(s) run in the lead with one worker: a pool of {w} "
        f"processes costs more to start than it saves below {least} sources "
        "(name the executor, e.g. executor='process', to start it anyway)"
    )


def countable_sources(sources: Any) -> int | None:
    """How many sources a pipeline lists, when it lists them one by one (paths or URIs with
    no wildcard); None for a glob, a folder, a sample or an adapter's own listing."""
    if isinstance(sources, Mapping) and "uris" in sources:
        sources = sources["uris"]
    if isinstance(sources, str) or not isinstance(sources, Sequence):
        return None
    if not all(isinstance(s, str) and not any(c in s for c in "*?[") for s in sources):
        return None
    return len(sources)


def with_note(plan: PhysicalPlan, note: str) -> PhysicalPlan:
    """``plan`` with ``note`` added to its notes (the planner's decisions), once."""
    if note in plan.notes:
        return plan
    return dataclasses.replace(plan, notes=(*plan.notes, note))
