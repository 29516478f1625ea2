"""``memory_budget``: the plan's peak memory, estimated before any row is decoded for the run.

:func:`estimate_peak` reads a file's metadata -- a Parquet footer (rows, row
groups, each column chunk's uncompressed size, the time column's min/max
statistics) or a CSV file's size -- and one column: the entity ids, to count
distinct entities (Parquet metadata has no distinct counts, and the dense tick
layout is ``ticks x entities``).  A Parquet file's ids are read from the same
opened file, dictionary-encoded, and counted in Arrow without converting them
(raw values: ids that the adapter's ``entity_dtype`` would merge, such as ``"01"``
and ``"1"`` as integers, count twice, so the estimate can only grow); a CSV
file's are scanned batch by batch as the stream reads them.  Its model, in
bytes:

* ``baseline``: this process's resident peak when the estimate is made (the
  interpreter, numpy and kuration loaded).
* ``cell``: one entity at one tick in a :class:`~kuration.contracts.tick.TickTable`:
  8 bytes per float component of every field, 8 more per integer-field
  component (exact copies), 1 for presence.
* per source, with ``R`` rows, ``T`` ticks (time span x ``sample_hz`` + 1, from
  the statistics; ``R`` without them) and ``E`` distinct entities:

  - in memory: the decoded columns (uncompressed column chunks) + the per-row
    working arrays of the read (times, ticks, offsets, orders: 48 B a row) +
    ``IN_MEMORY_TABLES`` (4) dense tables of ``T x E x cell`` (the table and
    the source-level streams the feature pass keeps per metric prefix:
    measured 4.1 on the quickstart recording), once per worker;
  - streaming: ``READER`` (100 MB: pyarrow's Parquet/compute libraries and
    their allocator pools, measured 70-100 MB on Linux x86-64) + the largest
    decoded row group (pyarrow decodes a row group's column chunks to cut
    record batches) + one batch's working arrays + its block (``batch_rows /
    (R / T)`` ticks x ``E x cell``) + the window deque and its stacked copy
    (2 x window x ``E x cell``) + the stream writer's buffers (``E`` tracks x
    ``shard_length`` x cell), one source at a time;

* ``pool``: every window's segment, features included (``200 + 100 x
  n_features`` bytes each: a Python object with a dict of floats), windows
  counted as ``T / stride`` per source, and the fill's candidates (rows of a
  :class:`~kuration.selection.candidates.CandidateTable`: 150 B each -- the
  columns, the fill's sort keys and its views -- plus 8 per feature; measured
  90-160 B held and up to 260 B at the peak of building the table with two to
  six features): one per entity, or with spans ``E x (T / span_steps + 1)`` -- an
  upper bound, reached when every entity's track covers the whole source
  (spans of a track are cut over its whole extent, absent stretches included).

It is an estimate, not a bound: the constants were measured on one machine
and pyarrow version, Python object sizes vary, and allocator slack is not
modelled.  ``bench/bench_stream.py`` prints it next to the measured peak.
When the budget cannot be met, :func:`check_plan_memory` names what would
meet it: ``streaming=True`` when the per-source part is what does not fit, and
checkpoints (a disk-backed segment pool over fingerprinted sources, the
``[scale]`` tier) when the pool itself does not.

With neither ``memory_budget`` nor ``pool`` set, :func:`default_memory_budget` stands in
for the budget when the planner chooses the pool: a fixed share of the machine's *total*
memory (not of what is free now, so the choice does not depend on other processes), or
``$KURATION_DEFAULT_MEMORY_BUDGET``.  Exceeding it moves an eligible plan onto the disk
runtime instead of failing (see docs/architecture.md, "The default memory budget").
"""

from __future__ import annotations

import math
import os
import resource
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ...core.config import check_memory_budget
from ...errors import JobError, MemoryBudgetError, PipelineError

if TYPE_CHECKING:
    from .runspec import RunSpec

__all__ = [
    "DEFAULT_BUDGET_ENV",
    "DEFAULT_BUDGET_FRACTION",
    "MemoryEstimate",
    "check_memory_budget",
    "check_plan_memory",
    "default_memory_budget",
    "estimate_peak",
    "peak_rss_bytes",
]

_ROW_WORK = 48  # bytes of per-row working arrays while a batch or file is snapped
IN_MEMORY_TABLES = 4  # dense T x E tables alive at the in-memory peak (measured 4.1)
READER = 100_000_000  # pyarrow's Parquet/compute libraries and pools, once loaded
_SEGMENT = 200  # bytes of a Segment object without its features
_CANDIDATE = 150  # bytes of one fill candidate row (a track or span) without its features
_FEATURE = 100  # bytes per feature in a Segment's dict


#: the share of the machine's total memory an eligible plan may be estimated to hold in
#: memory before the planner runs it on the disk runtime (neither pool nor memory_budget set)
DEFAULT_BUDGET_FRACTION = 0.5
#: overrides the default budget: a size (``"2GB"``, bytes) or ``off``
DEFAULT_BUDGET_ENV = "KURATION_DEFAULT_MEMORY_BUDGET"


def total_memory_bytes() -> int | None:
    """This machine's physical memory in bytes (``sysconf``), or None where it is unknown."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def default_memory_budget() -> tuple[int, str] | None:
    """The default budget in bytes and where it comes from, or None (off, or the machine's
    memory is unknown): ``$KURATION_DEFAULT_MEMORY_BUDGET`` when set, else
    :data:`DEFAULT_BUDGET_FRACTION` of the total physical memory.

    Raises
    ------
    PipelineError
        The variable holds neither a size nor ``off``.
    """
    raw = os.environ.get(DEFAULT_BUDGET_ENV, "").strip()
    if raw.lower() == "off":
        return None
    if raw:
        try:
            n = check_memory_budget(int(raw) if raw.isdigit() else raw)
        except JobError:
            raise PipelineError(
                f"${DEFAULT_BUDGET_ENV} must be a size such as '2GB' or 'off', got {raw!r}",
                step="options",
            ) from None
        return n, f"${DEFAULT_BUDGET_ENV}"
    total = total_memory_bytes()
    if not total:
        return None
    share = f"{DEFAULT_BUDGET_FRACTION:.0%} of this machine's {_mb(total)}"
    return int(total * DEFAULT_BUDGET_FRACTION), share


def peak_rss_bytes() -> int:
    """Peak resident set size of this process so far, in bytes.

    On Linux this is ``VmHWM`` of ``/proc/self/status`` (the high-water mark of this
    program's own memory map): ``getrusage``'s ``ru_maxrss`` survives ``execve`` and so
    counts the peak of whatever forked this process (a 2 GB test runner made a 300 MB
    ``kur run`` look 2 GB large).  Elsewhere ``ru_maxrss`` (macOS counts it in bytes)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024  # the kernel writes kB
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024


@dataclass(frozen=True)
class SourceMeta:
    """What a source's metadata says: rows, ticks, decoded bytes (whole and largest row group)."""

    uri: str
    rows: int
    ticks: int
    decoded: int
    largest_group: int
    entities: int = 1


@dataclass(frozen=True)
class MemoryEstimate:
    """An estimated peak, in bytes, with its parts (see the module docstring).

    Attributes
    ----------
    in_memory, streaming : int
        Estimated peak of the plan run in memory and streamed.
    parts : dict of str to int
        ``baseline``, ``pool``, ``per_source_in_memory``, ``per_source_streaming``.
    sources : tuple of SourceMeta
    """

    in_memory: int
    streaming: int
    parts: Mapping[str, int] = field(default_factory=dict)
    sources: tuple[SourceMeta, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"in_memory": self.in_memory, "streaming": self.streaming, **self.parts}


def _parquet_meta(
    uri: str, columns: Sequence[str], time_column: str, to_ticks: float, entity: str | None
) -> tuple[SourceMeta, int | None]:
    """A Parquet file's :class:`SourceMeta` from its footer, and the distinct ids of its
    ``entity`` column (1 for ``""``, None for None or a column the file lacks)."""
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(uri, read_dictionary=[entity] if entity else None)
    md = pf.metadata
    want = set(columns)
    decoded, largest = 0, 0
    lo, hi = math.inf, -math.inf
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        size = 0
        for c in range(rg.num_columns):
            col = rg.column(c)
            if col.path_in_schema not in want:
                continue
            size += int(col.total_uncompressed_size)
            st = col.statistics
            if col.path_in_schema == time_column and st is not None and st.has_min_max:
                try:
                    lo, hi = min(lo, float(st.min)), max(hi, float(st.max))
                except (TypeError, ValueError):  # timestamps: datetime statistics
                    lo, hi = min(lo, st.min.timestamp()), max(hi, st.max.timestamp())
        decoded += size
        largest = max(largest, size)
    rows = int(md.num_rows)
    ticks = int((hi - lo) * to_ticks) + 1 if math.isfinite(lo) else max(rows, 1)
    ents = None
    if entity == "":
        ents = 1
    elif entity and entity in pf.schema_arrow.names:
        try:
            ents = _distinct_ids(pf, entity)
        except Exception:  # an id column Arrow cannot count: the stream's scan says
            ents = None
    return SourceMeta(uri, rows, max(ticks, 1), decoded, largest), ents


def _file_meta(uri: str) -> SourceMeta:
    """A file without row metadata (CSV): decoded ~ its size, one row per 64 bytes."""
    size = os.path.getsize(uri)
    rows = max(size // 64, 1)
    return SourceMeta(uri, rows, rows, size, size)


def _count_entities(p: RunSpec, uri: str) -> int:
    """Distinct entity ids of a source, from its entity column alone, batch by batch."""
    from ...sources.stream import TickStream
    from ...sources.timeseries import TimeseriesAdapter

    adapter = p.adapter
    # TickStream reads only the timeseries adapter (any other streams=True one raises)
    if not isinstance(adapter, TimeseriesAdapter) or not os.path.isfile(uri):
        return 1
    try:
        return len(TickStream(adapter, uri).roster)
    except Exception:  # unreadable: the run itself will say why
        return 1


def source_meta(p: RunSpec, uri: str) -> SourceMeta:
    """What :func:`estimate_peak` knows of one source: its metadata and entity count."""
    m, ents = _source_meta(p, uri)
    if ents is None:
        ents = _count_entities(p, uri)
    return SourceMeta(m.uri, m.rows, m.ticks, m.decoded, m.largest_group, ents)


def _source_meta(p: RunSpec, uri: str) -> tuple[SourceMeta, int | None]:
    """The source's metadata, and its distinct entity ids when a Parquet file gave them."""
    adapter = p.adapter
    hz = float(p.schema.sample_hz) if p.schema is not None else 1.0
    cols: list[str] = getattr(adapter, "_needed_columns", lambda: [])()
    time_column = getattr(adapter, "time_column", "")
    unit = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}.get(getattr(adapter, "time_unit", "s"))
    low = uri.lower()
    if os.path.isfile(uri) and not low.endswith((".csv", ".csv.gz", ".tsv")):
        try:
            return _parquet_meta(uri, cols, time_column, hz * (unit or 1.0), _entity_column(p))
        except Exception:  # not a Parquet file: size only
            return _file_meta(uri), None
    return (_file_meta(uri) if os.path.isfile(uri) else SourceMeta(uri, 1, 1, 0, 0)), None


def _entity_column(p: RunSpec) -> str | None:
    """The timeseries adapter's entity column ("" without one); None for another adapter
    (whose entities are not counted)."""
    from ...sources.timeseries import TimeseriesAdapter

    return p.adapter.entity_column if isinstance(p.adapter, TimeseriesAdapter) else None


def _distinct_ids(pf: Any, column: str) -> int:
    """Distinct non-null values of ``column`` of the opened Parquet file ``pf`` (read
    with that column dictionary-encoded: the chunks' dictionaries hold each value once)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    col = pf.read(columns=[column], use_threads=False).column(0)
    if pa.types.is_dictionary(col.type):
        values = pa.chunked_array([c.dictionary for c in col.chunks], col.type.value_type)
        return max(1, len(values.unique()))
    return max(1, int(pc.count_distinct(col).as_py()))


def estimate_peak(
    p: RunSpec, sources: Sequence[str], *, baseline: int | None = None
) -> MemoryEstimate:
    """Estimate the peak memory of ``p`` over ``sources``, in memory and streamed (see the
    module docstring for the model); reads metadata only.

    Parameters
    ----------
    p : RunSpec
    sources : sequence of str
        Resolved local files.
    baseline : int, optional
        Bytes resident before the run (default: this process's peak so far).
    """
    assert p.schema is not None and p.segmenter is not None and p.strategy_ is not None
    schema = p.schema
    cell = 1 + sum(8 * f.dims for f in schema.fields)
    cell += sum(8 * f.dims for f in schema.fields if np.dtype(f.dtype).kind != "f")
    w, stride = p.segmenter.window_steps, p.segmenter.stride_steps
    shard = p.output_spec.shard_length if p.output_spec is not None else w
    n_feat = len(p.strategy_.feature_names)
    span = _span_steps(p) or 10**18  # whole tracks: one candidate per entity
    metas = tuple(source_meta(p, str(u)) for u in sources)
    base = peak_rss_bytes() if baseline is None else baseline
    batch = int(p.opts.stream_batch_rows)
    pool = 0
    inmem, stream = 0, 0
    for m in metas:
        ents = max(1, m.entities)
        table = m.ticks * ents * cell
        pool += (m.ticks // stride + 1) * (_SEGMENT + _FEATURE * n_feat)
        pool += ents * (m.ticks // span + 1) * (_CANDIDATE + 8 * n_feat)
        inmem = max(inmem, m.decoded + m.rows * _ROW_WORK + IN_MEMORY_TABLES * table)
        rows_b = min(batch, m.rows)
        block = math.ceil(rows_b * m.ticks / max(m.rows, 1)) * ents * cell
        window = 2 * w * ents * cell
        stream = max(
            stream,
            READER + m.largest_group + rows_b * _ROW_WORK + block + window + ents * shard * cell,
        )
    workers = max(1, int(p.opts.workers))
    parts = {
        "baseline": base,
        "pool": pool,
        "per_source_in_memory": inmem * workers,
        "per_source_streaming": stream,
    }
    return MemoryEstimate(base + pool + inmem * workers, base + pool + stream, parts, metas)


def _span_steps(p: RunSpec) -> int | None:
    sel = p.selection
    steps = getattr(sel, "span_steps", None)
    seconds = getattr(sel, "span_seconds", None)
    if steps is None and seconds is not None and p.schema is not None:
        steps = max(1, round(float(seconds) * float(p.schema.sample_hz)))
    return int(steps) if steps else None


def _mb(n: int) -> str:
    return f"{n / 1e6:,.0f} MB"


def check_plan_memory(
    p: RunSpec, sources: Sequence[str], *, baseline: int | None = None
) -> MemoryEstimate | None:
    """Refuse, before reading, a plan whose estimated peak exceeds ``p.opts.memory_budget``
    (``baseline``: see :func:`estimate_peak`; default this process's peak so far).

    Returns
    -------
    MemoryEstimate or None
        The estimate (None when no budget is set).

    Raises
    ------
    MemoryBudgetError
        Naming the estimate, the budget and the option that would meet it.
    """
    budget = p.opts.memory_budget
    if budget is None:
        return None
    assert isinstance(budget, int)
    est = estimate_peak(p, sources, baseline=baseline)
    streaming = bool(p.opts.streaming)
    peak = est.streaming if streaming else est.in_memory
    if peak <= budget:
        return est
    head = (
        f"the plan's estimated peak {_mb(peak)} exceeds memory_budget {_mb(budget)} "
        f"({'streamed' if streaming else 'in memory'}: {est.to_dict()})"
    )
    if not streaming and est.streaming <= budget:
        fix = f"streaming=True (kur run --streaming) would meet it: estimated {_mb(est.streaming)}"
    elif est.parts["baseline"] + est.parts["pool"] > budget:
        fix = (
            "the segment pool alone does not fit: it needs checkpoints (a disk-backed pool "
            "over fingerprinted sources, the [scale] tier: pool='disk' runs top-k, "
            "uniform-bins and weighted count selections and hours budgets, and is chosen "
            "for them automatically when it meets the budget); "
            "fewer or shorter sources, or a larger stride, shrink it"
        )
    else:
        fix = (
            "one source does not fit even streamed: rewrite it with smaller Parquet row "
            "groups or lower stream_batch_rows"
        )
    raise MemoryBudgetError(f"{head}; {fix}", estimate=est.to_dict())
