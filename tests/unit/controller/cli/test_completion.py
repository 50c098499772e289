"""Shell completion through argcomplete, asked the way bash asks it (the COMP_LINE protocol):
commands, subcommands, options, scenario names, and each scenario's own parameters."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.ctl_fork import ForkServer

_SERVER: list[ForkServer] = []


@pytest.fixture(scope="module", autouse=True)
def _fork_server(tmp_path_factory):
    """`python -m controller` forked from a server that imported ctl once (tests/support/ctl_fork.py),
    the environment the completion variables aside as the test's own; one line is also completed by a
    fresh interpreter (test_a_fresh_interpreter_completes_the_same)."""
    server = ForkServer(tmp_path_factory.mktemp("completion-fork"), dict(os.environ), cwd=Path.cwd()).start()
    _SERVER.append(server)
    try:
        yield
        assert server.written_by_server() == []
    finally:
        _SERVER.remove(server)
        server.stop()


def complete(tmp_path, line: str, fresh: bool = False) -> list[str]:
    out = tmp_path / "completions"
    env = {**os.environ, "_ARGCOMPLETE": "1", "_ARGCOMPLETE_IFS": "\n", "COMP_LINE": line,
           "COMP_POINT": str(len(line)), "_ARGCOMPLETE_STDOUT_FILENAME": str(out)}
    if fresh:
        p = subprocess.run([sys.executable, "-m", "controller"], env=env, capture_output=True, text=True, timeout=60)
    else:
        p = _SERVER[0].run([], env, Path.cwd(), timeout=60, text=True)
    assert p.returncode == 0, p.stderr
    return sorted(out.read_text().split())


def test_a_fresh_interpreter_completes_the_same(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    line = "ctl run distinct-bottleneck --li"
    assert complete(tmp_path / "a", line, fresh=True) == complete(tmp_path / "b", line) == ["--link1", "--link2"]


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
