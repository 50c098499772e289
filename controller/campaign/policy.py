"""What happens after an attempt (pure): its failure class, the retry decision, and the
scheduler's next step."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Literal, Sequence

from controller.campaign.spec import RetryPolicy
from controller.campaign.timing import Window, local
from controller.timefmt import iso_local, iso_span

MAX_INTERRUPTIONS = 5  # a run that kills its controller again and again must not loop all night

_RE_COMMAND = re.compile(r"` failed \((exit -?\d+|timed out)\)|not as planned:|: restore failed:")
_RE_LOST = re.compile(r"^lost a host:|cannot connect to|connection lost|not connected|did not start")


def classify(status: str, exit_code: int | None, error: str | None, error_type: str | None = None) -> str:
    """Failure class of a finished attempt, from the runner's outcome (or a final record).

    ok | interrupted | host-unreachable | command-failed | traffic-error | result-invalid |
    refused | restore-failed | error. `error_type` (the exception class name, when the
    runner reports it) wins over reading the message."""
    err = error or ""
    if "RESTORE PROBLEMS" in err or "rack restored by recovery with problems" in err:
        return "restore-failed"
    if status == "completed":
        return "ok"
    if status == "invalid":
        return "result-invalid"
    if status == "aborted":
        if (exit_code is not None and exit_code > 128) or err.startswith("interrupted") \
                or "controller died before" in err or "died before restoring" in err:
            return "interrupted"
        if err.startswith("lost a host"):
            return "host-unreachable"
        return "error"
    if status == "failed":
        if exit_code == 2:
            return "refused"
        by_type = {"TrafficError": "traffic-error", "CommandFailed": "command-failed", "VerifyError": "command-failed",
                   "SSHError": "host-unreachable", "HostsUnreachable": "host-unreachable", "ResultInvalid": "result-invalid"}
        if error_type in by_type:
            return by_type[error_type]
        if _RE_LOST.search(err):
            return "host-unreachable"
        if _RE_COMMAND.search(err):
            return "command-failed"
        if err:
            # What is left of the runner's `failed` path without a command or SSH signature
            # is the traffic phase (iperf3 errors, servers not listening).
            return "traffic-error"
        return "error"
    return "error"


@dataclass(frozen=True)
class Decision:
    run_state: Literal["done", "pending", "failed", "cancelled"]
    action: Literal["done", "retry", "skip", "pause", "requeue", "cancel"]
    not_before: float | None = None
    pause_reason: str | None = None
    counts_failure: bool = False
    counts_interruption: bool = False


def decide(klass: str, *, failures_before: int, interruptions_before: int, policy: RetryPolicy, now: float,
           what: str, error: str | None, cancelled: bool = False, user_abort: bool = False) -> Decision:
    """What happens to a run after an attempt of class `klass` (see `classify`)."""
    if klass == "ok":
        return Decision("done", "done")
    if cancelled:
        return Decision("cancelled", "cancel", counts_interruption=klass == "interrupted")
    short = " ".join((error or klass).split())[:300]
    if klass == "interrupted":
        if user_abort:
            return Decision("pending", "requeue")
        if interruptions_before + 1 >= MAX_INTERRUPTIONS:
            return Decision("pending", "pause", pause_reason=f"{what} was interrupted {interruptions_before + 1} "
                            "times (does it crash the controller?)", counts_interruption=True)
        return Decision("pending", "requeue", counts_interruption=True)
    if klass in ("restore-failed", "error"):
        return Decision("pending", "pause", pause_reason=f"{what}: {klass}: {short}", counts_failure=True)
    rule = policy.rule(klass)
    failures = failures_before + 1
    if failures < rule.attempts:
        return Decision("pending", "retry", not_before=now + rule.wait_s, counts_failure=True)
    if rule.then == "skip":
        return Decision("failed", "skip", counts_failure=True)
    return Decision("pending", "pause", pause_reason=f"{what}: {klass} ({failures} of {rule.attempts} "
                    f"attempts): {short}", counts_failure=True)


@dataclass(frozen=True)
class RunView:
    seq: int
    state: str
    not_before: float | None
    duration_s: float
    claimed_by: str | None = None
    claim_until: float | None = None

    def claimed_by_other(self, me: str | None, now: float) -> bool:
        """A pending run another scheduler has claimed (its lease still runs): in progress there."""
        return self.claimed_by is not None and self.claimed_by != me and (self.claim_until or 0) >= now


@dataclass(frozen=True)
class Step:
    kind: Literal["run", "wait", "finish", "idle"]
    seq: int | None = None
    until: float | None = None
    why: str = ""
    hold_rack: bool = False  # short waits (pause between runs, retry wait) keep the rack lock


@dataclass(frozen=True)
class Busy:
    """A stretch of time the rack is not ours: somebody else's reservation."""

    start: float
    end: float
    who: str
    note: str = ""

    def text(self) -> str:
        return (f"reserved by {self.who} from {iso_span(self.start, self.end)}"
                + (f" ({self.note})" if self.note else ""))


def next_step(state: str, not_before: float | None, runs: Sequence[RunView], now: float, *,
              window: Window | None, pause_s: float, last_finished: float | None, overhead_s: float,
              me: str | None = None, busy: Sequence[Busy] = ()) -> Step:
    """The scheduler's next step on one campaign for one rack (`me`: its claim holder id).
    A pending run another rack's scheduler has claimed counts as in progress; `busy` are other
    people's reservations of this rack: a run starts only if it is expected (its duration plus
    the learned set-up/restore overhead) to end before the next one begins."""
    if state not in ("queued", "running"):
        return Step("idle", why=state)
    if not_before is not None and now < not_before:
        return Step("wait", until=not_before, why=f"starts at {iso_local(not_before, 'minutes')}")
    pending = [r for r in runs if r.state == "pending" and not r.claimed_by_other(me, now)]
    if not pending:
        if any(r.state == "running" or r.state == "pending" for r in runs):
            return Step("idle", why="a run is in progress")
        return Step("finish")
    ready = sorted((r for r in pending if (r.not_before or 0) <= now), key=lambda r: r.seq)
    if not ready:
        until = min(r.not_before or now for r in pending)
        return Step("wait", until=until, why=f"retry wait until {iso_local(until)}", hold_rack=True)
    if last_finished is not None and now < last_finished + pause_s:
        return Step("wait", until=last_finished + pause_s, why="pause between runs", hold_rack=True)
    run = ready[0]
    run_s = run.duration_s + overhead_s
    if window is not None:
        start = window.start_for(local(now), run_s).timestamp()
        if start > now:
            return Step("wait", until=start, why=f"outside the window {window.text()} (opens "
                        f"{iso_local(start, 'minutes')})")
    clash = first_clash(now, run_s, busy)
    if clash is not None:
        # Somebody else's rack time: let go of the rack (they will take it) until it ends.
        why = f"the rack is {clash.text()}" if clash.start <= now else \
            f"a run of about {round(run_s)} s would run into the rack's reservation: {clash.text()}"
        return Step("wait", until=clash.end, why=why, hold_rack=False)
    return Step("run", seq=run.seq)


def first_clash(start: float, run_s: float, busy: Sequence[Busy]) -> Busy | None:
    """The earliest reservation that [start, start + run_s) overlaps (pure)."""
    hits = [b for b in busy if b.start < start + run_s and b.end > start]
    return min(hits, key=lambda b: b.start) if hits else None


def fits_between(start: float, busy: Sequence[Busy], overhead_s: float) -> Callable[[float], bool]:
    """For a claim: whether a run of `duration_s` (plus the overhead) started now clears every reservation."""
    return lambda duration_s: first_clash(start, duration_s + overhead_s, busy) is None
