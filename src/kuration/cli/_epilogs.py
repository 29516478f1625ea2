"""The exit-status epilogs of ``kur run|init|inspect|check --help``.

Parser-level like :mod:`kuration.cli.main`: nothing heavy at import.  ``kur check``'s epilog
lists the policy's gates from :class:`~kuration.core.config.PolicyModel`, which imports
pydantic, so :class:`HelpFormatter` fills them in only when that help is printed.
"""

from __future__ import annotations

import argparse

__all__ = ["EPILOGS", "HelpFormatter", "policy_gates"]

_GATES = "{policy gates}"  # stands for policy_gates() until a help is printed

_ERROR = "1    an error, one line on stderr"
_INTERRUPT = "130  interrupted (Ctrl-C)"
# run_guarded's status when stdout's reader closed it early; the work done stands
_PIPE = "141  stdout's reader closed it early (| head): one line on stderr"

EPILOGS: dict[str, str] = {
    "run": f"""exit status:
  0    the dataset was written and committed
  {_ERROR}: a bad job or argument, a source it cannot
       read, a destination it cannot write (a failed run commits nothing)
  {_INTERRUPT}: nothing is committed; the staged shards stay for
       --resume
  {_PIPE}; a
       dataset committed before stays committed (kur inspect OUT)""",
    "init": f"""exit status:
  0    the job folder was written
  {_ERROR}: an input it cannot read or profile (no
       time column, rows without a time), job files already there (see --force)
  {_INTERRUPT}
  {_PIPE}""",
    "inspect": f"""exit status:
  0    the dataset was summarized (with --verify: every shard matched)
  {_ERROR} (not a kuration dataset, unreadable), or
       --verify found a shard that does not match its manifest
  {_INTERRUPT}
  {_PIPE}""",
    "check": f"""exit status:
  0    every gate of the policy passed
  1    an error, one line on stderr: a policy it cannot read or that is invalid,
       a bad argument
  2    a gate failed: one line per failed gate on stderr (a dataset that
       cannot be read fails the gate "readable")
  {_INTERRUPT}
  {_PIPE}

--policy is a JSON file, or the JSON object itself (text starting with "{{"):
  kur check DATASET --policy '{{"min_sources": 4, "verify": true}}'
its keys, each one gate (all optional, unknown keys are an error):
{_GATES}""",
}


def policy_gates() -> str:
    """One line per key of a ``kur check`` policy: the name and its description, read
    from :class:`~kuration.core.config.PolicyModel` (imports pydantic)."""
    from ..core.config import PolicyModel

    fields = PolicyModel.model_fields
    width = max(map(len, fields))
    return "\n".join(f"  {name:<{width}}  {f.description}" for name, f in fields.items())


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps an epilog's line breaks, and puts the policy's gates in ``kur check``'s."""

    def _format_text(self, text: str) -> str:
        if _GATES in text:
            text = text.replace(_GATES, policy_gates())
        return super()._format_text(text)
