"""One set of defaults: an OutputSpec built in Python equals the same spec read from JSON."""

from __future__ import annotations

import dataclasses

import pytest

from kuration.core.config import OutputModel
from kuration.errors import OutputSpecError
from kuration.output.spec import OutputSpec

DOC = {"modalities": {"alt": {"dtype": "float32", "shape": [], "source": "field:alt"}}}


def test_python_and_json_share_every_default() -> None:
    from_json = OutputSpec.from_dict(DOC)
    assert OutputSpec(modalities=from_json.modalities) == from_json
    assert from_json.shard_length == 64  # was required in Python, 64 in a file
    fields = {f.name: f for f in dataclasses.fields(OutputSpec)}
    for name, info in OutputModel.model_fields.items():
        if not info.is_required() and name in fields:
            assert fields[name].default == info.default, name


def test_a_spec_without_modalities_is_still_refused() -> None:
    with pytest.raises(OutputSpecError, match="at least one modality"):
        OutputSpec()
