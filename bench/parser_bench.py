#!/usr/bin/env python3
"""Benchmark: every parser is linear in its input (issue 23, item 7).

For each kind of `ctl parse` (controller.parsers.PARSERS), for `ctl parse --partial`, and for the
parsers of live output that do not go through `ctl parse` (the dummynet driver's listing reader, the
field logger's ping / iperf3 / webtorrent line readers), one or more worst-case inputs are built: the
adversary of that parser's patterns and loops (a long run of the characters a pattern's neighbouring
quantifiers both match, inside one header or line; thousands of rows under one object; thousands of
repeated keys; thousands of unknown lines). Each is parsed at 100 KB and at 1 MB (the same generator,
ten times as much), best of N runs; the table prints both times and their ratio.

The baseline is the 100 KB run of the same input, in the same run: a linear parser gives a ratio near
10 (a little more where memory gets colder; a lot less where start-up dominates), a quadratic one
~100, a cubic one ~1000. Whether the parse ends in a result or in ctl's ParseError is printed too
(garbage must end in ParseError, and does so in linear time as well).

Nothing is asserted here (speed is not a test); tests/unit/controller/parsers/test_linear.py holds the
regression inputs of the findings, checked for their *result*.

Usage: .venv/bin/python bench/parser_bench.py [--runs 3] [--only KIND] [--json OUT.json]
"""
from __future__ import annotations

import argparse
import gc
import json
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from controller.errors import ParseError  # noqa: E402
from controller.parsers import kinds, parse, parse_partial  # noqa: E402

RECORDED = PROJECT / "tests" / "fixtures" / "recorded" / "generated"
TC = PROJECT / "tests" / "fixtures" / "generated" / "tc"

KB = 1000


def fill(head: str, unit: str, size: int, tail: str = "") -> str:
    """head + unit repeated to `size` characters in all + tail."""
    n = max(1, (size - len(head) - len(tail)) // max(1, len(unit)))
    return head + unit * n + tail


def json_grown(path: Path, key_path: tuple[str | int, ...], size: int) -> str:
    """A recorded JSON document whose list at key_path is repeated until the text is `size` long."""
    doc = json.loads(path.read_text())
    node: Any = doc
    for k in key_path:
        node = node[k]
    one = list(node)
    unit = len(json.dumps(one[0]))
    node[:] = one * max(1, size // max(1, unit))
    return json.dumps(doc)


def tc_grown(size: int) -> str:
    doc = json.loads((TC / "02_tbf_pfifo.s.json").read_text())
    unit = len(json.dumps(doc))
    return json.dumps(doc * max(1, size // unit))


# ---- the worst cases, per kind -----------------------------------------------------------------------
# Each is (name, what it attacks, generator(size) -> text).

SOCK = "ESTAB 0 0 10.1.1.1:34478 10.1.1.2:5201"
FLOW = "  0 tcp   199.47.217.146/80           10.0.1.2/59964 7938  4287713  0    0  66\n"
MFLOW = "  0 ip           0.0.0.0/0             0.0.0.0/0        3      499  0    0   0\n"

CASES: dict[str, list[tuple[str, str, Callable[[int], str]]]] = {
    "iperf3": [
        ("intervals", "a -J run with many intervals", lambda n: json_grown(
            RECORDED / "iperf3_tcp_1stream.client.json", ("intervals",), n)),
        ("nested", "JSON arrays nested to the size", lambda n: "[" * n),
    ],
    "tc-qdisc": [("qdiscs", "tc -j -s output repeated", tc_grown)],
    "ss": [
        ("colons", "one address of ':' (the address pattern's lazy host)", lambda n: fill(
            "State Recv-Q Send-Q Local:Port Peer:Port\nESTAB 0 0 ", "a:", n, " 10.1.1.2:5201\n")),
        ("info-run", "one info line of tokens", lambda n: fill(
            "State Recv-Q Send-Q Local:Port Peer:Port\n" + SOCK + "\n\t cubic", " x:(a,b)", n, "\n")),
        ("sockets", "many sockets", lambda n: fill("State Recv-Q Send-Q Local:Port Peer:Port\n",
                                                   SOCK + "\n\t cubic wscale:7,7 rto:204 rtt:1.5/0.7\n", n)),
    ],
    "nstat": [
        ("glued", "one name of letters and digits (the glued name-value pattern)", lambda n: fill("", "a1", n, " 0\n")),
        ("counters", "many counters", lambda n: "".join(
            f"C{i:08d}  {i}  0.0\n" for i in range(max(1, n // 22)))),
    ],
    "ip-mptcp": [
        ("event-blanks", "an event header of blanks without its ']'", lambda n: fill("[ CREATED", " ", n, "\n")),
        ("events", "many monitor events", lambda n: fill(
            "", "[       CREATED] token=dae409f8 remid=0 locid=0 saddr4=10.1.1.1 daddr4=10.1.1.2 sport=1 dport=2\n", n)),
    ],
    "ipfw-pipe-show": [
        ("flow-rows", "rows under one pipe (a tuple grown per row)", lambda n: fill(
            "00001:  12.000 Mbit/s    0 ms burst 0\n"
            "q131073  50 sl. 1 flows (1 buckets) sched 65537 weight 0 lmax 0 pri 0 droptail\n"
            " sched 65537 type FIFO flags 0x0 0 buckets 0 active\n", MFLOW, n)),
        ("classic-blanks", "classic pipe line, blanks before the queue size (finding)", lambda n: fill(
            "00001: unlimited   10 ms", " ", n, "x\n")),
        ("classic-rows", "classic rows under one pipe", lambda n: fill(
            "00001:  12.000 Mbit/s    0 ms   50 sl. 1 queues (1 buckets) droptail\n", FLOW, n)),
    ],
    "ipfw-queue-show": [
        ("flow-rows", "rows under one queue", lambda n: fill(
            "q10000  50 sl. 1 flows (1 buckets) sched 10000 weight 100 lmax 0 pri 0 droptail\n", MFLOW, n)),
    ],
    "ipfw-sched-show": [
        ("children", "one children list", lambda n: fill(
            "10000:  25.000 Mbit/s    0 ms burst 0\n sched 10000 type WF2Q+ flags 0x0 0 buckets 0 active\n"
            "   Children flowsets:", " 1", n, "\n")),
    ],
    "ping": [
        ("replies", "many replies", lambda n: fill(
            "PING 10.0.0.2 (10.0.0.2) 56(84) bytes of data.\n",
            "64 bytes from 10.0.0.2: icmp_seq=1 ttl=64 time=50.2 ms\n", n,
            "\n--- 10.0.0.2 ping statistics ---\n4 packets transmitted, 4 received, 0% packet loss, time 3004ms\n"
            "rtt min/avg/max/mdev = 50.187/50.201/50.223/0.013 ms\n")),
    ],
    "snmpwalk": [
        ("backslashes", "a quoted string of backslashes (the closing-quote search)", lambda n: fill(
            'iso.3.6.1.2.1.1.1.0 = STRING: "', "\\", n, "\n")),
        ("open-quotes", "every line opens a string (each used to rescan 64 lines)", lambda n: fill(
            "", 'iso.3.6.1.2.1.1.1.0 = STRING: "abc\n', n)),
        ("hex-lines", "a Hex-STRING wrapped over many lines", lambda n: fill(
            "iso.3.6.1.2.1.2.2.1.6.2 = Hex-STRING: 00 11 \n", "00 11 22 33 44 55 66 77 88 99 AA BB CC DD EE FF \n", n)),
        ("garbage", "lines of no format (refused)", lambda n: fill("", "x = y z\n", n)),
    ],
    "mmcli": [
        ("quotes", "a quoted value of quotes and brackets", lambda n: fill(
            "  General  |  path: '", "'(", n, "\n")),
        ("sections", "one section name repeated", lambda n: fill("", "  Signal | rssi: -60\n", n)),
        ("prompts", "blank lines between prompts", lambda n: fill("", "$ mmcli -m 0\n\n\n\n", n, "  X | a: b\n")),
    ],
    "qmicli": [
        ("header-blanks", "'[' and blanks (the cubic header pattern: finding)", lambda n: fill("[", " ", n, "x")),
        ("headerless", "stray lines before an output with no header (a tree per dropped line)", lambda n: fill(
            "", "a: 'b'\n", n, "  LTE:\n    RSSI: '-60 dBm'\n")),
        ("repeated-keys", "one key repeated under a header", lambda n: fill(
            "[/dev/cdc-wdm0] Successfully got signal info\n\tLTE:\n", "\t\tRSSI: '-62 dBm'\n", n)),
        ("at-echo", "an AT echo of letters and a blank", lambda n: fill("AT", "a", n, " ")),
        ("garbage", "10 MB-style garbage (finding), refused", lambda n: fill("", "ab :'[]$#@\tx\n", n)),
    ],
    "at": [
        ("gstatus", "one !GSTATUS line of continuation pieces", lambda n: fill(
            "AT!GSTATUS?\n!GSTATUS:\nCurrent Time:  356", "  x", n, "\nOK\n")),
        ("hcsq", "a ^HCSQ of leading numbers", lambda n: fill("^HCSQ: ", "1,", n, '"LTE",1\n')),
        ("replies", "many +CSQ replies", lambda n: fill("", "AT+CSQ\n+CSQ: 20,99\nOK\n", n)),
    ],
    "wimax": [
        ("kv-blanks", "a key of a letter and blanks, no colon (finding)", lambda n: fill(
            "Link Status: Connected\n  a", " ", n, "x\n")),
        ("header-blanks", "a header value with a run of blanks inside", lambda n: fill(
            "Link Status: a", " ", n, "b\n")),
    ],
    "gpsd": [
        ("reports", "many TPV reports", lambda n: fill(
            "", '{"class":"TPV","mode":3,"time":"2026-01-01T00:00:00Z","lat":1.5,"lon":2.5}\n', n)),
        ("nested", "a line of arrays nested to the size", lambda n: "{" + '"a":' + "[" * n),
    ],
    "webtorrent": [
        ("running", "a 'Running time' line of repeated separators", lambda n: fill(
            "Running time: ", "  Time remaining: ", n, "\n")),
    ],
}


def noisy_rows(size: int) -> str:
    """A classic pipe with flow rows, a line of noise after every ~1 KB of rows (at most 1000 noise lines:
    `--partial` refuses more)."""
    rows = FLOW * 13
    unit = rows + "Connection to br1 closed.\n"
    return fill("00001:  12.000 Mbit/s    0 ms   50 sl. 1 queues (1 buckets) droptail\n", unit, size)


def _live_cases() -> dict[str, list[tuple[str, str, Callable[[int], str], Callable[[str], Any]]]]:
    from bridges.dummynet.listing import read_pipes
    from nodes.fieldlog.parsers import WebtorrentFrames, parse_iperf3_interval, parse_ping_line

    def ping_lines(text: str) -> int:
        return sum(1 for line in text.splitlines() if parse_ping_line(line))

    def iperf_lines(text: str) -> int:
        return sum(1 for line in text.splitlines() if parse_iperf3_interval(line))

    def torrent(text: str) -> int:
        w = WebtorrentFrames()
        return sum(1 for line in text.splitlines() if w.feed(line))

    return {
        "live: dummynet driver": [
            ("classic-blanks", "classic pipe line, blanks before the queue size", lambda n: fill(
                "00001: unlimited   10 ms", " ", n, "x\n"), read_pipes),
            ("flow-rows", "rows under one pipe", CASES["ipfw-pipe-show"][0][2], read_pipes),
        ],
        "live: field logger ping": [
            ("icmp-seq", "one line of many icmp_seq= (finding's kind)", lambda n: fill(
                "64 bytes from 10.0.0.2: ", "icmp_seq=1 ", n), ping_lines),
        ],
        "live: field logger iperf3": [
            ("intervals", "many interval lines", lambda n: fill(
                "", "[  5]   0.00-1.00   sec  1.12 MBytes  9.39 Mbits/sec\n", n), iperf_lines),
        ],
        "live: field logger webtorrent": [
            ("running", "a 'Running time' line of repeated separators", CASES["webtorrent"][0][2], torrent),
        ],
    }


def time_once(fn: Callable[[str], Any], text: str) -> tuple[float, str]:
    gc.collect()
    t0 = time.perf_counter()
    try:
        fn(text)
        outcome = "result"
    except ParseError as exc:
        outcome = "ParseError" + (" (nested)" if "nested" in str(exc) else "")
    return time.perf_counter() - t0, outcome


def measure(fn: Callable[[str], Any], gen: Callable[[int], str], runs: int) -> dict[str, Any]:
    small, large = gen(100 * KB), gen(1000 * KB)
    t_small = min(time_once(fn, small)[0] for _ in range(runs))
    results = [time_once(fn, large) for _ in range(runs)]
    t_large = min(t for t, _ in results)
    return {"bytes_small": len(small.encode()), "bytes_large": len(large.encode()), "t_100k_s": t_small,
            "t_1m_s": t_large, "ratio": t_large / t_small if t_small > 0 else float("inf"),
            "outcome": results[0][1]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3, help="runs per size; the best is kept (default 3)")
    ap.add_argument("--only", help="only the kinds whose name contains this text")
    ap.add_argument("--json", type=Path, help="also write the rows to this JSON file")
    args = ap.parse_args()

    missing = set(kinds()) - set(CASES)
    if missing:
        print(f"parser_bench: no worst case for {sorted(missing)}", file=sys.stderr)
        return 1
    rows: list[dict[str, Any]] = []
    plan: list[tuple[str, str, str, Callable[[int], str], Callable[[str], Any]]] = []
    for kind, cases in CASES.items():
        for name, what, gen in cases:
            plan.append((kind, name, what, gen, lambda text, k=kind: parse(k, text)))
    plan.append(("--partial", "noise-1000", "ipfw-pipe-show --partial: rows with a noise line every ~1 KB, "
                 "up to 1000 (finding: each was a whole re-parse)", noisy_rows,
                 lambda text: parse_partial("ipfw-pipe-show", text)))
    plan.append(("--partial", "noise-all", "every other line noise: refused (more than 1000), in one pass",
                 lambda n: fill("", "00001:  10.000 Mbit/s   50 ms   50 sl. 1 queues (1 buckets) droptail\n"
                                    "Connection to br1 closed.\n", n),
                 lambda text: parse_partial("ipfw-pipe-show", text)))
    for kind, cases in _live_cases().items():
        for name, what, gen, fn in cases:
            plan.append((kind, name, what, gen, fn))
    print(f"# parser_bench {datetime.now(timezone.utc).isoformat(timespec='seconds')}, "
          f"Python {platform.python_version()}, best of {args.runs}")
    print(f"| {'kind':<30} | {'worst case':<16} | {'100 KB (ms)':>11} | {'1 MB (ms)':>10} | {'ratio':>6} | outcome |")
    print(f"|{'-' * 32}|{'-' * 18}|{'-' * 13}|{'-' * 12}|{'-' * 8}|---------|")
    for kind, name, what, gen, fn in plan:
        if args.only and args.only not in kind:
            continue
        r = measure(fn, gen, args.runs)
        rows.append({"kind": kind, "case": name, "what": what, **r})
        print(f"| {kind:<30} | {name:<16} | {r['t_100k_s'] * 1e3:>11.2f} | {r['t_1m_s'] * 1e3:>10.1f} | "
              f"{r['ratio']:>6.1f} | {r['outcome']} |", flush=True)
    if args.json:
        args.json.write_text(json.dumps({"python": platform.python_version(), "runs": args.runs, "rows": rows},
                                        indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
