"""Closing a campaign run's attempt from its run record, and who drives campaigns (split out of
scheduler.py; no behaviour changed).

When a controller died, a claim ran out or a campaign is cancelled with nobody running it, the
attempt of a run left `running` is closed from what its record says (`reconcile`,
`settle_for_cancel`): a final record is the attempt's result (a completed run is never repeated),
an aborted or missing one puts the run back in the queue. With a shared store (the lab database)
every closed attempt's manifest and summary are uploaded (`upload_record`). `SchedulerLock` and
`scheduler_owner` say who runs campaigns on this controller (`ctl campaign status` reads them
without importing the scheduler and the runner).
"""
import contextlib
import json
import time
from pathlib import Path
from typing import Callable, Sequence

from controller.campaign.boundary import (UntrustedRow, inventory_roots, local_record_dir, record_roots,
                                          trusted_path)
from controller.campaign.policy import classify, decide
from controller.campaign.store import AttemptRow, CampaignRow, CampaignStore, RunRow
from controller.errors import CtlError, RackBusy, RecordError
from controller.inventory import load_inventory
from controller.labdb import whoami
from controller.lock import FileLock
from controller.rack.lease import hold_rack
from controller.results.records import load_manifest
from controller.run.recovery import interrupted_runs, recover
from controller.settings import state_dir

Log = Callable[[str], None]


class SchedulerLock(FileLock):
    """One scheduler (daemon or foreground resume) per state dir, or per state dir and rack
    for a scheduler bound to one rack (see controller.lock)."""

    def __init__(self, purpose: str, rack: str | None = None):
        super().__init__("campaign-scheduler" + (f"-{rack}" if rack else ""), purpose)


def scheduler_owner(rack: str | None = None) -> dict | None:
    """Who runs campaigns now (on rack `rack`, or on any rack): None when nobody does (a dead
    holder does not count). Schedulers of this state dir only."""
    if rack is not None:
        return SchedulerLock("status", rack).owner() or SchedulerLock("status").owner()
    for f in sorted((state_dir() / "locks").glob("campaign-scheduler*.lock")):
        o = FileLock(f.name.removesuffix(".lock"), "status").owner()
        if o:
            return o
    return None


def read_outcome(store: CampaignStore, a: AttemptRow, roots: Sequence[Path] | None = None
                 ) -> tuple[str, str | None] | None:
    """(status, last error) of an attempt's record: its own file when this controller can read
    it (from a shared store: only under this controller's runs dirs, `roots`), else the copy
    uploaded to a shared store; None when neither exists."""
    d = local_record_dir(a.record_dir, shared=store.shared, roots=roots)
    rec = record_outcome(d) if d is not None else None
    if rec is not None:
        return rec
    up = store.record(a.run_id)
    if up is None:
        return None
    errs = up["manifest"].get("errors") or []
    return str(up["status"]), (errs[-1].get("error") if errs else None)


def upload_record(store: CampaignStore, a: AttemptRow, log: Callable[[str], None],
                  roots: Sequence[Path] | None = None) -> None:
    """Copy an attempt's manifest and summary into a shared store (the lab database), so a
    report on any controller has every rack's results. Best effort: the file stays the truth.
    Only a record under this controller's runs dirs (`roots`) is read: a row naming another
    directory never makes this controller upload a file of its choice."""
    if not store.shared:
        return
    d = local_record_dir(a.record_dir, shared=True, roots=roots)
    if d is None:
        log(f"record {a.run_id} not uploaded: its directory {a.record_dir} is not under this controller's runs dir")
        return
    try:
        manifest = load_manifest(d)
    except RecordError:
        return
    summary = None
    with contextlib.suppress(OSError, ValueError):
        summary = json.loads((d / "summary.json").read_text())
    try:
        store.put_record(run_id=a.run_id, num=a.campaign, seq=a.seq, attempt=a.attempt, rack=a.rack,
                         controller=a.controller, record_dir=d, status=str(manifest.get("status")),
                         manifest=manifest, summary=summary)
    except CtlError as exc:
        log(f"record {a.run_id} not uploaded to the store: {exc.one_line()}")


def scheduler_id(rack: str | None) -> str:
    """The claim holder: user@host:pid (and the rack it drives)."""
    me = whoami()
    return f"{me['user']}@{me['host']}:{me['pid']}" + (f"/{rack}" if rack else "")


def record_outcome(record_dir: Path) -> tuple[str, str | None] | None:
    """(status, last error) of a run record, or None when there is no readable record."""
    try:
        m = load_manifest(record_dir)
    except RecordError:
        return None
    errs = m.get("errors") or []
    return str(m.get("status")), (errs[-1].get("error") if errs else None)


def reconcile(store: CampaignStore, rows: Sequence[RunRow], say: Callable[[str], None],
              roots: Sequence[Path] | None = None) -> None:
    """Close the attempts of runs left `running` by a dead controller, from their records.
    Call with the rack lock held and after recovery (so an interrupted record is `aborted`)."""
    for r in rows:
        c = store.campaign(r.campaign)
        att = [a for a in store.attempts(c.num) if a.seq == r.seq and a.attempt == r.attempts]
        if not att:
            continue
        a = att[0]
        rec = read_outcome(store, a, roots)
        error: str | None
        if rec is None:
            status, error = "aborted", "controller died before the run record was written (rack untouched)"
        else:
            status, error = rec
            if status == "running":  # recovery did not claim it (another rack?): never assume success
                status, error = "aborted", "record still marked running after recovery"
        klass = classify(status, None, error)
        what = f"run {r.seq} ({', '.join(f'{k}={v}' for k, v in r.varied.items())}, rep {r.repetition})"
        d = decide(klass, failures_before=r.failures, interruptions_before=r.interruptions,
                   policy=c.spec().retry, now=time.time(), what=what, error=error,
                   cancelled=c.state == "cancelled")
        if store.finish_attempt(c.num, r.seq, a.attempt, status=status, exit_code=None, error=error, klass=klass,
                                decision=d):
            upload_record(store, a, say, roots)
            say(f"campaign #{c.num}: run {r.seq} attempt {a.attempt} was interrupted with the controller: record "
                f"{Path(a.record_dir).name} is {status} -> {d.action}")


def r_label(r: RunRow) -> str:
    return " ".join(f"{k}={v}" for k, v in r.varied.items()) or "fixed parameters"


async def settle_for_cancel(store: CampaignStore, c: CampaignRow, log: Log) -> bool:
    """`cancel` with nobody running the campaign: restore the rack from an interrupted run and
    close its attempt now. False when the rack is busy (its holder will do it), or when the
    campaign runs on several racks (their schedulers, or an expired claim, settle it)."""
    if c.multi_rack:
        return False
    where = f"lab database row campaigns #{c.num}"
    try:
        inv_path = trusted_path(c.inventory_path, "inventory_path", inventory_roots(), shared=store.shared, where=where)
        root = trusted_path(c.runs_root, "runs_root", record_roots(), shared=store.shared, where=where)
    except UntrustedRow as exc:   # another controller's campaign, or a planted path: not settled here
        log(f"campaign #{c.num} not settled here: {exc.one_line()}")
        return False
    inv = load_inventory(inv_path)
    try:
        with hold_rack(inv, f"ctl campaign cancel #{c.num}"):
            for d in interrupted_runs(root, inv):
                await recover(inv, d, log)
            reconcile(store, store.running_runs(inv.name), log, record_roots())
    except RackBusy:
        return False
    except CtlError as exc:  # the rack is down or unreachable: the next scheduler of the rack settles it
        log(f"rack {inv.name} not settled now: {exc.one_line()}")
        return False
    return True
