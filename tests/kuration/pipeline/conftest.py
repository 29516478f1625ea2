"""A private Ray cluster shared by every test that runs the ``ray`` executor (started once)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Any]:
    """A private cluster of 2 CPUs for the session (:func:`kuration.core.ray_cluster.start_private`),
    shut down at its end.  Tests using it run in a network namespace (tests/ray_netns.py).

    A :class:`~kuration.core.executors.RayExecutor` finds the initialised cluster and
    uses it (without shutting it down), so each test pays the start once.
    """
    import ray

    from kuration.core.ray_cluster import start_private

    cluster = start_private(2)
    try:
        yield ray
    finally:
        cluster.stop()
