from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError
from tn_helpers import make_card

import timenet as tn


def test_card_yaml_round_trip(tmp_path: Path) -> None:
    card = tn.DatasetCard(
        **make_card(
            "2.1",
            description="12-lead ECGs",
            citation="Doe et al. 2020",
            access={"level": "credentialed", "terms": "PhysioNet DUA"},
            parents=["physionet/ptb-xl@1.0.3"],
        )
    )
    path = tmp_path / "dataset.yaml"
    path.write_text(card.to_yaml())
    assert tn.DatasetCard.from_yaml(path) == card
    assert str(card.ref) == "acme/demo@2.1"


@pytest.mark.parametrize(
    "bad",
    [
        {"parents": ["physionet/ptb-xl"]},
        {"org": "../etc"},
        {"version": "1/2"},
        {"access": {"level": "secret"}},
        {"unknown_field": 1},
    ],
)
def test_card_rejects(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        tn.DatasetCard(**{**make_card(), **bad})


def test_models_are_frozen(demo: Path) -> None:
    m = tn.TimeFReader.open(demo).manifest
    with pytest.raises(ValidationError):
        m.card.name = "other"  # type: ignore[misc]
    assert tn.Manifest.from_json(m.to_json()) == m
    assert '"schema"' in m.to_json()


@pytest.mark.parametrize("path", ["/abs", "a/../b", "a\\b", "./a", "manifest.json", ""])
def test_file_entry_paths(path: str) -> None:
    with pytest.raises(ValidationError):
        tn.FileEntry(path=path, size=1, sha256="0" * 64)
