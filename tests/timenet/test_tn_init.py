from __future__ import annotations

import inspect
import subprocess
import sys
import types

import timenet


def test_all_lists_exactly_the_public_names() -> None:
    public = {
        name
        for name, obj in vars(timenet).items()
        if not name.startswith("_")
        and not isinstance(obj, types.ModuleType)
        and name != "annotations"  # from __future__
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
        "bad = [m for m in ('torch', 'duckdb', 'zarr', 'pint', 's3fs', 'timenet_connectors') "
        "if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
