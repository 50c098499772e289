"""Campaigns: many runs of one scenario, unattended, crash-safe and resumable.

A campaign file (YAML, strict) names a scenario, fixed parameters, a sweep (cross product
or an explicit list of cases), repetitions, an order (randomized with a recorded seed, or
sequential), a pause between runs, an optional time window and a retry policy per failure
class. `expand` turns it into planned runs; the durable store (SQLite in the state dir,
WAL) holds the queue, every run's state and every attempt; the scheduler executes them
one at a time through `runner.execute`, holding the rack (its machine-wide lock and its
lease, `controller.rack.lease`).

Several racks, one queue: a scheduler bound to a rack (`ctl campaign daemon --inventory
RACK`, one per rack, on any controller machine) drives the campaigns that name its rack (or
its rack group) and *claims* each run before it touches anything (`CampaignStore.claim_next`,
FOR UPDATE SKIP LOCKED on PostgreSQL), with a lease it renews while the run goes on. A
scheduler killed -9 stops renewing: once the lease has run out, any other scheduler takes the
run back into the queue (from its record when that is readable, else as interrupted), and
the next scheduler that drives the dead one's rack restores that rack from the record.

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

With a shared store (the lab database) each closed attempt's manifest and summary are
uploaded to it, so the report can be written on any controller.
"""
import asyncio
import contextlib
import signal
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from controller.campaign.attempts import r_label, read_outcome, reconcile, scheduler_id, upload_record
from controller.campaign.figures import LateFigures
from controller.campaign.boundary import (UntrustedRow, inventory_roots, is_under, record_roots,
                                          trusted_path)
from controller.campaign.health import health_check, plan_hosts
from controller.campaign.plan import campaign_run_id, case_argv
from controller.campaign.policy import Busy, Step, classify, decide, fits_between, next_step
from controller.campaign.progress import Progress, ProgressTelemetry, progress_of
from controller.campaign.store import CampaignRow, CampaignStore, RunRow, campaign_dir
from controller.campaign.timing import learned_overhead
from controller.errors import CtlError, RackBusy
from controller.inventory import Inventory, load_inventory
from controller.lab.ops import ensure_lab
from controller.lab.rack import is_up
from controller.rack.lease import hold_rack
from controller.rack.reservations import book_for, others
from controller.run.prepare import prepare_run
from controller.run.recovery import interrupted_runs, recover
from controller.run.runner import execute
from controller.settings import runs_dir
from controller.ssh import CommandLog, SSHPool, targets
from controller.telemetry.influx import influx_target, push_pending
from controller.textsafe import shown
from controller.timefmt import iso_local


BOOK_RETRY_S = 10.0       # a rack's reservations that could not be read are tried again after this


class ReservationsUnreadable(CtlError):
    """A rack's reservation book cannot be read: no run of it starts until it can (fail closed)."""


# ==== the scheduler (imperative shell) ============================================================

Log = Callable[[str], None]


@dataclass
class SchedulerOptions:
    only: set[int] | None = None       # campaign numbers this scheduler may drive (None: all)
    exit_when_idle: bool = False        # return when no campaign is queued or running
    poll_s: float = 2.0
    verbose: bool = True                # pass the runner's progress lines to `log`
    rack: Inventory | None = None       # bound to this rack (None: each campaign on its own inventory)
    lease_s: float = 60.0               # a claim's lease, renewed every poll while the run goes on
    runs_dir: Path | None = None        # where a rack-bound scheduler writes multi-rack records
    busy_cache_s: float = 20.0          # how long a rack's reservation book is reused


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
        self.holder = scheduler_id(opts.rack.name if opts.rack is not None else None)
        self._said: set[str] = set()
        self._books: dict[str, tuple[float, Any, list[Any], str]] = {}   # rack: (read at, book, rows, error)
        self._pools: dict[str, tuple[list[Any], SSHPool]] = {}   # rack: (its hosts' targets, pool kept between runs)
        self.figures = LateFigures(log)     # finished runs' figures going into their records

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
        self.figures.release()      # no run starts now: held figures need not wait for one
        self._wake.clear()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._wake.wait(), max(0.0, seconds))

    # ---- the outer loop ------------------------------------------------------------------------

    async def serve(self) -> int:
        try:
            return await self._serve()
        finally:     # a run's figures go into its record while the next run goes on: all in before the end
            await self.figures.wait()

    async def _serve(self) -> int:
        self._install_signals()
        while not self.stopping:
            self._take_back_expired()
            active = [c for c in self.store.campaigns(("queued", "running"))
                      if (self.opts.only is None or c.num in self.opts.only) and self._mine(c)]
            self._pause_refused()
            if not active:
                if self.opts.exit_when_idle:
                    return 0
                await self._sleep(self.opts.poll_s)
                continue
            chosen = None
            wake = time.time() + self.opts.poll_s
            for c in active:
                if self._untrusted(c):
                    continue
                try:
                    step = self._step(c, busy=await self._busy(c))
                except ReservationsUnreadable as exc:
                    if self._rack_down(c):   # drive() brings it up (rack lock held), then reads the book
                        chosen = c
                        break
                    self._wait_for_book(c, exc)
                    wake = min(wake, time.time() + BOOK_RETRY_S)
                    continue
                except Exception as exc:  # bad data in this campaign: it pauses, the others go on
                    self._pause_on_error(c, exc, "planning its next step")
                    continue
                left_running = any(r.campaign == c.num for r in self.store.running_runs(self._rack_name(c)))
                if step.kind in ("run", "finish") or (step.kind == "wait" and step.hold_rack) or \
                        (step.kind == "idle" and left_running):
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

    # ---- which campaigns, which rack ------------------------------------------------------------

    def _say_once(self, key: str, msg: str) -> None:
        if key not in self._said:
            self._said.add(key)
            self.log(msg)

    def _mine(self, c: CampaignRow) -> bool:
        """Whether this scheduler drives `c`: a rack-bound one the campaigns naming its rack (or
        group); an unbound one every one-rack campaign, each on its own inventory."""
        rack = self.opts.rack
        if rack is None:
            if c.multi_rack:
                self._say_once(f"multi{c.num}", f"campaign #{c.num} runs on several racks: it is driven by one "
                               "`ctl campaign daemon --inventory RACK` per rack, not by this scheduler")
                return False
            return True
        return c.runs_on(rack.name, rack.group)

    def _rack_name(self, c: CampaignRow) -> str:
        return self.opts.rack.name if self.opts.rack is not None else c.inventory_name

    def _runs_root(self, c: CampaignRow) -> Path:
        """A one-rack campaign's records go where it was submitted to; a multi-rack campaign's to
        this controller's runs dir (each controller writes its own; uploads gather them). From a
        shared store, the submitted directory is used only when it lies under this controller's
        runs dirs (a row of the lab database never chooses where this controller writes): else
        this controller's runs dir, said once in the log."""
        own = (self.opts.runs_dir or runs_dir()).resolve()
        if self.opts.rack is not None and c.multi_rack:
            return own
        try:
            return trusted_path(c.runs_root, "runs_root", self._record_roots(), shared=self.store.shared,
                                where=f"lab database row campaigns #{c.num}")
        except UntrustedRow:
            self._say_once(f"runs{c.num}", f"campaign #{c.num}: its runs dir {c.runs_root} is not under this "
                                           f"controller's; its records on this controller go to {own}")
            return own

    def _record_roots(self) -> list[Path]:
        return record_roots([self.opts.runs_dir])

    def _inventory_file(self, c: CampaignRow) -> Path:
        """The inventory an unbound scheduler loads for `c`: from a shared store, only a file in the
        directory of this controller's configured inventory or among the shipped ones (a member
        cannot make this controller load a file of their choosing); else UntrustedRow."""
        return trusted_path(c.inventory_path, "inventory_path", inventory_roots(), shared=self.store.shared,
                            where=f"lab database row campaigns #{c.num}")

    async def _busy(self, c: CampaignRow, inv: Inventory | None = None) -> list[Busy]:
        """Other people's reservations of this campaign's rack (its owner's own do not bind it),
        read from the rack's book at most every `busy_cache_s`. Fails closed: while the book cannot
        be read, ReservationsUnreadable (no run starts; read again after BOOK_RETRY_S)."""
        name = self._rack_name(c)
        t, book, rows, error = self._books.get(name, (0.0, None, [], ""))
        if time.time() - t > (self.opts.busy_cache_s if not error else min(self.opts.busy_cache_s, BOOK_RETRY_S)):
            try:
                inv = inv or self.opts.rack or load_inventory(self._inventory_file(c))
            except CtlError:      # drive() cannot load it either and pauses the campaign: nothing starts
                return []
            try:
                book = book_for(inv)
                rows, error = await asyncio.to_thread(book.list), ""
            except CtlError as exc:
                error = exc.one_line()
            self._books[name] = (time.time(), book, rows, error)
        if error:
            raise ReservationsUnreadable(f"the reservations of rack {name} cannot be read ({error}): no run starts "
                                         f"until they can (tried again every {BOOK_RETRY_S:.0f} s)")
        return [Busy(r.start, r.end, r.who(False), shown(r.note, 200))
                for r in others(rows, book.owner_of_campaign(c.owner))]

    def _rack_down(self, c: CampaignRow) -> bool:
        """`c`'s rack is a virtual rack that is down: its book (on its lease host) cannot be read
        until drive() brings it up, and nobody can be using it."""
        try:
            inv = self.opts.rack or load_inventory(self._inventory_file(c))
            return inv.kind == "virtual" and not is_up(inv)
        except CtlError:
            return False

    def _wait_for_book(self, c: CampaignRow, exc: CtlError) -> None:
        """The campaign waits (it is not paused: it goes on by itself once the book is readable)."""
        why = f"waiting: {exc.one_line()}"
        if c.activity != why:
            self.store.set_activity(c.num, why)
            self.log(f"campaign #{c.num}: {why}")

    def _take_back_expired(self) -> None:
        """Runs whose scheduler stopped renewing its claim (killed, lost the database): close the
        attempt from its record (a completed one is never repeated) or as interrupted, and put
        the run back in the queue. Its rack is restored by the next scheduler that drives it."""
        now = time.time()
        for r in self.store.expired_running(now):
            if r.claimed_by == self.holder:
                continue
            c = self.store.campaign(r.campaign)
            att = [a for a in self.store.attempts(c.num) if a.seq == r.seq and a.attempt == r.attempts]
            if not att:
                continue
            a = att[0]
            rec = read_outcome(self.store, a, self._record_roots())
            status, error = rec if rec is not None else (None, None)
            if status in (None, "running"):
                status = "aborted"
                error = (f"controller {r.claimed_by} died before restoring (its claim ran out at "
                         f"{iso_local(r.claim_until or now)}); rack {r.claim_rack} "
                         "is restored by the next scheduler that drives it")
            klass = classify(status, None, error)
            what = f"run {r.seq} ({r_label(r)}, rep {r.repetition})"
            d = decide(klass, failures_before=r.failures, interruptions_before=r.interruptions, policy=c.spec().retry,
                       now=now, what=what, error=error, cancelled=c.state == "cancelled")
            if self.store.finish_attempt(c.num, r.seq, a.attempt, status=status, exit_code=None, error=error,
                                         klass=klass, decision=d, holder=r.claimed_by, expired_before=now):
                self.store.event(c.num, "lease", f"took back run {r.seq} from {r.claimed_by} (rack {r.claim_rack}): "
                                 f"its claim ran out; record {Path(a.record_dir).name} is {status} -> {d.action}")
                self.log(f"campaign #{c.num}: took back run {r.seq} from {r.claimed_by} on rack {r.claim_rack} "
                         f"(its claim ran out): {status} -> {d.action}")

    def _pause_refused(self) -> None:
        """A campaign whose row (or one of its runs' rows) fails the store's checks
        (controller.campaign.boundary) is left out of every listing: pause it with the reason, once,
        so it stops where it is and `ctl campaign status` names it; the others go on."""
        for num, why in list(self.store.refused.items()):
            if self.opts.only is not None and num not in self.opts.only:
                continue
            if f"refused{num}" in self._said:
                continue
            self._say_once(f"refused{num}", f"campaign #{num} skipped: {why}")
            with contextlib.suppress(CtlError):
                if self.store.pause_if_active(num, why):
                    self.log(f"campaign #{num} PAUSED: {why}")

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

    def _overhead(self, c: CampaignRow) -> float:
        return learned_overhead(self.store.overhead_samples(c.scenario, self._rack_name(c)), c.spec().overhead_s)

    def _step(self, c: CampaignRow, now: float | None = None, busy: Sequence[Busy] = ()) -> Step:
        spec = c.spec()
        return next_step(c.state, c.not_before, [r.view() for r in self.store.runs(c.num)],
                         time.time() if now is None else now, window=spec.window_obj(), pause_s=spec.pause_s,
                         last_finished=self.store.last_finished(c.num, self._rack_name(c) if c.multi_rack else None),
                         overhead_s=self._overhead(c), me=self.holder, busy=busy)

    # ---- one campaign while it can run ---------------------------------------------------------

    def _untrusted(self, c: CampaignRow) -> bool:
        """An unbound scheduler pauses `c` (True) when its row names an inventory this controller
        does not use (see `_inventory_file`): checked before anything reads the inventory (its
        reservations included). Nothing is loaded; the campaign waits for a person (`ctl
        campaign status` shows the reason). A scheduler bound to a rack uses its own inventory."""
        if self.opts.rack is not None:
            return False
        try:
            self._inventory_file(c)
        except UntrustedRow as exc:
            if self.store.pause_if_active(c.num, exc.one_line()):
                self.log(f"campaign #{c.num} PAUSED: {exc.one_line()}")
            return True
        return False

    def _inventory(self, c: CampaignRow) -> Inventory | None:
        """The rack `c` runs on (this scheduler's, or the campaign's inventory file); None when the
        campaign was paused (`_untrusted`) or its inventory does not load."""
        if self._untrusted(c):
            return None
        if self.opts.rack is not None:
            return self.opts.rack
        try:
            return load_inventory(self._inventory_file(c))
        except CtlError as exc:
            self.store.pause_if_active(c.num, f"inventory not loadable: {exc.one_line()}")
            return None

    async def drive(self, c: CampaignRow) -> bool:
        """Run `c` until it finishes, pauses, is cancelled or must wait without the rack.
        Returns True when the rack was busy (someone else holds its lock or its lease)."""
        inv = self._inventory(c)
        if inv is None:
            return False
        brought_up: list[bool] = []
        with contextlib.ExitStack() as stack:
            try:
                hold = stack.enter_context(hold_rack(inv, f"ctl campaign #{c.num} {c.id}",
                                                     prepare=lambda: brought_up.append(ensure_lab(inv))))
            except RackBusy as exc:
                msg = f"waiting for the rack: {exc.one_line()}"
                if c.activity != msg:
                    self.store.set_activity(c.num, msg)
                    self.log(f"campaign #{c.num}: {msg}")
                return True
            except CtlError as exc:
                what = "brought up" if not brought_up else "leased"
                self.store.pause_if_active(c.num, f"the rack could not be {what}: {exc.one_line()}")
                self.log(f"campaign #{c.num} paused: the rack could not be {what}: {exc.one_line()}")
                return False
            if brought_up and brought_up[0]:
                self.log(f"virtual rack {inv.name} was down: brought it up")
                self._books.pop(inv.name, None)     # its book could not be read while it was down
            if hold.lock.broke_stale:
                pid = hold.lock.broke_stale.get("pid")
                self.log(f"took over the rack lock of a dead controller (pid {pid})")
                self.store.event(c.num, "lock", f"took over the rack lock of dead pid {pid}")
            if not await self._settle(c, inv):
                return False
            target = influx_target(inv, self.log)
            telemetry = stack.enter_context(contextlib.closing(ProgressTelemetry(campaign_dir(c.id), c.id, target)))
            await self._emit(telemetry, c.num)
            try:
                while not self.stopping:
                    if hold.lost:
                        self.log(f"campaign #{c.num}: lost the lease of rack {inv.name}: {hold.lost}")
                        return False
                    self._take_back_expired()
                    c = self.store.campaign(c.num)
                    try:
                        busy = await self._busy(c, inv)
                    except ReservationsUnreadable as exc:   # let go of the rack; serve() reads the book again
                        self._wait_for_book(c, exc)
                        return True
                    step = self._step(c, busy=busy)
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
                    if not await self._run_one(c, inv, target, telemetry):
                        await self._sleep(min(0.5, self.opts.poll_s))  # another rack took it first
                return False
            finally:
                self.figures.release()            # no next run on this rack now
                await self._drop_pool(inv.name)   # the rack is let go: so are its connections

    async def _settle(self, c: CampaignRow, inv: Inventory) -> bool:
        """With the rack held: restore the rack from any record a dead controller left
        `running`, reconcile the store, send spooled points. False: paused."""
        runs_root = self._runs_root(c)
        problems: list[str] = []
        stale = self.store.running_runs(inv.name)
        # Every run record directory a run on this rack may have used, not only this campaign's;
        # from a shared store only those under this controller's runs dirs (recovery acts on what
        # a record says: a record elsewhere is another controller's, or planted).
        mine = self._record_roots()
        named: list[str] = []
        for r in stale:
            with contextlib.suppress(UntrustedRow):
                named.append(self.store.campaign(r.campaign).runs_root)
                named += [str(Path(a.record_dir).parent) for a in self.store.attempts(r.campaign) if a.seq == r.seq]
        roots = [runs_root]
        for text in dict.fromkeys(named):
            if not self.store.shared or is_under(Path(text), mine):
                roots.append(Path(text))
            else:
                self._say_once(f"root{text}", f"rack {inv.name}: records under {text} (named by the lab database) "
                                              "are not this controller's: not recovered from here")
        for root in dict.fromkeys(roots):
            for d in interrupted_runs(root, inv):
                problems += await recover(inv, d, self.log)
        reconcile(self.store, stale, self.log, mine)
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

    async def _run_one(self, c: CampaignRow, inv: Inventory, target: Any, telemetry: ProgressTelemetry) -> bool:
        """Claim the next run for this rack and run it. False: nothing was claimed."""
        lease = self.opts.lease_s
        r = self.store.claim_next(c.num, rack=inv.name, holder=self.holder, lease_s=lease,
                                  fits=fits_between(time.time(), await self._busy(c, inv), self._overhead(c)))
        if r is None:
            return False
        seq = r.seq
        total = len(self.store.runs(c.num))
        what = f"run {seq}/{total} ({r_label(r)}, rep {r.repetition})" + (f" on {inv.name}" if c.multi_rack else "")
        try:
            scenario, params, given, plan = prepare_run(c.scenario, case_argv(r.args), inv)
        except CtlError as exc:
            # The inventory changed since submit: this run cannot be planned. Pause, never guess.
            self.store.release_claim(c.num, seq, self.holder)
            self.store.pause_if_active(c.num, f"{what} no longer valid: {exc.one_line()}")
            self.log(f"campaign #{c.num} paused: {what} no longer valid: {exc.one_line()}")
            return True
        self.store.set_activity(c.num, f"health check before {what}")
        hosts = plan_hosts(plan, inv)
        # The health check's connections are the run's: checked, then used, not opened twice.
        lender = await self._pool_for(inv, hosts)
        keep = False
        try:
            done = await self._check_and_run(c, inv, target, telemetry, r, what, total, scenario, params, given,
                                              plan, hosts, lender)
            keep = not self.stopping
            return done
        finally:
            if not keep:
                await self._drop_pool(inv.name)

    async def _pool_for(self, inv: Inventory, hosts: list[str]) -> SSHPool:
        """The connections a run's health check opens and the run then uses, kept for the next run
        on this rack while the scheduler holds it and the hosts are reached the same way: consecutive
        runs of a campaign do not connect again (issue 28). The health check still runs before every
        run on them; one lost since is connected again (SSHPool.connect_all)."""
        want = targets(inv, hosts)
        kept = self._pools.get(inv.name)
        if kept is not None and kept[0] == want:
            return kept[1]
        await self._drop_pool(inv.name)
        pool = SSHPool(inv, CommandLog(None), hosts)
        self._pools[inv.name] = (want, pool)
        return pool

    async def _drop_pool(self, rack: str) -> None:
        kept = self._pools.pop(rack, None)
        if kept is not None:
            await kept[1].close()

    async def _check_and_run(self, c: CampaignRow, inv: Inventory, target: Any, telemetry: ProgressTelemetry,
                             r: RunRow, what: str, total: int, scenario: Any, params: dict, given: dict, plan: Any,
                             hosts: list[str], lender: SSHPool) -> bool:
        spec = c.spec()
        seq = r.seq
        lease = self.opts.lease_s
        cdir = campaign_dir(c.id)
        cdir.mkdir(parents=True, exist_ok=True)
        health = await health_check(inv, hosts, spec.health, cdir / "health-commands.jsonl", pool=lender)
        hid = self.store.add_health(c.num, health.ok, health.reasons, health.details)
        if not health.ok:
            self.store.release_claim(c.num, seq, self.holder)
            reason = "health check failed before " + what + ": " + "; ".join(health.reasons)
            if self.store.pause_if_active(c.num, reason):
                self.log(f"campaign #{c.num} PAUSED: {reason}")
            await self._emit(telemetry, c.num)
            return True
        if self.stopping or not self.store.renew_claim(c.num, seq, self.holder, lease):
            self.store.release_claim(c.num, seq, self.holder)
            return True
        runs_root = self._runs_root(c)
        rid = campaign_run_id(scenario, given, params, c.num, seq, r.repetition, r.attempts + 1)
        attempt = self.store.start_attempt(c.num, seq, rid, runs_root / rid, hid, holder=self.holder, rack=inv.name,
                                           controller=self.holder)
        if attempt is None:  # paused or cancelled while the health check ran
            self.store.release_claim(c.num, seq, self.holder)
            return True
        self.store.set_activity(c.num, f"{what}, attempt {attempt}: {rid}")
        self.log(f"campaign #{c.num}: {what}, attempt {attempt}: {rid}")
        prefix = f"[#{c.num} {seq}/{total}] "
        progress = (lambda m: self.log(prefix + m)) if self.opts.verbose else None
        task = asyncio.ensure_future(execute(scenario, params, given, inv, plan, runs_root=runs_root,
                                             campaign=c.id, influx=target, progress=progress, run_id=rid,
                                             connections=lender, figures_later=True, figures_from_record=True,
                                             traffic_started=self.figures.release))
        user_abort, lost = await self._watch(c.num, seq, task)
        try:
            outcome = await task
        except Exception as exc:  # a controller bug: the runner's own clean-up has run; pause
            self.log(f"campaign #{c.num}: {what}: controller error {exc!r}")
            d = decide("error", failures_before=r.failures, interruptions_before=r.interruptions,
                       policy=spec.retry, now=time.time(), what=what, error=repr(exc))
            self.store.finish_attempt(c.num, seq, attempt, status="error", exit_code=None, error=repr(exc),
                                      klass="error", decision=d, holder=self.holder)
            await self._emit(telemetry, c.num)
            return True
        finally:
            self._install_signals()  # the runner removed its handlers, and with them ours
            self.figures.release()   # a run that ended before its traffic: the previous figures go now
        if outcome.exit_code > 128 and not user_abort and not lost:
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
        closed = self.store.finish_attempt(c.num, seq, attempt, status=outcome.status, exit_code=outcome.exit_code,
                                           error=error, klass=klass, decision=d, run_id=outcome.run_id,
                                           record_dir=outcome.record_dir, holder=self.holder)
        if user_abort:
            self.store.clear_abort(c.num)
        a = next((x for x in self.store.attempts(c.num) if x.seq == seq and x.attempt == attempt), None)
        if a is not None:
            upload_record(self.store, a, self.log, self._record_roots())
        # The record is finished (restored, verified, summarized) and the attempt closed: the run is
        # done. Its figures go into the record once the next run's traffic has started, or when no run
        # follows at once (controller/campaign/figures.py); a shared store gets the record again then.
        self.figures.add(outcome, (lambda: upload_record(self.store, a, self.log, self._record_roots()))
                         if a is not None and self.store.shared else lambda: None, hold=True)
        if not closed:
            self.log(f"campaign #{c.num}: {what}: {outcome.status}, but the run was taken back meanwhile "
                     "(this scheduler's claim ran out): the result is kept in its record, not counted")
            await self._emit(telemetry, c.num)
            return True
        self.log(f"campaign #{c.num}: {what}: {outcome.status}" + (f" [{klass}]" if klass != "ok" else "")
                 + f" -> {d.action}" + (f" ({error})" if error else ""))
        if d.action == "pause":
            self.log(f"campaign #{c.num} PAUSED: {d.pause_reason}")
        await self._emit(telemetry, c.num)
        return True

    async def _watch(self, num: int, seq: int, task: "asyncio.Future[Any]") -> tuple[bool, bool]:
        """While a run executes: renew the claim's lease; a `cancel` or `pause --now` from another
        ctl aborts the run (the runner restores the rack), and so does a claim this scheduler no
        longer holds (it was stalled past its lease and another took the run back).
        Returns (aborted by the user, claim lost)."""
        while not task.done():
            await asyncio.wait({task}, timeout=self.opts.poll_s)
            if task.done():
                break
            try:
                lost = not self.store.renew_claim(num, seq, self.holder, self.opts.lease_s)
                c = self.store.campaign(num)
            except CtlError as exc:  # the store is unreachable: the run finishes and restores the rack
                self._say_once(f"store{num}", f"campaign #{num}: the store is unreachable ({exc.one_line()}): "
                                              "letting the current run finish")
                continue
            self._said.discard(f"store{num}")
            if lost or c.abort_requested or c.state == "cancelled":
                if lost:
                    self.log(f"campaign #{num}: run {seq} is no longer claimed by this scheduler (its lease ran out "
                             "and another took it back): stopping it")
                else:
                    self.log(f"campaign #{num}: {c.state} ({c.reason or 'by user'}): stopping the current run")
                task.cancel()
                with contextlib.suppress(BaseException):
                    await asyncio.wait({task})
                return not lost, lost
        return False, False
