"""Order statistics of many overlapping tick ranges.

Each range's order statistics come from one of four kernels, picked by how often the
ranges hold each sample (their *coverage*: the ranges' valid samples over the samples
they span together) and by how many of the samples are zero:

* :func:`selected_pairs` (coverage up to :data:`WAVELET_COVERAGE`, at most
  :data:`SELECT_MAX_ZEROS` of the samples zero): every range's valid samples copied into
  one row, shifted by -inf padding so that each range's wanted order statistic falls in
  one column, and the rows partitioned at that column (one ``kth`` for every row, which
  numpy selects with its SIMD quickselect where the CPU has one: half the cost of
  sorting the rows on the ADS-B sample's speed and altitude);
* :func:`sorted_rows` (the same coverage, more zeros): every range's valid samples in one
  row, +inf after them, and the rows sorted with numpy's SIMD sort, which handles many
  ties faster than the quickselect (a turn rate is mostly 0.0).  Both beat a ranking of
  the source at the strides a window is usually cut at (1/2 to 1/12 of its length).
* :class:`WaveletMatrix` (higher coverage, stride 1 or 2 of a long window): the source's
  valid samples ranked once (:func:`rank_index`) and the ranks laid out in a wavelet
  matrix (Claude, Navarro and Ordonez, "The wavelet matrix: an efficient wavelet tree for
  large alphabets", Information Systems 47 (2015) 15-32), which answers "the ``k``-th
  smallest of samples ``[lo, hi)``" in one step per bit of the rank, for every range at
  once, whatever the range's length.  Building it costs about what a sort of the rows at
  coverage 40 costs (``bench/bench_metrics.py``); at stride 1 of 120 ticks it is 5-10x
  cheaper than the rows.
* :func:`sliding_median` (medians of dense grids): one pass of ``bottleneck.move_median``
  (a double heap updated one cell at a time, Hardle and Steiger 1995) over the padded
  (tick, entity) grid.

The results are the samples themselves (an order statistic is a value of the range), so
whatever combines them -- numpy's ``linear`` percentile, the median -- gives bit-identical
results to a sort of each window.  The one exception is a tie of ``0.0`` and ``-0.0``,
whose order a sort leaves as its input had it: the engine keeps sorting every window's
padded samples for a stream holding both (:func:`~kuration.metrics.dsl.reduces.mixed_zeros`).
"""

from __future__ import annotations

from dataclasses import dataclass

import bottleneck
import numpy as np

__all__ = [
    "SELECT_MAX_ZEROS",
    "WAVELET_COVERAGE",
    "RankIndex",
    "Samples",
    "WaveletMatrix",
    "kth_smallest",
    "rank_index",
    "selected_pairs",
    "sliding_median",
    "sorted_rows",
    "tick_samples",
    "wavelet_matrix",
    "worth_selecting",
    "worth_sliding",
    "worth_wavelet",
]

#: Coverage (each sample held by this many ranges on average) above which the wavelet
#: matrix beats sorting every range's row: measured on the ADS-B sample's speed, turn
#: rate and altitude (``bench/bench_metrics.py`` at strides 1-10 of 120 ticks), the two
#: cost the same between coverage 24 and 60 (stride 5 and 2).
WAVELET_COVERAGE = 40

#: Share of zeros in a stream's samples above which :func:`sorted_rows` beats
#: :func:`selected_pairs`: numpy's quickselect slows down on many equal values where its
#: sort does not (ADS-B sample, 120-tick windows at strides 10 and 60: the speed, 12-25 %
#: zeros, selects in 0.65-0.75x the sort's time, the turn rate, 55-62 % zeros, in 1.35-1.65x).
SELECT_MAX_ZEROS = 0.4


@dataclass(frozen=True, eq=False)
class RankIndex:
    """Samples of a source-level stream (those of a span of ticks), ranked once.

    Attributes
    ----------
    values : ndarray, shape (M,), float64
        The valid samples sorted ascending (``values[r]`` is the sample of rank ``r``).
    ranks : ndarray, shape (M,), intp
        Rank of each sample, in the samples' order (tick-major: tick, then entity): a
        permutation of ``0 .. M - 1`` (tied samples get distinct ranks).
    """

    values: np.ndarray
    ranks: np.ndarray


Samples = tuple[np.ndarray, np.ndarray]


def tick_samples(
    x: np.ndarray, valid: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
) -> Samples:
    """The valid samples of ``x`` (N, E, 1), NaN for a missing one, in tick-major order,
    shape (M,), and the index of each tick's first sample, shape (N + 1,): the samples of
    ticks ``[a, b)`` are ``values[first[a]:first[b]]``.  ``valid``: the stream's
    :func:`~kuration.metrics.dsl.reduces.tick_valid` when the caller has it."""
    v = x[..., 0]
    if valid is not None:
        _, idx, first = valid
        return v.reshape(-1)[idx], first
    ok = ~np.isnan(v)
    first = np.zeros(v.shape[0] + 1, dtype=np.intp)
    np.cumsum(ok.sum(axis=1), out=first[1:])
    return v.reshape(-1)[np.flatnonzero(ok)], first  # an index gather beats a mask's


def sorted_rows(samples: Samples, starts: np.ndarray, length: int) -> tuple[np.ndarray, np.ndarray]:
    """The valid samples of each tick range ``[start, start + length)``, sorted.

    Parameters
    ----------
    samples : Samples
        From :func:`tick_samples`.
    starts : ndarray, shape (Q,), int64
        First tick of each range; ``start + length <= N``.
    length : int
        Ticks per range, at least 0.

    Returns
    -------
    rows : ndarray, shape (Q, W), float64
        Row ``q`` holds range ``q``'s ``n[q]`` valid samples ascending, then +inf; ``W`` is
        the largest ``n``.
    n : ndarray, shape (Q,), intp
        Valid samples of each range.
    """
    vals, first = samples
    a = first[starts]
    n = first[starts + length] - a
    width = int(n.max(initial=0))
    if width == 0:
        return np.zeros((starts.size, 0)), n
    # each row is a contiguous run of the samples: copy runs of a padded copy, not an index
    padded = np.concatenate([vals, np.full(width, np.inf)])
    # every run of ``width`` samples, as a strided view (the constructor, a few times
    # cheaper a call than sliding_window_view), then the ranges' runs copied out
    runs = np.ndarray(
        (vals.size + 1, width), dtype=padded.dtype, buffer=padded, strides=(padded.itemsize,) * 2
    )
    rows = runs[a]
    np.copyto(rows, np.inf, where=np.arange(width) >= n[:, None])
    rows.sort(axis=1)
    return rows, n


def worth_selecting(values: np.ndarray) -> bool:
    """Whether :func:`selected_pairs` is cheaper than :func:`sorted_rows` for ranges of
    ``values`` (M,), the samples they span (see :data:`SELECT_MAX_ZEROS`)."""
    return bool(np.count_nonzero(values == 0) <= SELECT_MAX_ZEROS * values.size)


def selected_pairs(
    samples: Samples, starts: np.ndarray, length: int, i0: np.ndarray, i1: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The ``i0``-th and ``i1``-th smallest valid samples of each tick range
    ``[start, start + length)``, by one partition of the ranges' rows.

    Row ``q`` holds ``d - i0[q]`` times -inf (``d`` the largest ``i0``), the range's valid
    samples, then +inf: its ``i0[q]``-th smallest sample has rank ``d`` in the row, so
    ``numpy.partition`` at the single index ``d`` selects every range's at once, and the
    next one up is the least entry after column ``d``.  The results are samples of the
    ranges, bit for bit (``0.0`` and ``-0.0`` tie: which one comes out then depends on the
    rows' order, as in a sort).

    Parameters
    ----------
    samples : Samples
        From :func:`tick_samples`.
    starts : ndarray, shape (Q,), int64
        First tick of each range; ``start + length <= N``; every range holds a sample.
    length : int
        Ticks per range.
    i0, i1 : ndarray, shape (Q,), integer
        ``0 <= i0 <= i1 <= i0 + 1`` and ``i1 <`` the range's valid count.

    Returns
    -------
    a, b : ndarray, shape (Q,), float64
        The ``i0``-th and the ``i1``-th smallest.
    """
    vals, first = samples
    if starts.size == 0:
        return np.zeros(0, vals.dtype), np.zeros(0, vals.dtype)
    lo = first[starts]
    n = first[starts + length] - lo
    i0 = np.asarray(i0, dtype=np.intp)
    d = int(i0.max())
    shift = d - i0
    end = shift + n
    width = int(end.max()) + 1  # at least one column after ``d``
    # every run of ``width`` entries of the padded samples, as a strided view; row q starts
    # ``shift[q]`` entries before the range's first sample (those become -inf)
    padded = np.concatenate([np.zeros(d, vals.dtype), vals, np.zeros(width, vals.dtype)])
    size = padded.itemsize
    runs = np.ndarray(
        (padded.size - width + 1, width), dtype=padded.dtype, buffer=padded, strides=(size, size)
    )
    rows = runs[lo + i0]
    # the -inf fill touches the columns before the largest shift only, the +inf fill those
    # from the least end on (at p90 or the median, well under the whole row)
    left, right = int(shift.max()), int(end.min())
    np.copyto(rows[:, :left], -np.inf, where=np.arange(left) < shift[:, None])
    np.copyto(rows[:, right:], np.inf, where=np.arange(right, width) >= end[:, None])
    rows.partition(d, axis=1)
    a = rows[:, d]
    return a, np.where(np.asarray(i1) > i0, rows[:, d + 1 :].min(axis=1), a)


def rank_index(values: np.ndarray) -> RankIndex:
    """Rank ``values`` (M,), float64 without NaN (the samples of :func:`tick_samples`).

    numpy's default sort kind is used whatever the ties: with its SIMD argsort a stream
    that is mostly 0.0 (a turn rate) sorts faster than with timsort, which it needed before.
    """
    order = np.argsort(values)
    ranks = np.empty(values.size, dtype=np.intp)
    ranks[order] = np.arange(values.size, dtype=np.intp)
    return RankIndex(values[order], ranks)


@dataclass(frozen=True, eq=False)
class WaveletMatrix:
    """A permutation of ``0 .. M - 1`` (the ranks of :class:`RankIndex`) as a wavelet matrix.

    Level ``l`` (0 the top) looks at bit ``B - 1 - l`` of every rank, the ranks in the
    order the levels above left them: those whose bits above were 0 first, stably.

    Attributes
    ----------
    zeros : ndarray, shape (B, M + 1), int32 or int64
        ``zeros[l, i]``: how many of level ``l``'s first ``i`` entries have a 0 bit.
    n_zeros : ndarray, shape (B,), int64
        ``zeros[l, M]``: where level ``l``'s 1 bits begin on the level below.
    """

    zeros: np.ndarray
    n_zeros: np.ndarray

    @property
    def levels(self) -> int:
        return int(self.zeros.shape[0])


def wavelet_matrix(ranks: np.ndarray) -> WaveletMatrix:
    """Lay out ``ranks`` (M,), a permutation of ``0 .. M - 1``, as a :class:`WaveletMatrix`."""
    m = int(ranks.size)
    levels = max((m - 1).bit_length(), 1)
    dtype = np.int32 if m < 2**31 else np.int64
    zeros = np.zeros((levels, m + 1), dtype=dtype)
    n_zeros = np.zeros(levels, dtype=np.int64)
    cur = ranks.astype(dtype)
    pos = np.arange(m, dtype=dtype)
    for lev in range(levels):
        is_zero = np.bitwise_and(cur, 1 << (levels - 1 - lev)) == 0
        np.cumsum(is_zero, out=zeros[lev, 1:])
        nz = zeros[lev, m]
        n_zeros[lev] = nz
        if lev + 1 < levels:  # stable partition, 0 bits first, by scattering (a mask's
            before = zeros[lev, :-1]  # compress of random bits is twice as slow)
            dest = np.where(is_zero, before, (pos + nz) - before)
            nxt = np.empty_like(cur)
            nxt[dest] = cur
            cur = nxt
    return WaveletMatrix(zeros, n_zeros)


def worth_wavelet(window_samples: int, spanned: int) -> bool:
    """Whether ranges holding ``window_samples`` valid samples in all, among ``spanned``
    samples that they span together, are cheaper from a :class:`WaveletMatrix` than from
    :func:`sorted_rows` (see :data:`WAVELET_COVERAGE`)."""
    return window_samples > WAVELET_COVERAGE * max(spanned, 1)


def kth_smallest(wm: WaveletMatrix, lo: np.ndarray, hi: np.ndarray, k: np.ndarray) -> np.ndarray:
    """The ``k``-th smallest (0-based) of entries ``[lo, hi)`` of the permutation ``wm`` holds.

    Parameters
    ----------
    wm : WaveletMatrix
    lo, hi : ndarray, shape (Q,), integer
        Entry ranges, ``0 <= lo < hi <= M``.
    k : ndarray, shape (Q,), integer
        ``0 <= k < hi - lo``.

    Returns
    -------
    ndarray, shape (Q,), int64
        The entries (ranks) themselves.
    """
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    k = np.asarray(k, dtype=np.int64)
    out = np.zeros(k.shape, dtype=np.int64)
    for lev in range(wm.levels):
        row, nz = wm.zeros[lev], wm.n_zeros[lev]
        z_lo, z_hi = row[lo], row[hi]
        zeros_in = z_hi - z_lo
        one = k >= zeros_in  # the answer's bit here is 1: skip the range's 0 bits
        k = np.where(one, k - zeros_in, k)
        lo = np.where(one, lo - z_lo + nz, z_lo)
        hi = np.where(one, hi - z_hi + nz, z_hi)
        out = (out << 1) | one
    return out


def worth_sliding(step: int, window_ticks: int) -> bool:
    """Whether one sliding median over every grid cell beats :func:`sorted_rows` (or the
    wavelet matrix): the sliding pass costs the same at any stride, the rows grow with the
    windows' overlap; on the ADS-B sample (altitude and speed medians, 120-tick windows)
    they break even between strides 7 and 8, so the sliding pass takes strides up to a
    16th of the window."""
    return step > 0 and 16 * step <= window_ticks


def sliding_median(x: np.ndarray, starts: np.ndarray, length: int) -> np.ndarray:
    """numpy's median of the valid samples of each tick range ``[start, start + length)``.

    ``bottleneck.move_median`` over the grid's cells in tick-major order: a range of
    ``length`` ticks is ``length * E`` consecutive cells, NaN cells are skipped, and a range
    with no valid sample gives NaN.  The median of an even count is the mean of the two
    middle samples, ``(a + b) / 2``, as numpy computes it.  The two middle samples of a
    range holding both 0.0 and -0.0 may come in either order; the caller keeps such a
    stream on the per-window sort (:func:`~kuration.metrics.dsl.reduces.mixed_zeros`).

    Parameters
    ----------
    x : ndarray, shape (N, E, 1), float64
        A source-level stream, NaN where a sample is missing.
    starts : ndarray, shape (Q,), int64
        First tick of each range; ``start + length <= N``.
    length : int
        Ticks per range, at least 1.

    Returns
    -------
    ndarray, shape (Q,), float64
    """
    n, e = x.shape[0], x.shape[1]
    if starts.size == 0:
        return np.zeros(0)
    cells = np.ascontiguousarray(x[..., 0], dtype=np.float64).reshape(-1)
    width = length * e
    first_end = int(starts.min()) * e + width  # nothing before the first range's end
    moved = bottleneck.move_median(cells[first_end - width : n * e], width, min_count=1)
    return moved[(starts + length) * e - first_end + width - 1]
