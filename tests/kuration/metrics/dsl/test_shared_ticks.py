"""Per-tick partials computed once per stream (its valid mask, sample index and counts)
have the bits of each reduce computing its own."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from kuration.metrics.dsl import kernels, order_stats, reduces

_values = st.one_of(
    st.floats(-1e6, 1e6),
    st.sampled_from([0.0, -0.0, 1e300, -1e300, 5e-324]),
    st.just(np.nan),
)
_streams = hnp.arrays(
    np.float64,
    st.tuples(st.integers(0, 40), st.integers(0, 9), st.just(1)),
    elements=_values,
)


def _bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


@settings(max_examples=200, deadline=None)
@given(x=_streams)
def test_tick_valid_indexes_every_valid_sample(x: np.ndarray) -> None:
    ok, idx, first = reduces.tick_valid(x)
    want_ok = ~np.isnan(x[..., 0])
    assert _bits(ok) == _bits(want_ok)
    assert _bits(idx) == _bits(np.flatnonzero(want_ok))
    assert first.dtype == np.intp and first.shape == (x.shape[0] + 1,)
    assert _bits(np.diff(first)) == _bits(want_ok.sum(axis=-1))
    assert first[0] == 0 and first[-1] == idx.size


@settings(max_examples=200, deadline=None)
@given(x=_streams)
def test_shared_partials_keep_their_bits(x: np.ndarray) -> None:
    """Sums, moments, samples and entity counts from the shared mask equal those taken
    alone (the formulas as they stood before the mask was shared)."""
    valid = reduces.tick_valid(x)
    alone, shared = reduces.tick_sums(x), reduces.tick_sums(x, valid)
    for a, b in zip(alone, shared, strict=True):
        assert a.dtype == b.dtype and _bits(a) == _bits(b)
    with np.errstate(all="ignore"):
        ok, filled, n, s = alone
        mt = np.divide(s, n, out=np.zeros(s.shape), where=n > 0)
        dev = filled - mt[..., None]
        np.copyto(dev, 0.0, where=~ok)
        want = (n, s, mt, (dev * dev).sum(axis=-1), (filled * filled).sum(axis=-1))
        got = reduces.tick_moments(x, shared)
        lean = reduces.tick_moments(x, shared, squares=False)
    for a, b in zip(want, got, strict=True):
        assert b is not None and _bits(a) == _bits(b)
    assert lean[4] is None
    for a, b in zip(want[:4], lean[:4], strict=True):
        assert _bits(a) == _bits(b)
    for a, b in zip(order_stats.tick_samples(x), order_stats.tick_samples(x, valid), strict=True):
        assert _bits(a) == _bits(b)
    for how in ("count", "mean", "sum", "std", "max"):
        with np.errstate(all="ignore"):
            want_agg = kernels.agg_entities(x, how, valid[0], False)
            got_agg = kernels.agg_entities(x, how, valid[0], False, np.diff(valid[2]))
        assert _bits(want_agg) == _bits(got_agg), how


@settings(max_examples=100, deadline=None)
@given(x=_streams, boolean=st.booleans())
def test_tick_hits_any_is_a_positive_count(x: np.ndarray, boolean: bool) -> None:
    support = ~np.isnan(x[..., 0])
    hits, supp, any_hit = reduces.tick_hits(x, support, boolean)
    v = x[..., 0]
    want = (~np.isnan(v) & (v != 0)) if boolean else ~np.isnan(v)
    assert _bits(any_hit) == _bits(want.any(axis=-1))
    assert _bits(hits) == _bits(want.sum(axis=-1))
    assert _bits(supp) == _bits(support.sum(axis=-1))


def _field_reference(x: np.ndarray, present: np.ndarray) -> np.ndarray:
    """The vector field's masking as a plain formula: a sample is valid when present and
    whole; everything else becomes NaN (returned as is when nothing needs masking)."""
    nan = np.isnan(x)
    missing, partly = nan.all(axis=-1), nan.any(axis=-1)
    ok = present & ~partly
    return np.where(ok[..., None], x, np.nan) if (~ok & ~missing).any() else x


@settings(max_examples=150, deadline=None)
@given(
    data=st.data(),
    shape=st.tuples(st.integers(1, 30), st.integers(1, 6)),
    dims=st.sampled_from(["pos", "pos3"]),
)
def test_vector_field_masks_absent_and_partial_samples(data, shape, dims: str) -> None:
    """Frame.field of a vector keeps present whole samples and makes every absent or partly
    missing one NaN, as the plain formula does (and returns the array itself when the table
    is already NaN wherever a sample is not valid)."""
    from dsl_support import SCHEMA

    from kuration.contracts.buffer import WindowBatch
    from kuration.metrics.dsl.frame import Frame

    d = 2 if dims == "pos" else 3
    x = data.draw(
        hnp.arrays(np.float64, (*shape, d), elements=st.one_of(st.floats(-9, 9), st.just(np.nan)))
    )
    present = data.draw(hnp.arrays(np.bool_, shape))
    batch = WindowBatch(
        values={dims: x},
        present=present,
        entity_ids=tuple(range(shape[1])),
        schema=SCHEMA,
        starts=np.zeros(1, dtype=np.int64),
        length=shape[0],
    )
    got = Frame(batch).field(dims).x
    want = _field_reference(x, present)
    assert _bits(got) == _bits(want)
    assert (got is x) == (want is x)


@settings(max_examples=200, deadline=None)
@given(
    x=hnp.arrays(
        np.float64,
        st.tuples(st.integers(0, 12), st.integers(0, 4), st.integers(1, 3)),
        elements=st.one_of(
            st.floats(-1e308, 1e308),
            st.sampled_from([np.inf, -np.inf, np.nan, 0.0, -0.0]),
        ),
    )
)
def test_finite_drops_exactly_the_samples_holding_an_infinity(x: np.ndarray) -> None:
    """The two-reduction test for an infinity finds every one (and only those): a sample
    with an infinite component becomes all NaN, the stream is returned as is without one."""
    from kuration.metrics.dsl.compile import _finite
    from kuration.metrics.dsl.frame import Stream

    st_in = Stream(x)
    got = _finite(st_in)
    bad = np.isinf(x).any(axis=-1, keepdims=True)
    if not bad.any():
        assert got is st_in
    else:
        assert _bits(got.x) == _bits(np.where(bad, np.nan, x))


def test_window_views_are_read_only_and_equal_the_strided_windows() -> None:
    from dsl_support import SCHEMA
    from numpy.lib.stride_tricks import sliding_window_view

    from kuration.contracts.buffer import WindowBatch

    rng = np.random.default_rng(3)
    x = rng.random((50, 3, 2))
    batch = WindowBatch(
        values={"pos": x},
        present=np.ones((50, 3), dtype=bool),
        entity_ids=(0, 1, 2),
        schema=SCHEMA,
        starts=np.arange(2, 38, 5),
        length=12,
    )
    for offset in (0, 1, 3):
        got = batch.view(x, offset)
        want = np.moveaxis(sliding_window_view(x, 12, axis=0), -1, 1)[2:38:5, offset:]
        assert not got.flags.writeable
        assert got.shape == want.shape and _bits(got) == _bits(want)
