"""Output presets: validated through OutputSpec at registration, expanded by jobs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from kuration import OutputSpec, load_job
from kuration.errors import OutputSpecError
from kuration.extend import get_preset, register_preset, registered_presets
from kuration.output.presets import _PRESETS, resolve_output

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "adsb_quickstart"


@pytest.fixture
def cleanup() -> Iterator[None]:
    yield
    for name in ("test-bad", "test-ok"):
        _PRESETS.unregister(name)


@pytest.mark.parametrize(
    "policy, match",
    [
        ({"shard_length": 0}, "shard_length"),
        ({"shard_length": 64, "short_policy": "truncate"}, "short_policy"),
        ({"shard_length": 64, "compression": "zstd"}, "unknown keys"),
        ({"short_policy": "pad"}, "shard_length"),
        ({"shard_length": 64, "modalities": {"x": {"dtype": "complex64", "shape": [], "source": "field:x"}}}, "dtype"),
    ],
)  # fmt: skip
def test_an_invalid_preset_fails_at_registration(cleanup, policy, match) -> None:
    with pytest.raises(OutputSpecError, match=match):
        register_preset("test-bad", policy)
    assert "test-bad" not in registered_presets()


def test_quickstart_preset_reproduces_its_output_json() -> None:
    out = json.loads((EXAMPLE / "output.json").read_text())
    job, _ = load_job(EXAMPLE / "job-preset.json")
    assert job["output"]["preset"] == "npz-128-pad"
    assert resolve_output(job["output"]) == OutputSpec.from_dict(out)
    assert get_preset("npz-128-pad").to_dict()["policy"]["shard_length"] == 128


def test_job_keys_override_the_preset(cleanup) -> None:
    register_preset(
        "test-ok",
        {
            "shard_length": 32,
            "modalities": {"a": {"dtype": "float32", "shape": [], "source": "field:a"}},
        },
    )
    spec = resolve_output(
        {
            "preset": "test-ok",
            "shard_length": 16,
            "modalities": {"b": {"dtype": "uint8", "shape": [], "source": "field:b"}},
        }
    )
    assert spec.shard_length == 16 and list(spec.modalities) == ["a", "b"]
    with pytest.raises(OutputSpecError, match="test-okk"):
        resolve_output({"preset": "test-okk"})
