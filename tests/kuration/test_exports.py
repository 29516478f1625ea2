"""The public surface: everything in ``__all__`` exists and every public name is listed."""

from __future__ import annotations

import types

import kuration


def test_all_is_complete_and_sorted() -> None:
    public = {
        n
        for n, v in vars(kuration).items()
        if not n.startswith("_") and not isinstance(v, types.ModuleType) and n != "annotations"
    }
    assert public == set(kuration.__all__) - {"__version__"}
    assert all(hasattr(kuration, n) for n in kuration.__all__)
    assert list(kuration.__all__) == sorted(kuration.__all__)
