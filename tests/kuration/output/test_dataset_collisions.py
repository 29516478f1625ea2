"""Snap collisions reach config.json: counted per source, in the scoring summary too."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from kuration import run_job
from kuration.errors import SnapCollisionWarning

# small budgets filled with whole 15-minute tracks overshoot their request on purpose here
pytestmark = pytest.mark.filterwarnings("ignore::kuration.errors.BudgetGranularityWarning")


def _with_collisions(src: Path, dst: Path) -> int:
    """Copy ``src`` with 60 rows repeated 300 ms later; returns rows - distinct (entity, tick)."""
    table = pq.read_table(src)
    extra = table.slice(0, 60)
    extra = extra.set_column(
        extra.schema.get_field_index("timestamp"),
        "timestamp",
        pc.add(extra.column("timestamp"), 300),
    )
    out = pa.concat_tables([table, extra]).sort_by("timestamp")
    pq.write_table(out, dst)
    t = np.asarray(out.column("timestamp")) / 1000.0
    ids = np.asarray(out.column("icao24").to_pylist())
    cells = {(e, int(k)) for e, k in zip(ids, np.rint(t), strict=True)}
    return out.num_rows - len(cells)


@pytest.mark.parametrize("policy", ["nearest", "mean"])
def test_collisions_are_counted_per_source_in_config_json(
    tmp_path: Path, adsb_job_dict: dict, adsb_sources: list[Path], policy: str
) -> None:
    # both sources in one folder, so their ids are their file stems (docs/input-policies.md)
    folder = tmp_path / "sources"
    folder.mkdir()
    clean = folder / adsb_sources[0].name
    shutil.copyfile(adsb_sources[0], clean)
    noisy = folder / "noisy.parquet"
    expected = _with_collisions(adsb_sources[1], noisy)
    assert expected >= 60
    job = json.loads(json.dumps(adsb_job_dict))
    job["sources"] = [str(clean), str(noisy)]
    job["budget"] = {"train_hours": 0.05, "test_hours": 0.0}
    job["adapter"]["collisions"] = policy
    if policy == "nearest":
        with pytest.warns(SnapCollisionWarning, match=f"noisy.parquet: {expected} row"):
            res = run_job(job, tmp_path / "out")
    else:
        res = run_job(job, tmp_path / "out")
    config = json.loads((tmp_path / "out" / "config.json").read_text())
    rows = {r["source_id"]: r for r in config["pipeline"]["sources"]}
    assert rows["noisy"]["snap_collisions"] == expected
    assert rows[clean.stem]["snap_collisions"] == 0
    assert config["results"]["scoring"]["snap_collisions"] == {"noisy": expected}
    assert res.scoring.summary()["snap_collisions"] == {"noisy": expected}
