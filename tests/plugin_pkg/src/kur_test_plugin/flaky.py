"""Registers a metric, then fails when KUR_TEST_PLUGIN_FAIL is set: its registration must be rolled back."""

from __future__ import annotations

import os


def half(buf) -> float:
    return 0.5


def register() -> None:
    from kuration.extend import register_metric

    register_metric("test_plugin_half", clobber=True)(half)
    if os.environ.get("KUR_TEST_PLUGIN_FAIL"):
        raise RuntimeError("flaky plugin asked to fail")
