"""``kur init``: write a working job folder from CSV/Parquet files or a TimeNet reference.

The inputs are profiled (:mod:`kuration.onboard.inventory`), then every part
of a job is proposed with its evidence:

* ``schema.json``: one field per numeric column (:func:`~kuration.onboard.guess.guess_fields`):
  a latitude/longitude pair with angle units is a geodetic position, x/y(/z) with
  length units a cartesian one, heading-like columns with an angle unit angular,
  small-integer flag columns a bitmask, other small-integer columns categorical.
  Units come from metadata (a hint file, Parquet field metadata ``unit``, the
  TimeNet catalog), else from a bracket ending the header (``alt [ft]``,
  :mod:`.header_units`); a column without one keeps no unit and is listed.
* the sample rate: for files, 1 / the mean step over gap-free runs
  (:mod:`.init_rate`); for a TimeNet version, 1 / the median step between
  consecutive times of one entity; either in the fewest digits that do not
  drift over the longest track;
* ``strategy.json``: a few metrics that fit the fields found, ``uniform-bins`` on two;
* ``output.json``: one modality per field plus the first binned metric;
* ``job.json``: the adapter, the sources, a window of about 120 steps, and an
  hours budget of ``fraction`` of the tracks' hours (a fifth of it for test when
  there are at least two sources; sources go whole to one split).  When tracks
  are long next to the smallest request, ``span_seconds`` cuts them; init promises
  that each split lands within 10% of its request only when the longest unit the run
  admits (a span, or a whole track) is at most a tenth of the smallest request, and
  otherwise says by how much a split may overshoot.

The job is validated exactly as ``kur run`` validates it before any file is written.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..contracts.schema import SchemaSpec
from ..core.jsonio import loads_strict
from ..errors import InitError, KurationError
from ..output.spec import OutputSpec
from ..pipeline.run.strategy import load_strategy
from ..pipeline.spec.job import job_components, load_job
from ..sources._lerobot_meta import is_dataset
from .guess import field_lines, guess_fields
from .init_check import dry_read
from .init_files import compose_files
from .init_lerobot import compose_lerobot
from .init_parts import adapter_options, split_promise, starter_job, starter_strategy
from .init_rate import exact_rate
from .inventory import Inventory, inventory_files, inventory_timenet

__all__ = ["InitResult", "init_job"]

PARTS = ("schema.json", "strategy.json", "output.json", "job.json")
WINDOW_STEPS = 120
TEST_SHARE = 0.2
SPAN_FRACTION = 0.05


@dataclass(frozen=True)
class InitResult:
    """What ``kur init`` wrote and why.

    Attributes
    ----------
    out : Path
        The job folder.
    files : tuple of Path
        ``schema.json``, ``strategy.json``, ``output.json``, ``job.json``.
    job : dict
        The job with its parts inlined (what ``kur run`` will read).
    lines : tuple of str
        The guesses and their evidence, one line each (``kur init`` prints them).
    missing_units : tuple of str
        Columns read as fields without a unit.
    """

    out: Path
    files: tuple[Path, ...]
    job: dict[str, Any]
    lines: tuple[str, ...]
    missing_units: tuple[str, ...]


def _read_hints(hints: str | os.PathLike[str] | Mapping[str, str] | None) -> dict[str, str]:
    if hints is None:
        return {}
    if isinstance(hints, Mapping):
        raw: Any = dict(hints)
        what = "units"
    elif str(hints).lstrip().startswith("{"):  # the JSON object itself, not a file
        what = "--units"
        try:
            raw = loads_strict(str(hints).encode(), what=what)
        except ValueError as exc:
            raise InitError(str(exc)) from None
    else:
        what = str(hints)
        try:
            raw = loads_strict(Path(hints).read_bytes(), what=what)
        except OSError as exc:
            raise InitError(f"units hint file {what}: {exc.strerror or exc}") from None
        except ValueError as exc:
            raise InitError(str(exc)) from None
    if not isinstance(raw, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in raw.items()
    ):
        raise InitError(f"{what}: a units hint file is a JSON object of column name to unit")
    return raw


def _nice_seconds(s: float) -> float:
    """``s`` rounded to two significant digits."""
    return float(f"{s:.2g}")


def _budget(inv: Inventory, window_s: float, fraction: float) -> tuple[dict[str, float], list[str]]:
    tracks = [s for s in inv.track_seconds if s >= window_s]
    total_h = sum(tracks) / 3600
    if not tracks:
        raise InitError(
            f"no track is as long as one window ({window_s:g} s): the data is too short to curate",
            source=inv.inputs[0],
        )
    test_share = TEST_SHARE if inv.n_sources >= 2 else 0.0
    want = fraction * total_h

    def hours(h: float) -> float:
        return float(f"{h:.2g}") if h > 0 else 0.0

    budget = {"train_hours": hours(want * (1 - test_share)), "test_hours": hours(want * test_share)}
    lines = [
        f"budget: train {budget['train_hours']:g} h, test {budget['test_hours']:g} h = "
        f"{fraction:.0%} of {total_h:.3g} h in {len(tracks)} tracks at least one window long"
    ]
    if not test_share:
        lines.append(
            "  no test split: there is one source and a source goes whole to one split; "
            "give two or more files (or records) for a test split"
        )
    return budget, lines


def _span(inv: Inventory, budget: Mapping[str, float], window_s: float) -> float | None:
    """``span_seconds`` when the median track is long next to the smallest request."""
    reqs = [h * 3600 for h in budget.values() if h > 0]
    tracks = sorted(s for s in inv.track_seconds if s >= window_s)
    if not reqs or not tracks:
        return None
    smallest = min(reqs)
    median = tracks[len(tracks) // 2]
    if median <= 0.1 * smallest:
        return None
    return max(_nice_seconds(SPAN_FRACTION * smallest), window_s)


def _compose(
    inv: Inventory, out: Path, *, name: str, fraction: float, opts: Mapping[str, Any] | None = None
) -> tuple[dict[str, Any], list[str], list[str]]:
    fields, missing, skipped = guess_fields(inv.columns)
    if not fields:
        raise InitError("no numeric column to read as a field", source=inv.inputs[0])
    if inv.kind == "files":
        return compose_files(inv, out, name=name, fraction=fraction, opts=opts or {})
    stats = inv.steps
    track_steps = round(max(inv.track_seconds, default=0.0) / stats["median"])
    hz = exact_rate(1.0 / stats["median"], longest=track_steps)
    lines = list(inv.lines)
    lines.append(
        f"sample rate: {hz:.6g} Hz (median step {stats['median']:.3g} s between consecutive times "
        f"of one entity, over {int(stats['n'])} steps; p10 {stats['p10']:.3g} s, p90 "
        f"{stats['p90']:.3g} s)"
    )
    if inv.irregular:
        lines.append(
            f"  steps are irregular ({stats['regular']:.0%} within 10% of the median): rows that "
            "land on one tick are averaged (collisions: mean)"
        )
    lines.extend(field_lines(fields, missing, skipped))
    window_s = _nice_seconds(min(WINDOW_STEPS / hz, max(10 / hz, inv.median_track_s / 2)))
    strategy, axes = starter_strategy(fields, bool(inv.entity_column) or inv.kind == "timenet")
    lines.append(f"strategy: metrics {', '.join(strategy['define'])}; uniform-bins on {axes}")
    budget, blines = _budget(inv, window_s, fraction)
    lines.extend(blines)
    span = _span(inv, budget, window_s)
    job = starter_job(
        inv,
        out,
        name=name,
        fields=fields,
        hz=hz,
        axes=axes,
        adapter=adapter_options(inv, fields, out),
        segmenter={"window": window_s, "stride": window_s / 2, "unit": "seconds"},
        strategy=strategy,
        budget=budget,
        shard_length=128,
        min_track_s=window_s,
    )
    lines.append(
        f"windows: {window_s:g} s, stride {window_s / 2:g} s ({round(window_s * hz)} steps)"
    )
    reqs = [h * 3600 for h in budget.values() if h > 0]
    if span is not None:
        job["span_seconds"] = span
        lines.append(
            f"spans: tracks are long next to the smallest request (median track "
            f"{inv.median_track_s:.0f} s), so they are cut into {span:g} s spans "
            f"(span_seconds) and {split_promise(reqs, span, 'span')}"
        )
    elif reqs and inv.track_seconds:
        longest = max(inv.track_seconds)
        lines.append(f"spans: none (whole tracks); {split_promise(reqs, longest, 'track')}")
    return job, lines, missing


def _validate(job: Mapping[str, Any], out: Path) -> None:
    """The checks ``kur run`` makes before reading data (a failure here is a kur init bug)."""
    raw, _base = load_job(dict(job), base=out.resolve())
    schema, _adapter, _seg = job_components(raw)
    load_strategy(raw["strategy"], schema, what="strategy.json")
    OutputSpec.from_dict(raw["output"], what="output.json")
    SchemaSpec.from_dict(raw["schema"], what="schema.json")


def _refuse_dataset(folder: Path, force: bool) -> None:
    """Refuse to write job files into a folder that holds a kuration dataset (or a run's
    staging area), or into any folder inside one (its ``train/`` split), unless
    ``force``: as ``kur run`` refuses to write over one.

    A parent counts by the files only a run writes (its commit record, manifest, output
    marker or staging area), not by a ``config.json``, which many projects hold.

    Raises
    ------
    InitError
        Naming the folder, the dataset's folder and job when its config says, and what
        it holds.
    """
    from ..output.commit import COMMIT_NAME, MANIFEST_NAME, MARKER_NAME, STAGING_NAME
    from ..pipeline.destination.occupied import RUN_NAMES

    if force:
        return
    if folder.is_dir():
        held = sorted(n for n in os.listdir(folder) if n in RUN_NAMES)
        if held:
            raise InitError(
                f"{folder} holds {_dataset_words(folder)} ({', '.join(held)}); kur init would "
                "write its job files among the dataset's: give another --out (a job folder "
                "beside the dataset), or pass --force to write them there anyway"
            )
    marks = (COMMIT_NAME, MANIFEST_NAME, MARKER_NAME, STAGING_NAME)
    for parent in folder.resolve().parents:
        held = sorted(n for n in marks if (parent / n).exists())
        if held:
            raise InitError(
                f"{folder} is inside {parent}, which holds {_dataset_words(parent)} "
                f"({', '.join(held)}); kur init would write its job files among the "
                "dataset's: give an --out outside it (a job folder beside the dataset), or "
                "pass --force to write them there anyway"
            )


def _dataset_words(root: Path) -> str:
    """``the kuration dataset of job 'walk'`` when its config names the job, else
    ``a kuration run``."""
    from ..output.job_match import occupant_here

    occ = occupant_here(root, {})
    return f"the kuration dataset of job {occ.name!r}" if occ and occ.name else "a kuration run"


def init_job(
    inputs: Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    *,
    units: str | os.PathLike[str] | Mapping[str, str] | None = None,
    fraction: float = 0.5,
    name: str | None = None,
    time_column: str | None = None,
    entity_column: str | None = None,
    registries: Sequence[str] | None = None,
    force: bool = False,
    time_unit: str | None = None,
    duplicates: str | None = None,
    drop_timeless: bool = False,
    rate: float | None = None,
    time_format: str | None = None,
) -> InitResult:
    """Profile CSV/Parquet files (or one ``timenet://`` reference) and write a job folder.

    Parameters
    ----------
    inputs : sequence of path or str
        Source files (``.csv``, ``.parquet``), one ``timenet://org/name@version``, or one
        LeRobot v3 dataset folder (see :mod:`kuration.onboard.init_lerobot`).
    out : path
        The job folder to write (created).
    units : path or mapping, optional
        Hint file, or the text of a JSON object (it starts with ``{``), of column or signal
        name to pint unit; overrides metadata.
    fraction : float
        Share of the tracks' hours the budget asks for, in (0, 1].
    name : str, optional
        Job (dataset) name; default the folder's name.
    time_column, entity_column : str, optional
        Override the detected columns.
    registries : sequence of str, optional
        TimeNet registries for a ``timenet://`` input.
    force : bool
        Replace job files already in ``out``.
    time_unit : {"s", "ms", "us", "ns"}, optional
        Unit of a numeric time column (default: from its name, else its magnitude).
    duplicates : {"retime", "first", "last"}, optional
        Policy for rows that repeat a time of their entity (default: ``retime`` when
        stamps repeat often, as a clock coarser than the sampling makes them, else ``first``).
    drop_timeless : bool
        Let the job drop rows without a time (``missing_time: drop``, counted by the run);
        without it such rows stop ``kur init``.
    rate : float, optional
        The sample rate in Hz of files (default: 1 / the mean step over gap-free runs of
        one entity; see :mod:`.init_rate` and :mod:`.rate_fit`).
    time_format : str, optional
        strptime format of a text time column (the adapter's ``time_format``), checked
        on every value of the first file; default: the first common format that reads them.

    Returns
    -------
    InitResult

    Raises
    ------
    InitError
        An unreadable input, no time column, a bad hint file, existing job files or a
        kuration dataset in ``out`` without ``force``, a fraction outside (0, 1], a ``time_format`` that misses a value.
    """
    if not inputs:
        raise InitError("kur init needs at least one CSV/Parquet file or a timenet:// reference")
    if not (isinstance(fraction, int | float) and 0 < fraction <= 1):
        raise InitError(f"fraction must be within (0, 1], got {fraction!r}")
    folder = Path(out)
    _check_out(folder, force)
    hints = _read_hints(units)
    strs = [str(i) for i in inputs]
    job_name = name or folder.resolve().name
    inv: Inventory | None = None
    if len(strs) == 1 and is_dataset(strs[0]):  # a LeRobot v3 dataset folder
        job, lines, missing = compose_lerobot(
            Path(strs[0]).resolve(), name=job_name, fraction=fraction
        )
    else:
        inv = _inventory(
            strs,
            hints=hints,
            registries=registries,
            time_column=time_column,
            entity_column=entity_column,
            time_unit=time_unit,
            time_format=time_format,
        )
        opts = {"duplicates": duplicates, "drop_timeless": drop_timeless, "rate": rate}
        job, lines, missing = _compose(
            inv, folder.resolve(), name=job_name, fraction=fraction, opts=opts
        )
    try:
        _validate(job, folder)
    except KurationError as exc:
        raise InitError(f"kur init proposed a job that does not validate: {exc}") from exc
    if inv is not None and inv.kind == "files":  # what the run will drop, and why, first
        _read, rlines = dry_read(job, folder.resolve())
        lines.extend(rlines)
    files = _write_job(folder, job)
    lines.append(
        f"wrote {', '.join(PARTS)} in {folder}; run it with: kur run {folder / 'job.json'}"
    )
    return InitResult(folder, tuple(files), job, tuple(lines), tuple(missing))


def _check_out(folder: Path, force: bool) -> None:
    """Refuse ``folder`` without ``force`` when it is in a dataset or holds job files.

    Raises
    ------
    InitError
        See :func:`_refuse_dataset`; or ``folder`` already holds job files.
    """
    _refuse_dataset(folder, force)
    existing = [p for p in PARTS if (folder / p).exists()]
    if existing and not force:
        raise InitError(
            f"{folder} already holds {', '.join(existing)}; pass --force to replace them"
        )


def _inventory(
    strs: list[str],
    *,
    hints: Mapping[str, str],
    registries: Sequence[str] | None,
    time_column: str | None,
    entity_column: str | None,
    time_unit: str | None,
    time_format: str | None,
) -> Inventory:
    """What one ``timenet://`` reference or a list of files holds.

    Raises
    ------
    InitError
        A reference mixed with files, or data Arrow refuses (not a traceback).
    """
    if any(s.startswith("timenet://") for s in strs):
        if len(strs) != 1:
            raise InitError("give one timenet:// reference alone, not mixed with files")
        return inventory_timenet(strs[0], hints=hints, registries=registries)
    try:
        return inventory_files(
            [Path(s) for s in strs],
            hints=hints,
            time_column=time_column,
            entity_column=entity_column,
            time_unit=time_unit,
            time_format=time_format,
        )
    except pa.ArrowException as exc:
        raise InitError(f"{', '.join(strs)}: cannot profile it: {exc}") from exc


def _write_job(folder: Path, job: Mapping[str, Any]) -> list[Path]:
    """Write the job's parts and ``job.json`` (naming them) into ``folder``, each file by
    an atomic rename; returns their paths in :data:`PARTS` order."""
    folder.mkdir(parents=True, exist_ok=True)
    parts = {
        "schema.json": job["schema"],
        "strategy.json": job["strategy"],
        "output.json": job["output"],
    }
    on_disk = {**job, "schema": "schema.json", "strategy": "strategy.json", "output": "output.json"}
    files = []
    for fname, doc in (*parts.items(), ("job.json", on_disk)):
        path = folder / fname
        tmp = path.with_name(f".{fname}.tmp-{os.getpid()}")
        tmp.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, path)
        files.append(path)
    return files
