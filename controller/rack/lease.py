"""Rack leases: whoever drives a rack holds its lease for exactly as long as that controller
is alive and connected, whichever machine it runs on.

Two places a lease can live, picked by configuration, not by the caller:

- **the lab database** (`$CTL_DATABASE_URL`): a PostgreSQL session advisory lock per rack,
  held by a connection of the controller's own. PostgreSQL drops it when that session ends:
  the process exits or is killed -9 (the socket closes), or the network is lost (TCP
  keepalives, about a minute). Its key is (lease class, the rack's id in the database's
  `racks` table): ids are allocated by the database, one per rack name, so no two racks and
  no other lock of ctl share a key (`controller.labdb.keys`). A row in `rack_leases` says who
  holds it (the database login, machine, pid, since, what it runs) and is refreshed every few
  seconds.
- **the rack itself**: a lock on the rack's lease host -- of the inventory's hosts that run
  Linux or FreeBSD and are reached over SSH, the one whose name sorts first (not the first in
  the file: two copies of an inventory listing hosts in another order still agree) -- held by
  a long-running remote command started with `Session.spawn` over the controller's own SSH
  connection: `flock` (Linux) or `lockf` (FreeBSD) around `cat`, which ends when its stdin
  closes, i.e. when the connection does (process death, kill -9, a lost network once sshd's
  ClientAlive checks give up). A file next to the lock names the holder and the PID of the
  holding process, so a reader can tell a live holder from a stale note. The lease directory
  must be a directory of the SSH account, not a symlink, not writable by group or others, and
  the lock and holder files regular files of that account (else: refused, one line).

Without a database the host lease is the lease. With one, a controller takes the database
lease AND the host lease, in that order (`make_leases`): a controller that does not use the
database (not configured, or misconfigured) still meets the host lease, and is refused with
the holder named, and a controller using the database is refused while one without holds the
host lease. Two controllers using the database meet at the database lease first, so nobody
waits holding one lease for the other.

The machine-wide `controller.lock.RackLock` stays the fast path on one controller: it is
taken first, then the leases. `hold_rack` does all, waits for them when asked (`--wait`),
and names the holder when it gives up (exit 3).
"""
from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import math
import socket
import threading
import time
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Coroutine, Iterator, Protocol

from controller.commands import Command
from controller.errors import CtlError, RackBusy, SSHError
from controller.inventory import Inventory, Role
from controller.labdb import DatabaseError, connect, database_url, first_line, redact, whoami
from controller.labdb.keys import LEGACY_CLASS, lease_key, rack_id
from controller.labdb.migrations import migrate
from controller.lock import RackLock, pid_alive
from controller.ssh import CommandLog, HostTarget, SSHRemoteProcess, SSHSession, targets
from controller.textsafe import shown
from controller.units import parse_duration

HEARTBEAT_S = 5.0
WAIT_POLL_S = 2.0
DEAD_HOLDER_GRACE_S = 30.0


def iso_time(t: float | None) -> str:
    """An epoch time as ISO 8601 local time with its zone, to the second ('?' when unknown)."""
    if t is None or not math.isfinite(t):
        return "?"
    try:
        return dt.datetime.fromtimestamp(t).astimezone().isoformat(timespec="seconds")
    except (OverflowError, OSError, ValueError):
        return "?"


@dataclass(frozen=True)
class Holder:
    """Who holds a rack's lease (as far as it is known: `alive` False means a stale note)."""

    user: str
    host: str
    pid: int | None
    purpose: str
    since: float | None
    where: str
    alive: bool = True

    def text(self) -> str:
        """One line; every value came from outside (a database row, a file on the lease host): escaped."""
        return (f"{shown(self.user, 64)} on {shown(self.host, 128)} (pid {self.pid if self.pid is not None else '?'}, "
                f"{shown(self.purpose, 200)}, since {iso_time(self.since)}; lease {self.where})")

    def to_json(self) -> dict:
        return dict(self.__dict__)


def _holder_from(info: dict, where: str, alive: bool = True) -> Holder:
    """A holder as a lease file on the host recorded it (anybody who can log in there could have
    written it): only well-typed values are kept."""
    pid, since = info.get("pid"), info.get("since")
    return Holder(str(info.get("user", "?"))[:64], str(info.get("host", "?"))[:128],
                  pid if isinstance(pid, int) and not isinstance(pid, bool) and 0 < pid < 2**31 else None,
                  str(info.get("purpose", "?"))[:200],
                  float(since) if isinstance(since, (int, float)) and not isinstance(since, bool)
                  and math.isfinite(since) else None, where, alive)


class Lease(Protocol):
    """A rack lease back-end: `try_acquire` returns None when it got the lease, else the holder."""

    where: str
    lost: str | None

    def try_acquire(self) -> Holder | None: ...
    def release(self) -> None: ...
    def holder(self) -> Holder | None: ...


# ==== the lab database: a session advisory lock =====================================================

def legacy_key(rack: str) -> tuple[int, int]:
    """The key ctl used before schema 4 (a CRC of the name): only to notice a holder still on an old ctl."""
    return LEGACY_CLASS, zlib.crc32(rack.encode()) & 0x7FFFFFFF


class DatabaseLease:
    """`pg_try_advisory_lock(lease class, rack id)` on a connection of its own, kept for the
    life of the lease; a daemon thread refreshes the holder row (and notices a lost session)."""

    def __init__(self, url: str, rack: str, purpose: str):
        self.url = url
        self.rack = rack
        self.purpose = purpose
        self.where = f"in the lab database {redact(url)}"
        self.key: tuple[int, int] | None = None
        self.lost: str | None = None
        self._conn: Any = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _open(self, purpose: str) -> Any:
        conn = connect(self.url, purpose)
        try:
            migrate(conn)
            self.key = lease_key(rack_id(conn, self.rack))
        except BaseException:
            conn.close()
            raise
        return conn

    def try_acquire(self) -> Holder | None:
        conn = self._open(f"rack lease {self.rack}")
        try:
            got = conn.execute("SELECT pg_try_advisory_lock(%s, %s) AS ok", self.key).fetchone()["ok"]
            if got:
                # A holder still on a ctl from before schema 4 holds the old key (named in its row).
                old = conn.execute(
                    "SELECT EXISTS (SELECT 1 FROM rack_leases r JOIN pg_locks l ON l.pid = r.backend_pid "
                    "WHERE r.rack = %s AND l.locktype = 'advisory' AND l.classid = %s AND l.objid = %s "
                    "AND l.objsubid = 2 AND l.granted) AS held", (self.rack, *legacy_key(self.rack))).fetchone()
                if old["held"]:
                    conn.execute("SELECT pg_advisory_unlock(%s, %s)", self.key)
                    got = False
            if not got:
                holder = self._read(conn) or Holder("?", "?", None, "holder not recorded yet", None, self.where)
                conn.close()
                return holder
            me = whoami()
            # holder_user and backend_pid are the database's (a trigger): the login, this session.
            conn.execute(
                "INSERT INTO rack_leases (rack, holder_user, holder_host, holder_pid, backend_pid, purpose, since, "
                "heartbeat) VALUES (%s, session_user, %s, %s, pg_backend_pid(), %s, %s, %s) ON CONFLICT (rack) DO "
                "UPDATE SET holder_user=EXCLUDED.holder_user, holder_host=EXCLUDED.holder_host, "
                "holder_pid=EXCLUDED.holder_pid, backend_pid=EXCLUDED.backend_pid, purpose=EXCLUDED.purpose, "
                "since=EXCLUDED.since, heartbeat=EXCLUDED.heartbeat",
                (self.rack, me["host"], me["pid"], self.purpose, time.time(), time.time()))
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        self._thread = threading.Thread(target=self._beat, name=f"lease-{self.rack}", daemon=True)
        self._thread.start()
        return None

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                self._conn.execute("UPDATE rack_leases SET heartbeat=%s WHERE rack=%s AND backend_pid=pg_backend_pid()",
                                   (time.time(), self.rack))
            except Exception as exc:  # the session is gone: so is the lock
                self.lost = f"lost the lab database session holding the lease: {first_line(exc)}"
                return

    def _read(self, conn: Any) -> Holder | None:
        row = conn.execute(
            "SELECT r.*, EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype='advisory' AND l.objsubid=2 AND l.granted "
            "AND l.pid=r.backend_pid AND ((l.classid=%s AND l.objid=%s) OR (l.classid=%s AND l.objid=%s))) AS alive "
            "FROM rack_leases r WHERE r.rack=%s", (*self.key, *legacy_key(self.rack), self.rack)).fetchone()
        if row is None:
            return None
        since = row["since"] if isinstance(row["since"], float) and math.isfinite(row["since"]) else None
        return Holder(str(row["holder_user"]), str(row["holder_host"]), row["holder_pid"], str(row["purpose"]), since,
                      self.where, bool(row["alive"]))

    def holder(self) -> Holder | None:
        conn = self._open(f"rack status {self.rack}")
        try:
            h = self._read(conn)
            if h is None or h.alive:
                return h
            # A row whose session is gone: is anybody holding the lock at all (a holder between its
            # lock and its row)?
            held = conn.execute("SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype='advisory' AND classid=%s AND "
                                "objid=%s AND objsubid=2 AND granted) AS held", self.key).fetchone()["held"]
            return h if not held else Holder("?", "?", None, "holder not recorded yet", None, self.where)
        finally:
            conn.close()

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(HEARTBEAT_S + 5)
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.execute("DELETE FROM rack_leases WHERE rack=%s AND backend_pid=pg_backend_pid()",
                                   (self.rack,))
                self._conn.execute("SELECT pg_advisory_unlock(%s, %s)", self.key)
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = None


# ==== the rack's lease host: a lock held by a remote process ==========================================

# The lock program per host OS (data, not branches): exit 75 (EX_TEMPFAIL) when someone holds it.
LOCKERS: dict[str, tuple[str, ...]] = {
    "linux": ("flock", "-n", "-E", "75"),        # util-linux
    "freebsd": ("lockf", "-k", "-s", "-t", "0"),  # base system
}

# Shell functions every lease/book script starts with: the lease directory must be a real
# directory of the SSH account that group and others cannot write to (so nobody else can put a
# FIFO, a symlink or a file of theirs in it, between a check and an open), and a file in it a
# regular file of the account, not a symlink. POSIX test and find only (Linux and FreeBSD).
SAFE_DIR = r'''unsafe() { echo "ctl-unsafe $*"; exit 3; }
check_dir() {
  if [ -L "$1" ]; then unsafe "lease directory $1 is a symlink"; fi
  if [ ! -d "$1" ]; then unsafe "lease directory $1 is not a directory"; fi
  if [ ! -O "$1" ]; then unsafe "lease directory $1 is not owned by the account ctl logs in as"; fi
  if [ -n "$(find "$1" -prune \( -perm -0020 -o -perm -0002 \) -print)" ]; then
    unsafe "lease directory $1 is writable by group or others (chmod go-w it)"; fi
}
check_file() {
  if [ -L "$1" ]; then unsafe "$1 is a symlink"; fi
  if [ -e "$1" ] && [ ! -f "$1" ]; then unsafe "$1 is not a regular file"; fi
  if [ -e "$1" ] && [ ! -O "$1" ]; then unsafe "$1 is not owned by the account ctl logs in as"; fi
}
lease_dir() {
  d=$1; [ -n "$d" ] || d="$HOME/.ctl-lease"
  case $d in /*) ;; *) d="./$d" ;; esac
}
'''

# Constant scripts; every value arrives as a positional argument ("$@"). The lease directory is
# the account's own (created 0700, checked as above); the holding process is `cat`, exec'd by the
# locked shell, so the recorded PID is the process that ends when the controller's connection does.
_HOLD = SAFE_DIR + r'''lease_dir "$1"; f=$2; info=$3; shift 3
if [ ! -d "$d" ] && [ ! -L "$d" ]; then mkdir -p -m 700 "$d" || exit 3; fi
check_dir "$d"
cd "$d" || exit 3
check_file "$f"; check_file "$f.holder"
"$@" "$f" sh -c 'printf "%s\n%s\n" "$$" "$2" > "$1.holder" && echo ctl-lease-held && exec cat >/dev/null' \
  ctl-lease-hold "$f" "$info"
rc=$?
if [ "$rc" = 75 ]; then echo ctl-lease-busy; head -c 4096 "$f.holder" 2>/dev/null; echo; echo ctl-lease-end; fi
exit "$rc"'''
_READ = SAFE_DIR + r'''lease_dir "$1"; f=$2
if [ ! -e "$d" ] && [ ! -L "$d" ]; then echo ctl-lease-none; exit 0; fi
check_dir "$d"
check_file "$d/$f.holder"
if [ ! -f "$d/$f.holder" ]; then echo ctl-lease-none; exit 0; fi
{ read -r pid; read -r info; } < "$d/$f.holder"
case $pid in ''|*[!0-9]*) pid= ;; esac
if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then echo ctl-lease-alive; else echo ctl-lease-stale; fi
printf '%s\n' "$info"'''


def unsafe_reason(line: str) -> str | None:
    """What a lease/book script's `unsafe` said (None: it said something else)."""
    return line.removeprefix("ctl-unsafe ").strip() if line.startswith("ctl-unsafe ") else None


@dataclass(frozen=True)
class LeasePlace:
    """Where a rack keeps its host lease (and, without a database, its reservations): a host, its
    OS, a directory."""

    target: HostTarget
    os: str
    directory: str        # "" = the account's $HOME/.ctl-lease
    rack: str

    @property
    def lock_name(self) -> str:
        return f"{self.rack}.lock"

    def describe(self) -> str:
        return f"on host {self.target.name} ({(self.directory or '~/.ctl-lease')}/{self.lock_name})"


def lease_place(inv: Inventory) -> LeasePlace:
    """The rack's lease host: of the hosts reachable over SSH that can hold a lock (Linux or
    FreeBSD, not a switch), the one whose name sorts first -- never "the first in the file", so
    two copies of an inventory that list the hosts in another order agree. A virtual rack's
    hosts share this machine's filesystem: its lease goes in its own runtime dir."""
    by_name = {t.name: t for t in targets(inv)}
    able = sorted(name for name, host in inv.hosts.items()
                  if name in by_name and host.role is not Role.SWITCH and host.os in LOCKERS)
    if not able:
        raise CtlError(f"rack {inv.name}: no Linux or FreeBSD host reachable over SSH to hold the rack lease")
    directory = str(inv.virtual.runtime_dir / "lease") if inv.virtual is not None else ""
    return LeasePlace(by_name[able[0]], inv.hosts[able[0]].os, directory, inv.name)


class LoopThread:
    """An event loop of its own in a daemon thread: a lease's SSH connection must live (answer
    keepalives, notice loss) across the caller's own `asyncio.run` calls."""

    def __init__(self, name: str):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, Any], timeout: float = 60) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        if not self.thread.is_alive():
            self.loop.close()


async def run_on_place(place: LeasePlace, argv: tuple[str, ...], *, stdin: str | None = None,
                       timeout: float = 30) -> tuple[int | None, str, str]:
    """One short command on the lease host over a connection of its own: (exit, stdout, stderr)."""
    session = SSHSession(place.target, CommandLog())
    try:
        await session.connect()
        return await _short(session, argv, timeout, stdin)
    finally:
        await session.close()


async def _short(session: SSHSession, argv: tuple[str, ...], timeout: float, stdin: str | None = None
                 ) -> tuple[int | None, str, str]:
    """One short command on the lease host over an open session: (exit, stdout, stderr)."""
    r = await session.run(Command(argv, timeout=timeout, check=False, stdin=stdin, note="rack lease"))
    return r.exit_status, r.stdout, r.stderr


class HostLease:
    """The lock on the rack's first host, held by a remote `cat` for the life of our SSH connection."""

    def __init__(self, inv: Inventory, purpose: str):
        self.place = lease_place(inv)
        self.purpose = purpose
        self.where = self.place.describe()
        self.lost: str | None = None
        self._loop: LoopThread | None = None
        self._session: SSHSession | None = None
        self._proc: SSHRemoteProcess | None = None
        self._watch: Any = None
        self._releasing = False
        self._early: Any = None           # a connection opened by preconnect(): its future
        self._early_task: Any = None      # ... and its task in the lease's loop

    def preconnect(self) -> None:
        """Start opening the SSH connection to the lease host now, in the lease's own loop, and
        return at once: `ctl run` does it once the inventory is read, before it imports the
        scenario and the rest of what a run needs, so the connection is ready when the rack lock
        is taken (abandon() gives it up when the input is refused). Only a connection: the lease
        itself (the remote `cat`) is taken by try_acquire, under the rack lock as always. A
        connection that fails (e.g. a virtual rack not up yet) is dropped there and opened again."""
        if self._loop is not None or self._early is not None:
            return
        self._loop = LoopThread(f"lease-{self.place.rack}")
        self._early = asyncio.run_coroutine_threadsafe(self._connect(), self._loop.loop)

    async def _connect(self) -> SSHSession:
        self._early_task = asyncio.current_task()
        session = SSHSession(self.place.target, CommandLog())
        try:
            await session.connect()
        except BaseException:
            await session.close()
            raise
        return session

    async def _early_session(self) -> SSHSession | None:
        """The connection preconnect() opened, if it is usable (taken once)."""
        early, self._early = self._early, None
        if early is None:
            return None
        try:
            session = await asyncio.wrap_future(early)
        except Exception:
            return None
        conn = session._conn
        if conn is None or conn.is_closed():
            await session.close()
            return None
        return session

    def _argv(self, info: dict) -> tuple[str, ...]:
        return ("sh", "-c", _HOLD, "ctl-lease", self.place.directory, self.place.lock_name, json.dumps(info),
                *LOCKERS[self.place.os])

    def try_acquire(self) -> Holder | None:
        me = whoami()
        info = {**me, "purpose": self.purpose, "since": time.time()}
        loop, self._loop = self._loop or LoopThread(f"lease-{self.place.rack}"), None
        try:
            holder = loop.run(self._acquire(info))
        except BaseException:
            loop.run(self._close(), 30)
            loop.stop()
            raise
        if holder is not None:
            loop.stop()
            return holder
        self._loop = loop
        return None

    async def _acquire(self, info: dict) -> Holder | None:
        self._session = await self._early_session()
        if self._session is None:
            self._session = SSHSession(self.place.target, CommandLog())
            await self._session.connect()
        proc = await self._session.spawn(self._argv(info), note="rack lease", stdin_open=True)
        first = await proc.readline(30)
        if first == "ctl-lease-held":
            self._proc = proc
            self._watch = asyncio.ensure_future(self._watch_proc(proc))
            return None
        rest: list[str] = []
        if first == "ctl-lease-busy":
            while True:
                line = await proc.readline(10)
                if line in ("ctl-lease-end", ""):
                    break
                rest.append(line)
        await proc.wait(10)
        await self._close()
        if first != "ctl-lease-busy":
            raise CtlError(f"rack {self.place.rack}: cannot take the lease {self.where}: "
                           + shown(unsafe_reason(first) or first or "no answer", 300))
        info_now = _parse_info(rest[1] if len(rest) > 1 else "")
        return _holder_from(info_now, self.where) if info_now else \
            Holder("?", "?", None, "holder not recorded yet", None, self.where)

    async def _watch_proc(self, proc: SSHRemoteProcess) -> None:
        await proc.wait(None)
        if not self._releasing:
            self.lost = f"the lease process on {self.place.target.name} ended (connection lost?)"

    async def _close(self) -> None:
        if self._early is not None:                     # preconnect()ed, never used
            session = await self._early_session()
            if session is not None:
                await session.close()
        if self._proc is not None:
            self._proc.close_stdin()           # `cat` sees EOF: the lock is released on the host
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._proc.wait(10), 12)
            if self._watch is not None:
                self._watch.cancel()
            self._proc = None
        if self._session is not None:
            with contextlib.suppress(Exception):
                await self._session.close()
            self._session = None

    def abandon(self) -> None:
        """Give up what preconnect() started (`ctl run` refused its input meanwhile): a connection
        still opening is cancelled and its own clean-up awaited, never the host (an unreachable one
        would hold the refusal up to its connect timeout); one already open is closed. Nothing was
        taken on the host either way."""
        if self._loop is not None and self._early is not None:
            with contextlib.suppress(Exception):
                self._loop.run(self._cancel_early(), 30)
        self.release()

    async def _cancel_early(self) -> None:
        task = self._early_task
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait({task})
            self._early = None          # cancelled: nothing of it is left to close

    def release(self) -> None:
        self._releasing = True
        if self._loop is not None:
            with contextlib.suppress(Exception):
                self._loop.run(self._close(), 30)
            self._loop.stop()
            self._loop = None

    def run(self, place: LeasePlace, argv: tuple[str, ...], *, timeout: float = 30) -> tuple[int | None, str, str] | None:
        """One short command on the lease host over the held lease's own connection: (exit, stdout,
        stderr); None when this lease is not held here or lives at another place (the caller then
        opens a connection of its own). Saves a second SSH connection to the same host before a run
        (its reservation check)."""
        session, loop = self._session, self._loop
        if session is None or loop is None or self._proc is None or self.lost or place != self.place:
            return None
        return loop.run(_short(session, argv, timeout), timeout + 5)

    def holder(self) -> Holder | None:
        code, out, err = asyncio.run(run_on_place(
            self.place, ("sh", "-c", _READ, "ctl-lease-read", self.place.directory, self.place.lock_name)))
        lines = out.splitlines()
        if code != 0 or not lines:
            why = unsafe_reason(lines[0]) if lines else None
            raise CtlError(f"rack {self.place.rack}: cannot read the lease {self.where}: "
                           + shown(why or err.strip() or f"exit {code}", 300))
        if lines[0] == "ctl-lease-none":
            return None
        info = _parse_info(lines[1] if len(lines) > 1 else "")
        return _holder_from(info, self.where, alive=lines[0] == "ctl-lease-alive")


def _parse_info(text: str) -> dict:
    try:
        o = json.loads(text)
    except ValueError:
        return {}
    return o if isinstance(o, dict) else {}


def make_leases(inv: Inventory, purpose: str) -> list[Lease]:
    """The leases a controller takes for this rack, in order: with a lab database its lease AND
    the host lease (the cross-check: see the module docstring), else the host lease."""
    url = database_url()
    if url is not None:
        return [DatabaseLease(url, inv.name, purpose), HostLease(inv, purpose)]
    return [HostLease(inv, purpose)]


def make_lease(inv: Inventory, purpose: str) -> Lease:
    """The rack's main lease: the lab database's when there is one, else the host lease."""
    return make_leases(inv, purpose)[0]


# ==== holding a rack: the machine-wide lock, then the lease ===========================================

@dataclass
class RackHold:
    rack: str
    lock: RackLock
    lease: Lease                       # the main one (the database's, else the host's)
    leases: tuple[Lease, ...] = ()     # every lease held (the main one first)

    @property
    def lost(self) -> str | None:
        return next((lease.lost for lease in (self.leases or (self.lease,)) if lease.lost), None)


def parse_wait(text: str | None) -> float:
    """`--wait` (no value: as long as it takes) / `--wait 10m` -> seconds; absent: 0 (do not wait)."""
    if text is None:
        return 0.0
    if text == "forever":
        return float("inf")
    return parse_duration(text, what="--wait", allow_zero=True)


def _take(leases: list[Lease], taken: list[Lease], rack: str) -> Holder | None:
    """Take the leases not taken yet, in order; stop at the first one somebody holds (its holder)."""
    for lease in leases[len(taken):]:
        try:
            holder = lease.try_acquire()
        except (SSHError, DatabaseError) as exc:
            raise CtlError(f"rack {rack}: cannot take the rack lease {lease.where}: {exc.one_line()}") from None
        if holder is not None:
            return holder
        taken.append(lease)
    return None


@contextlib.contextmanager
def hold_rack(inv: Inventory, purpose: str, *, wait_s: float = 0.0, say: Callable[[str], None] | None = None,
              prepare: Callable[[], Any] | None = None, leases: list[Lease] | None = None) -> Iterator[RackHold]:
    """Take the machine-wide rack lock, run `prepare` (e.g. bring a virtual rack up: the lease
    lives on its hosts), then the rack's leases (`make_leases`, or `leases`); release all in
    reverse order. Waits up to `wait_s` seconds (inf: as long as it takes) for each, telling
    `say` once who it waits for; then raises RackBusy (exit 3) naming the holder. Leases taken
    while waiting for a later one are kept (nobody can hold a later one and wait for an earlier)."""
    t0 = time.monotonic()
    deadline = t0 + wait_s
    say = say or (lambda m: None)
    lock = RackLock(inv.name, purpose)
    told = ""
    taken: list[Lease] = []
    wanted: list[Lease] = list(leases or ())
    try:
        while True:
            try:
                lock.acquire()
                break
            except RackBusy as exc:
                # Asked to wait: say whom for at once, even if the wait is over before the next look
                # (on a loaded machine the first look can take longer than a short --wait).
                if deadline > t0 and told != exc.one_line():
                    told = exc.one_line()
                    say(f"waiting for the rack: {told}")
                if time.monotonic() + WAIT_POLL_S > deadline:
                    raise
                time.sleep(WAIT_POLL_S)
    except BaseException:
        _discard(wanted, taken)
        raise
    try:
        if prepare is not None:
            prepare()
        wanted = wanted or make_leases(inv, purpose)
        while True:
            holder = _take(wanted, taken, inv.name)
            if holder is None:
                break
            msg = f"rack {inv.name} is leased by {holder.text()}"
            if holder.host == socket.gethostname() and holder.pid and not pid_alive(holder.pid):
                # Its holder died on this machine: the lease goes with its session or SSH connection
                # within moments (sshd's ClientAlive checks at worst): wait for that, do not refuse.
                deadline = max(deadline, time.monotonic() + DEAD_HOLDER_GRACE_S)
                msg = f"rack {inv.name}: the lease of dead pid {holder.pid} is being released"
            if deadline > t0 and told != msg:
                told = msg
                say(f"waiting for the rack: {msg}")
            if time.monotonic() + WAIT_POLL_S > deadline:
                raise RackBusy(msg + ("" if wait_s else " (--wait waits for it)"))
            time.sleep(WAIT_POLL_S)
        yield RackHold(inv.name, lock, taken[0], tuple(taken))
    finally:
        for lease in reversed(taken):
            lease.release()
        _discard(wanted, taken)
        lock.release()


def _discard(wanted: list[Lease], taken: list[Lease]) -> None:
    """Close what preconnect() opened for a lease that was never taken."""
    for lease in wanted:
        if lease not in taken and isinstance(lease, HostLease):
            lease.release()
