"""Budgets in usable units (issue 29): ``min_span_seconds``, ``budget_time: "present"`` and
``tie_break: "seed"``, on generated candidate tables (hypothesis) and on the real ADS-B
quickstart (memory and disk pools write the same bytes; the defaults change nothing)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst

from kuration import KurationError, Pipeline, run_job
from kuration.errors import JobError, PipelineError
from kuration.pipeline.run.span_rules import drop_short, min_span_steps
from kuration.pipeline.spec.job import load_job
from kuration.selection.candidates import CandidateTable
from kuration.selection.fill import fill_budgets

ROOT = Path(__file__).resolve().parents[3]
JOB = ROOT / "examples" / "adsb_quickstart" / "job.json"


def _table(steps: list[int], present: list[int], prio: list[float]) -> CandidateTable:
    n = len(steps)
    first = np.cumsum([0, *steps[:-1]]).astype(np.int64)
    return CandidateTable(
        source_ids=["s"],
        entity_ids=[[f"e{i}" for i in range(n)]],
        source=np.zeros(n, np.int64),
        entity=np.arange(n),
        first=first,
        last=first + np.array(steps) - 1,
        span=np.full(n, -1),
        priority=np.array(prio, np.float64),
        present=np.minimum(np.array(present), np.array(steps)),
    )


rows = hst.lists(
    hst.tuples(hst.integers(1, 50), hst.integers(0, 50), hst.integers(0, 3).map(float)),
    min_size=1,
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(rows=rows, budget=hst.integers(1, 400), min_steps=hst.integers(1, 40))
def test_present_budgets_count_present_ticks(rows, budget: int, min_steps: int) -> None:
    """With ``count="present"`` the fill admits in priority order until the present ticks
    reach the request; every ``_s`` figure is present seconds."""
    steps, present, prio = map(list, zip(*rows, strict=True))
    t = _table(steps, present, prio)
    res = fill_budgets(t, {"s": "train"}, {"train": float(budget)}, 1.0, count="present")
    b, adm = res.budget["train"], res.admitted["train"]
    got = sum(t.present[c.entity_index] for c in adm)
    assert b["admitted_s"] == got and b["candidate_s"] == int(t.present.sum())
    before = got - (t.present[adm[-1].entity_index] if adm else 0)
    assert before < budget  # it stops at the first candidate that reaches the request
    assert got >= budget or len(adm) == len(t)
    short, gone = drop_short(t, min_steps)
    assert gone == int((np.array(steps) < min_steps).sum())
    assert len(short) == len(t) - gone and (short.n_steps >= min_steps).all()
    # under present time the length compared is the present ticks, not the extent
    live, gone = drop_short(t, min_steps, "present")
    assert gone == int((t.present < min_steps).sum()) and (live.present >= min_steps).all()


def test_min_span_steps_rounds_up() -> None:
    assert min_span_steps(120, 1.0) == 120 and min_span_steps(0.25, 10.0) == 3
    assert min_span_steps(0, 10.0) == 1


def test_a_seeded_tie_break_orders_equal_priorities_by_the_seed() -> None:
    t = _table([5] * 40, [5] * 40, [1.0] * 40)
    by_name = [
        c.entity_id for c in fill_budgets(t, {"s": "train"}, {"train": 50.0}, 1.0).admitted["train"]
    ]
    assert by_name == sorted(f"e{i}" for i in range(40))[:10]  # the first names win every tie
    picks = []
    for seed in (1, 2):
        t.tie = np.random.default_rng(seed).permutation(40).astype(np.int64)
        adm = fill_budgets(t, {"s": "train"}, {"train": 50.0}, 1.0).admitted["train"]
        picks.append([c.entity_id for c in adm])
        assert [int(t.tie[int(c.entity_id[1:])]) for c in adm] == sorted(t.tie)[:10]
    assert picks[0] != picks[1] != by_name


# ---- the real ADS-B quickstart ------------------------------------------------------------


def _job(sources: list[Path], **keys: object) -> dict:
    job, _ = load_job(JOB)
    job["sources"] = [str(p) for p in sources[:4]]
    job["budget"] = {"train_hours": 1.0, "test_hours": 0.25}
    job.update(keys)
    return job


def _run(job: dict, out: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_job(job, out)


UNITS = {"min_span_seconds": 120, "budget_time": "present", "tie_break": "seed"}


def test_units_on_real_adsb_memory_and_disk(adsb_sources, tmp_path: Path) -> None:
    base = _run(_job(adsb_sources), tmp_path / "base")
    mem = _run(_job(adsb_sources, **UNITS), tmp_path / "mem")
    disk = _run(_job(adsb_sources, pool="disk", **UNITS), tmp_path / "disk")
    for name in ("dataset_manifest.json",):
        assert (Path(mem.path) / name).read_bytes() == (Path(disk.path) / name).read_bytes()
    b = mem.manifest["budget"]
    assert b["min_span_seconds"] == 120 and b["budget_time"] == "present"
    assert b["tie_break"] == "seed" and b["short_spans_excluded"] > 0
    assert "min_span_seconds" not in base.manifest["budget"]  # defaults record nothing new
    for split in ("train", "test"):
        assert all(c.n_steps >= 120 for c in mem.fill.admitted[split])
        assert any(c.n_steps < 120 for c in base.fill.pools[split])
        cfg = mem.config["results"]["budget"][split]
        assert cfg["admitted_s"] == cfg["present_s"]  # the budget counted present seconds
    assert mem.manifest["run_fingerprint"] != base.manifest["run_fingerprint"]
    plan = Pipeline.from_job(_job(adsb_sources, **UNITS)).explain().render()
    assert "tie_break = seed" in plan and "budget_time = present" in plan


def test_seeded_ties_change_a_tied_selection(adsb_sources, tmp_path: Path) -> None:
    """The old quickstart's scene windows leave many spans tied; by name the first sources and
    aircraft addresses win them, by seed another set does."""
    # the default before issue 29 on scene windows (today's quality predicates fail every
    # scene window: some aircraft of every scene reach the speed clamp)
    old = {
        "segmenter": {"window": 120, "stride": 60, "unit": "seconds"},
        "strategy": json.loads((JOB.parent / "strategies" / "turns-and-climbs.json").read_text()),
    }
    name = _run(_job(adsb_sources, **old), tmp_path / "n")
    seed = _run(_job(adsb_sources, **old, tie_break="seed"), tmp_path / "s")
    ids = {(c.source_id, c.entity_id, c.span_index) for c in name.fill.admitted["train"]}
    ids_s = {(c.source_id, c.entity_id, c.span_index) for c in seed.fill.admitted["train"]}
    assert ids != ids_s


#: windows ranked by the most aircraft seen at one tick: a small integer, so many tie
COUNTS = {
    "name": "busiest",
    "define": {"aircraft_max": "field:position | speed | entities:count | max"},
    "method": "top-k",
    "params": {"by": "aircraft_max", "descending": True},
    "nan_policy": "exclude",
}


def test_seeded_ties_on_the_count_path(adsb_sources) -> None:
    """``kur curate --n`` takes the job's ``tie_break``: by name the first windows win the
    tied priorities (the default selection is unchanged), by seed the seeded draw orders
    them; the seeded plan stays in memory even with ``pool="disk"``."""
    from kuration.pipeline.api.count import curate_job

    n = 40
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        name = curate_job(_job(adsb_sources), n, strategy=COUNTS)
        seed = curate_job(_job(adsb_sources, tie_break="seed"), n, strategy=COUNTS)
        again = curate_job(_job(adsb_sources, tie_break="seed"), n, strategy=COUNTS, pool="disk")

    def keys(res) -> list[tuple[str, int]]:
        return [(s.source_id, s.start_idx) for s in res.selected]

    prio = np.array([s.priority for s in name.pool])
    cut = name.selected[-1].priority
    assert (prio == cut).sum() > (np.array([s.priority for s in name.selected]) == cut).sum()
    by_name = sorted(s.key for s in name.pool if s.priority == cut)
    assert [s.key for s in name.selected if s.priority == cut] == by_name[
        : len([s for s in name.selected if s.priority == cut])
    ]  # by name: the first tied windows in canonical order
    assert keys(seed) != keys(name) and keys(again) == keys(seed)
    assert [s.priority for s in seed.selected] == [s.priority for s in name.selected]
    plan = Pipeline.from_job(_job(adsb_sources, tie_break="seed")).select(n).explain().render()
    assert "tie_break" in plan


@pytest.mark.parametrize(
    ("key", "value", "match"),
    [
        ("budget_time", "wall", "budget_time"),
        ("tie_break", "random", "tie_break"),
        ("min_span_seconds", -1, "min_span_seconds"),
    ],
)
def test_bad_units_are_refused_at_load(adsb_sources, key: str, value: object, match: str) -> None:
    with pytest.raises(JobError, match=match):
        Pipeline.from_job(json.loads(json.dumps(_job(adsb_sources, **{key: value}))))
    p = Pipeline.from_job(_job(adsb_sources))
    with pytest.raises(PipelineError, match=match):
        p.sample(hours=1.0, **{key: value})


def test_the_review_audits_span_length(adsb_sources, tmp_path: Path) -> None:
    """The quickstart's mean over windows admits short spans first; ``min_span_seconds``
    shows in the review's span-length audit."""
    from kuration import hours_selection_review
    from kuration.tools.audit import span_length_audit

    x = np.arange(10.0)
    audit = span_length_audit(x, x, {"f": -x, "c": np.ones(10)}, x > 6)
    assert audit["priority"]["rho"] == pytest.approx(1.0)
    assert audit["features"]["f"]["rho"] == pytest.approx(-1.0)
    assert audit["features"]["c"]["note"] == "constant feature"
    assert audit["admitted"] == {"n": 3, "mean_s": 8.0, "median_s": 8.0}
    res = _run(_job(adsb_sources, min_span_seconds=120), tmp_path / "r")
    got = hours_selection_review(res)["splits"]["train"]["span_length"]
    assert got["admitted"]["n"] == len(res.fill.admitted["train"])
    assert got["admitted"]["mean_s"] >= 120 and got["pool"]["n"] == len(res.fill.pools["train"])
    assert set(got["features"]) == set(res.fill.admitted["train"][0].features)


def test_merge_adjacent_spans_writes_one_track_and_resumes(adsb_sources, tmp_path: Path) -> None:
    """Touching admitted spans of one track become one written track, named by its first
    span; the shards hold the same steps; a resume of the run reuses every shard, and a
    resume without the option is a different run (its fingerprint names the option)."""
    from kuration.pipeline.run.span_rules import merge_adjacent

    strategy = json.loads((ROOT / "examples/adsb_quickstart/strategies/random.json").read_text())
    keys = {"strategy": strategy, "budget": {"train_hours": 3.0, "test_hours": 1.0}}
    plain = _run(_job(adsb_sources, **keys), tmp_path / "plain")
    merged = _run(_job(adsb_sources, merge_adjacent_spans=True, **keys), tmp_path / "m")
    tracks = {s: merged.manifest["splits"][s]["tracks"] for s in ("train", "test")}
    before = {s: plain.manifest["splits"][s]["tracks"] for s in ("train", "test")}
    assert sum(tracks.values()) < sum(before.values())
    for s in ("train", "test"):
        joined = merge_adjacent(merged.fill.admitted[s])
        assert len(joined) == tracks[s]
        assert sum(c.n_steps for c in joined) == sum(c.n_steps for c in merged.fill.admitted[s])
        first_spans = {(c.source_id, c.entity_index): c.span_index for c in joined}
        for c in merged.fill.admitted[s]:  # every joined track starts at an admitted span
            assert (c.source_id, c.entity_index) in first_spans
    for s in ("train", "test"):
        assert merged.manifest["budget"][s]["emitted_s"] == plain.manifest["budget"][s]["emitted_s"]
    assert merged.manifest["budget"]["merge_adjacent_spans"] is True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = run_job(
            _job(adsb_sources, merge_adjacent_spans=True, **keys), tmp_path / "m", resume=True
        )
    assert again.resume["rebuilt_shards"] == 0 and again.resume["reused_shards"] > 0
    assert again.manifest == merged.manifest
    assert merged.manifest["run_fingerprint"] != plain.manifest["run_fingerprint"]


def test_merge_adjacent_joins_only_touching_spans() -> None:
    from kuration.pipeline.run.span_rules import merge_adjacent
    from kuration.selection.candidates import Candidate

    def c(ent: int, k: int, first: int, last: int) -> Candidate:
        return Candidate("s", f"e{ent}", ent, first, last, 1.0, {}, k)

    got = merge_adjacent(
        [c(0, 2, 20, 29), c(1, 0, 0, 9), c(0, 0, 0, 9), c(0, 1, 10, 19), c(1, 2, 20, 29)]
    )
    assert [(x.entity_index, x.span_index, x.first, x.last) for x in got] == [
        (0, 0, 0, 29),  # spans 0-2 of e0 joined, placed where its first admitted span was
        (1, 0, 0, 9),
        (1, 2, 20, 29),  # e1's spans 0 and 2 do not touch
    ]


# ---- present_where: an entity counts as present only where a comparison holds ------------


def test_presence_keeps_the_ticks_where_the_comparison_holds(adsb_adapter, adsb_sources) -> None:
    from kuration.contracts.segment import Segmenter

    table = adsb_adapter.read_table(str(adsb_sources[0]))
    seg = Segmenter(120, 60, present_where={"field": "onground", "op": "==", "value": 0})
    air = seg.presence(table)
    on = table.values["onground"][:, :, 0]
    assert (air.present == (table.present & (on == 0))).all()
    assert 0 < air.present.sum() < table.present.sum()  # some aircraft are on the ground
    assert seg.to_dict()["present_where"] == {"field": "onground", "op": "==", "value": 0.0}
    assert Segmenter(**seg.to_dict()) == seg
    for bad in ({"field": "onground", "op": "=", "value": 0}, {"field": "x", "op": "<"}):
        with pytest.raises(KurationError, match="present_where"):
            Segmenter(120, 60, present_where=bad)
    with pytest.raises(KurationError, match="no scalar field"):
        Segmenter(120, 60, present_where={"field": "position", "op": ">", "value": 0}).presence(
            table
        )


AIRBORNE = {"field": "onground", "op": "==", "value": 0}


def _airborne(sources: list[Path], **keys: object) -> dict:
    job = _job(sources, budget_time="present", min_span_seconds=120, **keys)
    job["segmenter"] = {**job["segmenter"], "scope": "track", "present_where": AIRBORNE}
    job["output"]["container"] = "parquet"
    return job


def test_airborne_hours_on_every_runtime(adsb_time_ordered, tmp_path: Path) -> None:
    """Only airborne ticks make windows, extents and the present-time budget; the memory and
    disk pools, streaming and process workers write the same bytes."""
    mem = _run(_airborne(adsb_time_ordered), tmp_path / "mem")
    every = _airborne(adsb_time_ordered)
    del every["segmenter"]["present_where"]
    base = _run(every, tmp_path / "base")
    assert len(mem.scoring.segments) < len(base.scoring.segments)
    man = (Path(mem.path) / "dataset_manifest.json").read_bytes()
    for i, keys in enumerate(
        ({"pool": "disk"}, {"streaming": True}, {"workers": 2, "executor": "process"})
    ):
        other = _run(_airborne(adsb_time_ordered, **keys), tmp_path / f"o{i}")
        assert (Path(other.path) / "dataset_manifest.json").read_bytes() == man
    for split in ("train", "test"):
        b = mem.config["results"]["budget"][split]
        # every figure counts present seconds: what was admitted is emitted or dropped
        assert b["admitted_s"] == b["present_s"] and b["emitted_s"] == b["emitted_present_s"]
        assert b["dropped_tail_s"] >= 0
        assert b["admitted_s"] - b["dropped_tail_s"] == pytest.approx(b["emitted_s"], abs=1e-9)
        assert mem.manifest["splits"][split]["seconds"] >= b["emitted_s"]  # the extent
        # min_span_seconds (120) compared with present time: no candidate holds less
        assert b["shortest_track_s"] >= 120
    assert mem.config["job"]["segmenter"]["present_where"] == AIRBORNE


def test_present_where_is_checked_at_load(adsb_sources) -> None:
    job = _airborne(adsb_sources)
    job["segmenter"]["present_where"] = {"field": "nope", "op": "==", "value": 0}
    with pytest.raises(JobError, match="present_where"):
        Pipeline.from_job(job)
    job = _airborne(adsb_sources)
    job["strategy"]["filters"] = [{"filter": "dedup"}]
    with pytest.raises(PipelineError, match="present_where"):
        Pipeline.from_job(job).explain()
