"""The commit protocol: writer lease, commit record, run-fingerprint marker, staging.

A dataset directory holds, besides its shards::

    dataset_manifest.json        shards + budget accounting
    config.json                  resolved run, results, provenance
    .kuration_output_spec.json   the run fingerprint (resolved run + sources + SDK version)
    dataset.commit.json          {"state": "committed" | "writing", checksums...}
    .kuration-writer.lock        the writer lease (flock)
    .kuration_staging/<fp>/      while a run is unfinished: its shards and journal

Protocol of one run (``write_dataset``):

1. the lease is taken before anything else and held to the final commit;
   a second writer is refused;
2. scoring, selection and the fill run without touching the artifact;
3. every shard that is not already in place is encoded into the run's
   staging namespace ``.kuration_staging/<fingerprint>/`` (temp file +
   ``os.replace``) and recorded in its journal -- the published dataset is
   still untouched, so a data error or a kill here leaves it byte-identical;
4. manifest, config and marker are built and encoded to bytes, and both commit
   records with them -- every computation that can fail happens before step 5;
5. ``dataset.commit.json`` moves to ``state="writing"`` (carrying the last
   committed record as ``previous``); from here readers refuse the dataset and
   the run only moves files and writes the bytes of step 4;
6. staged shards are moved into place, stale files removed, shards fsynced;
7. marker, manifest and config are replaced;
8. ``dataset.commit.json`` is published last as ``state="committed"`` with the
   SHA-256 of manifest, config and marker; the staging area is removed.

A reader therefore sees either the previous committed generation (a run
killed before step 5), a refusal (steps 5-7), or the new generation.  Resume
reuses a shard only when its bytes match a size and SHA-256 recorded either
by the last committed manifest or by the staging journal of a run with the
same fingerprint (the committed marker must hash to the checksum its commit
pins and name that fingerprint).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import shutil
import stat
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core.jsonio import canonical_json, canonical_sha256, loads_strict
from ..core.words import first_of
from ..errors import DatasetExistsError, DatasetIntegrityError, DestinationError

__all__ = [
    "COMMIT_NAME",
    "CONFIG_NAME",
    "FORMAT",
    "JOURNAL_NAME",
    "LOCK_NAME",
    "MANIFEST_NAME",
    "MARKER_FORMAT",
    "MARKER_NAME",
    "METADATA_NAMES",
    "SPLITS",
    "STAGING_NAME",
    "Journal",
    "WriterLease",
    "changed_paths",
    "changed_sources",
    "commit_bytes",
    "committed_manifest",
    "destination_path",
    "fsync_file",
    "fsync_paths",
    "holds_staged",
    "make_durable",
    "marker_document",
    "read_commit",
    "read_regular",
    "remove_stale",
    "remove_tree",
    "reusable_entries",
    "run_fingerprint",
    "shard_matches",
    "staged_by_others",
    "staging_dir",
    "syncfs_path",
    "write_bytes_atomic",
    "write_commit",
]

COMMIT_NAME = "dataset.commit.json"
MANIFEST_NAME = "dataset_manifest.json"
CONFIG_NAME = "config.json"
LOCK_NAME = ".kuration-writer.lock"
MARKER_NAME = ".kuration_output_spec.json"
JOURNAL_NAME = "journal.jsonl"
STAGING_NAME = ".kuration_staging"
FORMAT = "kuration-dataset/1"
SPLITS = ("train", "test")
MARKER_FORMAT = "kuration-output-spec/1"
JOURNAL_FORMAT = "kuration-journal/1"
METADATA_NAMES = (COMMIT_NAME, MANIFEST_NAME, CONFIG_NAME, MARKER_NAME)


def read_regular(path: Path) -> bytes:
    """Read a regular file, refusing symlinks, FIFOs, devices and directories.

    The file is opened with ``O_NOFOLLOW | O_NONBLOCK`` and checked with
    ``fstat`` on the open descriptor, so a swap between check and read is
    caught too.

    Raises
    ------
    DatasetIntegrityError
        Missing, a symlink, or not a regular file.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise DatasetIntegrityError("missing file", path=str(path)) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise DatasetIntegrityError("refusing a symbolic link", path=str(path)) from None
        raise DatasetIntegrityError(f"cannot open: {exc.strerror}", path=str(path)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise DatasetIntegrityError("not a regular file", path=str(path))
        chunks = []
        while block := os.read(fd, max(st.st_size + 1, 1 << 16)):
            chunks.append(block)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _strict(data: bytes, path: Path) -> Any:
    try:
        return loads_strict(data, what=str(path))
    except ValueError as exc:
        raise DatasetIntegrityError(str(exc), path=str(path)) from None


def read_commit(root: Path) -> tuple[dict[str, Any] | None, bytes]:
    """The commit record of ``root`` and its exact bytes (``(None, b"")`` when there is none).

    Raises
    ------
    DatasetIntegrityError
        A commit record that is not a regular file, not strict JSON, or not a
        ``kuration-dataset/1`` object.
    """
    path = root / COMMIT_NAME
    if not os.path.lexists(path):
        return None, b""
    data = read_regular(path)
    rec = _strict(data, path)
    if not isinstance(rec, dict) or rec.get("format") != FORMAT:
        raise DatasetIntegrityError(f"not a {FORMAT} commit record", path=str(path))
    return rec, data


def commit_bytes(state: str, **fields: Any) -> bytes:
    """The canonical JSON bytes of a commit record in ``state`` (encoded ahead of the
    write, so that nothing but bytes is left to fail once publication begins).

    Raises
    ------
    StrictJSONError
        A field holds NaN or infinity.
    """
    return canonical_json({"format": FORMAT, "state": state, **fields})


def write_commit(root: Path, state: str | bytes, **fields: Any) -> str:
    """Atomically (temp file, fsync, replace) write the commit record -- ``state`` and
    ``fields``, or the bytes :func:`commit_bytes` made -- and return its SHA-256.

    Raises
    ------
    DestinationError
        The record cannot be written (names the file; see :func:`write_bytes_atomic`).
    """
    data = state if isinstance(state, bytes) else commit_bytes(state, **fields)
    sha = write_bytes_atomic(root / COMMIT_NAME, data)
    _fsync_dir(root)
    return sha


def write_bytes_atomic(path: Path, data: bytes) -> str:
    """Write ``data`` to ``path`` through a same-folder temp file (write, ``fsync``,
    ``os.replace``) and return its SHA-256.

    On failure the temp file is removed, so a full disk or a folder turned read-only
    leaves ``path`` as it was and nothing half-written beside it; when even the removal
    fails, that second error is a note on the first, which is the one raised.

    Raises
    ------
    DestinationError
        Naming ``path`` and the operating system's reason (``No space left on device``,
        ``Read-only file system``, ...), chained to the ``OSError``.
    """
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        err = DestinationError(f"cannot write {path.name}: {exc.strerror or exc}", path=str(path))
        try:
            if os.path.lexists(tmp):
                os.unlink(tmp)
        except OSError as left:
            err.add_note(f"its temp file {tmp} could not be removed: {left.strerror or left}")
        raise err from exc
    return hashlib.sha256(data).hexdigest()


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def run_fingerprint(run: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of the resolved run description."""
    return canonical_sha256(run)


def marker_document(run: Mapping[str, Any]) -> dict[str, Any]:
    """The content of ``.kuration_output_spec.json``."""
    return {"format": MARKER_FORMAT, "run_fingerprint": run_fingerprint(run), "run": dict(run)}


class WriterLease:
    """Exclusive lease on a destination directory (``flock`` on ``.kuration-writer.lock``).

    The lease is released when the process exits, however it exits.  With
    ``cleanup=True``, a run that fails before writing anything removes the
    directory it created, or else the lock file it created, so a refused or
    failed run into an existing folder leaves it as it was.

    Raises
    ------
    DatasetExistsError
        If another writer holds the lease, or ``root`` is not a directory.
    DestinationError
        If ``root`` or the lock file cannot be created (permissions, read-only
        file system, a file in the way of a parent).
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._fd: int | None = None
        self._created = False
        self._lock_created = False

    def acquire(self) -> WriterLease:
        root = self.root
        if root.exists() and not root.is_dir():
            raise DatasetExistsError(f"{root} exists and is not a directory")
        self._created = not root.exists()
        for _ in range(8):
            try:
                root.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise DestinationError(
                    f"cannot create the output directory: {exc.strerror or exc}",
                    path=str(exc.filename or root),
                ) from None
            lock = root / LOCK_NAME
            existed = os.path.lexists(lock)
            try:
                fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise DatasetExistsError(
                        f"{lock}: cannot open the writer lock ({exc})"
                    ) from None
                raise DestinationError(
                    f"cannot create the writer lock: {exc.strerror or exc}", path=str(lock)
                ) from None
            self._lock_created = not existed
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise DatasetExistsError(
                    f"{root}: another writer holds {LOCK_NAME}; wait for it to finish"
                ) from None
            try:
                same = os.stat(lock, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if not same:  # the lock file was removed while we waited: retry on the new one
                os.close(fd)
                continue
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            self._fd = fd
            return self
        raise DatasetExistsError(f"{root}: could not acquire {LOCK_NAME}")

    @property
    def created(self) -> bool:
        """Whether acquiring the lease created the destination directory."""
        return self._created

    def release(self, *, cleanup: bool = False) -> None:
        if self._fd is None:
            return
        try:
            if cleanup and (self._created or self._lock_created):
                with contextlib.suppress(OSError):
                    (self.root / LOCK_NAME).unlink()
                    if self._created and not any(self.root.iterdir()):
                        self.root.rmdir()
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> WriterLease:
        return self.acquire()

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.release(cleanup=exc_type is not None)


def destination_path(exc: OSError, root: Path) -> str | None:
    """The path of an OS error raised while writing under ``root`` (None if elsewhere)."""
    for name in (exc.filename, exc.filename2):
        if name is None:
            continue
        p = Path(os.fsdecode(name)).absolute()
        if p == root.absolute() or root.absolute() in p.parents:
            return str(p)
    return None


def remove_tree(path: Path, keep: set[str] | None = None) -> None:
    """Remove ``path`` (never following a symlink), or only its entries not in ``keep``."""
    if path.is_symlink() or not path.exists():
        if path.is_symlink():
            path.unlink()
        return
    if keep is None:
        shutil.rmtree(path)
        return
    for p in path.iterdir():
        if p.name in keep:
            continue
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        else:
            p.unlink()


def remove_stale(root: Path, keep: set[str], *, trees: tuple[str, ...] = ()) -> None:
    """Remove files under the split directories that the new manifest does not list
    (old shards, temp files of killed writers) and temp files of metadata; with
    ``trees`` (a LeRobot folder's ``data``, ``meta``, ``videos``), also every unlisted
    file anywhere below those folders, and the folders left empty."""
    for top in trees:
        d = root / top
        if not d.is_dir() or d.is_symlink():
            continue
        for p in sorted(d.rglob("*"), reverse=True):  # files before their folders
            if p.relative_to(root).as_posix() in keep:
                continue
            if p.is_symlink() or p.is_file():
                p.unlink()
            elif p.is_dir():
                with contextlib.suppress(OSError):
                    p.rmdir()
        with contextlib.suppress(OSError):
            d.rmdir()
    for split in SPLITS:
        d = root / split
        if not d.is_dir() or d.is_symlink():
            continue
        for p in d.iterdir():
            rel = f"{split}/{p.name}"
            if rel in keep:
                continue
            if p.is_symlink() or p.is_file():
                p.unlink()
        with contextlib.suppress(OSError):
            if not any(d.iterdir()):
                d.rmdir()
    for p in root.iterdir():
        if p.name.startswith(".") and ".tmp-" in p.name and (p.is_file() or p.is_symlink()):
            p.unlink()


def staging_dir(root: Path, fingerprint: str) -> Path:
    """The staging namespace of the run with ``fingerprint`` under ``root``."""
    return root / STAGING_NAME / fingerprint[:32]


class Journal:
    """Append-only record of the shards a run has staged (one JSON line each).

    Lives in the run's staging namespace; the first line names the run
    fingerprint, and an existing journal of the same fingerprint is appended
    to (``keep=True``) rather than truncated.  A torn last line (a kill
    mid-append) is ignored on reading.  The journal only ever *proposes*
    reuse: a shard is reused only if its bytes still match the recorded size
    and SHA-256.
    """

    def __init__(self, directory: Path, fingerprint: str, *, keep: bool) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / JOURNAL_NAME
        self.fingerprint = fingerprint
        header = {"format": JOURNAL_FORMAT, "run_fingerprint": fingerprint}
        existing = keep and _journal_header(self.path) == fingerprint
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_APPEND if existing else os.O_TRUNC)
        self._fd: int | None = os.open(self.path, flags, 0o644)
        if not existing:
            self._append(header)

    def _append(self, obj: Mapping[str, Any]) -> None:
        if self._fd is not None:
            line = json.dumps(obj, sort_keys=True, separators=(",", ":")) + "\n"
            os.write(self._fd, line.encode())

    def record(self, entry: Mapping[str, Any]) -> None:
        self._append(entry)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _journal_lines(path: Path) -> list[Any]:
    try:
        data = read_regular(path)
    except DatasetIntegrityError:
        return []
    out = []
    for line in data.splitlines():
        try:
            out.append(loads_strict(line, what="journal"))
        except ValueError:
            continue
    return out


def _journal_header(path: Path) -> str | None:
    lines = _journal_lines(path)
    if lines and isinstance(lines[0], dict) and lines[0].get("format") == JOURNAL_FORMAT:
        fp = lines[0].get("run_fingerprint")
        return fp if isinstance(fp, str) else None
    return None


def holds_staged(root: Path, fingerprint: str | None = None) -> bool:
    """Whether ``root`` holds the staging journal of the run with ``fingerprint`` (of any
    run when None): work a run left to be resumed."""
    if fingerprint is not None:
        return _journal_header(staging_dir(root, fingerprint) / JOURNAL_NAME) == fingerprint
    journals = (root / STAGING_NAME).glob(f"*/{JOURNAL_NAME}")
    return any(_journal_header(p) is not None for p in journals)


def changed_paths(old: Any, new: Any, where: str = "", *, one_sided: bool = True) -> list[str]:
    """Dotted paths at which two run descriptions differ (a whole object when one side
    lacks it; such paths are left out with ``one_sided=False``)."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        out: list[str] = []
        for k in sorted(set(old) | set(new), key=str):
            path = f"{where}.{k}" if where else str(k)
            if k not in old or k not in new:
                if one_sided:
                    out.append(path)
            else:
                out.extend(changed_paths(old[k], new[k], path, one_sided=one_sided))
        return out
    return [] if old == new else [where or "run"]


def _why_different(root: Path, run: Mapping[str, Any] | None) -> str:
    """What changed since the committed run, read from its fingerprint marker."""
    base = "the committed run has a different fingerprint"
    if run is None:
        return base
    try:
        marker = loads_strict(read_regular(root / MARKER_NAME), what=MARKER_NAME)
    except (DatasetIntegrityError, ValueError):
        return base
    old = marker.get("run") if isinstance(marker, dict) else None
    if not isinstance(old, dict):
        return base
    new = json.loads(canonical_json(run))
    sources = changed_sources(old.get("sources"), new.get("sources"))
    changed = [p for p in changed_paths(old, new) if not (sources and p == "sources")]
    parts = [f"changed {first_of(changed, 6)}"] if changed else []
    if sources:  # which ones: the run fingerprint covers every source's bytes
        parts.append(f"changed sources: {first_of(sources, 4)}")
    return f"{base}: {'; '.join(parts)}" if parts else base


def changed_sources(old: Any, new: Any) -> list[str]:
    """Source ids whose fingerprint differs between two run descriptions' ``sources``
    lists (``[{"source_id", "fingerprint"}, ...]``), sorted; one on a side only is
    marked ``(new)`` or ``(gone)``."""

    def by_id(part: Any) -> dict[str, Any]:
        items = part if isinstance(part, list) else []
        return {str(s.get("source_id")): s.get("fingerprint") for s in items if isinstance(s, dict)}

    a, b = by_id(old), by_id(new)
    out = []
    for sid in sorted(set(a) | set(b)):
        if sid not in a:
            out.append(f"{sid} (new)")
        elif sid not in b:
            out.append(f"{sid} (gone)")
        elif a[sid] != b[sid]:
            out.append(sid)
    return out


def _committed_manifest(
    root: Path, rec: Mapping[str, Any], fingerprint: str, run: Mapping[str, Any] | None = None
) -> tuple[dict[str, Any], str]:
    if rec.get("run_fingerprint") != fingerprint:
        return {}, _why_different(root, run)
    pinned = rec.get("output_spec_sha256")
    if not isinstance(pinned, str):
        return {}, "the committed run does not pin its fingerprint marker"
    try:
        marker_bytes = read_regular(root / MARKER_NAME)
        man_bytes = read_regular(root / MANIFEST_NAME)
    except DatasetIntegrityError as exc:
        return {}, str(exc)
    if hashlib.sha256(marker_bytes).hexdigest() != pinned:
        return {}, "the fingerprint marker does not match the commit"
    if hashlib.sha256(man_bytes).hexdigest() != rec.get("manifest_sha256"):
        return {}, "the manifest does not match the commit"
    try:
        marker = loads_strict(marker_bytes, what=MARKER_NAME)
        manifest = loads_strict(man_bytes, what=MANIFEST_NAME)
    except ValueError as exc:
        return {}, str(exc)
    if not isinstance(marker, dict) or marker.get("run_fingerprint") != fingerprint:
        return {}, "the fingerprint marker names a different run"
    return (manifest if isinstance(manifest, dict) else {}), ""


def _committed_entries(
    root: Path, rec: Mapping[str, Any], fingerprint: str, run: Mapping[str, Any] | None = None
) -> tuple[list[Any], str]:
    manifest, why = _committed_manifest(root, rec, fingerprint, run)
    shards = manifest.get("shards")
    return (shards if isinstance(shards, list) else []), why


def committed_manifest(root: Path, fingerprint: str) -> dict[str, Any]:
    """The last committed manifest of ``root`` (the current commit, or the ``previous``
    record of an interrupted publication) when its pinned marker names ``fingerprint`` and
    every checksum holds; ``{}`` otherwise (nothing to reuse)."""
    try:
        commit, _ = read_commit(root)
    except DatasetIntegrityError:
        return {}
    if commit is None:
        return {}
    last = commit if commit.get("state") == "committed" else commit.get("previous")
    if not isinstance(last, dict):
        return {}
    return _committed_manifest(root, last, fingerprint)[0]


def reusable_entries(
    root: Path, fingerprint: str, run: Mapping[str, Any] | None = None
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]], list[str]]:
    """Shard records a resumed run with ``fingerprint`` may reuse, by relative path.

    ``run`` is the run description the fingerprint hashes; when the committed
    run differs, the note names the parts that changed (``code.registered...``
    for a plugin's source, ``strategy.define.x`` for a metric, ...).

    Returns
    -------
    committed : dict
        Entries of the last committed manifest (the current commit, or the
        ``previous`` record of an interrupted publication) when its pinned
        marker names the same fingerprint.
    staged : dict
        Records of the staging journal of a run with the same fingerprint
        (the shard may still be staged or already moved into place).
    notes : list of str
        Why other metadata was not trusted.
    """
    notes: list[str] = []
    committed: dict[str, dict[str, Any]] = {}
    try:
        commit, _ = read_commit(root)
    except DatasetIntegrityError as exc:
        commit = None
        notes.append(str(exc))
    if commit is not None:
        last = commit if commit.get("state") == "committed" else commit.get("previous")
        if isinstance(last, dict):
            entries, why = _committed_entries(root, last, fingerprint, run)
            if why:
                notes.append(why)
            for e in entries:
                if isinstance(e, dict) and isinstance(e.get("path"), str):
                    committed[e["path"]] = e
    staged: dict[str, dict[str, Any]] = {}
    path = staging_dir(root, fingerprint) / JOURNAL_NAME
    if _journal_header(path) == fingerprint:
        for e in _journal_lines(path)[1:]:
            if isinstance(e, dict) and isinstance(e.get("path"), str):
                staged[e["path"]] = e
    others = staged_by_others(root, fingerprint)
    if commit is None and staged:
        notes.append(
            f"no committed dataset to take shards from; {len(staged)} staged by an earlier "
            "attempt of this run"
        )
    elif commit is None:
        by = " by this run" if others else ""
        notes.append(f"nothing committed or staged{by} there: every shard is written afresh")
    if others:
        notes.append(
            f"staged work of a different run found there ({first_of(sorted(others), 2)}; "
            f"{sum(others.values())} files) is not reused; this run deletes it when it commits"
        )
    return committed, staged, notes


def staged_by_others(root: Path, fingerprint: str) -> dict[str, int]:
    """Staging folders under ``root`` that a run other than ``fingerprint`` left (their
    journal names another fingerprint), by the first 12 hex digits of that run's
    fingerprint: how many files each holds (its journal included)."""
    out: dict[str, int] = {}
    for journal in sorted((root / STAGING_NAME).glob(f"*/{JOURNAL_NAME}")):
        fp = _journal_header(journal)
        if fp is not None and fp != fingerprint:
            n = sum(1 for p in journal.parent.rglob("*") if p.is_file())
            out[f"run {fp[:12]}"] = out.get(f"run {fp[:12]}", 0) + n
    return out


def shard_matches(root: Path, entry: Mapping[str, Any]) -> bool:
    """Whether the file at ``entry["path"]`` is a regular file of the recorded size and SHA-256."""
    path = root / entry["path"]
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode) or st.st_size != entry.get("size"):
        return False
    try:
        data = read_regular(path)
    except DatasetIntegrityError:
        return False
    return len(data) == entry.get("size") and hashlib.sha256(data).hexdigest() == entry.get(
        "sha256"
    )


def fsync_paths(paths: list[Path]) -> None:
    """``fsync`` files and directories (best effort on filesystems that refuse it).

    The calls run concurrently (``fsync`` releases the GIL, and a journaling
    filesystem commits concurrent requests together: several times faster
    than one after another for a run's shards); all have returned when this does.
    """
    if len(paths) <= 1:
        for p in paths:
            _fsync_one(p)
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(_FSYNC_THREADS, len(paths))) as pool:
        for _ in pool.map(_fsync_one, paths):
            pass


_FSYNC_THREADS = 16


def make_durable(paths: list[Path], anchor: Path) -> str:
    """Every byte written to ``paths`` (files and directories) on disk when this returns.

    One ``syncfs`` of ``anchor``'s filesystem when every path's folder lies on it and the
    kernel reports write-back errors from it (Linux >= 5.8): measured 0.26x the wall time
    of per-file ``fsync`` for a run's 370 shards (``bench/bench_sync.py``).  Else
    :func:`fsync_paths` (the same guarantee, one call per path).

    Returns
    -------
    str
        ``"syncfs"`` or ``"fsync"``: how the paths were made durable.
    """
    if paths and _syncfs_covers(paths, anchor):
        try:
            syncfs_path(anchor)
            return "syncfs"
        except OSError:
            pass  # an error here may be the filesystem's: the per-file calls report their own
    fsync_paths(paths)
    return "fsync"


def _syncfs_covers(paths: list[Path], anchor: Path) -> bool:
    """Whether one ``syncfs`` of ``anchor`` covers ``paths``: Linux >= 5.8 (earlier kernels
    return 0 whatever the write-back did) and every path's folder on ``anchor``'s device."""
    import platform

    if not sys.platform.startswith("linux"):
        return False
    try:
        major, minor = (int(x) for x in platform.release().split(".")[:2])
        dev = os.stat(anchor).st_dev
        folders = {p if p.is_dir() else p.parent for p in paths}
        return (major, minor) >= (5, 8) and all(os.stat(f).st_dev == dev for f in folders)
    except (OSError, ValueError):
        return False


def syncfs_path(p: Path) -> None:
    """``syncfs(2)`` of the filesystem holding ``p``: every dirty page and inode of it
    written back (Linux only; the standard library has no wrapper, so libc's is called).

    Raises
    ------
    OSError
        From ``open`` or ``syncfs`` (Linux >= 5.8 reports write-back errors), or where the
        C library has no ``syncfs``.
    """
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if not hasattr(libc, "syncfs"):
        raise OSError("syncfs is not available on this platform")
    fd = os.open(p, os.O_RDONLY | (os.O_DIRECTORY if p.is_dir() else 0))
    try:
        if _syncfs(libc, fd) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), str(p))
    finally:
        os.close(fd)


def _syncfs(libc: Any, fd: int) -> int:
    """libc's ``syncfs(fd)`` (one place, so a test can record the calls)."""
    return int(libc.syncfs(fd))


def fsync_file(p: Path) -> None:
    """``fsync`` one file or directory.

    Raises
    ------
    OSError
        From ``open`` or ``fsync`` (see :func:`fsync_paths` for the best-effort form).
    """
    fd = os.open(p, os.O_RDONLY | (os.O_DIRECTORY if p.is_dir() else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_one(p: Path) -> None:
    with contextlib.suppress(OSError):
        fsync_file(p)
