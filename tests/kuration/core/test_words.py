"""Counted nouns: the singular for one, the plural for any other count (zero included)."""

from __future__ import annotations

from kuration.core.words import count, were


def test_count_and_were_agree_with_the_number() -> None:
    assert [count(n, "shard") for n in (0, 1, 2)] == ["0 shards", "1 shard", "2 shards"]
    assert count(1, "source partition") == "1 source partition"
    assert count(3, "entity", "entities") == "3 entities"
    assert count(1, "entity", "entities") == "1 entity"
    assert [were(n) for n in (0, 1, 2)] == ["were", "was", "were"]
