"""BatchTransform: roles and remaps resolved at load, ragged field batches, output checks,
per-source isolation; on real ADS-B sources (traffic==2.13 sample, OpenSky data, MIT)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from kuration import SchemaSpec, Segmenter, load_strategy, score_sources
from kuration.errors import TransformError
from kuration.extend import BatchTransform, TransformContext, register_transform

SEEN: list[tuple[dict[str, Any], TransformContext]] = []


class Spread(BatchTransform):
    """Range of the ``level`` field over each row's real ticks, plus a feature copied through."""

    def transform(self, batch: Mapping[str, Any], ctx: TransformContext) -> dict[str, Any]:
        SEEN.append((dict(batch), ctx))
        level = batch[ctx.input_token("level")]
        out = []
        for i in range(level.shape[0]):
            v = level[i, : ctx.valid_steps[ctx.input_token("level")][i]]
            out.append(float(np.nanmax(v) - np.nanmin(v)) if np.isfinite(v).any() else 0.0)
        return {"spread": np.array(out), "echo": batch[ctx.input_token("ref")]}


class Broken(BatchTransform):
    """NaN for the segments of one source, misaligned rows for another, fine elsewhere."""

    def __init__(self, nan_source: str = "", shuffle_source: str = "") -> None:
        self.nan_source, self.shuffle_source = nan_source, shuffle_source

    def transform(self, batch: Mapping[str, Any], ctx: TransformContext) -> dict[str, Any]:
        ids = list(ctx.segment_ids)
        vals = np.ones(len(ids))
        if ids[0].startswith(self.nan_source + ":"):
            vals[-1] = np.nan
        if ids[0].startswith(self.shuffle_source + ":") and len(ids) > 1:
            ids = ids[::-1]
        return {"ok": vals, "segment_ids": ids}


register_transform(
    "test-spread",
    Spread,
    inputs={"level": "field:groundspeed", "ref": "feature"},
    outputs=["spread", "echo"],
    batch_size=4,
    clobber=True,
)
register_transform(
    "test-broken", Broken, inputs={"x": "field:altitude"}, outputs=["ok"], clobber=True
)


def _strategy(schema: SchemaSpec, transforms: list[dict[str, Any]]) -> Any:
    return load_strategy(
        {
            "define": {"alt_mean": "field:altitude | mean"},
            "transforms": transforms,
            "method": "top-k",
            "params": {"by": "alt_mean"},
        },
        schema,
    )


def test_remap_and_valid_steps_on_ragged_batches(adsb_schema, adsb_adapter, adsb_sources) -> None:
    """Role ``level`` remapped to altitude with 30 ticks of lookbehind and 10 of lookahead:
    the first window of a source is clipped at the source start and the last at its end, so
    their rows are shorter; rosters differ per row."""
    use = {
        "name": "test-spread",
        "inputs": {"level": "field:altitude", "ref": "feature:alt_mean"},
        "lookbehind": {"level": 30},
        "lookahead": {"field:altitude": 10},
        "outputs": {"echo": "alt_echo"},
    }
    strategy = _strategy(adsb_schema, [use])
    assert strategy.feature_names == ("alt_mean", "spread", "alt_echo")
    seg = Segmenter(window=120, stride=60)
    SEEN.clear()
    res = score_sources(adsb_schema, adsb_adapter, [str(adsb_sources[0])], seg, strategy)
    table = adsb_adapter.read_table(str(adsb_sources[0]))
    token = "field:altitude"
    rows = 0
    for batch, ctx in SEEN:
        assert ctx.inputs == {"level": token, "ref": "feature:alt_mean"}
        assert "field:groundspeed" not in batch and batch["valid_steps"] is ctx.valid_steps
        arr, valid, off = batch[token], ctx.valid_steps[token], ctx.offsets[token]
        assert arr.dtype == np.float64 and arr.ndim == 4 and arr.shape[3] == 1
        assert arr.shape[1] == valid.max() and arr.shape[2] == max(map(len, ctx.entity_ids[token]))
        for i, sid in enumerate(ctx.segment_ids):
            start = int(sid.rsplit(":", 1)[1])
            ahead = min(10, table.n_steps - start - 120)
            assert off[i] == min(30, start) and valid[i] == off[i] + 120 + ahead
            assert ctx.lengths[i] == 120
            roster = [table.entity_ids.index(e) for e in ctx.entity_ids[token][i]]
            want = table.values["altitude"][start - off[i] : start + 120 + ahead][:, roster]
            np.testing.assert_array_equal(arr[i, : valid[i], : len(roster)], want)
            assert np.isnan(arr[i, valid[i] :]).all() and np.isnan(arr[i, :, len(roster) :]).all()
        rows += len(ctx.segment_ids)
    assert rows == len(res.segments) > 4
    widths = {int(v) for _, c in SEEN for v in c.valid_steps[token]}
    assert len(widths) >= 2 and 160 in widths and min(widths) < 160  # ragged
    assert any(len(r) < b[token].shape[2] for b, c in SEEN for r in c.entity_ids[token])  # E pad
    for s in res.segments:
        assert s.features["alt_echo"] == s.features["alt_mean"]
        start = s.start_idx
        v = table.values["altitude"][max(0, start - 30) : start + 130]
        assert s.features["spread"] == pytest.approx(np.nanmax(v) - np.nanmin(v), abs=0)


@pytest.mark.parametrize(
    ("use", "needle"),
    [
        ({"name": "test-spread", "inputs": {"lvl": "field:altitude"}}, "unknown roles"),
        ({"name": "test-spread", "inputs": {"level": "feature:alt_mean"}}, "must be a field:"),
        (
            {"name": "test-spread", "inputs": {"level": "field:nope", "ref": "feature:alt_mean"}},
            "no such per-entity field",
        ),
        ({"name": "test-spread"}, r"role 'ref' \(feature\) needs a token"),
        ({"name": "test-spread", "inputs": {"ref": "feature:later"}}, "not a feature computed"),
        (
            {
                "name": "test-spread",
                "inputs": {"ref": "feature:alt_mean"},
                "lookbehind": {"media:frame": 2},
            },
            "neither a role",
        ),
        (
            {"name": "test-spread", "inputs": {"ref": "feature:alt_mean"}, "outputs": {"x": "y"}},
            "renames unknown outputs",
        ),
        ({"name": "no-such-transform"}, "unknown batch transform"),
    ],
)
def test_a_bad_use_fails_at_load(adsb_schema, use: dict, needle: str) -> None:
    with pytest.raises(TransformError, match=needle) as err:
        _strategy(adsb_schema, [use])
    assert err.value.transform == use["name"]


def test_a_source_whose_transform_fails_is_skipped_with_its_rows(
    adsb_schema, adsb_adapter, adsb_sources, capsys
) -> None:
    """NaN output and misaligned rows are errors naming transform, source and segment; the
    source is skipped (no row of it kept) and the others are scored."""
    srcs = [str(p) for p in adsb_sources[:3]]
    ids = [adsb_adapter.source_id(u) for u in srcs]
    use = {"name": "test-broken", "params": {"nan_source": ids[0], "shuffle_source": ids[1]}}
    strategy = _strategy(adsb_schema, [use])
    seg = Segmenter(window=120, stride=60)
    res = score_sources(adsb_schema, adsb_adapter, srcs, seg, strategy)
    assert {s.source_id for s in res.segments} == {ids[2]}
    assert all(s.features["ok"] == 1.0 for s in res.segments)
    msgs = {u: res.errors[u] for u in srcs[:2]}
    assert "non-finite output" in msgs[srcs[0]] and f"source '{ids[0]}'" in msgs[srcs[0]]
    assert f"segment '{ids[0]}:" in msgs[srcs[0]] and "transform 'test-broken'" in msgs[srcs[0]]
    assert "not aligned" in msgs[srcs[1]] and f"segment '{ids[1]}:" in msgs[srcs[1]]
    assert capsys.readouterr().err.count("kuration: skipped source") == 2
    with pytest.raises(TransformError, match="non-finite"):
        score_sources(adsb_schema, adsb_adapter, srcs, seg, strategy, on_error="raise")


def test_descriptors_round_trip_and_enter_the_strategy_json(adsb_schema) -> None:
    use = {"name": "test-spread", "inputs": {"ref": "feature:alt_mean"}, "lookahead": 2}
    s = _strategy(adsb_schema, [use])
    (d,) = s.to_dict()["transforms"]
    assert d["inputs"] == {"level": "field:groundspeed", "ref": "feature:alt_mean"}
    assert d["lookahead"] == {"field:groundspeed": 2, "feature:alt_mean": 2}
    again = load_strategy(s.to_dict(), adsb_schema)
    assert dataclasses.asdict(again) == dataclasses.asdict(s)
