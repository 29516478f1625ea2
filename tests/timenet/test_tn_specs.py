from __future__ import annotations

import json
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

import timenet as tn
from timenet.specs import SUPPORTED_DTYPES, content_from_dict

specs = st.builds(
    tn.SignalSpec,
    dtype=st.sampled_from(SUPPORTED_DTYPES),
    unit=st.sampled_from(["", "mV", "degC", "m/s"]),
    shape=st.lists(st.integers(1, 4), max_size=3).map(tuple),
    rate_hz=st.one_of(st.none(), st.floats(1e-3, 1e6)),
    start_ns=st.integers(-(2**62), 2**62),
    time_origin=st.one_of(st.none(), st.just("2024-03-01T12:00:00+00:00")),
    timezone=st.one_of(st.none(), st.sampled_from(["UTC", "Europe/Berlin", "America/New_York"])),
)
contents = st.one_of(
    st.builds(tn.Label, st.text()),
    st.builds(tn.Text, st.text()),
    st.builds(tn.Numeric, st.floats(allow_nan=False), st.sampled_from(["", "bpm", "mmHg"])),
    st.builds(tn.QuestionAnswer, st.text(), st.text()),
)


@given(specs)
def test_spec_round_trips_through_json_and_pickle(spec: tn.SignalSpec) -> None:
    assert tn.SignalSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
    assert pickle.loads(pickle.dumps(spec)) == spec


@given(contents)
def test_content_round_trips(content: object) -> None:
    data = json.loads(json.dumps(content.to_dict()))  # type: ignore[attr-defined]
    assert content_from_dict(data) == content
    assert pickle.loads(pickle.dumps(content)) == content


@pytest.mark.parametrize(
    "kwargs",
    [
        {"dtype": "complex64"},
        {"dtype": "float32", "shape": (0,)},
        {"dtype": "float32", "rate_hz": 0},
        {"dtype": "float32", "rate_hz": float("inf")},
        {"dtype": "float32", "time_origin": "yesterday"},
        {"dtype": "float32", "timezone": "Mars/Olympus"},
    ],
)
def test_invalid_specs(kwargs: dict[str, object]) -> None:
    with pytest.raises(tn.SchemaError):
        tn.SignalSpec(**kwargs)  # type: ignore[arg-type]


def test_unknown_content_kind() -> None:
    with pytest.raises(tn.SchemaError, match="unknown content kind"):
        content_from_dict({"kind": "video", "url": "x"})
