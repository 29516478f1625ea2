"""kur diff, kur check, hours_selection_review and the HTML report on datasets curated from the real sample."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kuration import compare_datasets, hours_selection_review, run_job
from kuration.tools.check import PolicyError, check_dataset

# small budgets filled with whole 15-minute tracks overshoot their request on purpose here
pytestmark = pytest.mark.filterwarnings("ignore::kuration.errors.BudgetGranularityWarning")

KUR = [sys.executable, "-m", "kuration.cli.main"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, adsb_job_dict, adsb_sources):
    job = json.loads(json.dumps(adsb_job_dict))
    job["sources"] = [str(p) for p in adsb_sources[:4]]
    job["budget"] = {"train_hours": 0.75, "test_hours": 0.25}
    root = tmp_path_factory.mktemp("artifacts")
    a = run_job(job, root / "a")
    b = run_job(job, root / "b")
    job_seed = dict(job, seed=7)
    c = run_job(job_seed, root / "c")
    return a, b, c


def test_identical_runs_diff_as_identical(runs) -> None:
    a, b, _ = runs
    d = compare_datasets(a.path, b.path)
    assert (
        d["identical"]
        and not d["shards"]["changed"]
        and d["shards"]["unchanged"] == len(a.manifest["shards"])
    )
    out = subprocess.run(
        [*KUR, "diff", str(a.path), str(b.path)], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0 and "identical" in out.stdout


def test_diff_verify_is_not_identical_when_a_side_was_edited(runs, tmp_path: Path) -> None:
    """Two runs of one job with one shard file of the copy overwritten by another shard's
    bytes: the manifests still agree, and ``--verify`` used to print "identical" above
    "right: INVALID"."""
    a, b, _ = runs
    edited = tmp_path / "edited"
    shutil.copytree(b.path, edited)
    first, second = (edited / e["path"] for e in b.manifest["shards"][:2])
    shutil.copyfile(second, first)
    assert compare_datasets(a.path, edited)["identical"]  # as recorded
    d = compare_datasets(a.path, edited, verify=True)
    assert not d["identical"] and not d["verification"]["right"]["valid"]
    out = subprocess.run(
        [*KUR, "diff", str(a.path), str(edited), "--verify"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0
    assert "different" in out.stdout and "identical" not in out.stdout
    assert "do not match them" in out.stdout and "SHA-256 does not match" in out.stdout


def test_a_different_seed_lists_changed_shards_and_the_seed(runs, tmp_path: Path) -> None:
    a, _, c = runs
    d = compare_datasets(a.path, c.path)
    assert not d["identical"]
    moved = d["shards"]["added"] + d["shards"]["removed"] + d["shards"]["changed"]
    assert moved
    seed = [x for x in d["changes"] if x["path"] == "pipeline.seed"]
    assert seed == [{"path": "pipeline.seed", "change": "changed", "left": 0, "right": 7}]
    html = tmp_path / "diff.html"
    out = subprocess.run(
        [*KUR, "diff", str(a.path), str(c.path), "--html", str(html)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0 and "pipeline.seed" in out.stdout
    assert "pipeline.seed" in html.read_text()


def test_check_gates(runs, tmp_path: Path) -> None:
    a, _, _ = runs
    good = tmp_path / "good.json"
    good.write_text(
        json.dumps(
            {
                "required_modalities": ["position", "altitude"],
                "min_sources": 2,
                "min_shards": {"train": 1, "test": 1},
                "verify": True,
                "min_budget_utilization": 0.9,
                "max_skipped_sources": 0,
            }
        )
    )
    ok = subprocess.run(
        [*KUR, "check", str(a.path), "--policy", str(good)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps({"required_modalities": ["position", "camera"], "min_shards": 100000})
    )
    fail = subprocess.run(
        [*KUR, "check", str(a.path), "--policy", str(bad)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert fail.returncode == 2
    lines = fail.stderr.strip().splitlines()
    assert len(lines) == 2 and "required_modalities" in lines[0] and "camera" in lines[0]
    with pytest.raises(
        PolicyError, match=r"unknown key .min_shard. \(did you mean .min_shards.\?\)"
    ):
        check_dataset(a.path, {"min_shard": 1})


def test_check_fails_a_corrupted_dataset(runs, tmp_path: Path) -> None:
    a, _, _ = runs
    copy = tmp_path / "copy"
    shutil.copytree(a.path, copy)
    shard = copy / a.manifest["shards"][0]["path"]
    shard.write_bytes(shard.read_bytes()[:-10])
    res = check_dataset(copy, {"verify": True})
    assert not res.ok and res.failures[0]["gate"] == "verify"


def test_review_explains_every_candidate(runs) -> None:
    a, _, _ = runs
    rev = hours_selection_review(a, max_examples=3)
    for split in ("train", "test"):
        s = rev["splits"][split]
        n = sum(v["count"] for v in s["decisions"].values())
        assert (
            n
            == a.manifest["budget"][split]["candidate_tracks"]
            + a.manifest["budget"][split]["nonfinite_excluded"]
        )
        assert s["decisions"]["admitted"]["count"] == a.manifest["budget"][split]["admitted_tracks"]
        assert all(len(v) <= 3 for v in s["examples"].values())
        if "budget-full" in s["examples"]:
            rejected = [
                e["priority"] for e in s["examples"]["budget-full"] if e["priority"] is not None
            ]
            assert all(p <= s["priority"]["admitted"]["max"] for p in rejected)
        assert s["utilization"] == pytest.approx(
            a.manifest["budget"][split]["emitted_s"] / s["requested_s"]
        )


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.slow
@pytest.mark.skipif(_chromium() is None, reason="needs Debian's chromium (.ci/run installs it)")
def test_html_report_renders_with_plots(runs, tmp_path: Path) -> None:
    import matplotlib.image as mpimg

    a, _, _ = runs
    html = tmp_path / "report.html"
    out = subprocess.run(
        [*KUR, "inspect", str(a.path), "--verify", "--html", str(html)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    text = html.read_text()
    assert text.count("<svg") >= 4
    # titled with the dataset's name, not a path of this machine
    assert "<title>adsb-paris-quickstart</title>" in text and str(tmp_path) not in text
    # a map of the selected tracks (longitude/latitude: a geodetic position) over the pool
    tracks = text[text.index("<h2>Tracks</h2>") : text.index("<h2>Example windows")]
    assert "longitude (deg)" in tracks and "latitude (deg)" in tracks and "<svg" in tracks
    # example windows from the top and bottom of the ranking, plotted for the binned metrics
    windows = text[text.index("<h2>Example windows") : text.index("<h2>Timeline")]
    assert windows.count("<svg") == 6 and "top 1" in windows and "bottom 1" in windows
    assert "track (deg)" in windows and "vertical_rate (ft/min)" in windows
    # feature axes carry their units
    assert "turn_p90 (deg)" in text and "climb_std (ft/min)" in text
    # nothing is fetched: no external scripts, stylesheets, images or fonts
    for needle in ('src="http', "src='http", 'href="http', "<link", "@import", "url(http"):
        assert needle not in text
    png = tmp_path / "shot.png"
    cmd = [
        _chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--window-size=1100,2600",
        f"--screenshot={png}",
        html.as_uri(),
    ]
    subprocess.run(cmd, capture_output=True, timeout=120, check=False)
    img = mpimg.imread(png)[..., :3]
    # the train colour of the plots (#3b6fd8) covers a visible area of the screenshot
    train = np.all(np.abs(img - np.array([0x3B, 0x6F, 0xD8]) / 255) < 0.03, axis=-1)
    assert train.mean() > 0.002
    # the map (train blue, test orange tracks, faint grey pool) is drawn where the page puts it:
    # below the hours plots, above the example windows
    rows = np.flatnonzero(train.any(axis=1))
    test = np.all(np.abs(img - np.array([0xE0, 0x85, 0x2B]) / 255) < 0.03, axis=-1)
    pool = np.all(np.abs(img - np.array([0xB8, 0xBF, 0xCC]) / 255) < 0.06, axis=-1)
    band = slice(int(img.shape[0] * 0.2), int(img.shape[0] * 0.5))
    assert test[band].sum() > 50 and pool[band].sum() > 50 and rows.size > 0


def test_progress_events_cover_every_phase(small_job, tmp_path: Path) -> None:
    events: list[dict] = []
    run_job(small_job, tmp_path / "p", progress=events.append)
    phases = {e["phase"] for e in events}
    assert {"scoring", "selection", "writing"} <= phases
    for phase in ("scoring", "selection", "writing"):
        kinds = [e["event"] for e in events if e["phase"] == phase]
        assert kinds[0] == "start" and kinds[-1] == "complete"
    adv = [e for e in events if e["phase"] == "scoring" and e["event"] == "advance"]
    assert [e["current"] for e in adv] == list(range(1, 5)) and all(e["total"] == 4 for e in adv)
    assert all("source" in e and e["status"] == "ok" for e in adv)
