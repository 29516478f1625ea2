"""fsync_paths: every file and directory is synced (concurrently), refused paths are skipped."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from kuration.output.commit import fsync_paths


def test_fsync_paths_syncs_every_file_and_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = []
    for i in range(40):
        p = tmp_path / f"s{i // 10}" / f"shard-{i}.npz"
        p.parent.mkdir(exist_ok=True)
        p.write_bytes(os.urandom(64))
        files.append(p)
    dirs = sorted({p.parent for p in files})
    synced: list[int] = []
    threads: set[int] = set()
    lock = threading.Lock()
    real_fsync = os.fsync

    def spy(fd: int) -> None:  # the real fsync, recording which inode it synced
        with lock:
            synced.append(os.fstat(fd).st_ino)
            threads.add(threading.get_ident())
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", spy)
    fsync_paths([*files, tmp_path / "missing.npz", *dirs])  # a missing path is skipped
    assert sorted(synced) == sorted(p.stat().st_ino for p in [*files, *dirs])
    assert len(threads) > 1  # concurrent: one thread per in-flight fsync


def _record_syncs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, str]]:
    """Wrap the real os.fsync, libc's syncfs and os.replace of this process: each call runs
    and is recorded, in order, as (what, path, destination)."""
    from kuration.output import commit

    events: list[tuple[str, str, str]] = []
    lock = threading.Lock()
    real_fsync, real_syncfs, real_replace = os.fsync, commit._syncfs, os.replace

    def fsync(fd: int) -> None:
        with lock:
            events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}"), ""))
        real_fsync(fd)

    def syncfs(libc, fd: int) -> int:
        with lock:
            events.append(("syncfs", os.readlink(f"/proc/self/fd/{fd}"), ""))
        return real_syncfs(libc, fd)

    def replace(src, dst, **kw) -> None:
        real_replace(src, dst, **kw)
        with lock:
            events.append(("replace", os.fspath(src), os.fspath(dst)))

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(commit, "_syncfs", syncfs)
    monkeypatch.setattr(os, "replace", replace)
    return events


@pytest.mark.slow
@pytest.mark.parametrize("syncfs", [True, False])
def test_a_commit_syncs_every_shard_before_publishing_it(
    small_job: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, syncfs: bool
) -> None:
    """The sync calls a real run makes, recorded: each shard's staged file is synced (its own
    fsync, or a syncfs of the destination's filesystem) before it is moved into place; the
    split folders and the root after the moves; the commit record last, fsynced before its
    rename.  Both ways: syncfs where the kernel reports its errors, per-file fsync else."""
    import json

    from kuration import run_job
    from kuration.output import commit

    if not syncfs:
        monkeypatch.setattr(commit, "_syncfs_covers", lambda paths, anchor: False)
    elif not commit._syncfs_covers([tmp_path], tmp_path):
        pytest.skip("syncfs does not report errors here (Linux < 5.8, or not Linux)")
    events = _record_syncs(monkeypatch)
    root = tmp_path / "out"
    run_job({**small_job, "span_seconds": 60}, root)
    shards = json.loads((root / "dataset_manifest.json").read_text())["shards"]
    assert shards
    kinds = {e[0] for e in events}
    assert ("syncfs" in kinds) is syncfs
    moved = {dst: (i, src) for i, (what, src, dst) in enumerate(events) if what == "replace"}
    last_move = max(moved[os.fspath(root / s["path"])][0] for s in shards)
    for s in shards:
        i, src = moved[os.fspath(root / s["path"])]
        before = events[:i]
        assert ("fsync", src, "") in before or any(e[0] == "syncfs" for e in before), s["path"]
    final = moved[os.fspath(root / commit.COMMIT_NAME)]
    after = events[last_move : final[0]]
    synced = {e[1] for e in after if e[0] in ("fsync", "syncfs")}
    if syncfs:
        assert any(e[0] == "syncfs" for e in after)
    else:
        splits = {os.fspath(root / s["split"]) for s in shards}
        assert splits | {os.fspath(root)} <= synced
    assert ("fsync", final[1], "") in events[: final[0]]  # the record's temp file, then renamed
    assert json.loads((root / commit.COMMIT_NAME).read_text())["state"] == "committed"
