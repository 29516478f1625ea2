"""estimate_peak's entity count: a Parquet file's ids counted in Arrow from the opened file
agree with the stream's roster (the count it replaced) for text and integer ids, plain
and dictionary-encoded; a CSV file is still scanned by the stream."""

from __future__ import annotations

import copy
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from kuration import Pipeline
from kuration.pipeline.spec.budget import estimate_peak
from kuration.sources.stream import TickStream


def _counts(job: dict, sources: list[str]) -> tuple[list[int], list[int]]:
    spec = Pipeline.from_job({**job, "sources": sources}).run_spec()
    est = estimate_peak(spec, sources, baseline=0)
    roster = [len(TickStream(spec.adapter, s).roster) for s in sources]
    return [m.entities for m in est.sources], roster


@pytest.mark.parametrize("dictionary", [False, True])
def test_text_ids_match_the_roster(
    adsb_job_dict: dict, adsb_sources: list[Path], tmp_path: Path, dictionary: bool
) -> None:
    files = []
    for i, src in enumerate(adsb_sources[:3]):
        out = tmp_path / f"s{i}.parquet"
        # small row groups: several chunks, each with its own dictionary of ids
        pq.write_table(pq.read_table(src), out, row_group_size=500, use_dictionary=dictionary)
        files.append(str(out))
    got, roster = _counts(adsb_job_dict, files)
    assert got == roster and min(got) > 1


def test_integer_ids_and_csv_match_the_roster(
    adsb_job_dict: dict, adsb_sources: list[Path], tmp_path: Path
) -> None:
    rows = pq.read_table(adsb_sources[0])
    at = rows.schema.get_field_index("icao24")
    ids = pc.cast(pc.index_in(rows.column(at), value_set=pc.unique(rows.column(at))), pa.int64())
    ints = rows.set_column(at, "icao24", ids)
    pq.write_table(ints, tmp_path / "ints.parquet", row_group_size=700)
    pacsv.write_csv(rows, tmp_path / "text.csv")
    job = copy.deepcopy(adsb_job_dict)
    job["adapter"]["entity_dtype"] = "int64"
    got, roster = _counts(job, [str(tmp_path / "ints.parquet")])
    assert got == roster == [len(pc.unique(ids))]
    got, roster = _counts(adsb_job_dict, [str(tmp_path / "text.csv")])
    assert got == roster and roster[0] > 1
