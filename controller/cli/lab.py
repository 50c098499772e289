"""`ctl lab up|down|status`: the virtual rack."""
from __future__ import annotations

import argparse

from controller.cli.commands import JSON_HELP, Parser, add_command
from controller.cli.common import inventory_of, print_json
from controller.errors import RackBusy
from controller.lab.ops import lab_status, lab_up_cli
from controller.lab.rack import lab_down, topology_intact
from controller.lock import RackLock


def cmd_lab(args: argparse.Namespace) -> int:
    inv = inventory_of(args)
    if args.action in ("up", "down"):
        # Not under a run or a campaign: building or removing the rack would cut it.
        lock = RackLock(inv.name, f"ctl lab {args.action}")
        try:
            lock.acquire()
        except RackBusy:
            if args.action == "up" and topology_intact(inv):
                # Restarting a dead daemon (InfluxDB, an sshd) on the intact topology does not
                # disturb the run or campaign that holds the rack; building would, so it waits.
                return _lab_up_down(inv, "up", args.json)
            raise
        try:
            return _lab_up_down(inv, args.action, args.json)
        finally:
            lock.release()
    status = lab_status(inv)
    if args.json:
        print_json(status)
    else:
        print(f"virtual rack {inv.name}: {'UP' if status['up'] else 'DOWN'}")
        for h, s in status.get("hosts", {}).items():
            print(f"  {h:8s} {s}")
        if "influxdb" in status:
            print(f"  influxdb {status['influxdb']}")
        if "owner_problem" in status:
            print(f"  NOTE: {status['owner_problem']}")
    return 0 if status["up"] else 1


def _lab_up_down(inv, action: str, as_json: bool = False) -> int:
    if action == "up":
        st = lab_up_cli(inv)
        if as_json:
            print_json({"inventory": inv.name, "up": True, "namespaces": list(st.namespaces),
                        "daemons": len(st.processes), "ssh_hosts": sorted(st.ssh_hosts)})
        else:
            print(f"virtual rack {inv.name} up: {len(st.namespaces)} namespaces, "
                  f"{len(st.processes)} daemons, SSH on {len(st.ssh_hosts)} hosts")
        return 0
    if action == "down":
        removed = lab_down(inv)
        if as_json:
            print_json({"inventory": inv.name, "up": False, "removed": list(removed)})
        else:
            print(f"virtual rack {inv.name} down" + (f": removed {len(removed)} objects" if removed else " (was not up)"))
        return 0
    raise AssertionError(action)


def register(sub) -> None:
    lab_p = add_command(sub, "lab", allow_abbrev=False,
                        description="The virtual rack: network namespaces on this machine, each host a real sshd "
                                    "(needs root).")
    acts = lab_p.add_subparsers(dest="action", required=True, parser_class=Parser, metavar="ACTION")
    for name, help_ in (("up", "build the virtual rack of the inventory (or repair a part that is down)"),
                        ("down", "remove the virtual rack: its namespaces, links and daemons"),
                        ("status", "whether every host and daemon of the virtual rack is up (exit 1 when not)")):
        sp = acts.add_parser(name, help=help_, description=help_, allow_abbrev=False)
        sp.add_argument("--json", action="store_true", help=JSON_HELP + {
            "up": "; the namespaces built, how many daemons run, the hosts answering SSH",
            "down": "; what was removed ([]: the rack was not up)",
            "status": "; every host's, daemon's and InfluxDB's state"}[name])
        sp.set_defaults(func=cmd_lab)
