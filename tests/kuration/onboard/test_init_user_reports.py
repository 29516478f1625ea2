"""What a fresh user met running ``kur init`` on foreign recordings: epoch nanoseconds,
text times in an odd format, header units that pint misses, line numbers, a dataset
folder as ``--out``, and the shard promise."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from kuration import init_job
from kuration.cli.main import main
from kuration.errors import InitError
from kuration.onboard.inventory import inventory_files

NS0 = 1_700_000_000_005_000_000  # 2023-11-14T22:13:20.005Z in epoch nanoseconds


def _ns_file(path: Path, header: str = "timestamp (ns),value", n: int = 400) -> Path:
    rows = [f"{NS0 + i * 10_000_000},{math.sin(i / 9):.4f}" for i in range(n)]
    path.write_text(header + "\n" + "\n".join(rows) + "\n")
    return path


def test_epoch_nanoseconds_profile_exactly(tmp_path: Path) -> None:
    """Above 2**53 a float64 is 256 ns coarse: the steps come from int64 differences."""
    inv = inventory_files([_ns_file(tmp_path / "ns_epoch.csv")], hints={})
    assert inv.time_unit == "ns"
    assert inv.times is not None
    assert np.abs(np.diff(inv.times) - 0.01).max() < 1e-9
    assert inv.time_origin % 86_400 == 0 and inv.time_origin == 1_699_920_000
    assert inv.times[0] == pytest.approx(80_000.005, abs=1e-9)


def test_kur_init_on_epoch_nanoseconds_writes_a_job(tmp_path: Path, capsys) -> None:
    src = _ns_file(tmp_path / "ns_epoch.csv")
    assert main(["init", str(src), "--out", str(tmp_path / "job")]) == 0
    out = capsys.readouterr().out
    assert "sample rate: 100 Hz" in out
    assert "400 rows, 400 kept on their own tick" in out


def test_time_unit_ns_on_a_plain_time_column(tmp_path: Path, capsys) -> None:
    src = _ns_file(tmp_path / "t.csv", header="time,value")
    assert main(["init", str(src), "--time-unit", "ns", "--out", str(tmp_path / "job")]) == 0
    out = capsys.readouterr().out
    assert "read as nanoseconds (given)" in out and "sample rate: 100 Hz" in out


ACTI_FMT = "%Y-%m-%d %H:%M:%S.%f%z [Europe/London]"


def _acti(path: Path, n: int = 300) -> Path:
    """pyActigraphy's text stamps: fractional seconds, an offset and a zone name."""
    import datetime as dt

    t0 = dt.datetime(2014, 5, 7, 13, 29, 50, 439000)
    rows = [
        f"{(t0 + dt.timedelta(seconds=60 * i)).strftime('%Y-%m-%d %H:%M:%S.%f')}+0100 "
        f"[Europe/London],{(i * 37) % 500}"
        for i in range(n)
    ]
    path.write_text("Date_Time,Activity\n" + "\n".join(rows) + "\n")
    return path


def test_odd_text_times_advise_the_time_format_flag(tmp_path: Path) -> None:
    with pytest.raises(InitError) as exc:
        init_job([_acti(tmp_path / "acti.csv")], tmp_path / "job")
    msg = str(exc.value)
    assert "--time-format" in msg and "adapter option" not in msg, msg
    assert "line 2: '2014-05-07 13:29:50.439000+0100 [Europe/London]'" in msg, msg


def test_time_format_flag_reaches_the_job_and_the_run_reads_it(tmp_path: Path, capsys) -> None:
    src = _acti(tmp_path / "acti.csv")
    job = tmp_path / "job"
    assert main(["init", str(src), "--out", str(job), "--time-format", ACTI_FMT]) == 0
    out = capsys.readouterr().out
    assert f"time_format {ACTI_FMT!r}, given" in out and "300 rows, 300 kept" in out, out
    adapter = json.loads((job / "job.json").read_text())["adapter"]
    assert adapter["time_format"] == ACTI_FMT  # the dry read above read it as kur run will


def test_a_time_format_that_misses_a_value_names_its_line(tmp_path: Path) -> None:
    src = _acti(tmp_path / "acti.csv")
    lines = src.read_text().splitlines()
    lines[41] = lines[41].replace(".", ",", 1).replace(",", "x", 1)
    src.write_text("\n".join(lines) + "\n")
    with pytest.raises(InitError, match=r"does not read time column 'Date_Time' \(line 42\)"):
        init_job([src], tmp_path / "job", time_format=ACTI_FMT)
    assert not (tmp_path / "job").exists()


def test_time_format_on_a_numeric_time_column_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InitError, match="holds int64, not text"):
        init_job([_ns_file(tmp_path / "n.csv")], tmp_path / "job", time_format="%Y")


def test_an_out_folder_holding_a_dataset_is_refused_without_force(tmp_path: Path) -> None:
    src = _ns_file(tmp_path / "ns_epoch.csv", n=2000)
    init_job([src], tmp_path / "job", name="walk", fraction=1.0)
    data = tmp_path / "data"
    assert main(["run", str(tmp_path / "job" / "job.json"), "--out", str(data)]) == 0
    before = sorted(p.name for p in data.iterdir())
    with pytest.raises(InitError, match=r"data holds the kuration dataset of job 'walk' \("):
        init_job([src], data)
    assert sorted(p.name for p in data.iterdir()) == before
    init_job([src], data, force=True)
    assert (data / "job.json").exists() and (data / "dataset.commit.json").exists()


def test_spans_are_whole_shards_and_init_says_which_shards_are_padded(
    tmp_path: Path, capsys
) -> None:
    """Three 50 Hz tracks of 14,950 steps: 4.5 s spans (225 steps) would leave a padded
    shard in every span; spans of two 120-step shards leave one per track, as init says."""
    folder = tmp_path / "recs"
    folder.mkdir()
    for f in range(3):
        rows = [f"{i * 0.02:.2f},{math.sin(i * (f + 1) / 150):.4f}" for i in range(14_950)]
        (folder / f"rec{f}.csv").write_text("time,value\n" + "\n".join(rows) + "\n")
    res = init_job([folder], tmp_path / "job")
    text = "\n".join(res.lines)
    assert res.job["span_seconds"] == 4.8 and "no padding" not in text, text
    assert "shards: 120 steps (one window); a span is 2 of them; 3 of the 375 shards" in text
    out = tmp_path / "out"
    assert main(["run", str(tmp_path / "job" / "job.json"), "--out", str(out)]) == 0
    shards = json.loads((out / "dataset_manifest.json").read_text())["shards"]
    padded = [s for s in shards if s["padded"]]
    assert len(padded) <= 3 and len(shards) > 30, (len(padded), len(shards))
    assert all(s["n_steps"] == 14_950 % 120 for s in padded)


def test_epoch_rows_mid_step_of_a_rate_a_day_does_not_divide_keep_the_runs_phase(
    tmp_path: Path,
) -> None:
    """Epoch rows every 7 s (12,342.86 ticks a day) stamped half a step after the run's
    epoch-based ticks: init measures the phase on epoch times, not on times since its
    whole-day origin, so its grid_offset_s keeps every row (374 of 1500 collided)."""
    k0 = round(1.7e9 / 7)
    jitter = np.random.default_rng(3).uniform(-0.01, 0.01, 1500)
    t = (k0 + np.arange(1500) + 0.5) * 7.0 + jitter
    src = tmp_path / "seven.csv"
    rows = [f"{a:.3f},{math.sin(i / 20):.3f}" for i, a in enumerate(t)]
    src.write_text("time,value\n" + "\n".join(rows) + "\n")
    res = init_job([src], tmp_path / "job")
    assert res.job["adapter"]["grid_offset_s"] == 3.5
    assert "1500 rows, 1500 kept on their own tick (100.00%); none dropped" in "\n".join(res.lines)
