"""In-memory sources: their errors, their names, and ids equal to the files they mirror."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from kuration.errors import SourceError
from kuration.sources.memory import spill_sources, to_arrow


def test_not_a_memory_source_is_a_source_error() -> None:
    with pytest.raises(SourceError, match="not an in-memory source: int"):
        to_arrow(3)


def test_rows_arrow_cannot_type_are_a_source_error() -> None:
    with pytest.raises(SourceError, match="cannot turn the in-memory source"):
        to_arrow([{"a": 1}, {"a": "x"}])


def test_mixed_sources_are_a_source_error(tmp_path: Path) -> None:
    t = pa.table({"time": [1, 2]})
    with pytest.raises(SourceError, match="mix in-memory objects and paths"):
        spill_sources([t, "x.csv"], tmp_path)


@pytest.mark.parametrize("name", ["../x", ".hidden", "a/b", "a..b", ""])
def test_unsafe_names_are_refused(name: str, tmp_path: Path) -> None:
    t = pa.table({"time": [1, 2]})
    if name == "":
        assert spill_sources({name: t}, tmp_path)[0].endswith(".arrows")  # unnamed default
        return
    with pytest.raises(SourceError, match="in-memory source name"):
        spill_sources({name: t}, tmp_path)


def test_a_dotted_name_is_the_file_stem(tmp_path: Path) -> None:
    (path,) = spill_sources({"run.2024.01": pa.table({"time": [1, 2]})}, tmp_path)
    assert Path(path).name == "run.2024.01.arrows"
