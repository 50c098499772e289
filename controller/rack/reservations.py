"""Reservations: a person books a rack for a stretch of time; during it, nobody else's ad-hoc
run starts (exit 3, naming who and until when) and no campaign scheduler starts a run that
would run into it (it uses the run's measured duration plus set-up overhead).

Reservations live where the rack's lease lives:
- with a lab database, in its `reservations` table (one transaction per change; two people
  booking the same slot at once are serialised by an advisory lock per rack);
- without one, in a JSON file next to the lease on the rack's first host
  (`<lease dir>/<rack>.reservations.json`), read with `cat` and changed under `flock`/`lockf`
  by one constant script that reads the current file, gets the new one on stdin and renames
  it into place: so every controller that can reach the rack sees the same book.

A reservation never overlaps another one of the same rack. Your own reservations do not
block you (the owner is the local user name).
"""
from __future__ import annotations

import asyncio
import json
import time
import zlib
from dataclasses import dataclass
from typing import Any, Protocol

from controller.errors import CtlError, RackBusy, UsageError
from controller.inventory import Inventory
from controller.labdb import connect, database_url, redact, whoami
from controller.labdb.migrations import migrate
from controller.rack.lease import ADVISORY_CLASS, LOCKERS, LeasePlace, lease_place, run_on_place
from controller.ssh import CommandLog, SSHSession

MAX_NOTE = 200
MAX_SPAN_S = 31 * 86400          # one booking of more than a month is almost surely a typo


class RackReserved(RackBusy):
    """The rack is reserved by somebody else for the time asked for (exit 3)."""


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

    def text(self) -> str:
        day = time.strftime("%Y-%m-%d", time.localtime(self.start))
        end_day = time.strftime("%Y-%m-%d ", time.localtime(self.end)) \
            if time.strftime("%Y-%m-%d", time.localtime(self.end)) != day else ""
        return (f"#{self.id} {self.rack} {day} {time.strftime('%H:%M', time.localtime(self.start))}-"
                f"{end_day}{time.strftime('%H:%M', time.localtime(self.end))} by {self.user}@{self.host}"
                + (f": {self.note}" if self.note else ""))

    def to_json(self) -> dict:
        return dict(self.__dict__)


def check_new(rack: str, start: float, end: float, note: str, now: float) -> None:
    """Bad input is refused before anything is asked of the rack or the database (exit 2)."""
    if end <= start:
        raise UsageError(f"rack reserve {rack}: --to must be after --from")
    if end <= now:
        raise UsageError(f"rack reserve {rack}: that time is over")
    if end - start > MAX_SPAN_S:
        raise UsageError(f"rack reserve {rack}: more than 31 days in one reservation")
    if len(note) > MAX_NOTE or any(ord(c) < 32 for c in note):
        raise UsageError(f"rack reserve {rack}: --note is one line of at most {MAX_NOTE} characters")


def overlapping(book: list[Reservation], start: float, end: float) -> list[Reservation]:
    return [r for r in book if r.start < end and r.end > start]


class Book(Protocol):
    where: str

    def list(self, since: float | None = None) -> list[Reservation]: ...
    def add(self, start: float, end: float, note: str) -> Reservation: ...
    def cancel(self, rid: int, *, force: bool = False) -> Reservation: ...


class DatabaseBook:
    """A rack's reservations in the lab database."""

    def __init__(self, url: str, rack: str):
        self.url = url
        self.rack = rack
        self.where = f"in the lab database {redact(url)}"

    def _conn(self) -> Any:
        conn = connect(self.url, f"reservations {self.rack}")
        migrate(conn)
        return conn

    @staticmethod
    def _row(r: dict) -> Reservation:
        return Reservation(int(r["id"]), r["rack"], r["owner_user"], r["owner_host"], r["starts"], r["ends"],
                           r["note"], r["created"])

    def list(self, since: float | None = None) -> list[Reservation]:
        with self._conn() as conn:
            rows = conn.execute("SELECT * FROM reservations WHERE rack=%s AND cancelled IS NULL AND ends>%s "
                                "ORDER BY starts", (self.rack, time.time() if since is None else since)).fetchall()
        return [self._row(r) for r in rows]

    def add(self, start: float, end: float, note: str) -> Reservation:
        me = whoami()
        with self._conn() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (ADVISORY_CLASS + 1, _key(self.rack)))
            clash = conn.execute("SELECT * FROM reservations WHERE rack=%s AND cancelled IS NULL AND starts<%s AND "
                                 "ends>%s ORDER BY starts LIMIT 1", (self.rack, end, start)).fetchone()
            if clash is not None:
                raise RackReserved(f"rack {self.rack}: overlaps reservation {self._row(clash).text()}")
            row = conn.execute("INSERT INTO reservations (rack, owner_user, owner_host, starts, ends, note, created) "
                               "VALUES (%s,%s,%s,%s,%s,%s,%s) RETURNING *",
                               (self.rack, me["user"], me["host"], start, end, note, time.time())).fetchone()
        return self._row(row)

    def cancel(self, rid: int, *, force: bool = False) -> Reservation:
        me = whoami()
        with self._conn() as conn, conn.transaction():
            row = conn.execute("SELECT * FROM reservations WHERE id=%s AND rack=%s AND cancelled IS NULL FOR UPDATE",
                               (rid, self.rack)).fetchone()
            if row is None:
                raise UsageError(f"rack {self.rack}: no reservation #{rid}")
            r = self._row(row)
            if r.user != me["user"] and not force:
                raise UsageError(f"reservation #{rid} is {r.user}'s: only they cancel it (or --force)")
            conn.execute("UPDATE reservations SET cancelled=%s WHERE id=%s", (time.time(), rid))
        return r


def _key(rack: str) -> int:
    return zlib.crc32(rack.encode()) & 0x7FFFFFFF


# Constant scripts for the book on the rack's first host (values as positional arguments).
_READ = r'''d=$1; f=$2
[ -n "$d" ] || d="$HOME/.ctl-lease"
if [ -f "$d/$f" ] && [ ! -L "$d/$f" ]; then cat "$d/$f"; fi'''
# Under the book's lock: print the current book (each line behind a "|") and a marker, read the new book from stdin,
# write it beside the old one and rename it into place (an empty input changes nothing).
_UPDATE = r'''d=$1; f=$2; shift 2
[ -n "$d" ] || d="$HOME/.ctl-lease"
if [ ! -d "$d" ]; then mkdir -p -m 700 "$d" || exit 3; fi
if [ -L "$d" ] || [ ! -O "$d" ]; then echo "ctl-book-unsafe $d" >&2; exit 3; fi
cd "$d" || exit 3
for x in "$f" "$f.lock" "$f.new"; do if [ -L "$x" ]; then echo "ctl-book-unsafe $x" >&2; exit 3; fi; done
exec "$@" "$f.lock" sh -c '
  if [ -f "$1" ]; then sed "s/^/|/" "$1"; fi; echo ctl-book-end
  rm -f "$1.new"; cat > "$1.new" || exit 3
  if [ -s "$1.new" ]; then mv -f "$1.new" "$1"; else rm -f "$1.new"; fi' ctl-book "$f"'''
# The lock waits for the other writer (a few seconds at most): flock -w / lockf -t.
_BOOK_LOCKERS: dict[str, tuple[str, ...]] = {"linux": ("flock", "-w", "20"), "freebsd": ("lockf", "-k", "-t", "20")}


class HostBook:
    """A rack's reservations in a file on its first host (no lab database)."""

    def __init__(self, inv: Inventory):
        self.place: LeasePlace = lease_place(inv)
        self.rack = inv.name
        self.file = f"{inv.name}.reservations.json"
        self.where = f"on host {self.place.target.name}"
        assert set(_BOOK_LOCKERS) == set(LOCKERS)

    def _parse(self, text: str) -> tuple[int, list[Reservation]]:
        text = text.strip()
        if not text:
            return 0, []
        try:
            data = json.loads(text)
            rows = [Reservation(**r) for r in data["reservations"]]
            return int(data.get("last_id", 0)), rows
        except (ValueError, TypeError, KeyError) as exc:
            raise CtlError(f"rack {self.rack}: the reservation file {self.where} is damaged ({exc}); "
                           "fix or remove it there") from None

    def list(self, since: float | None = None) -> list[Reservation]:
        code, out, err = asyncio.run(run_on_place(self.place, ("sh", "-c", _READ, "ctl-book", self.place.directory,
                                                               self.file)))
        if code != 0:
            raise CtlError(f"rack {self.rack}: cannot read the reservations {self.where}: {err.strip() or code}")
        cut = time.time() if since is None else since
        return sorted((r for r in self._parse(out)[1] if r.end > cut), key=lambda r: r.start)

    def _update(self, change: Any) -> Any:
        """Read the book, `change(last_id, rows) -> (new last_id, new rows, result)`, write it: all
        under the book's lock on the host, so two controllers never lose each other's change."""
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
                                   f"{r.stderr.strip() or 'exit ' + str(r.exit_status)}")
                lines.append(line[1:])
            try:
                last_id, rows = self._parse("\n".join(lines))
                last_id, rows, result = change(last_id, rows)
                proc.send_line(json.dumps({"format": 1, "rack": self.rack, "last_id": last_id,
                                           "reservations": [r.to_json() for r in rows]}, indent=1))
            finally:
                proc.close_stdin()
            r = await proc.wait(30)
            if r.exit_status != 0:
                raise CtlError(f"rack {self.rack}: cannot change the reservations {self.where}: "
                               f"{r.stderr.strip() or 'exit ' + str(r.exit_status)}")
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
            new = Reservation(last_id + 1, self.rack, me["user"], me["host"], start, end, note, time.time())
            return last_id + 1, sorted(live + [new], key=lambda r: r.start), new
        return self._update(change)

    def cancel(self, rid: int, *, force: bool = False) -> Reservation:
        me = whoami()

        def change(last_id: int, rows: list[Reservation]) -> tuple[int, list[Reservation], Reservation]:
            hit = [r for r in rows if r.id == rid]
            if not hit:
                raise UsageError(f"rack {self.rack}: no reservation #{rid}")
            if hit[0].user != me["user"] and not force:
                raise UsageError(f"reservation #{rid} is {hit[0].user}'s: only they cancel it (or --force)")
            return last_id, [r for r in rows if r.id != rid], hit[0]
        return self._update(change)


def book_for(inv: Inventory) -> Book:
    """The rack's reservation book where its lease lives."""
    url = database_url()
    return DatabaseBook(url, inv.name) if url is not None else HostBook(inv)


def others(book: list[Reservation], user: str | None = None) -> list[Reservation]:
    """Reservations that bind `user` (default: the local user): everybody else's."""
    me = user or whoami()["user"]
    return [r for r in book if r.user != me]


def check_free(inv: Inventory, start: float, run_s: float, what: str) -> None:
    """Refuse (exit 3) an ad-hoc `what` that would start in, or run into, somebody else's
    reservation of this rack: `start` + `run_s` (its expected duration with set-up)."""
    clash = overlapping(others(book_for(inv).list(since=start)), start, start + run_s)
    if not clash:
        return
    r = clash[0]
    until = time.strftime("%Y-%m-%d %H:%M", time.localtime(r.end))
    if r.start <= start:
        raise RackReserved(f"rack {inv.name} is reserved by {r.user}@{r.host} until {until}"
                           + (f" ({r.note})" if r.note else "") + f": {what} refused (reservation #{r.id})")
    raise RackReserved(f"{what} (about {round(run_s)} s) would run into {r.user}@{r.host}'s reservation of rack "
                       f"{inv.name} from {time.strftime('%H:%M', time.localtime(r.start))} until {until}"
                       + (f" ({r.note})" if r.note else "") + f" (reservation #{r.id})")
