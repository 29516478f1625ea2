"""Parallel build workers that never re-import ``__main__``: a script needs no guard."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from timenet import build as tb

UNGUARDED = """\
import os
import statistics
{imports}
print("top level of the script ran in", os.getpid(), flush=True)
{body}
"""


def _run_script(tmp_path: Path, imports: str, body: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "plain_script.py"  # no `if __name__ == "__main__":` guard
    script.write_text(UNGUARDED.format(imports=imports, body=body))
    return subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )


def test_unguarded_script_runs_workers(tmp_path: Path) -> None:
    body = (
        "calls = [(statistics.mean, ([1, 2, 3, 6],)), (statistics.median, ([5, 1, 9],))]\n"
        "print('results', run_parallel(calls, what='a plain script'))"
    )
    res = _run_script(tmp_path, "from timenet.build import run_parallel", body)
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("top level of the script ran") == 1  # workers did not re-run it
    assert "results [3, 5]" in res.stdout
    assert "bootstrapping" not in res.stderr


def test_the_same_script_breaks_a_spawn_pool(tmp_path: Path) -> None:
    """What the workers avoid: a spawn pool re-runs the unguarded script in its workers."""
    body = (
        "with ProcessPoolExecutor(1, mp_context=get_context('spawn')) as pool:\n"
        "    print('results', pool.submit(statistics.mean, [1, 2, 3, 6]).result())"
    )
    imports = (
        "from concurrent.futures import ProcessPoolExecutor\n"
        "from multiprocessing import get_context"
    )
    res = _run_script(tmp_path, imports, body)
    assert res.returncode != 0 and "bootstrapping phase" in res.stderr


def test_worker_errors_name_the_work_and_the_function() -> None:
    with pytest.raises(tb.BuildError) as info:
        tb.run_parallel([(json.loads, ('{"a": 1}',)), (json.loads, ("{bad",))], what="parsing")
    msg = str(info.value)
    assert msg.startswith("parsing: worker running json.loads failed (exit 1): ")
    assert "JSONDecodeError" in msg
    assert tb.run_parallel([(json.loads, ('{"a": 1}',))], what="parsing") == [{"a": 1}]
    with pytest.raises(tb.BuildError, match="importable by name"):
        tb.run_parallel([(lambda: 1, ())], what="parsing")
