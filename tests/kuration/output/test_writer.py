"""OutputSpec routes, short policies, the presence mask, encoders and shard names (write_track)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kuration import OutputSpec, SchemaSpec, Segment, Tick, read_shard_arrays, write_track
from kuration.contracts.tick import table_from_ticks
from kuration.errors import OutputSpecError
from kuration.extend import (
    PassthroughEncoder,
    get_encoder,
    register_encoder,
    registered_encoders,
    tracks_from_segment,
    tracks_from_ticks,
)
from kuration.output.encoders import _ENCODERS

SCHEMA = SchemaSpec.from_dict(
    {
        "sample_hz": 2.0,
        "fields": [
            {"name": "pos", "kind": "vector", "dims": 2},
            {"name": "battery", "kind": "scalar"},
            {"name": "mode", "kind": "scalar"},
        ],
    }
)


def _ticks(n: int = 10, absent: tuple[int, ...] = (3, 4)) -> list[Tick]:
    out = []
    for t in range(n):
        ents = (
            {} if t in absent else {"a": {"pos": [t, -t], "battery": 1.0 - t / 10, "mode": t % 3}}
        )
        ents["b"] = {"pos": [0, 0], "battery": 0.5, "mode": 1}
        out.append(Tick(time=t / 2.0, entities=ents))
    return out


def _track():
    return next(tr for tr in tracks_from_ticks(SCHEMA, _ticks(), "src") if tr.entity_id == "a")


def _spec(**kw) -> OutputSpec:
    d = {
        "shard_length": 4,
        "short_policy": "keep",
        "modalities": {
            "pos": {"dtype": "float32", "shape": [2], "source": "field:pos"},
            "battery": {"dtype": "float64", "shape": [], "source": "field:battery"},
            "mode": {"dtype": "uint8", "shape": [], "source": "field:mode"},
        },
    }
    d.update(kw)
    return OutputSpec.from_dict(d)


def _read(root: Path, entries: list[dict], spec: OutputSpec) -> list[dict[str, np.ndarray]]:
    mods = {k: m.to_dict() for k, m in spec.modalities.items()}
    return [read_shard_arrays(e, spec.container, root=root, modalities=mods) for e in entries]


def test_spec_round_trips_and_rejects_bad_input() -> None:
    spec = _spec()
    assert OutputSpec.from_dict(spec.to_dict()) == spec
    assert spec.presence_mask is True  # on by default
    with pytest.raises(OutputSpecError, match="media frames are uint8"):
        _spec(modalities={"f": {"dtype": "float32", "shape": [2], "source": "media:frame"}})
    with pytest.raises(OutputSpecError, match="short_policy"):
        _spec(short_policy="trim")
    with pytest.raises(OutputSpecError, match="reserved"):
        _spec(modalities={"_x": {"dtype": "uint8", "shape": [], "source": "field:mode"}})
    with pytest.raises(OutputSpecError, match="no field"):
        _spec(
            modalities={"x": {"dtype": "uint8", "shape": [], "source": "field:nope"}}
        ).validate_against(SCHEMA)


@pytest.mark.parametrize(
    ("policy", "lengths", "padded"),
    [
        ("keep", [4, 4, 2], [False, False, False]),
        ("pad", [4, 4, 2], [False, False, True]),
        ("drop", [4, 4], [False, False]),
    ],
)
def test_short_policies(
    tmp_path: Path, policy: str, lengths: list[int], padded: list[bool]
) -> None:
    spec = _spec(short_policy=policy)
    entries = write_track(tmp_path, _track(), spec, schema=SCHEMA)
    assert [e["n_steps"] for e in entries] == lengths
    assert [e["padded"] for e in entries] == padded
    arrays = _read(tmp_path, entries, spec)
    rows = [a["pos"].shape[0] for a in arrays]
    assert rows == ([4, 4, 4] if policy == "pad" else lengths)
    assert [int(a["_n_steps"]) for a in arrays] == lengths
    if policy == "pad":
        tail = arrays[-1]
        assert not tail["_present"][2:].any() and (tail["pos"][2:] == 0).all()


def test_presence_mask_and_zero_fill(tmp_path: Path) -> None:
    spec = _spec(short_policy="keep")
    entries = write_track(tmp_path, _track(), spec, schema=SCHEMA)
    first = _read(tmp_path, entries, spec)[0]
    assert first["_present"].tolist() == [True, True, True, False]
    assert first["pos"][3].tolist() == [0, 0] and first["mode"].dtype == np.uint8
    np.testing.assert_array_equal(
        first["pos"][:3], np.array([[0, 0], [1, -1], [2, -2]], np.float32)
    )
    off = _spec(presence_mask=False)
    entries = write_track(tmp_path / "off", _track(), off, schema=SCHEMA)
    assert "_present" not in _read(tmp_path / "off", entries, off)[0]


def test_missing_values_name_source_entity_and_row(tmp_path: Path) -> None:
    ticks = _ticks()
    ticks[6] = Tick(6 / 2.0, {"a": {"pos": [6, -6], "battery": 0.4, "mode": None}})
    track = next(t for t in tracks_from_ticks(SCHEMA, ticks, "src-x") if t.entity_id == "a")
    with pytest.raises(OutputSpecError, match=r"source 'src-x', entity 'a', row 6"):
        write_track(tmp_path, track, _spec(), schema=SCHEMA)
    seg = _spec(modalities={"turn": {"dtype": "float32", "shape": [], "source": "segment:turn"}})
    with pytest.raises(
        OutputSpecError, match=r"no segment feature 'turn'.*'src', entity 'a', row 0"
    ):
        write_track(tmp_path, _track(), seg, schema=SCHEMA)


class _Enc:
    def __init__(self, scale: float = 1.0) -> None:
        self.scale = scale
        self.calls = 0

    def timestep(self, record, ctx):
        self.calls += 1
        assert ctx["track"]["source_id"] == "src" and ctx["schema"] is SCHEMA
        return {"speed2": record["pos"] * self.scale}


class _BatchEnc(_Enc):
    def encode_batch(self, records, ctx):
        out = np.zeros((len(records), 2))
        for i, r in enumerate(records):
            if r:
                out[i] = r["pos"] * self.scale
        return {"speed2": out}


def test_encoder_routes_and_encode_batch_is_preferred(tmp_path: Path) -> None:
    spec = _spec(
        modalities={
            "pos2": {"dtype": "float64", "shape": [2], "source": "encoder:speed2"},
            "battery": {"dtype": "float32", "shape": [], "source": "field:battery"},
        }
    )
    enc = _Enc(2.0)
    per_step = write_track(tmp_path / "a", _track(), spec, schema=SCHEMA, encoder=enc)
    assert enc.calls == 8  # present steps only
    batch = _BatchEnc(2.0)
    batched = write_track(tmp_path / "b", _track(), spec, schema=SCHEMA, encoder=batch)
    assert batch.calls == 0
    assert [e["sha256"] for e in per_step] == [e["sha256"] for e in batched]
    arr = _read(tmp_path / "a", per_step, spec)[0]
    assert arr["pos2"][2].tolist() == [4.0, -4.0]
    with pytest.raises(OutputSpecError, match="need an OutputEncoder"):
        write_track(tmp_path / "c", _track(), spec, schema=SCHEMA)
    with pytest.raises(OutputSpecError, match="need an OutputEncoder"):
        write_track(tmp_path / "c", _track(), spec, schema=SCHEMA, encoder=PassthroughEncoder())

    class Forgetful:
        def timestep(self, record, ctx):
            return {} if record["pos"][0] == 5 else {"speed2": record["pos"]}

    with pytest.raises(
        OutputSpecError, match=r"hook 'speed2' returned no value.*entity 'a', row 5"
    ):
        write_track(tmp_path / "d", _track(), spec, schema=SCHEMA, encoder=Forgetful())


def test_encoder_registry() -> None:
    assert "passthrough" in registered_encoders()
    assert isinstance(get_encoder("passthrough"), PassthroughEncoder)
    register_encoder("scaled-test", _Enc)
    try:
        enc = get_encoder("scaled-test", scale=3.0)
        assert enc.scale == 3.0
        with pytest.raises(ValueError, match="already registered"):
            register_encoder("scaled-test", _BatchEnc)
    finally:
        _ENCODERS.unregister("scaled-test")
    with pytest.raises(KeyError, match="unknown encoder"):
        get_encoder("scaled-test")


def test_count_path_segment_features(tmp_path: Path) -> None:
    table = table_from_ticks(SCHEMA, _ticks(), "src")
    seg = Segment("src", 2, 8, features={"turn": 0.25}, priority=1.0)
    tracks = tracks_from_segment(table, seg)
    assert [t.entity_id for t in tracks] == ["a", "b"]
    spec = _spec(modalities={"turn": {"dtype": "float32", "shape": [], "source": "segment:turn"}})
    entries = write_track(tmp_path, tracks[0], spec, schema=SCHEMA)
    assert entries[0]["start_idx"] == 2
    arr = _read(tmp_path, entries, spec)[0]
    assert arr["turn"].tolist() == [0.25, 0.0, 0.0, 0.25]  # zero where the entity is absent


@pytest.mark.parametrize(
    ("source_id", "entity_id"),
    [
        ("../../etc", "passwd"),
        ("a/b c", "x/../y"),
        ("ünï cödé", "飛行機"),
        ("dot..dot", ".."),
        ("s", 1),
    ],
)
def test_awkward_ids_stay_inside_the_split_directory(tmp_path: Path, source_id, entity_id) -> None:
    ticks = [
        Tick(t / 2.0, {entity_id: {"pos": [1, 2], "battery": 1.0, "mode": 0}}) for t in range(3)
    ]
    track = tracks_from_ticks(SCHEMA, ticks, source_id)[0]
    entries = write_track(tmp_path, track, _spec(), schema=SCHEMA)
    for e in entries:
        p = (tmp_path / e["path"]).resolve()
        assert p.parent == (tmp_path / "train").resolve() and p.is_file()
        assert e["path"].isascii() and " " not in e["path"]
    assert [p.name for p in tmp_path.iterdir()] == ["train"]


def test_int_and_str_ids_never_alias(tmp_path: Path) -> None:
    names = set()
    for ent in (1, "1", 1.0, True, ("1",)):
        ticks = [Tick(t / 2.0, {ent: {"pos": [1, 2], "battery": 1.0, "mode": 0}}) for t in range(3)]
        track = tracks_from_ticks(SCHEMA, ticks, "s")[0]
        entries = write_track(tmp_path, track, _spec(), schema=SCHEMA)
        names.add(entries[0]["path"])
        assert entries[0]["entity_id"].split(":")[0] in {"int", "str", "float", "bool", "tuple"}
    assert len(names) == 5
    for alias in ("a/b", "a_b"):  # flatten alike, hash apart
        ticks = [Tick(0.0, {"e": {"pos": [1, 2], "battery": 1.0, "mode": 0}})]
        names.add(
            write_track(
                tmp_path, tracks_from_ticks(SCHEMA, ticks, alias)[0], _spec(), schema=SCHEMA
            )[0]["path"]
        )
    assert len(names) == 7


def test_unsupported_entity_ids_are_refused(tmp_path: Path) -> None:
    track = _track()
    track.entity_id = object()
    with pytest.raises(ValueError, match="canonical"):
        write_track(tmp_path, track, _spec(), schema=SCHEMA)


def test_an_unwritable_destination_names_the_path(tmp_path: Path) -> None:
    from kuration.errors import DestinationError

    in_the_way = tmp_path / "file"
    in_the_way.write_text("a file where the dataset folder should be")
    with pytest.raises(DestinationError, match="cannot write a shard") as info:
        write_track(in_the_way, _track(), _spec(), schema=SCHEMA)
    assert isinstance(info.value, OSError) and info.value.path.startswith(str(in_the_way))


def test_a_read_only_destination_as_nobody(tmp_path: Path, read_only_dir: Path, unprivileged):
    import subprocess
    import sys

    code = f"""
import sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from test_writer import SCHEMA, _spec, _track
from kuration import write_track
from kuration.errors import DestinationError
try:
    write_track({str(read_only_dir)!r}, _track(), _spec(), schema=SCHEMA)
except DestinationError as exc:
    print(exc.path)
    print(exc)
"""
    run = subprocess.run(
        unprivileged([sys.executable, "-c", code]), capture_output=True, text=True, check=False
    )
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    path, message = run.stdout.splitlines()
    assert path == str(read_only_dir / "train")
    assert message == f"{read_only_dir / 'train'}: cannot write a shard: Permission denied"
    assert list(read_only_dir.iterdir()) == []
