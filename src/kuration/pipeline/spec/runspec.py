"""RunSpec: one curation run as planning and the runtimes take it, frozen.

A job file (:meth:`kuration.Pipeline.from_job`), a fluent :class:`~kuration.Pipeline` and
the function-style entry points (:func:`kuration.write_dataset`, :func:`kuration.curate`)
all end in one of these (:meth:`kuration.Pipeline.run_spec`).  Its parts were checked
when they were built (the hours by the job model's budget, the options by
:class:`~.logical.PipelineOptions`); nothing here checks them again.  The planner turns it
into the :class:`~.plan.PhysicalPlan`, and the runtimes read it with that plan: the
user's ``Pipeline`` does not travel past the API.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .logical import CountSelection, HoursSelection, PipelineOptions, SeamUse

if TYPE_CHECKING:
    from ...contracts.schema import SchemaSpec
    from ...contracts.segment import Segmenter
    from ...output.spec import OutputSpec
    from ...selection.strategy import Strategy
    from ...sources.base import InputAdapter

__all__ = ["RunParts", "RunSpec"]


@dataclass(frozen=True)
class RunParts:
    """The fields a run is made of, shared by :class:`RunSpec` and the user's
    :class:`~kuration.Pipeline` (siblings, so a ``Pipeline`` is not a ``RunSpec``)."""

    schema: SchemaSpec | None = None
    adapter: InputAdapter | None = None
    sources: Any = None
    base: Path = field(default_factory=Path.cwd)
    segmenter: Segmenter | None = None
    strategy_: Strategy | None = None
    transforms: tuple[SeamUse, ...] = ()
    scorers: tuple[SeamUse, ...] = ()
    selection: CountSelection | HoursSelection | None = None
    output_spec: OutputSpec | None = None
    encoder: Any = None
    opts: PipelineOptions = field(default_factory=PipelineOptions)
    analyzers: tuple[SeamUse, ...] = ()
    plugin_modules: tuple[str, ...] = ()
    include_entry_points: bool = True
    job: Mapping[str, Any] | None = field(default=None, repr=False)


@dataclass(frozen=True)
class RunSpec(RunParts):
    """The resolved parts of one run (see :class:`~kuration.Pipeline` for each field).

    Attributes
    ----------
    schema, adapter, segmenter, strategy_, output_spec, encoder
        The built components (None where the pipeline has not set one yet: the planner
        names what is missing).
    sources : list of str or mapping
        As given (paths, ``{"glob": ...}``, ``{"uris": [...]}`` resolved already, ...),
        relative to ``base``.
    transforms, scorers, analyzers : tuple of SeamUse
    selection : CountSelection or HoursSelection, optional
    opts : PipelineOptions
    plugin_modules : tuple of str
    include_entry_points : bool
    job : mapping, optional
        The job document, recorded in ``config.json``.
    """

    def with_options(self, **kw: Any) -> RunSpec:
        """This spec with the named execution options replaced (the planner's fitted worker
        count, the disk pool the budget chose); :class:`PipelineOptions` checks them.

        Raises
        ------
        PipelineError
            An invalid option.
        """
        return dataclasses.replace(self, opts=dataclasses.replace(self.opts, **kw))

    @classmethod
    def of(cls, parts: Any) -> RunSpec:
        """The spec of any object with these fields (a :class:`~kuration.Pipeline`)."""
        return cls(**{f.name: getattr(parts, f.name) for f in dataclasses.fields(cls)})
