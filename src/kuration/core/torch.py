"""The PyTorch reader under the path the documentation shows: an alias of
:mod:`kuration.read.torch` (``ShardDataset``, ``FrameDataset``, ``pad_collate``; the
``[torch]`` extra), loaded on first use so ``kuration.core`` never imports torch itself."""

from __future__ import annotations

from ._alias import forward

__getattr__, __dir__ = forward(__name__, "kuration.read.torch")
