"""Freed heap memory stays mapped once an engine is built (glibc), so big temporaries stop
faulting their pages in again; the environment can turn it off."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

# 40 rounds of what a source does: several 0.5-4 MB temporaries alive together, then all
# freed; print the minor page faults the rounds took
_PROBE = """
import resource, sys
import numpy as np
if sys.argv[1] == "engine":
    from kuration import FeatureEngine, SchemaSpec
    schema = SchemaSpec.from_dict({"name": "s", "sample_hz": 1.0, "fields": [{"name": "v"}]})
    FeatureEngine({"m": "field:v | mean"}, schema)
from kuration.metrics.alloc import retain_freed_memory
applied = retain_freed_memory()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(40):
    temps = [np.ones(n << 16) for n in (1, 8, 2, 4, 6, 3)]  # 0.5..4 MB, 12 MB together
    del temps
print(applied, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _probe(mode: str, **env: str) -> tuple[str, int]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, mode],
        env={**base, **env},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return out[0], int(out[1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_engine_keeps_freed_memory_mapped() -> None:
    applied, faults = _probe("engine")
    off, faults_off = _probe("engine", KURATION_RETAIN_FREED_MEMORY="0")
    assert (applied, off) == ("True", "False")
    # 12 MB is 3072 pages: glibc's default faults most in again on every round
    assert faults_off > 40 * 1000
    assert faults < 8000
