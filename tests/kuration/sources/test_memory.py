"""In-memory sources: bad input fails with SourceError naming the source.

These raised TypeError before (SourceError's ``source`` keyword was missing; mypy found it).
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from kuration.errors import SourceError
from kuration.sources.memory import spill_sources, to_arrow


def test_an_object_that_is_no_table_raises_source_error() -> None:
    with pytest.raises(SourceError, match=r"^sources: not an in-memory source: object"):
        to_arrow(object())


def test_rows_arrow_cannot_type_raise_source_error() -> None:
    with pytest.raises(SourceError, match=r"^in-memory source: cannot turn it into"):
        to_arrow([{"t": 1}, {"t": "x"}])


def test_a_bad_source_name_is_named(tmp_path) -> None:
    table = pa.table({"t": [0.0, 1.0]})
    with pytest.raises(SourceError, match=r"^bad name!: an in-memory source name"):
        spill_sources({"bad name!": table}, tmp_path)


def test_objects_mixed_with_paths_raise_source_error(tmp_path) -> None:
    with pytest.raises(SourceError, match=r"^sources: in-memory objects and paths are mixed"):
        spill_sources([pa.table({"t": [0.0]}), "a.csv"], tmp_path)
