from __future__ import annotations

import json
import os
import pickle
import shutil
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from tn_helpers import make_card

import timenet as tn


def _flip_byte(path: Path, offset: int) -> None:
    with open(path, "r+b") as fh:
        fh.seek(offset)
        b = fh.read(1)
        fh.seek(offset)
        fh.write(bytes([b[0] ^ 0xFF]))


def _ecg_file(version: Path) -> Path:
    return next((version / "values").glob("*-ecg.parquet"))


def test_tampered_value_file_detected_before_values_returned(demo: Path) -> None:
    path = _ecg_file(demo)
    _flip_byte(path, path.stat().st_size // 2)
    reader = tn.TimeFReader.open(demo)  # same size: open succeeds
    sig = reader.signal("rec-0", "ecg")  # other files are fine
    with pytest.raises(tn.IntegrityError) as info:
        sig.to_numpy()
    assert info.value.what == "sha256" and info.value.path == str(path)
    with pytest.raises(tn.IntegrityError):
        reader.load()
    # untouched signals still read
    assert reader.signal("rec-0", "temp").to_arrow().null_count == 1


@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_load_detects_in_place_edit_with_mtime_restored(demo: Path, where: str) -> None:
    """The hashes run beside the decode, yet every value file is checked before load returns."""
    client = tn.TimeNet([demo.parents[2]])
    ref = "acme/demo@1.0.0"
    client.load(ref)  # a clean load first: nothing may be remembered from it
    files = sorted((demo / "values").glob("*.parquet"))
    assert files
    for path in files:
        st = os.stat(path)
        offset = {"first": 0, "middle": st.st_size // 2, "last": st.st_size - 1}[where]
        _flip_byte(path, offset)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size, same mtime
        with pytest.raises(tn.IntegrityError) as info:
            client.load(ref)
        assert info.value.what == "sha256" and info.value.path == str(path)
        with pytest.raises(tn.IntegrityError):
            tn.TimeFReader.open(demo).load()
        _flip_byte(path, offset)  # restore: the next file is the only changed one
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    client.load(ref)


def test_tampered_catalog_detected(demo: Path) -> None:
    _flip_byte(demo / "control.duckdb", 100)
    reader = tn.TimeFReader.open(demo)
    with pytest.raises(tn.IntegrityError, match=r"control\.duckdb"):
        reader.records()


def test_tampered_zarr_chunk_detected(demo: Path) -> None:
    chunk = next(p for p in (demo / "values").rglob("*") if p.is_file() and "/c/" in p.as_posix())
    _flip_byte(chunk, 0)
    with pytest.raises(tn.IntegrityError):
        tn.TimeFReader.open(demo).signal("rec-1", "acc").to_numpy()


def test_unlisted_zarr_file_detected(demo: Path) -> None:
    zdir = next((demo / "values").glob("*.zarr"))
    (zdir / "c" / "99").mkdir(parents=True)
    (zdir / "c" / "99" / "0").write_bytes(b"injected")
    with pytest.raises(tn.IntegrityError, match="unlisted"):
        tn.TimeFReader.open(demo).signal("rec-1", "acc").to_numpy()


def test_size_mismatch_detected_at_open(demo: Path) -> None:
    path = _ecg_file(demo)
    with open(path, "ab") as fh:
        fh.write(b"\0")
    with pytest.raises(tn.IntegrityError) as info:
        tn.TimeFReader.open(demo)
    assert info.value.what == "size" and info.value.path == str(path)


def test_missing_file_detected(demo: Path) -> None:
    _ecg_file(demo).unlink()
    with pytest.raises(tn.IntegrityError, match="missing"):
        tn.TimeFReader.open(demo)


def test_verify_false_skips_checks(demo: Path) -> None:
    path = _ecg_file(demo)
    before = tn.TimeFReader.open(demo).signal("rec-0", "temp").to_arrow()
    with open(path, "ab") as fh:
        fh.write(b"\0")
    reader = tn.TimeFReader.open(demo, verify=False)
    assert reader.signal("rec-0", "temp").to_arrow().equals(before)


def test_symlinked_manifest_refused(demo: Path, tmp_path: Path) -> None:
    real = tmp_path / "elsewhere.json"
    shutil.move(demo / "manifest.json", real)
    os.symlink(real, demo / "manifest.json")
    with pytest.raises(tn.ManifestError, match="symlink") as info:
        tn.TimeFReader.open(demo)
    assert info.value.path == str(demo / "manifest.json")


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("{not json", "not valid JSON"),
        (json.dumps({"format": "timef"}), "invalid content"),
    ],
)
def test_bad_manifest_json(demo: Path, content: str, reason: str) -> None:
    (demo / "manifest.json").write_text(content)
    with pytest.raises(tn.ManifestError, match=reason) as info:
        tn.TimeFReader.open(demo)
    assert info.value.path.endswith("manifest.json")


def test_manifest_with_escaping_path_refused(demo: Path) -> None:
    data = json.loads((demo / "manifest.json").read_text())
    data["files"][0]["path"] = "../../etc/passwd"
    (demo / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(tn.ManifestError, match="relative POSIX"):
        tn.TimeFReader.open(demo)


def test_uncommitted_dir_refused(tmp_path: Path) -> None:
    with pytest.raises(tn.ManifestError, match="not committed"):
        tn.TimeFReader.open(tmp_path)


def test_nulls_rejected_by_to_numpy_but_kept_by_arrow(demo: Path) -> None:
    sig = tn.TimeFReader.open(demo).signal("rec-2", "temp")
    with pytest.raises(tn.NullValuesError) as info:
        sig.to_numpy()
    assert (info.value.signal, info.value.record, info.value.null_count) == ("temp", "rec-2", 1)
    arr = sig.to_arrow()
    assert arr.null_count == 1 and arr[2].as_py() is None
    np.testing.assert_allclose(sig.read_steps(3, 6), [23.0, 24.0, 25.0])


def test_read_steps_touches_only_needed_row_groups(tmp_path: Path) -> None:
    # Corrupt the data page of the last row group; with verification off, an
    # early slice still reads correctly, proving the rest is never decoded.
    values = np.arange(1000, dtype=np.float64)
    with tn.TimeFWriter(tmp_path, make_card(), row_group_rows=100, compression="snappy") as w:
        w.add_record("r")
        w.add_signal("r", "x", values, tn.SignalSpec("float64", "V", rate_hz=10))
    vdir = tmp_path / "acme/demo/1.0.0"
    path = next((vdir / "values").glob("*.parquet"))
    md = pq.ParquetFile(path).metadata
    assert md.num_row_groups == 10
    col = md.row_group(9).column(0)
    with open(path, "r+b") as fh:
        fh.seek(col.data_page_offset)
        fh.write(b"\xff" * min(64, col.total_compressed_size))
    sig = tn.TimeFReader.open(vdir, verify=False).signal("r", "x")
    np.testing.assert_array_equal(sig.read_steps(150, 420), values[150:420])
    np.testing.assert_array_equal(sig.read_times(150, 152), [15_000_000_000, 15_100_000_000])
    try:
        full = sig.to_numpy()
    except (OSError, ValueError):
        return
    assert not np.array_equal(full, values)


def test_step_range_errors(demo: Path) -> None:
    sig = tn.TimeFReader.open(demo).signal("rec-0", "ecg")
    for start, stop in [(-1, 3), (5, 2), (0, 501)]:
        with pytest.raises(tn.StepRangeError):
            sig.read_steps(start, stop)
    assert sig.read_steps(500, 500).shape == (0,)


def test_lookup_errors(demo: Path) -> None:
    reader = tn.TimeFReader.open(demo)
    with pytest.raises(tn.RecordNotFoundError, match="nope"):
        reader.signals("nope")
    with pytest.raises(tn.SignalNotFoundError) as info:
        reader.signal("rec-0", "resp")
    assert isinstance(info.value, KeyError) and info.value.signal == "resp"


def test_times_and_multidim(demo: Path) -> None:
    reader = tn.TimeFReader.open(demo)
    ecg = reader.signal("rec-0", "ecg")
    np.testing.assert_array_equal(ecg.times()[:3], [0, 4_000_000, 8_000_000])
    ev = reader.signal("rec-0", "events")
    assert ev.times().tolist() == [10, 2_000, 90_000]
    assert ev.to_numpy().dtype == np.uint8
    acc = reader.signal("rec-1", "acc")
    assert acc.to_numpy().shape == (40, 3) and acc.to_numpy().dtype == np.int16
    np.testing.assert_array_equal(acc.read_steps(5, 9), acc.to_numpy()[5:9])
    nested = acc.to_arrow()
    assert nested.type.list_size == 3
    np.testing.assert_array_equal(np.asarray(nested.flatten()).reshape(40, 3), acc.to_numpy())


def test_reader_and_specs_pickle(demo: Path) -> None:
    reader = tn.TimeFReader.open(demo)
    expected = reader.signal("rec-1", "ecg").to_numpy()
    clone = pickle.loads(pickle.dumps(reader))
    np.testing.assert_array_equal(clone.signal("rec-1", "ecg").to_numpy(), expected)
    anns = reader.annotations()
    assert pickle.loads(pickle.dumps(anns)) == anns
    spec = reader.signal("rec-1", "acc").spec
    assert pickle.loads(pickle.dumps(spec)) == spec
    loaded = reader.load()
    np.testing.assert_array_equal(
        pickle.loads(pickle.dumps(loaded)).signal("rec-1", "ecg").to_numpy(), expected
    )


def test_loaded_dataset_matches_reader(demo: Path) -> None:
    reader = tn.TimeFReader.open(demo)
    loaded = reader.load()
    assert loaded.records() == reader.records()
    assert loaded.annotations("rec-1", signal="ecg") == reader.annotations("rec-1", signal="ecg")
    assert loaded.tasks(name="rhythm") == reader.tasks(name="rhythm")
    for rec in reader:
        for name, sig in reader.signals(rec.id).items():
            assert loaded.signal(rec.id, name).to_arrow().equals(sig.to_arrow())
