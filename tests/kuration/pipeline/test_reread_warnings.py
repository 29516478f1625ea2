"""A source's warnings are shown once per run: the stage step reads an admitted source again
to write its tracks, and that second read stays quiet."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kuration.cli.main import main


def _disordered(src: Path, out: Path) -> Path:
    """``src`` with the timestamps of two rows of its first aircraft swapped."""
    t = pq.read_table(src)
    ts = t.column("timestamp").to_numpy().copy()
    ts[[10, 11]] = ts[[11, 10]]
    out.parent.mkdir(parents=True, exist_ok=True)
    i = t.schema.get_field_index("timestamp")
    pq.write_table(t.set_column(i, t.schema.field(i), pa.array(ts)), out)
    return out


@pytest.mark.filterwarnings("always::kuration.errors.DataOrderWarning")
@pytest.mark.parametrize("layout", ["files", "packed"])
def test_a_disordered_source_warns_once(
    small_job, adsb_sources, tmp_path: Path, capsys, layout: str
) -> None:
    job = json.loads(json.dumps(small_job))
    job["sources"] = [str(_disordered(p, tmp_path / "src" / p.name)) for p in adsb_sources[:4]]
    job["budget"] = {"train_hours": 50.0, "test_hours": 50.0}  # every track is written
    if layout == "packed":
        job["output"] = {**job["output"], "container": "parquet", "layout": "packed"}
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    assert main(["run", str(path), "--out", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if "time goes backwards" in ln]
    assert len(lines) == 4, err
    assert len({ln.split(",")[0] for ln in lines}) == 4  # one per source
