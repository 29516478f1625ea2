"""Exact and near dedup on real quickstart windows (replicated sources are true duplicates)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from kuration import Segmenter, curate, load_strategy
from kuration.contracts.buffer import build_window
from kuration.contracts.segment import Segment
from kuration.errors import StrategyError
from kuration.selection.dedup import (
    ExactDedup,
    TableWindowReader,
    near_duplicate_mask,
    use_window_reader,
    window_digest,
    window_payload,
)
from kuration.selection.filters import apply_filters

STRATEGIES = Path(__file__).resolve().parents[3] / "examples" / "adsb_quickstart" / "strategies"


def replicate(src: Path, out: Path, tag: str) -> Path:
    """``src`` with every entity id suffixed ``-tag``: the same values, other entities."""
    t = pq.read_table(src)
    ids = pc.binary_join_element_wise(t.column("icao24"), pa.scalar(tag), "-")
    t = t.set_column(t.schema.get_field_index("icao24"), "icao24", ids)
    p = out / f"{tag}-{src.name}"
    pq.write_table(t, p)
    return p


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, adsb_sources, adsb_job_dict, adsb_schema, adsb_adapter):
    """Two real sources and a replica of the first: 3 sources, one fully duplicated."""
    out = tmp_path_factory.mktemp("dedup")
    originals = [Path(p) for p in adsb_sources[:2]]
    replica = replicate(originals[0], out, "r1")
    seg = Segmenter(**adsb_job_dict["segmenter"], sample_hz=adsb_schema.sample_hz)
    return adsb_schema, adsb_adapter, [str(p) for p in (*originals, replica)], seg, replica


def _strategy(schema, filters):
    doc = json.loads((STRATEGIES / "top-k.json").read_text())
    doc["filters"] = filters
    return load_strategy(doc, schema)


def test_exact_dedup_drops_exactly_the_replica_windows(corpus) -> None:
    schema, adapter, sources, seg, replica = corpus
    res = curate(schema, adapter, sources, seg, _strategy(schema, [{"filter": "dedup"}]), 10**6)
    replica_id = adapter.read_table(str(replica)).source_id
    dropped = {s.key for s, why in zip(res.pool, res.reasons, strict=True) if "dedup" in why}
    replica_keys = {s.key for s in res.pool if s.source_id == replica_id}
    assert replica_keys and dropped == replica_keys
    assert not any(s.source_id == replica_id for s in res.selected)
    # the same pool without dedup selects the replica too
    plain = curate(schema, adapter, sources, seg, _strategy(schema, []), 10**6)
    assert len(plain.selected) - len(res.selected) == len(replica_keys)


def test_digest_is_sha256_of_the_canonical_payload(corpus) -> None:
    _schema, adapter, sources, *_ = corpus
    table = adapter.read_table(sources[0])
    buf = build_window(table, 0, 120)
    payload = window_payload(buf)
    assert window_digest(buf) == hashlib.sha256(payload).digest()
    other = adapter.read_table(sources[2])  # the replica: same values, other entity ids
    assert window_payload(build_window(other, 0, 120)) == payload
    assert window_payload(build_window(table, 60, 180)) != payload


def test_collisions_are_compared_in_full(corpus) -> None:
    """A 1-byte digest makes most windows collide: only true duplicates may go."""
    _schema, adapter, sources, seg, replica = corpus
    segs = []
    for uri in sources:
        t = adapter.read_table(uri)
        segs += seg.segments(t.source_id, t.present)
    segs.sort(key=lambda s: s.key)
    uris = {adapter.read_table(u).source_id: u for u in sources}
    reader = TableWindowReader(adapter.read_table, uris)
    with use_window_reader(reader):
        weak = ExactDedup(digest_size=1).mask(segs, {})
        strong, _ = apply_filters(segs, [{"filter": "dedup"}])
    # distinct windows do share 1-byte digests here (so the full comparison is exercised)
    d1: dict[bytes, set[bytes]] = {}
    for _i, buf in reader.windows(segs):
        d1.setdefault(window_digest(buf, 1), set()).add(window_payload(buf))
    assert any(len(v) > 1 for v in d1.values())
    np.testing.assert_array_equal(weak, strong)
    replica_id = adapter.read_table(str(replica)).source_id
    assert not strong[[s.source_id == replica_id for s in segs]].any()


def test_dedup_without_a_reader_is_a_strategy_error() -> None:
    with pytest.raises(StrategyError, match="window reader"):
        apply_filters([Segment("a", 0, 2)], [{"filter": "dedup"}])


def test_near_dedup_on_real_pool(corpus) -> None:
    schema, adapter, sources, seg, replica = corpus
    f = [{"filter": "near_dedup", "threshold": 1e-9}]
    res = curate(schema, adapter, sources, seg, _strategy(schema, f), 10**6)
    replica_id = adapter.read_table(str(replica)).source_id
    dropped = {s.key for s, why in zip(res.pool, res.reasons, strict=True) if "cosine" in why}
    # equal features are at distance 0: every replica window with finite features goes
    finite = {
        s.key
        for s in res.pool
        if s.source_id == replica_id and all(np.isfinite(v) for v in s.features.values())
    }
    assert finite and finite <= dropped
    loose = [{"filter": "near_dedup", "threshold": 0.05, "features": ["turn_p90", "speed_p90"]}]
    more = curate(schema, adapter, sources, seg, _strategy(schema, loose), 10**6)
    assert len(more.selected) < len(res.selected)


@pytest.mark.parametrize(
    "entry",
    [
        {"filter": "dedup", "x": 1},
        {"filter": "near_dedup"},
        {"filter": "near_dedup", "threshold": 2.5},
        {"filter": "near_dedup", "threshold": 0.1, "features": ["nope"]},
    ],
)
def test_bad_parameters_are_refused(entry, adsb_schema) -> None:
    with pytest.raises(StrategyError, match="dedup"):
        _strategy(adsb_schema, [entry])


def _brute_near(x: np.ndarray, threshold: float) -> np.ndarray:
    """Reference: z-score, unit rows, greedy keep-first with a per-row loop."""
    ok = np.isfinite(x).all(axis=1)
    z = np.zeros_like(x)
    if ok.any():
        mu, sd = x[ok].mean(axis=0), x[ok].std(axis=0)
        z[ok] = (x[ok] - mu) / np.where(sd > 0, sd, 1.0)
    nrm = np.linalg.norm(z, axis=1)
    ok &= nrm > 0
    keep = np.ones(len(x), dtype=bool)
    kept: list[np.ndarray] = []
    for i in range(len(x)):
        if not ok[i]:
            continue
        u = z[i] / nrm[i]
        if any(float(u @ k) > 1.0 - threshold for k in kept):
            keep[i] = False
        else:
            kept.append(u)
    return keep


@settings(max_examples=60, deadline=None)
@given(
    arrays(
        np.float64, st.tuples(st.integers(0, 40), st.integers(1, 4)), elements=st.integers(-3, 3)
    ),
    st.sampled_from([0.01, 0.1, 0.5]),
    st.integers(1, 9),
)
def test_near_dedup_matches_a_greedy_reference(x, threshold, block) -> None:
    """Blocked evaluation equals the row-by-row greedy definition (small integer grids
    make exact duplicates and ties common)."""
    got = near_duplicate_mask(x, threshold, block=block)
    np.testing.assert_array_equal(got, _brute_near(x, threshold))


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_exact_dedup_keeps_one_of_each_distinct_window(data) -> None:
    """On windows drawn from a few distinct value arrays, dedup keeps exactly the first of
    each distinct payload, with full or 1-byte digests alike."""
    from kuration import SchemaSpec
    from kuration.contracts.buffer import WindowBuffer

    schema = SchemaSpec.from_dict({"sample_hz": 1.0, "fields": [{"name": "x"}]})
    n_kinds = data.draw(st.integers(1, 4))
    kinds = [
        data.draw(arrays(np.float64, (3, 1, 1), elements=st.sampled_from([0.0, -0.0, 1.0, np.nan])))
        for _ in range(n_kinds)
    ]
    picks = data.draw(st.lists(st.integers(0, n_kinds - 1), min_size=1, max_size=20))
    segs = [Segment("s", i, i + 3) for i in range(len(picks))]

    class Reader:
        def windows(self, segments):
            for i, s in enumerate(segments):
                v = kinds[picks[s.start_idx]]
                yield i, WindowBuffer({"x": v}, np.ones((3, 1), bool), ("e",), schema)

    canon = [
        window_payload(WindowBuffer({"x": k}, np.ones((3, 1), bool), ("e",), schema)) for k in kinds
    ]
    seen: set[bytes] = set()
    expect = []
    for p in picks:
        expect.append(canon[p] not in seen)
        seen.add(canon[p])
    with use_window_reader(Reader()):
        for flt in (ExactDedup(), ExactDedup(digest_size=1)):
            got = flt.mask(segs, {})
            assert got.tolist() == expect


def test_dedup_in_an_hours_job(corpus, adsb_job_dict, tmp_path) -> None:
    """The hours writer installs the window reader too: replica windows never rank."""
    import warnings

    from kuration import run_job
    from kuration.errors import BudgetGranularityWarning

    _schema, adapter, sources, _seg, replica = corpus
    job = json.loads(json.dumps(adsb_job_dict))
    job["sources"] = sources
    job["budget"] = {"train_hours": 0.2, "test_hours": 0.1}
    job["strategy"]["filters"] = [{"filter": "dedup"}]
    job["strategy"].pop("group_cap", None)
    job["allow_empty_split"] = True  # a split may hold only the replica, whose windows all go
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetGranularityWarning)
        res = run_job(job, tmp_path / "out")
    replica_id = adapter.assign_source_ids(sources)[str(replica)]
    segs = res.scoring.segments
    assert any(s.source_id == replica_id for s in segs)
    assert all(s.priority == -np.inf for s in segs if s.source_id == replica_id)
    assert any(np.isfinite(s.priority) for s in segs if s.source_id != replica_id)
