"""The ADS-B quickstart sources: cut once, then reused only while every file keeps its digest."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from kuration.sources import samples
from kuration.sources.samples import build_adsb_sources


def test_a_recorded_cut_is_reused_and_a_changed_one_cut_again(
    adsb_sources, tmp_path: Path, monkeypatch
) -> None:
    out = tmp_path / "cut"
    shutil.copytree(adsb_sources[0].parent, out)  # the session's cut, with its record
    record = json.loads((out / ".adsb_sources.json").read_text())
    assert list(record["files"]) == [p.name for p in adsb_sources]
    calls: list[int] = []
    real = samples.load_adsb_records
    monkeypatch.setattr(samples, "load_adsb_records", lambda *a: calls.append(1) or real(*a))

    assert build_adsb_sources(out, slice_minutes=15) == [out / p.name for p in adsb_sources]
    assert calls == []  # nothing parsed: the record and every digest match
    before = (out / adsb_sources[3].name).read_bytes()
    (out / adsb_sources[3].name).write_bytes(before[:-1] + bytes([before[-1] ^ 1]))
    build_adsb_sources(out, slice_minutes=15)
    assert calls == [1] and (out / adsb_sources[3].name).read_bytes() == before
    build_adsb_sources(out, slice_minutes=15)
    assert calls == [1]
    build_adsb_sources(out, slice_minutes=30)  # another key: cut again (fewer, longer files)
    assert calls == [1, 1]
    assert json.loads((out / ".adsb_sources.json").read_text())["key"]["slice_minutes"] == 30
