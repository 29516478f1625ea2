"""Each container read by the tools people already have, following docs/format.md only.

The readers below never import kuration: they recover time, entity, units and the real
rows (pad rows dropped) from the files and the manifest.  kuration's own reader gives the
reference they are compared with.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import numpy as np

from kuration import open_dataset

UNITS = {"position": "deg", "altitude": "ft", "vertical_rate": "ft/min", "onground": None}


def _reference(path: Path) -> dict[tuple[str, float], tuple[str, float, tuple[float, float]]]:
    """(entity, time) -> (split, altitude, position) from kuration's reader."""
    t = open_dataset(path).to_arrow()
    pos = t.column("position").combine_chunks().flatten().to_numpy().reshape(-1, 2)
    keys = list(zip(t.column("_entity").to_pylist(), t.column("_time_s").to_pylist(), strict=True))
    rows = zip(t.column("_split").to_pylist(), t.column("altitude").to_pylist(), pos, strict=True)
    out = {k: (s, a, (float(p[0]), float(p[1]))) for k, (s, a, p) in zip(keys, rows, strict=True)}
    assert len(out) == t.num_rows > 0  # (entity, time) identifies a row
    return out


def _same(rows: dict, ref: dict) -> None:
    assert rows.keys() == ref.keys()
    for k, (split, alt, pos) in ref.items():
        got = rows[k]
        assert got[0] == split and got[2] == pos
        assert got[1] == alt or (np.isnan(got[1]) and np.isnan(alt))


def _manifest(path: Path) -> dict:
    return json.loads((path / "dataset_manifest.json").read_text())


def _units_from_manifest(path: Path) -> dict:
    mods = _manifest(path)["modalities"]
    return {k: mods[k]["unit"] for k in UNITS}


def test_npz_with_numpy(quick: dict[str, Path]) -> None:
    path = quick["npz"]
    man = _manifest(path)
    rows = {}
    for e in man["shards"]:
        data = (path / e["path"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == e["sha256"]
        with np.load(path / e["path"], allow_pickle=False) as z:
            n = int(z["_n_steps"])
            entity = str(z["_entity"])
            for t, alt, pos in zip(
                z["_time_s"][:n], z["altitude"][:n], z["position"][:n], strict=True
            ):
                rows[(entity, float(t))] = (e["split"], float(alt), (float(pos[0]), float(pos[1])))
            assert np.isnan(z["_time_s"][n:]).all() and not z["_present"][n:].any()
    assert _units_from_manifest(path) == UNITS
    _same(rows, _reference(path))


def test_json_with_the_standard_library(quick: dict[str, Path]) -> None:
    path = quick["json"]
    rows = {}
    nonfinite = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}
    for e in _manifest(path)["shards"]:
        arrays = json.loads((path / e["path"]).read_text())["arrays"]
        n = arrays["_n_steps"]["data"]
        entity = arrays["_entity"]["data"]
        assert arrays["altitude"]["unit"] == "ft" and arrays["_time_s"]["unit"] == "s"
        alt = [nonfinite.get(v, v) if isinstance(v, str) else v for v in arrays["altitude"]["data"]]
        for t, a, pos in zip(
            arrays["_time_s"]["data"][:n], alt[:n], arrays["position"]["data"][:n], strict=True
        ):
            rows[(entity, t)] = (e["split"], float(np.float32(a)), tuple(pos))
    _same(rows, _reference(path))


def test_hdf5_with_h5py(quick: dict[str, Path]) -> None:
    import h5py

    path = quick["hdf5"]
    rows = {}
    for e in _manifest(path)["shards"]:
        with h5py.File(path / e["path"], "r") as f:
            units = {k: f[k].attrs.get("unit") for k in UNITS}
            assert units == UNITS and f["_time_s"].attrs["unit"] == "s"
            assert f["altitude"].attrs["name"] == "altitude"
            n = int(f["_n_steps"][()])
            entity = f["_entity"].asstr()[()]
            t, alt, pos = f["_time_s"][:n], f["altitude"][:n], f["position"][:n]
        for ti, a, p in zip(t, alt, pos, strict=True):
            rows[(entity, float(ti))] = (e["split"], float(a), (float(p[0]), float(p[1])))
    _same(rows, _reference(path))


def _parquet_rows(splits, entities, times, alts, positions) -> dict:
    return {
        (ent, float(t)): (s, float(a), (float(p[0]), float(p[1])))
        for s, ent, t, a, p in zip(splits, entities, times, alts, positions, strict=True)
    }


def test_parquet_with_pyarrow_dataset(quick: dict[str, Path]) -> None:
    import pyarrow.compute as pc
    import pyarrow.dataset as pds

    path = quick["parquet"]
    # the call docs/format.md gives: the split is the folder, metadata files are skipped
    dataset = pds.dataset(
        path, format="parquet", partitioning=["split"], exclude_invalid_files=True
    )
    table = dataset.to_table(filter=~pc.is_nan(pc.field("_time_s")))
    units = {
        k: json.loads(table.schema.field(k).metadata.get(b"kuration.unit", b"null")) for k in UNITS
    }
    assert units == UNITS
    pos = table.column("position").to_pylist()
    rows = _parquet_rows(
        table.column("split").to_pylist(),
        table.column("_entity").to_pylist(),
        table.column("_time_s").to_pylist(),
        table.column("altitude").to_pylist(),
        pos,
    )
    _same(rows, _reference(path))


def test_parquet_with_polars(quick: dict[str, Path]) -> None:
    import polars as pl

    path = quick["parquet"]
    df = (
        pl.scan_parquet(f"{path}/*/*.parquet", include_file_paths="file")
        .filter(pl.col("_time_s").is_not_nan())
        .with_columns(split=pl.col("file").str.extract(r"([^/]+)/[^/]+$", 1))
        .collect()
    )
    rows = _parquet_rows(
        df["split"].to_list(),
        df["_entity"].to_list(),
        df["_time_s"].to_list(),
        df["altitude"].to_list(),
        df["position"].to_list(),
    )
    assert (
        pl.read_json(path / "dataset_manifest.json")["modalities"].struct.field("altitude")[0][
            "unit"
        ]
        == "ft"
    )
    _same(rows, _reference(path))


def test_parquet_with_duckdb(quick: dict[str, Path]) -> None:
    import duckdb

    path = quick["parquet"]
    con = duckdb.connect()
    got = con.sql(
        f"""SELECT regexp_extract(filename, '([^/]+)/[^/]+$', 1) AS split, _entity, _time_s,
                   altitude, position
            FROM read_parquet('{path}/*/*.parquet', filename = true)
            WHERE NOT isnan(_time_s)"""
    ).fetchall()
    rows = _parquet_rows(*zip(*got, strict=True))
    unit = con.sql(
        f"SELECT modalities.altitude.unit FROM read_json('{path}/dataset_manifest.json')"
    ).fetchall()
    assert unit == [("ft",)]
    _same(rows, _reference(path))


def test_parquet_with_hugging_face_datasets(
    quick: dict[str, Path], tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import datasets

    datasets.disable_progress_bars()
    path = quick["parquet"]
    files = {s: f"{path}/{s}/*.parquet" for s in ("train", "test")}
    dd = datasets.load_dataset("parquet", data_files=files, cache_dir=str(tmp_path / "hf"))
    rows = {}
    for split, d in dd.items():
        d = d.filter(lambda r: not np.isnan(r["_time_s"]))
        rows.update(
            _parquet_rows(
                [split] * len(d), d["_entity"], d["_time_s"], d["altitude"], d["position"]
            )
        )
    assert rows and all(re.fullmatch(r"str:[0-9a-f]{6}", entity) for entity, _ in rows)
    _same(rows, _reference(path))
