"""Checks every registered container must pass (driven by the registry), plus the built-ins' specifics."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
import zipfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from kuration.extend import get_container, register_container, registered_containers
from kuration.output.containers import require_container

BUILTIN = ("hdf5", "json", "npz", "parquet")
DTYPES = ("bool", "uint8", "int16", "int64", "float32", "float64")


def _shard(length: int = 16) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    pos = rng.normal(size=(length, 3)).astype(np.float32)
    pos[3, 1] = np.nan
    pos[4, 0] = np.inf
    pos[5, 2] = -np.inf
    return {
        "pos": pos,
        "frame": rng.integers(0, 255, size=(length, 4, 5, 3), dtype=np.uint8),
        "alt": rng.normal(size=length),
        "count": rng.integers(-(2**40), 2**40, size=length),
        "_present": rng.random(length) > 0.3,
        "_n_steps": np.array(length - 2, dtype=np.int64),
        "_time_s": 1.6e9 + np.arange(length, dtype=np.float64),
        "_entity": np.array("str:élan/3c6444"),  # non-ASCII on purpose
    }


@pytest.fixture(params=registered_containers())
def container(request: pytest.FixtureRequest):
    try:
        return require_container(request.param)
    except ImportError as exc:  # pragma: no cover - optional dependency absent
        pytest.skip(str(exc))


def test_builtins_are_registered() -> None:
    assert set(BUILTIN) <= set(registered_containers())


def test_round_trip_keeps_values_shapes_and_dtypes(container) -> None:
    arrays = _shard()
    back = container.loads(container.dumps(arrays))
    assert set(back) == set(arrays)
    for name, a in arrays.items():
        assert back[name].dtype == a.dtype, name
        assert back[name].shape == a.shape, name
        np.testing.assert_array_equal(back[name], a)


def test_same_arrays_give_the_same_bytes(container) -> None:
    a, b = _shard(), _shard()
    assert container.dumps(a) == container.dumps(b)
    assert container.dumps(dict(reversed(list(a.items())))) == container.dumps(b)
    # non-contiguous and big-endian inputs are normalized, not written differently
    strided = {k: v.copy() for k, v in a.items()}
    strided["pos"] = np.asfortranarray(a["pos"])
    strided["alt"] = a["alt"].astype(">f8")
    assert container.dumps(strided) == container.dumps(a)


def test_bytes_do_not_change_across_processes() -> None:
    """No timestamps or per-process state: a fresh interpreter writes the same bytes."""
    names = ",".join(repr(n) for n in BUILTIN)
    code = (
        "import hashlib, numpy as np;"
        "from kuration.output.containers import get_container as g;"
        "a={'x': np.arange(12, dtype=np.float32).reshape(4, 3), '_n_steps': np.array(4)};"
        f"print(' '.join(hashlib.sha256(g(n).dumps(a)).hexdigest() for n in ({names},)))"
    )
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    a = {"x": np.arange(12, dtype=np.float32).reshape(4, 3), "_n_steps": np.array(4)}
    here = " ".join(hashlib.sha256(get_container(n).dumps(a)).hexdigest() for n in BUILTIN)
    assert there.stdout.strip() == here


@settings(max_examples=25, deadline=None)
@given(
    name=st.sampled_from(BUILTIN),
    arr=hnp.arrays(
        dtype=st.sampled_from(DTYPES).map(np.dtype),
        shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5),
    ),
)
def test_any_numeric_array_round_trips(name: str, arr: np.ndarray) -> None:
    c = require_container(name)
    back = c.loads(c.dumps({"a": arr, "_n_steps": np.array(arr.shape[0])}))
    assert back["a"].dtype == arr.dtype and back["a"].shape == arr.shape
    np.testing.assert_array_equal(back["a"], arr)
    assert int(back["_n_steps"]) == arr.shape[0]


@settings(max_examples=25, deadline=None)
@given(
    name=st.sampled_from(BUILTIN),
    label=st.text(
        st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
        min_size=1,
        max_size=40,
    ),
)
def test_any_entity_label_round_trips(name: str, label: str) -> None:
    """The 0-d string ``_entity`` (any unicode but NUL, which NumPy strings cannot end
    with, and lone surrogates, which UTF-8 cannot encode) survives every container."""
    c = require_container(name)
    arrays = {"a": np.arange(3.0), "_entity": np.array(label), "_n_steps": np.array(3)}
    back = c.loads(c.dumps(arrays))
    assert back["_entity"].ndim == 0 and str(back["_entity"].item()) == label


def test_npz_reads_with_plain_numpy_and_no_pickles() -> None:
    data = get_container("npz").dumps(_shard())
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        assert z["frame"].dtype == np.uint8
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert {i.date_time for i in zf.infolist()} == {(1980, 1, 1, 0, 0, 0)}


def test_compressed_npz_is_deterministic_too() -> None:
    from kuration.output.containers import NpzContainer

    c = NpzContainer(compresslevel=6)
    data = c.dumps(_shard())
    assert data == c.dumps(_shard()) and len(data) < len(get_container("npz").dumps(_shard()))
    np.testing.assert_array_equal(c.loads(data)["frame"], _shard()["frame"])


def test_json_is_strict_json_with_named_non_finite_values() -> None:
    from kuration.core.jsonio import loads_strict

    doc = loads_strict(get_container("json").dumps(_shard()))  # no NaN literals
    flat = str(doc["arrays"]["pos"]["data"])
    assert "'NaN'" in flat and "'Infinity'" in flat and "'-Infinity'" in flat
    with pytest.raises(ValueError, match="bad values"):
        bad = get_container("json").dumps({"a": np.zeros(2)}).replace(b"0.0]", b'"oops"]')
        get_container("json").loads(bad)


def test_parquet_stores_tensors_as_flat_list_columns() -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(pa.BufferReader(get_container("parquet").dumps(_shard())))
    assert pa.types.is_fixed_size_list(table.schema.field("frame").type)
    assert table.schema.field("frame").type.list_size == 4 * 5 * 3
    assert table.schema.field("alt").type == pa.float64()
    # shard-level values are in the schema metadata and repeated on every row for row tools
    scalars = json.loads(table.schema.metadata[b"kuration.scalars"])
    assert scalars["_n_steps"] == ["i8", 14] and scalars["_entity"] == ["str", "str:élan/3c6444"]
    assert table.column("_n_steps").to_pylist() == [14] * 16
    assert set(table.column("_entity").to_pylist()) == {"str:élan/3c6444"}
    assert table.schema.field("_entity").metadata[b"kuration.scalar"] == b"true"


def test_units_travel_as_attributes_where_the_format_has_them() -> None:
    import h5py
    import pyarrow as pa
    import pyarrow.parquet as pq

    attrs = {"pos": {"name": "pos", "unit": ["m", "m", "ft"]}, "alt": {"name": "alt", "unit": "ft"}}
    arrays = _shard()
    with h5py.File(io.BytesIO(get_container("hdf5").dumps(arrays, attrs=attrs)), "r") as f:
        assert f["alt"].attrs["unit"] == "ft" and f["alt"].attrs["name"] == "alt"
        assert list(f["pos"].attrs["unit"]) == ["m", "m", "ft"]
        assert f["_entity"].asstr()[()] == "str:élan/3c6444"
    schema = pq.read_schema(pa.BufferReader(get_container("parquet").dumps(arrays, attrs=attrs)))
    assert json.loads(schema.field("pos").metadata[b"kuration.unit"]) == ["m", "m", "ft"]
    doc = json.loads(get_container("json").dumps(arrays, attrs=attrs))
    assert doc["arrays"]["alt"]["unit"] == "ft" and doc["arrays"]["_entity"]["dtype"] == "str"
    for name in ("hdf5", "parquet", "json"):  # attributes keep the bytes deterministic
        c = get_container(name)
        assert c.dumps(arrays, attrs=attrs) == c.dumps(dict(arrays), attrs=dict(attrs))
    npz = get_container("npz")
    assert npz.dumps(arrays, attrs=attrs) == npz.dumps(arrays)  # npz has no attributes


def test_hdf5_without_h5py_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "h5py", None)
    with pytest.raises(ImportError, match=r"kuration-sdk\[array\]"):
        require_container("hdf5")
    with pytest.raises(ImportError, match=r"\[array\]"):
        get_container("hdf5").dumps({"a": np.zeros(2)})


def test_register_a_container() -> None:
    class Raw:
        suffix = ".raw"

        def dumps(self, arrays):
            return get_container("npz").dumps(arrays)

        def loads(self, data):
            return get_container("npz").loads(data)

    register_container("raw-test", Raw())
    try:
        assert "raw-test" in registered_containers()
        with pytest.raises(ValueError, match="already registered"):
            register_container("raw-test", Raw())
    finally:
        from kuration.output.containers import _CONTAINERS

        _CONTAINERS.unregister("raw-test")
    with pytest.raises(ValueError, match="suffix"):
        register_container("broken", object())  # type: ignore[arg-type]


def test_parquet_columns_carry_each_calls_units() -> None:
    """Column fields are built once per distinct (name, type, shape, unit) and reused; a
    shard with other units, or none, still gets its own metadata."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq_c, arrays = get_container("parquet"), _shard()
    a = {"pos": {"unit": ["m", "m", "ft"]}, "alt": {"unit": "ft"}}
    b = {"pos": {"unit": ["m", "m", "m"]}, "alt": {"unit": "m"}}
    first, other, bare, again = (
        pq_c.dumps(arrays, attrs=a),
        pq_c.dumps(arrays, attrs=b),
        pq_c.dumps(arrays),
        pq_c.dumps(arrays, attrs=a),
    )
    assert first == again and len({first, other, bare}) == 3

    def units(data: bytes) -> dict[str, object]:
        schema = pq.read_schema(pa.BufferReader(data))
        return {
            f.name: json.loads(f.metadata[b"kuration.unit"])
            for f in schema
            if b"kuration.unit" in (f.metadata or {})
        }

    assert units(first) == {"pos": ["m", "m", "ft"], "alt": "ft"}
    assert units(other) == {"pos": ["m", "m", "m"], "alt": "m"}
    assert units(bare) == {}
