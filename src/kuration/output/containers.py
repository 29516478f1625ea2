"""Shard containers: how a dict of arrays becomes bytes on disk, and back.

Every container writes ``(L, *shape)`` arrays plus the real length
``_n_steps`` in band, and must be byte-deterministic: the same arrays give the
same bytes on every run.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Mapping
from typing import Protocol

import numpy as np

from ..registry import Registry

__all__ = [
    "Container",
    "NpzContainer",
    "get_container",
    "register_container",
    "registered_containers",
]


class Container(Protocol):
    """``suffix`` (with the dot), ``dumps(arrays) -> bytes`` and ``loads(data) -> arrays``."""

    suffix: str

    def dumps(self, arrays: Mapping[str, np.ndarray]) -> bytes: ...

    def loads(self, data: bytes) -> dict[str, np.ndarray]: ...


class NpzContainer:
    """NumPy ``.npz`` written deterministically (fixed zip timestamps, sorted members,
    no pickles); readable with ``numpy.load(allow_pickle=False)``."""

    suffix = ".npz"
    _EPOCH = (1980, 1, 1, 0, 0, 0)

    def dumps(self, arrays: Mapping[str, np.ndarray]) -> bytes:
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for name in sorted(arrays):
                info = zipfile.ZipInfo(f"{name}.npy", date_time=self._EPOCH)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                member = io.BytesIO()
                arr = np.asarray(arrays[name])
                np.lib.format.write_array(
                    member, arr if arr.flags.c_contiguous else arr.copy(), allow_pickle=False
                )
                zf.writestr(info, member.getvalue(), compresslevel=6)
        return buf.getvalue()

    def loads(self, data: bytes) -> dict[str, np.ndarray]:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            return {k: z[k] for k in z.files}


_CONTAINERS: Registry[Container] = Registry("container")


def register_container(name: str, container: Container, *, clobber: bool = False) -> None:
    """Register a shard container under ``name``."""
    _CONTAINERS.register(name, container, clobber=clobber)


def get_container(name: str) -> Container:
    return _CONTAINERS.get(name)


def registered_containers() -> tuple[str, ...]:
    return _CONTAINERS.names()


register_container("npz", NpzContainer())
