"""TrackColumns reads as the tuple of TrackExtent it was made from."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as hs

from kuration.errors import PipelineError
from kuration.pipeline.disk.track_columns import TrackColumns
from kuration.pipeline.run.scoring import TrackExtent

_ids = hs.one_of(hs.text(max_size=6), hs.integers(-5, 5))
_gaps = hs.lists(hs.integers(0, 10**6), max_size=6).map(lambda g: tuple(g[: len(g) // 2 * 2]))
_extent = hs.builds(
    TrackExtent, _ids, hs.integers(0, 10**9), hs.integers(0, 10**9), hs.integers(0, 99), _gaps
)


def _columns(tracks: tuple[TrackExtent, ...]) -> TrackColumns:
    return TrackColumns(
        [t.entity_id for t in tracks],
        [t.first for t in tracks],
        [t.last for t in tracks],
        [t.n_present for t in tracks],
        [t.gaps for t in tracks],
    )


@given(hs.lists(_extent, max_size=8).map(tuple))
def test_reads_as_its_tuple(tracks: tuple[TrackExtent, ...]) -> None:
    cols = _columns(tracks)
    assert len(cols) == len(tracks) and tuple(cols) == tracks
    assert cols == tracks and tracks == cols and hash(cols) == hash(tracks)
    assert cols[1:] == tracks[1:] and all(cols[i] == tracks[i] for i in range(-len(tracks), 0))
    assert all(type(x) is int for t in cols for x in (t.first, t.last, t.n_present, *t.gaps))
    if tracks:
        assert cols != tracks[:-1] and cols != (*tracks[:-1], TrackExtent("zz", -1, -1, 0))


def test_no_gaps_reads_as_none_and_columns_must_agree() -> None:
    cols = TrackColumns(["a", "b"], [0, 4], [3, 9], [4, 6])
    assert tuple(cols) == (TrackExtent("a", 0, 3, 4), TrackExtent("b", 4, 9, 6))
    assert cols.nbytes == 8 * (2 + 2 + 2 + 3)
    with pytest.raises(PipelineError, match="different lengths"):
        TrackColumns(["a", "b"], [0], [3, 9], [4, 6])
    with pytest.raises(IndexError):
        cols[2]
