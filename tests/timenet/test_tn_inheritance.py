"""Dataset inheritance: a child copies the catalog entries it uses and reads the parent's files."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
from tn_helpers import write_demo

import timenet as tn
from timenet import build as tb

PARENT = "acme/demo@1.0.0"


class ChildConnector(tb.Connector):
    """A small child: imports two demo records (signals ecg, acc, events) and adds a label."""

    created: ClassVar[str] = "2025-01-01T00:00:00+00:00"

    def metadata(self) -> tn.DatasetCard:
        return tn.DatasetCard(
            org="acme",
            name="child",
            version="1.0",
            license="CC-BY-4.0",
            origin="test",
            parents=(PARENT,),
        )

    def download(self) -> None:
        pass

    def convert(self, writer: tn.TimeFWriter) -> None:
        parent = self.parents[PARENT]
        parent.import_records(
            writer,
            ["rec-2", "rec-0"],
            as_id=lambda rid: f"c-{rid}",
            signals=["ecg", "acc", "events"],
        )
        writer.add_annotation("c-rec-0", tn.Label("child-label"), start_ns=0, stop_ns=10)


@pytest.fixture
def built(tmp_path: Path) -> Path:
    reg = tmp_path / "reg"
    write_demo(reg)
    res = tb.run_pipeline(ChildConnector, reg)
    assert res.built
    return reg


def test_child_reads_parent_values_without_parent_catalog(built: Path) -> None:
    parent_dir = built / "acme" / "demo" / "1.0.0"
    child_dir = built / "acme" / "child" / "1.0"
    m = tn.TimeFReader.open(child_dir).manifest
    assert m.card.parents == (PARENT,)
    assert [p.ref for p in m.payloads] == [PARENT]
    pinned = {f.path for f in m.payloads[0].files}
    assert "values/0000-ecg.parquet" in pinned and "values/times.parquet" in pinned
    assert not any(f.path.startswith("values/") for f in m.files)  # no second copy of values
    expected = tn.TimeFReader.open(parent_dir).signal("rec-2", "ecg").to_numpy()
    (parent_dir / "control.duckdb").unlink()  # a read never opens the parent's catalog
    client = tn.TimeNet([built], auto_build=False)
    child = client.open("acme/child@1.0")
    assert [r.id for r in child.records()] == ["c-rec-0", "c-rec-2"]  # parent storage order
    np.testing.assert_array_equal(child.signal("c-rec-2", "ecg").to_numpy(), expected)
    assert child.signal("c-rec-0", "acc").to_numpy().shape == (40, 3)
    assert child.signal("c-rec-0", "events").times().tolist() == [10, 2_000, 90_000]
    assert child.get("record", "rec-2", parent=PARENT).id == "c-rec-2"
    task = child.get("task", 0, parent=PARENT)
    assert isinstance(task, tn.Task) and task.record_id == "c-rec-0"
    with pytest.raises(tn.RecordNotFoundError):
        child.get("record", "rec-1", parent=PARENT)
    labels = sorted(
        a.content.value for a in child.annotations("c-rec-0") if a.content.kind == "label"
    )
    assert labels == ["child-label", "sinus"]
    loaded = client.load("acme/child")
    assert loaded.signal("c-rec-2", "acc").to_numpy().shape == (40, 3)
    assert "temp" not in child.record("c-rec-0").signal_names


def test_changed_parent_file_is_rejected(built: Path) -> None:
    parent_file = built / "acme" / "demo" / "1.0.0" / "values" / "0000-ecg.parquet"
    data = bytearray(parent_file.read_bytes())
    data[100] ^= 0xFF
    parent_file.write_bytes(bytes(data))
    child = tn.TimeNet([built], auto_build=False).open("acme/child@1.0")
    with pytest.raises(tn.IntegrityError, match="0000-ecg.parquet") as info:
        child.signal("c-rec-0", "ecg").to_numpy()
    assert "payload of acme/child@1.0" in str(info.value)
    # building another child on that parent release refuses the changed copy
    shutil.rmtree(built / "acme" / "child")
    with pytest.raises(tb.ParentError, match="acme/demo@1.0.0"):
        tb.run_pipeline(ChildConnector, built)
    assert tn.LocalRegistry(built).versions("acme", "child") == []


def test_parent_copied_from_fetch_from(tmp_path: Path) -> None:
    src = tmp_path / "mirror"
    write_demo(src)
    reg = tmp_path / "reg"
    res = tb.run_pipeline(ChildConnector, reg, fetch_from=src)
    assert (reg / "acme" / "demo" / "1.0.0" / "manifest.json").is_file()
    child = tn.TimeFReader.open(res.path)
    assert child.signal("c-rec-0", "ecg").to_numpy().dtype == np.float32
    # without any source of the parent the build stops with a clear error
    with pytest.raises(tb.ParentError, match="no connector found"):
        tb.run_pipeline(ChildConnector, tmp_path / "empty")


def test_missing_payload_source_is_named(built: Path, tmp_path: Path) -> None:
    moved = tmp_path / "elsewhere"
    shutil.copytree(built / "acme" / "child", moved / "acme" / "child")
    with pytest.raises(tn.DatasetNotFoundError, match="payload source"):
        tn.TimeFReader.open(moved / "acme" / "child" / "1.0", registries=[tmp_path / "none"])
    reader = tn.TimeFReader.open(moved / "acme" / "child" / "1.0", registries=[built])
    assert len(reader.signal("c-rec-0", "ecg")) == 500


class TwiceConnector(ChildConnector):
    """Imports rec-0 with one signal, then again with every signal among other records."""

    def convert(self, writer: tn.TimeFWriter) -> None:
        parent = self.parents[PARENT]
        first = parent.import_record(writer, "rec-0", as_id="c-rec-0", signals=["ecg"])
        ids = parent.import_records(writer, ["rec-1", "rec-0"], as_id=lambda rid: f"c-{rid}")
        assert first == "c-rec-0" and ids == ["c-rec-0", "c-rec-1"]
        assert parent.import_record(writer, "rec-0") == "c-rec-0"  # the ID map, not a new copy


def test_importing_a_record_twice_reuses_the_copy(tmp_path: Path) -> None:
    reg = tmp_path / "reg"
    parent_dir = write_demo(reg)
    res = tb.run_pipeline(TwiceConnector, reg)
    child = tn.TimeFReader.open(res.path)
    parent = tn.TimeFReader.open(parent_dir)
    assert [r.id for r in child.records()] == ["c-rec-0", "c-rec-1"]
    assert child.record("c-rec-0").signal_names == ("ecg", "temp", "acc", "events")
    np.testing.assert_array_equal(
        child.signal("c-rec-0", "acc").to_numpy(), parent.signal("rec-0", "acc").to_numpy()
    )
    # each parent annotation and task copied once: the lineage maps every parent id once
    assert len(child.annotations("c-rec-0")) == len(parent.annotations("rec-0"))
    assert len(child.tasks("c-rec-0")) == len(parent.tasks("rec-0"))
    lineage = child.query("SELECT kind, count(*) AS n FROM lineage GROUP BY kind ORDER BY kind")
    assert lineage.to_pylist() == [
        {"kind": "annotation", "n": 4},
        {"kind": "record", "n": 2},
        {"kind": "task", "n": 2},
    ]

    class Clash(ChildConnector):
        def convert(self, writer: tn.TimeFWriter) -> None:
            self.parents[PARENT].import_record(writer, "rec-0", as_id="a")
            self.parents[PARENT].import_record(writer, "rec-0", as_id="b")

    with pytest.raises(tb.ParentError, match="'rec-0' is already imported as 'a', not 'b'"):
        tb.run_pipeline(Clash, tmp_path / "other", fetch_from=reg)


def _build_child(ref: tn.Ref, registry: tn.LocalRegistry, *, fetch_from: tuple = ()) -> bool:
    """A builder hook that knows one connector (the client passes its fetch_from)."""
    if (ref.org, ref.name) != ("acme", "child"):
        return False
    tb.run_pipeline(ChildConnector, registry, parent_sources=fetch_from)
    return True


def test_client_fetch_from_pulls_a_missing_parent_from_s3(tmp_path: Path, s3: dict) -> None:
    parent_dir = write_demo(tmp_path / "publisher")
    url = f"s3://{s3['bucket']}/registry"
    tn.publish(parent_dir, url, storage_options=s3["storage_options"])
    local = tmp_path / "local"
    local.mkdir()
    opts = {"storage_options": s3["storage_options"], "cache_dir": tmp_path / "cache"}
    client = tn.TimeNet([local], fetch_from=url, builder=_build_child, **opts)
    # the parent has no connector: only the copy from the remote registry can provide it
    child = client.open("acme/child@1.0")
    copied = local / "acme" / "demo" / "1.0.0"
    assert (copied / "manifest.json").read_bytes() == (parent_dir / "manifest.json").read_bytes()
    np.testing.assert_array_equal(
        child.signal("c-rec-2", "ecg").to_numpy(),
        tn.TimeFReader.open(parent_dir).signal("rec-2", "ecg").to_numpy(),
    )
    # a missing payload source is fetched again, before any build
    shutil.rmtree(copied)
    again = tn.TimeNet([local], fetch_from=url, auto_build=False, **opts)
    assert len(again.open("acme/child@1.0").signal("c-rec-0", "acc")) == 40
    assert (copied / "manifest.json").is_file()
    # and a missing dataset itself comes from fetch_from rather than a build
    shutil.rmtree(copied)
    assert again.open("acme/demo").ref == tn.parse_ref("acme/demo@1.0.0")
    without = tn.TimeNet([tmp_path / "empty"], builder=_build_child, **opts)
    with pytest.raises(tb.ParentError, match="no connector found"):
        without.open("acme/child@1.0")


def test_a_downloaded_child_opens_on_its_own(built: Path, tmp_path: Path, capsys) -> None:
    """``timenet download`` of a child copied only its manifest and catalog: opening the copy
    failed for want of the parent's values. Its payload release comes along now."""
    from timenet.cli import main as tn_main

    dest = tmp_path / "copy"
    argv = ["download", "acme/child@1.0", str(dest), "--registry", str(built)]
    assert tn_main(argv) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.strip() == str(dest / "acme" / "child" / "1.0")
    assert (dest / "acme" / "demo" / "1.0.0" / "manifest.json").is_file()
    shutil.rmtree(built)  # the copy needs nothing of the registry it came from
    child = tn.TimeNet([dest], auto_build=False).open("acme/child@1.0", verify=True)
    assert [r.id for r in child.records()] == ["c-rec-0", "c-rec-2"]
    assert child.signal("c-rec-2", "ecg").to_numpy().shape == (500,)
    alone = tn.TimeFReader.open(dest / "acme" / "child" / "1.0", registries=[dest])
    assert alone.signal("c-rec-0", "acc").to_numpy().shape == (40, 3)


def test_a_child_download_checks_the_payload_it_finds(built: Path, tmp_path: Path) -> None:
    dest = tmp_path / "copy"
    client = tn.TimeNet([built], auto_build=False)
    client.download("acme/demo@1.0.0", dest)
    bad = dest / "acme" / "demo" / "1.0.0" / "values" / "0000-ecg.parquet"
    data = bytearray(bad.read_bytes())
    data[len(data) // 2] ^= 0xFF
    bad.write_bytes(bytes(data))  # a copy already there, changed since
    with pytest.raises(tn.IntegrityError, match="0000-ecg.parquet"):
        client.download("acme/child@1.0", dest)
    assert not (dest / "acme" / "child" / "1.0").exists()


def test_a_child_download_names_the_payload_release_it_lacks(
    built: Path, tmp_path: Path, capsys
) -> None:
    from timenet.cli import main as tn_main

    only_child = tmp_path / "only-child"
    shutil.copytree(built / "acme" / "child", only_child / "acme" / "child")
    reader_regs = [str(only_child), str(built)]
    # the child resolves with its parent's registry, but the client downloading it lacks it
    client = tn.TimeNet(reader_regs, auto_build=False)
    dest = tmp_path / "copy"
    client.download("acme/child@1.0", dest)  # both found: works
    argv = ["download", "acme/child@1.0", str(tmp_path / "c2"), "--registry", str(only_child)]
    assert tn_main(argv) == 1
    err = capsys.readouterr().err
    assert "acme/demo@1.0.0" in err and "payload source of acme/child@1.0" in err, err
    assert not (tmp_path / "c2" / "acme" / "child").exists()
