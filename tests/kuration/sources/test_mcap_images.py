"""MCAP image topics as lazy media columns (``McapAdapter(media=...)``, provider ``mcap``).

The frames and joint states are the first 90 frames of the top camera and
``observation.state`` of ``robovet demo --v3 --clean`` (robovet 0.2.2, MIT; a dev
dependency), converted here into MCAP files by the ``mcap-ros2-support`` 0.6.0 writer
(ROS 2 CDR: ``sensor_msgs/msg/Image`` rgb8 at 30 Hz, ``sensor_msgs/msg/CompressedImage``
JPEG at 15 Hz) and by the ``mcap`` 1.6.0 writer (JSON: ``foxglove.CompressedImage`` PNG,
base64 data): converted data, labelled as such.
"""

from __future__ import annotations

import base64
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from kuration import iter_shards, run_job
from kuration.contracts.media import get_media_provider
from kuration.contracts.schema import SchemaSpec
from kuration.errors import AdapterError, MediaError, OutputSpecError
from kuration.sources.mcap import McapAdapter
from kuration.sources.mcap_media import McapImageProvider

pytest.importorskip("mcap_ros2", reason="mcap extra")
av = pytest.importorskip("av")
Image = pytest.importorskip("PIL.Image")

BIN = Path(sys.executable).parent
N = 90
STATE = [f"/robot/state.position[{j}]" for j in range(6)]
T0 = 1_700_000_000 * 10**9
HEADER = """
================================================================================
MSG: std_msgs/Header
builtin_interfaces/Time stamp
string frame_id
================================================================================
MSG: builtin_interfaces/Time
int32 sec
uint32 nanosec
"""
IMAGE = (
    "std_msgs/Header header\nuint32 height\nuint32 width\nstring encoding\n"
    "uint8 is_bigendian\nuint32 step\nuint8[] data\n" + HEADER
)
COMPRESSED = "std_msgs/Header header\nstring format\nuint8[] data\n" + HEADER
SCHEMA = {
    "name": "so100",
    "sample_hz": 30,
    "fields": [{"name": "state", "kind": "vector", "dims": 6}],
    "media": {
        "raw": {"shape": [120, 160, 3], "provider": "mcap"},
        "jpeg": {"shape": [120, 160, 3], "provider": "mcap"},
        "png": {"shape": [120, 160, 3], "provider": "mcap"},
    },
}


def _t(i: int) -> int:
    return T0 + round(i * 10**9 / 30)


def _encoded(img: np.ndarray, kind: str) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format=kind, **({"quality": 95} if kind == "JPEG" else {}))
    return buf.getvalue()


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp = tmp_path_factory.mktemp("mcapimg")
    demo = tmp / "demo"
    subprocess.run(
        [str(BIN / "robovet"), "demo", str(demo), "--v3", "--clean"],
        check=True,
        capture_output=True,
    )
    with av.open(str(demo / "videos/observation.images.cam_top/chunk-000/file-000.mp4")) as c:
        frames = np.stack([f.to_ndarray(format="rgb24") for f in c.decode(video=0)][:N])
    data = pq.read_table(demo / "data/chunk-000/file-000.parquet").slice(0, N)
    state = np.asarray(data.column("observation.state").to_pylist(), dtype=np.float64)
    from mcap.writer import Writer as JsonWriter
    from mcap_ros2.writer import Writer as Ros2Writer

    ros2 = tmp / "robot_ros2.mcap"
    with open(ros2, "wb") as fh:
        w = Ros2Writer(fh)
        s_state = w.register_msgdef("robot_msgs/State", "float64[] position\n")
        s_img = w.register_msgdef("sensor_msgs/msg/Image", IMAGE)
        s_jpg = w.register_msgdef("sensor_msgs/msg/CompressedImage", COMPRESSED)
        for i in range(N):
            t = _t(i)
            header = {"stamp": {"sec": t // 10**9, "nanosec": t % 10**9}, "frame_id": "cam"}
            w.write_message(
                "/robot/state", s_state, {"position": state[i].tolist()}, log_time=t, publish_time=t
            )
            img = {
                "header": header,
                "height": 120,
                "width": 160,
                "encoding": "rgb8",
                "is_bigendian": 0,
                "step": 480,
                "data": frames[i].tobytes(),
            }
            w.write_message("/cam/raw", s_img, img, log_time=t, publish_time=t)
            if i % 2 == 0:
                jpg = {"header": header, "format": "jpeg", "data": _encoded(frames[i], "JPEG")}
                w.write_message("/cam/jpeg", s_jpg, jpg, log_time=t, publish_time=t)
        w.finish()
    js = tmp / "robot_json.mcap"
    with open(js, "wb") as fh:
        w = JsonWriter(fh)
        w.start()
        obj = json.dumps({"type": "object"}).encode()
        c_state = w.register_channel(
            "/robot/state", "json", w.register_schema("State", "jsonschema", obj)
        )
        sid = w.register_schema("foxglove.CompressedImage", "jsonschema", obj)
        c_png = w.register_channel("/cam/png", "json", sid)
        for i in range(N):
            t = _t(i)
            w.add_message(
                c_state,
                log_time=t,
                publish_time=t,
                data=json.dumps({"position": state[i].tolist()}).encode(),
            )
            png = {"format": "png", "data": base64.b64encode(_encoded(frames[i], "PNG")).decode()}
            w.add_message(c_png, log_time=t, publish_time=t, data=json.dumps(png).encode())
        w.finish()
    return {"frames": frames, "state": state, "ros2": str(ros2), "json": str(js)}


def _adapter(media: dict) -> McapAdapter:
    return McapAdapter(SchemaSpec.from_dict(SCHEMA), fields={"state": STATE}, media=media)


def test_images_are_listed_without_decoding(recording, monkeypatch) -> None:
    def refuse(*_a, **_k):  # type: ignore[no-untyped-def]
        raise AssertionError("an image was decoded while the source was read")

    monkeypatch.setattr(McapImageProvider, "_frame", refuse)
    table = _adapter({"raw": "/cam/raw", "jpeg": "/cam/jpeg"}).read_table(recording["ros2"])
    assert table.n_steps == N and table.present.all()
    np.testing.assert_array_equal(table.values["state"][:, 0, :], recording["state"])
    assert table.media["raw"].index.tolist() == list(range(N))
    jpeg = table.media["jpeg"].index
    assert jpeg[0::2].tolist() == list(range(N // 2)) and (jpeg[1::2] == -1).all()
    assert table.counts["messages:/cam/raw"] == N and table.counts["messages:/cam/jpeg"] == N // 2
    assert table.counts["media_collisions:/cam/raw"] == 0
    assert table.counts["frames_outside:/cam/jpeg"] == 0


@pytest.mark.parametrize(
    ("file", "column", "topic", "step", "loss"),
    [
        ("ros2", "raw", "/cam/raw", 1, 0.0),
        ("ros2", "jpeg", "/cam/jpeg", 2, 3.0),
        ("json", "png", "/cam/png", 1, 0.0),
    ],
)
def test_decoded_frames_are_the_recorded_ones(recording, file, column, topic, step, loss) -> None:
    table = _adapter({column: topic}).read_table(recording[file])
    col = table.media[column]
    rows = np.flatnonzero(col.present)
    got = get_media_provider("mcap").decode_batch(col.refs_at(rows[::-1]), size=(120, 160))
    want = recording["frames"][rows[::-1]]
    assert len(rows) == N // step
    diff = np.abs(got.astype(int) - want)
    assert diff.mean() <= loss if loss else diff.max() == 0
    gray = get_media_provider("mcap").decode_batch(
        col.refs_at(rows[:3]), size=(60, 80), format="gray"
    )
    assert gray.shape == (3, 60, 80, 1)
    info = get_media_provider("mcap").probe(recording[file], col.refs[0].stream)
    assert (info.height, info.width, info.n_frames) == (120, 160, N // step)


def _job(recording: dict, tmp: Path, modalities: dict, **output: object) -> Path:
    job = {
        "schema": SCHEMA,
        "adapter": {
            "type": "mcap",
            "fields": {"state": STATE},
            "media": {"raw": "/cam/raw", "jpeg": "/cam/jpeg"},
        },
        "sources": [recording["ros2"]],
        "segmenter": {"window": 1.0, "stride": 1.0, "unit": "seconds"},
        "strategy": {
            "define": {"s": "field:state | norm | mean"},
            "method": "top-k",
            "params": {"by": "s"},
        },
        "output": {
            "shard_length": 30,
            "container": "npz",
            "presence_mask": True,
            "modalities": {
                "state": {"dtype": "float64", "shape": [6], "source": "field:state"},
                **{
                    m: {"dtype": "uint8", "shape": [120, 160, 3], "source": f"media:{m}"}
                    for m in modalities
                },
            },
            **output,
        },
        "budget": {"train_hours": 3.0 / 3600, "test_hours": 0.0},
        "allow_empty_split": True,
        "min_track_seconds": 1.0,
    }
    path = tmp / "job.json"
    path.write_text(json.dumps(job))
    return path


def _ticks(arrays: dict, k: int) -> np.ndarray:
    first = round(arrays["_time_s"][0] * 30) - T0 * 30 // 10**9
    return np.arange(first, first + k)


def test_a_run_writes_the_images_of_its_spans(recording, tmp_path: Path) -> None:
    run_job(_job(recording, tmp_path, ["raw", "jpeg"]), tmp_path / "out")
    n = 0
    for arrays, e in iter_shards(tmp_path / "out", with_meta=True):
        k = e["n_steps"]
        ticks = _ticks(arrays, k)
        np.testing.assert_array_equal(arrays["raw"][:k], recording["frames"][ticks])
        np.testing.assert_array_equal(arrays["_present_jpeg"][:k], ticks % 2 == 0)
        n += k
    assert n == N


def test_images_become_a_lerobot_camera(recording, tmp_path: Path) -> None:
    """In the ``lerobot`` layout an MCAP image topic is encoded (it cannot be remuxed); a
    topic without an image at every tick cannot be a camera."""
    lr = {"layout": "lerobot", "container": "parquet"}
    run_job(_job(recording, tmp_path, ["raw"], **lr), tmp_path / "lr")
    config = json.loads((tmp_path / "lr" / "config.json").read_text())
    assert config["results"]["lerobot_videos"]["reencoded"] == 1
    assert config["results"]["lerobot_videos"]["remuxed"] == 0
    n = 0
    for arrays, e in iter_shards(tmp_path / "lr", with_meta=True):
        k = e["n_steps"]
        diff = np.abs(arrays["raw"][:k].astype(int) - recording["frames"][_ticks(arrays, k)])
        assert diff.mean() < 3.0  # the codec's loss
        n += k
    assert n == N
    with pytest.raises(OutputSpecError, match="lacks frames of 'jpeg'"):
        run_job(_job(recording, tmp_path, ["raw", "jpeg"], **lr), tmp_path / "lr2")


def test_media_options_are_checked() -> None:
    schema = dict(SCHEMA, media={"cam": {"shape": [120, 160, 3]}})
    with pytest.raises(AdapterError, match='"provider": "mcap"'):
        McapAdapter(SchemaSpec.from_dict(schema), fields={"state": "/s.p"}, media={"cam": "/c"})
    with pytest.raises(AdapterError, match="not a schema media column"):
        _adapter({"nope": "/cam/raw"})
    with pytest.raises(AdapterError, match="one entity"):
        McapAdapter(
            SchemaSpec.from_dict(SCHEMA),
            fields={"state": "/s.p"},
            entity="/s.id",
            media={"raw": "/cam/raw"},
        )


def test_an_unread_image_encoding_names_it(recording, tmp_path: Path) -> None:
    from mcap_ros2.writer import Writer

    path = tmp_path / "depth.mcap"
    with open(path, "wb") as fh:
        w = Writer(fh)
        s = w.register_msgdef("sensor_msgs/msg/Image", IMAGE)
        header = {"stamp": {"sec": 0, "nanosec": 0}, "frame_id": "d"}
        msg = {
            "header": header,
            "height": 2,
            "width": 2,
            "encoding": "16UC1",
            "is_bigendian": 0,
            "step": 4,
            "data": bytes(8),
        }
        w.write_message("/depth", s, msg, log_time=T0, publish_time=T0)
        w.finish()
    provider = get_media_provider("mcap")
    refs = list(provider.iter_refs(str(path), 1))
    with pytest.raises(MediaError, match="16UC1"):
        provider.decode_batch(refs)
