"""`ctl link set | show | measure`: one link's shaping, on any rack."""
from __future__ import annotations

import argparse
import asyncio
import sys
import time

from controller.cli.commands import add_command
from controller.cli.common import inventory_of, print_json
from controller.lab.ops import ensure_lab
from controller.rack import links as linkops
from controller.rack.lease import hold_rack, parse_wait
from controller.rack.reservations import check_free


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def cmd_link(args: argparse.Namespace) -> int:
    inv = inventory_of(args)
    if args.action == "set":
        if not args.link:
            raise linkops.ParameterError("link set: which link? (ctl link set LINK --bw ...)")
        dirs = linkops.directions(args.dir)
        linkops.check_set(inv, args.link, dirs, args.bw, args.delay, args.plr, args.queue)
        with hold_rack(inv, f"ctl link set {args.link}", wait_s=parse_wait(args.wait), say=_say,
                       prepare=lambda: ensure_lab(inv)):
            check_free(inv, time.time(), 10.0, f"ctl link set {args.link}")
            entry = asyncio.run(linkops.link_set(inv, args.link, dirs, args.bw, args.delay, args.plr, args.queue))
        if args.json:
            print_json({k: v for k, v in entry.items() if k != "commands"})
        else:
            print(linkops.render_show({args.link: _as_show(entry)}))
        return 0
    if args.action == "show":
        links = [args.link] if args.link else sorted(inv.links)
        ensure_lab(inv)
        data = asyncio.run(linkops.link_show(inv, links))
        if args.json:
            print_json(data)
        else:
            print(linkops.render_show(data))
        return 0
    if not args.link:
        raise linkops.ParameterError("link measure: which link?")
    linkops.measure_plan(inv, args.link)
    with hold_rack(inv, f"ctl link measure {args.link}", wait_s=parse_wait(args.wait), say=_say,
                   prepare=lambda: ensure_lab(inv)):
        check_free(inv, time.time(), args.pings * 0.2 + args.tcp_seconds + args.udp_seconds + 20.0,
                   f"ctl link measure {args.link}")
        m = asyncio.run(linkops.link_measure(inv, args.link, pings=args.pings, tcp_s=args.tcp_seconds,
                                             udp_s=args.udp_seconds, streams=args.streams,
                                             progress=(lambda s: None) if args.json else
                                             (lambda s: print(s, file=sys.stderr, flush=True))))
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
    p = add_command(sub, "link", allow_abbrev=False)
    p.add_argument("action", choices=["set", "show", "measure"])
    p.add_argument("link", nargs="?")
    p.add_argument("--bw", help="bandwidth, e.g. 20M, 100Mbit/s, 1G (0 = unlimited)")
    p.add_argument("--delay", help="one-way delay per direction, e.g. 50ms")
    p.add_argument("--plr", help="random loss on arrival, e.g. 0.01%%")
    p.add_argument("--queue", help="drop-tail queue: slots (50) or bytes (64KB)")
    p.add_argument("--dir", default="both", help="forward (a->b), reverse (b->a) or both (default)")
    p.add_argument("--pings", type=int, default=20, help="measure: ping count (0.2 s apart)")
    p.add_argument("--tcp-seconds", type=float, default=8.0)
    p.add_argument("--streams", type=int, default=4, help="measure: parallel TCP streams (saturate shallow queues)")
    p.add_argument("--udp-seconds", type=float, default=5.0)
    p.add_argument("--json", action="store_true")
    p.add_argument("--wait", nargs="?", const="forever", default=None, metavar="DURATION",
                   help="set/measure: wait for the rack when another controller holds it (or up to DURATION)")
    p.set_defaults(func=cmd_link)
