"""The public surface: everything in ``__all__`` exists and every public name is listed."""

from __future__ import annotations

import subprocess
import sys
import types

import kuration


def test_all_is_complete_and_sorted() -> None:
    assert all(hasattr(kuration, n) for n in kuration.__all__)  # loads every lazy name
    public = {
        n
        for n, v in vars(kuration).items()
        if not n.startswith("_")
        and not isinstance(v, types.ModuleType)
        and n not in ("annotations", "importlib", "TYPE_CHECKING", "Any")
    }
    assert public == set(kuration.__all__) - {"__version__"}
    assert set(kuration._LAZY) <= set(kuration.__all__)
    assert list(kuration.__all__) == sorted(kuration.__all__)
    assert set(kuration.__all__) <= set(dir(kuration))


def test_import_is_light() -> None:
    """``import kuration`` loads no pint registry, TimeNet, torch or matplotlib (PEP 562)."""
    code = (
        "import sys, kuration\n"
        "heavy = ('pint', 'timenet', 'torch', 'matplotlib', 'pyarrow', 'numpy')\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & set(heavy)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    code = "from kuration import SchemaSpec, run_job, KurationError; print(run_job.__module__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "kuration.pipeline.api.entry"
