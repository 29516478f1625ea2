"""Plugin discovery against a real installed distribution (tests/plugin_pkg, installed by the test command)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import kuration.core.plugins as plugins
from kuration.extend import registered_metrics
from kuration.metrics.features import _METRICS


@pytest.fixture(autouse=True)
def fresh_discovery():
    for name in ("test_plugin_entity_count", "test_plugin_half"):
        _METRICS.unregister(name)
    plugins._reset_for_tests()
    yield
    plugins._reset_for_tests()


def test_entry_points_are_discovered_once() -> None:
    res = plugins.load_plugins()
    assert {"kur_test_good", "kur_test_flaky"} <= set(res.loaded)
    assert "test_plugin_entity_count" in registered_metrics()
    again = plugins.load_plugins()
    assert again.loaded == res.loaded


def test_a_failing_entry_point_is_rolled_back_and_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUR_TEST_PLUGIN_FAIL", "1")
    with pytest.warns(plugins.PluginWarning, match="kur_test_flaky.*rolled back.*kur plugin-check"):
        res = plugins.load_plugins()
    assert "test_plugin_half" not in registered_metrics()  # registered, then rolled back
    assert "test_plugin_entity_count" in registered_metrics()  # later plugin still loaded
    assert [f.name for f in res.failures] == ["kur_test_flaky"]
    fail = plugins.plugin_failures()[0]
    assert "RuntimeError: flaky plugin asked to fail" in fail.traceback
    marker = plugins.implementation_fingerprints()["failed_entry_points"]
    assert "kur plugin-check" in marker["kur_test_flaky"]


def test_explicit_modules_fail_fast() -> None:
    with pytest.raises(plugins.PluginError, match="no_such_plugin_module"):
        plugins.load_plugins(["no_such_plugin_module"])


def test_entry_point_registrations_can_be_hidden() -> None:
    plugins.load_plugins()
    with plugins.without_entry_point_plugins():
        assert "test_plugin_entity_count" not in registered_metrics()
    assert "test_plugin_entity_count" in registered_metrics()


def test_fingerprints_cover_registered_modules() -> None:
    import kuration.sources.timeseries  # noqa: F401  (kuration's exports load lazily)

    plugins.load_plugins()
    fp = plugins.implementation_fingerprints()
    assert len(fp["modules"]["kur_test_plugin.good"]) == 64
    assert "kuration.sources.timeseries" in fp["modules"]


def test_plugin_check_prints_the_full_error() -> None:
    env = {**os.environ, "KUR_TEST_PLUGIN_FAIL": "1"}
    out = subprocess.run(
        [sys.executable, "-m", "kuration.cli.main", "plugin-check"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert out.returncode == 1
    assert "Traceback" in out.stderr and "flaky plugin asked to fail" in out.stderr
    assert "kur_test_good" in out.stdout
    ok = subprocess.run(
        [sys.executable, "-m", "kuration.cli.main", "plugin-check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert ok.returncode == 0, ok.stderr
