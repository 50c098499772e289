"""Command line of the field logger on the modem host; every command prints one JSON line.

    python3 fieldlog.pyz start  --root DIR [--config JSON] [--token-stdin]   start or resume (detached)
    python3 fieldlog.pyz stop   --root DIR [--pid N] [--timeout S]           end the logger by its PID
    python3 fieldlog.pyz status --root DIR [--run ID]
    python3 fieldlog.pyz cat    --root DIR --run ID --file NAME [--offset N] [--max-bytes N]
    python3 fieldlog.pyz version

`start` without --config only resumes an unfinished run (what a boot hook runs after a reboot).
The InfluxDB token comes on stdin (never in argv, which any local user can read in ps).

ctl installs no boot hook (it changes nothing on a host it does not restore). To have a rebooted host
resume its run without anyone running `ctl field start` again, install one yourself, e.g. systemd:

    # /etc/systemd/system/ctl-fieldlog.service
    [Unit]
    Description=ctl field logger: resume an unfinished field run after a reboot
    After=network.target ModemManager.service gpsd.service
    [Service]
    Type=oneshot
    RemainAfterExit=yes
    KillMode=process
    ExecStart=/usr/bin/python3 /var/lib/ctl-field/fieldlog.pyz start --root /var/lib/ctl-field
    [Install]
    WantedBy=multi-user.target

(`KillMode=process`: the logger is a detached daemon in the unit's cgroup; the oneshot's exit must not
take it down.)
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import List, Optional

VERSION = 1


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="fieldlog")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("start")
    s.add_argument("--root", required=True)
    s.add_argument("--config", help="settings of a new run (JSON); without it: resume only")
    s.add_argument("--token-stdin", action="store_true", help="read the InfluxDB token from stdin")
    t = sub.add_parser("stop")
    t.add_argument("--root", required=True)
    t.add_argument("--pid", type=int)
    t.add_argument("--timeout", type=float, default=30.0)
    st = sub.add_parser("status")
    st.add_argument("--root", required=True)
    st.add_argument("--run")
    c = sub.add_parser("cat")
    c.add_argument("--root", required=True)
    c.add_argument("--run", required=True)
    c.add_argument("--file", required=True)
    c.add_argument("--offset", type=int, default=0)
    c.add_argument("--max-bytes", type=int, default=4 << 20)
    sub.add_parser("version")
    args = ap.parse_args(argv)

    from nodes.fieldlog import daemon
    try:
        if args.cmd == "start":
            cfg = json.loads(args.config) if args.config else None
            token = None
            if args.token_stdin:
                token = sys.stdin.readline().strip() or None
            out = daemon.start(args.root, cfg, token)
        elif args.cmd == "stop":
            out = daemon.stop(args.root, args.pid, args.timeout)
        elif args.cmd == "status":
            out = daemon.status(args.root, args.run)
        elif args.cmd == "cat":
            out = daemon.cat(args.root, args.run, args.file, args.offset, args.max_bytes)
        else:
            out = {"version": VERSION, "python": sys.version.split()[0]}
    except (ValueError, OSError) as exc:
        out = {"action": "error", "error": "%s: %s" % (type(exc).__name__, exc)}
    sys.stdout.write(json.dumps(out, separators=(",", ":")) + "\n")
    sys.stdout.flush()
    return 1 if out.get("action") in ("error", "refused") else 0


if __name__ == "__main__":
    raise SystemExit(main())
