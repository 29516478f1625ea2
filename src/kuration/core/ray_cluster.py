"""The Ray cluster of the ``ray`` executor: a private one unless the user names another.

A run that names no cluster through kuration (``ray_address``, ``--ray-address``) must
not depend on what else is on the machine.  Ray's own discovery would read
``RAY_ADDRESS``, the last cluster recorded in ``<temp>/ray/ray_current_cluster`` (a dead
one left by another user breaks ``ray.init(num_cpus=...)``) and ``~/.ray/auth_token``.
:func:`start_private` avoids all three: ``address="local"`` (never discovery), a temp
dir of its own (``_temp_dir``), a node address on loopback and a random token that only
this process and the cluster's processes see (``RAY_AUTH_MODE=token`` with
``RAY_AUTH_TOKEN`` in the environment while the cluster runs).  :func:`join` is the
only way to reach an existing cluster, at the address the user gave.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import tempfile
from typing import Any

__all__ = ["PrivateCluster", "join", "start_private"]

# environment variables Ray reads to find a cluster or its token; none of the user's
# reach a private cluster (the ones Ray must see are set while it runs)
_DISCOVERY = ("RAY_ADDRESS", "RAY_AUTH_TOKEN_PATH")
_AUTH = {"RAY_AUTH_MODE": "token", "RAY_USAGE_STATS_ENABLED": "0"}
# the session folder holds Unix sockets (path limit 107 bytes), so the temp root stays short
_MAX_TEMP_ROOT = 48


def _reload_auth() -> None:
    """Make this process re-read Ray's auth mode and token from the environment (Ray
    caches both; without this a token set after ``import ray`` is not used).  Ray releases
    without token authentication have neither hook, and nothing to reload."""
    try:
        # only Ray releases with token authentication have these (ImportError otherwise)
        from ray._raylet import AuthenticationTokenLoader, Config  # type: ignore[attr-defined]
    except ImportError:
        return
    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()


def _temp_root() -> str:
    base = tempfile.gettempdir()
    if len(base) > _MAX_TEMP_ROOT and os.path.isdir("/tmp"):
        base = "/tmp"
    return tempfile.mkdtemp(prefix="kur-ray-", dir=base)


class PrivateCluster:
    """A Ray cluster this process started for itself; :meth:`stop` shuts it down, puts
    back the environment it changed and removes its temp dir.

    Attributes
    ----------
    temp_dir : str
        Ray's temp root for this cluster (sessions, logs, sockets).
    """

    def __init__(self, temp_dir: str, saved: dict[str, str | None]) -> None:
        self.temp_dir = temp_dir
        self._saved = saved

    def stop(self) -> None:
        """Shut the cluster down (idempotent)."""
        import ray

        if ray.is_initialized():
            ray.shutdown()
        saved, self._saved = self._saved, {}
        if saved:
            _restore(saved)
            _reload_auth()
        shutil.rmtree(self.temp_dir, ignore_errors=True)


def _restore(saved: dict[str, str | None]) -> None:
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def start_private(workers: int) -> PrivateCluster:
    """Start a Ray cluster of ``workers`` CPUs for this process alone.

    It reads no ``RAY_ADDRESS``, no ``ray_current_cluster`` file and nothing under
    ``~/.ray``: ``address="local"``, a fresh temp dir, ``127.0.0.1`` as the node address
    and a fresh token (``RAY_AUTH_TOKEN``, kept in the environment until
    :meth:`PrivateCluster.stop`, which restores the user's values).

    Parameters
    ----------
    workers : int
        CPUs the cluster offers (one per task).

    Raises
    ------
    Exception
        Whatever ``ray.init`` raises; the environment and temp dir are restored first.
    """
    import ray

    keys = (*_DISCOVERY, *_AUTH, "RAY_AUTH_TOKEN")
    saved = {k: os.environ.get(k) for k in keys}
    temp_dir = _temp_root()
    for key in _DISCOVERY:
        os.environ.pop(key, None)
    os.environ.update(_AUTH, RAY_AUTH_TOKEN=secrets.token_hex(32))
    try:
        _reload_auth()
        ray.init(
            address="local",
            _temp_dir=temp_dir,
            _node_ip_address="127.0.0.1",
            num_cpus=workers,
            include_dashboard=False,
            log_to_driver=False,
        )
    except BaseException:
        with contextlib.suppress(Exception):
            ray.shutdown()
        _restore(saved)
        _reload_auth()
        shutil.rmtree(temp_dir, ignore_errors=True)
        raise
    # the cluster's processes are started: the user's discovery variables come back
    _restore({k: saved[k] for k in _DISCOVERY})
    return PrivateCluster(temp_dir, {k: saved[k] for k in keys if k not in _DISCOVERY})


def join(address: str) -> Any:
    """Connect to the cluster the user named (``ray_address``; ``"auto"`` is the user's
    choice of Ray's own discovery)."""
    import ray

    return ray.init(address=address, log_to_driver=False)
