"""Recovery of a rack whose controller died mid-run (kill -9, crash, power loss).

A run writes, before it changes anything, the state it read from every bridge and
endpoint (with the raw output of the read commands), and records each remote process the
moment it starts. If the controller dies, that record stays `running`. The next ctl that
takes the rack lock finds it (only a record of this rack written with this state dir), ends
the recorded processes by PID (only if the PID still names the same process: the same start
time on the host and the same program), restores every bridge and endpoint to the recorded `before`
state with the drivers' own restore, verifies it, and marks the record `aborted`.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import socket
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from bridges.base import restore, shaper_class, state_from_record
from controller.commands import Command, run_all
from controller.errors import CtlError
from controller.inventory import Inventory
from controller.errors import RecordError
from controller.results.records import RunRecord, command_line, load_manifest, process_line, read_jsonl
from controller.results.timefields import lstart_utc
from controller.run.congestion import recover_congestion
from controller.settings import state_dir
from controller.ssh import CommandLog, SSHPool
from nodes.mptcp import MptcpEndpointDriver


# Programs that exec the command they are given: the process a PID names runs the command
# after their own arguments (`mptcpize run iperf3 ...` becomes `iperf3 ...`).
LAUNCHERS = {"mptcpize": 2, "env": 1, "nice": 1, "timeout": 2}
_ELIDE = 400    # an argv element longer than this (a constant script) is recorded by its digest


def process_record(p: Any) -> dict:
    """What a run records about a remote process the moment it starts: enough for recovery to
    recognise exactly that process later (PID + its start time on the host + its argv). The
    start time is Unix seconds (the spawn wrapper's `ps -o lstart=` runs under TZ=UTC0)."""
    argv = [a if len(a) <= _ELIDE else f"<{len(a)} bytes sha256:{hashlib.sha256(a.encode()).hexdigest()[:16]}>"
            for a in p.argv]
    return {"host": p.host, "pid": p.pid, "argv0": p.argv[0], "argv": argv, "program": program_of(p.argv),
            "host_start": lstart_utc(getattr(p, "host_start", None)), "note": p.note, "started": p.started}


# Each remote process a run starts, one JSON line, appended the moment its PID is known (before
# the manifest is saved with it): what recovery ends is on disk even if the controller dies in the
# same instant. The manifest's `processes` has the same entries once saved (see ProcessJournal).
JOURNAL = "processes.jsonl"


class ProcessJournal:
    """The record's processes.jsonl, appended to (one line, flushed to the kernel) per process."""

    def __init__(self, run_dir: Path):
        self._fh = open(run_dir / JOURNAL, "a", encoding="utf-8")

    def add(self, entry: dict) -> None:
        self._fh.write(json.dumps(process_line(entry)) + "\n")
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()


def recorded_processes(run_dir: Path, manifest: dict) -> list[dict]:
    """Every process a record names: its manifest's, then those only its journal has (the
    controller died between the two writes). A torn last line is what a kill -9 mid-write
    leaves: it is skipped (that process's PID was never complete on disk)."""
    out = list(manifest.get("processes") or [])
    seen = {(p.get("host"), p.get("pid"), p.get("started")) for p in out if isinstance(p, dict)}
    try:
        journal = read_jsonl(run_dir / JOURNAL)
    except (OSError, ValueError):
        return out
    for p in journal:
        if isinstance(p.get("host"), str) and \
                (p.get("host"), p.get("pid"), p.get("started")) not in seen:
            seen.add((p.get("host"), p.get("pid"), p.get("started")))
            out.append(p)
    return out


def program_of(argv: Sequence[str]) -> str:
    """The program a launched command ends up running (after launchers such as mptcpize)."""
    i = 0
    while i < len(argv) - 1 and os.path.basename(argv[i]) in LAUNCHERS:
        i += LAUNCHERS[os.path.basename(argv[i])]
    return os.path.basename(argv[min(i, len(argv) - 1)])


def start_command(recorded: dict, pid: str) -> Command:
    """The ps that prints a PID's start time as the record has it: under TZ=UTC0 (format 2: Unix
    seconds), or in the host's own zone for a format-1 record's `host_start_local`."""
    env = () if "host_start_local" in recorded else ("env", "TZ=UTC0")
    return Command((*env, "ps", "-o", "lstart=", "-p", pid), timeout=10, check=False,
                   note="is the interrupted run's process still there?")


def same_process(recorded: dict, start_now: str, args_now: str) -> bool:
    """Whether the process a PID names now is the one a run recorded (pure). With a recorded
    start time, the start time must be the same to the second (a reused PID never is) and the
    recorded program must be what it runs; a record without one (older ctl) is not trusted.
    `start_now` is what `start_command(recorded, ...)` printed."""
    program = recorded.get("program")
    if not program or not args_now.strip():
        return False
    local, start = recorded.get("host_start_local"), recorded.get("host_start")
    if isinstance(local, str) and local.strip():        # format 1: the host's local time, as ps printed it
        same = " ".join(start_now.split()) == " ".join(local.split())
    elif isinstance(start, (int, float)) and not isinstance(start, bool):
        now = lstart_utc(start_now)
        same = now is not None and now == start
    else:
        return False
    return same and any(os.path.basename(w) == program for w in args_now.split()[:3])


# A manifest's top-level `status`, as RunRecord writes it (indent 1, the fifth key): a JSON
# string holds no raw newline, so this line can only be the top-level key.
_STATUS_LINE = re.compile(rb'\n "status": "([a-z_]+)"')
_STATUS_PREFIX = 4096


def recorded_status(manifest: Path) -> str | None:
    """The status a record's manifest starts with, read from its first 4 KB (None: not found
    there, or unreadable: the caller reads the whole file). The start-up check of every `ctl run`
    reads this for each record in the runs directory, not thousands of whole manifests."""
    try:
        with open(manifest, "rb") as fh:
            head = fh.read(_STATUS_PREFIX)
    except OSError:
        return None
    m = _STATUS_LINE.search(head)
    return m.group(1).decode() if m else None


def interrupted_runs(runs_root: Path, inv: Inventory) -> list[Path]:
    """Records of this rack, written by a ctl with this state dir, still marked `running`
    whose controller is gone.

    Called with the rack lock held: no live controller on this machine can be running on
    this rack, so a `running` record here is one whose controller died. A record of another
    rack or another state dir (another checkout's rack) is never acted upon."""
    out = []
    if not runs_root.exists():
        return out
    me = socket.gethostname()
    mine = str(state_dir().resolve())
    for d in sorted(runs_root.iterdir()):
        mf = d / "manifest.json"
        if not mf.exists() or recorded_status(mf) not in ("running", None):
            continue
        try:
            m = load_manifest(d)
        except RecordError:
            continue
        if m.get("status") != "running" or m.get("dry_run"):
            continue
        if (m.get("inventory") or {}).get("name") != inv.name:
            continue
        ctl = m.get("controller") or {}
        if ctl.get("state_dir") != mine:
            continue
        if ctl.get("host") == me and ctl.get("pid") == os.getpid():
            continue
        out.append(d)
    return out


async def recover(inv: Inventory, run_dir: Path, say: Callable[[str], None]) -> list[str]:
    rec = RunRecord.open(run_dir)
    m = rec.manifest
    m["processes"] = recorded_processes(run_dir, m)
    log = CommandLog(run_dir / "commands.jsonl", encode=command_line)
    hosts = sorted(set(m.get("shapers", {})) | set(m.get("endpoints", {})) |
                   set((m.get("congestion") or {}).get("hosts", {})) | {p["host"] for p in m.get("processes", [])})
    hosts = [h for h in hosts if h in inv.hosts]
    pool = SSHPool(inv, log, hosts)
    problems: list[str] = []
    try:
        try:
            (await pool.connect_all()).raise_on_error()
        except CtlError as exc:
            problems.append(f"cannot reach every host: {exc.one_line()}")
        await _end_processes(pool, m.get("processes", []), problems)
        plan_eps = ((m.get("parameters") or {}).get("plan") or {}).get("endpoints", {})

        async def bridge(b: str, data: dict) -> None:
            if "before" not in data:
                return
            try:
                shaper = shaper_class(data["kind"])(inv, b)
                before = state_from_record(shaper, b, data["before"])
                after = await restore(shaper, pool[b], before)
                data["restored"] = after.to_json()
            except (CtlError, ValueError) as exc:
                problems.append(f"{b}: {exc}")

        async def endpoint(h: str, data: dict) -> None:
            if "before" not in data:
                return
            try:
                drv = MptcpEndpointDriver(h, (plan_eps.get(h) or {}).get("sysctls", {}).keys())
                before = drv.state_from_record(data["before"])
                now = drv.parse_state(await run_all(pool[h], drv.read_commands()))
                await run_all(pool[h], drv.plan_restore(before, now))
                after = drv.parse_state(await run_all(pool[h], drv.read_commands()))
                diffs = drv.restored_equal(before, after)
                if diffs:
                    problems.append(f"{h}: " + "; ".join(diffs))
                data["restored"] = after.to_json()
            except (CtlError, ValueError) as exc:
                problems.append(f"{h}: {exc}")

        await asyncio.gather(*(bridge(b, d) for b, d in m.get("shapers", {}).items()),
                             *(endpoint(h, d) for h, d in m.get("endpoints", {}).items()))
        # after the processes that used them are gone: leave the congestion controls it loaded
        await recover_congestion(m, pool.sessions, problems)
    finally:
        await pool.close()
        log.close()
    ctl = m.get("controller") or {}
    m["recovery"] = {"t": time.time(), "by_pid": os.getpid(), "problems": problems}
    rec.finish("aborted", f"controller (pid {ctl.get('pid')} on {ctl.get('host')}) died before restoring; "
                          f"rack restored by recovery" + (f" with problems: {'; '.join(problems)}" if problems else ""))
    say(f"recovered the rack from interrupted run {run_dir.name}" + (f" ({len(problems)} problems)" if problems else ""))
    return problems


async def _end_processes(pool: SSHPool, processes: list[dict], problems: list[str]) -> None:
    for p in processes:
        if p.get("pid") is None or p["host"] not in pool.sessions:
            continue
        s = pool[p["host"]]
        pid = str(p["pid"])
        try:
            start = await s.run(start_command(p, pid))
            if not start.ok or not start.stdout.strip():
                continue          # gone
            args = await s.run(Command(("ps", "-ww", "-o", "args=", "-p", pid), timeout=10, check=False,
                                       note="what does that PID run now?"))
            # The same PID may since belong to something else: end it only if it is the same process.
            if same_process(p, start.stdout, args.stdout):
                await s.run(Command(("kill", "-TERM", pid), timeout=10, check=False, mutates=True,
                                    note=f"end {p.get('program') or p['argv0']} of the interrupted run"))
            else:
                p["left_alone"] = "not the recorded process (start time or program differ, or not recorded)"
        except CtlError as exc:
            problems.append(f"{p['host']}: {exc.one_line()}")


def recover_all(inv: Inventory, runs_root: Path, say: Callable[[str], None]) -> list[str]:
    problems: list[str] = []
    for d in interrupted_runs(runs_root, inv):
        problems += asyncio.run(recover(inv, d, say))
    return problems
