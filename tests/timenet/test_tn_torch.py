from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tn_helpers import write_demo

import timenet as tn

torch = pytest.importorskip("torch")


@pytest.mark.slow
def test_dataloader_with_two_workers(tmp_path: Path) -> None:
    write_demo(tmp_path, "1.0", records=6)
    client = tn.TimeNet([tmp_path])
    ds = client.open_torch("acme/demo", signals=["ecg", "acc"], units={"acc": "cm/s^2"})
    assert len(ds) == 6
    loader = torch.utils.data.DataLoader(ds, batch_size=2, num_workers=2)
    batches = list(loader)
    assert len(batches) == 3
    ids = [rid for b in batches for rid in b["record_id"]]
    assert ids == [f"rec-{i}" for i in range(6)]
    reader = client.open("acme/demo")
    first = batches[0]["signals"]
    assert first["ecg"].shape == (2, 500) and first["ecg"].dtype == torch.float32
    np.testing.assert_array_equal(first["ecg"][1].numpy(), reader.signal("rec-1", "ecg").to_numpy())
    np.testing.assert_allclose(
        first["acc"][0].numpy(), reader.signal("rec-0", "acc").to_numpy() * 100.0
    )


def test_item_contents_and_transform(tmp_path: Path) -> None:
    write_demo(tmp_path, "1.0", records=2)
    ds = tn.TimeNet([tmp_path]).open_torch(
        "acme/demo", signals=["events"], transform=lambda item: item["signals"]["events"].sum()
    )
    assert int(ds[1]) == 6


def test_package_works_without_torch(tmp_path: Path) -> None:
    write_demo(tmp_path, "1.0", records=1)
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import timenet as tn\n"
        f"c = tn.TimeNet([{str(tmp_path)!r}])\n"
        "assert c.load('acme/demo').signal('rec-0', 'ecg').to_numpy().shape == (500,)\n"
        "try:\n    c.open_torch('acme/demo')\nexcept ImportError:\n    print('no torch ok')\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert "no torch ok" in res.stdout


def test_items_own_their_arrays(tmp_path: Path) -> None:
    """Items share no memory: the regular time axes reused between records are copied
    into each item, so a transform that edits an item in place changes no other item;
    values, masks and times equal the reader's."""
    write_demo(tmp_path, "1.0", records=3)
    client = tn.TimeNet([tmp_path])
    ds = client.open_torch("acme/demo", signals=["ecg", "temp", "events"])
    first = ds[0]
    for part in ("signals", "mask", "times"):
        for tensor in first[part].values():
            tensor.zero_()
    reader = client.open("acme/demo")
    for i in (0, 1):
        item = ds[i]
        for name in ("ecg", "temp", "events"):
            sig = reader.signal(f"rec-{i}", name)
            masked = sig.to_masked()
            np.testing.assert_array_equal(item["times"][name].numpy(), sig.times())
            np.testing.assert_array_equal(item["mask"][name].numpy(), ~masked.mask)
            want = masked.filled(np.nan if masked.dtype.kind == "f" else 0)
            np.testing.assert_array_equal(item["signals"][name].numpy(), want)
