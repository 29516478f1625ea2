"""kloppy/football-tracking: SkillCorner (10 Hz) and Hawk-Eye (50 Hz) samples parsed with kloppy.

kloppy (the ``connectors`` extra) parses the files after they are extracted
from the pinned wheel. The two providers are parsed in two worker processes
(kloppy's parsers are pure Python and take most of the build time), started by
:func:`timenet.build.workers.run_parallel` so that a script without a
``__main__`` guard can build it.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from timenet.build import BuildError, Connector, PinnedFile, RawInputError
from timenet.build.fetch import extract_member
from timenet.build.workers import run_parallel
from timenet.specs import SignalSpec
from timenet.writer import TimeFWriter

__all__ = ["CONNECTOR", "FootballTrackingConnector"]

PIN = PinnedFile(
    package="kloppy",
    version="3.19.1",
    filename="kloppy-3.19.1-py3-none-any.whl",
    sha256="bdb468cc7b23a6c58276fdd8dbdb9c331e8cf4be8b721fdb97b7ec69d186b5ba",
)
FILES = "kloppy/tests/files/"
SKILLCORNER = ("skillcorner_match_data.json", "skillcorner_structured_data.json")
HAWKEYE_META = "hawkeye_meta.json"
HAWKEYE_FEEDS = (
    ("hawkeye_1_1.football.samples.ball", "hawkeye_1_1.football.samples.centroids"),
    ("hawkeye_2_46.football.samples.ball", "hawkeye_2_46.football.samples.centroids"),
)
MAX_RESIDUAL_STEPS = 0.25


def _entity(player: Any) -> tuple[str, dict[str, Any]]:
    ground = str(getattr(player.team.ground, "value", player.team.ground)).lower()
    jersey = player.jersey_no
    eid = f"{ground}-{jersey}" if jersey is not None else f"{ground}-id{player.player_id}"
    meta = {
        "kind": "player",
        "team": player.team.name,
        "side": ground,
        "jersey": jersey,
        "player_id": str(player.player_id),
        "name": player.name,
    }
    return eid, meta


def _grid(dataset: Any, provider: str, where: str) -> dict[str, Any]:
    """Lay kloppy frames on a regular grid per period (runs in a worker)."""
    rate = float(dataset.metadata.frame_rate)
    periods: dict[int, list[Any]] = {}
    for frame in dataset.records:
        periods.setdefault(int(frame.period.id), []).append(frame)
    out: dict[str, Any] = {"rate": rate, "match": str(dataset.metadata.game_id), "periods": {}}
    for pid, frames in sorted(periods.items()):
        t = np.array([f.timestamp.total_seconds() for f in frames]) * rate
        idx = np.rint(t).astype(np.int64)
        resid = np.abs(t - idx)
        bad = np.flatnonzero(resid > MAX_RESIDUAL_STEPS)
        if bad.size:
            raise RawInputError(
                where, f"period {pid}: frame time {t[bad[0]] / rate:.4f} s is off the grid"
            )
        if len(np.unique(idx)) != len(idx):
            raise RawInputError(where, f"period {pid}: two frames fall on one {rate:g} Hz step")
        i0 = int(idx.min())
        n = int(idx.max()) - i0 + 1
        pos = idx - i0
        entities: dict[str, dict[str, Any]] = {}

        def slot(
            eid: str,
            meta: dict[str, Any],
            dims: int,
            entities: dict[str, Any] = entities,
            n: int = n,
        ) -> dict[str, Any]:
            e = entities.get(eid)
            if e is None:
                e = entities[eid] = {"meta": meta, "xyz": np.full((n, dims), np.nan, np.float32)}
            return e

        anonymous = 0
        for k, frame in zip(pos.tolist(), frames, strict=True):
            ball = frame.ball_coordinates
            if ball is not None and ball.x is not None:
                b = slot("ball", {"kind": "ball"}, 3)
                b["xyz"][k, :2] = (ball.x, ball.y)
                b["xyz"][k, 2] = (
                    getattr(ball, "z", None) if getattr(ball, "z", None) is not None else np.nan
                )
            for player, pdata in frame.players_data.items():
                c = pdata.coordinates
                if c is None or c.x is None:
                    continue
                if player.jersey_no is None or "anon" in str(player.player_id):
                    anonymous += 1  # an unidentified broadcast track, not one of the players
                    continue
                eid, meta = _entity(player)
                slot(eid, meta, 2)["xyz"][k] = (c.x, c.y)
        out["periods"][pid] = {
            "start_step": i0,
            "steps": n,
            "max_residual_steps": float(resid.max()),
            "anonymous_points": anonymous,
            "entities": dict(sorted(entities.items())),
        }
    return out


def _parse_skillcorner(meta: str, raw: str) -> dict[str, Any]:
    from kloppy import skillcorner

    ds = skillcorner.load(
        meta_data=meta,
        raw_data=raw,
        coordinates="skillcorner",
        include_empty_frames=True,
        only_alive=False,
    )
    return _grid(ds, "skillcorner", raw)


def _parse_hawkeye(meta: str, balls: list[str], centroids: list[str]) -> dict[str, Any]:
    from kloppy import hawkeye

    ds = hawkeye.load(
        ball_feeds=balls, player_centroid_feeds=centroids, meta_data=meta, coordinates="hawkeye"
    )
    return _grid(ds, "hawkeye", centroids[0])


class FootballTrackingConnector(Connector):
    """Build ``kloppy/football-tracking`` from the pinned kloppy wheel."""

    created: ClassVar[str] = "2025-01-01T00:00:00+00:00"
    expected_signals: ClassVar[dict[str, str]] = {"x": "m", "y": "m", "z": "m"}

    def download(self) -> None:
        members = [*SKILLCORNER, HAWKEYE_META, *(f for pair in HAWKEYE_FEEDS for f in pair)]
        self.wheel = self.fetch(PIN, members=tuple(FILES + m for m in members))

    def convert(self, writer: TimeFWriter) -> None:
        try:
            import kloppy  # noqa: F401
        except ImportError as exc:
            raise BuildError(
                "this connector parses with kloppy: pip install 'kuration-sdk[connectors]' "
                "(kloppy==3.19.1)"
            ) from exc
        with tempfile.TemporaryDirectory(prefix="timenet-kloppy-") as tmp:
            d = Path(tmp)

            def get(name: str) -> str:
                return str(extract_member(self.wheel, FILES + name, d / name))

            sc = (get(SKILLCORNER[0]), get(SKILLCORNER[1]))
            he_meta = get(HAWKEYE_META)
            balls = [get(b) for b, _c in HAWKEYE_FEEDS]
            cents = [get(c) for _b, c in HAWKEYE_FEEDS]
            with self.progress.stage("parsing with kloppy"):
                # worker processes that never re-import __main__: a script without an
                # `if __name__ == "__main__":` guard can build this dataset
                skillcorner, hawkeye = run_parallel(
                    [(_parse_skillcorner, sc), (_parse_hawkeye, (he_meta, balls, cents))],
                    what="kloppy/football-tracking: parsing with kloppy",
                )
            parsed = {"skillcorner": skillcorner, "hawkeye": hawkeye}
        for provider, data in parsed.items():
            self._write(writer, provider, data)

    def _write(self, writer: TimeFWriter, provider: str, data: dict[str, Any]) -> None:
        rate = data["rate"]
        for pid, period in data["periods"].items():
            group = f"{provider}-{data['match']}-p{pid}"
            start_ns = round(period["start_step"] * 1e9 / rate)
            self.count(f"{provider}_steps", period["steps"])
            self.count(f"{provider}_anonymous_track_points_dropped", period["anonymous_points"])
            for eid, ent in self.progress.track(list(period["entities"].items()), group):
                rid = f"{group}-{eid}"
                meta = {
                    **ent["meta"],
                    "entity": eid,
                    "group": group,
                    "provider": provider,
                    "match": data["match"],
                    "period": pid,
                    "rate_hz": rate,
                    "max_residual_steps": round(period["max_residual_steps"], 4),
                }
                writer.add_record(rid, meta)
                xyz = ent["xyz"]
                for d, name in enumerate(("x", "y", "z")[: xyz.shape[1]]):
                    col = np.ascontiguousarray(xyz[:, d])
                    writer.add_signal(
                        rid,
                        name,
                        np.ma.masked_array(col, mask=np.isnan(col)),
                        SignalSpec("float32", "m", rate_hz=rate, start_ns=start_ns),
                    )
                self.count("records")


CONNECTOR = FootballTrackingConnector
