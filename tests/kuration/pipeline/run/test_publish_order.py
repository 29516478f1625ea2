"""Nothing fails after publishing: every computation runs before ``state="writing"``.

A failure is injected into each hours step after selection through the step list
itself (``kuration.pipeline.dispatch.hours.STEPS``, the tuple the run executes): up to the move
to ``writing`` a committed dataset at the destination stays byte-identical and
readable; after it the run leaves ``writing``, names the folder and the resume
command, and ``kur run --resume`` completes byte-identically to an uninterrupted run.
A full disk and a folder turned read-only are made for real, on a tmpfs the test
mounts (the tests run as root; without the right to mount they are skipped).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kuration import iter_shards, run_job
from kuration.cli.main import main as cli_main
from kuration.errors import DatasetIntegrityError, DestinationError, PipelineError
from kuration.output.commit import read_commit
from kuration.pipeline.dispatch import hours
from kuration.pipeline.run import steps as hours_steps
from kuration.pipeline.run.summary import bin_edges

# small budgets filled with whole 15-minute tracks overshoot their request on purpose here
pytestmark = pytest.mark.filterwarnings("ignore::kuration.errors.BudgetGranularityWarning")

NAMES = [n for n, _ in hours_steps.STEPS]
AFTER_SELECTION = NAMES[NAMES.index("fill") + 1 :]
BEFORE_WRITING = AFTER_SELECTION[: AFTER_SELECTION.index(hours_steps.PUBLISH_STEP) + 1]
# (step, "before" it runs or "after" it returned): every step after selection, and the
# end of publication's first step (shards moved, manifest and config not yet written)
FAULTS = [(n, "before") for n in AFTER_SELECTION] + [(hours_steps.PUBLISH_STEP, "after")]


def _faulty(
    name: str, when: str, action: Callable[[hours_steps.HoursRun], None] | None = None
) -> tuple:
    """``STEPS`` with ``action`` (default: raise) run before or after step ``name``."""

    def fail(r: hours_steps.HoursRun) -> None:
        raise PipelineError(f"injected fault {when} {name}")

    act = action or fail

    def wrap(step: hours_steps.Step) -> hours_steps.Step:
        def run(r: hours_steps.HoursRun):  # type: ignore[no-untyped-def]
            if when == "before":
                act(r)
            out = step(r)
            if when == "after":
                act(r)
            return out

        return run

    return tuple((n, wrap(s) if n == name else s) for n, s in hours_steps.STEPS)


def _reader_view(dest: Path) -> tuple[str, list[str]]:
    try:
        return "read", [meta["path"] for _, meta in iter_shards(dest, with_meta=True)]
    except DatasetIntegrityError:
        return "refused", []


def _state(dest: Path) -> str | None:
    rec, _ = read_commit(dest)
    return None if rec is None else rec["state"]


# ---- the histogram of values equal but for rounding ------------------------------------------


def test_bin_edges_of_values_equal_but_for_rounding() -> None:
    # the std of a straight ramp, window by window: equal up to the last bit
    ramp = np.arange(3600) * 0.1
    stds = np.array([np.std(ramp[i : i + 120]) for i in range(0, 3480, 60)])
    lo, hi = stds.min(), stds.max()
    assert 0 < hi - lo < 1e-12
    with pytest.raises(ValueError, match="Too many bins"):
        np.histogram_bin_edges(stds, bins=24)  # what the run used to raise at its commit
    edges = bin_edges(lo, hi, 24)
    assert edges.shape == (25,) and np.all(np.diff(edges) > 0)
    counts, _ = np.histogram(stds, bins=edges)
    assert counts.sum() == len(stds) and np.count_nonzero(counts) == 1
    # an ordinary range keeps numpy's own edges
    assert np.array_equal(bin_edges(0.0, 3.0, 6), np.histogram_bin_edges([0.0, 3.0], bins=6))


@given(
    st.floats(-1e300, 1e300, allow_nan=False),
    st.integers(0, 64),
    st.integers(1, 64),
)
def test_bin_edges_hold_every_value_for_any_narrow_range(lo: float, ulps: int, bins: int) -> None:
    hi = lo
    for _ in range(ulps):
        hi = float(np.nextafter(hi, np.inf))
    edges = bin_edges(lo, hi, bins)
    assert len(edges) == bins + 1 and np.all(np.isfinite(edges))
    assert np.all(np.diff(edges) > 0)
    assert edges[0] <= lo and hi <= edges[-1]


@pytest.fixture(scope="module")
def ramp_job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What ``kur init`` writes for three ordinary CSVs of straight ramps: its starter
    strategy ranks by ``x_std``, equal in every window up to rounding."""
    root = tmp_path_factory.mktemp("ramps")
    for k in range(3):
        t = np.arange(3600)
        lines = [f"{int(s)},e{k},{0.1 * i:.1f}" for i, s in enumerate(t)]
        (root / f"ramp{k}.csv").write_text("time,entity,x\n" + "\n".join(lines) + "\n")
    csvs = [str(p) for p in sorted(root.glob("ramp*.csv"))]
    assert cli_main(["init", *csvs, "--out", str(root / "job")]) == 0
    return root / "job" / "job.json"


@pytest.mark.parametrize("pool", ["memory", "disk"])
def test_a_feature_equal_but_for_rounding_commits(ramp_job: Path, tmp_path: Path, pool) -> None:
    dest = tmp_path / "ds"
    assert cli_main(["run", str(ramp_job), "--out", str(dest), "--pool", pool, "--json"]) == 0
    assert _state(dest) == "committed"
    dist = json.loads((dest / "config.json").read_text())["results"]["distributions"]["x_std"]
    assert sum(dist["pool"]) > 0 and np.count_nonzero(dist["pool"]) == 1
    assert sum(dist["selected"]) > 0


# ---- a failure injected into every step after selection --------------------------------------


@pytest.mark.parametrize(("step", "when"), FAULTS, ids=[f"{w}-{s}" for s, w in FAULTS])
def test_a_failure_at_any_step_keeps_or_names_the_dataset(
    step, when, tmp_path, monkeypatch, capsys, job_b, gen_a, base_b, digests, all_bytes
) -> None:
    _fault_case(job_b, step, when, tmp_path, monkeypatch, capsys, gen_a, base_b, digests, all_bytes)


DISK_FAULTS = [("config", "before"), (hours_steps.PUBLISH_STEP, "after")]


@pytest.mark.parametrize(("step", "when"), DISK_FAULTS, ids=[f"{w}-{s}" for s, w in DISK_FAULTS])
def test_the_disk_pool_keeps_the_same_order(
    step, when, tmp_path, monkeypatch, capsys, job_b, gen_a, base_b, digests, all_bytes
) -> None:
    job = {**job_b, "pool": "disk"}  # its own steps for scoring, ranking, fill and summary
    _fault_case(job, step, when, tmp_path, monkeypatch, capsys, gen_a, base_b, digests, all_bytes)


def _fault_case(job, step, when, tmp_path, monkeypatch, capsys, gen_a, base_b, digests, all_bytes):  # type: ignore[no-untyped-def]
    """Fail ``when`` step ``step`` of ``kur run --force`` over ``gen_a``; check what is left;
    then ``kur run --resume`` must give the bytes of ``base_b``."""
    job_path = tmp_path / "job.json"
    job_path.write_text(json.dumps(job))
    dest = tmp_path / "ds"
    shutil.copytree(gen_a.path, dest)
    before = all_bytes(dest)
    prev_paths = [e["path"] for e in gen_a.manifest["shards"]]

    with monkeypatch.context() as m:
        m.setattr(hours, "STEPS", _faulty(step, when))
        assert cli_main(["run", str(job_path), "--out", str(dest), "--force"]) == 1
    err = capsys.readouterr().err
    assert f"injected fault {when} {step}" in err
    writing = step not in BEFORE_WRITING or (step, when) == (hours_steps.PUBLISH_STEP, "after")
    if not writing:
        assert all_bytes(dest) == before  # byte-identical, not just readable
        assert _reader_view(dest) == ("read", prev_paths)
        assert "state 'writing'" not in err
    else:
        assert _state(dest) == "writing" and _reader_view(dest)[0] == "refused"
        assert f"{dest} is left in state 'writing'" in err and "--resume" in err
    resume = ["run", str(job_path), "--out", str(dest), "--resume", "--json"]
    if when == "before" and NAMES.index(step) <= NAMES.index("stage"):
        # nothing of this job was staged and the other job's dataset stands: resume is
        # refused (it continues the same job only), and --force starts over
        assert cli_main(resume) == 1
        err = capsys.readouterr().err
        assert "committed dataset of a different job" in err and "--force" in err
        assert all_bytes(dest) == before
        resume[resume.index("--resume")] = "--force"
    assert cli_main(resume) == 0
    assert digests(dest) == digests(base_b.path)
    assert not (dest / ".kuration_staging").exists()


# ---- a full disk and a read-only folder, for real ---------------------------------------------


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 64 MiB tmpfs mounted on a fresh folder for this test (unmounted after it)."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _pages(n: int) -> int:
    return -(-n // 4096) * 4096


@pytest.mark.parametrize("target", ["dataset_manifest.json", "config.json"])
def test_a_full_disk_while_publishing_names_the_file_and_leaves_no_temp(
    target, tmpfs, tmp_path, monkeypatch, capsys, job_b, base_b, digests
) -> None:
    dest = tmpfs / "ds"
    filler = tmpfs / "filler"

    def fill_disk(r: hours_steps.HoursRun) -> None:
        # room for the writing record and the documents written before the target, and
        # one page less than the target needs
        names = list(r.payload)
        ahead = [len(r.records["writing"])] + [
            len(r.payload[n]) for n in names[: names.index(target)]
        ]
        assert len(r.payload[target]) > 4096
        room = sum(_pages(n) for n in ahead) + _pages(len(r.payload[target])) - 4096
        vfs = os.statvfs(tmpfs)
        free = vfs.f_bavail * vfs.f_frsize
        with open(filler, "wb") as fh:
            fh.truncate(0)
            fh.write(b"\0" * (free - room))

    with monkeypatch.context() as m:
        m.setattr(hours, "STEPS", _faulty(hours_steps.PUBLISH_STEP, "before", fill_disk))
        with pytest.raises(DestinationError, match="No space left on device") as info:
            run_job(job_b, dest)
    assert info.value.path == str(dest / target)
    assert str(dest / target) in str(info.value)
    assert not [p for p in dest.rglob("*") if ".tmp-" in p.name]
    assert _state(dest) == "writing"
    err = capsys.readouterr().err
    assert f"{dest} is left in state 'writing'" in err and "--resume" in err
    filler.unlink()
    run_job(job_b, dest, resume=True)
    assert digests(dest) == digests(base_b.path)


@pytest.mark.parametrize("step", ["publish", "commit"])
def test_a_folder_turned_read_only_reports_the_first_error(
    step, tmpfs, monkeypatch, capsys, job_b, base_b, digests
) -> None:
    dest = tmpfs / "ds"
    mounted: list[Path] = []

    def read_only(r: hours_steps.HoursRun) -> None:
        # the writer holds files open, so the tmpfs itself refuses a remount: the folder
        # is bind-mounted onto itself and that mount made read-only
        subprocess.run(["mount", "--bind", str(dest), str(dest)], check=True)
        mounted.append(dest)
        subprocess.run(["mount", "-o", "remount,bind,ro", str(dest)], check=True)

    try:
        with monkeypatch.context() as m:
            m.setattr(hours, "STEPS", _faulty(step, "before", read_only))
            with pytest.raises(DestinationError, match="Read-only file system") as info:
                run_job(job_b, dest)
    finally:
        for p in mounted:
            subprocess.run(["umount", str(p)], check=True)
    name = "dataset.commit.json" if step == "publish" else ".kuration_output_spec.json"
    assert info.value.path == str(dest / name)
    err = capsys.readouterr().err
    if step == "publish":
        # the run created the folder and tried to remove it: that error is a note, not
        # the error raised
        notes = getattr(info.value, "__notes__", [])
        assert any("cleaning up" in n and "Read-only file system" in n for n in notes), notes
        assert "state 'writing'" not in err
    else:
        assert _state(dest) == "writing" and f"{dest} is left in state 'writing'" in err
    assert not [p for p in dest.rglob("*") if ".tmp-" in p.name]
    run_job(job_b, dest, resume=True)
    assert digests(dest) == digests(base_b.path)


def test_the_cli_names_the_file_of_a_full_disk(tmpfs, tmp_path, job_b) -> None:
    """The same through ``kur run`` in a child process: one error line with the path."""
    job_path = tmp_path / "job.json"
    job_path.write_text(json.dumps(job_b))
    dest = tmpfs / "ds"
    code = (
        "import os, sys\n"
        "from kuration.pipeline.dispatch import hours\n"
        "from kuration.cli.main import main\n"
        "def fill(r):\n"
        "    v = os.statvfs(sys.argv[2])\n"
        "    with open(os.path.join(sys.argv[2], 'filler'), 'wb') as fh:\n"
        "        fh.write(b'\\0' * (v.f_bavail * v.f_frsize - 8192))\n"
        "def wrap(s):\n"
        "    def run(r):\n"
        "        fill(r)\n"
        "        return s(r)\n"
        "    return run\n"
        "hours.STEPS = tuple((n, wrap(s) if n == 'publish' else s) for n, s in hours.STEPS)\n"
        "sys.exit(main(['run', sys.argv[1], '--out', sys.argv[3]]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(job_path), str(tmpfs), str(dest)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    assert done.returncode == 1, done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("kur: error:")]
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert str(dest) in lines[0] and "No space left on device" in lines[0]
    assert "--resume" in done.stderr


class _FailingAnalyzer:
    """An analyzer that fails: it runs after the count path's selection."""

    scope = "stream"

    def validate(self, params):  # type: ignore[no-untyped-def]
        pass

    def analyze(self, subject, params):  # type: ignore[no-untyped-def]
        raise PipelineError("the analyzer failed")


def test_the_count_path_writes_its_result_last(small_job, tmp_path: Path) -> None:
    from kuration import Pipeline
    from kuration.tools.analyzers import _ANALYZERS, register_analyzer

    register_analyzer("test-failing-after-select", _FailingAnalyzer())
    try:
        p = Pipeline.from_job(small_job).select(20).enrich("test-failing-after-select")
        dest = tmp_path / "selection.json"
        with pytest.raises(PipelineError, match="the analyzer failed"):
            p.execute(dest)
        assert not dest.exists() and list(tmp_path.iterdir()) == []
        Pipeline.from_job(small_job).select(20).execute(dest)
        assert json.loads(dest.read_text())["n_selected"] == 20
    finally:
        _ANALYZERS.unregister("test-failing-after-select")
