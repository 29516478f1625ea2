"""``kur run`` and ``kur inspect`` name the sources a time split left in neither split."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from kuration.cli._split_note import split_excluded_line
from kuration.cli.main import main
from kuration.pipeline.spec.job import load_job

ROOT = Path(__file__).resolve().parents[3]
JOB = ROOT / "examples" / "adsb_quickstart" / "job.json"
RULE = {"test_from": "2021-10-07T13:30:00Z", "gap_seconds": 900}


def test_the_line_names_count_reason_and_first_ids() -> None:
    assert split_excluded_line(None) is None
    assert split_excluded_line({"rule": {"test_sources": ["a"]}, "excluded_sources": []}) is None
    ids = [f"s{i}" for i in range(5)]
    line = split_excluded_line(
        {"rule": {"test_from": 0.0, "gap_seconds": 60.0}, "excluded_sources": ids}
    )
    assert line is not None and line.startswith("split rule excluded 5 sources (s0, s1, s2, ...")
    assert "2 more" in line and "gap_seconds (60 s)" in line and "1970-01-01T00:00:00+00:00" in line
    assert "s3" not in line and "excluded_sources" in line


def test_run_and_inspect_report_the_excluded_sources(adsb_sources, tmp_path: Path, capsys) -> None:
    job, _ = load_job(JOB)
    job["sources"] = [str(p) for p in adsb_sources]
    job["budget"] = {"train_hours": 1.0, "test_hours": 0.5}
    job["split"] = RULE
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    out = tmp_path / "out"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["run", str(path), "--out", str(out)]) == 0
    ran = " ".join(capsys.readouterr().out.split())
    want = "split rule excluded 1 source (adsb_paris_005): each starts before test_from"
    assert want in ran
    assert main(["inspect", str(out)]) == 0
    assert want in " ".join(capsys.readouterr().out.split())
