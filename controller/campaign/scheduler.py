"""Campaigns: many runs of one scenario, unattended, crash-safe and resumable.

A campaign file (YAML, strict) names a scenario, fixed parameters, a sweep (cross product
or an explicit list of cases), repetitions, an order (randomized with a recorded seed, or
sequential), a pause between runs, an optional time window and a retry policy per failure
class. `expand` turns it into planned runs; the durable store (SQLite in the state dir,
WAL) holds the queue, every run's state and every attempt; the scheduler executes them
one at a time through `runner.execute`, holding the rack lock.

Functional core (pure, unit-tested without a rack): the file model, expansion, ordering,
time windows, failure classification, retry decisions, the next scheduler step, ETA.
Imperative shell: the store, the health check, the scheduler loop.

Crash safety rests on the order of durable writes:
1. a run is marked `running` together with its attempt and run id (one transaction)
   BEFORE `execute()` creates the record or touches the rack;
2. the runner's record is final (`completed`/`failed`/`invalid`/`aborted`) before the
   attempt is closed in the store (one transaction with the retry decision).
If the controller dies anywhere, the next scheduler takes the rack lock, lets
`controller.run.recovery` restore the rack from any record still `running` (and mark it
`aborted`), then reconciles every `running` run of the store with its record: a final
record is taken as the attempt's result (a completed run is never repeated); an aborted
or missing one puts the run back in the queue.
"""
import asyncio
import contextlib
import signal
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from controller.campaign.health import health_check, plan_hosts
from controller.campaign.plan import campaign_run_id, case_argv
from controller.campaign.policy import Step, classify, decide, next_step
from controller.campaign.progress import Progress, ProgressTelemetry, progress_of
from controller.campaign.store import CampaignRow, CampaignStore, RunRow, campaign_dir
from controller.campaign.timing import learned_overhead
from controller.errors import CtlError, RackBusy, RecordError
from controller.inventory import load_inventory
from controller.lab.ops import ensure_lab
from controller.lock import FileLock, RackLock
from controller.results.records import load_manifest
from controller.run.prepare import prepare_run
from controller.run.recovery import interrupted_runs, recover
from controller.run.runner import execute
from controller.telemetry.influx import influx_target, push_pending


class SchedulerLock(FileLock):
    """One scheduler (daemon or foreground resume) per state dir (see controller.lock)."""

    def __init__(self, purpose: str):
        super().__init__("campaign-scheduler", purpose)


def scheduler_owner() -> dict | None:
    """Who runs campaigns now (None: nobody; a dead holder does not count)."""
    return SchedulerLock("status").owner()


def record_outcome(record_dir: Path) -> tuple[str, str | None] | None:
    """(status, last error) of a run record, or None when there is no readable record."""
    try:
        m = load_manifest(record_dir)
    except RecordError:
        return None
    errs = m.get("errors") or []
    return str(m.get("status")), (errs[-1].get("error") if errs else None)


def reconcile(store: CampaignStore, rows: Sequence[RunRow], say: Callable[[str], None]) -> None:
    """Close the attempts of runs left `running` by a dead controller, from their records.
    Call with the rack lock held and after recovery (so an interrupted record is `aborted`)."""
    for r in rows:
        c = store.campaign(r.campaign)
        att = [a for a in store.attempts(c.num) if a.seq == r.seq and a.attempt == r.attempts]
        if not att:
            continue
        a = att[0]
        rec = record_outcome(Path(a.record_dir))
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
        store.finish_attempt(c.num, r.seq, a.attempt, status=status, exit_code=None, error=error, klass=klass,
                             decision=d)
        say(f"campaign #{c.num}: run {r.seq} attempt {a.attempt} was interrupted with the controller: record "
            f"{Path(a.record_dir).name} is {status} -> {d.action}")


# ==== the scheduler (imperative shell) ============================================================

Log = Callable[[str], None]


@dataclass
class SchedulerOptions:
    only: set[int] | None = None       # campaign numbers this scheduler may drive (None: all)
    exit_when_idle: bool = False        # return when no campaign is queued or running
    poll_s: float = 2.0
    verbose: bool = True                # pass the runner's progress lines to `log`


class Scheduler:
    """Drives campaigns: one run at a time, rack lock held, health check before each run."""

    def __init__(self, store: CampaignStore, log: Log, opts: SchedulerOptions,
                 on_progress: Callable[[CampaignRow, Progress], None] | None = None):
        self.store = store
        self.log = log
        self.opts = opts
        self.on_progress = on_progress or (lambda c, p: None)
        self.stopping = False
        self.stop_reason: str | None = None
        self._wake = asyncio.Event()

    # ---- signals -------------------------------------------------------------------------------

    def _install_signals(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self._on_signal, sig)

    def _on_signal(self, sig: int) -> None:
        self.stopping = True
        self.stop_reason = signal.Signals(sig).name
        self._wake.set()

    async def _sleep(self, seconds: float) -> None:
        self._wake.clear()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._wake.wait(), max(0.0, seconds))

    # ---- the outer loop ------------------------------------------------------------------------

    async def serve(self) -> int:
        self._install_signals()
        while not self.stopping:
            active = [c for c in self.store.campaigns(("queued", "running"))
                      if self.opts.only is None or c.num in self.opts.only]
            if not active:
                if self.opts.exit_when_idle:
                    return 0
                await self._sleep(self.opts.poll_s)
                continue
            chosen = None
            wake = time.time() + self.opts.poll_s
            for c in active:
                try:
                    step = self._step(c)
                except Exception as exc:  # bad data in this campaign: it pauses, the others go on
                    self._pause_on_error(c, exc, "planning its next step")
                    continue
                if step.kind in ("run", "finish") or (step.kind == "wait" and step.hold_rack) or \
                        (step.kind == "idle" and any(r.state == "running" for r in self.store.runs(c.num))):
                    chosen = c
                    break
                if step.kind == "wait" and step.until is not None:
                    wake = min(wake, step.until)
                    if c.activity != step.why:
                        self.store.set_activity(c.num, step.why)
                        self.log(f"campaign #{c.num}: {step.why}")
            if chosen is None:
                await self._sleep(wake - time.time())
                continue
            try:
                busy = await self.drive(chosen)
            except Exception as exc:  # never exit (and be restarted into the same crash) over one campaign
                self._pause_on_error(chosen, exc, "running it")
                busy = False
            if busy:
                await self._sleep(self.opts.poll_s)
        return 0

    def _pause_on_error(self, c: CampaignRow, exc: Exception, doing: str) -> None:
        """Pause `c` with the reason; the traceback goes to the campaign's scheduler-errors.log."""
        what = exc.one_line() if isinstance(exc, CtlError) else f"{type(exc).__name__}: {exc}"
        reason = f"the scheduler failed {doing}: {' '.join(what.split())[:300]}"
        d = campaign_dir(c.id)
        d.mkdir(parents=True, exist_ok=True)
        with open(d / "scheduler-errors.log", "a") as f:
            f.write(f"--- {time.strftime('%Y-%m-%dT%H:%M:%S%z')} {reason}\n")
            f.write("".join(traceback.format_exception(exc)))
        if self.store.pause_if_active(c.num, reason):
            self.log(f"campaign #{c.num} PAUSED: {reason} (traceback in {d / 'scheduler-errors.log'})")

    def _step(self, c: CampaignRow, now: float | None = None) -> Step:
        spec = c.spec()
        overhead = learned_overhead(self.store.overhead_samples(c.scenario, c.inventory_name), spec.overhead_s)
        return next_step(c.state, c.not_before, [r.view() for r in self.store.runs(c.num)],
                         time.time() if now is None else now, window=spec.window_obj(), pause_s=spec.pause_s,
                         last_finished=self.store.last_finished(c.num), overhead_s=overhead)

    # ---- one campaign while it can run ---------------------------------------------------------

    async def drive(self, c: CampaignRow) -> bool:
        """Run `c` until it finishes, pauses, is cancelled or must wait without the rack.
        Returns True when the rack was busy (someone else holds its lock)."""
        try:
            inv = load_inventory(c.inventory_path)
        except CtlError as exc:
            self.store.pause_if_active(c.num, f"inventory not loadable: {exc.one_line()}")
            return False
        lock = RackLock(inv.name, f"ctl campaign #{c.num} {c.id}")
        try:
            lock.acquire()
        except RackBusy as exc:
            msg = f"waiting for the rack: {exc.one_line()}"
            if c.activity != msg:
                self.store.set_activity(c.num, msg)
                self.log(f"campaign #{c.num}: {msg}")
            return True
        telemetry: ProgressTelemetry | None = None
        try:
            if lock.broke_stale:
                self.log(f"took over the rack lock of a dead controller (pid {lock.broke_stale.get('pid')})")
                self.store.event(c.num, "lock", f"took over the rack lock of dead pid {lock.broke_stale.get('pid')}")
            if not await self._settle(c, inv):
                return False
            target = influx_target(inv, self.log)
            telemetry = ProgressTelemetry(campaign_dir(c.id), c.id, target)
            await self._emit(telemetry, c.num)
            while not self.stopping:
                c = self.store.campaign(c.num)
                step = self._step(c)
                if step.kind == "idle":
                    return False
                if step.kind == "finish":
                    c = self.store.finish_campaign(c.num)
                    self.log(f"campaign #{c.num} {c.id}: done" + (f" ({c.reason})" if c.reason else ""))
                    await self._emit(telemetry, c.num)
                    return False
                if step.kind == "wait":
                    if c.activity != step.why:
                        self.store.set_activity(c.num, step.why)
                    if not step.hold_rack:
                        self.log(f"campaign #{c.num}: {step.why}")
                        return False
                    await self._sleep(min(self.opts.poll_s, (step.until or 0) - time.time()))
                    continue
                assert step.seq is not None
                await self._run_one(c, inv, step.seq, target, telemetry)
            return False
        finally:
            if telemetry is not None:
                telemetry.close()
            lock.release()

    async def _settle(self, c: CampaignRow, inv: Any) -> bool:
        """With the rack lock held: bring a virtual rack up, restore the rack from any record a
        dead controller left `running`, reconcile the store, send spooled points. False: paused."""
        runs_root = Path(c.runs_root)
        try:
            if await asyncio.to_thread(ensure_lab, inv):
                self.log(f"virtual rack {inv.name} was down: brought it up")
        except CtlError as exc:
            self.store.pause_if_active(c.num, f"the rack could not be brought up: {exc.one_line()}")
            return False
        problems: list[str] = []
        stale = self.store.running_runs(inv.name)
        # Every run record directory a run on this rack may have used, not only this campaign's.
        roots = dict.fromkeys([runs_root] + [Path(self.store.campaign(r.campaign).runs_root) for r in stale])
        for root in roots:
            for d in interrupted_runs(root, inv):
                problems += await recover(inv, d, self.log)
        reconcile(self.store, stale, self.log)
        if problems:
            self.store.pause_if_active(c.num, "the rack could not be restored after an interrupted run: "
                                       + "; ".join(problems))
            self.log(f"campaign #{c.num} paused: rack not restored: {'; '.join(problems)}")
            return False
        try:
            await asyncio.to_thread(push_pending, inv, runs_root, self.log)
        except Exception as exc:  # best effort: points stay spooled in their records
            self.log(f"spooled points not sent: {type(exc).__name__}")
        return True

    async def _emit(self, telemetry: ProgressTelemetry, num: int) -> None:
        c = self.store.campaign(num)
        p = progress_of(self.store, c)
        telemetry.emit(p)
        self.on_progress(c, p)
        await asyncio.to_thread(telemetry.push)

    async def _run_one(self, c: CampaignRow, inv: Any, seq: int, target: Any, telemetry: ProgressTelemetry) -> None:
        r = self.store.run(c.num, seq)
        spec = c.spec()
        total = len(self.store.runs(c.num))
        what = f"run {seq}/{total} ({r_label(r)}, rep {r.repetition})"
        try:
            scenario, params, given, plan = prepare_run(c.scenario, case_argv(r.args), inv)
        except CtlError as exc:
            # The inventory changed since submit: this run cannot be planned. Pause, never guess.
            self.store.pause_if_active(c.num, f"{what} no longer valid: {exc.one_line()}")
            self.log(f"campaign #{c.num} paused: {what} no longer valid: {exc.one_line()}")
            return
        self.store.set_activity(c.num, f"health check before {what}")
        hosts = plan_hosts(plan, inv)
        cdir = campaign_dir(c.id)
        cdir.mkdir(parents=True, exist_ok=True)
        health = await health_check(inv, hosts, spec.health, cdir / "health-commands.jsonl")
        hid = self.store.add_health(c.num, health.ok, health.reasons, health.details)
        if not health.ok:
            reason = "health check failed before " + what + ": " + "; ".join(health.reasons)
            if self.store.pause_if_active(c.num, reason):
                self.log(f"campaign #{c.num} PAUSED: {reason}")
            await self._emit(telemetry, c.num)
            return
        if self.stopping:
            return
        runs_root = Path(c.runs_root)
        rid = campaign_run_id(scenario, given, params, c.num, seq, r.repetition, r.attempts + 1)
        attempt = self.store.start_attempt(c.num, seq, rid, runs_root / rid, hid)
        if attempt is None:  # paused or cancelled while the health check ran
            return
        self.store.set_activity(c.num, f"{what}, attempt {attempt}: {rid}")
        self.log(f"campaign #{c.num}: {what}, attempt {attempt}: {rid}")
        prefix = f"[#{c.num} {seq}/{total}] "
        progress = (lambda m: self.log(prefix + m)) if self.opts.verbose else None
        task = asyncio.ensure_future(execute(scenario, params, given, inv, plan, runs_root=runs_root,
                                             campaign=c.id, influx=target, progress=progress, run_id=rid))
        user_abort = await self._watch(c.num, task)
        try:
            outcome = await task
        except Exception as exc:  # a controller bug: the runner's own clean-up has run; pause
            self.log(f"campaign #{c.num}: {what}: controller error {exc!r}")
            d = decide("error", failures_before=r.failures, interruptions_before=r.interruptions,
                       policy=spec.retry, now=time.time(), what=what, error=repr(exc))
            self.store.finish_attempt(c.num, seq, attempt, status="error", exit_code=None, error=repr(exc),
                                      klass="error", decision=d)
            await self._emit(telemetry, c.num)
            return
        finally:
            self._install_signals()  # the runner removed its handlers, and with them ours
        if outcome.exit_code > 128 and not user_abort:
            self.stopping = True
            self.stop_reason = self.stop_reason or signal.Signals(outcome.exit_code - 128).name
        now_c = self.store.campaign(c.num)
        klass = classify(outcome.status, outcome.exit_code, outcome.error, getattr(outcome, "error_type", None))
        error = outcome.error
        if user_abort and klass == "interrupted":
            # The runner reports a cancelled task as SIGINT; say who stopped it.
            how = "cancel" if now_c.state == "cancelled" else "pause --now"
            error = f"stopped by `ctl campaign {how}` ({now_c.reason or 'by user'}); rack restored by the runner"
        d = decide(klass, failures_before=r.failures, interruptions_before=r.interruptions, policy=spec.retry,
                   now=time.time(), what=what, error=error, cancelled=now_c.state == "cancelled",
                   user_abort=user_abort)
        self.store.finish_attempt(c.num, seq, attempt, status=outcome.status, exit_code=outcome.exit_code,
                                  error=error, klass=klass, decision=d, run_id=outcome.run_id,
                                  record_dir=outcome.record_dir)
        if user_abort:
            self.store.clear_abort(c.num)
        self.log(f"campaign #{c.num}: {what}: {outcome.status}" + (f" [{klass}]" if klass != "ok" else "")
                 + f" -> {d.action}" + (f" ({error})" if error else ""))
        if d.action == "pause":
            self.log(f"campaign #{c.num} PAUSED: {d.pause_reason}")
        await self._emit(telemetry, c.num)

    async def _watch(self, num: int, task: "asyncio.Future[Any]") -> bool:
        """While a run executes: a `cancel` or `pause --now` from another ctl aborts it (the
        runner restores the rack). Returns True when the run was aborted that way."""
        while not task.done():
            await asyncio.wait({task}, timeout=self.opts.poll_s)
            if task.done():
                break
            c = self.store.campaign(num)
            if c.abort_requested or c.state == "cancelled":
                self.log(f"campaign #{num}: {c.state} ({c.reason or 'by user'}): stopping the current run")
                task.cancel()
                with contextlib.suppress(BaseException):
                    await asyncio.wait({task})
                return True
        return False


def r_label(r: RunRow) -> str:
    return " ".join(f"{k}={v}" for k, v in r.varied.items()) or "fixed parameters"


async def settle_for_cancel(store: CampaignStore, c: CampaignRow, log: Log) -> bool:
    """`cancel` with nobody running the campaign: restore the rack from an interrupted run and
    close its attempt now. False when the rack is busy (its holder will do it)."""
    inv = load_inventory(c.inventory_path)
    lock = RackLock(inv.name, f"ctl campaign cancel #{c.num}")
    try:
        lock.acquire()
    except RackBusy:
        return False
    try:
        for d in interrupted_runs(Path(c.runs_root), inv):
            await recover(inv, d, log)
        reconcile(store, store.running_runs(inv.name), log)
    finally:
        lock.release()
    return True
