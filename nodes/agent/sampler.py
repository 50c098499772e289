"""Host-side sampler: one long-lived process per host, started over SSH.

Runs with the host's own python3 (standard library only, Python >= 3.7). Every
`interval` seconds, on an absolute schedule (no drift), it reads all interface counters
from /proc/net/dev in one read, runs the configured probes whose turn it is (e.g.
`ss -tinH`, `tc -j -s qdisc show dev pb`) and prints one JSON line:

    {"seq": k, "t": <host time, ns>, "if": {"p1": [rx_bytes, rx_packets, rx_dropped,
     tx_bytes, tx_packets, tx_dropped], ...}, "p": {"ss": "<raw output>"}, "late": n}

Timestamps are the host's clock, taken just before reading. The controller parses the
raw probe output with the same tested parsers it uses for saved files. The sampler
exits when its stdin reaches end-of-file (the controller went away or closed it), on
SIGTERM, or when stdout breaks: it never outlives the run that started it.

Usage: python3 -u sampler.py '<json config>'
config: {"interval": 0.1, "ifaces": ["p1", "p2"], "probes": [{"name": "ss", "argv": [...],
         "every": 1, "timeout": 2}], "duration": null}
"""
import json
import os
import signal
import subprocess
import sys
import threading
import time


def read_netdev(wanted):
    with open("/proc/net/dev", "rb") as f:
        data = f.read().decode("ascii", "replace")
    out = {}
    for line in data.splitlines()[2:]:
        name, _, rest = line.partition(":")
        name = name.strip()
        if wanted and name not in wanted:
            continue
        v = rest.split()
        if len(v) < 16:
            continue
        # /proc/net/dev columns: rx bytes packets errs drop fifo frame compressed multicast,
        #                        tx bytes packets errs drop fifo colls carrier compressed
        out[name] = [int(v[0]), int(v[1]), int(v[3]), int(v[8]), int(v[9]), int(v[11])]
    return out


def main():
    cfg = json.loads(sys.argv[1])
    interval = float(cfg.get("interval", 0.1))
    wanted = set(cfg.get("ifaces") or [])
    probes = cfg.get("probes") or []
    duration = cfg.get("duration")
    stop = threading.Event()

    def on_term(signum, frame):
        stop.set()

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)

    def watch_stdin():
        try:
            while sys.stdin.buffer.read(4096):
                pass
        except (OSError, ValueError):
            pass
        stop.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    env = dict(os.environ, LC_ALL="C", LANG="C")
    t0 = time.monotonic()
    k = 0
    late_total = 0
    hello = {"hello": 1, "pid": os.getpid(), "t": time.time_ns(), "interval": interval,
             "python": sys.version.split()[0]}
    sys.stdout.write(json.dumps(hello) + "\n")
    sys.stdout.flush()
    while not stop.is_set():
        target = t0 + k * interval
        delay = target - time.monotonic()
        if delay > 0:
            if stop.wait(delay):
                break
        elif -delay > interval:
            # Fell behind (host busy): skip the missed ticks and say so, never bunch samples.
            skipped = int(-delay // interval)
            k += skipped
            late_total += skipped
        rec = {"seq": k, "t": time.time_ns(), "if": read_netdev(wanted)}
        if probes:
            outs = {}
            for pr in probes:
                if k % int(pr.get("every", 1)) != 0:
                    continue
                try:
                    p = subprocess.run(pr["argv"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       timeout=float(pr.get("timeout", 2)), env=env)
                    outs[pr["name"]] = p.stdout.decode("utf-8", "replace")
                    if p.returncode != 0:
                        outs[pr["name"] + ":error"] = "exit %d: %s" % (
                            p.returncode, p.stderr.decode("utf-8", "replace")[:200])
                except (OSError, subprocess.TimeoutExpired) as exc:
                    outs[pr["name"] + ":error"] = str(exc)[:200]
            rec["p"] = outs
        if late_total:
            rec["late"] = late_total
        try:
            sys.stdout.write(json.dumps(rec, separators=(",", ":")) + "\n")
            sys.stdout.flush()
        except (BrokenPipeError, OSError):
            break
        k += 1
        if duration is not None and k * interval >= float(duration):
            break


if __name__ == "__main__":
    main()
