"""geodetic_to_ecef against pymap3d, and bit for bit against the whole-grid formula."""

from __future__ import annotations

import numpy as np
import pymap3d
from dsl_support import SCHEMA, make_buf, random_values
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from kuration.contracts.buffer import WindowBatch
from kuration.extend import compile_metric
from kuration.metrics.dsl.frame import Frame
from kuration.metrics.dsl.kernels import (
    _RADIANS,
    _bearing,
    geodetic_heading,
    geodetic_pairs,
    geodetic_speed,
    geodetic_to_ecef,
    heading,
    speed,
)

_A, _F = 6378137.0, 1.0 / 298.257223563
_E2 = _F * (2.0 - _F)


def _whole_grid(pos: np.ndarray, alt_factor: float | None) -> np.ndarray:
    """The closed form with every sine and cosine taken over the whole grid (NaN included)."""
    lat, lon = np.radians(pos[..., 0]), np.radians(pos[..., 1])
    slat, clat = np.sin(lat), np.cos(lat)
    n = _A / np.sqrt(1.0 - _E2 * slat * slat)
    h = pos[..., 2] * alt_factor if pos.shape[-1] == 3 and alt_factor is not None else 0.0
    r = (n + h) * clat if pos.shape[-1] == 3 and alt_factor is not None else n * clat
    z = (
        (n * (1.0 - _E2) + h) * slat
        if pos.shape[-1] == 3 and alt_factor is not None
        else (n * (1.0 - _E2) * slat)
    )
    return np.stack([r * np.cos(lon), r * np.sin(lon), z], axis=-1)


_coord = st.one_of(st.floats(-90, 90), st.just(np.nan))


@settings(max_examples=100, deadline=None)
@given(
    pos=hnp.arrays(
        np.float64,
        st.tuples(st.integers(1, 40), st.integers(1, 6), st.integers(2, 3)),
        elements=_coord,
    ),
    alt=st.sampled_from([None, 1.0, 0.3048]),
)
def test_geodetic_to_ecef_bitwise_whole_grid(pos: np.ndarray, alt: float | None) -> None:
    got = geodetic_to_ecef(pos, alt)
    want = _whole_grid(pos, alt)
    np.testing.assert_array_equal(got, want)  # NaN where NaN, identical bits elsewhere


def test_geodetic_to_ecef_matches_pymap3d() -> None:
    rng = np.random.default_rng(0)
    pos = np.stack(
        [rng.uniform(-90, 90, 500), rng.uniform(-180, 180, 500), rng.uniform(-100, 12000, 500)], -1
    )
    pos[rng.random(500) < 0.4, 0] = np.nan
    x, y, z = pymap3d.geodetic2ecef(pos[:, 0], pos[:, 1], pos[:, 2])
    np.testing.assert_allclose(geodetic_to_ecef(pos, 1.0), np.stack([x, y, z], -1), atol=1e-6)


@settings(max_examples=100, deadline=None)
@given(
    pos=hnp.arrays(
        np.float64,
        st.tuples(st.integers(1, 30), st.integers(0, 5), st.integers(2, 3)),
        elements=st.one_of(st.floats(-90, 90), st.just(np.nan)),
    ),
    alt=st.sampled_from([None, 1.0, 0.3048]),
    hz=st.sampled_from([1.0, 16.0, 0.2]),
    max_rate=st.sampled_from([None, 400.0, 1e-3]),
    whole=st.booleans(),
)
def test_geodetic_speed_bitwise_chain(
    pos: np.ndarray, alt: float | None, hz: float, max_rate: float | None, whole: bool
) -> None:
    """The pairwise speed is the whole-grid chain's (convert, difference, norm, clamp) bit
    for bit, for whole samples (NaN in every coordinate at once) and partly missing ones."""
    if whole:  # missing samples miss every coordinate: the pairwise path
        pos[np.isnan(pos).any(axis=-1)] = np.nan
    got = geodetic_speed(pos, alt, hz, max_rate)
    want = speed(geodetic_to_ecef(pos, alt), hz, max_rate)
    assert got.shape == want.shape == (*pos.shape[:2], 1)
    assert got.tobytes() == want.tobytes()


@settings(max_examples=150, deadline=None)
@given(
    pos=hnp.arrays(
        np.float64,
        st.tuples(st.integers(1, 30), st.integers(0, 5), st.integers(2, 3)),
        elements=st.one_of(st.floats(-90, 90), st.just(np.nan)),
    ),
    alt=st.sampled_from([None, 1.0, 0.3048]),
)
def test_geodetic_heading_bitwise_whole_grid(pos: np.ndarray, alt: float | None) -> None:
    """The pairwise heading, reusing the ECEF conversion's sines and cosines, is the
    whole-grid ``heading`` (pymap3d's ecef2enuv over every cell) bit for bit; repeated
    drawn values make standing still (NaN) common."""
    pos[np.isnan(pos).any(axis=-1)] = np.nan
    pairs = geodetic_pairs(pos, alt)
    assert pairs is not None
    got = geodetic_heading(pairs)
    want = heading(geodetic_to_ecef(pos, alt), pos)
    assert got.shape == want.shape == (*pos.shape[:2], 1)
    # identical bits, zeros' signs included; a NaN's sign bit (which ufunc made it) is not a value
    assert _nan_canon(got).tobytes() == _nan_canon(want).tobytes()
    # the shared pairs give the speed its own path gives
    assert geodetic_speed(pos, None, 2.0, None, pairs).tobytes() == (
        geodetic_speed(pos, alt, 2.0, None).tobytes()
    )


def _nan_canon(x: np.ndarray) -> np.ndarray:
    return np.where(np.isnan(x), np.nan, x)


def test_geodetic_pairs_refuses_partly_missing_samples() -> None:
    pos = np.array([[[10.0, 20.0]], [[np.nan, 21.0]], [[11.0, 22.0]]])
    assert geodetic_pairs(pos, None) is None
    assert geodetic_pairs(np.ones((1, 3, 1, 2)), None) is None  # another rank (a window axis)


def test_speed_and_heading_of_one_position_convert_it_once() -> None:
    """A program reading ``speed`` and ``heading`` of the same geodetic field shares one
    conversion (the frame's cached pairs) and never builds the whole-grid ECEF array, with
    the values each metric gives alone."""
    rng = np.random.default_rng(3)
    vals = random_values(rng, 40, 3)
    present = rng.random((40, 3)) < 0.7
    buf = make_buf(vals, present)
    exprs = ["field:geo | speed | p90", "field:geo | heading | angle_delta | abs | max"]
    metrics = [compile_metric(e, SCHEMA) for e in exprs]
    frame = Frame(WindowBatch.from_buffer(buf))
    together = [m.grid(frame) for m in metrics]
    keys = [k for k in frame.shared if isinstance(k, tuple) and len(k) >= 2]
    assert [k for k in keys if k[1] == "@pairs"] == [(("field:geo",), "@pairs")]
    assert not [k for k in keys if k[1] == "@m"]
    for m, got in zip(metrics, together, strict=True):
        alone = m.grid(Frame(WindowBatch.from_buffer(buf)))
        assert np.isfinite(alone).all()
        assert got.tobytes() == alone.tobytes()


_any = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 5e-324, -5e-324, 1e-300, -1e-300, 1.0, -1.0]),
)


@settings(max_examples=300, deadline=None)
@given(
    east=hnp.arrays(np.float64, st.integers(0, 30), elements=_any),
    north=hnp.arrays(np.float64, 30, elements=_any),
)
def test_bearing_matches_floor_modulo(east: np.ndarray, north: np.ndarray) -> None:
    """The bearing's modulo written as a select has np.mod's bits, signed zeros, tiny
    negative angles (rounding to 360, then 0), infinities and NaN included."""
    north = north[: east.size]
    ang = np.mod(np.degrees(np.arctan2(east, north)), 360.0)
    ang = np.where(ang >= 360.0, 0.0, ang)
    want = np.where((east != 0) | (north != 0), ang, np.nan)
    got = _bearing(east, north)
    assert _nan_canon(got).tobytes() == _nan_canon(want).tobytes()


@settings(max_examples=300, deadline=None)
@given(x=hnp.arrays(np.float64, st.integers(0, 40), elements=_any))
def test_degrees_times_the_constant_is_np_radians(x: np.ndarray) -> None:
    """The conversion multiplies by ``pi / 180`` as numpy's ``radians`` loop does: the same
    bits for any float, signed zeros, subnormals, infinities and NaN included."""
    assert _nan_canon(x * _RADIANS).tobytes() == _nan_canon(np.radians(x)).tobytes()
