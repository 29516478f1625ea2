"""open_torch: null and missing-signal policies, windows, the padding collate, full epochs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tn_helpers import make_card, write_demo

import timenet as tn

torch = pytest.importorskip("torch")
from torch.utils.data import DataLoader  # noqa: E402

from timenet.torch import TorchDataset, pad_collate  # noqa: E402

NAN = float("nan")


@pytest.fixture
def mixed(tmp_path: Path) -> tn.TimeNet:
    """Three records with different signal sets, a null, and regular and explicit times."""
    one_hz = tn.SignalSpec("float64", "m", rate_hz=1.0)
    with tn.TimeFWriter(tmp_path, make_card(name="mixed")) as w:
        w.add_record("a")
        w.add_signal("a", "x", np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0]), one_hz)
        w.add_signal(
            "a", "flag", np.array([True, False, True]), tn.SignalSpec("bool", "", rate_hz=1)
        )
        w.add_signal("a", "n", np.array([5, 6, 7], np.int16), tn.SignalSpec("int16", "", rate_hz=1))
        w.add_record("b")
        times = np.array([10, 20], np.int64)
        w.add_signal("b", "x", np.array([4.0, 5.0]), tn.SignalSpec("float64", "m"), times=times)
        w.add_signal("b", "n", np.array([8, 9], np.int16), tn.SignalSpec("int16", ""), times=times)
        w.add_record("c")
        w.add_signal(
            "c", "n", np.arange(1, 6, dtype=np.int16), tn.SignalSpec("int16", "", rate_hz=2)
        )
    return tn.TimeNet([tmp_path], auto_build=False)


def _np(t: object) -> np.ndarray:
    return t.numpy()  # type: ignore[attr-defined,no-any-return]


def test_default_signals_are_the_common_ones(mixed: tn.TimeNet) -> None:
    ds = mixed.open_torch("acme/mixed")
    assert ds.signal_names == ("n",) and len(ds) == 3
    item = ds[2]
    assert item["record_id"] == "c" and item["start"] == 0
    np.testing.assert_array_equal(_np(item["signals"]["n"]), [1, 2, 3, 4, 5])
    np.testing.assert_array_equal(_np(item["times"]["n"]), np.arange(5) * 500_000_000)
    assert _np(item["mask"]["n"]).all()


def test_missing_signals_error_before_the_epoch(mixed: tn.TimeNet) -> None:
    with pytest.raises(tn.MissingSignalsError) as info:
        mixed.open_torch("acme/mixed", signals=["x", "flag"], missing="error")
    assert info.value.missing == {"x": ("c",), "flag": ("b", "c")}
    assert "'flag' is missing from 2 of 3 records (b, c)" in str(info.value)
    assert "every record has: ['n']" in str(info.value)
    assert isinstance(info.value, tn.SignalNotFoundError)
    with pytest.raises(tn.MissingSignalsError, match="'nope' is missing from 3 of 3"):
        mixed.open_torch("acme/mixed", signals=["nope"])


def test_missing_and_nulls_are_filled_and_masked(mixed: tn.TimeNet) -> None:
    ds = mixed.open_torch("acme/mixed", signals=["x", "flag", "n"], units={"x": "cm"})
    assert ds.signal_units == {"x": "cm", "flag": "", "n": ""}
    a, b, c = ds[0], ds[1], ds[2]
    np.testing.assert_array_equal(_np(a["signals"]["x"]), [100.0, NAN, 300.0])
    np.testing.assert_array_equal(_np(a["mask"]["x"]), [True, False, True])
    np.testing.assert_array_equal(_np(a["times"]["x"]), [0, 1_000_000_000, 2_000_000_000])
    # b lacks flag: False values, False mask, on the times of its first signal (x)
    np.testing.assert_array_equal(_np(b["signals"]["flag"]), [False, False])
    assert not _np(b["mask"]["flag"]).any()
    np.testing.assert_array_equal(_np(b["times"]["flag"]), [10, 20])
    # c has only n: x is NaN over n's five steps
    assert _np(c["signals"]["x"]).shape == (5,) and np.isnan(_np(c["signals"]["x"])).all()
    np.testing.assert_array_equal(_np(c["times"]["x"]), np.arange(5) * 500_000_000)
    with pytest.raises(tn.NullValuesError, match="'x' of record 'a' has 1 null"):
        mixed.open_torch("acme/mixed", signals=["x"], nulls="error")


def test_collate_pads_to_the_longest_item(mixed: tn.TimeNet) -> None:
    ds = mixed.open_torch("acme/mixed", signals=["x", "n"])
    batch = next(iter(DataLoader(ds, batch_size=3, collate_fn=ds.collate)))
    assert batch["record_id"] == ["a", "b", "c"]
    x, n = _np(batch["signals"]["x"]), _np(batch["signals"]["n"])
    assert x.shape == (3, 5) and n.dtype == np.int16
    np.testing.assert_array_equal(x[1], [4.0, 5.0, NAN, NAN, NAN])
    np.testing.assert_array_equal(n[0], [5, 6, 7, 0, 0])
    np.testing.assert_array_equal(_np(batch["lengths"]["x"]), [3, 2, 5])
    np.testing.assert_array_equal(_np(batch["mask"]["x"]).sum(axis=1), [2, 2, 0])
    np.testing.assert_array_equal(_np(batch["times"]["n"])[1], [10, 20, 0, 0, 0])
    assert pad_collate([])["signals"] == {}


def test_windows(mixed: tn.TimeNet, tmp_path: Path) -> None:
    ds = mixed.open_torch("acme/mixed", signals=["n"], window=2)
    # lengths 3, 2, 5: windows start at 0, 2 | 0 | 0, 2, 4
    starts = [(it["record_id"], it["start"]) for it in (ds[i] for i in range(len(ds)))]
    assert starts == [("a", 0), ("a", 2), ("b", 0), ("c", 0), ("c", 2), ("c", 4)]
    last = ds[1]
    np.testing.assert_array_equal(_np(last["signals"]["n"]), [7, 0])
    np.testing.assert_array_equal(_np(last["mask"]["n"]), [True, False])
    np.testing.assert_array_equal(_np(last["times"]["n"]), [2_000_000_000, 0])
    assert len(mixed.open_torch("acme/mixed", signals=["n"], window=2, stride=1)) == 2 + 1 + 4
    batch = next(iter(DataLoader(ds, batch_size=6)))  # equal lengths: the default collate
    assert batch["signals"]["n"].shape == (6, 2)
    demo = write_demo(tmp_path / "demo")
    with pytest.raises(tn.SchemaError, match="record 'rec-0'.*same number of steps"):
        TorchDataset(tn.TimeFReader.open(demo), window=4)
    item = TorchDataset(tn.TimeFReader.open(demo), signals=["ecg", "acc"])[0]
    assert item["signals"]["ecg"].shape == (500,) and item["signals"]["acc"].shape == (40, 3)
    assert item["times"]["acc"][-1] == 39 * 20_000_000  # each signal keeps its own axis
    for kw in ({"nulls": "drop"}, {"window": 0}, {"stride": 2}, {"window": 2.5}):
        with pytest.raises(tn.OptionError):
            mixed.open_torch("acme/mixed", **kw)  # type: ignore[arg-type]


EPOCHS = [
    # (ref, open_torch arguments): null and missing policies at their defaults
    ("opensky/adsb-traffic@1.0", {"signals": ["altitude", "onground"]}),
    ("opensky/flight-phases@1.0", {"signals": ["latitude", "onground"]}),
    ("marinecadastre/ais-ny-harbor@1.0", {}),
    ("kloppy/football-tracking@1.0", {"window": 8192}),
    ("aeon/body-imu@1.0", {"signals": ["acc_x", "ankle_vert"]}),
]


@pytest.mark.slow
@pytest.mark.parametrize(("ref", "kwargs"), EPOCHS, ids=[r for r, _ in EPOCHS])
def test_full_epoch_over_every_connector(
    session_registry: Path, ref: str, kwargs: dict[str, object]
) -> None:
    from timenet import build as tb

    tb.build(ref, session_registry)
    client = tn.TimeNet([session_registry], auto_build=False)
    ds = client.open_torch(ref, **kwargs)  # type: ignore[arg-type]
    loader = DataLoader(ds, batch_size=8, num_workers=2, collate_fn=ds.collate)
    seen, valid = [], dict.fromkeys(ds.signal_names, 0)
    for batch in loader:
        seen += list(zip(batch["record_id"], batch["start"].tolist(), strict=True))
        for name in ds.signal_names:
            valid[name] += int(batch["mask"][name].sum())
            t = batch["times"][name]
            assert t.dtype == torch.int64 and t.shape == batch["mask"][name].shape
    assert len(seen) == len(ds) == len(set(seen))
    reader = client.open(ref)
    assert {rid for rid, _ in seen} == {r.id for r in reader.records() if ds._lengths[r.index]}
    # every stored value is delivered once with mask True; nulls and gaps are masked
    for name in ds.signal_names:
        rows = [reader._catalog.signal_rows(r.index).get(name) for r in reader.records()]
        stored = sum(r.length - r.null_count for r in rows if r is not None)
        if not ds.specs[name].has_validity:
            assert valid[name] == stored, name
        else:
            assert valid[name] <= stored, name
