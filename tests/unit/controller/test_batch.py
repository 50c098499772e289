"""A host's commands in one round trip (controller/batch.py): the constant script run by real
POSIX shells of this machine (dash as /bin/sh, and bash), its framing, and run_all's rules
(order, stop at the first failing check) kept when a session batches."""
from __future__ import annotations

import asyncio
import shutil
import subprocess

import pytest

from controller.batch import (BATCH_NAME, BATCH_SCRIPT, MAX_BATCH_ARGV_BYTES, BatchOutputError, batch_args,
                              parse_batch_output, split_batches)
from controller.commands import Command, CommandResult, run_all
from controller.errors import CommandFailed

SHELLS = [s for s in ("/bin/sh", shutil.which("bash"), shutil.which("dash")) if s]


def run_script(shell: str, commands: list[Command]) -> list[tuple[int, bytes, bytes]]:
    # As controller.ssh sends it: env LC_ALL=C ... sh -c SCRIPT ctl-batch ARGS (no shell text from data).
    p = subprocess.run(["env", "LC_ALL=C", "LANG=C", shell, "-c", BATCH_SCRIPT, BATCH_NAME,
                        *batch_args(commands, 30)], capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return parse_batch_output(p.stdout)


@pytest.mark.parametrize("shell", SHELLS)
def test_script_carries_each_command_output_status_and_stderr_unchanged(shell):
    tricky = "a 'quoted' \"arg\" with $(echo no) `echo no` ; | & $HOME\nsecond line"
    fake_frame = "ctl-batch 0 999 0\n"
    cmds = [Command(("printf", "%s", tricky)),
            Command(("printf", "two trailing newlines\n\n")),
            Command(("printf", "")),                                   # no output at all
            Command(("sh", "-c", 'echo out; echo "err é" >&2; exit 3'), check=False),
            Command(("printf", "%s", fake_frame)),                     # output that looks like a frame
            Command(("printf", "héllo")),                               # bytes, not characters, counted
            Command(("cat",))]                                         # stdin is /dev/null: no hang
    got = run_script(shell, cmds)
    assert [g[0] for g in got] == [0, 0, 0, 3, 0, 0, 0]
    assert got[0][1].decode() == tricky
    assert got[1][1] == b"two trailing newlines\n\n"
    assert got[2] == (0, b"", b"")
    assert got[3][1:] == (b"out\n", "err é\n".encode())
    assert got[4][1].decode() == fake_frame
    assert got[5][1] == "héllo".encode()
    assert got[6] == (0, b"", b"")


@pytest.mark.parametrize("shell", SHELLS)
def test_script_stops_after_the_first_failing_command_that_must_succeed(shell):
    cmds = [Command(("true",)), Command(("false",), check=False), Command(("sh", "-c", "exit 7")),
            Command(("echo", "never"))]
    got = run_script(shell, cmds)
    assert [g[0] for g in got] == [0, 1, 7]          # `false` may fail; exit 7 must not: the rest never ran


@pytest.mark.parametrize("shell", SHELLS)
def test_each_command_keeps_its_own_deadline(shell):
    got = run_script(shell, [Command(("sleep", "5"), timeout=0.3, check=False), Command(("echo", "after"))])
    assert got[0][0] == 124                           # timeout(1) ended it at 0.3 s
    assert got[1] == (0, b"after\n", b"")


def test_frames_that_do_not_add_up_are_refused():
    good = b"ctl-batch 0 3 2\nabcde"
    assert parse_batch_output(good) == [(0, b"abc", b"de")]
    assert parse_batch_output(b"") == []
    for bad in (b"ctl-batch 0 3 2\nabc",            # cut off
                b"hello\n", b"ctl-batch 0 x 2\n", b"ctl-batch 0 1\n", good + b"junk",
                b"ctl-batch " + b"1" * 200 + b" 0 0\n"):  # a header longer than any real one
        with pytest.raises(BatchOutputError):
            parse_batch_output(bad)


def test_groups_stay_under_the_argument_limit_and_stdin_commands_go_alone():
    big = Command(("printf", "x" * (MAX_BATCH_ARGV_BYTES // 3)))
    groups = split_batches([big] * 7)
    assert [len(g) for g in groups] == [2, 2, 2, 1]
    small = Command(("true",))
    fed = Command(("cat",), stdin="data")
    assert [len(g) for g in split_batches([small, small, fed, small, small])] == [2, 1, 2]


class BatchingSession:
    """A Session with run_batch (as controller.ssh's), running each command in a local shell."""

    host = "local"

    def __init__(self):
        self.batches: list[int] = []

    async def run(self, command: Command) -> CommandResult:
        p = subprocess.run(command.argv, capture_output=True, text=True)
        return CommandResult(self.host, command.argv, p.returncode, p.stdout, p.stderr)

    async def spawn(self, argv, *, note="", stdin_open=False):
        raise NotImplementedError

    async def run_batch(self, commands):
        self.batches.append(len(commands))
        got = run_script("/bin/sh", list(commands))
        return [CommandResult(self.host, c.argv, st, o.decode(), e.decode()) for c, (st, o, e) in zip(commands, got)]


def test_run_all_through_a_batching_session_keeps_order_and_the_stop_rule():
    s = BatchingSession()
    res = asyncio.run(run_all(s, [Command(("echo", "1")), Command(("false",), check=False), Command(("echo", "3"))]))
    assert [r.stdout for r in res] == ["1\n", "", "3\n"] and s.batches == [3]
    with pytest.raises(CommandFailed) as err:
        asyncio.run(run_all(s, [Command(("echo", "1")), Command(("sh", "-c", "echo bad >&2; exit 2")),
                                Command(("echo", "never"))]))
    assert "bad" in str(err.value)
