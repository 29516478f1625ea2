"""The two model-backed scoring seams: batch transforms and segment scorers.

Both sit between the feature pass and binning (architecture spec, "Two
scoring seams, two shapes"):

* a **BatchTransform** derives bounded scalar features from batches of
  ``field:``/``feature:``/``media:`` inputs (window-local; fuses with the
  feature pass);
* a **SegmentScorer** sees the whole pool and writes one feature per segment
  (a barrier).

This module owns their registries so :class:`kuration.Pipeline` can validate
``.transform(name)`` and ``.score(name)`` at build time and
:meth:`~kuration.Pipeline.explain` can place them.  The contracts and
``register_transform`` / ``register_scorer`` over these registries are
:mod:`kuration.metrics.transforms` and :mod:`kuration.metrics.scorers`, with
``execution_traits`` declared through :func:`kuration.core.traits.declare_traits`
(kinds ``transform`` and ``scorer``); the built-ins (``motion_energy``,
``mutual_information``, ``novelty``) register when :mod:`kuration` is imported.
"""

from __future__ import annotations

from typing import Any

from ..core.registry import Registry

__all__ = ["SCORERS", "TRANSFORMS", "registered_scorers", "registered_transforms"]

TRANSFORMS: Registry[Any] = Registry("batch transform", builtin="transform")
SCORERS: Registry[Any] = Registry("segment scorer", builtin="scorer")


def registered_transforms() -> tuple[str, ...]:
    """Names of every registered batch transform, sorted."""
    return TRANSFORMS.names()


def registered_scorers() -> tuple[str, ...]:
    """Names of every registered segment scorer, sorted."""
    return SCORERS.names()
