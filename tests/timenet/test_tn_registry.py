from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tn_helpers import write_demo

import timenet as tn


def test_local_listing_ignores_staging_and_uncommitted(tmp_path: Path) -> None:
    write_demo(tmp_path, "1.0")
    write_demo(tmp_path, "1.10")
    write_demo(tmp_path, "1.9")
    (tmp_path / "acme/demo/.staging-2.0-abc").mkdir()
    (tmp_path / "acme/demo/3.0").mkdir()  # no manifest: not a version
    (tmp_path / ".hidden/x/1.0").mkdir(parents=True)
    reg = tn.LocalRegistry(tmp_path)
    assert reg.datasets() == [("acme", "demo")]
    assert reg.versions("acme", "demo") == ["1.0", "1.9", "1.10"]
    assert reg.latest("acme", "demo") == "1.10"
    assert reg.has(tn.Ref("acme", "demo", "1.9"))
    assert not reg.has(tn.Ref("acme", "demo", "3.0"))
    with pytest.raises(tn.DatasetNotFoundError):
        reg.open_version(tn.Ref("acme", "demo", "3.0"))


def test_clean_staging_respects_age(tmp_path: Path) -> None:
    (tmp_path / "acme/demo/.staging-1-x").mkdir(parents=True)
    reg = tn.LocalRegistry(tmp_path)
    assert reg.clean_staging(min_age_s=3600) == []
    assert len(reg.clean_staging()) == 1


def test_default_registries_from_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TIMENET_REGISTRY", f"{tmp_path}/a:s3://bucket/p:{tmp_path}/b")
    assert tn.default_registries() == [f"{tmp_path}/a", "s3://bucket/p", f"{tmp_path}/b"]
    monkeypatch.delenv("TIMENET_REGISTRY")
    assert tn.default_registries() == [str(Path("~/.cache/timenet/registry").expanduser())]


@pytest.mark.slow
def test_publish_then_read_from_s3(tmp_path: Path, s3: dict[str, Any]) -> None:
    local = tmp_path / "local"
    vdir = write_demo(local, "1.0")
    write_demo(local, "2.0")
    url = f"s3://{s3['bucket']}/registry"
    opts = s3["storage_options"]
    assert tn.publish(vdir, url, storage_options=opts) == f"{url}/acme/demo/1.0"
    with pytest.raises(tn.VersionExistsError):
        tn.publish(vdir, url, storage_options=opts)
    tn.publish(local / "acme/demo/2.0", url, storage_options=opts)

    remote = tn.RemoteRegistry(url, storage_options=opts, cache_dir=tmp_path / "cache")
    assert remote.datasets() == [("acme", "demo")]
    assert remote.versions("acme", "demo") == ["1.0", "2.0"]

    client = tn.TimeNet([remote])
    reader = client.open("acme/demo@1.0")
    local_reader = tn.TimeFReader.open(vdir)
    assert reader.records() == local_reader.records()
    np.testing.assert_array_equal(
        reader.signal("rec-1", "ecg").to_numpy(), local_reader.signal("rec-1", "ecg").to_numpy()
    )
    np.testing.assert_array_equal(
        reader.signal("rec-1", "acc").read_steps(2, 7),
        local_reader.signal("rec-1", "acc").read_steps(2, 7),
    )
    loaded = client.load("acme/demo")
    assert str(loaded.ref) == "acme/demo@2.0"
    assert loaded.tasks() == tn.TimeFReader.open(local / "acme/demo/2.0").tasks()
    assert loaded.signal("rec-2", "temp").to_arrow().null_count == 1

    # a registry given as URL string + options behaves the same
    client2 = tn.TimeNet([url], storage_options=opts, cache_dir=tmp_path / "cache2")
    assert [(d.org, d.name, d.versions) for d in client2.list()] == [
        ("acme", "demo", ("1.0", "2.0"))
    ]
    # download from the remote into a fresh local registry
    out = client2.download("acme/demo@1.0", tmp_path / "copy")
    assert tn.TimeFReader.open(out).records() == local_reader.records()


@pytest.mark.slow
def test_remote_tampered_object_detected(tmp_path: Path, s3: dict[str, Any]) -> None:
    import s3fs

    vdir = write_demo(tmp_path / "local", "1.0")
    url = f"s3://{s3['bucket']}/r"
    opts = s3["storage_options"]
    tn.publish(vdir, url, storage_options=opts)
    fs = s3fs.S3FileSystem(**opts)
    key = next(p for p in fs.find(f"{s3['bucket']}/r") if p.endswith("-ecg.parquet"))
    data = bytearray(fs.cat_file(key))
    data[len(data) // 2] ^= 0xFF
    fs.pipe_file(key, bytes(data))
    reader = tn.TimeNet([url], storage_options=opts, cache_dir=tmp_path / "c").open("acme/demo")
    with pytest.raises(tn.IntegrityError, match="sha256"):
        reader.signal("rec-0", "ecg").to_numpy()
    # nothing corrupt was left in the cache
    assert not list((tmp_path / "c").rglob("*-ecg.parquet"))


def test_remote_registry_on_memory_filesystem(tmp_path: Path) -> None:
    vdir = write_demo(tmp_path / "local", "0.1")
    url = "memory://tn-test-registry"
    tn.publish(vdir, url)
    try:
        reader = tn.TimeNet([url], cache_dir=tmp_path / "cache").open("acme/demo")
        assert reader.signal("rec-0", "events").times().tolist() == [10, 2_000, 90_000]
    finally:
        import fsspec

        fsspec.filesystem("memory").rm("/tn-test-registry", recursive=True)
