"""Registers a metric that counts the window's entities."""

from __future__ import annotations


def entity_count(buf) -> float:
    return float(len(buf.entity_ids))


def register() -> None:
    from kuration.extend import register_metric

    register_metric("test_plugin_entity_count", clobber=True)(entity_count)
