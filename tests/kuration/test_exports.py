"""The public surface: ``kuration`` holds the user's API, ``kuration.extend`` the seams.

For each: every ``__all__`` name resolves, every public attribute is in ``__all__``
(nothing leaks), and the two do not overlap.  The names the spec imports from
``kuration`` and the reader paths it shows keep working.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import types

import pytest

import kuration
import kuration.errors
import kuration.extend

# the names the spec's examples import from ``kuration``
SPEC_NAMES = {
    "OutputSpec",
    "Segmenter",
    "inspect_dataset",
    "iter_shards",
    "write_dataset",
    "write_track",
}
# never at the top: engine internals the old surface exported
INTERNALS = {
    "SegmentBatch",
    "StageCheckpoint",
    "estimate_peak",
    "window_digest",
    "PhysicalPlan",
    "run_scorers",
}
MODULE_HELPERS = {"annotations", "TYPE_CHECKING", "Any", "lazy_exports"}


def _public(module: types.ModuleType) -> set[str]:
    return {
        n
        for n, v in vars(module).items()
        if not n.startswith("_") and not isinstance(v, types.ModuleType) and n not in MODULE_HELPERS
    }


@pytest.mark.parametrize("module", [kuration, kuration.extend], ids=lambda m: m.__name__)
def test_all_is_complete_and_nothing_leaks(module: types.ModuleType) -> None:
    assert all(hasattr(module, n) for n in module.__all__)  # loads every lazy name
    assert _public(module) == set(module.__all__) - {"__version__"}
    assert set(module._LAZY) <= set(module.__all__)
    assert list(module.__all__) == sorted(set(module.__all__))
    assert set(module.__all__) <= set(dir(module))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = module.nope


def test_top_level_is_the_users_api() -> None:
    top, ext = set(kuration.__all__), set(kuration.extend.__all__)
    assert top >= SPEC_NAMES
    assert not top & ext
    assert not top & INTERNALS and not ext & INTERNALS
    assert len(top) <= 68  # xarray's top level is 68 names; zarr-python's 36
    # the exception tree: the roots at the top, every class in kuration.errors
    errors = {n for n in kuration.errors.__all__ if n[0].isupper()}
    assert top & errors == {"KurationError", "KurationWarning"}


def test_a_name_the_old_top_level_exported_still_resolves_with_a_warning() -> None:
    from kuration._moved import WHERE
    from kuration.pipeline.disk.checkpoint import StageCheckpoint

    assert set(WHERE).isdisjoint(kuration.__all__)
    with pytest.warns(
        DeprecationWarning, match=r"kuration.pipeline.disk.checkpoint.StageCheckpoint"
    ):
        assert kuration.StageCheckpoint is StageCheckpoint
    with pytest.warns(DeprecationWarning, match=r"kuration.extend.register_scorer"):
        from kuration import register_scorer  # noqa: F401
    assert "StageCheckpoint" not in vars(kuration) and "StageCheckpoint" not in dir(kuration)
    for name, module in WHERE.items():  # each old name is where the warning sends the reader
        assert hasattr(importlib.import_module(module), name), (name, module)


def test_extension_seams_resolve_to_their_home() -> None:
    from kuration.metrics.scorers import register_scorer
    from kuration.sources import InputAdapter

    assert kuration.extend.register_scorer is register_scorer
    assert kuration.extend.InputAdapter is InputAdapter
    for name in kuration.extend.__all__:
        if name.startswith("register_"):
            assert f"registered_{name.removeprefix('register_')}s" in kuration.extend.__all__


def test_every_builtin_method_filter_and_scorer_is_an_operator() -> None:
    ops = set(kuration.extend.registered_operators())
    for names in (
        kuration.extend.registered_methods(),
        kuration.extend.registered_filters(),
        kuration.extend.registered_scorers(),
    ):
        assert set(names) and set(names) <= ops


def test_reader_paths_the_spec_shows() -> None:
    import kuration.read.loaders
    from kuration.core.loaders import iter_shards, open_dataset, read_shard_arrays, shard_entries

    assert iter_shards is kuration.iter_shards
    assert open_dataset is kuration.read.loaders.open_dataset
    assert (shard_entries, read_shard_arrays) == (
        kuration.shard_entries,
        kuration.read_shard_arrays,
    )
    with pytest.raises(ImportError, match="nope"):
        from kuration.core.loaders import nope  # noqa: F401


def test_torch_path_the_spec_shows() -> None:
    pytest.importorskip("torch")
    import kuration.read.torch
    from kuration.core.torch import ShardDataset

    assert ShardDataset is kuration.read.torch.ShardDataset


def test_import_is_light() -> None:
    """``import kuration`` (and ``kuration.extend``) load no pint, TimeNet, torch or numpy."""
    code = (
        "import sys, kuration, kuration.extend, kuration.core.torch\n"
        "heavy = ('pint', 'timenet', 'torch', 'matplotlib', 'pyarrow', 'numpy')\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & set(heavy)))\n"
        "from kuration import SchemaSpec, run_job, KurationError; print(run_job.__module__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:2] == ["[]", "kuration.pipeline.api.entry"]


def test_an_error_class_asked_of_the_top_level_names_kuration_errors() -> None:
    """Error classes added after the surface was trimmed live only in ``kuration.errors``."""
    with pytest.raises(AttributeError, match=r"it is kuration\.errors\.SourceChangedError"):
        _ = kuration.SourceChangedError  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match=r"no attribute 'no_such_name'$"):
        _ = kuration.no_such_name  # type: ignore[attr-defined]
