"""check_dataset: quality gates for handing a dataset to training (``kur check``).

A policy is a JSON object; every key is optional and unknown keys are errors::

    {
      "required_modalities": ["position", "altitude"],
      "required_splits": ["train", "test"],
      "min_sources": 4,                      # distinct sources over all splits
      "min_shards": 10,                      # or {"train": 10, "test": 2}
      "verify": true,                        # read and check every shard
      "min_budget_utilization": 0.9,         # emitted / requested, per split with a budget
      "max_skipped_sources": 0,              # sources that failed during scoring
      "max_skipped_fraction": 0.1
    }
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from ..core.config import PolicyModel, validate_config
from ..core.jsonio import loads_strict
from ..core.words import count
from ..errors import KurationError, PolicyError
from .inspect import inspect_dataset

__all__ = ["CheckResult", "PolicyError", "check_dataset", "load_policy"]


@dataclass(frozen=True)
class CheckResult:
    """``gates``: one ``{"gate", "ok", "detail"}`` per evaluated rule; ``ok`` when all pass.

    ``notes``: facts worth knowing that no gate of the policy asked about, such as an
    under-filled split and the constraint that bound it.
    """

    path: str
    gates: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(g["ok"] for g in self.gates)

    @property
    def failures(self) -> list[dict[str, Any]]:
        return [g for g in self.gates if not g["ok"]]


def load_policy(policy: str | os.PathLike[str] | Mapping[str, Any]) -> dict[str, Any]:
    """Read and validate a policy, checked by :class:`~kuration.core.config.PolicyModel`
    (strict JSON types, unknown keys rejected).

    ``policy`` is a mapping, a path to a JSON file, or the JSON text of the object itself:
    a ``str`` that starts with ``{`` (after white space), as ``kur init --units`` takes.

    Raises
    ------
    PolicyError
        The file cannot be read, the text is not strict JSON, or the object is invalid.
    """
    what = "policy"
    if isinstance(policy, str) and policy.lstrip().startswith("{"):
        what = "policy JSON text"
        try:
            policy = loads_strict(policy.encode(), what=what)
        except ValueError as exc:
            raise PolicyError(f"cannot read policy: {exc}") from None
    elif not isinstance(policy, Mapping):
        what = str(policy)
        try:
            with open(policy, "rb") as fh:
                policy = loads_strict(fh.read(), what=str(policy))
        except (OSError, ValueError) as exc:
            raise PolicyError(f"cannot read policy: {exc}") from None
    validate_config(PolicyModel, policy, kind="policy", what=what)
    return dict(cast(Mapping[str, Any], policy))  # a JSON object: checked just above


def check_dataset(
    path: str | os.PathLike[str], policy: str | os.PathLike[str] | Mapping[str, Any]
) -> CheckResult:
    """Evaluate ``policy`` on the dataset at ``path``.

    An unreadable or uncommitted dataset is itself a failed gate (``readable``), not an exception.

    Raises
    ------
    PolicyError
        If the policy is malformed.
    """
    pol = load_policy(policy)
    res = CheckResult(str(path))
    gates = res.gates
    try:
        rep = inspect_dataset(path, verify=bool(pol.get("verify")))
    except KurationError as exc:
        gates.append({"gate": "readable", "ok": False, "detail": str(exc)})
        return res
    gates.append({"gate": "readable", "ok": True, "detail": "committed and consistent"})
    for split, b in sorted(rep.budget.items()):
        if isinstance(b, Mapping) and b.get("binding"):
            res.notes.append(
                f"{split} under-filled, binding constraint: {b['binding']} ({b['binding_detail']})"
            )
    if "required_modalities" in pol:
        missing = sorted(set(pol["required_modalities"]) - set(rep.modalities))
        gates.append(
            {
                "gate": "required_modalities",
                "ok": not missing,
                "detail": f"missing {missing}" if missing else "all present",
            }
        )
    if "required_splits" in pol:
        empty = [s for s in pol["required_splits"] if rep.splits.get(s, {}).get("shards", 0) == 0]
        gates.append(
            {
                "gate": "required_splits",
                "ok": not empty,
                "detail": f"empty or missing {empty}" if empty else "all present",
            }
        )
    if "min_sources" in pol:
        n = len({s for v in rep.splits.values() for s in v.get("sources", [])})
        gates.append(
            {
                "gate": "min_sources",
                "ok": n >= pol["min_sources"],
                "detail": f"{count(n, 'source')} (need {pol['min_sources']})",
            }
        )
    if "min_shards" in pol:
        want = pol["min_shards"]
        per = want if isinstance(want, Mapping) else {"all": want}
        for split, need in per.items():
            have = (
                sum(v["shards"] for v in rep.splits.values())
                if split == "all"
                else rep.splits.get(split, {}).get("shards", 0)
            )
            gates.append(
                {
                    "gate": f"min_shards[{split}]",
                    "ok": have >= need,
                    "detail": f"{count(have, 'shard')} (need {need})",
                }
            )
    if pol.get("verify"):
        v = rep.verification
        gates.append(
            {
                "gate": "verify",
                "ok": bool(v.get("valid")),
                "detail": f"{count(v.get('checked', 0), 'shard')} checked"
                + (
                    f"; {len(v['failures'])} failed: {v['failures'][0]}"
                    if v.get("failures")
                    else ""
                ),
            }
        )
    if "min_budget_utilization" in pol:
        for split, b in sorted(rep.budget.items()):
            if not isinstance(b, Mapping) or not b.get("requested_s"):
                continue
            u = b.get("emitted_s", 0.0) / b["requested_s"]
            detail = f"{u:.3f} of the requested hours (need {pol['min_budget_utilization']})"
            if b.get("binding"):
                detail += f"; binding constraint: {b['binding']}"
            gates.append(
                {
                    "gate": f"budget_utilization[{split}]",
                    "ok": u >= pol["min_budget_utilization"],
                    "detail": detail,
                }
            )
    n_err = len(rep.errors)
    if "max_skipped_sources" in pol:
        gates.append(
            {
                "gate": "max_skipped_sources",
                "ok": n_err <= pol["max_skipped_sources"],
                "detail": f"{count(n_err, 'source')} skipped (allowed {pol['max_skipped_sources']})",
            }
        )
    if "max_skipped_fraction" in pol:
        total = n_err + len({s for v in rep.splits.values() for s in v.get("sources", [])}) or 1
        frac = n_err / total
        gates.append(
            {
                "gate": "max_skipped_fraction",
                "ok": frac <= pol["max_skipped_fraction"],
                "detail": f"{frac:.3f} of sources skipped (allowed {pol['max_skipped_fraction']})",
            }
        )
    return res
