"""score_sources on the real ADS-B sources: spawn pool parity, error isolation, progress."""

from __future__ import annotations

from pathlib import Path

import pytest

from kuration import KurationError, Segmenter, load_strategy, score_sources
from kuration.errors import EmptyPoolError
from kuration.pipeline.api.count import select_segments


@pytest.fixture(scope="module")
def parts(adsb_job_dict, adsb_schema, adsb_adapter):
    strategy = load_strategy(adsb_job_dict["strategy"], adsb_schema)
    seg = Segmenter(**adsb_job_dict["segmenter"], sample_hz=adsb_schema.sample_hz)
    return adsb_schema, adsb_adapter, seg, strategy


@pytest.mark.slow
def test_spawn_pool_gives_identical_pool_and_selection(parts, adsb_sources) -> None:
    schema, adapter, seg, strategy = parts
    sources = [str(p) for p in adsb_sources]
    one = score_sources(schema, adapter, sources, seg, strategy, workers=1)
    events: list[dict] = []
    # reversed order and a process pool: completion order differs, the pool must not
    two = score_sources(
        schema, adapter, sources[::-1], seg, strategy, workers=2, progress=events.append
    )
    assert [s.to_dict() for s in one.segments] == [s.to_dict() for s in two.segments]
    assert one.summary() == two.summary()
    assert len(one.segments) > 100
    kc = load_strategy({**strategy.to_dict(), "method": "k-center", "params": {}}, schema)
    a = select_segments(one.segments, kc, 25, seed=1)
    b = select_segments(two.segments, kc, 25, seed=1)
    assert [s.key for s in a.selected] == [s.key for s in b.selected]
    phases = [(e["phase"], e["event"]) for e in events]
    assert phases[0] == ("scoring", "start") and phases[-1] == ("scoring", "complete")
    adv = [e for e in events if e["event"] == "advance"]
    assert [e["current"] for e in adv] == list(range(1, len(sources) + 1))
    assert all(e["total"] == len(sources) and e["status"] == "ok" and e["source"] for e in adv)


def test_failing_source_is_skipped_logged_and_summarised(
    parts, adsb_sources, tmp_path: Path, capsys
) -> None:
    schema, adapter, seg, strategy = parts
    bad = tmp_path / "broken.parquet"
    bad.write_bytes(b"not a parquet file")
    sources = [str(adsb_sources[0]), str(bad)]
    events: list[dict] = []
    res = score_sources(schema, adapter, sources, seg, strategy, progress=events.append)
    assert list(res.errors) == [str(bad)]
    assert "skipped source" in capsys.readouterr().err
    summary = res.summary()
    assert summary["sources_failed"] == 1 and str(bad) in summary["errors"]
    assert any(e.get("status") == "error" for e in events)
    with pytest.raises(Exception) as exc:
        score_sources(schema, adapter, sources, seg, strategy, on_error="raise")
    assert not isinstance(exc.value, EmptyPoolError)


def test_empty_pool_raises_with_every_reason(parts, tmp_path: Path) -> None:
    schema, adapter, seg, strategy = parts
    bad = [tmp_path / f"b{i}.parquet" for i in range(2)]
    for p in bad:
        p.write_bytes(b"junk")
    with pytest.raises(EmptyPoolError) as exc:
        score_sources(schema, adapter, [str(p) for p in bad], seg, strategy)
    assert set(exc.value.errors) == {str(p) for p in bad}
    assert "b0.parquet" in str(exc.value)


def test_argument_checks(parts, adsb_sources) -> None:
    schema, adapter, seg, strategy = parts
    src = [str(adsb_sources[0])]
    with pytest.raises(ValueError, match="workers"):
        score_sources(schema, adapter, src, seg, strategy, workers=0)
    with pytest.raises(ValueError, match="on_error"):
        score_sources(schema, adapter, src, seg, strategy, on_error="ignore")
    with pytest.raises(ValueError, match="more than once"):
        score_sources(schema, adapter, src * 2, seg, strategy)
    assert issubclass(EmptyPoolError, KurationError)
