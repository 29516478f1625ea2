"""RemoteDestination and RemoteLease on a real S3 server (moto, loopback) and, for a
backend without conditional create, fsspec's in-memory filesystem."""

from __future__ import annotations

import json

import fsspec
import pytest

from kuration.errors import DatasetExistsError, DestinationError, NonExclusiveLeaseWarning
from kuration.output.commit import LOCK_NAME
from kuration.output.destination import RemoteDestination, RemoteLease


def test_s3_create_is_exclusive_and_the_lease_is_respected(s3_bucket: str) -> None:
    dest = RemoteDestination(f"{s3_bucket}/ds")
    assert dest.create_exclusive("x", b"1") is True  # one conditional PUT
    with pytest.raises(FileExistsError):
        dest.create_exclusive("x", b"2")
    assert dest.read("x") == b"1"
    first = RemoteLease(dest).acquire()
    with pytest.raises(DatasetExistsError, match="remove .* by hand only after confirming"):
        RemoteLease(RemoteDestination(f"{s3_bucket}/ds")).acquire()
    assert json.loads(dest.read(LOCK_NAME) or b"")["token"] == first.token
    first.release()
    assert dest.read(LOCK_NAME) is None
    RemoteLease(dest).acquire().release()  # free again


def test_a_lease_released_after_it_was_taken_over_leaves_the_new_one(s3_bucket: str) -> None:
    dest = RemoteDestination(f"{s3_bucket}/ds")
    lease = RemoteLease(dest).acquire()
    dest.write(LOCK_NAME, b'{"token": "another writer"}')  # removed by hand, retaken
    lease.release()
    assert dest.read(LOCK_NAME) == b'{"token": "another writer"}'


def test_a_backend_without_conditional_create_warns() -> None:
    fs = fsspec.filesystem("memory")
    dest = RemoteDestination("memory://kuration-test-dest", filesystem=fs)
    try:
        with pytest.warns(NonExclusiveLeaseWarning, match="cannot create objects exclusively"):
            assert dest.create_exclusive("lock", b"1") is False
        with (
            pytest.warns(NonExclusiveLeaseWarning),
            pytest.raises(FileExistsError),
        ):
            dest.create_exclusive("lock", b"2")
        assert dest.read("lock") == b"1"
        assert dest.listing() == ["lock"]
    finally:
        fs.rm("/kuration-test-dest", recursive=True)


def test_a_missing_bucket_is_a_destination_error_naming_the_url(s3_bucket: str) -> None:
    dest = RemoteDestination(f"{s3_bucket}-missing/ds")
    assert not dest.in_use()
    with pytest.raises(DestinationError, match=r"-missing/ds/\.kuration-writer\.lock"):
        RemoteLease(dest).acquire()
