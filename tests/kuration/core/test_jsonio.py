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


_DOCS = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=300),
    lambda inner: st.lists(inner, max_size=40) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=400,
)


@given(_DOCS)
def test_a_document_is_written_as_canonical_json_encodes_it(tmp_path_factory, doc) -> None:
    """dump_json_atomic writes (and hashes) the bytes of json.dumps, however the text is cut
    into writes (here every few characters, and every 64 KB)."""
    import hashlib
    from unittest import mock

    from kuration.core import jsonio

    want = (json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode()
    assert jsonio.canonical_json(doc) == want
    for size in (5, jsonio._WRITE_CHARS):
        path = tmp_path_factory.mktemp("dump") / "doc.json"
        with mock.patch.object(jsonio, "_WRITE_CHARS", size):
            assert jsonio.dump_json_atomic(path, doc) == hashlib.sha256(want).hexdigest()
            assert jsonio.canonical_sha256(doc) == hashlib.sha256(want).hexdigest()
        assert path.read_bytes() == want


def test_a_non_finite_number_is_refused_before_anything_is_written(tmp_path) -> None:
    from kuration.core.jsonio import dump_json_atomic

    with pytest.raises(StrictJSONError, match="non-finite"):
        dump_json_atomic(tmp_path / "doc.json", {"a": [1.0, float("nan")]})
    assert list(tmp_path.iterdir()) == []
