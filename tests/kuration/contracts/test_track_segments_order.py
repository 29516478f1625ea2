"""Track-scoped windows come out in canonical key order without sorting the windows:
the entities in tagged-id order, each one's starts rising (hypothesis against the windows
sorted by their key, for integer ids whose numeric and tagged orders differ)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from kuration import Segmenter


@settings(max_examples=60, deadline=None)
@given(
    present=st.integers(1, 6).flatmap(
        lambda e: arrays(bool, st.tuples(st.integers(0, 40), st.just(e)))
    ),
    window=st.integers(1, 8),
    stride=st.integers(1, 5),
    text=st.booleans(),
    data=st.data(),
)
def test_track_windows_in_key_order(
    present: np.ndarray, window: int, stride: int, text: bool, data: st.DataObject
) -> None:
    n_e = present.shape[1]
    ids = data.draw(st.lists(st.integers(0, 200), min_size=n_e, max_size=n_e, unique=True))
    roster = [str(i) for i in ids] if text else ids  # int 9 sorts before 10, "int:10" first
    segs = Segmenter(window, stride, scope="track").segments("s", present, roster)
    assert [s.key for s in segs] == sorted(s.key for s in segs)
    assert len({s.key for s in segs}) == len(segs)
    starts = np.arange(0, max(present.shape[0] - window + 1, 0), stride)
    want = {(e, int(s)) for e in range(n_e) for s in starts if present[s : s + window, e].any()}
    tag_of = {s.entity for s in segs}
    assert len(segs) == len(want) and tag_of <= {f"{'str' if text else 'int'}:{i}" for i in ids}
    assert all(s.end_idx - s.start_idx == window and isinstance(s.start_idx, int) for s in segs)
