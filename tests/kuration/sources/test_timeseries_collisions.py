"""Snap collisions in TimeseriesAdapter: counted, warned about, averaged or refused."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kuration import SchemaSpec, TimeseriesAdapter
from kuration.errors import SnapCollisionWarning, SourceError

SCHEMA = SchemaSpec.from_dict(
    {
        "sample_hz": 125.0,
        "fields": [
            {"name": "v", "kind": "scalar", "unit": "mV"},
            {"name": "hdg", "kind": "scalar", "semantics": "angular", "unit": "deg"},
            {"name": "mode", "kind": "categorical", "vocab": ["a", "b"]},
        ],
    }
)


def _adapter(**kw) -> TimeseriesAdapter:
    return TimeseriesAdapter(
        SCHEMA,
        time_column="t",
        entity_column="id",
        fields={"v": "v", "hdg": "hdg", "mode": "mode"},
        **kw,
    )


def _ecg_bp(tmp_path: Path, seconds: float = 1.0) -> tuple[str, pa.Table]:
    """An ECG at 250 Hz and a blood pressure at 125 Hz, two entities of one file."""
    n_ecg, n_bp = int(250 * seconds), int(125 * seconds)
    t = np.r_[np.arange(n_ecg) / 250.0, np.arange(n_bp) / 125.0]
    ids = ["ecg"] * n_ecg + ["bp"] * n_bp
    v = np.r_[np.sin(np.arange(n_ecg)), 80.0 + np.arange(n_bp)]
    hdg = np.r_[np.where(np.arange(n_ecg) % 2, 1.0, 359.0), np.full(n_bp, 90.0)]
    mode = ["a" if i % 2 == 0 else "b" for i in range(n_ecg)] + ["a"] * n_bp
    table = pa.table({"t": t, "id": ids, "v": v, "hdg": hdg, "mode": mode})
    p = tmp_path / "icu.parquet"
    pq.write_table(table, p)
    return str(p), table


def test_ecg_at_twice_the_rate_is_counted_and_warned(tmp_path: Path) -> None:
    uri, _ = _ecg_bp(tmp_path)
    # row i (at i/250 s) lands on tick floor(i/2 + 0.5): rows 2j-1 and 2j share tick j,
    # rows 0 and 249 have ticks 0 and 125 to themselves (a half step goes to the later tick)
    with pytest.warns(SnapCollisionWarning, match=r"124 row\(s\) of 1 entity") as rec:
        table = _adapter().read_table(uri)
    assert rec[0].message.count == 124 and rec[0].message.source == uri
    assert table.counts == {"snap_collisions": 124}
    ecg = table.entity_ids.index("ecg")
    assert table.present[:, ecg].sum() == 126


def test_mean_averages_float_fields_and_keeps_the_nearest_label(tmp_path: Path) -> None:
    uri, raw = _ecg_bp(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # mean is an explicit choice: no warning
        table = _adapter(collisions="mean").read_table(uri)
    assert table.counts == {"snap_collisions": 124}
    t = np.asarray(raw["t"])[:250]
    v = np.asarray(raw["v"])[:250]
    k = np.floor(t * 125.0 + 0.5).astype(int)
    # independent golden: pandas-free groupby with numpy on the raw rows
    want = np.array([v[k == j].mean() for j in range(126)])
    ecg = table.entity_ids.index("ecg")
    np.testing.assert_allclose(table.values["v"][:, ecg, 0], want)
    # angular: the circular mean of 359 deg and 1 deg is 0 deg, never 180
    hdg = table.values["hdg"][:, ecg, 0]
    assert np.all((np.abs(hdg) < 1e-9) | (np.abs(hdg - 360) < 1e-9) | (hdg > 0))
    assert np.all(np.minimum(np.abs(hdg - 0), np.abs(hdg - 360)) < 1.5)
    # categorical: the nearest row's label (the row on the grid point, even index -> "a");
    # the last tick holds row 249 alone ("b")
    assert table.values["mode"][:, ecg, 0].tolist() == [0.0] * 125 + [1.0]
    bp = table.entity_ids.index("bp")
    np.testing.assert_allclose(table.values["v"][:, bp, 0], np.r_[80.0 + np.arange(125), np.nan])


def test_raise_names_the_first_colliding_row(tmp_path: Path) -> None:
    uri, _ = _ecg_bp(tmp_path)
    with pytest.raises(SourceError, match=r"row 1: 124 row\(s\) snap.*entity 'ecg'"):
        _adapter(collisions="raise").read_table(uri)


def test_mean_ignores_nulls_and_keeps_an_all_null_group_null(tmp_path: Path) -> None:
    table = pa.table(
        {
            "t": [0.0, 0.003, 0.016, 0.019],
            "id": ["e"] * 4,
            "v": [None, 2.0, None, None],
            "hdg": [10.0, 20.0, 30.0, 40.0],
            "mode": ["a"] * 4,
        }
    )
    p = tmp_path / "nulls.parquet"
    pq.write_table(table, p)
    out = _adapter(collisions="mean").read_table(str(p))
    assert out.counts["snap_collisions"] == 2
    np.testing.assert_allclose(out.values["v"][[0, 2], 0, 0], [2.0, np.nan])
    np.testing.assert_allclose(out.values["hdg"][[0, 2], 0, 0], [15.0, 35.0])


def test_no_collision_no_warning_and_a_zero_count(tmp_path: Path) -> None:
    p = tmp_path / "clean.parquet"
    pq.write_table(
        pa.table(
            {
                "t": [0.0, 0.008],
                "id": ["e", "e"],
                "v": [1.0, 2.0],
                "hdg": [0.0, 1.0],
                "mode": ["a", "b"],
            }
        ),
        p,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _adapter().read_table(str(p)).counts == {"snap_collisions": 0}


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=30))
def test_count_is_rows_minus_occupied_ticks(tmp_path_factory, ms: list[int]) -> None:
    """Property: whatever the times, collisions = rows - distinct (entity, tick) cells."""
    ms = sorted(set(ms))
    t = np.array(ms, dtype=float) / 1000.0
    p = tmp_path_factory.mktemp("c") / "p.parquet"
    n = len(ms)
    pq.write_table(
        pa.table({"t": t, "id": ["e"] * n, "v": [1.0] * n, "hdg": [0.0] * n, "mode": ["a"] * n}),
        p,
    )
    table = _adapter(collisions="mean").read_table(str(p))
    assert table.counts["snap_collisions"] == n - table.present.sum()
    assert table.present.sum() == np.unique(np.floor(t * 125.0 + 0.5)).size
