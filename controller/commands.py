"""Commands as data, and the contract of the one layer that runs them.

Drivers build `Command`s (argv tuples, never shell strings) with pure functions and hand
them to a `Session` (one per host). Only `controller.ssh` implements `Session` for real;
tests use plain fake classes that satisfy the protocol, and a dry run uses `DryRunSession`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import AsyncIterator, Protocol, Sequence, runtime_checkable

from controller.errors import CommandFailed


@dataclass(frozen=True)
class Command:
    """One remote command.

    `mutates` says whether it changes host state (a dry run prints but never runs those);
    `assume` is the output a dry run assumes for a read-only command on a host it cannot
    reach (e.g. an empty `ipfw pipe show` for a bridge at baseline).
    """

    argv: tuple[str, ...]
    timeout: float = 30.0
    check: bool = True
    mutates: bool = False
    note: str = ""
    assume: str = ""
    stdin: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.argv, str) or not all(isinstance(a, str) for a in self.argv):
            raise TypeError(f"Command argv must be a tuple of str, got {self.argv!r}")
        if not self.argv:
            raise ValueError("empty argv")
        object.__setattr__(self, "argv", tuple(self.argv))

    def text(self) -> str:
        import shlex
        return shlex.join(self.argv)


def cmd(*argv: str, **kw) -> Command:
    return Command(tuple(argv), **kw)


@dataclass
class CommandResult:
    host: str
    argv: tuple[str, ...]
    exit_status: int | None  # None: timed out, killed, or connection lost
    stdout: str
    stderr: str
    started: float = field(default_factory=time.time)
    duration: float = 0.0
    dry_run: bool = False
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.exit_status == 0

    def check(self) -> "CommandResult":
        if not self.ok:
            raise CommandFailed(self.host, self.argv, self.exit_status, self.stderr or self.stdout)
        return self

    def to_json(self) -> dict:
        return {"host": self.host, "argv": list(self.argv), "exit_status": self.exit_status,
                "stdout": self.stdout, "stderr": self.stderr, "started": self.started,
                "duration": round(self.duration, 6), "dry_run": self.dry_run, "note": self.note}


class RemoteProcess(Protocol):
    """A long-running remote process started by `Session.spawn` (sampler, iperf3, monitor)."""

    host: str
    argv: tuple[str, ...]
    pid: int | None

    def lines(self) -> AsyncIterator[str]: ...

    async def wait(self, timeout: float | None = None) -> CommandResult: ...

    async def terminate(self) -> None: ...


@runtime_checkable
class Session(Protocol):
    """Everything a driver may do to a host."""

    host: str

    async def run(self, command: Command) -> CommandResult: ...

    async def spawn(self, argv: Sequence[str], *, note: str = "", stdin_open: bool = False) -> RemoteProcess: ...


async def run_all(session: Session, commands: Sequence[Command]) -> list[CommandResult]:
    """Run commands in order on one host, stopping at the first failure that must succeed.

    A session that can (`controller.ssh.SSHSession.run_batch`) sends them in one round trip,
    with the same order, stop rule and per-command record; others run them one by one."""
    batch = getattr(session, "run_batch", None)
    if batch is not None and len(commands) > 1:
        results = await batch(commands)
        for c, r in zip(commands, results):
            if c.check:
                r.check()
        return results
    results = []
    for c in commands:
        r = await session.run(c)
        results.append(r)
        if c.check:
            r.check()
    return results


class DryRunSession:
    """A Session that records commands and runs nothing.

    Read-only commands return their `assume` text; mutating ones return success. This is
    how `ctl run --dry-run` prints every command for every host without touching any.
    """

    dry_run = True   # waits that only pace real traffic (start delays) are skipped

    def __init__(self, host: str, log: list[CommandResult]):
        self.host = host
        self.log = log

    async def run(self, command: Command) -> CommandResult:
        r = CommandResult(self.host, command.argv, 0, command.assume, "", dry_run=True, note=command.note)
        self.log.append(r)
        return r

    async def spawn(self, argv: Sequence[str], *, note: str = "", stdin_open: bool = False):
        r = CommandResult(self.host, tuple(argv), 0, "", "", dry_run=True, note=note + " (long-running)")
        self.log.append(r)
        return _DryProcess(self.host, tuple(argv), r)


class _DryProcess:
    def __init__(self, host: str, argv: tuple[str, ...], result: CommandResult):
        self.host, self.argv, self.pid, self._result = host, argv, None, result

    async def lines(self):
        if False:  # pragma: no cover - an empty async generator
            yield ""

    async def read_all(self) -> str:
        return ""

    def close_stdin(self) -> None:
        return None

    async def wait(self, timeout: float | None = None, stdout: str = "") -> CommandResult:
        return self._result

    async def terminate(self, grace: float = 0.0) -> None:
        return None
