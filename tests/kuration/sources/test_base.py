"""register_adapter: execution traits declared at registration, built-ins included."""

from __future__ import annotations

import pytest

from kuration.core.traits import declared_traits
from kuration.errors import ExecutionTraitsError
from kuration.sources.base import (
    SOURCE_READER_TRAITS,
    get_adapter,
    register_adapter,
    registered_adapters,
)
from kuration.sources.timeseries import TimeseriesAdapter

BUILT_INS = ("curated", "joined-media", "lerobot", "timenet", "timeseries", "video")


def test_every_built_in_adapter_declares_its_traits() -> None:
    import kuration.read.curated  # noqa: F401  (kuration's exports load lazily: register it)

    assert set(BUILT_INS) <= set(registered_adapters())
    for name in BUILT_INS:
        traits = declared_traits("adapter", name)
        assert traits is not None, name
        assert traits.to_dict() | dict(SOURCE_READER_TRAITS) == traits.to_dict()


def test_register_adapter_validates_traits_before_registering() -> None:
    with pytest.raises(ExecutionTraitsError, match="adapter:bad-traits"):
        register_adapter(
            "bad-traits", TimeseriesAdapter, execution_traits={"scope": "pool", "fusion": "fusible"}
        )
    assert "bad-traits" not in registered_adapters()
    register_adapter("streamy", TimeseriesAdapter, execution_traits={"scope": "source"})
    try:
        assert get_adapter("streamy") is TimeseriesAdapter
        assert declared_traits("adapter", "streamy").scope == "source"
        register_adapter("streamy", TimeseriesAdapter, clobber=True)  # re-registered: no traits
        assert declared_traits("adapter", "streamy") is None
    finally:
        from kuration.sources.base import _ADAPTERS

        _ADAPTERS.unregister("streamy")
