"""Pipeline: the fluent, immutable description of one curation run.

::

    from kuration import Pipeline

    p = (
        Pipeline()
        .source({"type": "timeseries", ...}, {"sample": "adsb-paris"}, schema="schema.json")
        .segment(window=120, stride=60, unit="seconds")
        .metrics("strategy.json")
        .sample(hours=4.0, test_hours=1.0, clip_aggregate="mean", min_track_seconds=120)
        .output("output.json")
        .options(seed=0, progress=print)
    )
    print(p.explain().render())     # the physical plan, before any row is read
    p.write("out/")                 # the hours path: shards + manifests + config.json

Every builder call validates its argument against what is already known
and returns a *new* Pipeline; nothing is read until :meth:`Pipeline.write`,
:meth:`Pipeline.run`, :meth:`Pipeline.review` or :meth:`Pipeline.execute`.
A job file compiles to exactly this object (:meth:`Pipeline.from_job`).

The Pipeline holds resolved logical state (schema, adapter, segmenter,
strategy, seams, selection, output, options).  Planning lives in
:mod:`kuration.pipeline.dispatch.planner` and execution in
:mod:`kuration.pipeline.dispatch.execute`; both take the frozen
:class:`~kuration.pipeline.spec.runspec.RunSpec` of :meth:`Pipeline.run_spec`, never the
Pipeline itself.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...contracts.schema import SchemaSpec
from ...contracts.segment import Segmenter
from ...core.executors import resolve_executor
from ...core.jsonio import loads_strict
from ...core.plugins import load_plugins, without_entry_point_plugins
from ...core.progress import ProgressCallback
from ...errors import JobError, PipelineError
from ...metrics.seams import SCORERS, TRANSFORMS
from ...output.encoders import get_encoder
from ...output.presets import resolve_output
from ...output.spec import OutputSpec
from ...selection.strategy import Strategy
from ...sources.base import InputAdapter, adapter_from_dict, file_source_id
from ...sources.memory import spill_sources
from ...tools.analyzers import get_analyzer
from ..disk.pool import DiskSelection
from ..dispatch.execute import PipelineRun, compare, execute, review
from ..dispatch.planner import compile_plan
from ..memory.pool import CurationResult, ExperimentResult, merged_pool_strategy
from ..run.strategy import load_strategy
from ..spec.job import job_components, job_encoder, job_selection, parse_job
from ..spec.logical import CountSelection, HoursSelection, PipelineOptions, SeamUse
from ..spec.plan import PhysicalPlan
from ..spec.runspec import RunParts, RunSpec
from ..spec.split_rules import check_split_rule
from .operators import get_operator

if TYPE_CHECKING:
    from ..dispatch.hours import DatasetWriteResult

__all__ = ["CountSelection", "HoursSelection", "Pipeline", "PipelineOptions", "SeamUse"]


def _with_uses(
    doc: dict[str, Any],
    transforms: tuple[SeamUse, ...],
    scorers: tuple[SeamUse, ...],
    schema: SchemaSpec,
) -> Strategy:
    """``doc`` with the seam uses appended as strategy-file descriptors, loaded (resolved)."""
    doc["transforms"] = [
        *doc.get("transforms", []),
        *({"name": u.name, **u.params} for u in transforms),
    ]
    doc["scorers"] = [*doc.get("scorers", []), *({"name": u.name, **u.params} for u in scorers)]
    return load_strategy(doc, schema)


def _read_json(value: Any, base: Path, what: str) -> Any:
    if isinstance(value, str | os.PathLike):
        p = Path(value)
        p = p if p.is_absolute() else base / p
        try:
            return loads_strict(p.read_bytes(), what=str(p))
        except FileNotFoundError:
            raise PipelineError(f"file {p} not found", step=what) from None
    return value


@dataclass(frozen=True)
class Pipeline(RunParts):
    """A curation run, built fluently and immutably (see the module docs).

    Construct an empty ``Pipeline()`` and chain builder calls, or compile a
    job file with :meth:`from_job`.  Attributes are the resolved logical
    state; treat them as read-only (every builder returns a copy).
    """

    # ---- builders -------------------------------------------------------------------------

    def _with(self, **kw: Any) -> Pipeline:
        return dataclasses.replace(self, **kw)

    def source(
        self,
        adapter: InputAdapter | Mapping[str, Any],
        sources: Any,
        *,
        schema: SchemaSpec | Mapping[str, Any] | str | os.PathLike[str] | None = None,
        base: str | os.PathLike[str] | None = None,
    ) -> Pipeline:
        """Set the input: an adapter (object, or ``{"type": name, ...}`` with ``schema``) and
        ``sources`` as in a job file (paths, ``{"glob": ...}``, ``{"sample": ...}``,
        ``timenet://`` URIs), resolved against ``base`` (default: the working directory)
        only when the pipeline runs; or ``{"uris": [...]}``, sources resolved already and
        read as given; or sources held in memory (a pandas/polars DataFrame, an Arrow
        table or record batches, a list of row dicts; a list or ``{name: frame}`` of them),
        written once as Arrow IPC streams into the cache and fingerprinted by the SHA-256
        of those bytes (:mod:`kuration.sources.memory`).

        Raises
        ------
        PipelineError
            An adapter dict without a schema, an adapter of the wrong type, malformed sources.
        SchemaError, JobError
            From the schema or the adapter options.
        """
        root = Path(base) if base is not None else Path.cwd()
        sch: SchemaSpec | None = None
        if schema is not None:
            doc = _read_json(schema, root, "source")
            sch = doc if isinstance(doc, SchemaSpec) else SchemaSpec.from_dict(doc)
        if isinstance(adapter, Mapping):
            if sch is None:
                raise PipelineError("an adapter given as a dict needs schema=", step="source")
            try:
                adapter = adapter_from_dict(adapter, sch)
            except (KeyError, TypeError) as exc:
                raise PipelineError(str(exc), step="source") from None
        if not isinstance(adapter, InputAdapter):
            raise PipelineError(
                f"adapter must be an InputAdapter or a dict, got {type(adapter).__name__}",
                step="source",
            )
        if sch is not None and adapter.schema != sch:
            raise PipelineError("schema= differs from the adapter's schema", step="source")
        spilled = spill_sources(sources)
        if spilled is not None:  # DataFrames, Arrow tables, rows: Arrow IPC files in the cache
            # named, so each frame's id is its given name (its file's stem), not its
            # path relative to the cache folders the frames share
            sources = {"named": {file_source_id(p): p for p in dict.fromkeys(spilled)}}
        _check_sources(sources)
        if isinstance(sources, list | tuple):
            sources = [os.fspath(s) for s in sources]
        return self._with(schema=adapter.schema, adapter=adapter, sources=sources, base=root)

    def segment(self, segmenter: Segmenter | None = None, **kwargs: Any) -> Pipeline:
        """Set the windows: a :class:`Segmenter`, or its keyword arguments (``window``,
        ``stride``, ``unit``; ``sample_hz`` defaults to the schema's for seconds).

        Raises
        ------
        PipelineError
            Both or neither given, bad keywords, or seconds before a source.
        """
        if (segmenter is None) == (not kwargs):
            raise PipelineError("give a Segmenter or its keyword arguments", step="segment")
        if segmenter is None:
            if kwargs.get("unit") == "seconds" and "sample_hz" not in kwargs:
                if self.schema is None:
                    raise PipelineError("a window in seconds needs .source() first", step="segment")
                kwargs["sample_hz"] = self.schema.sample_hz
            try:
                segmenter = Segmenter(**kwargs)
            except TypeError as exc:
                raise PipelineError(str(exc), step="segment") from None
        if not isinstance(segmenter, Segmenter):
            raise PipelineError("segmenter must be a Segmenter", step="segment")
        return self._with(segmenter=segmenter)

    def metrics(self, strategy: Strategy | Mapping[str, Any] | str | os.PathLike[str]) -> Pipeline:
        """Set the strategy (its ``define`` metrics, binning, filters and method); a dict or
        JSON path is loaded and compiled against the schema now.

        Raises
        ------
        PipelineError
            Before :meth:`source` (the schema is needed to compile metrics).
        StrategyError, MetricCompileError
            From :func:`kuration.load_strategy`.
        """
        if self.schema is None:
            raise PipelineError("call .source() before .metrics()", step="metrics")
        doc = strategy.to_dict() if isinstance(strategy, Strategy) else None
        if doc is None:
            doc = dict(_read_json(strategy, self.base, "metrics"))
        if not (self.transforms or self.scorers):
            st = strategy if isinstance(strategy, Strategy) else load_strategy(doc, self.schema)
            return self._with(strategy_=st)
        # uses added before the strategy join it (its method may rank by their outputs)
        return self._with(strategy_=_with_uses(doc, self.transforms, self.scorers, self.schema))

    #: ``.strategy(...)`` is :meth:`metrics` under the name of what it takes.
    strategy = metrics

    def _strategy_doc(self, step: str) -> dict[str, Any]:
        if self.strategy_ is None or self.schema is None:
            raise PipelineError("set a strategy with .metrics() first", step=step)
        return self.strategy_.to_dict()

    def method(self, name: str, **params: Any) -> Pipeline:
        """Rank with the registered selection method ``name`` (replaces the strategy's).

        Raises
        ------
        PipelineError
            No strategy yet.
        StrategyError
            Unknown method or bad parameters.
        """
        doc = {**self._strategy_doc("method"), "method": name, "params": params}
        assert self.schema is not None
        return self._with(strategy_=load_strategy(doc, self.schema))

    def filter(self, name: str, **params: Any) -> Pipeline:
        """Append the registered filter ``name`` to the strategy's pre-selection filters.

        Raises
        ------
        PipelineError
            No strategy yet.
        StrategyError
            Unknown filter or bad parameters.
        """
        doc = self._strategy_doc("filter")
        doc["filters"] = [*doc["filters"], {"filter": name, **params}]
        assert self.schema is not None
        return self._with(strategy_=load_strategy(doc, self.schema))

    def transform(self, name: str, **params: Any) -> Pipeline:
        """Add a registered batch transform; ``params`` are the keys of a strategy file's
        ``"transforms"`` entry (``inputs``, ``lookbehind``, ``lookahead``, ``params``,
        ``outputs``), folded into the strategy (or into the one :meth:`metrics` sets later)
        and resolved against the schema, before any data is read.

        Raises
        ------
        PipelineError
            ``name`` is not a registered batch transform.
        TransformError, StrategyError
            The use does not resolve, or its output is already a feature.
        """
        _require(TRANSFORMS, name, "transform")
        return self._fold(transforms=(*self.transforms, SeamUse(name, dict(params))))

    def score(self, name: str, **params: Any) -> Pipeline:
        """Add a registered whole-pool segment scorer; ``params`` are the keys of a strategy
        file's ``"scorers"`` entry (``params``, ``output``), folded into the strategy.

        Raises
        ------
        PipelineError
            ``name`` is not a registered segment scorer.
        ScorerError, StrategyError
            The use does not resolve, or its output is already a feature.
        """
        _require(SCORERS, name, "score")
        return self._fold(scorers=(*self.scorers, SeamUse(name, dict(params))))

    def _fold(self, **seams: tuple[SeamUse, ...]) -> Pipeline:
        """The new seam uses (those not yet in ``self``) appended to the strategy's
        ``transforms``/``scorers`` and resolved against the schema (no data read); without a
        strategy yet, :meth:`metrics` folds them in when it is set."""
        p = self._with(**seams)
        if self.strategy_ is None:
            return p
        assert self.schema is not None
        new_t = p.transforms[len(self.transforms) :]
        new_s = p.scorers[len(self.scorers) :]
        return p._with(strategy_=_with_uses(self.strategy_.to_dict(), new_t, new_s, self.schema))

    def select(self, n: int, *, tie_break: str | None = None) -> Pipeline:
        """Keep the ``n`` best segments (the count path; replaces :meth:`sample`).
        ``n=0`` selects nothing but still audits the pool.

        ``tie_break`` orders equal priorities: ``"name"`` (source, start) or ``"seed"``
        (a seeded draw per window); None keeps the job's (its ``tie_break`` key, read
        with the hours options) or ``"name"``.

        Raises
        ------
        PipelineError
            ``n`` is not an integer >= 0, or ``tie_break`` is neither name nor seed.
        """
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 0:
            raise PipelineError(f"n must be an integer >= 0, got {n!r}", step="select")
        if tie_break is None:
            tie_break = getattr(self.selection, "tie_break", "name")
        if tie_break not in ("name", "seed"):
            raise PipelineError(
                f"tie_break must be 'name' or 'seed', got {tie_break!r}", step="select"
            )
        return self._with(selection=CountSelection(int(n), tie_break))

    def sample(self, *, hours: float, test_hours: float = 0.0, **options: Any) -> Pipeline:
        """Fill ``hours`` of train and ``test_hours`` of test tracks (the hours path; replaces
        :meth:`select`).  ``options`` are :class:`HoursSelection` fields: ``clip_aggregate``,
        ``min_track_seconds``, ``span_steps``/``span_seconds``, ``group_of``,
        ``max_group_overshoot``, ``tag_coverage``, ``min_tag_frac``.  They are checked
        together with the output spec by :meth:`explain` (and every run).

        Raises
        ------
        PipelineError
            An unknown option, or hours that are not finite numbers >= 0 or sum to zero
            (the job file's budget check, the only one the hours get).
        """
        names = HoursSelection.option_names()
        extra = set(options) - names
        if extra:
            raise PipelineError(
                f"unknown options {sorted(extra)} (take {sorted(names)})", step="sample"
            )
        gof = options.get("group_of")
        if gof is not None and not (
            isinstance(gof, Mapping) and all(isinstance(v, str) for v in gof.values())
        ):
            raise PipelineError("group_of maps source ids to group names", step="sample")
        _check_units(options)
        if options.get("split") is not None:
            options = {**options, "split": check_split_rule(options["split"])}
        return self._with(selection=HoursSelection.checked(hours, test_hours, **options))

    def output(
        self, spec: OutputSpec | Mapping[str, Any] | str | os.PathLike[str], *, encoder: Any = None
    ) -> Pipeline:
        """Set the output spec (an OutputSpec, a document, ``{"preset": name, ...}`` or a JSON
        path) and optionally an encoder (object or ``{"type": name, ...options}``).

        Raises
        ------
        OutputSpecError
            An invalid spec or unknown preset.
        PipelineError
            A malformed or unknown encoder.
        """
        out = resolve_output(_read_json(spec, self.base, "output"))
        if isinstance(encoder, Mapping):
            if not isinstance(encoder.get("type"), str):
                raise PipelineError("encoder is {'type': registered name, ...}", step="output")
            try:
                encoder = get_encoder(
                    encoder["type"], **{k: v for k, v in encoder.items() if k != "type"}
                )
            except (KeyError, TypeError) as exc:
                raise PipelineError(str(exc), step="output") from None
        return self._with(output_spec=out, encoder=encoder)

    def options(self, **kw: Any) -> Pipeline:
        """Set execution options (:class:`PipelineOptions` fields: ``progress``, ``workers``,
        ``executor``, ``executor_options``, ``seed``, ``on_error``, ``durable``, ``streaming``,
        ``memory_budget``, ``stream_batch_rows``, ``pool``...); unnamed ones keep their value.
        Choosing another ``executor`` without ``executor_options`` drops the previous
        executor's options (they were its own).

        Raises
        ------
        PipelineError
            An unknown or invalid option.
        """
        names = {f.name for f in dataclasses.fields(PipelineOptions)}
        extra = set(kw) - names
        if extra:
            raise PipelineError(
                f"unknown options {sorted(extra)} (take {sorted(names)})", step="options"
            )
        if "executor" in kw and "executor_options" not in kw:
            before = self.opts.resolved_executor
            workers = kw.get("workers", self.opts.workers)
            if resolve_executor(kw["executor"], workers) != before:
                kw["executor_options"] = None
        return self._with(opts=dataclasses.replace(self.opts, **kw))

    def enrich(self, analyzer: str, **params: Any) -> Pipeline:
        """Run the registered analyzer ``analyzer`` on the finished selection; its report
        lands in :attr:`PipelineRun.analyses` under its name.

        Raises
        ------
        PipelineError
            An unknown analyzer, bad parameters or the same analyzer twice.
        """
        try:
            get_analyzer(analyzer).validate(params)
        except KeyError as exc:
            raise PipelineError(str(exc), step="enrich") from None
        if any(a.name == analyzer for a in self.analyzers):
            raise PipelineError(f"analyzer {analyzer!r} is already enriching", step="enrich")
        return self._with(analyzers=(*self.analyzers, SeamUse(analyzer, dict(params))))

    def plugins(
        self, modules: Sequence[str] = (), *, include_entry_points: bool = True
    ) -> Pipeline:
        """Import plugin ``modules`` now (so their names validate) and record them for workers.

        Raises
        ------
        PluginError
            A module fails to import.
        """
        load_plugins(list(modules), include_entry_points=include_entry_points)
        return self._with(plugin_modules=tuple(modules), include_entry_points=include_entry_points)

    def apply(self, operator: str, **params: Any) -> Pipeline:
        """Apply the registered operator ``operator`` (see :func:`kuration.extend.registered_operators`):
        any built-in method or filter by name, or a user macro.

        Raises
        ------
        PipelineError
            An unknown operator (the message lists close matches).
        """
        try:
            op = get_operator(operator)
        except KeyError as exc:
            raise PipelineError(str(exc), step="apply") from None
        out = op.fn(self, **params)
        if not isinstance(out, Pipeline):
            raise PipelineError(f"operator {operator!r} did not return a Pipeline", step="apply")
        return out

    # ---- compile and run ------------------------------------------------------------------

    @classmethod
    def from_job(cls, job: str | os.PathLike[str] | Mapping[str, Any]) -> Pipeline:
        """Compile a job file (or dict) into a Pipeline: every key comes from the strict
        job model (:class:`~kuration.core.config.JobModel`), checked once.

        Raises
        ------
        JobError, SchemaError, StrategyError, MetricCompileError, OutputSpecError
            Before any data is read.
        PluginError
            A listed plugin module fails to import.
        """
        raw, base, m = parse_job(job)
        p = cls(base=base).plugins(m.plugins, include_entry_points=m.include_plugin_entry_points)
        hide = not m.include_plugin_entry_points
        with without_entry_point_plugins() if hide else nullcontext():
            return p._from_model(raw, m)

    def _from_model(self, raw: dict[str, Any], m: Any) -> Pipeline:
        """The job's parts, built from its validated model ``m`` (a JobModel)."""
        schema, adapter, segmenter = job_components(raw)
        return self._with(
            schema=schema,
            adapter=adapter,
            sources=raw["sources"],
            segmenter=segmenter,
            strategy_=load_strategy(raw["strategy"], schema, what="job strategy"),
            selection=job_selection(m),
            output_spec=resolve_output(raw["output"], what="job output"),
            encoder=job_encoder(m),
            opts=_job_options(m, self.base),
            job=raw,
        )

    def run_spec(self) -> RunSpec:
        """The frozen run specification planning and the runtimes take (its parts, as
        checked by the builders; nothing is checked again)."""
        return RunSpec.of(self)

    def explain(self) -> PhysicalPlan:
        """Compile the physical plan without reading (or fetching) any source.

        Raises
        ------
        PipelineError
            A missing part (source, segmenter, strategy, selection; output for hours).
        OutputSpecError
            Hours options or an output spec that do not fit the schema and strategy.
        """
        return compile_plan(self.run_spec())

    def execute(
        self,
        dest: str | os.PathLike[str] | None = None,
        *,
        force: bool = False,
        resume: bool = False,
    ) -> PipelineRun:
        """Plan, then run: the result with its plan, coarse stage telemetry and analyses.

        Raises
        ------
        PipelineError, OutputSpecError
            From :meth:`explain` (before any data is read).
        KurationError
            From scoring, selection and writing.
        """
        return execute(self.run_spec(), dest, force=force, resume=resume)

    def write(
        self, dest: str | os.PathLike[str], *, force: bool = False, resume: bool = False
    ) -> DatasetWriteResult | CurationResult | DiskSelection:
        """Run and write: hours selections write a dataset (``write_dataset``); count
        selections write the curation result as JSON to the file ``dest``.

        Raises
        ------
        See :meth:`execute`.
        """
        return self.execute(dest, force=force, resume=resume).result

    def run(self) -> CurationResult | DiskSelection:
        """Run a count selection (``curate``) and return its result (a
        :class:`~kuration.pipeline.disk.pool.DiskSelection` when the plan runs on the
        disk-backed pool, ``options(pool="disk")``).

        Raises
        ------
        PipelineError
            The selection is an hours budget (use :meth:`write`).
        """
        if not isinstance(self.selection, CountSelection):
            raise PipelineError("run() is for .select(n=...); write an hours budget", step="run")
        res = self.execute().result
        assert isinstance(res, CurationResult | DiskSelection)
        return res

    def compare(
        self,
        strategies: Sequence[Strategy | Mapping[str, Any] | str | os.PathLike[str]],
        n: int,
        *,
        axes: Sequence[str] | None = None,
        n_bins: int = 4,
    ) -> ExperimentResult:
        """Score the pool once with every strategy's features, then select ``n`` segments
        with each strategy and compare the selections (what ``run_experiment`` runs).

        The pipeline's own strategy and selection are not used.

        Raises
        ------
        PipelineError
            A missing source or segmenter, or ``n`` not an integer >= 0.
        StrategyError
            No strategy, two strategies defining one feature differently, or repeated names.
        EmptyPoolError
            No source produced a segment.
        """
        if self.schema is None:
            raise PipelineError("call .source() before .compare()", step="compare")
        sts = [
            s
            if isinstance(s, Strategy)
            else load_strategy(_read_json(s, self.base, "compare"), self.schema)
            for s in strategies
        ]
        pool = self.metrics(merged_pool_strategy(sts)).select(n) if sts else self
        return compare(pool.run_spec(), sts, n, axes=axes, n_bins=n_bins)

    def review(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        max_examples: int = 5,
        force: bool = False,
        resume: bool = False,
    ) -> dict[str, Any]:
        """Run and explain the selection: for an hours budget, write to ``path`` and return
        :func:`kuration.hours_selection_review`; for a count, the per-segment audit
        (``CurationResult.to_dict(segments=True)``), also written to ``path`` as JSON if given.

        Raises
        ------
        PipelineError
            An hours budget without ``path``.
        """
        return review(self.run_spec(), path, max_examples=max_examples, force=force, resume=resume)

    def to_dict(self) -> dict[str, Any]:
        """The logical pipeline as JSON (the adapter and encoder by their registered form; no
        callbacks); :meth:`from_dict` reads it back."""
        enc = getattr(self.encoder, "to_dict", None)
        return {
            "schema": self.schema.to_dict() if self.schema else None,
            "adapter": self.adapter.to_dict() if self.adapter else None,
            "sources": self.sources,
            "segmenter": self.segmenter.to_dict() if self.segmenter else None,
            "strategy": self.strategy_.to_dict() if self.strategy_ else None,
            "transforms": [t.to_dict() for t in self.transforms],
            "scorers": [s.to_dict() for s in self.scorers],
            "selection": self.selection.to_dict() if self.selection else None,
            "output": self.output_spec.to_dict() if self.output_spec else None,
            "encoder": enc() if callable(enc) else None,
            "options": self.opts.to_dict(),
            "enrich": [a.to_dict() for a in self.analyzers],
            "plugins": list(self.plugin_modules),
            "include_plugin_entry_points": self.include_entry_points,
        }

    @classmethod
    def from_dict(
        cls,
        d: Mapping[str, Any],
        *,
        base: str | os.PathLike[str] | None = None,
        progress: ProgressCallback | None = None,
    ) -> Pipeline:
        """Rebuild a pipeline from :meth:`to_dict` (plugins are imported first, so their
        names resolve).  ``base`` resolves relative sources (default: the working
        directory) and ``progress`` restores the callback; ``to_dict`` records neither.

        Every part is validated as by its builder; an encoder without a registered
        ``to_dict`` form (``{"type": name, ...}``) is not restored.

        Raises
        ------
        PipelineError
            A malformed document, or a part that does not fit the others.
        KurationError
            From the builders (SchemaError, StrategyError, OutputSpecError, ...).
        """
        if not isinstance(d, Mapping):
            raise PipelineError("a pipeline document is a JSON object", step="from_dict")
        try:
            p = cls(base=Path(base) if base is not None else Path.cwd()).plugins(
                d.get("plugins", []),
                include_entry_points=d.get("include_plugin_entry_points", True),
            )
            if d.get("adapter") is not None:
                sch = SchemaSpec.from_dict(d["schema"])
                p = p.source(d["adapter"], d["sources"], schema=sch, base=p.base)
            if d.get("segmenter") is not None:
                p = p.segment(Segmenter(**d["segmenter"]))
            if d.get("strategy") is not None:
                p = p.metrics(d["strategy"])
            for u in map(SeamUse.from_dict, d.get("transforms", [])):
                p = p.transform(u.name, **u.params)
            for u in map(SeamUse.from_dict, d.get("scorers", [])):
                p = p.score(u.name, **u.params)
            for u in map(SeamUse.from_dict, d.get("enrich", [])):
                p = p.enrich(u.name, **u.params)
            if d.get("selection") is not None:
                p = _select_from_dict(p, d["selection"])
            if d.get("output") is not None:
                p = p.output(d["output"], encoder=d.get("encoder"))
            opts = PipelineOptions.from_dict(d.get("options", {}))
        except (KeyError, TypeError, AttributeError) as exc:
            raise PipelineError(f"malformed pipeline document: {exc}", step="from_dict") from None
        return p._with(opts=dataclasses.replace(opts, progress=progress))


def _select_from_dict(p: Pipeline, d: Mapping[str, Any]) -> Pipeline:
    mode = d.get("mode")
    if mode == "count":
        return p.select(d["n"])
    if mode == "hours":
        return p.sample(**HoursSelection.from_dict(d).sample_args())
    raise PipelineError(f"selection mode is 'count' or 'hours', got {mode!r}", step="from_dict")


def _require(registry: Any, name: str, step: str) -> None:
    try:
        registry.get(name)
    except KeyError as exc:
        raise PipelineError(
            f"{exc}; this seam has no built-in implementation yet, register one first", step=step
        ) from None


def _check_sources(sources: Any) -> None:
    uris = sources.get("uris") if isinstance(sources, Mapping) else None
    if isinstance(uris, list) and all(isinstance(u, str) for u in uris):
        return  # resolved already: used as given (what curate() passes)
    keys = ("sample", "glob", "named")
    ok = (isinstance(sources, Mapping) and any(k in sources for k in keys)) or (
        isinstance(sources, list | tuple)
        and bool(sources)
        and all(isinstance(s, str | os.PathLike) for s in sources)
    )
    if not ok:
        raise PipelineError(
            "sources is a non-empty list of paths, {'glob': pattern}, {'sample': name}, "
            "{'named': {id: path}} or {'uris': [resolved URIs]}",
            step="source",
        )


def _job_options(m: Any, base: Path) -> PipelineOptions:
    """A job model's execution options.

    Raises
    ------
    JobError
        ``executor`` and ``workers`` (or ``ray_address``) that do not go together.
    """
    try:
        return PipelineOptions(
            seed=m.seed,
            workers=m.workers,
            on_error=m.on_error,
            executor=m.executor,
            executor_options=m.executor_options,
            ray_address=m.ray_address,
            streaming=m.streaming,
            memory_budget=None if m.memory_budget is None else int(m.memory_budget),
            pool=m.pool,
            checkpoint_dir=None if m.checkpoint_dir is None else str(base / m.checkpoint_dir),
        )
    except PipelineError as exc:
        raise JobError(str(exc), path="executor") from None


def _check_units(options: Mapping[str, Any]) -> None:
    """The budget-unit options of :meth:`Pipeline.sample`, checked before anything runs.

    Raises
    ------
    PipelineError
        A negative or non-finite ``min_span_seconds``, an unknown ``budget_time``,
        ``tie_break`` or ``filter_scope``.
    """
    m = options.get("min_span_seconds", 0.0)
    if isinstance(m, bool) or not isinstance(m, int | float) or not math.isfinite(m) or m < 0:
        raise PipelineError(f"min_span_seconds must be a number >= 0, got {m!r}", step="sample")
    if not isinstance(options.get("merge_adjacent_spans", False), bool):
        raise PipelineError("merge_adjacent_spans must be true or false", step="sample")
    for key, allowed in (
        ("budget_time", ("span", "present")),
        ("tie_break", ("name", "seed")),
        ("filter_scope", ("window", "span")),
    ):
        v = options.get(key, allowed[0])
        if v not in allowed:
            raise PipelineError(f"{key} must be one of {list(allowed)}, got {v!r}", step="sample")
