"""Media contracts: MediaSpec in the schema's media namespace, FrameRef, grammar isolation."""

from __future__ import annotations

import pickle
from fractions import Fraction

import numpy as np
import pytest

from kuration import MediaSpec, SchemaSpec
from kuration.errors import MetricCompileError, SchemaError
from kuration.extend import FrameRef, compile_metric

SCHEMA = {
    "name": "cam",
    "sample_hz": 30000 / 1001,
    "fields": [{"name": "motion", "kind": "scalar"}],
    "media": {
        "frame": {
            "shape": [144, 176, 3],
            "frame_rate": "30000/1001",
            "time_base": "1/30000",
            "start_offset": "1/2",
            "color_space": "bt601",
        }
    },
}


def test_media_round_trips_through_the_schema() -> None:
    schema = SchemaSpec.from_dict(SCHEMA)
    m = schema.media_column("frame")
    assert m.frame_rate == Fraction(30000, 1001) and isinstance(m.frame_rate, Fraction)
    assert m.time_base == Fraction(1, 30000) and m.start_offset == Fraction(1, 2)
    assert m.shape == (144, 176, 3) and m.layout == "HWC" and m.pixel_format == "rgb24"
    again = SchemaSpec.from_json(schema.to_json())
    assert again == schema
    assert again.to_dict()["media"]["frame"]["frame_rate"] == "30000/1001"
    assert schema.field_names == ("motion",)  # media is not a field


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"frame_rate": 29.97}, "exact 'num/den'"),
        ({"time_base": "1/0"}, "exact 'num/den'"),
        ({"frame_rate": "-25"}, "positive"),
        ({"shape": [144, 176, 1]}, "channel"),
        ({"shape": [144, 176]}, r"\[H, W, C\]"),
        ({"layout": "CHW"}, "layout"),
        ({"pixel_format": "yuv420p"}, "pixel_format"),
        ({"fps": 25}, "unknown media keys"),
    ],
)
def test_invalid_media_names_the_column(change: dict, match: str) -> None:
    d = {**SCHEMA, "media": {"frame": {**SCHEMA["media"]["frame"], **change}}}
    with pytest.raises(SchemaError, match=match) as err:
        SchemaSpec.from_dict(d)
    assert err.value.field == "frame"


def test_a_media_column_cannot_shadow_a_field() -> None:
    d = {**SCHEMA, "media": {"motion": {"shape": [2, 2, 3]}}}
    with pytest.raises(SchemaError, match="duplicate"):
        SchemaSpec.from_dict(d)


def test_media_is_invisible_to_the_metric_grammar() -> None:
    schema = SchemaSpec.from_dict(SCHEMA)
    with pytest.raises(MetricCompileError, match="media column") as err:
        compile_metric("field:frame | mean", schema)
    assert err.value.token == "field:frame"
    compile_metric("field:motion | mean", schema)  # the numeric field compiles


def test_frame_ref_is_a_pickle_safe_exact_locator() -> None:
    ref = FrameRef("clip.mp4", 0, 1001 * 7, Fraction(1, 30000), 7)
    back = pickle.loads(pickle.dumps(ref))
    assert back == ref and hash(back) == hash(ref)
    assert back.time == Fraction(7 * 1001, 30000)
    with pytest.raises(AttributeError):
        ref.pts = 0  # type: ignore[misc]


def test_media_spec_direct_construction_parses_rationals() -> None:
    m = MediaSpec("frame", (2, 2, 1), pixel_format="gray", frame_rate="25", start_offset=3)
    assert m.frame_rate == 25 and m.start_offset == 3 and m.size == (2, 2)


def test_a_media_column_with_an_out_of_range_index_raises_media_error() -> None:
    # it raised TypeError (MediaError takes a keyword uri) before mypy caught it
    from kuration.contracts.media import MediaColumn
    from kuration.errors import MediaError

    m = MediaSpec("frame", (2, 2, 1), pixel_format="gray", frame_rate="25")
    ref = FrameRef("clip.mp4", 0, 0, Fraction(1, 25), 0)
    with pytest.raises(MediaError, match=r"^frame: MediaColumn.index"):
        MediaColumn(m, (ref,), np.array([0, 1]))
