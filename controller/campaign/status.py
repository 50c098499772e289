"""Whether a campaign is really being run: its stored state says `running` until a scheduler
changes it, so a scheduler killed with -9 (or stopped between runs) leaves a campaign that
says `running` while nothing runs it. Status shows such a campaign as interrupted, with the
dead scheduler's pid and the command that continues it, and gives it no ETA.
"""
from __future__ import annotations

from dataclasses import dataclass

from controller.campaign.attempts import SchedulerLock
from controller.lock import pid_alive

RESUME_PURPOSE = "ctl campaign resume #"     # a foreground scheduler serving one campaign (cli/campaign.py)


@dataclass(frozen=True)
class SchedulerView:
    owner: dict | None         # the live scheduler's record, None when nobody runs campaigns
    last: dict | None          # the record a dead scheduler left in the lock file (kill -9), if any


def scheduler_view(rack: str | None = None) -> SchedulerView:
    """The scheduler that would run a campaign of `rack`: one bound to that rack, else an
    unbound one (without a rack: the unbound one)."""
    locks = ([SchedulerLock("status", rack)] if rack else []) + [SchedulerLock("status")]
    for lock in locks:
        owner = lock.owner()
        if owner is not None:
            return SchedulerView(owner, None)
    for lock in locks:
        rec = lock.last_holder()
        if rec and rec.get("pid") and not pid_alive(int(rec["pid"])):
            return SchedulerView(None, rec)
    return SchedulerView(None, None)


def serves(owner: dict | None, num: int) -> bool:
    """Whether a live scheduler runs campaign `num` (a daemon runs all; `resume #K` only K)."""
    if owner is None:
        return False
    purpose = str(owner.get("purpose") or "")
    if purpose.startswith(RESUME_PURPOSE):
        return purpose[len(RESUME_PURPOSE):].strip() == str(num)
    return True


def interruption(state: str, run_in_progress: bool, num: int, view: SchedulerView) -> str | None:
    """The status text of a campaign left running by a scheduler that is gone (None: it is
    not interrupted: not active, or served, or simply queued and waiting for a scheduler)."""
    if state not in ("queued", "running") or serves(view.owner, num):
        return None
    if state != "running" and not run_in_progress:
        return None
    resume = f"`ctl campaign resume {num}`"
    if view.owner is not None:
        return (f"interrupted: the running scheduler (pid {view.owner.get('pid')}) serves only "
                f"{str(view.owner.get('purpose', '')).removeprefix('ctl campaign resume ')}; {resume}")
    if view.last is not None:
        return f"interrupted, scheduler pid {view.last.get('pid')} gone, {resume}"
    return f"interrupted, its scheduler stopped, {resume}"
