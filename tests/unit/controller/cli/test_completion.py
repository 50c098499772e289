"""Shell completion through argcomplete, asked the way bash asks it (the COMP_LINE protocol):
commands, subcommands, options, scenario names, and each scenario's own parameters."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest


def complete(tmp_path, line: str) -> list[str]:
    out = tmp_path / "completions"
    env = {**os.environ, "_ARGCOMPLETE": "1", "_ARGCOMPLETE_IFS": "\n", "COMP_LINE": line,
           "COMP_POINT": str(len(line)), "_ARGCOMPLETE_STDOUT_FILENAME": str(out)}
    p = subprocess.run([sys.executable, "-m", "controller"], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return sorted(out.read_text().split())


@pytest.mark.parametrize("line, want", [
    ("ctl ru", ["run", "runs"]),
    ("ctl re", ["report", "reproduce"]),
    ("ctl run dist", ["distinct-bottleneck"]),
    ("ctl run shared-bottleneck --del", ["--delay", "--delay1", "--delay2"]),
    ("ctl run distinct-bottleneck --li", ["--link1", "--link2"]),
    ("ctl campaign st", ["status"]),
    ("ctl link re", ["reset"]),
    ("ctl service install --ni", ["--nightly"]),
])
def test_completions(tmp_path, line, want):
    assert complete(tmp_path, line) == want


def test_a_parameter_of_another_scenario_is_not_offered(tmp_path):
    assert complete(tmp_path, "ctl run distinct-bottleneck --rtt") == []
