"""`ctl rack status | reserve | reservations | cancel`: who holds a rack, and who booked it."""
from __future__ import annotations

import argparse
import re
import time
from typing import Any

from controller.campaign.backends import open_store
from controller.campaign.timing import parse_at
from controller.cli.commands import Parser, add_command
from controller.cli.common import inventory_of, print_json
from controller.errors import CtlError, UsageError
from controller.inventory import Inventory
from controller.labdb import database_url, redact
from controller.lock import FileLock, rack_lock_dir
from controller.rack.lease import make_lease
from controller.rack.reservations import Book, DatabaseBook, HostBook, Reservation, book_for, check_new
from controller.units import parse_duration

_RACK = r"^[a-z][a-z0-9-]{0,30}$"


def _when(t: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) if t else "-"


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
    lease = make_lease(inv, "status")
    out: dict[str, Any] = {"rack": inv.name, "group": inv.group, "lease_where": lease.where,
                           "database": redact(database_url()) if database_url() else None}
    try:
        h = lease.holder()
        out["lease"] = h.to_json() if h is not None and h.alive else None
        out["last_holder"] = h.to_json() if h is not None and not h.alive else None
    except CtlError as exc:
        out["lease"], out["lease_error"] = None, exc.one_line()
    out["machine_lock"] = FileLock(inv.name, "status", rack_lock_dir()).owner()
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
    print(f"rack {inv.name}" + (f" (group {inv.group})" if inv.group else "") + f": lease {lease.where}")
    if out.get("lease_error"):
        print(f"  lease     unknown: {out['lease_error']}")
    elif out["lease"]:
        h = out["lease"]
        print(f"  lease     HELD by {h['user']} on {h['host']} (pid {h['pid']}), since {_when(h['since'])}: "
              f"{h['purpose']}")
    else:
        last = out.get("last_holder")
        print("  lease     free" + (f" (last: {last['user']} on {last['host']}, {last['purpose']})" if last else ""))
    m = out["machine_lock"]
    if m:
        print(f"  this machine: pid {m.get('pid')} holds the rack lock ({m.get('purpose')}, since {_when(m.get('since'))})")
    for r in out["runs"]:
        print(f"  campaign #{r['campaign']} run {r['seq']} running, claimed by {r['claimed_by']} "
              f"(lease until {_when(r['lease_until'])})")
    if out.get("reservations_error"):
        print(f"  reservations unknown: {out['reservations_error']}")
    elif out["reservations"]:
        print("  reservations:")
        for r in out["reservations"]:
            print(f"    {Reservation(**r).text()}")
    else:
        print("  reservations: none ahead")
    return 0


def _times(args: argparse.Namespace, now: float) -> tuple[float, float]:
    start = now if args.from_ in (None, "now") else parse_at(args.from_, now)
    if (args.to is None) == (args.for_ is None):
        raise UsageError("rack reserve: give --to TIME or --for DURATION")
    if args.for_ is not None:
        return start, start + parse_duration(args.for_, what="--for")
    return start, parse_at(args.to, start)


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
    print(f"cancelled {r.text()}")
    return 0


def register(sub) -> None:
    p = add_command(sub, "rack", description="Who holds a rack (its lease) and who booked it (reservations). "
                                             "The lease and the reservations live in the lab database "
                                             "($CTL_DATABASE_URL) or, without one, on the rack's first host.")
    rs = p.add_subparsers(dest="rack_command", required=True, parser_class=Parser)

    def add(name: str, func: Any, help_: str) -> argparse.ArgumentParser:
        sp = rs.add_parser(name, help=help_, allow_abbrev=False)
        sp.add_argument("--inventory", "-i", default=argparse.SUPPRESS, help="rack description (YAML)")
        sp.set_defaults(func=func)
        return sp

    sp = add("status", cmd_status, "the rack's lease holder, this machine's rack lock, reservations ahead")
    sp.add_argument("--json", action="store_true")

    sp = add("reserve", cmd_reserve, "book a rack: nobody else's ad-hoc run starts in it, no campaign runs into it")
    sp.add_argument("rack")
    sp.add_argument("--from", dest="from_", help="start: now (default), HH:MM (the next such time) or ISO date/time")
    sp.add_argument("--to", help="end: HH:MM (the next such time after the start) or ISO date/time")
    sp.add_argument("--for", dest="for_", help="or: how long (2h, 90min)")
    sp.add_argument("--note", help="what for (one line)")
    sp.add_argument("--json", action="store_true")

    sp = add("reservations", cmd_reservations, "reservations ahead (--all: with the past week's)")
    sp.add_argument("rack", nargs="?")
    sp.add_argument("--all", action="store_true")
    sp.add_argument("--json", action="store_true")

    sp = add("cancel", cmd_cancel, "cancel a reservation of yours (--force: anybody's)")
    sp.add_argument("id", type=int)
    sp.add_argument("--rack", help="the rack (default: the inventory's)")
    sp.add_argument("--force", action="store_true")
