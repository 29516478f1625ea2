"""VideoAdapter and JoinedMediaAdapter on real footage, and the join rule they share."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kuration import JoinedMediaAdapter, SchemaSpec, VideoAdapter
from kuration.errors import MediaError
from kuration.sources import adapter_from_dict
from kuration.sources.video import match_frames, motion_energy

CARPHONE = {
    "name": "carphone",
    "sample_hz": 30000 / 1001,
    "fields": [{"name": "motion", "kind": "scalar"}],
    "media": {
        "frame": {"shape": [144, 176, 3], "frame_rate": "30000/1001", "time_base": "1/30000"}
    },
}


def test_join_rule_nearest_within_tolerance_and_never_repeated() -> None:
    frames = np.array([0, 10, 20, 50, 51])
    ticks = np.array([-6, 1, 4, 5, 9, 30, 49, 50, 52, 80])
    got = match_frames(ticks, frames, tolerance=5)
    # -6: nothing within 5; 1 and 4 both pick frame 0 (1 is nearer), 5 ties 0/10 -> 0 taken by
    # tick 1, so absent; 9 -> frame 1; 30 none; 49 -> frame 3 (50) but tick 50 is nearer;
    # 52 -> frame 4; 80 none
    assert got.tolist() == [-1, 0, -1, -1, 1, -1, -1, 3, 4, -1]
    assert match_frames(ticks, frames, tolerance=0).tolist() == [-1] * 7 + [3, -1, -1]
    assert match_frames(ticks, np.array([], dtype=np.int64), 5).tolist() == [-1] * 10


def test_video_adapter_one_tick_per_frame(video_file, direct_frames) -> None:
    path = video_file("carphone_pristine.mp4")
    schema = SchemaSpec.from_dict(CARPHONE)
    adapter = adapter_from_dict({"type": "video", "derived": {"motion": "motion_energy"}}, schema)
    assert isinstance(adapter, VideoAdapter)
    table = adapter.read_table(str(path))
    col = table.media["frame"]
    assert (table.k0, table.n_steps, table.entity_ids) == (0, 120, ("camera",))
    assert col.index.tolist() == list(range(120)) and table.present.all()
    assert all(col.refs[i].time == Fraction(i * 1001, 30000) for i in range(120))
    # the derived field against numpy on an independent PyAV decode
    _, gray = direct_frames(path, "gray", (36, 64))
    want = np.abs(np.diff(gray.astype(np.float64), axis=0)).mean(axis=(1, 2, 3))
    np.testing.assert_allclose(table.values["motion"][1:, 0, 0], want, rtol=1e-12)
    assert np.isnan(table.values["motion"][0, 0, 0])
    np.testing.assert_array_equal(motion_energy(gray[:3], gray[0])[0], 0.0)
    ticks = list(adapter.ticks(str(path)))
    assert len(ticks) == 120 and ticks[5].media["frame"] == col.refs[5]
    assert adapter_from_dict(adapter.to_dict(), schema).to_dict() == adapter.to_dict()


def test_video_adapter_follows_timestamps_through_a_gap(
    video_file, remux_with_gap, tmp_path
) -> None:
    src = video_file("carphone_pristine.mp4")
    vfr = remux_with_gap(src, tmp_path / "gap.mp4", after=60 * 1001, gap=5 * 1001)
    schema = SchemaSpec.from_dict(CARPHONE)  # the declared frame rate is the grid
    table = VideoAdapter(schema, derived={"motion": "motion_energy"}).read_table(str(vfr))
    idx = table.media["frame"].index
    assert table.n_steps == 125
    assert idx[:60].tolist() == list(range(60)) and idx[65:].tolist() == list(range(60, 120))
    assert (idx[60:65] == -1).all() and not table.present[60:65].any()
    with pytest.raises(MediaError, match="not the schema's grid rate") as err:
        VideoAdapter(
            SchemaSpec.from_dict(
                {**CARPHONE, "sample_hz": 25.0, "media": {"frame": {"shape": [144, 176, 3]}}}
            ),
            derived={"motion": "motion_energy"},
        ).read_table(str(src))
    assert err.value.uri == str(src)


@pytest.fixture(scope="module")
def bunny_rms(video_file, tmp_path_factory) -> tuple[Path, Path]:
    """bigbuckbunny.mp4 and its audio's RMS envelope per half video-frame interval (50 Hz; the
    25 Hz envelope, one value per frame interval, is next to it as ``bunny_rms25.parquet``),
    computed with PyAV from the file's own 48 kHz 5.1 AAC track: a real series on the video's clock."""
    video = video_file("bigbuckbunny.mp4")
    with av.open(str(video)) as c:
        chunks = [(f.pts, f.to_ndarray()) for f in c.decode(audio=0)]
    start = chunks[0][0]
    samples = np.concatenate([a for _, a in chunks], axis=1)  # (channels, n), planar float
    assert start == 0 and samples.shape[0] == 6
    root = tmp_path_factory.mktemp("bunny")
    for hz, name in ((25, "bunny_rms25.parquet"), (50, "bunny_rms.parquet")):
        hop = 48000 // hz
        n = samples.shape[1] // hop
        rms = np.sqrt((samples[:, : n * hop].reshape(6, n, hop) ** 2).mean(axis=(0, 2)))
        pq.write_table(pa.table({"time": np.arange(n) / hz, "rms": rms}), root / name)
    return root / "bunny_rms.parquet", video


def _bunny_schema(**media) -> SchemaSpec:
    frame = {"shape": [72, 128, 3], "frame_rate": "25", "time_base": "1/12800", **media}
    return SchemaSpec.from_dict(
        {
            "name": "bunny",
            "sample_hz": 50.0,
            "fields": [{"name": "rms", "kind": "scalar"}],
            "media": {"frame": frame},
        }
    )


def test_joined_adapter_pairs_audio_ticks_with_frames(bunny_rms) -> None:
    series, video = bunny_rms
    opts = {"series": {"time_column": "time", "fields": {"rms": "rms"}}, "video": str(video)}
    adapter = JoinedMediaAdapter(_bunny_schema(), **opts)
    table = adapter.read_table(str(series))
    idx = table.media["frame"].index
    assert table.n_steps == 265 and table.present.all()
    # frames every 40 ms, ticks every 20 ms, default tolerance half a tick: even ticks hold
    # frame k/2 exactly, odd ticks none (never the previous frame again)
    assert idx[0::2].tolist() == [*range(132), -1]
    assert (idx[1::2] == -1).all()
    refs = table.media["frame"].refs
    assert all(refs[i].time == Fraction(2 * i, 50) for i in range(132))
    # the video starts 10 ms after the series: within 10 ms every frame finds its tick,
    # within 5 ms none does
    late = JoinedMediaAdapter(_bunny_schema(start_offset="1/100"), tolerance="1/100", **opts)
    assert (late.read_table(str(series)).media["frame"].index >= 0).sum() == 132
    strict = JoinedMediaAdapter(_bunny_schema(start_offset="1/100"), tolerance="1/200", **opts)
    assert (strict.read_table(str(series)).media["frame"].index == -1).all()
    assert len(adapter.fingerprint(str(series))) == 64
    # one RMS value per frame interval (25 Hz): every tick has its own frame
    per_frame = SchemaSpec.from_dict({**_bunny_schema().to_dict(), "sample_hz": 25.0})
    table25 = JoinedMediaAdapter(per_frame, **opts).read_table(
        str(series.with_name("bunny_rms25.parquet"))
    )
    assert table25.n_steps == 132 and table25.media["frame"].index.tolist() == list(range(132))


def test_joined_shards_hold_the_matched_frames_and_zeros_elsewhere(
    bunny_rms, direct_frames, tmp_path
) -> None:
    from kuration import OutputSpec, iter_shards, write_track
    from kuration.contracts.track import track_from_table

    series, video = bunny_rms
    schema = _bunny_schema()
    adapter = JoinedMediaAdapter(
        schema, series={"time_column": "time", "fields": {"rms": "rms"}}, video=str(video)
    )
    table = adapter.read_table(str(series))
    track = track_from_table(table, 0, 0, 59)  # the first 1.2 s: 60 ticks, 30 frames
    spec = OutputSpec.from_dict(
        {
            "shard_length": 40,
            "modalities": {
                "frame": {"dtype": "uint8", "shape": [72, 128, 3], "source": "media:frame"},
                "rms": {"dtype": "float32", "shape": [], "source": "field:rms"},
            },
        }
    )
    entries = write_track(tmp_path, track, spec, schema=schema)
    manifest = {
        "format": "kuration-dataset/1",
        "container": "npz",
        "shard_length": 40,
        "modalities": {k: m.to_dict() for k, m in spec.modalities.items()},
        "shards": [{**e, "path": str(tmp_path / e["path"])} for e in entries],
    }
    shards = list(iter_shards(manifest))
    frame = np.concatenate([s["frame"] for s in shards])
    mask = np.concatenate([s["_present_frame"] for s in shards])
    assert frame.dtype == np.uint8 and frame.shape == (60, 72, 128, 3)
    assert np.concatenate([s["_present"] for s in shards]).all()  # the series is there...
    assert mask.tolist() == [True, False] * 30  # ...a frame only every other tick
    _, direct = direct_frames(video, size=(72, 128))
    np.testing.assert_array_equal(frame[0::2], direct[:30])
    assert not frame[1::2].any()  # absent frames are zeros, never the previous frame


def test_a_joined_source_proves_both_files_in_one_read(bunny_rms, tmp_path: Path) -> None:
    """The series is hashed as it is parsed and the video once per read; the digest is the
    adapter's fingerprint, and a read that finds either file changed is refused."""
    import shutil

    from kuration.errors import SourceChangedError

    series0, video0 = bunny_rms
    series = Path(shutil.copy(series0, tmp_path))
    video = Path(shutil.copy(video0, tmp_path))
    opts = {"series": {"time_column": "time", "fields": {"rms": "rms"}}, "video": str(video)}
    adapter = JoinedMediaAdapter(_bunny_schema(), **opts)
    table, digest = adapter.read_checked(str(series))
    assert digest.fingerprint == adapter.fingerprint(str(series))
    assert table.media["frame"].index[0] == 0
    video.write_bytes(video.read_bytes() + b"\0")  # the video alone changes
    with pytest.raises(SourceChangedError) as info:
        adapter.read_checked(str(series), expect=digest)
    assert info.value.expected == digest.fingerprint
