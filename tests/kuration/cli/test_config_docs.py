"""docs/configuration.md is generated from the configuration models and stays in sync with them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pydantic import BaseModel

from kuration.cli.config_docs import _FILES, configuration_markdown
from kuration.core import config as cfg
from kuration.pipeline.api.operators import get_operator, registered_operators

DOC = Path(__file__).resolve().parents[3] / "docs" / "configuration.md"


def test_the_file_is_what_the_generator_writes() -> None:
    """Regenerate with: kur schema --markdown > docs/configuration.md"""
    assert DOC.read_text(encoding="utf-8") == configuration_markdown()


def test_kur_schema_markdown_prints_it() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "kuration.cli.main", "schema", "--markdown"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out == configuration_markdown()


def _models(model: type[BaseModel], seen: set[type[BaseModel]]) -> None:
    if model in seen:
        return
    seen.add(model)
    for info in model.model_fields.values():
        for sub in _nested(info.annotation):
            _models(sub, seen)


def _nested(tp: object) -> list[type[BaseModel]]:
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return [tp]
    return [m for a in getattr(tp, "__args__", ()) for m in _nested(a)]


def test_every_model_reachable_from_a_file_has_a_section_and_every_key_a_description() -> None:
    reachable: set[type[BaseModel]] = set()
    for model in (cfg.JobModel, cfg.PolicyModel):
        _models(model, reachable)
    # options of plugin adapters and encoders belong to the plugin
    reachable -= {cfg.PluginAdapterModel, cfg.EncoderModel}
    documented = {m for _, m, _ in _FILES}
    assert reachable <= documented, reachable - documented
    text = configuration_markdown()
    for model in documented:
        for name, info in model.model_fields.items():
            assert (info.description or "").strip(), f"{model.__name__}.{name} has no description"
            assert f"| `{info.alias or name}` |" in text


def test_every_method_and_filter_parameter_is_listed() -> None:
    text = configuration_markdown()
    for name in registered_operators():
        op = get_operator(name)
        if op.builtin and op.kind in ("method", "filter"):
            assert f"### `{name}`" in text
            for param in op.params:
                assert f"| `{param}` |" in text


def test_defaults_and_allowed_values_come_from_the_models() -> None:
    text = configuration_markdown()
    assert '| `short_policy` | `"keep"` \\| `"pad"` \\| `"drop"` | `"keep"` |' in text
    assert "| `sample_hz` | number (> 0) | **required** |" in text
    assert "| `shard_length` | integer (>= 1) | `64` |" in text


def test_every_extra_of_pyproject_is_in_the_extras_table() -> None:
    import tomllib

    pyproject = tomllib.loads((DOC.parents[1] / "pyproject.toml").read_text())
    text = configuration_markdown()
    for extra in pyproject["project"]["optional-dependencies"]:
        assert f"| `{extra}` |" in text, f"extra {extra!r} is not in docs/configuration.md"
