"""Freed heap memory stays mapped once a batched scoring pass has started (glibc), so big
temporaries stop faulting their pages in again; the environment can turn it off; a
streamed run leaves the allocator alone."""

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
from kuration.metrics.alloc import retain_freed_memory
applied = retain_freed_memory()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(40):
    temps = [np.ones(n << 16) for n in (1, 8, 2, 4, 6, 3)]  # 0.5..4 MB, 12 MB together
    del temps
print(applied, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _probe(**env: str) -> tuple[str, int]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    out = subprocess.run(
        [sys.executable, "-c", _PROBE],
        env={**base, **env},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return out[0], int(out[1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_retained_freed_memory_is_not_faulted_in_again() -> None:
    applied, faults = _probe()
    off, faults_off = _probe(KURATION_RETAIN_FREED_MEMORY="0")
    assert (applied, off) == ("True", "False")
    # 12 MB is 3072 pages: glibc's default faults most in again on every round
    assert faults_off > 40 * 1000
    assert faults < 8000


_PIPELINE = """
import sys
from kuration import Segmenter, SchemaSpec, load_strategy
from kuration.metrics import alloc
from kuration.pipeline.spec.job import load_job
from kuration.pipeline.run.scoring import score_sources
from kuration.pipeline.run.strategy import strategy_engine
from kuration.sources import adapter_from_dict
job, _ = load_job(sys.argv[1])
schema = SchemaSpec.from_dict(job["schema"])
st = load_strategy(job["strategy"], schema)
strategy_engine(st, schema)  # what a streamed run builds: the allocator is left alone
print("done" in alloc._state)
seg = Segmenter(**job["segmenter"], sample_hz=schema.sample_hz)
score_sources(schema, adapter_from_dict(job["adapter"], schema), [sys.argv[2]], seg, st)
print(alloc._state.get("done"))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_only_the_batched_scoring_pass_retains_freed_memory(adsb_sources) -> None:
    from pathlib import Path

    job = Path(__file__).resolve().parents[3] / "examples" / "adsb_quickstart" / "job.json"
    base = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "KURATION_RE"))}
    out = subprocess.run(
        [sys.executable, "-c", _PIPELINE, str(job), str(adsb_sources[0])],
        env=base,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert out == ["False", "True"]
