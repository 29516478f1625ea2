from __future__ import annotations

import json

import pytest

from kuration import FieldSpec, SchemaSpec
from kuration.errors import SchemaError


def test_adsb_schema_round_trips(adsb_schema: SchemaSpec) -> None:
    again = SchemaSpec.from_json(adsb_schema.to_json())
    assert again == adsb_schema
    assert SchemaSpec.from_dict(json.loads(json.dumps(adsb_schema.to_dict()))) == adsb_schema


def test_schema_is_frozen(adsb_schema: SchemaSpec) -> None:
    with pytest.raises(AttributeError):
        adsb_schema.sample_hz = 2.0  # type: ignore[misc]


@pytest.mark.parametrize(
    ("field", "match"),
    [
        (
            {"name": "p", "kind": "scalar", "semantics": "position", "unit": "m"},
            "position semantics needs a vector",
        ),
        (
            {"name": "p", "kind": "vector", "dims": 2, "semantics": "position", "unit": "kg"},
            "length units",
        ),
        ({"name": "a", "kind": "scalar", "semantics": "angular", "unit": "m"}, "angle unit"),
        (
            {
                "name": "b",
                "kind": "scalar",
                "semantics": "bitmask",
                "dtype": "uint8",
                "bits": {"x": 8},
            },
            "outside 0..7",
        ),
        (
            {"name": "b", "kind": "scalar", "semantics": "bitmask", "bits": {"x": 1}},
            "integer dtype",
        ),
        ({"name": "c", "kind": "categorical", "vocab": ["a", "a"]}, "distinct labels"),
        ({"name": "u", "kind": "scalar", "unit": "furlongs_per_blorp"}, "unknown unit"),
        (
            {
                "name": "g",
                "kind": "vector",
                "dims": 4,
                "semantics": "position",
                "frame": "geodetic",
                "unit": ["deg", "deg", "m", "m"],
            },
            "geodetic position",
        ),
        ({"name": "x", "kind": "scalar", "max_rate": -1}, "max_rate"),
        ({"name": "x", "kind": "scalar", "colour": "red"}, "unknown key .colour."),
    ],
)
def test_invalid_fields_name_the_field(field: dict, match: str) -> None:
    with pytest.raises(SchemaError, match=match) as exc:
        SchemaSpec.from_dict({"sample_hz": 1, "fields": [field]})
    assert exc.value.field == field["name"]


def test_schema_level_errors() -> None:
    f = {"name": "x", "kind": "scalar"}
    with pytest.raises(SchemaError, match="duplicate field names"):
        SchemaSpec.from_dict({"sample_hz": 1, "fields": [f, f]})
    with pytest.raises(SchemaError, match="sample_hz"):
        SchemaSpec.from_dict({"sample_hz": 0, "fields": [f]})
    with pytest.raises(SchemaError, match="fields: required key is missing"):
        SchemaSpec.from_dict({"sample_hz": 1})
    with pytest.raises(SchemaError, match="duplicate key"):
        SchemaSpec.from_json('{"sample_hz": 1, "sample_hz": 2, "fields": []}')
    with pytest.raises(SchemaError, match="non-finite"):
        SchemaSpec.from_json('{"sample_hz": NaN, "fields": []}')


def test_field_units_tuple() -> None:
    f = FieldSpec("pos", kind="vector", dims=3, semantics="position", unit="cm")
    assert f.units == ("cm",)
    g = FieldSpec.from_dict(f.to_dict())
    assert g == f
