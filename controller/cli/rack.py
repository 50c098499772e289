"""`ctl rack status | reserve | reservations | cancel`: who holds a rack, and who booked it."""
from __future__ import annotations

import argparse
import math
import re
import time
from typing import Any

from controller.campaign.backends import open_store
from controller.campaign.timing import parse_at
from controller.cli.commands import JSON_HELP, Parser, add_command
from controller.cli.common import inventory_of, print_json
from controller.errors import CtlError, UsageError
from controller.inventory import Inventory
from controller.labdb import database_url, redact
from controller.lock import FileLock, rack_lock_dir
from controller.rack.lease import iso_time, make_leases
from controller.rack.reservations import Book, DatabaseBook, HostBook, Reservation, book_for, check_new
from controller.textsafe import shown
from controller.units import parse_duration

_RACK = r"^[a-z][a-z0-9-]{0,30}$"


def _when(t: Any) -> str:
    return iso_time(t) if isinstance(t, (int, float)) and not isinstance(t, bool) and t else "-"


def _book(args: argparse.Namespace, rack: str | None) -> tuple[Book, str]:
    """The book of rack `rack` (default: the inventory's). Without a lab database the book is on
    the rack's first host, so the rack must be the inventory's."""
    url = database_url()
    if url is not None and rack is not None:
        if not re.fullmatch(_RACK, rack):
            raise UsageError(f"{rack!r} is not a rack name")
        return DatabaseBook(url, rack), rack
    inv = inventory_of(args)
    if rack is not None and rack != inv.name:
        raise UsageError(f"rack {rack}: without a lab database ($CTL_DATABASE_URL) reservations live on the rack's "
                         f"first host: give the rack's inventory (--inventory), not {inv.name}'s")
    return (HostBook(inv) if url is None else DatabaseBook(url, inv.name)), inv.name


def cmd_status(args: argparse.Namespace) -> int:
    inv: Inventory = inventory_of(args)
    leases = make_leases(inv, "status")
    out: dict[str, Any] = {"rack": inv.name, "group": inv.group, "lease_where": leases[0].where,
                           "database": redact(database_url()) if database_url() else None, "leases": []}
    for i, lease in enumerate(leases):
        entry: dict[str, Any] = {"where": lease.where, "holder": None, "last_holder": None}
        try:
            h = lease.holder()
            entry["holder"] = h.to_json() if h is not None and h.alive else None
            entry["last_holder"] = h.to_json() if h is not None and not h.alive else None
        except CtlError as exc:
            entry["error"] = exc.one_line()
        out["leases"].append(entry)
        if i == 0:
            out["lease"], out["last_holder"] = entry["holder"], entry["last_holder"]
            if "error" in entry:
                out["lease_error"] = entry["error"]
    try:
        out["machine_lock"] = FileLock(inv.name, "status", rack_lock_dir()).owner()
    except CtlError as exc:            # a lock directory that is not ours: not read, said so
        out["machine_lock"], out["machine_lock_error"] = None, exc.one_line()
    try:
        out["reservations"] = [r.to_json() for r in book_for(inv).list()]
    except CtlError as exc:
        out["reservations"], out["reservations_error"] = [], exc.one_line()
    out["runs"] = []
    if database_url() is not None:
        store = open_store("rack status")
        try:
            out["runs"] = [{"campaign": r.campaign, "seq": r.seq, "claimed_by": r.claimed_by,
                            "lease_until": r.claim_until} for r in store.running_runs(inv.name)]
        finally:
            store.close()
    if args.json:
        print_json(out)
        return 0
    print(f"rack {inv.name}" + (f" (group {inv.group})" if inv.group else "") + f": lease {leases[0].where}"
          + (f", host lease {leases[1].where}" if len(leases) > 1 else ""))
    for i, entry in enumerate(out["leases"]):
        label = "lease     " if i == 0 else "host lease"
        if entry.get("error"):
            print(f"  {label} unknown: {entry['error']}")
        elif entry["holder"]:
            h = entry["holder"]
            print(f"  {label} HELD by {shown(h['user'], 64)} on {shown(h['host'], 128)} (pid {h['pid']}), "
                  f"since {_when(h['since'])}: {shown(h['purpose'], 200)}")
        else:
            last = entry.get("last_holder")
            print(f"  {label} free" + (f" (last: {shown(last['user'], 64)} on {shown(last['host'], 128)}, "
                                       f"{shown(last['purpose'], 200)})" if last else ""))
    m = out["machine_lock"]
    if out.get("machine_lock_error"):
        print(f"  this machine's rack lock: unknown: {out['machine_lock_error']}")
    elif m:
        print(f"  this machine: pid {shown(m.get('pid'), 20)} holds the rack lock ({shown(m.get('purpose'), 200)}, "
              f"since {_when(m.get('since'))})")
    for r in out["runs"]:
        print(f"  campaign #{r['campaign']} run {r['seq']} running, claimed by {shown(r['claimed_by'], 200)} "
              f"(lease until {_when(r['lease_until'])})")
    if out.get("reservations_error"):
        print(f"  reservations unknown: {out['reservations_error']}")
    elif out["reservations"]:
        print("  reservations:")
        for r in out["reservations"]:
            print(f"    {_reservation(r).text()}")
    else:
        print("  reservations: none ahead")
    return 0


def _reservation(d: dict) -> Reservation:
    """A Reservation back from its to_json (where JSON's null stood for a non-finite time)."""
    return Reservation(**{k: (math.nan if v is None and k in ("start", "end", "created") else v) for k, v in d.items()})


def _at(option: str, text: str, now: float) -> float:
    try:
        return parse_at(text, now)
    except (UsageError, OverflowError, OSError, ValueError):
        raise UsageError(f"rack reserve {option}: {shown(text, 40)!r} is neither HH:MM nor an ISO date and time "
                         "(2025-05-01T09:00) in the years 2000..9999") from None


def _times(args: argparse.Namespace, now: float) -> tuple[float, float]:
    start = now if args.from_ in (None, "now") else _at("--from", args.from_, now)
    if (args.to is None) == (args.for_ is None):
        raise UsageError("rack reserve: give --to TIME or --for DURATION")
    if args.for_ is not None:
        return start, start + parse_duration(args.for_, what="--for")
    return start, _at("--to", args.to, start)


def cmd_reserve(args: argparse.Namespace) -> int:
    now = time.time()
    start, end = _times(args, now)
    note = args.note or ""
    check_new(args.rack, start, end, note, now)
    book, rack = _book(args, args.rack)
    r = book.add(start, end, note)
    if args.json:
        print_json(r.to_json())
    else:
        print(f"reserved {r.text()} ({book.where})")
    return 0


def cmd_reservations(args: argparse.Namespace) -> int:
    book, rack = _book(args, args.rack)
    rows = book.list(since=0.0 if args.all else None)
    if args.json:
        print_json([r.to_json() for r in rows])
        return 0
    if not rows:
        print(f"rack {rack}: no reservations ahead ({book.where})")
    for r in rows:
        print(r.text())
    return 0


def cmd_cancel(args: argparse.Namespace) -> int:
    book, rack = _book(args, args.rack)
    r = book.cancel(args.id, force=args.force)
    if args.json:
        print_json(r.to_json())
    else:
        print(f"cancelled {r.text()}")
    return 0


def register(sub) -> None:
    p = add_command(sub, "rack", description="Who holds a rack (its lease) and who booked it (reservations). "
                                             "The lease and the reservations live in the lab database "
                                             "($CTL_DATABASE_URL) or, without one, on the rack's first host.")
    rs = p.add_subparsers(dest="rack_command", required=True, parser_class=Parser, metavar="ACTION")

    def add(name: str, func: Any, help_: str) -> argparse.ArgumentParser:
        sp = rs.add_parser(name, help=help_, description=help_, allow_abbrev=False)
        sp.set_defaults(func=func)
        return sp

    sp = add("status", cmd_status, "the rack's lease holders (database and host), this machine's rack lock, "
                                   "runs in progress, reservations ahead")
    sp.add_argument("--json", action="store_true", help="print it as one JSON document (times ISO 8601 UTC)")

    sp = add("reserve", cmd_reserve, "book a rack (at most 31 days): nobody else's ad-hoc run starts in it, no "
                                     "campaign runs into it")
    sp.add_argument("rack", metavar="RACK", help="the rack's name (its inventory's `name`)")
    sp.add_argument("--from", dest="from_", metavar="TIME", help="start: now (default), HH:MM local time (the next such time) or "
                                                 "ISO 8601 date and time (a zone allowed)")
    sp.add_argument("--to", metavar="TIME", help="end: HH:MM local time (the next such time after the start) or ISO 8601 date "
                                 "and time")
    sp.add_argument("--for", dest="for_", metavar="DURATION", help="or: how long, with a unit (2h, 90min)")
    sp.add_argument("--note", metavar="TEXT", help="what for: one line, at most 200 characters, no control characters")
    sp.add_argument("--json", action="store_true", help="print the reservation as JSON")

    sp = add("reservations", cmd_reservations, "reservations ahead (--all: with the past ones the book keeps); "
                                               "a malformed one is shown as such and blocks nothing")
    sp.add_argument("rack", nargs="?", metavar="RACK", help="the rack's name (default: the inventory's)")
    sp.add_argument("--all", action="store_true", help="the past ones too")
    sp.add_argument("--json", action="store_true", help="print them as one JSON document (times ISO 8601 UTC)")

    sp = add("cancel", cmd_cancel, "cancel a reservation of yours (--force: anybody's, with a lab database only "
                                   "as a member of the database role ctl_admin)")
    sp.add_argument("id", type=int, metavar="ID", help="the reservation's number (#N in `ctl rack reservations`)")
    sp.add_argument("--rack", metavar="RACK", help="the rack (default: the inventory's)")
    sp.add_argument("--force", action="store_true", help="cancel somebody else's reservation")
    sp.add_argument("--json", action="store_true", help=JSON_HELP + "; the reservation cancelled")
