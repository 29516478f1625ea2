"""Source errors keep their message and context when they cross a process pool."""

from __future__ import annotations

import pickle

import pytest

from kuration.errors import EntityIdError, SourceChangedError, SourceError, TimeRangeError


@pytest.mark.parametrize(
    "err",
    [
        SourceError("bad", source="a.csv", row=3),
        EntityIdError("missing entity id", source="a.csv", row=4, column="id"),
        EntityIdError("no canonical form"),
        TimeRangeError("out of range", source="a.csv", row=5, column="t"),
        SourceChangedError(source="a.csv", source_id="a", expected="ab12", actual="cd34"),
    ],
)
def test_pickle_round_trip(err: SourceError) -> None:
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is type(err)
    assert str(back) == str(err)
    assert back.__dict__ == err.__dict__
