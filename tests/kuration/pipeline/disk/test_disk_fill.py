"""The disk runtime's fill (candidates in a Parquet file, admitted in SQL order) admits,
accounts and decides exactly as the in-memory fill over the same candidates.

Generated candidate tables cover what changes the order and the accounting: tied and
signed-zero priorities, non-finite ones, several spans and entity id types per source,
group labels (none, empty, named), tag sets, tag coverage and group caps; the store gets
them in chunks of sources, and admission pages of a few rows exercise the keyset paging.
"""

from __future__ import annotations

import math
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kuration.pipeline.disk import fill as disk_fill
from kuration.pipeline.disk.candidates import CandidateStore
from kuration.pipeline.disk.fill import fill_on_disk
from kuration.selection.candidates import CandidateTable
from kuration.selection.fill import fill_budgets

PRIORITIES = [-math.inf, math.nan, -0.0, 0.0, 0.5, 0.5, 1.0, 2.0, math.inf]
GROUPS = ["g1", "g2", "", "g3"]
TAGS = [
    frozenset(),
    frozenset({"kind=a"}),
    frozenset({"kind=b", "phase=x"}),
    frozenset({"phase=y"}),
]


@st.composite
def tables(draw) -> CandidateTable:
    n_src = draw(st.integers(1, 5))
    sids = sorted(
        draw(st.sets(st.text("abcxyz", min_size=1, max_size=3), min_size=n_src, max_size=n_src))
    )
    rosters = [
        draw(
            st.lists(
                st.one_of(st.integers(0, 9), st.text("pq", min_size=1, max_size=2)),
                min_size=1,
                max_size=3,
                unique_by=repr,
            )
        )
        for _ in sids
    ]
    rows = []
    for s, roster in enumerate(rosters):
        for e in range(len(roster)):
            for k in range(draw(st.integers(0, 4))):
                first = 10 * k
                rows.append((s, e, k, first, first + draw(st.integers(0, 9))))
    n = len(rows)
    prio = [draw(st.sampled_from(PRIORITIES)) for _ in range(n)]
    group = [draw(st.integers(-1, len(GROUPS) - 1)) for _ in range(n)]
    tags = [draw(st.integers(0, len(TAGS) - 1)) for _ in range(n)]
    cols = np.array(rows, np.int64).reshape(n, 5)
    feats = np.array([[draw(st.sampled_from([0.25, math.nan, -1.0]))] for _ in range(n)]).reshape(
        n, 1
    )
    priority = np.array(prio, np.float64)
    priority[np.isnan(priority)] = -math.inf  # the builder never leaves NaN
    return CandidateTable(
        source_ids=sids,
        entity_ids=rosters,
        source=cols[:, 0],
        entity=cols[:, 1],
        span=cols[:, 2],
        first=cols[:, 3],
        last=cols[:, 4],
        priority=priority,
        feature_names=["f"],
        features=feats,
        groups=GROUPS,
        group=np.array(group, np.int64),
        tag_sets=TAGS,
        tags=np.array(tags, np.int64),
    )


def _chunk(t: CandidateTable, keep: list[int]) -> CandidateTable:
    """The rows of sources ``keep`` (indices, increasing) as a table of those sources."""
    at = np.flatnonzero(np.isin(t.source, keep))
    remap = np.full(len(t.source_ids), -1, np.int64)
    remap[keep] = np.arange(len(keep))
    return CandidateTable(
        source_ids=[t.source_ids[s] for s in keep],
        entity_ids=[t.entity_ids[s] for s in keep],
        source=remap[t.source[at]],
        entity=t.entity[at],
        first=t.first[at],
        last=t.last[at],
        span=t.span[at],
        priority=t.priority[at],
        feature_names=t.feature_names,
        features=t.features[at],
        groups=t.groups,
        group=t.group[at],
        tag_sets=t.tag_sets,
        tags=t.tags[at],
    )


def _key(c) -> tuple:
    feats = tuple((k, None if math.isnan(v) else v) for k, v in sorted(c.features.items()))
    return (
        c.source_id,
        repr(c.entity_id),
        c.entity_index,
        c.first,
        c.last,
        c.priority,
        feats,
        c.span_index,
        c.group,
        c.tags,
    )


def _same_fill(a, b) -> None:
    assert a.budget == b.budget
    for split in a.admitted:
        assert [_key(c) for c in a.admitted[split]] == [_key(c) for c in b.admitted[split]]
        assert [_key(c) for c in a.pools[split]] == [_key(c) for c in b.pools[split]]
        assert dict(a.decisions[split]) == dict(b.decisions[split])
        assert len(a.pools[split]) == len(b.pools[split])


@settings(max_examples=60, deadline=None)
@given(
    table=tables(),
    cuts=st.integers(1, 3),
    page=st.sampled_from([1, 3, 4096]),
    train=st.floats(0.0, 4.0),
    overshoot=st.sampled_from([None, 0.5, 1.5]),
    coverage=st.booleans(),
    names=st.sampled_from([None, ["kind"]]),
    seed=st.integers(0, 3),
)
def test_the_disk_fill_is_the_memory_fill(
    tmp_path_factory, table, cuts, page, train, overshoot, coverage, names, seed
) -> None:
    rng = np.random.default_rng(seed)
    split_of = {s: ("train" if rng.random() < 0.6 else "test") for s in table.source_ids}
    budgets = {"train": train, "test": 1.5}
    kw = dict(
        max_group_overshoot=overshoot, tag_coverage=coverage, tag_names=names, min_tag_frac=0.5
    )
    want = fill_budgets(table, split_of, budgets, 2.0, **kw)
    store = CandidateStore(tmp_path_factory.mktemp("store"), ["f"])
    bounds = np.array_split(np.arange(len(table.source_ids)), cuts)
    for keep in bounds:
        store.append(_chunk(table, keep.tolist()))
    store.close()
    with mock.patch.object(disk_fill, "_FIRST_PAGE", page):
        got = fill_on_disk(store, split_of, budgets, 2.0, **kw)
    _same_fill(want, got)


def _fixed() -> CandidateTable:
    """Two sources, five spans: ties, a non-finite one, two groups and a tag."""
    return CandidateTable(
        source_ids=["s1", "s2"],
        entity_ids=[["a", 7], ["b"]],
        source=np.array([0, 0, 0, 1, 1]),
        entity=np.array([0, 1, 1, 0, 0]),
        span=np.array([0, 0, 1, 0, 1]),
        first=np.array([0, 0, 10, 0, 10]),
        last=np.array([9, 9, 19, 9, 19]),
        priority=np.array([1.0, 2.0, 1.0, -math.inf, 2.0]),
        feature_names=["f"],
        features=np.array([[0.5], [1.0], [math.nan], [2.0], [0.0]]),
        groups=["g1", "g2"],
        group=np.array([0, 0, 0, 1, 1]),
        tag_sets=TAGS,
        tags=np.array([0, 1, 0, 2, 1]),
    )


@pytest.mark.parametrize("overshoot", [None, 1.0])
def test_a_fixed_table_fills_as_in_memory_with_and_without_the_cap(tmp_path, overshoot) -> None:
    """The cap refuses (and the reserve admits) something here, so the comparison above
    is not only of fills that never meet either."""
    table = _fixed()
    split_of = {"s1": "train", "s2": "train"}
    kw = dict(max_group_overshoot=overshoot, tag_coverage=True, min_tag_frac=0.5)
    want = fill_budgets(table, split_of, {"train": 40.0}, 1.0, **kw)
    store = CandidateStore(tmp_path, ["f"])
    store.append(table)
    store.close()
    got = fill_on_disk(store, split_of, {"train": 40.0}, 1.0, **kw)
    _same_fill(want, got)
    counts = got.decisions["train"].counts()
    assert counts.get("tag-reserve") and counts.get("non-finite") == 1
    assert bool(counts.get("group-cap")) == (overshoot is not None)


def test_the_store_folder_goes_with_the_last_view_of_it() -> None:
    """A temporary store's folder is removed once the fill's views of it are gone."""
    import gc

    table = _fixed()
    store = CandidateStore.temporary(["f"])
    store.append(table)
    store.close()
    root = store.root
    fill = fill_on_disk(store, {s: "train" for s in table.source_ids}, {"train": 1.0}, 1.0)
    del store
    gc.collect()
    assert root.exists()  # the pools still read it
    assert len(list(fill.pools["train"])) == len(fill.pools["train"])
    del fill
    gc.collect()
    assert not root.exists()


def test_a_store_being_written_is_not_read(tmp_path) -> None:
    from kuration.errors import PipelineError

    store = CandidateStore(tmp_path, ["f"])
    with pytest.raises(PipelineError, match="still being written"):
        store.read()
