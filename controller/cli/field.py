"""`ctl field start|status|stop|report`: field tests on modem hosts (see controller/field.py)."""
from __future__ import annotations

import argparse
import asyncio
import sys
import time
from typing import Any

from controller.cli import figure_options
from controller.cli.commands import JSON_HELP, Parser, add_command, setting_default
from controller.cli.common import inventory_of, print_json, run_record
from controller.errors import CtlError, ParameterError
from controller.field.figures import write_report
from controller.field.host import fetch, start, status, stop
from controller.field.options import FieldOptions, check_hosts, check_options
from controller.field.records import open_field_record
from controller.field.stats import render_report
from controller.lab.ops import ensure_lab
from controller.settings import runs_dir
from controller.units import parse_duration


def _say(quiet: bool):
    def say(msg: str) -> None:
        if not quiet:
            print(msg, file=sys.stderr, flush=True)
    return say


def _token(inv, say) -> str | None:
    if inv.influxdb is None:
        say("no InfluxDB in the inventory: the logger keeps its points in its spool only")
        return None
    try:
        return inv.influxdb.token.resolve("influxdb token")
    except ParameterError as exc:
        say(f"InfluxDB token not available ({exc.one_line()}): the logger only spools; after "
            "`ctl field report RUN`, `ctl metrics push RUN` sends the points")
        return None


def cmd_start(args: argparse.Namespace) -> int:
    inv = inventory_of(args)
    opts = FieldOptions(
        workload=args.workload, duration_s=parse_duration(args.duration, what="--duration") if args.duration else None,
        server=args.server, rate=args.rate, torrent=args.torrent, torrent_out=args.torrent_out, ping=args.ping)
    check_hosts(inv, args.host)
    check_options(opts)
    if inv.kind == "virtual":
        if ensure_lab(inv):
            _say(args.quiet)(f"virtual rack {inv.name} was down: brought it up")
    say = _say(args.quiet)
    out = asyncio.run(start(inv, args.host, opts, runs_dir(args.runs_dir), _token(inv, say), say))
    failed = {h: r for h, r in out["hosts"].items() if "error" in r}
    if args.json:
        print_json(out)
    else:
        for h, r in out["hosts"].items():
            if "error" in r:
                print(f"{h}: FAILED: {r['error']}")
            else:
                print(f"{h}: {r['action']} run {r.get('run_id')} (logger pid {r.get('pid')})")
        if out["record"]:
            print(f"record: {out['record']}")
    return 1 if failed else 0


def _age(s: Any) -> str:
    return "-" if s is None else f"{s:.0f}s ago"


def _push(st: dict) -> str:
    if st.get("state") == "no-run":
        return "-"
    if not st.get("influx"):
        return "no InfluxDB (spool only)"
    return st.get("push_error") or "ok"


def cmd_status(args: argparse.Namespace) -> int:
    inv = inventory_of(args)
    out = asyncio.run(status(inv, args.host or []))
    if args.json:
        print_json(out)
        return 0
    print(f"{'host':<8} {'state':<11} {'run':<48} {'pid':>7} {'seq':>6} {'last':>9} {'modem':>7} "
          f"{'spool':>7} {'pending':>7}  push")
    for h, st in out.items():
        if "error" in st:
            print(f"{h:<8} {st['state']:<11} {st['error']}")
            continue
        last = st.get("last") or {}
        print(f"{h:<8} {st.get('state', '-'):<11} {str(st.get('run_id') or '-'):<48} {str(st.get('pid') or '-'):>7} "
              f"{str(last.get('seq', '-')):>6} {_age(last.get('age_s')):>9} {st.get('modem_ok_last_min', '-'):>7} "
              f"{st.get('spool_points', 0):>7} {st.get('pending_points', 0):>7}  "
              f"{_push(st)}")
        if st.get("state") == "unfinished":
            print(f"{'':<8} its logger is not running: `ctl field start --host {h}` resumes the run")
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    inv = inventory_of(args)
    say = _say(args.quiet)
    out = asyncio.run(stop(inv, args.host or [], runs_dir(args.runs_dir), say, fetch_after=not args.no_fetch))
    if args.json:
        print_json(out)
    else:
        for h, r in out.items():
            print(f"{h}: {r.get('error') or r.get('action')}" + (f" (run {r['run_id']})" if r.get("run_id") else ""))
    return 1 if any("error" in r for r in out.values()) else 0


def cmd_report(args: argparse.Namespace) -> int:
    inv = inventory_of(args)
    say = _say(args.quiet)
    rec = open_field_record(run_record(runs_dir(args.runs_dir), args.run))
    if not args.no_fetch:
        asyncio.run(fetch(inv, rec, say))
    if not (rec.dir / "metrics.jsonl").exists():
        raise CtlError(f"{rec.id}: nothing fetched yet (hosts unreachable?)")
    t0 = time.monotonic()
    summary = write_report(rec, figure_options.output(args, ("png",)))
    if args.json:
        print_json(summary)
    else:
        print(render_report(summary))
        print()
        print(f"run {rec.id}: {rec.manifest.get('status')}; report in {time.monotonic() - t0:.1f} s")
        print(f"record: {rec.dir}")
    return 0


def register(sub) -> None:
    p = add_command(sub, "field", allow_abbrev=False,
                    description="Field tests on modem hosts: a logger started detached on each host samples the "
                                "radio, GPS and a workload; ctl reads, stops and reports it.")
    fs = p.add_subparsers(dest="field_action", required=True, parser_class=Parser, metavar="ACTION")
    runs_help = f"where field run records go ({setting_default('runs_dir')})"

    s = fs.add_parser("start", help="start (or resume) the logger on modem hosts", allow_abbrev=False)
    s.add_argument("--host", action="append", required=True, metavar="HOST", help="modem host (repeat for several)")
    s.add_argument("--workload", choices=["iperf3", "torrent", "idle"], default="idle",
                   help="traffic while logging: iperf3 downloads, a torrent download or none (default idle)")
    s.add_argument("--duration", help="wall time from the run's start, e.g. 2h (default: until stopped)")
    s.add_argument("--server", metavar="HOST[:PORT]", help="iperf3 server HOST[:PORT] for --workload iperf3")
    s.add_argument("--rate", help="iperf3 download rate asked of the server (-b), e.g. 2M")
    s.add_argument("--torrent", help="torrent id for --workload torrent (path on the host, magnet, URL)")
    s.add_argument("--torrent-out", metavar="DIR", help="download directory on the host (default: in the run's "
                                                        "directory)")
    s.add_argument("--ping", metavar="HOST", help="reference host for RTT and jitter (default: the InfluxDB host)")
    s.add_argument("--runs-dir", metavar="DIR", help=runs_help)
    s.add_argument("--json", action="store_true", help=JSON_HELP + "; per host: the run started or resumed")
    s.set_defaults(func=cmd_start)

    st = fs.add_parser("status", help="what the loggers are doing (read from the hosts)", allow_abbrev=False)
    st.add_argument("--host", action="append", metavar="HOST", help="only this modem host (repeat for several; "
                                                                    "default: every modem host)")
    st.add_argument("--json", action="store_true", help=JSON_HELP + "; per host: state, run, pid, samples, spool")
    st.set_defaults(func=cmd_status)

    sp = fs.add_parser("stop", help="stop the loggers by PID, then fetch their spools", allow_abbrev=False)
    sp.add_argument("--host", action="append", metavar="HOST", help="only this modem host (repeat for several; "
                                                                    "default: every modem host)")
    sp.add_argument("--no-fetch", action="store_true", help="stop only; leave the spools on the hosts")
    sp.add_argument("--runs-dir", metavar="DIR", help=runs_help)
    sp.add_argument("--json", action="store_true", help=JSON_HELP + "; per host: what was stopped and fetched")
    sp.set_defaults(func=cmd_stop)

    r = fs.add_parser("report", help="fetch a field run's spools and write Table 1, Fig. 4, percentiles",
                      allow_abbrev=False)
    r.add_argument("run", nargs="?", metavar="RUN", help="field run id or path (default: the latest run)")
    r.add_argument("--no-fetch", action="store_true", help="report from what was fetched before")
    r.add_argument("--runs-dir", metavar="DIR", help=runs_help)
    r.add_argument("--json", action="store_true", help=JSON_HELP + "; the table's rows and the figures' files")
    figure_options.add(r, ("png",))
    r.set_defaults(func=cmd_report)
