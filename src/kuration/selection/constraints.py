"""Tags, groups and the count-path post-passes: tag coverage floors and a group cap.

Strategy JSON
-------------
``tags`` derives categorical labels into ``Segment.tags``::

    "tags": {
      "turning": {"feature": "turn_p90", "bins": 3},                  # q0, q1, q2 (equal-frequency)
      "climb":   {"feature": "climb_std", "thresholds": [1200, 1600],
                  "labels": ["calm", "normal", "rough"]},
      "hour":    {"source": {"regex": "_(\\d)\\d\\d$"}},               # from the source id
      "site":    {"source": {"map": {"adsb_paris_000": "a"}, "default": "b"}}
    }

* ``bins``: equal-frequency bins of the feature, with the rules of
  :mod:`kuration.selection.binning`, fitted on the segments that pass the filters;
  labels default to ``q0 .. q{k-1}``.
* ``thresholds``: increasing cut points; a value on a threshold takes the
  upper label; labels default to ``f<t0``, ``t0<=f<t1``, ..., ``f>=tk``.
* ``source``: ``regex`` (:func:`re.search` on the source id; the label is the
  first capture group, or the whole match) or ``map`` (source id -> label).
  An unmatched source gets ``default``, or no label when there is none.
* A non-finite feature gives no label.  The label set of a feature tag is
  its declared labels; of a source tag, the labels seen in the pool.

``group`` sets ``Segment.group`` from the source id::

    "group": {"regex": "^(adsb_paris)_\\d+$"}        # first capture group, or the whole match
    "group": {"map": {"adsb_paris_000": "h0", ...}, "default": "rest"}

An unmatched source gets ``default``, or its own source id.

``tag_coverage`` puts a floor under every label of a tag::

    "tag_coverage": {"turning": 0.2, "climb": {"rough": 5, "calm": 0.1}}

A floor is an integer count or a fraction in (0, 1) of the requested ``n``;
fractions round up (``ceil(f * n)``), so a positive floor never rounds to 0.
A number alone applies to every label of the tag.

``group_cap`` limits each group to its fair share::

    "group_cap": {"max_overshoot": 1.0}

The cap is ``ceil(max_overshoot * n / G)`` with ``G`` the groups holding an
eligible segment.

Count-path selection (:func:`constrained_select`)
-------------------------------------------------
Only eligible segments (finite priority: they passed the filters and the
method did not exclude them) are ever selected; repair never reaches
outside that pool.  Tags are handled one at a time in name order: the
deficits below each label's floor are reserved with a maximum flow
(source -> label [deficit] -> group [eligible count] -> sink [room left
under the cap]), taking the highest-priority segments of each
(label, group) cell.  For a single tag this is exact: every floor is met
whenever some selection of at most ``n`` segments within the caps meets
them.  With several tags each later tag is reserved around the earlier
ones (best effort; unmet floors are reported).  The rest of ``n`` is then
filled by priority, skipping groups at their cap.  Group caps are hard: no
group ever exceeds its cap.  Every unmet floor and any shortfall below
``n`` is reported with its cause.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..contracts.segment import Segment
from ..errors import StrategyError
from .binning import quantile_bins

__all__ = [
    "Selection",
    "assign_groups",
    "assign_tags",
    "constrained_select",
    "resolve_floors",
    "source_group",
    "tag_label_sets",
    "validate_group",
    "validate_group_cap",
    "validate_tag_coverage",
    "validate_tags",
]


def _is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _validate_source_rule(rule: Any, where: str, *, default_ok: bool = True) -> dict[str, Any]:
    if not isinstance(rule, Mapping) or not (("regex" in rule) ^ ("map" in rule)):
        raise StrategyError(f"{where} needs exactly one of 'regex' or 'map'")
    extra = set(rule) - {"regex", "map", "default"}
    if extra:
        raise StrategyError(f"{where} takes regex or map, and default, not {sorted(extra)}")
    if "regex" in rule:
        if not isinstance(rule["regex"], str):
            raise StrategyError(f"{where} 'regex' must be a string")
        try:
            re.compile(rule["regex"])
        except re.error as exc:
            raise StrategyError(f"{where} regex {rule['regex']!r}: {exc}") from None
    else:
        m = rule["map"]
        if not isinstance(m, Mapping) or not all(isinstance(v, str) for v in m.values()):
            raise StrategyError(f"{where} 'map' must map source ids to strings")
    if "default" in rule and not isinstance(rule["default"], str):
        raise StrategyError(f"{where} 'default' must be a string")
    return dict(rule)


def source_label(rule: Mapping[str, Any], source_id: str) -> str | None:
    if "regex" in rule:
        m = re.search(rule["regex"], source_id)
        if m is not None:
            return m.group(1) if m.re.groups else m.group(0)
    elif source_id in rule["map"]:
        return str(rule["map"][source_id])
    return rule.get("default")


def validate_tags(tags: Any, features: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Validate the strategy's ``tags`` block (see the module docs).

    Raises
    ------
    StrategyError
        On any malformed tag rule.
    """
    if tags is None:
        return {}
    if not isinstance(tags, Mapping):
        raise StrategyError("strategy 'tags' maps tag names to rules")
    out: dict[str, dict[str, Any]] = {}
    for name, spec in tags.items():
        where = f"tag {name!r}"
        if not isinstance(spec, Mapping):
            raise StrategyError(f"{where} must be an object")
        if "source" in spec:
            if set(spec) != {"source"}:
                raise StrategyError(f"{where}: a source tag takes only 'source'")
            out[name] = {"source": _validate_source_rule(spec["source"], f"{where} source")}
            continue
        feat = spec.get("feature")
        if feat not in features:
            raise StrategyError(f"{where} needs 'feature' naming a feature ({', '.join(features)})")
        if ("bins" in spec) == ("thresholds" in spec):
            raise StrategyError(f"{where} needs exactly one of 'bins' or 'thresholds'")
        extra = set(spec) - {"feature", "bins", "thresholds", "labels"}
        if extra:
            raise StrategyError(f"{where} does not take {sorted(extra)}")
        if "bins" in spec:
            k = spec["bins"]
            if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= 1024:
                raise StrategyError(f"{where} 'bins' must be an integer in 1..1024")
            default = [f"q{i}" for i in range(k)]
        else:
            t = spec["thresholds"]
            if (
                not isinstance(t, list)
                or not t
                or not all(_is_num(v) for v in t)
                or any(b <= a for a, b in itertools.pairwise(t))
            ):
                raise StrategyError(f"{where} 'thresholds' must be increasing finite numbers")
            k = len(t) + 1
            mids = [f"{a}<={feat}<{b}" for a, b in itertools.pairwise(t)]
            default = [f"{feat}<{t[0]}", *mids, f"{feat}>={t[-1]}"]
        labels = spec.get("labels", default)
        if (
            not isinstance(labels, list)
            or len(labels) != k
            or not all(isinstance(x, str) and x for x in labels)
            or len(set(labels)) != k
        ):
            raise StrategyError(f"{where} 'labels' must be {k} distinct non-empty strings")
        out[name] = {**spec, "labels": list(labels)}
    return out


def validate_group(group: Any) -> dict[str, Any] | None:
    """Validate the strategy's ``group`` rule (see the module docs)."""
    if group is None:
        return None
    return _validate_source_rule(group, "strategy 'group'")


def validate_tag_coverage(cov: Any, tags: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Validate ``tag_coverage`` against the declared ``tags``.

    Raises
    ------
    StrategyError
        Unknown tag or label, a floor that is neither a count nor a fraction in (0, 1).
    """
    if cov is None:
        return {}
    if not isinstance(cov, Mapping):
        raise StrategyError("strategy 'tag_coverage' maps tag names to floors")
    out: dict[str, Any] = {}
    for tag, floor in cov.items():
        if tag not in tags:
            raise StrategyError(
                f"tag_coverage names {tag!r}, which is not a declared tag ({', '.join(tags)})"
            )
        declared = tags[tag].get("labels")
        if isinstance(floor, Mapping):
            for label, v in floor.items():
                if declared is not None and label not in declared:
                    raise StrategyError(
                        f"tag_coverage {tag!r}: {label!r} is not one of its labels {declared}"
                    )
                _check_floor(v, f"tag_coverage {tag!r} {label!r}")
            out[tag] = dict(floor)
        else:
            _check_floor(floor, f"tag_coverage {tag!r}")
            out[tag] = floor
    return out


def _check_floor(v: Any, where: str) -> None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise StrategyError(f"{where}: a floor is a count or a fraction, got {v!r}")
    if isinstance(v, int):
        if v < 0:
            raise StrategyError(f"{where}: a count floor must be >= 0")
    elif not 0.0 < v < 1.0:
        raise StrategyError(
            f"{where}: a fractional floor must lie in (0, 1) (use an integer for a count), got {v!r}"
        )


def validate_group_cap(cap: Any, group: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Validate ``group_cap`` (needs a ``group`` rule)."""
    if cap is None:
        return None
    if not isinstance(cap, Mapping) or set(cap) - {"max_overshoot"}:
        raise StrategyError("strategy 'group_cap' is {'max_overshoot': number >= 1}")
    x = cap.get("max_overshoot", 1.0)
    if not _is_num(x) or x < 1:
        raise StrategyError(f"group_cap 'max_overshoot' must be a number >= 1, got {x!r}")
    if group is None:
        raise StrategyError("group_cap needs a 'group' rule saying how segments are grouped")
    return {"max_overshoot": float(x)}


def source_group(rule: Mapping[str, Any], source_id: str) -> str:
    """The group of ``source_id`` under a validated ``group`` rule (its own id when unmatched
    and the rule has no default)."""
    g = source_label(rule, source_id)
    return source_id if g is None else g


def assign_groups(segments: Sequence[Segment], rule: Mapping[str, Any] | None) -> None:
    """Set ``seg.group`` from the source id (in place); no-op without a rule."""
    if rule is None:
        return
    memo: dict[str, str] = {}
    for s in segments:
        if s.source_id not in memo:
            memo[s.source_id] = source_group(rule, s.source_id)
        s.group = memo[s.source_id]


def assign_tags(
    segments: Sequence[Segment],
    tags: Mapping[str, Mapping[str, Any]],
    fit: np.ndarray | None = None,
) -> None:
    """Set ``seg.tags[name]`` for every declared tag (in place); unlabelled segments lose the key.

    ``fit`` (N,) bool marks the segments quantile tags are fitted on.
    """
    for name, spec in tags.items():
        if "source" in spec:
            labels: list[str | None] = [source_label(spec["source"], s.source_id) for s in segments]
        else:
            x = np.array([s.features[spec["feature"]] for s in segments], dtype=np.float64)
            if "bins" in spec:
                idx, _ = quantile_bins(x, int(spec["bins"]), fit=fit)
            else:
                idx = np.searchsorted(np.asarray(spec["thresholds"], dtype=np.float64), x, "right")
                idx = np.where(np.isfinite(x), idx, -1)
            labels = [spec["labels"][i] if i >= 0 else None for i in idx.tolist()]
        for s, lab in zip(segments, labels, strict=True):
            if lab is None:
                s.tags.pop(name, None)
            else:
                s.tags[name] = lab


def tag_label_sets(
    segments: Sequence[Segment], tags: Mapping[str, Mapping[str, Any]]
) -> dict[str, list[str]]:
    """Label set per tag: declared labels, or (source tags) the labels seen in ``segments``, sorted."""
    out: dict[str, list[str]] = {}
    for name, spec in tags.items():
        if "labels" in spec:
            out[name] = list(spec["labels"])
        else:
            out[name] = sorted({s.tags[name] for s in segments if name in s.tags})
    return out


def resolve_floors(
    coverage: Mapping[str, Any], label_sets: Mapping[str, Sequence[str]], n: int
) -> dict[str, dict[str, int]]:
    """Integer floors per tag and label for a request of ``n`` (fractions round up)."""
    out: dict[str, dict[str, int]] = {}
    for tag, spec in coverage.items():
        per = spec if isinstance(spec, Mapping) else dict.fromkeys(label_sets[tag], spec)
        out[tag] = {
            str(lab): (int(v) if isinstance(v, int) else math.ceil(float(v) * n))
            for lab, v in per.items()
        }
    return out


@dataclass
class Selection:
    """The outcome of :func:`constrained_select`.

    Attributes
    ----------
    rows : list of int
        Selected rows, by priority (descending; ties in row order).
    reasons : list of str, one per row
        Why each row was or was not selected.
    tag_report, group_report : dict
        Per tag and label: floor, eligible, selected, met (and why not);
        per group: eligible, selected, and the cap.
    shortfall : int
        ``n`` minus the rows selected.
    shortfall_reason : str or None
    """

    rows: list[int]
    reasons: list[str]
    tag_report: dict[str, Any] = field(default_factory=dict)
    group_report: dict[str, Any] | None = None
    shortfall: int = 0
    shortfall_reason: str | None = None


def max_flow_alloc(
    deficit: np.ndarray, cells: np.ndarray, room: np.ndarray, budget: int
) -> np.ndarray:
    """Allocation (L, G) maximising reserved picks: label l <= deficit[l], cell (l, g) <=
    cells[l, g], group g <= room[g], total <= budget (a maximum flow)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_flow

    n_l, n_g = cells.shape
    src0, src, lab0, grp0 = 0, 1, 2, 2 + n_l
    sink = grp0 + n_g
    rows, cols, caps = [src0], [src], [budget]
    for lab in range(n_l):
        if deficit[lab] > 0:
            rows.append(src)
            cols.append(lab0 + lab)
            caps.append(int(deficit[lab]))
            for g in np.flatnonzero(cells[lab] > 0).tolist():
                rows.append(lab0 + lab)
                cols.append(grp0 + g)
                caps.append(int(cells[lab, g]))
    for g in range(n_g):
        if room[g] > 0:
            rows.append(grp0 + g)
            cols.append(sink)
            caps.append(int(room[g]))
    size = sink + 1
    graph = csr_matrix(
        (np.asarray(caps, dtype=np.int32), (np.asarray(rows), np.asarray(cols))),
        shape=(size, size),
    )
    flow = maximum_flow(graph, src0, sink).flow.toarray()
    return np.maximum(flow[lab0 : lab0 + n_l, grp0 : grp0 + n_g], 0).astype(np.int64)


@dataclass
class _Pick:
    """The state the count path's passes share: ranks, group ids, what is selected and why."""

    eligible: np.ndarray
    order: np.ndarray
    rank: np.ndarray
    gid: np.ndarray
    cap: int
    use_cap: bool
    g_names: list[str]
    selected: np.ndarray = field(init=False)
    gcount: np.ndarray = field(init=False)
    why: dict[int, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.selected = np.zeros(self.eligible.size, dtype=bool)
        self.gcount = np.zeros(max(len(self.g_names), 1) if self.use_cap else 1, dtype=np.int64)


def _start(
    prio: np.ndarray,
    n: int,
    groups: Sequence[str | None] | None,
    max_overshoot: float | None,
    tie: np.ndarray | None = None,
) -> _Pick:
    """Priority ranks (ties by ``tie``, then row order) and, with a cap, group ids and
    the cap."""
    size = prio.size
    eligible = np.isfinite(prio)
    rows = np.arange(size)
    keys = (rows,) if tie is None else (rows, np.asarray(tie, np.int64))
    order = np.lexsort((*keys, -np.where(eligible, prio, 0.0)))
    order = order[eligible[order]]
    rank = np.full(size, -1, dtype=np.int64)
    rank[order] = np.arange(order.size)
    g_names = sorted(
        {g for g, e in zip(groups or [], eligible, strict=False) if e and g is not None}
    )
    if max_overshoot is None:
        return _Pick(eligible, order, rank, np.zeros(size, dtype=np.int64), n, False, g_names)
    if groups is None:
        raise StrategyError("a group cap needs segment groups")
    g_index = {g: i for i, g in enumerate(g_names)}
    gid = np.array([g_index.get(g, -1) if g is not None else -1 for g in groups], dtype=np.int64)
    cap = math.ceil(float(max_overshoot) * n / len(g_names)) if g_names else 0
    return _Pick(eligible, order, rank, gid, cap, True, g_names)


def _reserve_floor(
    st: _Pick,
    n: int,
    tag: str,
    labels: list[str],
    col: np.ndarray,
    fl: np.ndarray,
) -> None:
    """Select the highest-ranked rows that meet ``tag``'s floors, spread over groups by max flow."""
    have = np.bincount(col[st.selected & (col >= 0)], minlength=len(labels))
    deficit = np.maximum(fl - have, 0)
    budget = n - int(st.selected.sum())
    cand = st.eligible & ~st.selected & (col >= 0) & (st.gid >= 0)
    if deficit.sum() <= 0 or budget <= 0 or not cand.any():
        return
    cells = np.zeros((len(labels), st.gcount.size), dtype=np.int64)
    np.add.at(cells, (col[cand], st.gid[cand]), 1)
    room = np.maximum(st.cap - st.gcount, 0)
    alloc = max_flow_alloc(deficit, cells, room, budget)
    for lab_i, g in zip(*np.nonzero(alloc), strict=True):
        rows = np.flatnonzero(cand & (col == lab_i) & (st.gid == g))
        rows = rows[np.argsort(st.rank[rows])][: alloc[lab_i, g]]
        st.selected[rows] = True
        st.gcount[g] += rows.size
        for r in rows:
            st.why[int(r)] = f"selected: tag floor {tag}={labels[lab_i]}"


def _reserve_floors(
    st: _Pick,
    n: int,
    tags: Mapping[str, Sequence[str | None]] | None,
    label_sets: Mapping[str, Sequence[str]] | None,
    floors: Mapping[str, Mapping[str, int]],
) -> dict[str, Any]:
    """Reserve every tag's floors in tag order; the per-tag report still to be finished."""
    tag_report: dict[str, Any] = {}
    for tag in sorted(floors):
        labels = list((label_sets or {}).get(tag, ()))
        labels += [lab for lab in floors[tag] if lab not in labels]
        li = {lab: i for i, lab in enumerate(labels)}
        col = np.array(
            [li.get(v, -1) if v is not None else -1 for v in (tags or {})[tag]], dtype=np.int64
        )
        fl = np.array([floors[tag].get(lab, 0) for lab in labels], dtype=np.int64)
        _reserve_floor(st, n, tag, labels, col, fl)
        elig = np.bincount(col[st.eligible & (col >= 0)], minlength=len(labels))
        tag_report[tag] = {
            "_col": col,
            "_total": int(fl.sum()),
            "labels": {
                lab: {"floor": int(fl[i]), "eligible": int(elig[i])}
                for i, lab in enumerate(labels)
                if lab in floors[tag]
            },
            "_index": li,
        }
    return tag_report


def _fill_by_priority(st: _Pick, n: int, groups: Sequence[str | None] | None) -> None:
    """Take rows in rank order until ``n`` are selected, skipping groups at their cap."""
    taken = int(st.selected.sum())
    for i in st.order:
        if taken >= n:
            break
        if st.selected[i]:
            continue
        g = st.gid[i]
        if st.use_cap and (g < 0 or st.gcount[g] >= st.cap):
            group = groups[i] if groups else None
            st.why[int(i)] = f"rejected: group {group!r} at its cap of {st.cap}"
            continue
        st.selected[i] = True
        taken += 1
        st.gcount[g] += 1
        st.why[int(i)] = f"selected: priority rank {int(st.rank[i]) + 1}"


def _reasons(st: _Pick, n: int, excluded: Sequence[str | None] | None) -> list[str]:
    """One line per row: why it was selected or rejected."""
    out: list[str] = []
    for i in range(st.eligible.size):
        if i in st.why:
            out.append(st.why[i])
        elif not st.eligible[i]:
            ex = excluded[i] if excluded is not None else None
            out.append(f"rejected: {ex}" if ex else "rejected: priority is -inf")
        else:
            out.append(f"rejected: below the cut (priority rank {int(st.rank[i]) + 1} > n = {n})")
    return out


def _finish_tag_report(st: _Pick, n: int, tag_report: dict[str, Any]) -> None:
    """Fill each label's selected count, whether its floor is met and, if not, why."""
    for tag, rep in tag_report.items():
        col, li = rep.pop("_col"), rep.pop("_index")
        total = rep.pop("_total")
        got = np.bincount(col[st.selected & (col >= 0)], minlength=len(li))
        for lab, entry in rep["labels"].items():
            entry["selected"] = int(got[li[lab]])
            entry["met"] = entry["selected"] >= entry["floor"]
            if entry["met"]:
                continue
            if entry["eligible"] < entry["floor"]:
                entry["why"] = f"only {entry['eligible']} eligible segments carry this label"
            elif total > n:
                entry["why"] = f"the floors of {tag!r} add up to {total} > n = {n}"
            elif st.use_cap:
                entry["why"] = "group caps leave no room for it"
            else:
                entry["why"] = "reservations for earlier tags used the room"
        rep["met"] = all(e["met"] for e in rep["labels"].values())


def _group_report(st: _Pick, max_overshoot: float | None) -> dict[str, Any] | None:
    if not st.use_cap:
        return None
    ge = np.bincount(st.gid[st.eligible & (st.gid >= 0)], minlength=st.gcount.size)
    return {
        "max_overshoot": float(max_overshoot or 1.0),
        "groups": len(st.g_names),
        "cap": int(st.cap),
        "per_group": {
            g: {
                "eligible": int(ge[i]),
                "selected": int(st.gcount[i]),
                "at_cap": bool(st.gcount[i] >= st.cap),
            }
            for i, g in enumerate(st.g_names)
        },
    }


def constrained_select(
    priorities: np.ndarray,
    n: int,
    *,
    tags: Mapping[str, Sequence[str | None]] | None = None,
    label_sets: Mapping[str, Sequence[str]] | None = None,
    floors: Mapping[str, Mapping[str, int]] | None = None,
    groups: Sequence[str | None] | None = None,
    max_overshoot: float | None = None,
    excluded: Sequence[str | None] | None = None,
    tie: np.ndarray | None = None,
) -> Selection:
    """Select at most ``n`` rows by priority under tag floors and a group cap.

    Tag floors are reserved first (tag by tag, in name order, spread over
    groups by a max-flow allocation), then the remaining rows are taken in
    priority order, ties by ``tie`` (when given) then row order, skipping groups
    at their cap.

    Parameters
    ----------
    priorities : ndarray, shape (N,), float64
        Rows in canonical order; non-finite rows are never selected.
    n : int
        Requested count.
    tags : mapping of tag to N labels (None: no label)
    label_sets : mapping of tag to its label set
    floors : mapping of tag to {label: floor}
    groups : sequence of N group labels, needed with ``max_overshoot``
    max_overshoot : float, optional
        Enables the group cap ``ceil(max_overshoot * n / G)``.
    excluded : sequence of N reasons, optional
        Why a non-finite row was excluded (used in ``reasons``).
    tie : ndarray, shape (N,), int64, optional
        Orders rows of equal priority, lowest first (``tie_break: "seed"``: a seeded
        draw per row); None keeps row order.

    Returns
    -------
    Selection

    Raises
    ------
    StrategyError
        A group cap without ``groups``.
    """
    prio = np.asarray(priorities, dtype=np.float64)
    n = max(int(n), 0)
    st = _start(prio, n, groups, max_overshoot, tie)
    tag_report = _reserve_floors(st, n, tags, label_sets, floors or {})
    _fill_by_priority(st, n, groups)
    reasons = _reasons(st, n, excluded)
    picked = np.flatnonzero(st.selected)
    picked = picked[np.argsort(st.rank[picked])]
    _finish_tag_report(st, n, tag_report)
    shortfall = n - int(picked.size)
    reason = None
    if shortfall > 0:
        n_elig = int(st.eligible.sum())
        if n_elig < n:
            reason = f"only {n_elig} eligible segments (filters and non-finite exclusions)"
        else:
            reason = f"group caps ({st.cap} per group over {len(st.g_names)} groups) leave no room"
    return Selection(
        rows=[int(r) for r in picked],
        reasons=reasons,
        tag_report=tag_report,
        group_report=_group_report(st, max_overshoot),
        shortfall=shortfall,
        shortfall_reason=reason,
    )
