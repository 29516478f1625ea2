"""streaming=True end to end on real quickstart sources (traffic==2.13 ADS-B sample), each
made time-ordered by a stable sort on its timestamp: the artifact equals the in-memory
run's byte for byte, the run records that it streamed, and every plan that cannot honour
bounded memory is refused before a row is read."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

from kuration import Pipeline
from kuration.cli.main import main
from kuration.errors import (
    BudgetGranularityWarning,
    MemoryBudgetError,
    StreamingError,
    StreamOrderError,
)
from kuration.metrics.scorers import register_scorer
from kuration.pipeline.spec.budget import check_memory_budget, check_plan_memory, estimate_peak


@pytest.fixture(scope="module")
def ordered(adsb_time_ordered: list[Path]) -> list[Path]:
    return adsb_time_ordered


def job(base: dict[str, Any], sources: list[Path], container: str = "parquet") -> dict[str, Any]:
    j = json.loads(json.dumps(base))
    j["sources"] = [str(p) for p in sources]
    j["budget"] = {"train_hours": 0.5, "test_hours": 0.1}
    j["output"]["container"] = container
    j["on_error"] = "raise"
    return j


def write(j: dict[str, Any], out: Path, **opts: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetGranularityWarning)  # the 0.1 h test split
        return Pipeline.from_job(j).options(**opts).write(out)


@pytest.mark.parametrize("container", ["parquet", "json", "hdf5"])
def test_the_streamed_artifact_is_the_in_memory_one(
    adsb_job_dict: dict, ordered: list[Path], tmp_path: Path, digests, container: str
) -> None:
    j = job(adsb_job_dict, ordered, container)
    write(j, tmp_path / "mem")
    res = write(
        j, tmp_path / "stream", streaming=True, stream_batch_rows=4_000, memory_budget="8GB"
    )
    want, got = digests(tmp_path / "mem"), digests(tmp_path / "stream")
    assert len([p for p in want if "_shard" in p]) > 20
    assert got == want  # every shard, the manifest and the run marker
    tel = {t["stage"]: t for t in res.config["provenance"]["execution"]["telemetry"]}
    for stage in ("read+segment+features", "stage"):
        assert tel[stage]["streamed"] is True
        assert tel[stage]["peak_rss_bytes"] > 10_000_000
    assert "streamed" not in tel["bin"]
    assert res.config["provenance"]["execution"]["streaming"] is True


def test_disorder_is_refused_naming_the_row(
    adsb_job_dict: dict, adsb_sources: list[Path], tmp_path: Path
) -> None:
    src = adsb_sources[0]  # as shipped: sorted by aircraft, so time goes back
    t = pq.read_table(src, columns=["timestamp"]).column(0).to_numpy()
    row = int(np.flatnonzero(np.diff(t) < 0)[0]) + 1
    with pytest.raises(StreamOrderError, match=f"row {row}: time goes backwards") as info:
        write(job(adsb_job_dict, [src]), tmp_path / "out", streaming=True)
    assert info.value.source == str(src)


class _Buffers:
    def score(self, segments: Any, ctx: Any) -> Any:  # pragma: no cover - never runs
        return np.zeros(len(segments))


def test_plans_that_cannot_stream_are_refused_before_reading(
    adsb_job_dict: dict, ordered: list[Path], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    base = job(adsb_job_dict, ordered[:1])
    cases: list[tuple[dict[str, Any], dict[str, Any], str]] = []
    npz = json.loads(json.dumps(base))
    npz["output"]["container"] = "npz"
    cases.append((npz, {}, "npz container cannot honour bounded memory"))
    cases.append((base, {"workers": 2}, "use workers=1"))
    cases.append((base, {"executor": "ray"}, "not 'ray'"))  # one worker, but not this process
    register_scorer("test-stream-buffers", _Buffers, needs_buffers=True, clobber=True)
    buf = json.loads(json.dumps(base))
    buf["strategy"]["scorers"] = [{"name": "test-stream-buffers", "output": "b"}]
    cases.append((buf, {}, "needs_buffers=True"))
    folder = json.loads(json.dumps(base))
    folder["sources"] = [str(tmp_path)]
    cases.append((folder, {}, "partitioned Parquet directory"))
    for j, opts, msg in cases:
        with pytest.raises(StreamingError, match=msg):
            write(j, out, streaming=True, **opts)
        assert not out.exists()
    p = Pipeline.from_job(base).select(5).options(streaming=True)
    with pytest.raises(StreamingError, match="count selection"):
        p.run()


@pytest.fixture(scope="module")
def recording(adsb_sources: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The whole quickstart recording (3 h, all twelve sources) as one time-ordered file."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rec = pa.concat_tables([pq.read_table(p) for p in adsb_sources])
    out = tmp_path_factory.mktemp("recording") / "recording.parquet"
    pq.write_table(rec.take(pc.sort_indices(rec, [("timestamp", "ascending")])), out)
    return out


def test_memory_budget_fails_before_reading_naming_the_option(
    adsb_job_dict: dict, recording: Path, tmp_path: Path
) -> None:
    j = job(adsb_job_dict, [recording])
    p = Pipeline.from_job(j)
    sources = [str(recording)]
    est = estimate_peak(p.run_spec(), sources, baseline=0)
    md = pq.ParquetFile(recording).metadata
    assert est.sources[0].rows == md.num_rows and est.sources[0].entities == 213
    assert est.sources[0].ticks == 10_799  # 3 h at 1 Hz, from the timestamp statistics
    assert 0 < est.streaming < est.in_memory
    between = (est.streaming + est.in_memory) // 2
    with pytest.raises(MemoryBudgetError, match=r"streaming=True \(kur run --streaming\) would"):
        check_plan_memory(p.options(memory_budget=between).run_spec(), sources, baseline=0)
    assert check_plan_memory(
        p.options(memory_budget=between, streaming=True).run_spec(), sources, baseline=0
    )
    pool = est.parts["pool"]
    with pytest.raises(
        MemoryBudgetError, match="segment pool alone does not fit: it needs checkpoints"
    ):
        write(j, tmp_path / "out", memory_budget=max(1, pool // 2))
    assert not (tmp_path / "out").exists()
    assert check_memory_budget("2GB") == 2_000_000_000
    assert check_memory_budget("2GiB") == 2**31


def test_cli_flags(adsb_job_dict: dict, ordered: list[Path], tmp_path: Path, capsys) -> None:
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job(adsb_job_dict, ordered[:1], "npz")))
    assert main(["run", str(path), "--out", str(tmp_path / "o"), "--streaming"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kur: error: ") and "npz" in err[0]
    assert main(["run", str(path), "--out", str(tmp_path / "o"), "--memory-budget", "1kB"]) == 1
    assert "exceeds memory_budget" in capsys.readouterr().err
    with pytest.raises(SystemExit) as ex:
        main(["run", str(path), "--memory-budget", "lots"])
    assert ex.value.code == 1
    assert "memory_budget must be bytes or a size such as '2GB'" in capsys.readouterr().err
    j = job(adsb_job_dict, ordered[:1], "npz")
    j["streaming"] = True
    path.write_text(json.dumps(j))
    assert main(["run", str(path), "--out", str(tmp_path / "o")]) == 1  # the job key streams too
    assert "npz" in capsys.readouterr().err


def test_resume_reuses_streamed_shards(
    adsb_job_dict: dict, ordered: list[Path], tmp_path: Path
) -> None:
    j = job(adsb_job_dict, ordered[:2])
    first = write(j, tmp_path / "out", streaming=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetGranularityWarning)
        again = Pipeline.from_job(j).options(streaming=True).write(tmp_path / "out", resume=True)
    n = len(first.manifest["shards"])
    assert n > 0 and again.resume["reused_shards"] == n and again.resume["rebuilt_shards"] == 0
    assert again.manifest == first.manifest
