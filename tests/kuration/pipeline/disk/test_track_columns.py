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


@hs.composite
def _tracks_and_intervals(draw: hs.DrawFn) -> tuple:
    """Valid tracks (gaps: sorted runs strictly inside each extent) and intervals on them."""
    tracks, ent, lo, hi = [], [], [], []
    for e in range(draw(hs.integers(1, 6))):
        first = draw(hs.integers(0, 40))
        last = first + draw(hs.integers(0, 40))
        cuts = sorted(
            draw(hs.sets(hs.integers(first + 1, last), max_size=6)) if last > first else []
        )
        gaps = tuple(cuts[: len(cuts) // 2 * 2])
        absent = sum(b - a for a, b in zip(gaps[0::2], gaps[1::2], strict=True))
        tracks.append(TrackExtent(f"e{e}", first, last, last - first + 1 - absent, gaps))
        for _ in range(draw(hs.integers(0, 4))):
            a = draw(hs.integers(first, last))
            ent.append(e), lo.append(a), hi.append(draw(hs.integers(a, last)))
    return tuple(tracks), ent, lo, hi


@given(_tracks_and_intervals())
def test_columns_serve_the_candidate_step_as_the_tuple_does(drawn: tuple) -> None:
    """present_ticks and the candidate table's per-track columns read TrackColumns without
    making a TrackExtent per track, and give what the tuple gives."""
    import numpy as np

    from kuration.selection.candidates import _entity_ids, _first_last
    from kuration.selection.presence import present_ticks

    tracks, ent, lo, hi = drawn
    cols = _columns(tracks)
    args = (np.array(ent, np.int64), np.array(lo, np.int64), np.array(hi, np.int64))
    want = present_ticks(tracks, *args)
    np.testing.assert_array_equal(present_ticks(cols, *args), want)
    brute = [sum(not any(g[0] <= t < g[1] for g in zip(tracks[e].gaps[0::2], tracks[e].gaps[1::2], strict=True))
                 for t in range(a, b + 1)) for e, a, b in zip(ent, lo, hi, strict=True)]  # fmt: skip
    assert want.tolist() == brute
    for got, exp in zip(_first_last(cols), _first_last(tracks), strict=True):
        assert got.dtype == exp.dtype == np.int64 and got.tolist() == exp.tolist()
    assert list(_entity_ids(cols)) == list(_entity_ids(tracks)) == [t.entity_id for t in tracks]
