"""What a test left registered in the kernel's congestion controls, judged by its own holds.

The kernel's lists (net.ipv4.tcp_available_congestion_control and tcp_allowed_congestion_control)
are kernel-wide: while one test runs, another rack on this kernel (a lane-B test, a researcher's
campaign, another checkout's suite) may register or unregister ctl's BPF algorithms through
nodes/congestion/hostctl.py, each under its own holder id in /run/ctl-cc/holders.json. A check
"the lists are as they were" then fails for what others did. This one is about the test's own
holders (`ours`: the run ids its runs recorded, or the holder id it loaded with):

- no algorithm lists one of `ours` as a holder any more (its hold was left behind), and
- every name that is in one list and not in the other, before against after, is one that a holder
  other than `ours` held at one of the two moments (their registration, not this test's).

A name that changed and no other holder explains (ours left registered after our hold went, or
registered by something else than hostctl) fails, as before. Each snapshot reads the holders file
and both lists under hostctl's own lock, so it never sees a load or unload half done.
"""
from __future__ import annotations

import fcntl
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from nodes.congestion import hostctl

AVAILABLE = "/proc/sys/net/ipv4/tcp_available_congestion_control"
ALLOWED = "/proc/sys/net/ipv4/tcp_allowed_congestion_control"


@dataclass(frozen=True)
class Snapshot:
    available: frozenset[str]
    allowed: frozenset[str]
    holders: dict = field(default_factory=dict)     # name -> hostctl's entry ({"holders": [...], ...})


def _read_lists(holders_path: str) -> Snapshot:
    try:
        doc = json.loads(Path(holders_path).read_text())
    except (OSError, ValueError):
        doc = {}
    return Snapshot(frozenset(Path(AVAILABLE).read_text().split()), frozenset(Path(ALLOWED).read_text().split()),
                    doc if isinstance(doc, dict) else {})


def snapshot() -> Snapshot:
    """The kernel's two lists and hostctl's holders, read together under hostctl's lock (shared: a
    load or unload of any rack waits for it, and it for them). Without /run/ctl-cc (hostctl never
    ran on this kernel) there is nothing to wait for."""
    try:
        fd = os.open(os.path.join(hostctl.DIR, "lock"), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return _read_lists(hostctl.HOLDERS)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        return _read_lists(hostctl.HOLDERS)
    finally:
        os.close(fd)


def held_by_others(snap: Snapshot, ours: set[str]) -> set[str]:
    """The names a holder other than `ours` holds in `snap`."""
    return {name for name, entry in snap.holders.items()
            if isinstance(entry, dict) and set(entry.get("holders") or ()) - ours}


def left_behind(before: Snapshot, after: Snapshot, ours: set[str]) -> list[str]:
    """What the holders `ours` left in the kernel between `before` and `after`, one line each
    (empty: nothing). Pure: the snapshots are the input."""
    problems = []
    for name, entry in sorted(after.holders.items()):
        mine = sorted(set(entry.get("holders") or ()) & ours) if isinstance(entry, dict) else []
        if mine:
            problems.append(f"{name} is still held by {', '.join(mine)}")
    others = held_by_others(before, ours) | held_by_others(after, ours)
    for what, was, now in (("available", before.available, after.available),
                           ("allowed", before.allowed, after.allowed)):
        for name in sorted((was ^ now) - others):
            problems.append(f"{name} {'appeared in' if name in now else 'went from'} tcp_{what}_congestion_control "
                            "and no other holder holds it")
    return problems


def run_holders(runs_dir: Path) -> set[str]:
    """The holder ids the runs of one rack recorded (run:<rack>/<state>/<run id>), and the older
    form (run:<run id>) of records written before holder ids named the rack."""
    ours = set()
    for p in runs_dir.iterdir() if runs_dir.exists() else ():
        ours.add(f"run:{p.name}")
        try:
            ours.add(json.loads((p / "manifest.json").read_text())["congestion"]["holder"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
    return ours


def assert_nothing_left(before: Snapshot, ours: set[str]) -> None:
    """Fails, naming each, if `ours` left something registered since `before`."""
    problems = left_behind(before, snapshot(), ours)
    assert not problems, "; ".join(problems)
