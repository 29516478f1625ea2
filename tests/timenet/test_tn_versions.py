from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from timenet import InvalidRefError, Ref, parse_ref, version_key


def test_parse_ref_forms() -> None:
    assert parse_ref("physionet/ptb-xl") == Ref("physionet", "ptb-xl", None)
    assert parse_ref("physionet/ptb-xl@1.0.3") == Ref("physionet", "ptb-xl", "1.0.3")
    assert str(parse_ref("a/b@2")) == "a/b@2"


@pytest.mark.parametrize(
    "bad", ["", "a", "a/b/c", "a/../b", "../a/b", "a/b@", "a/b@../x", "a /b", "/a/b", "a/.b"]
)
def test_parse_ref_rejects(bad: str) -> None:
    with pytest.raises(InvalidRefError) as info:
        parse_ref(bad)
    assert info.value.ref == bad


def test_version_order() -> None:
    ordered = [
        "draft",
        "0.9",
        "1.0.dev1",
        "1.0a1",
        "1.0b2",
        "1.0rc1",
        "1.0",
        "1.0.post1",
        "1.2",
        "1.10",
        "2024.01.15",
    ]
    shuffled = list(reversed(ordered))
    assert sorted(shuffled, key=version_key) == ordered
    assert version_key("1.0") == version_key("1.0.0")
    assert version_key("v2") == version_key("2")


@given(
    st.lists(st.integers(0, 50), min_size=1, max_size=4),
    st.lists(st.integers(0, 50), min_size=1, max_size=4),
)
def test_release_ordering_matches_tuple_ordering(a: list[int], b: list[int]) -> None:
    def norm(x: list[int]) -> tuple[int, ...]:
        x = list(x)
        while len(x) > 1 and x[-1] == 0:
            x.pop()
        return tuple(x)

    va, vb = ".".join(map(str, a)), ".".join(map(str, b))
    assert (version_key(va) < version_key(vb)) == (norm(a) < norm(b))
