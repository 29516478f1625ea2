"""Strict JSON names where a non-finite number stands, so a job's NaN is found by its key."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kuration.core.jsonio import loads_strict
from kuration.errors import StrictJSONError

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text("abc", max_size=2), inner),
    max_leaves=12,
)


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{"budget": {"train_hours": NaN}}', "NaN at budget.train_hours"),
        ('{"a": [1, {"b": -Infinity}]}', "-Infinity at a[1].b"),
        ("[Infinity, NaN]", "Infinity at [0]"),
        ("NaN", "NaN at (top level)"),
    ],
)
def test_a_non_finite_number_is_named_by_its_key_path(text: str, where: str) -> None:
    msg = f"job.json: non-finite number {where}"
    with pytest.raises(StrictJSONError, match=f"^{re.escape(msg)}$"):
        loads_strict(text, what="job.json")


@given(_JSON)
def test_finite_documents_parse_as_json_does(doc) -> None:
    text = json.dumps(doc)
    assert loads_strict(text) == json.loads(text)
