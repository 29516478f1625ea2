"""Each modality's unit: declared, else the schema field's, else the encoder's; checked by pint."""

from __future__ import annotations

from typing import ClassVar

import pytest

from kuration import OutputSpec
from kuration.errors import OutputSpecError


def _spec(**extra) -> OutputSpec:
    mods = {
        "position": {"dtype": "float64", "shape": [2], "source": "field:position"},
        "alt": {"dtype": "float32", "source": "field:altitude"},
        "turn": {"dtype": "float32", "source": "segment:turn_p90", **extra},
        "frame": {"dtype": "uint8", "shape": [3], "source": "encoder:frame"},
        "flag": {"dtype": "uint8", "source": "field:onground"},
    }
    return OutputSpec.from_dict({"shard_length": 8, "modalities": mods})


class _Encoder:
    units: ClassVar[dict[str, str]] = {"frame": "count"}


def test_units_come_from_the_spec_the_schema_or_the_encoder(adsb_schema) -> None:
    units = _spec(unit="deg/s").units(adsb_schema, _Encoder())
    assert units == {
        "position": "deg",  # ["deg", "deg"] collapses to one unit
        "alt": "ft",
        "turn": "deg/s",
        "frame": "count",
        "flag": None,
    }
    assert _spec().units(adsb_schema)["turn"] is None and _spec().units(None)["alt"] is None
    assert _spec(unit="deg/s").to_dict()["modalities"]["turn"]["unit"] == "deg/s"
    assert "unit" not in _spec().to_dict()["modalities"]["turn"]  # existing configs unchanged


def test_declared_units_are_checked() -> None:
    with pytest.raises(OutputSpecError, match="unknown unit 'furlongs_per_blink'"):
        _spec(unit="furlongs_per_blink")
    with pytest.raises(OutputSpecError, match="2 units given for shape"):
        _spec(unit=["m", "s"])
