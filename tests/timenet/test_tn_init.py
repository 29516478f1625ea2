from __future__ import annotations

import inspect
import subprocess
import sys
import types

import timenet


def test_all_lists_exactly_the_public_names() -> None:
    assert all(hasattr(timenet, n) for n in timenet.__all__)  # loads every lazy name
    public = {
        name
        for name, obj in vars(timenet).items()
        if not name.startswith("_")
        and not isinstance(obj, types.ModuleType)
        and name not in ("annotations", "importlib", "TYPE_CHECKING", "Any")
    }
    assert set(timenet.__all__) == public
    assert sorted(timenet.__all__) == list(timenet.__all__)
    assert len(set(timenet.__all__)) == len(timenet.__all__)


def test_public_names_have_docstrings() -> None:
    for name in timenet.__all__:
        obj = getattr(timenet, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert obj.__doc__, name


def test_errors_mix_in_builtins() -> None:
    assert issubclass(timenet.DatasetNotFoundError, FileNotFoundError)
    assert issubclass(timenet.VersionExistsError, FileExistsError)
    assert issubclass(timenet.RecordNotFoundError, KeyError)
    for name in timenet.__all__:
        obj = getattr(timenet, name)
        if inspect.isclass(obj) and issubclass(obj, Exception):
            assert issubclass(obj, timenet.TimeNetError)


def test_import_does_not_pull_heavy_or_optional_modules() -> None:
    code = (
        "import sys, timenet; "
        "bad = [m for m in ('torch', 'duckdb', 'zarr', 'pint', 's3fs', 'timenet_connectors', "
        "'numpy', 'pyarrow', 'pydantic') "
        "if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_a_submodule_import_does_not_shadow_a_public_name() -> None:
    """``timenet/publish.py`` loaded first (the CLI imports it) leaves ``timenet.publish``
    the function, as the eager imports did."""
    code = (
        "import timenet.cli, timenet, inspect; "
        "print(inspect.isfunction(timenet.publish), timenet.publish.__module__)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.stdout.split() == ["True", "timenet.publish"], res.stdout + res.stderr
