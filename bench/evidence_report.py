"""The evidence benchmark's report: numbers as JSON, tables as markdown (docs/evidence.md)."""

from __future__ import annotations

from typing import Any

import evidence_ceiling_report as ecr
import evidence_guided as eg
import evidence_stats as es
import numpy as np

TESTS = ("all", "tail", "unseen")


def to_json(results: list[Any]) -> dict[str, Any]:
    """Every measured number (what a rerun must reproduce exactly) and the test outcomes."""
    numbers: dict[str, Any] = {}
    for r in results:
        numbers[f"{r.domain}/{r.split}"] = {
            "baselines": r.baselines,
            "errors": {
                a: {f"{b:g}": {str(s): v for s, v in cell.items()} for b, cell in per.items()}
                for a, per in r.errors.items()
            },
            "usable_h": {a: {f"{b:g}": v for b, v in per.items()} for a, per in r.usable_h.items()},
            "tail_share": {
                a: {f"{b:g}": v for b, v in per.items()} for a, per in r.tail_share.items()
            },
            "n_test": r.n_test,
            "pool_usable_h": r.pool_usable_h,
            "faults": {
                a: {f"{b:g}": {str(s): v for s, v in cell.items()} for b, cell in per.items()}
                for a, per in r.faults.items()
            },
            "filter_pass": r.filter_pass,
            "bound": {a: {f"{b:g}": v for b, v in per.items()} for a, per in r.bound.items()},
            "oracle": {a: {f"{b:g}": v for b, v in per.items()} for a, per in r.oracle.items()},
            "oracle_lambda": {
                a: {f"{b:g}": list(v) for b, v in per.items()} for a, per in r.oracle_lambda.items()
            },
            "oracle_usable_h": {
                a: {f"{b:g}": v for b, v in per.items()} for a, per in r.oracle_usable_h.items()
            },
            "ceiling": {
                part: {f"{b:g}": rec for b, rec in zip(r.budgets, per, strict=True)}
                for part, per in r.ceiling.items()
            },
            # the test split only (a validation split has no cross-fit)
            "ceiling_sets": {
                f"{b:g}": rec for b, rec in zip(r.budgets, r.ceiling_sets, strict=True)
            }
            if r.ceiling_sets
            else {},
            "sdk_random": {f"{b:g}": v for b, v in r.sdk_random.items()},
            "sdk_random_spans": r.sdk_random_spans,
        }
    return {"numbers": numbers, "tests": [tests(r) for r in results]}


def tests(r: Any) -> list[dict[str, Any]]:
    """Every strategy-vs-random comparison of one domain, Holm-adjusted over all of them."""
    rows: list[dict[str, Any]] = []
    for arm, per in r.errors.items():
        if arm == "random":
            continue
        for b, cell in per.items():
            for model in es.MODELS:
                for t in TESTS:
                    k = f"{model}/{t}"
                    rand = [v[k] for v in r.errors["random"][b].values()]
                    mine = [v[k] for v in cell.values()]
                    p = es.compare(mine, rand, r.deterministic.get(arm, False))
                    rows.append(
                        {
                            "arm": arm,
                            "budget": b,
                            "model": model,
                            "test": t,
                            "mean": float(np.mean(mine)),
                            "random": float(np.mean(rand)),
                            "diff": float(np.mean(mine) / np.mean(rand) - 1.0),
                            "p": p,
                        }
                    )
    adj = es.holm([x["p"] for x in rows]) if rows else []
    for x, a in zip(rows, adj, strict=True):
        x["p_holm"] = float(a)
    return rows


def _cell(x: dict[str, Any]) -> str:
    star = "*" if x["p_holm"] < 0.05 else ""
    return f"{100 * x['diff']:+.0f}%{star}"


INTRO = """\
Does a strategy's best N hours train better models than N random hours?  Two real
recordings, split by time; small standard models trained on equal *usable* hours chosen
by each arm out of one scored pool; errors on held-out time.

**Tasks.**  ADS-B (the `traffic==2.13` sample, 12 sources of 15 minutes): each
aircraft's horizontal position 30 s ahead from its last 60 s (positions every 5 s in a
local metric frame turned along the last velocity); pool: the first 2 h, 15 minutes left
out, test: the last 45 minutes.  Football (SkillCorner broadcast tracking from
`kloppy==3.19.1`, 10 Hz): each player's position 1.5 s ahead from the last 4 s; pool: the
first half, test: the second half.  Test sets: every test window (*all*), the manoeuvre
*tail* (top decile of any of the domain's kuration metrics over the window's own entity --
ADS-B `turn_p90`, `climb_std`; football `accel_p90`, `turn_p90` -- fixed on the test
windows before any selection) and entities the pool never saw (*unseen*).

**Equal usable hours.**  One usable second is one valid model-window end (every sampled
point present, finite, and airborne for aircraft) whose window lies inside an admitted
span; every arm admits spans in its own order until that count reaches the budget.
Sizes are at most a quarter of the pool's usable hours.

**Models.**  Ridge and a small MLP (32 hidden units), scikit-learn, fixed seeds,
single-threaded BLAS, fitted to the residual of constant-velocity extrapolation (the
no-training baseline).  Error: mean absolute horizontal error, metres.

**Arms.**  `random`: candidate spans (the job's `span_seconds`) in a seeded uniform
order, 10 seeds.  `shipped:*`: the example's default strategy run as its job runs it
(window scope, `filter_scope`, `clip_aggregate`); `before:*`: the default before issue 29
(scene windows, group cap).  `scene:*`: other example strategies through kuration's
hours path with scene windows.  `sdk-track:*`: the same path with track-scoped windows
(`segmenter.scope: "track"`); `+veto` adds `filter_scope: "span"` (a span overlapping a
window that fails a filter is out).  `track:*`: each span scored by the strategy's
metrics over its own entity only, ranked by the strategy's method.  `*quality*`: quality
predicates (ADS-B: speed never at the schema's 400 m/s clamp, no heading reversal;
football: no speed over 12 m/s, no position frozen for more than two ticks) with random
fill, uniform bins, or (ADS-B) importance resampling toward turning windows.
`track:spread-random`: random spans, one of every track before a second of any.
`sdk:random`: kuration's `random` method.  `track:quality+tail-mix-x`: a share x of the
budget to quality-passing spans ranked by their own track's manoeuvre metric (ADS-B
`turn_p90`, football `accel_p90`), the rest quality-random.  `guided:*`: spans chosen by
their effect on ridge's error on the pool's own latest stretch, held out (own section; a
harness arm, not a strategy).  Stochastic strategies run 5 seeds; one whose
selection is the same for every seed is one value.  The ORACLEs (own section) are not
strategies: they look at the test set.  The constrained one answers the issue's escape
clause: can any span set of a size beat random's tail by 10% without raising the error on
all windows?  In sample it is scored on the windows it was chosen with, so it is also
chosen on one part of the test set and scored on another: random halvings of the test
entities, both ways (other entities, the same minutes); earlier against later time (the
same entities); and both at once, one half's earlier windows against the other half's
later ones (neither shared), beside all of the pool reweighted toward the tail.

**Tests.**  Per cell, difference from the random arm's mean; `*` marks a Holm-adjusted
p < 0.05: Welch's t-test over seeds, or a one-sample t-test of random's seeds against
the single value of a seed-independent strategy; Holm over every comparison of the
domain and split (both models, three test sets, every size and arm).

**How strategies were chosen.**  On validation splits carved from each pool by time
(ADS-B: the pool's first 90 minutes, 15 minutes out, its last 15 minutes; football: the
first half's first 60%, 10% out, its last 30%), tabled at the end; the test tables are
the report.
"""


def render(results: list[Any], checks: list[Any], *, quick: bool) -> str:
    out = [
        "# Evidence: curated hours against random hours",
        "",
        "<!-- generated by bench/evidence.py; do not edit by hand -->",
        "",
        "Written by `python bench/evidence.py --write docs/evidence.md`"
        + (" (quick mode)" if quick else "")
        + " in "
        + f"{sum(r.seconds for r in results + checks) / 60:.0f} minutes.",
        "",
        INTRO,
    ]
    if results:
        out += verdict(results)
    if checks:
        out += choice(checks)
    out += eg.report(results, checks, tests)
    for r in results + checks:
        out += _domain(r)
    return "\n".join(out) + "\n"


# the candidates each domain's default was chosen from (issue 29): quality predicates with
# coverage or random fill, and tail-seeking, on track-scoped windows; the shipped and the
# pre-issue default always compete too.  Football's validation pool is carved from one
# source by time, which kuration's hours path cannot score, so its candidates are the
# harness's span-scoped equivalents: a span out when its own data fail a predicate, as
# filter_scope "span" does (track:quality+uniform-bins for
# sdk-track:quality+uniform-bins+veto, track:quality-random for
# sdk-track:quality-random+veto, track:uniform-bins for sdk-track:uniform-bins).
CANDIDATES = {
    "adsb": (
        "sdk-track:quality+uniform-bins",
        "sdk-track:quality+uniform-bins+veto",
        "sdk-track:quality-random",
        "sdk-track:quality-random+veto",
        "sdk-track:quality+importance+veto",
    ),
    "football": ("track:quality+uniform-bins", "track:quality-random", "track:uniform-bins"),
}


def choice_scores(r: Any) -> list[dict[str, Any]]:
    """Each candidate's validation score, by the rule the defaults were chosen with.

    Eligible: never significantly worse than random on all windows (the issue's bar: no
    size and model where its mean error is above random's with Holm p < 0.05).  Score: the
    mean over sizes and models of its tail error's difference from random.  The lowest
    eligible score wins.
    """
    rows = tests(r)
    names = [a for a in r.errors if a.startswith(("shipped:", "before:"))]
    names += [a for a in CANDIDATES.get(r.domain, ()) if a in r.errors]
    out = []
    for a in names:
        mine = [x for x in rows if x["arm"] == a]
        tail = [x["diff"] for x in mine if x["test"] == "tail"]
        worse = any(x["test"] == "all" and x["diff"] > 0 and x["p_holm"] < 0.05 for x in mine)
        out.append({"arm": a, "score": float(np.mean(tail)), "eligible": not worse})
    return out


def choice(checks: list[Any]) -> list[str]:
    """How the shipped defaults were chosen: the validation rule, computed."""
    out = [
        "## How the defaults were chosen (validation splits only)",
        "",
        "Rule: among each domain's candidates, those never significantly worse than random "
        "on all windows (Holm p < 0.05 at any size, either model) are eligible; the one with "
        "the lowest mean tail difference from random over sizes and models wins.  Football's candidates are the harness's span-scoped equivalents of "
        "the SDK arms (its validation pool is carved from one source by time, which the hours "
        "path cannot score): `track:quality+uniform-bins` stands for quality predicates with "
        '`filter_scope: "span"` and uniform bins on track-scoped windows.',
        "",
        "| domain | candidate | mean tail difference | eligible |",
        "|---|---|---|---|",
    ]
    for r in checks:
        rows = choice_scores(r)
        ok = [x for x in rows if x["eligible"]]
        best = min(ok, key=lambda x: x["score"])["arm"] if ok else None
        for x in rows:
            mark = " **(chosen)**" if x["arm"] == best else ""
            out.append(
                f"| {r.domain} | {x['arm']}{mark} | {100 * x['score']:+.1f}% | "
                f"{'yes' if x['eligible'] else 'no'} |"
            )
    return [*out, ""]


def verdict(results: list[Any]) -> list[str]:
    """The issue's bar, computed: the shipped default vs random, and the best arm per size."""
    out = ["## Verdict", ""]
    for r in results:
        rows = tests(r)
        shipped = next(a for a in r.errors if a.startswith("shipped"))
        for model in es.MODELS:
            mine = [x for x in rows if x["arm"] == shipped and x["model"] == model]
            wins = [
                x["budget"]
                for x in mine
                if x["test"] == "tail" and x["diff"] <= -0.10 and x["p_holm"] < 0.05
            ]
            worse = [
                x["budget"]
                for x in mine
                if x["test"] == "all" and x["diff"] > 0 and x["p_holm"] < 0.05
            ]
            best = []
            for b in r.budgets:
                cand = [
                    x
                    for x in rows
                    if x["budget"] == b and x["model"] == model and x["test"] == "tail"
                ]
                x = min(cand, key=lambda x: x["diff"])
                best.append(
                    f"{b:g} h {x['arm']} {100 * x['diff']:+.0f}%{'*' if x['p_holm'] < 0.05 else ''}"
                )
            out.append(
                f"- {r.domain}, {model}: the shipped default ({shipped}) is >= 10% below random on "
                f"the tail with Holm p < 0.05 at {len(wins)} of {len(r.budgets)} sizes"
                f"{' (' + ', '.join(f'{b:g} h' for b in wins) + ')' if wins else ''}; significantly "
                f"worse on all windows at {len(worse)}.  Best arm on the tail per size: "
                + "; ".join(best)
                + "."
            )
        if r.bound:
            shares = [k for k in r.bound if k.startswith("share")]
            for model in es.MODELS:
                cells = []
                for b in r.budgets:
                    rand = np.mean([v[f"{model}/tail"] for v in r.errors["random"][b].values()])
                    best = min(r.bound[k][b][f"{model}/tail"] for k in [*shares, "window random"])
                    cells.append(f"{b:g} h {100 * (best / rand - 1):+.0f}%")
                out.append(
                    f"- {r.domain}, {model}, what choosing by manoeuvre content could reach on "
                    "the tail (the best oracle mix of manoeuvres, or windows drawn one by one, "
                    "vs random spans; not a bound on quality filtering): " + "; ".join(cells) + "."
                )
        if r.oracle:
            for model in es.MODELS:
                out += _oracle_verdict(r, model)
        out += ecr.verdict(r)
        if r.faults:
            gaps = []
            for model in es.MODELS:
                for b in r.budgets:
                    clean = np.mean([v[f"{model}/all"] for v in r.errors["random"][b].values()])
                    filt = np.mean(
                        [v[f"{model}/all"] for v in r.faults["filtered random"][b].values()]
                    )
                    bad = np.mean(
                        [v[f"{model}/all"] for v in r.faults["faulty random"][b].values()]
                    )
                    gaps.append((filt / clean - 1, bad / clean - 1))
            lo, hi = min(g[0] for g in gaps), max(g[0] for g in gaps)
            out.append(
                f"- {r.domain}, faults: random spans among those passing the quality filters, out "
                f"of the faulty pool, are {100 * lo:+.1f}% to {100 * hi:+.1f}% from random spans "
                f"of clean data on all windows over every size and model (the bar: at most "
                f"+5%); random spans of the faulty pool: {100 * min(g[1] for g in gaps):+.0f}% "
                f"to {100 * max(g[1] for g in gaps):+.0f}%."
            )
    return [*out, ""]


def _domain(r: Any) -> list[str]:
    out: list[str] = []
    rows = tests(r)
    arms = [a for a in r.errors if a != "random"]
    unit = "m"
    out += [
        f"## {r.domain}, {r.split}",
        "",
        f"Pool: {r.pool_usable_h:.1f} usable hours; test windows: "
        + ", ".join(f"{k} {v}" for k, v in r.n_test.items())
        + f"; run time {r.seconds:.0f} s.",
        "",
    ]
    for name, base in r.baselines.items():
        out.append(
            f"- {name}: "
            + "; ".join(
                f"{m} " + " / ".join(f"{base[f'{m}/{t}']:.2f}" for t in TESTS) for m in es.MODELS
            )
            + f" {unit}"
        )
    out.append("")
    dets = [a for a in arms if r.deterministic.get(a)]
    if dets:
        out += [f"Same selection for every seed (one value): {', '.join(dets)}.", ""]
    for model in es.MODELS:
        out += [f"### {r.domain}, {r.split}: {model}", ""]
        head = ["hours", "random (sd)", *arms]
        out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for b in r.budgets:
            rand = r.errors["random"][b]
            cells = []
            for t in TESTS:
                m, sd, _ = es.spread([v[f"{model}/{t}"] for v in rand.values()])
                cells.append(f"{m:.2f} ({sd:.2f})")
            line = [f"{b:g}", " / ".join(cells)]
            for a in arms:
                got = {
                    x["test"]: x
                    for x in rows
                    if x["arm"] == a and x["budget"] == b and x["model"] == model
                }
                line.append(" / ".join(_cell(got[t]) for t in TESTS))
            out.append("| " + " | ".join(line) + " |")
        out.append("")
    out += _shares(r)
    out += _bound(r)
    out += _oracle(r)
    out += ecr.section(r)
    out += _faults(r)
    return out


def _shares(r: Any) -> list[str]:
    """Share of each arm's training windows that manoeuvre as the test tail does."""
    out = [
        f"### {r.domain}, {r.split}: manoeuvres in the training sets",
        "",
        "Share of training windows past the test tail's thresholds (mean over seeds).",
        "",
        "| arm | " + " | ".join(f"{b:g} h" for b in r.budgets) + " |",
        "|---|" + "---|" * len(r.budgets),
    ]
    for arm, per in r.tail_share.items():
        out.append(
            f"| {arm} | " + " | ".join(f"{100 * np.mean(per[b]):.0f}%" for b in r.budgets) + " |"
        )
    return [*out, ""]


def _bound(r: Any) -> list[str]:
    """The best any mix of manoeuvres reaches, beside the random arm (see evidence._bound)."""
    if not r.bound:
        return []
    out = [
        f"### {r.domain}, {r.split}: what selection could reach",
        "",
        "Windows drawn one by one at each size (no span constraint, 3 seeds): uniformly, "
        "and with a fixed share of windows past the test tail's thresholds (an oracle mix "
        "that knows the test tail).  Difference from the random arm's mean (all / tail); "
        "the best share is the one with the lowest tail error.  The draws take windows of "
        "every quality, so this bounds what manoeuvre content buys, not what removing "
        "faulty data buys.",
        "",
        "| model | hours | random spans | windows, uniform | best oracle share on the tail |",
        "|---|---|---|---|---|",
    ]
    shares = [k for k in r.bound if k.startswith("share")]
    for model in es.MODELS:
        for b in r.budgets:
            rand = {
                t: np.mean([v[f"{model}/{t}"] for v in r.errors["random"][b].values()])
                for t in TESTS
            }

            def d(
                x: dict[str, float], t: str, rand: dict[str, float] = rand, model: str = model
            ) -> str:
                return f"{100 * (x[f'{model}/{t}'] / rand[t] - 1):+.0f}%"

            uni = r.bound["window random"][b]
            best = min(shares, key=lambda k: r.bound[k][b][f"{model}/tail"])
            bx = r.bound[best][b]
            out.append(
                f"| {model} | {b:g} | {rand['all']:.2f} / {rand['tail']:.2f} | "
                f"{d(uni, 'all')} / {d(uni, 'tail')} | {best}: {d(bx, 'all')} / {d(bx, 'tail')} |"
            )
    return [*out, ""]


def oracle_diffs(r: Any, model: str, b: float) -> dict[str, float]:
    """The ORACLEs' differences from the random arm's mean at size ``b``.

    ``all``, ``tail``: the in-sample path (chosen on the whole test tail).  ``cross``: the
    cross-fitted path, the mean of each half's choice scored on the other half's tail,
    against the random arm's mean of the same two halves.  ``c_all``, ``c_tail``,
    ``c_cross_all``, ``c_cross``: the same for the constrained ORACLE.
    """
    rand = r.errors["random"][b].values()

    def mean_rand(t: str) -> float:
        return float(np.mean([v[f"{model}/{t}"] for v in rand]))

    def crossed(prefix: str, t: str) -> float:
        a, bb = r.oracle[f"{prefix}cross A"][b], r.oracle[f"{prefix}cross B"][b]
        got = 0.5 * (a[f"{model}/{t}B"] + bb[f"{model}/{t}A"])
        return got / (0.5 * (mean_rand(f"{t}A") + mean_rand(f"{t}B"))) - 1

    ins, con = r.oracle["in-sample"][b], r.oracle["constrained in-sample"][b]
    return {
        "all": ins[f"{model}/all"] / mean_rand("all") - 1,
        "tail": ins[f"{model}/tail"] / mean_rand("tail") - 1,
        "cross": crossed("", "tail"),
        "c_all": con[f"{model}/all"] / mean_rand("all") - 1,
        "c_tail": con[f"{model}/tail"] / mean_rand("tail") - 1,
        "c_cross_all": crossed("constrained ", "all"),
        "c_cross": crossed("constrained ", "tail"),
    }


def reaches_bar(d: dict[str, float], prefix: str = "c_") -> tuple[bool, bool]:
    """(in sample, cross-fitted): tail at least 10% below random, all windows not above."""
    return (
        d[f"{prefix}tail"] <= -0.10 and d[f"{prefix}all"] <= 0.0,
        d[f"{prefix}cross"] <= -0.10 and d[f"{prefix}cross_all"] <= 0.0,
    )


def _oracle_verdict(r: Any, model: str) -> list[str]:
    """The ORACLE lines of the verdict, and which reading of the issue's escape clause holds."""
    ds = {b: oracle_diffs(r, model, b) for b in r.budgets}
    n_in = sum(d["tail"] <= -0.10 for d in ds.values())
    n_cross = sum(d["cross"] <= -0.10 for d in ds.values())
    bar = {b: reaches_bar(d) for b, d in ds.items()}
    c_in = [b for b, v in bar.items() if v[0]]
    c_cross = [b for b, v in bar.items() if v[1]]
    n = len(ds)

    def sizes(bs: list[float]) -> str:
        return f" ({', '.join(f'{b:g} h' for b in bs)})" if bs else ""

    head = f"- {r.domain}, {model}"
    out = [
        f"{head}, the ORACLE ceiling (greedy spans chosen by their effect on ridge's test-tail "
        "error; it looks at the test set): tail "
        + "; ".join(f"{b:g} h {_pct(d['tail'])}" for b, d in ds.items())
        + f" in sample ({n_in} of {n} sizes at -10% or better); cross-fitted over halves of "
        "the test entities "
        + "; ".join(f"{b:g} h {_pct(d['cross'])}" for b, d in ds.items())
        + f" ({n_cross} of {n}).",
        f"{head}, the constrained ORACLE (as above, its ridge error on all windows held at or "
        "below random's): tail / all "
        + "; ".join(f"{b:g} h {_pct1(d['c_tail'])} / {_pct1(d['c_all'])}" for b, d in ds.items())
        + f" in sample, the bar (tail -10% or better, all not worse) at {len(c_in)} of {n} "
        f"sizes{sizes(c_in)}; cross-fitted "
        + "; ".join(
            f"{b:g} h {_pct1(d['c_cross'])} / {_pct1(d['c_cross_all'])}" for b, d in ds.items()
        )
        + f", the bar at {len(c_cross)} of {n}{sizes(c_cross)}.",
    ]
    if model != "ridge":  # the search optimised ridge's errors: no ceiling for this model
        out.append(
            f"{head}, escape clause: the ORACLEs search for ridge, so for the {model} their "
            f"{len(c_in)} of {n} sizes in sample ({len(c_cross)} cross-fitted) are what ridge's "
            f"best spans give it, not a ceiling of what spans chosen for the {model} could do."
        )
    elif r.ceiling:  # the repeated cross-fit's escape-clause line (evidence_ceiling_report)
        pass
    elif len(c_in) >= 3:
        out.append(
            f"{head}, escape clause: span sets that meet the bar at {len(c_in)} of {n} sizes "
            "exist, so 'no selection can do better' does not hold in sample; they are found "
            "with the test windows they are scored on, and chosen on one half of the test "
            f"entities they meet it on the other half at {len(c_cross)} of {n} sizes"
            + (
                " (fewer than 3: no selection made without the test set is shown to reach it)."
                if len(c_cross) < 3
                else " (3 or more: the choice carries over to unseen test entities)."
            )
        )
    else:
        out.append(
            f"{head}, escape clause: even with the test windows the constrained ORACLE meets "
            f"the bar at only {len(c_in)} of {n} sizes: the measurement (of a greedy search, "
            "not a proof) that no selection of these sizes does better."
        )
    return out


def _pct(x: float, digits: int = 0) -> str:
    return f"{100 * x:+.{digits}f}%"


def _pct1(x: float) -> str:
    """One decimal, where the bar's -10% must not be hidden by rounding."""
    return _pct(x, 1)


def _oracle(r: Any) -> list[str]:
    """The test-aware ORACLEs' errors beside the random arm's (see evidence_oracle)."""
    if not r.oracle:
        return []
    out = [
        f"### {r.domain}, {r.split}: ORACLE ceiling (looks at the test set; not a strategy)",
        "",
        "Greedy forward selection of candidate spans, each step adding the span that most "
        "lowers ridge's error on the test tail, to the same usable hours.  *In-sample*: "
        "chosen on the whole test tail and scored on it (all / tail).  *Cross-fitted*: chosen "
        "on the tail of one half of the test entities, scored on the other half's tail, both "
        "ways, against random spans on the same halves.  *Constrained*: per size the set "
        "with the lowest tail error among greedy paths on tail + lam x all (lam on a grid) "
        "whose ridge error on all windows (in sample) or on the choosing half's windows "
        "(cross-fitted) is at most the random arm's mean there; lam is the penalty chosen, "
        "`!` marks a size where no path met that cap.  Difference from the random arm's mean.",
        "",
        "| model | hours | random spans (all / tail) | ORACLE in-sample (all / tail) "
        "| ORACLE cross-fitted (tail) | constrained in-sample (all / tail) "
        "| constrained cross-fitted (all / tail) | lam (in-sample; A, B) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lam = r.oracle_lambda

    def pen(name: str, b: float) -> str:
        v, ok = lam[f"constrained {name}"][b]
        return f"{v:g}{'' if ok else '!'}"

    for model in es.MODELS:
        for b in r.budgets:
            rand = {
                t: np.mean([v[f"{model}/{t}"] for v in r.errors["random"][b].values()])
                for t in ("all", "tail")
            }
            d = oracle_diffs(r, model, b)
            out.append(
                f"| {model} | {b:g} | {rand['all']:.2f} / {rand['tail']:.2f} | "
                f"{_pct(d['all'])} / {_pct(d['tail'])} | {_pct(d['cross'])} | "
                f"{_pct1(d['c_all'])} / {_pct1(d['c_tail'])} | "
                f"{_pct1(d['c_cross_all'])} / {_pct1(d['c_cross'])} | "
                f"{pen('in-sample', b)}; {pen('cross A', b)}, {pen('cross B', b)} |"
            )
    return [*out, ""]


def _faults(r: Any) -> list[str]:
    """Clean random vs faulty random vs filtered random, at equal usable hours."""
    if not r.faults:
        return []
    out = [
        f"### {r.domain}, {r.split}: fault injection",
        "",
        "A third of the pool's tracks given spikes, frozen runs, time going back, dropped "
        "frames and a lag between channels (test set clean).  Spans passing the quality "
        f"filters: {100 * r.filter_pass['faulty pool']:.0f}% of the faulty pool, "
        f"{100 * r.filter_pass['clean pool']:.0f}% of the clean one.  Mean error over the "
        "random arm's seeds (all / tail / unseen) and the difference from clean data.",
        "",
        "| model | hours | clean random | faulty random | filtered random |",
        "|---|---|---|---|---|",
    ]
    for model in es.MODELS:
        for b in r.budgets:
            clean = {
                t: np.mean([v[f"{model}/{t}"] for v in r.errors["random"][b].values()])
                for t in TESTS
            }
            line = [model, f"{b:g}", " / ".join(f"{clean[t]:.2f}" for t in TESTS)]
            for name in ("faulty random", "filtered random"):
                got = {
                    t: np.mean([v[f"{model}/{t}"] for v in r.faults[name][b].values()])
                    for t in TESTS
                }
                line.append(" / ".join(f"{100 * (got[t] / clean[t] - 1):+.1f}%" for t in TESTS))
            out.append("| " + " | ".join(line) + " |")
    return [*out, ""]
