from __future__ import annotations

import time
from pathlib import Path

import pytest
from tn_helpers import write_demo

import timenet as tn


def test_open_latest_and_exact(tmp_path: Path) -> None:
    write_demo(tmp_path, "1.0")
    write_demo(tmp_path, "1.2")
    client = tn.TimeNet([tmp_path])
    assert str(client.open("acme/demo").ref) == "acme/demo@1.2"
    assert str(client.open("acme/demo@1.0").ref) == "acme/demo@1.0"
    assert client.info("acme/demo").counts.records == 3


def test_registries_searched_in_order(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    write_demo(a, "1.0", records=1)
    write_demo(b, "1.0", records=2)
    write_demo(b, "2.0", records=2)
    client = tn.TimeNet([a, b])
    assert len(client.open("acme/demo@1.0")) == 1  # first registry wins
    assert str(client.open("acme/demo").ref) == "acme/demo@2.0"  # newest anywhere
    assert len(tn.TimeNet([b, a]).open("acme/demo@1.0")) == 2


def test_missing_dataset_names_ref_and_registries(tmp_path: Path) -> None:
    client = tn.TimeNet([tmp_path / "x", tmp_path / "y"])
    with pytest.raises(tn.DatasetNotFoundError) as info:
        client.open("acme/none@1.0")
    assert info.value.ref == "acme/none@1.0"
    assert info.value.registries == (str(tmp_path / "x"), str(tmp_path / "y"))
    assert isinstance(info.value, FileNotFoundError)
    with pytest.raises(tn.InvalidRefError):
        client.open("not-a-ref")


def test_auto_build_hook(tmp_path: Path) -> None:
    calls = []

    def builder(ref: tn.Ref, registry: tn.LocalRegistry) -> None:
        calls.append(str(ref))
        write_demo(registry.root, "1.0", name=ref.name)

    off = tn.TimeNet([tmp_path], auto_build=False, builder=builder)
    with pytest.raises(tn.DatasetNotFoundError):
        off.open("acme/built")
    client = tn.TimeNet([tmp_path], auto_build=True, builder=builder)
    assert str(client.open("acme/built").ref) == "acme/built@1.0"
    assert calls == ["acme/built"]


def test_a_file_url_registry_is_read_only(tmp_path: Path) -> None:
    """docs/timenet.md: a ``file://`` URL is searched, never written by auto-build."""
    ro, rw = tmp_path / "ro", tmp_path / "rw"
    write_demo(ro, "1.0")
    calls = []

    def builder(ref: tn.Ref, registry: tn.LocalRegistry) -> None:
        calls.append(registry.root)
        write_demo(registry.root, "1.0", name=ref.name)

    only_url = tn.TimeNet([f"file://{ro}"], builder=builder)
    assert str(only_url.open("acme/demo").ref) == "acme/demo@1.0"  # read
    with pytest.raises(tn.DatasetNotFoundError):
        only_url.open("acme/built")  # no writable registry: nothing is built
    assert calls == [] and not (ro / "acme" / "built").exists()
    both = tn.TimeNet([f"file://{ro}", rw], builder=builder)
    assert str(both.open("acme/built").ref) == "acme/built@1.0"
    assert calls == [rw]  # built into the plain path, not the file:// one
    assert not (ro / "acme" / "built").exists()


def test_a_build_into_a_file_url_is_refused(tmp_path: Path) -> None:
    from timenet.build.engine import _as_registry
    from timenet.build.errors import BuildError

    with pytest.raises(BuildError, match="read-only"):
        _as_registry(f"file://{tmp_path}")
    assert _as_registry(tmp_path).root == tmp_path


def test_default_builder_is_a_registered_hook(tmp_path: Path) -> None:
    # the client finds its default builder through register_builder / the
    # timenet.builders entry point, never by importing timenet.build
    import timenet.client as client_module

    assert client_module._default_builder() is not None  # this distribution's entry point
    calls = []

    def builder(ref: tn.Ref, registry: tn.LocalRegistry) -> None:
        calls.append(str(ref))
        write_demo(registry.root, "1.0", name=ref.name)

    tn.register_builder(builder)
    try:
        assert str(tn.TimeNet([tmp_path]).open("acme/hooked").ref) == "acme/hooked@1.0"
    finally:
        tn.register_builder(None)
    assert calls == ["acme/hooked"]
    assert client_module._default_builder() is not builder


def test_load_is_fully_in_memory(tmp_path: Path) -> None:
    vdir = write_demo(tmp_path, "1.0")
    loaded = tn.TimeNet([tmp_path]).load("acme/demo")
    for p in sorted(vdir.rglob("*"), reverse=True):
        p.unlink() if p.is_file() else p.rmdir()
    assert loaded.signal("rec-0", "acc").to_numpy().shape == (40, 3)
    assert len(loaded.annotations()) == 6


def test_download_is_verified_and_refuses_existing(tmp_path: Path) -> None:
    write_demo(tmp_path / "src", "1.0")
    client = tn.TimeNet([tmp_path / "src"])
    out = client.download("acme/demo", tmp_path / "dst")
    assert out == tmp_path / "dst/acme/demo/1.0"
    assert tn.TimeFReader.open(out).manifest == client.info("acme/demo@1.0")
    with pytest.raises(tn.VersionExistsError):
        client.download("acme/demo", tmp_path / "dst")
    # a corrupt source aborts the copy without leaving a version or staging dir
    src = next((tmp_path / "src/acme/demo/1.0/values").glob("*-ecg.parquet"))
    data = bytearray(src.read_bytes())
    data[10] ^= 1
    src.write_bytes(bytes(data))
    with pytest.raises(tn.IntegrityError):
        client.download("acme/demo", tmp_path / "dst2")
    assert not (tmp_path / "dst2").exists()  # nor the folders it created


def test_open_is_fast(tmp_path: Path) -> None:
    write_demo(tmp_path, "1.0")
    client = tn.TimeNet([tmp_path])
    client.open("acme/demo")
    t0 = time.perf_counter()
    for _ in range(10):
        client.open("acme/demo")
    assert (time.perf_counter() - t0) / 10 < 0.05
