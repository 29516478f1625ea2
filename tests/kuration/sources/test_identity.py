"""Source identity: a read hashes the buffer it parses, and checks it against the run's record."""

from __future__ import annotations

import gzip
import hashlib
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest

from kuration import SchemaSpec
from kuration.contracts.tick import Tick
from kuration.errors import SourceChangedError
from kuration.sources.base import InputAdapter
from kuration.sources.identity import FileDigests, SourceDigest, parts_fingerprint
from kuration.sources.timeseries import TimeseriesAdapter

SCHEMA = SchemaSpec.from_dict(
    {"sample_hz": 1.0, "fields": [{"name": "v", "kind": "scalar", "unit": "m"}]}
)
CSV = "t,id,v\n0,a,1.0\n1,a,2.0\n2,a,3.0\n0,b,5.0\n1,b,6.0\n"


def _ts() -> TimeseriesAdapter:
    return TimeseriesAdapter(SCHEMA, time_column="t", entity_column="id", fields={"v": "v"})


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_the_digest_is_of_the_bytes_parsed(tmp_path: Path) -> None:
    p = tmp_path / "s.csv"
    p.write_text(CSV)
    table, got = _ts().read_checked(str(p))
    assert got == SourceDigest(_sha(CSV.encode()), _sha(CSV.encode()))
    assert got.fingerprint == _ts().fingerprint(str(p))
    assert table.n_steps == 3


def test_a_gzipped_csv_is_parsed_from_its_buffer(tmp_path: Path) -> None:
    p = tmp_path / "s.csv.gz"
    p.write_bytes(gzip.compress(CSV.encode()))
    table, got = _ts().read_checked(str(p))
    assert got.sha256 == _sha(p.read_bytes()) and table.n_steps == 3


@pytest.mark.parametrize(
    "edit",
    [lambda s: s.replace("3.0", "3.5"), lambda s: s[: len(s) // 2 + 3]],
    ids=["value", "truncated"],
)
def test_a_read_that_finds_other_bytes_names_both_digests(tmp_path: Path, edit) -> None:
    p = tmp_path / "s.csv"
    p.write_text(CSV)
    _, first = _ts().read_checked(str(p))
    p.write_text(edit(CSV))
    with pytest.raises(SourceChangedError) as info:
        _ts().read_checked(str(p), entities=["a"], expect=first)
    err = info.value
    assert (err.source_id, err.expected, err.actual) == ("s", first.sha256, _sha(p.read_bytes()))
    assert first.sha256 in str(err) and err.actual in str(err)


class _TickFile(InputAdapter):
    """A plain adapter reading ``time,value`` lines itself (no byte layer): it gets the
    generic check, a fingerprint before and after the decode."""

    name = "tick-file-test"

    def __init__(self, schema: SchemaSpec, after_first_line: object = None) -> None:
        super().__init__(schema)
        self.after_first_line = after_first_line

    def ticks(self, uri: str) -> Iterable[Tick]:
        with open(uri) as fh:
            for i, line in enumerate(fh):
                t, v = line.split(",")
                yield Tick(float(t), {0: {"v": float(v)}})
                if i == 0 and callable(self.after_first_line):
                    self.after_first_line()


def test_an_adapter_without_a_byte_layer_is_checked_around_its_decode(tmp_path: Path) -> None:
    p = tmp_path / "plain.txt"
    p.write_text("0,1\n1,2\n2,3\n")
    _, got = _TickFile(SCHEMA).read_checked(str(p))
    assert got.fingerprint == _sha(p.read_bytes())

    def rewrite() -> None:
        p.write_text("0,1\n1,2\n2,4\n")

    with pytest.raises(SourceChangedError):
        _TickFile(SCHEMA, after_first_line=rewrite).read_checked(str(p))
    _, now = _TickFile(SCHEMA).read_checked(str(p))
    p.unlink()
    with pytest.raises(SourceChangedError) as info:
        _TickFile(SCHEMA).read_checked(str(p), expect=now)
    assert info.value.actual == ""


class _Episodes(_TickFile):
    """Sources ``file#start:stop``: row ranges of one shared file (as LeRobot episodes)."""

    name = "episodes-test"

    def file_parts(self, uri: str) -> Sequence[tuple[str, int, int]]:
        path, rows = uri.split("#")
        start, stop = rows.split(":")
        return [(path, int(start), int(stop))]


def test_sources_sharing_a_file_hash_it_once_and_name_their_rows(tmp_path: Path) -> None:
    p = tmp_path / "shared.bin"
    p.write_bytes(os.urandom(1 << 16))
    a, b = f"{p}#0:10", f"{p}#10:20"
    ad = _Episodes(SCHEMA)
    fa, fb = ad.fingerprint(a), ad.fingerprint(b)
    assert fa and fb and fa != fb
    files = FileDigests()
    assert parts_fingerprint([(str(p), 0, 10)], files) == fa
    assert parts_fingerprint([(str(p), 10, 20)], files) == fb
    assert len(files._known) == 1  # one hash of the shared file for both sources
    p.write_bytes(os.urandom(1 << 16))  # rewritten in place: a new stat key, a new digest
    assert ad.fingerprint(a) != fa


def test_a_source_gone_since_the_run_read_it_is_a_change(tmp_path: Path) -> None:
    p = tmp_path / "s.csv"
    p.write_text(CSV)
    _, first = _ts().read_checked(str(p))
    p.unlink()
    with pytest.raises(SourceChangedError) as info:
        _ts().read_checked(str(p), expect=first)
    assert (info.value.expected, info.value.actual) == (first.sha256, "")
    with pytest.raises(FileNotFoundError):  # a first read has nothing to compare with
        _ts().read_checked(str(p))


def test_a_partitioned_folder_is_fingerprinted_around_its_decode(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path / "folder"
    for part, rows in (("a", [0.0, 1.0]), ("b", [5.0, 6.0])):
        (root / f"id={part}").mkdir(parents=True)
        pq.write_table(pa.table({"t": [0, 1], "v": rows}), root / f"id={part}" / "p.parquet")
    _, first = _ts().read_checked(str(root))
    assert first.fingerprint == _ts().fingerprint(str(root))
    pq.write_table(pa.table({"t": [0, 1], "v": [5.0, 6.5]}), root / "id=b" / "p.parquet")
    with pytest.raises(SourceChangedError) as info:
        _ts().read_checked(str(root), expect=first)
    assert info.value.expected == first.fingerprint != info.value.actual
