"""The numpy-only reader under the path the documentation shows: an alias of
:mod:`kuration.read.loaders` (``open_dataset``, ``iter_shards``, ``shard_entries``,
``read_shard_arrays``...), loaded on first use."""

from __future__ import annotations

from ._alias import forward

__getattr__, __dir__ = forward(__name__, "kuration.read.loaders")
