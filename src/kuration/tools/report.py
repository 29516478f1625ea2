"""Self-contained HTML reports (no network): ``kur inspect --html`` and ``kur diff --html``.

Plots are drawn with matplotlib (the ``[report]`` extra) and embedded as
inline SVG, so the file opens anywhere without fetching scripts or fonts.
"""

from __future__ import annotations

import html
import io
import itertools
import json
import os
from collections.abc import Mapping
from typing import Any

from ..errors import MissingExtraError

__all__ = ["dataset_name", "render_diff_html", "render_inspect_html"]

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1100px;color:#1d2330}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #dde;padding-bottom:.2rem}
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #dde;padding:.25rem .6rem;text-align:right}
th{background:#f3f5f9}td:first-child,th:first-child{text-align:left}.ok{color:#1a7f37}.bad{color:#c62828}
.grid{display:flex;flex-wrap:wrap;gap:1rem}.grid figure{margin:0}code{background:#f3f5f9;padding:0 .2rem}
"""


def _plt() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - exercised only without the extra
        raise MissingExtraError(
            "HTML reports need matplotlib, from the [report] extra: pip install 'kuration-sdk[report]' "
            "(in a checkout: pip install -e '.[report]')"
        ) from None
    return plt


def _svg(fig: Any) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    _plt().close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    start, end = text.find("<metadata>"), text.find("</metadata>")
    if start != -1 and end != -1:  # RDF boilerplate, not needed to draw
        text = text[:start] + text[end + len("</metadata>") :]
    return text


def _table(rows: list[list[Any]], head: list[str]) -> str:
    th = "".join(f"<th>{html.escape(str(h))}</th>" for h in head)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows
    )
    return f"<table><tr>{th}</tr>{body}</table>"


def _hours_plot(budget: Mapping[str, Any]) -> str:
    plt = _plt()
    splits = [s for s in ("train", "test") if s in budget]
    keys = [("requested_s", "requested"), ("admitted_s", "admitted"), ("emitted_s", "emitted")]
    fig, ax = plt.subplots(figsize=(5.2, 3.0))
    width = 0.25
    for i, (k, label) in enumerate(keys):
        vals = [budget[s].get(k, 0.0) / 3600 for s in splits]
        ax.bar([j + (i - 1) * width for j in range(len(splits))], vals, width, label=label)
    ax.set_xticks(range(len(splits)), splits)
    ax.set_ylabel("hours")
    ax.set_title("hours per split")
    ax.legend(frameon=False, fontsize=8)
    return _svg(fig)


def _source_hours_plot(shards: list[dict[str, Any]], hz: float) -> str:
    plt = _plt()
    per: dict[tuple[str, str], float] = {}
    for e in shards:
        key = (e["source_id"], e["split"])
        per[key] = per.get(key, 0.0) + e["n_steps"] / hz / 3600
    sources = sorted({k[0] for k in per})
    fig, ax = plt.subplots(figsize=(5.2, max(2.4, 0.28 * len(sources) + 1)))
    colours = {"train": "#3b6fd8", "test": "#e0852b"}
    for i, s in enumerate(sources):
        for split, c in colours.items():
            if (s, split) in per:
                ax.barh(i, per[(s, split)], color=c, label=split)
    handles, labels = ax.get_legend_handles_labels()
    uniq = dict(zip(labels, handles, strict=False))
    ax.legend(uniq.values(), uniq.keys(), frameon=False, fontsize=8)
    ax.set_yticks(range(len(sources)), sources, fontsize=7)
    ax.set_xlabel("hours emitted")
    ax.set_title("hours per source (group)")
    return _svg(fig)


def _timeline_plot(shards: list[dict[str, Any]], hz: float) -> str:
    plt = _plt()
    spans: dict[tuple[str, str, Any, str], list[int]] = {}
    for e in shards:
        key = (e["source_id"], e["entity_id"], e.get("span_index"), e["split"])
        lo, hi = e["start_idx"], e["start_idx"] + e["n_steps"]
        cur = spans.setdefault(key, [lo, hi])
        cur[0], cur[1] = min(cur[0], lo), max(cur[1], hi)
    sources = sorted({k[0] for k in spans})
    row = {s: i for i, s in enumerate(sources)}
    fig, ax = plt.subplots(figsize=(10.5, max(2.4, 0.32 * len(sources) + 1)))
    colours = {"train": "#3b6fd8", "test": "#e0852b"}
    for (src, _ent, _span, split), (lo, hi) in sorted(spans.items(), key=lambda kv: str(kv[0])):
        ax.broken_barh(
            [(lo / hz / 60, (hi - lo) / hz / 60)],
            (row[src] - 0.4, 0.8),
            facecolors=colours.get(split, "#888"),
            alpha=0.35,
            edgecolor="none",
        )
    ax.set_yticks(range(len(sources)), sources, fontsize=7)
    ax.set_xlabel("minutes from source start")
    ax.set_title("admitted spans per source (overlapping bars: concurrent entities)")
    return _svg(fig)


def _distribution_plots(dist: Mapping[str, Any], units: Mapping[str, str]) -> list[str]:
    plt = _plt()
    out = []
    for name, d in sorted(dist.items()):
        edges = d.get("edges") or []
        if len(edges) < 2:
            continue
        centres = [(a + b) / 2 for a, b in itertools.pairwise(edges)]
        widths = [b - a for a, b in itertools.pairwise(edges)]
        fig, ax = plt.subplots(figsize=(3.4, 2.4))
        for key, colour, label in (
            ("pool", "#9aa5b8", "pool"),
            ("selected", "#3b6fd8", "selected"),
        ):
            counts = d.get(key) or []
            total = sum(counts) or 1
            ax.bar(
                centres, [c / total for c in counts], widths, color=colour, alpha=0.6, label=label
            )
        ax.set_title(name, fontsize=9)
        ax.set_xlabel(f"{name} ({units[name]})" if units.get(name) else name, fontsize=8)
        ax.set_ylabel("share of windows", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.legend(frameon=False, fontsize=7)
        out.append(_svg(fig))
    return out


_SPLIT_COLOURS = {"train": "#3b6fd8", "test": "#e0852b"}
_POOL_COLOUR = "#b8bfcc"


def _map_plot(tracks: Mapping[str, list[Any]], pool: list[Any], f: Any, title: str) -> str:
    import numpy as np
    from matplotlib.collections import LineCollection

    from .report_data import plane, thin

    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 6.0))
    labels: list[str] = ["", ""]
    for values in pool:
        x, y, *labels = plane(thin(values), f)
        ax.add_collection(
            LineCollection(
                [np.c_[x, y]], colors=_POOL_COLOUR, linewidths=0.5, alpha=0.5, rasterized=True
            )
        )
    for split, colour in _SPLIT_COLOURS.items():
        segs = []
        for values in tracks.get(split, []):
            x, y, *labels = plane(thin(values), f)
            segs.append(np.c_[x, y])
        if segs:
            ax.add_collection(
                LineCollection(
                    segs,
                    colors=colour,
                    linewidths=1.1,
                    label=f"{split} ({len(segs)})",
                    rasterized=True,
                )
            )
    ax.autoscale()
    if f.frame == "geodetic":
        lat = np.nanmean([np.nanmean(v[:, 0]) for vs in tracks.values() for v in vs] or [0.0])
        ax.set_aspect(1 / max(np.cos(np.deg2rad(lat)), 0.05))
    else:
        ax.set_aspect("equal")
    ax.set_xlabel(labels[0])
    ax.set_ylabel(labels[1])
    ax.set_title(title, fontsize=10)
    ax.legend(frameon=False, fontsize=8, loc="best")
    return _svg(fig)


def _window_plot(ex: Mapping[str, Any], units: Mapping[str, str]) -> str:
    plt = _plt()
    n = len(ex["series"])
    fig, axes = plt.subplots(1, n, figsize=(2.6 * n, 2.0), squeeze=False)
    colour = _SPLIT_COLOURS["train"] if ex["rank"].startswith("top") else "#7a4fb0"
    for ax, (metric, label, t, v) in zip(axes[0], ex["series"], strict=True):
        ax.plot(t, v, color=colour, linewidth=0.7, alpha=0.6)
        value = ex["features"].get(metric)
        shown = f"{value:.3g}" if value is not None else "NaN"
        ax.set_title(f"{metric} = {shown} {units.get(metric, '')}".strip(), fontsize=8)
        ax.set_xlabel("seconds into the window", fontsize=7)
        ax.set_ylabel(label, fontsize=7)
        ax.tick_params(labelsize=6)
    fig.suptitle(
        f"{ex['rank']}: {ex['source_id']} steps {ex['start_idx']}-{ex['end_idx']}, "
        f"priority {ex['priority']:.3g}",
        fontsize=8,
        y=1.06,
    )
    return _svg(fig)


def _data_sections(ds: Any, config: Mapping[str, Any], units: Mapping[str, str]) -> list[str]:
    """The map of tracks and the example windows (read from shards and sources)."""
    from ..contracts.schema import SchemaSpec
    from .report_data import SourceReader, example_windows, position_field, shard_tracks

    parts: list[str] = []
    schema = SchemaSpec.from_dict(config["schema"])
    reader = SourceReader(config, schema)
    f = position_field(schema)
    mod = (
        next(
            (
                n
                for n, m in ds.manifest["modalities"].items()
                if m.get("source") == f"field:{f.name}"
            ),
            None,
        )
        if f is not None
        else None
    )
    if f is not None and mod is not None:
        tracks = shard_tracks(ds, mod)
        pool: list[Any] = []
        for sid in sorted(reader.uris):
            table = reader.table(sid)
            if table is not None and f.name in table.values:
                vals = table.values[f.name]
                pool.extend(vals[:, e] for e in range(vals.shape[1]))
        note = (
            ""
            if reader.error is None
            else f"<p>Pool tracks not drawn: {html.escape(reader.error)}</p>"
        )
        title = f"{f.name}: selected tracks over the pool ({len(pool)} pool tracks, faint)"
        parts.append(f"<h2>Tracks</h2>{note}<figure>{_map_plot(tracks, pool, f, title)}</figure>")
    examples = example_windows(config, schema, reader)
    if examples:
        figs = [f"<figure>{_window_plot(ex, units)}</figure>" for ex in examples if ex["series"]]
        rows = [
            [
                ex["rank"],
                ex["source_id"],
                f"{ex['start_idx']}-{ex['end_idx']}",
                f"{ex['priority']:.3g}",
                ", ".join(
                    f"{k}={v:.3g} {units.get(k, '')}".strip() for k, v in ex["features"].items()
                ),
            ]
            for ex in examples
        ]
        parts.append(
            "<h2>Example windows: top and bottom of the ranking</h2>"
            + _table(rows, ["rank", "source", "steps", "priority", "features"])
            + (
                f'<div class="grid windows">{"".join(figs)}</div>'
                if figs
                else f"<p>Windows not plotted: {html.escape(reader.error or 'no binned field')}</p>"
            )
        )
    return parts


def dataset_name(config: Mapping[str, Any], fallback: str) -> str:
    """The dataset's name: the job's ``name``, else the schema's, else ``fallback``'s last part."""
    job = config.get("job") or {}
    name = job.get("name") if isinstance(job, Mapping) else None
    name = name or (config.get("schema") or {}).get("name")
    return str(name or os.path.basename(os.path.normpath(fallback)))


def render_inspect_html(
    report: Any, manifest: Mapping[str, Any], config: Mapping[str, Any], dataset: Any = None
) -> str:
    """One HTML page summarizing a dataset: tables plus embedded SVG plots.

    Parameters
    ----------
    report : InspectReport
    manifest, config : mapping
        The dataset's ``dataset_manifest.json`` and ``config.json``.
    dataset : Dataset, optional
        The opened dataset: adds the map of selected tracks (its shards) over the
        pool (the run's sources, read again) and the example windows of the ranking.

    Returns
    -------
    str
        The page, titled with the dataset's name (the job's ``name``).
    """
    hz = float(manifest.get("sample_hz", 1.0))
    name = dataset_name(config, report.path)
    units: dict[str, str] = {}
    if config.get("schema") and config.get("strategy"):
        from ..contracts.schema import SchemaSpec
        from .report_data import feature_units

        units = feature_units(config, SchemaSpec.from_dict(config["schema"]))
    shards = list(manifest.get("shards", []))
    budget = {
        k: v for k, v in report.budget.items() if isinstance(v, Mapping) and "requested_s" in v
    }
    parts = [f"<h1>{html.escape(name)}</h1><p>a kuration dataset</p>"]
    rows = [
        [s, v["shards"], v["tracks"], len(v["sources"]), f"{v['seconds'] / 3600:.2f}"]
        for s, v in report.splits.items()
    ]
    parts.append(
        "<h2>Splits</h2>" + _table(rows, ["split", "shards", "tracks", "sources", "hours"])
    )
    brows = [
        [
            s,
            *(
                f"{b.get(k, 0) / 3600:.2f}"
                for k in ("requested_s", "candidate_s", "admitted_s", "emitted_s", "underfill_s")
            ),
        ]
        for s, b in budget.items()
    ]
    parts.append(
        "<h2>Hours budget</h2>"
        + _table(
            brows, ["split", "requested h", "pool h", "admitted h", "emitted h", "underfill h"]
        )
    )
    if budget:
        parts.append(
            '<div class="grid"><figure>'
            + _hours_plot(budget)
            + "</figure><figure>"
            + _source_hours_plot(shards, hz)
            + "</figure></div>"
        )
    if dataset is not None and shards:
        parts.extend(_data_sections(dataset, config, units))
    if shards:
        parts.append("<h2>Timeline</h2><figure>" + _timeline_plot(shards, hz) + "</figure>")
    dist = config.get("results", {}).get("distributions", {})
    parts.append("<h2>Feature distributions: pool vs selection</h2>")
    figs = _distribution_plots(dist, units) if dist else []
    parts.append(
        '<div class="grid">' + "".join(f"<figure>{f}</figure>" for f in figs) + "</div>"
        if figs
        else "<p>No feature distributions were recorded for this dataset.</p>"
    )
    mrows = [[n, m["dtype"], str(tuple(m["shape"]))] for n, m in report.modalities.items()]
    parts.append("<h2>Modalities</h2>" + _table(mrows, ["name", "dtype", "shape"]))
    parts.append(f"<p>padding: {html.escape(json.dumps(report.padding))}</p>")
    if report.errors:
        parts.append(
            "<h2>Skipped sources</h2>"
            + _table([[k, v] for k, v in report.errors.items()], ["source", "error"])
        )
    if report.verification:
        v = report.verification
        cls, word = ("ok", "valid") if v["valid"] else ("bad", "INVALID")
        parts.append(
            f'<h2>Verification</h2><p class="{cls}">{word}: {v["checked"]} shards checked</p>'
        )
    prov = {k: v for k, v in report.provenance.items() if k != "implementations"}
    parts.append(
        "<h2>Provenance</h2><pre>"
        + html.escape(json.dumps(prov, indent=2, sort_keys=True))
        + "</pre>"
    )
    return _page(name, "".join(parts))


def render_diff_html(diff: Mapping[str, Any]) -> str:
    """One HTML page for a structured dataset comparison."""
    parts = [
        f"<h1>kuration diff</h1><p><code>{html.escape(str(diff.get('left')))}</code> vs "
        f"<code>{html.escape(str(diff.get('right')))}</code></p>"
    ]
    verdict = "identical" if diff.get("identical") else "different"
    parts.append(f'<p class="{"ok" if diff.get("identical") else "bad"}">{verdict}</p>')
    for key in ("shards", "splits", "modalities"):
        sec = diff.get(key, {})
        parts.append(
            f"<h2>{key}</h2><pre>{html.escape(json.dumps(sec, indent=2, sort_keys=True))}</pre>"
        )
    rows = [
        [c["path"], json.dumps(c.get("left")), json.dumps(c.get("right"))]
        for c in diff.get("changes", [])
    ]
    parts.append(
        "<h2>Configuration changes</h2>"
        + (_table(rows, ["path", "left", "right"]) if rows else "<p>none</p>")
    )
    return _page("kuration diff", "".join(parts))


def _page(title: str, body: str) -> str:
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{_CSS}</style></head><body>{body}</body></html>\n"
    )


def write_html(path: str | os.PathLike[str], text: str) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)
