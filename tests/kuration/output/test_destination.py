"""RemoteDestination and RemoteLease on real object-store servers on loopback (S3: moto;
GCS: fake-gcs-server; Azure Blob: Azurite) and, for a backend without conditional create,
fsspec's in-memory filesystem."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor

import fsspec
import pytest

from kuration.errors import DatasetExistsError, DestinationError, NonExclusiveLeaseWarning
from kuration.output.commit import LOCK_NAME
from kuration.output.destination import RemoteDestination, RemoteLease

#: fixtures giving a fresh bucket of each object store that kuration writes
STORES = ["s3_bucket", "gs_bucket", "az_container"]


@pytest.mark.parametrize("store", STORES)
def test_create_is_exclusive_and_the_lease_is_respected(
    store: str, request: pytest.FixtureRequest
) -> None:
    bucket = request.getfixturevalue(store)
    dest = RemoteDestination(f"{bucket}/ds")
    assert dest.create_exclusive("x", b"1") is True  # one conditional request
    with pytest.raises(FileExistsError):
        dest.create_exclusive("x", b"2")
    assert dest.read("x") == b"1"
    first = RemoteLease(dest).acquire()
    with pytest.raises(DatasetExistsError, match="remove .* by hand only after confirming"):
        RemoteLease(RemoteDestination(f"{bucket}/ds")).acquire()
    assert json.loads(dest.read(LOCK_NAME) or b"")["token"] == first.token
    first.release()
    assert dest.read(LOCK_NAME) is None
    RemoteLease(dest).acquire().release()  # free again


@pytest.mark.parametrize("store", STORES)
def test_writers_starting_together_get_one_lease(
    store: str, request: pytest.FixtureRequest
) -> None:
    """Eight writers released at once by a barrier: exactly one holds the lease."""
    bucket = request.getfixturevalue(store)
    start = threading.Barrier(8)

    def take(_: int) -> str:
        dest = RemoteDestination(f"{bucket}/race")
        start.wait()
        try:
            RemoteLease(dest).acquire()
        except DatasetExistsError:
            return "refused"
        return "held"

    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(take, range(8)))
    assert sorted(got) == ["held"] + ["refused"] * 7


def test_a_lease_released_after_it_was_taken_over_leaves_the_new_one(s3_bucket: str) -> None:
    dest = RemoteDestination(f"{s3_bucket}/ds")
    lease = RemoteLease(dest).acquire()
    dest.write(LOCK_NAME, b'{"token": "another writer"}')  # removed by hand, retaken
    lease.release()
    assert dest.read(LOCK_NAME) == b'{"token": "another writer"}'


def test_a_backend_without_conditional_create_is_refused_unless_the_risk_is_accepted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fs = fsspec.filesystem("memory")
    dest = RemoteDestination("memory://kuration-test-dest", filesystem=fs)
    try:
        with pytest.raises(DestinationError, match="KURATION_NON_EXCLUSIVE_LEASE=accept-racing"):
            RemoteLease(dest).acquire()
        assert dest.listing() == []  # nothing written
        monkeypatch.setenv("KURATION_NON_EXCLUSIVE_LEASE", "yes")
        with pytest.raises(DestinationError, match="the only value it takes"):
            RemoteLease(dest)
        monkeypatch.setenv("KURATION_NON_EXCLUSIVE_LEASE", "accept-racing-writers")
        with pytest.warns(NonExclusiveLeaseWarning, match="cannot create objects exclusively"):
            lease = RemoteLease(dest).acquire()
        assert not lease.exclusive
        lease.release()
        with pytest.warns(NonExclusiveLeaseWarning, match="cannot create objects exclusively"):
            assert dest.create_exclusive("lock", b"1", racing_ok=True) is False
        with (
            pytest.warns(NonExclusiveLeaseWarning),
            pytest.raises(FileExistsError),
        ):
            dest.create_exclusive("lock", b"2", racing_ok=True)
        assert dest.read("lock") == b"1"
        assert dest.listing() == ["lock"]
    finally:
        fs.rm("/kuration-test-dest", recursive=True)


def test_a_missing_bucket_is_a_destination_error_naming_the_url(s3_bucket: str) -> None:
    dest = RemoteDestination(f"{s3_bucket}-missing/ds")
    assert not dest.in_use()
    with pytest.raises(DestinationError, match=r"-missing/ds/\.kuration-writer\.lock"):
        RemoteLease(dest).acquire()
