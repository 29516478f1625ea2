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
