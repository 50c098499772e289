"""Reservations: a person books a rack for a stretch of time; during it, nobody else's ad-hoc
run starts (exit 3, naming who and until when) and no campaign scheduler starts a run that
would run into it (it uses the run's measured duration plus set-up overhead).

Reservations live where the rack's lease lives:
- with a lab database, in its `reservations` table (one transaction per change; two people
  booking the same slot at once are serialised by an advisory lock keyed on the rack's id,
  `controller.labdb.keys`);
- without one, in a JSON file next to the lease on the rack's lease host
  (`<lease dir>/<rack>.reservations.json`), read with `cat` and changed under `flock`/`lockf`
  by one constant script that reads the current file, gets the new one on stdin and renames
  it into place: so every controller that can reach the rack sees the same book.

Who owns a reservation, and who it binds:
- with a database, the owner is the PostgreSQL session user (the login), recorded by the
  database itself; the database refuses any change but a cancel, and a cancel by anybody but
  the owner unless they are a member of the role `ctl_admin` (ctl asks them for --force too).
  A reservation binds every login but its owner's.
- without one, the only identity is the local account (by uid, never $USER) on the machine
  that booked: the owner is `user@machine`, and binds everybody else, root on another
  controller included. The book is a file anybody with the rack's SSH account can edit: ctl
  checks ownership for --force, nothing stronger holds.

Times are checked when booked and again when read (a row another member or an older ctl wrote):
finite, within the years 2000..9999 (UTC), start before end, at most 31 days. A row that fails
is shown as MALFORMED with the reason and blocks nothing (a reservation ending at Infinity
would otherwise block the rack forever). Notes are one line of at most 200 characters without
control characters (C0, DEL, C1, line separators, bidi controls: `controller.textsafe`); every
text read from the book is printed escaped.
"""
from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import math
import time
from dataclasses import dataclass, replace
from typing import Any, Iterator, Protocol

from controller.errors import CtlError, RackBusy, UsageError
from controller.inventory import Inventory
from controller.labdb import DatabaseError, connect, database_url, first_line, redact, whoami
from controller.labdb.keys import book_key, rack_id
from controller.labdb.migrations import ADMIN_ROLE, EPOCH_MAX, EPOCH_MIN, SPAN_MAX_S, migrate
from controller.rack.lease import LOCKERS, SAFE_DIR, HostLease, LeasePlace, lease_place, run_on_place, unsafe_reason
from controller.ssh import CommandLog, SSHSession
from controller.textsafe import has_control, shown

MAX_NOTE = 200
MAX_SPAN_S = SPAN_MAX_S          # 31 days: one booking of more than a month is almost surely a typo
MAX_BOOK_BYTES = 1 << 20         # a book file larger than 1 MiB is damaged, not read


class RackReserved(RackBusy):
    """The rack is reserved by somebody else for the time asked for (exit 3)."""


def local_time(t: float, fmt: str | None = None) -> str:
    """Local time: ISO 8601 to the minute with the zone (2025-05-01T09:00+02:00), or as `fmt` says."""
    when = dt.datetime.fromtimestamp(t).astimezone()
    return when.isoformat(timespec="minutes") if fmt is None else when.strftime(fmt)


@dataclass(frozen=True)
class Reservation:
    id: int
    rack: str
    user: str
    host: str
    start: float
    end: float
    note: str = ""
    created: float = 0.0
    owner: str = ""          # who it belongs to, as compared: the database login, or user@host without one
    checked: bool = True     # False: booked before the database recorded owners (the name is the booking ctl's)
    problem: str = ""        # why the row is malformed (then it blocks nothing)

    def who(self, mark: bool = True) -> str:
        """`user@machine` (escaped); with `mark`, says when the database did not record the owner."""
        return f"{shown(self.user, 64)}@{shown(self.host, 128)}" + ("" if self.checked or not mark else " (unchecked)")

    def text(self) -> str:
        """One line, ISO 8601 with the zone; every value from the book escaped."""
        if self.problem:
            return (f"#{self.id} {shown(self.rack, 40)} MALFORMED ({self.problem}), blocks nothing: by {self.who()}"
                    + (f": {shown(self.note, MAX_NOTE)}" if self.note else ""))
        return (f"#{self.id} {shown(self.rack, 40)} {local_time(self.start)} to {local_time(self.end)} by {self.who()}"
                + (f": {shown(self.note, MAX_NOTE)}" if self.note else ""))

    def until(self) -> str:
        return local_time(self.end)

    def to_json(self) -> dict:
        d = dict(self.__dict__)
        for k in ("start", "end", "created"):     # JSON has no Infinity or NaN
            if not (isinstance(d[k], (int, float)) and math.isfinite(d[k])):
                d[k] = None
        return d

    def file_json(self) -> dict:
        """What the host book file keeps (owner, checked and problem are worked out when read)."""
        return {k: getattr(self, k) for k in ("id", "rack", "user", "host", "start", "end", "note", "created")}


def time_problem(start: Any, end: Any) -> str | None:
    """Why (start, end) is not a reservation's time, or None."""
    for name, v in (("start", start), ("end", end)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            return f"{name} is not a finite number"
        if not EPOCH_MIN <= v <= EPOCH_MAX:
            return f"{name} is outside the years 2000..9999"
    if end <= start:
        return "--to must be after --from"
    if end - start > MAX_SPAN_S:
        return "more than 31 days in one reservation"
    return None


def note_problem(note: str) -> str | None:
    try:
        note.encode("utf-8")
    except UnicodeEncodeError:
        return "not valid text"
    if len(note) > MAX_NOTE or has_control(note):
        return f"one line of at most {MAX_NOTE} printable characters"
    return None


def check_new(rack: str, start: float, end: float, note: str, now: float) -> None:
    """Bad input is refused before anything is asked of the rack or the database (exit 2)."""
    why = time_problem(start, end)
    if why:
        raise UsageError(f"rack reserve {rack}: {why}")
    if end <= now:
        raise UsageError(f"rack reserve {rack}: that time is over")
    if note_problem(note):
        raise UsageError(f"rack reserve {rack}: --note is {note_problem(note)}")


def overlapping(book: list[Reservation], start: float, end: float) -> list[Reservation]:
    """Well-formed reservations that overlap [start, end) (a malformed one overlaps nothing)."""
    return [r for r in book if not r.problem and r.start < end and r.end > start]


class Book(Protocol):
    where: str

    def me(self) -> str: ...
    def owner_of_campaign(self, owner: str | None) -> str | None: ...
    def list(self, since: float | None = None) -> list[Reservation]: ...
    def add(self, start: float, end: float, note: str) -> Reservation: ...
    def cancel(self, rid: int, *, force: bool = False) -> Reservation: ...


def _not_theirs(r: Reservation, force_hint: str) -> UsageError:
    return UsageError(f"reservation #{r.id} is {shown(r.owner, 128)}'s: only they cancel it ({force_hint})")


class DatabaseBook:
    """A rack's reservations in the lab database."""

    def __init__(self, url: str, rack: str):
        self.url = url
        self.rack = rack
        self.where = f"in the lab database {redact(url)}"
        self._me: str | None = None

    @contextlib.contextmanager
    def _conn(self, doing: str) -> Iterator[Any]:
        """A connection (migrated; `me` known); a database error becomes one line (DatabaseError)."""
        import psycopg
        conn = connect(self.url, f"reservations {self.rack}")
        try:
            migrate(conn)
            self._me = conn.execute("SELECT session_user AS me").fetchone()["me"]
            yield conn
        except psycopg.Error as exc:
            raise DatabaseError(f"lab database {redact(self.url)}: cannot {doing} the reservations of rack "
                                f"{self.rack}: {first_line(exc)}") from None
        finally:
            conn.close()

    def me(self) -> str:
        """This process's identity in the book: its database login (the session user)."""
        if self._me is None:
            with self._conn("read"):
                pass
        return str(self._me)

    @staticmethod
    def owner_of_campaign(owner: str | None) -> str | None:
        """A campaign's owner (`login@machine`, the login recorded by the database) as a book identity."""
        return owner.split("@")[0] if owner else None

    @staticmethod
    def _row(r: dict) -> Reservation:
        res = Reservation(int(r["id"]), str(r["rack"]), str(r["owner_user"]), str(r["owner_host"]), r["starts"],
                          r["ends"], str(r["note"]), r["created"], owner=str(r["owner_user"]),
                          checked=bool(r.get("owner_checked", False)))
        why = time_problem(res.start, res.end)
        return replace(res, problem=why) if why else res

    def list(self, since: float | None = None) -> list[Reservation]:
        with self._conn("read") as conn:
            rows = conn.execute("SELECT * FROM reservations WHERE rack=%s AND cancelled IS NULL AND ends>%s "
                                "ORDER BY starts, id", (self.rack, time.time() if since is None else since)).fetchall()
        return [self._row(r) for r in rows]

    def add(self, start: float, end: float, note: str) -> Reservation:
        me = whoami()
        with self._conn("change") as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", book_key(rack_id(conn, self.rack)))
            clash = conn.execute("SELECT * FROM reservations WHERE rack=%s AND cancelled IS NULL AND starts<%s AND "
                                 "ends>%s ORDER BY starts", (self.rack, end, start)).fetchall()
            clash = overlapping([self._row(c) for c in clash], start, end)
            if clash:
                raise RackReserved(f"rack {self.rack}: overlaps reservation {clash[0].text()}")
            # owner_user, created: the database's (a trigger), whatever a client would send
            row = conn.execute("INSERT INTO reservations (rack, owner_host, starts, ends, note) VALUES "
                               "(%s,%s,%s,%s,%s) RETURNING *", (self.rack, me["host"], start, end, note)).fetchone()
        return self._row(row)

    def cancel(self, rid: int, *, force: bool = False) -> Reservation:
        import psycopg
        with self._conn("change") as conn, conn.transaction():
            row = conn.execute("SELECT * FROM reservations WHERE id=%s AND rack=%s AND cancelled IS NULL FOR UPDATE",
                               (rid, self.rack)).fetchone()
            if row is None:
                raise UsageError(f"rack {self.rack}: no reservation #{rid}")
            r = self._row(row)
            hint = f"or --force, as a member of the database role {ADMIN_ROLE}"
            if r.owner != self._me and not force:
                raise _not_theirs(r, hint)
            try:   # the database checks who may, and records when and who
                conn.execute("UPDATE reservations SET cancelled = 0 WHERE id=%s", (rid,))
            except psycopg.errors.InsufficientPrivilege as exc:
                raise UsageError(f"reservation #{rid} is {shown(r.owner, 128)}'s: the lab database refused to cancel "
                                 f"it for {shown(self._me, 64)} ({hint}): {first_line(exc)}") from None
        return r


# Constant scripts for the book on the rack's lease host (values as positional arguments).
_READ = SAFE_DIR + r'''lease_dir "$1"; f=$2
if [ ! -e "$d" ] && [ ! -L "$d" ]; then exit 0; fi
check_dir "$d"
check_file "$d/$f"
if [ -f "$d/$f" ]; then head -c 1048577 "$d/$f"; fi'''
# Under the book's lock: print the current book (each line behind a "|"; a newline added, for a file written
# without a last one) and a marker, read the new book from stdin, write it beside the old one and rename it into
# place (an empty input changes nothing).
_UPDATE = SAFE_DIR + r'''lease_dir "$1"; f=$2; shift 2
if [ ! -d "$d" ] && [ ! -L "$d" ]; then mkdir -p -m 700 "$d" || exit 3; fi
check_dir "$d"
cd "$d" || exit 3
for x in "$f" "$f.lock" "$f.new"; do check_file "$x"; done
exec "$@" "$f.lock" sh -c '
  if [ -f "$1" ]; then { head -c 1048577 "$1"; echo; } | sed "s/^/|/"; fi; echo ctl-book-end
  rm -f "$1.new"; cat > "$1.new" || exit 3
  if [ -s "$1.new" ]; then mv -f "$1.new" "$1"; else rm -f "$1.new"; fi' ctl-book "$f"'''
# The lock waits for the other writer (a few seconds at most): flock -w / lockf -t.
_BOOK_LOCKERS: dict[str, tuple[str, ...]] = {"linux": ("flock", "-w", "20"), "freebsd": ("lockf", "-k", "-t", "20")}
_FIELDS = {"id": int, "rack": str, "user": str, "host": str, "start": float, "end": float, "note": str,
           "created": float}


def parse_entry(entry: Any) -> Reservation:
    """One entry of a host book file, as any controller (or anybody with the account) wrote it:
    a Reservation, with `problem` set when it is not a well-formed one."""
    if not isinstance(entry, dict):
        return Reservation(0, "?", "?", "?", math.nan, math.nan, problem="an entry that is not an object")
    values: dict[str, Any] = {}
    problem = ""
    for key, kind in _FIELDS.items():
        v = entry.get(key)
        ok = isinstance(v, str) if kind is str else \
            (isinstance(v, (int, float)) and not isinstance(v, bool) and (kind is float or isinstance(v, int)))
        if not ok:
            problem = problem or f"{key} is missing or not a {kind.__name__}"
            v = "?" if kind is str else (0 if kind is int else math.nan)
        values[key] = v
    if not -2**53 < values["id"] < 2**53:
        problem, values["id"] = problem or "id out of range", 0
    r = Reservation(**values, owner=f"{values['user']}@{values['host']}")
    problem = problem or time_problem(r.start, r.end) or ""
    return replace(r, problem=problem) if problem else r


class HostBook:
    """A rack's reservations in a file on its lease host (no lab database)."""

    def __init__(self, inv: Inventory, via: Any = None):
        self.place: LeasePlace = lease_place(inv)
        self.via = via          # a held HostLease: list() reads over its connection when it is at this place
        self.rack = inv.name
        self.file = f"{inv.name}.reservations.json"
        self.where = f"on host {self.place.target.name}"
        assert set(_BOOK_LOCKERS) == set(LOCKERS)

    @staticmethod
    def me() -> str:
        """This process's identity without a database: its local account (by uid) on this machine."""
        me = whoami()
        return f"{me['user']}@{me['host']}"

    @staticmethod
    def owner_of_campaign(owner: str | None) -> str | None:
        return owner or None

    def _damaged(self, why: str) -> CtlError:
        return CtlError(f"rack {self.rack}: the reservation file {self.where} is damaged ({why}); fix or remove it "
                        f"there ({self.place.directory or '~/.ctl-lease'}/{self.file})")

    def _parse(self, text: str) -> tuple[int, list[Reservation], list[Any]]:
        """(last id, entries as Reservations, entries as they were): a file that is not a book at
        all is an error (nothing can be said about the rack); a bad entry is kept and marked."""
        if len(text.encode()) > MAX_BOOK_BYTES:
            raise self._damaged("larger than 1 MiB")
        text = text.strip()
        if not text:
            return 0, [], []
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise self._damaged(f"not JSON: {shown(first_line(exc), 120)}") from None
        if not isinstance(data, dict) or not isinstance(data.get("reservations"), list):
            raise self._damaged("no list of reservations")
        raw = data["reservations"]
        rows = [parse_entry(e) for e in raw]
        last = data.get("last_id", 0)
        last = last if isinstance(last, int) and not isinstance(last, bool) and 0 <= last < 2**53 else 0
        return max([last] + [r.id for r in rows if not r.problem]), rows, raw

    def list(self, since: float | None = None) -> list[Reservation]:
        argv = ("sh", "-c", _READ, "ctl-book", self.place.directory, self.file)
        got = self.via.run(self.place, argv) if isinstance(self.via, HostLease) else None
        code, out, err = got if got is not None else asyncio.run(run_on_place(self.place, argv))
        if code != 0:
            why = unsafe_reason(out.splitlines()[0]) if out.strip() else None
            raise CtlError(f"rack {self.rack}: cannot read the reservations {self.where}: "
                           + shown(why or err.strip() or f"exit {code}", 300))
        cut = time.time() if since is None else since
        return sorted((r for r in self._parse(out)[1] if r.problem or r.end > cut),
                      key=lambda r: (r.start if not r.problem else -math.inf, r.id))

    def _update(self, change: Any) -> Any:
        """Read the book, `change(last_id, rows) -> (new last_id, new rows, result)`, write it: all
        under the book's lock on the host, so two controllers never lose each other's change.
        Malformed entries are written back as they were (they are somebody's: ctl does not drop them)."""
        return asyncio.run(self._update_async(change))

    async def _update_async(self, change: Any) -> Any:
        session = SSHSession(self.place.target, CommandLog())
        try:
            await session.connect()
            proc = await session.spawn(("sh", "-c", _UPDATE, "ctl-book", self.place.directory, self.file,
                                        *_BOOK_LOCKERS[self.place.os]), note="reservations", stdin_open=True)
            lines: list[str] = []
            while True:
                line = await proc.readline(30)
                if line == "ctl-book-end":
                    break
                if not line.startswith("|"):  # EOF: the script ended early (unsafe dir, lock timeout)
                    proc.close_stdin()
                    r = await proc.wait(10)
                    raise CtlError(f"rack {self.rack}: cannot change the reservations {self.where}: "
                                   + shown(unsafe_reason(line) or r.stderr.strip() or f"exit {r.exit_status}", 300))
                lines.append(line[1:])
            try:
                last_id, rows, raw = self._parse("\n".join(lines))
                bad = [e for e, r in zip(raw, rows) if r.problem]
                last_id, good, result = change(last_id, [r for r in rows if not r.problem])
                proc.send_line(json.dumps({"format": 1, "rack": self.rack, "last_id": last_id,
                                           "reservations": [r.file_json() for r in good] + bad}, indent=1))
            finally:
                proc.close_stdin()
            r = await proc.wait(30)
            if r.exit_status != 0:
                raise CtlError(f"rack {self.rack}: cannot change the reservations {self.where}: "
                               f"{shown(r.stderr.strip(), 300) or 'exit ' + str(r.exit_status)}")
            return result
        finally:
            await session.close()

    def add(self, start: float, end: float, note: str) -> Reservation:
        me = whoami()

        def change(last_id: int, rows: list[Reservation]) -> tuple[int, list[Reservation], Reservation]:
            live = [r for r in rows if r.end > time.time() - 7 * 86400]   # a week of history is kept
            clash = overlapping(live, start, end)
            if clash:
                raise RackReserved(f"rack {self.rack}: overlaps reservation {clash[0].text()}")
            new = Reservation(last_id + 1, self.rack, me["user"], me["host"], start, end, note, time.time(),
                              owner=f"{me['user']}@{me['host']}")
            return last_id + 1, sorted(live + [new], key=lambda r: r.start), new
        return self._update(change)

    def cancel(self, rid: int, *, force: bool = False) -> Reservation:
        me = self.me()

        def change(last_id: int, rows: list[Reservation]) -> tuple[int, list[Reservation], Reservation]:
            hit = [r for r in rows if r.id == rid]
            if not hit:
                raise UsageError(f"rack {self.rack}: no reservation #{rid}")
            if hit[0].owner != me and not force:
                raise _not_theirs(hit[0], "or --force")
            return last_id, [r for r in rows if r.id != rid], hit[0]
        return self._update(change)


def book_for(inv: Inventory, via: Any = None) -> Book:
    """The rack's reservation book where its lease lives; `via`: the rack's held lease (a host
    lease then lends its connection to read the book)."""
    url = database_url()
    return DatabaseBook(url, inv.name) if url is not None else HostBook(inv, via)


def others(book: list[Reservation], me: str | None) -> list[Reservation]:
    """The well-formed reservations that bind identity `me` (a Book's `me()`): everybody else's.
    A malformed one binds nobody."""
    return [r for r in book if not r.problem and r.owner != me]


def check_free(inv: Inventory, start: float, run_s: float, what: str, via: Any = None) -> None:
    """Refuse (exit 3) an ad-hoc `what` that would start in, or run into, somebody else's
    reservation of this rack: `start` + `run_s` (its expected duration with set-up). A book that
    cannot be read refuses it too (CtlError: nothing starts without knowing). `via`: the rack's
    held lease (see book_for)."""
    book = book_for(inv, via)
    rows = book.list(since=start)
    clash = overlapping(others(rows, book.me()), start, start + run_s)
    if not clash:
        return
    r = clash[0]
    note = f" ({shown(r.note, MAX_NOTE)})" if r.note else ""
    if r.start <= start:
        raise RackReserved(f"rack {inv.name} is reserved by {r.who(False)} until {r.until()}{note}: {what} refused "
                           f"(reservation #{r.id})")
    raise RackReserved(f"{what} (about {round(run_s)} s) would run into {r.who(False)}'s reservation of rack "
                       f"{inv.name} from {local_time(r.start)} until {r.until()}{note} (reservation #{r.id})")
