"""Execution traits: validated at registration, so a bad declaration never reaches a plan."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from pydantic import ValidationError

from kuration.core.traits import DEFAULT_TRAITS, declared_traits, traits_of
from kuration.errors import ExecutionTraitsError
from kuration.extend import ExecutionTraits, register_filter, register_metric
from kuration.selection.filters import _FILTERS
from kuration.selection.methods import get_method, register_method
from kuration.selection.methods.base import _METHODS


@pytest.fixture
def cleanup() -> Iterator[list[tuple[str, str]]]:
    names: list[tuple[str, str]] = []
    yield names
    for kind, name in names:
        {"method": _METHODS, "filter": _FILTERS}[kind].unregister(name)


@pytest.mark.parametrize(
    "bad",
    [
        {"scope": "pool", "fusion": "fusible"},  # a pool-wide operator cannot fuse
        {"passes": 2},  # fusible (default) with two passes
        {"state": "pool"},  # fusible with unbounded state
        {"passes": 0, "fusion": "barrier", "scope": "pool"},
        {"scope": "galaxy"},
        {"resources": {"gpu": -1}},
        {"checkpoint": "sometimes"},
        {"unknown_trait": 1},
    ],
)
def test_invalid_traits_raise_at_registration_and_register_nothing(cleanup, bad) -> None:
    with pytest.raises(ExecutionTraitsError) as err:
        register_method("test-bad-traits", get_method("top-k"), execution_traits=bad)
    assert isinstance(err.value, ValueError)
    assert err.value.component == "method:test-bad-traits"
    assert "test-bad-traits" not in _METHODS
    with pytest.raises(ExecutionTraitsError):
        register_metric("test_bad_traits_metric", execution_traits=bad)


def test_declared_traits_are_recorded_and_forgotten_on_clobber(cleanup) -> None:
    cleanup.append(("filter", "test-window-filter"))
    flt = type(_FILTERS.get("finite"))()
    register_filter(
        "test-window-filter", flt, execution_traits={"scope": "window", "shape": "filter"}
    )
    t, declared = traits_of("filter", "test-window-filter")
    assert declared and t.scope == "window" and t.fusion == "fusible"
    # re-registering without traits must not keep the old declaration
    register_filter("test-window-filter", flt, clobber=True)
    t, declared = traits_of("filter", "test-window-filter")
    assert not declared and t == DEFAULT_TRAITS["filter"]


def test_builtins_declare_traits_and_round_trip() -> None:
    for kind, name in [("method", "k-center"), ("method", "top-k"), ("filter", "finite")]:
        t = declared_traits(kind, name)
        assert t is not None, (kind, name)
        assert ExecutionTraits.from_dict(t.to_dict()) == t
    assert declared_traits("method", "k-center").passes == 2  # type: ignore[union-attr]
    assert declared_traits("filter", "predicate").fusion == "barrier"  # type: ignore[union-attr]


def test_traits_are_frozen() -> None:
    t = ExecutionTraits()
    with pytest.raises(ValidationError):  # frozen
        t.passes = 3  # type: ignore[misc]
    assert np.isfinite(t.resources.cpu)
