"""``kur run|init|inspect|check --help`` end with their exit statuses; ``kur check``'s also
lists the policy's gates, read from the policy model, and ``--policy`` takes inline JSON."""

from __future__ import annotations

import json
import re

import pytest

from kuration.cli import main as cli_main
from kuration.core.config import PolicyModel
from kuration.errors import PolicyError
from kuration.tools.check import load_policy

# the statuses each command's code can return (run_guarded: 1 for a user error, 130 for Ctrl-C,
# 141 when stdout's reader closed it early)
STATUSES = {
    "run": {"0", "1", "130", "141"},
    "init": {"0", "1", "130", "141"},
    "inspect": {"0", "1", "130", "141"},
    "check": {"0", "1", "2", "130", "141"},
}


def help_text(argv: list[str], capsys: pytest.CaptureFixture[str], entry: str = "main") -> str:
    with pytest.raises(SystemExit) as exc:
        getattr(cli_main, entry)(argv)
    assert exc.value.code == 0
    return capsys.readouterr().out


def exit_statuses(text: str) -> set[str]:
    """The codes listed under ``exit status:`` (lines ``  <code>  <meaning>``)."""
    block = text.split("exit status:\n", 1)[1].split("\n\n", 1)[0]
    return set(re.findall(r"^  (\d+) ", block, flags=re.MULTILINE))


@pytest.mark.parametrize("command", sorted(STATUSES))
def test_help_lists_the_exit_statuses(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    text = help_text([command, "--help"], capsys)
    assert exit_statuses(text) == STATUSES[command]
    script = help_text(["--help"], capsys, entry=f"{command}_main")  # kur-<command>
    assert exit_statuses(script) == STATUSES[command]
    block = text.split("exit status:\n", 1)[1].split("\n\n", 1)[0]
    assert max(map(len, block.splitlines())) <= 80  # an 80-column terminal


def test_init_help_says_the_rate_is_the_mean_steps(capsys: pytest.CaptureFixture[str]) -> None:
    """init fits 1 / the mean step over gap-free runs (onboard/rate_fit.py), not the median."""
    text = " ".join(help_text(["init", "--help"], capsys).split())
    rate = text.split("--rate HZ sample rate", 1)[1].split(" --", 1)[0]
    assert "the mean step over gap-free runs" in rate and "median" not in rate, rate


def test_check_help_lists_the_policy_models_gates(capsys: pytest.CaptureFixture[str]) -> None:
    text = help_text(["check", "--help"], capsys)
    listed = re.findall(r"^  ([a-z_]+)  +(.+)$", text.split("its keys", 1)[1], re.MULTILINE)
    assert [name for name, _ in listed] == list(PolicyModel.model_fields)
    assert dict(listed)["min_sources"] == PolicyModel.model_fields["min_sources"].description


def test_policy_as_inline_json() -> None:
    assert load_policy(' {"min_sources": 2, "verify": true}') == {"min_sources": 2, "verify": True}
    with pytest.raises(PolicyError, match=r"policy JSON text"):
        load_policy('{"min_sources": ')
    with pytest.raises(PolicyError, match=r"unknown key .min_shard."):
        load_policy('{"min_shard": 1}')
    with pytest.raises(PolicyError, match=r"min_sources"):
        load_policy('{"min_sources": "2"}')  # strict JSON types, as from a file


def test_kur_check_takes_the_policy_inline(base_b, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(base_b.path)
    assert cli_main.main(["check", path, "--policy", '{"min_sources": 1}']) == 0
    assert "PASS  min_sources" in capsys.readouterr().out
    assert cli_main.main(["check", path, "--policy", '{"min_sources": 100000}']) == 2
    assert "kur check: gate min_sources failed" in capsys.readouterr().err
    assert cli_main.main(["check", path, "--policy", '{"min_sources": 1']) == 1
    err = capsys.readouterr().err
    assert err.startswith("kur: error: cannot read policy: policy JSON text")
    assert err.count("\n") == 1 and err.endswith("\n")  # one line
    out = cli_main.main(["check", path, "--policy", '{"min_sources": 1}', "--json"])
    assert out == 0 and json.loads(capsys.readouterr().out)["ok"] is True
