"""A Ray local cluster shared by every test that runs the ``ray`` executor (started once)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Any]:
    """``ray.init(num_cpus=2, include_dashboard=False)`` for the session, shut down at its end.

    A :class:`~kuration.core.executors.RayExecutor` finds the initialised cluster and
    uses it (without shutting it down), so each test pays the start once.
    """
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()
