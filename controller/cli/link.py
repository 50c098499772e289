"""`ctl link set | reset | show | measure`: a link's shaping, on any rack.

Each action is its own subcommand with only its own options (`ctl link set --pings` is an
error, not an ignored flag).
"""
from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from controller.cli.commands import JSON_HELP, DeprecatedName, Parser, add_command
from controller.cli.common import inventory_of, print_json
from controller.cli.console import Console
from controller.errors import UsageError
from controller.lab.ops import ensure_lab
from controller.rack import links as linkops
from controller.rack.lease import hold_rack, parse_wait
from controller.rack.reservations import check_free
from controller.units import parse_probability


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


@contextmanager
def _hold(inv, args: argparse.Namespace, what: str, busy_s: float) -> Iterator[None]:
    """The rack (machine lock, then the lease that lives with the rack), waiting if asked; and
    no change during or into somebody else's reservation."""
    with hold_rack(inv, what, wait_s=parse_wait(args.wait), say=_say, prepare=lambda: ensure_lab(inv)) as hold:
        check_free(inv, time.time(), busy_s, what, via=hold.lease)
        yield


def cmd_set(args: argparse.Namespace) -> int:
    inv = inventory_of(args)
    dirs = linkops.directions(args.dir)
    if args.loss is not None:
        parse_probability(args.loss, what="--loss")     # its error names the flag the user typed
    aqm = _aqm_spec(args)
    linkops.check_set(inv, args.link, dirs, args.bw, args.delay, args.loss, args.queue, aqm)
    with _hold(inv, args, f"ctl link set {args.link}", 10.0):
        entry = asyncio.run(linkops.link_set(inv, args.link, dirs, args.bw, args.delay, args.loss, args.queue, aqm))
    if args.json:
        print_json({k: v for k, v in entry.items() if k != "commands"})
    else:
        print(linkops.render_show({args.link: _as_show(entry)}))
    return 0


def _aqm_spec(args: argparse.Namespace) -> str | None:
    """--red/--gred/--ecn/--droptail as one spec for PipeConfig.from_args (bridges.base.parse_aqm)."""
    if sum(x is not None and x is not False for x in (args.red, args.gred, args.droptail)) > 1:
        raise UsageError("ctl link set: give one of --red, --gred and --droptail")
    if args.ecn and not (args.red or args.gred):
        raise UsageError("ctl link set: --ecn needs --red or --gred (dummynet marks CE only through RED)")
    if args.droptail:
        return "droptail"
    if args.red or args.gred:
        return f"{'red' if args.red else 'gred'}:{args.red or args.gred}" + (":ecn" if args.ecn else "")
    return None


def cmd_reset(args: argparse.Namespace) -> int:
    inv = inventory_of(args)
    if bool(args.link) == bool(args.all):
        raise UsageError("ctl link reset: give one LINK or --all")
    links = sorted(inv.links) if args.all else [args.link]
    if not links:
        raise UsageError(f"ctl link reset: inventory {inv.name} has no links")
    linkops.reset_plan(inv, links)      # refuses an unknown link before the lock or any connection
    with _hold(inv, args, f"ctl link reset {args.link or '--all'}", 10.0):
        entries = asyncio.run(linkops.link_reset(inv, links))
    if args.json:
        print_json([{k: v for k, v in e.items() if k != "commands"} for e in entries])
    else:
        print(linkops.render_reset(entries))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    inv = inventory_of(args)
    links = [args.link] if args.link else sorted(inv.links)
    ensure_lab(inv)
    data = asyncio.run(linkops.link_show(inv, links))
    if args.json:
        print_json(data)
    else:
        print(linkops.render_show(data))
    return 0


def cmd_measure(args: argparse.Namespace) -> int:
    inv = inventory_of(args)
    linkops.measure_plan(inv, args.link)
    # Steps on stderr (numbered, with their expected length; on a terminal a ticking line).
    console = Console(quiet=args.json)
    try:
        with _hold(inv, args, f"ctl link measure {args.link}",
                   args.pings * 0.2 + args.tcp_seconds + args.udp_seconds + 20.0):
            m = asyncio.run(linkops.link_measure(inv, args.link, pings=args.pings, tcp_s=args.tcp_seconds,
                                                 udp_s=args.udp_seconds, streams=args.streams,
                                                 progress=console.log))
    finally:
        console.end()
    if args.json:
        print_json(m)
    else:
        print(linkops.render_measure(m))
    return 0


def _as_show(entry: dict) -> dict:
    dirs = {}
    for key, cfg in entry["after"].items():
        d = key.split(".", 1)[1]
        dirs[d] = {"shaped": cfg is not None, "config": cfg or {"bw_bps": None, "delay_us": 0, "plr": 0.0,
                                                              "queue": {"slots": 50}}, "counters": {}}
    return {"bridge": entry["bridge"], "kind": entry["kind"], "directions": dirs}


def register(sub) -> None:
    p = add_command(sub, "link", allow_abbrev=False, description="A link's shaping: set, reset, show, measure.")
    ls = p.add_subparsers(dest="link_command", required=True, parser_class=Parser, metavar="ACTION")

    def add(name: str, func, help_: str) -> argparse.ArgumentParser:
        sp = ls.add_parser(name, help=help_, description=help_, allow_abbrev=False)
        sp.set_defaults(func=func)
        if name != "show":
            sp.add_argument("--wait", nargs="?", const="forever", default=None, metavar="DURATION",
                            help="wait for the rack when another controller holds it (or up to DURATION)")
        return sp

    link_help = "the link's name in the inventory (`ctl link show` lists them)"
    sp = add("set", cmd_set, "change a link's shaping and leave it so (runs restore to it)")
    sp.add_argument("link", metavar="LINK", help=link_help)
    sp.add_argument("--bw", metavar="RATE", help="bandwidth, e.g. 20M, 100Mbit/s, 1G (0 = unlimited)")
    sp.add_argument("--delay", metavar="DELAY", help="one-way delay per direction, e.g. 50ms")
    sp.add_argument("--loss", metavar="LOSS", help="random loss on arrival, the name every scenario uses: a "
                    "percentage (0.01%%) or a fraction in scientific notation (1e-4); a bare number such as 0.01 is "
                    "refused as ambiguous")
    sp.add_argument("--plr", dest="loss", metavar="LOSS", action=DeprecatedName, new="--loss")
    sp.add_argument("--queue", metavar="QUEUE", help="drop-tail queue: slots (50) or bytes (64KB)")
    red_help = ("{} on the queue, as dummynet's `{}`: W_Q the averaging weight and MAX_P the drop probability "
                "at MAX_TH (fractions in 0..1), MIN_TH/MAX_TH in the queue's unit (slots, or bytes for a byte "
                "queue), e.g. 0.002/5/15/0.1; kept by later sets until --droptail")
    sp.add_argument("--red", metavar="W_Q/MIN_TH/MAX_TH/MAX_P",
                    help=red_help.format("RED (random early detection)", "red"))
    sp.add_argument("--gred", metavar="W_Q/MIN_TH/MAX_TH/MAX_P",
                    help=red_help.format("gentle RED (probability up to 1 at 2 x MAX_TH)", "gred"))
    sp.add_argument("--ecn", action="store_true", help="with --red/--gred: mark ECN-capable packets CE instead "
                    "of dropping them (dummynet's `ecn`: every packet once the average is above MIN_TH)")
    sp.add_argument("--droptail", action="store_true", help="remove RED/GRED: back to the plain drop-tail queue")
    sp.add_argument("--dir", default="both", choices=["forward", "reverse", "both"],
                    help="forward (a->b), reverse (b->a) or both (default)")
    sp.add_argument("--json", action="store_true", help=JSON_HELP + "; the link's shaping before and after")

    sp = add("reset", cmd_reset, "return links to the inventory's baseline (unshaped where it has none)")
    sp.add_argument("link", nargs="?", metavar="LINK", help=link_help + "; or --all")
    sp.add_argument("--all", action="store_true", help="every link of the inventory")
    sp.add_argument("--json", action="store_true", help=JSON_HELP + "; per link: the shaping it was reset to")

    sp = add("show", cmd_show, "shaping and counters of every pipe (or of one link)")
    sp.add_argument("link", nargs="?", metavar="LINK", help=link_help + " (default: every link)")
    sp.add_argument("--json", action="store_true", help=JSON_HELP + "; per link and direction: shaping and counters")

    sp = add("measure", cmd_measure, "RTT/jitter (ping), throughput (iperf3), loss (counted UDP) vs configured")
    sp.add_argument("link", metavar="LINK", help=link_help)
    sp.add_argument("--pings", type=int, default=20, metavar="N", help="ping count (0.2 s apart; default 20)")
    sp.add_argument("--tcp-seconds", type=float, default=8.0, metavar="SECONDS",
                    help="length of the iperf3 TCP throughput test, in seconds (default 8)")
    sp.add_argument("--streams", type=int, default=4, metavar="N",
                    help="parallel TCP streams (saturate shallow queues; default 4)")
    sp.add_argument("--udp-seconds", type=float, default=5.0, metavar="SECONDS",
                    help="length of the counted UDP loss test, in seconds (default 5)")
    sp.add_argument("--json", action="store_true", help=JSON_HELP + "; measured vs configured, per quantity")
