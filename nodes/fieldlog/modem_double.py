"""TEST DOUBLE standing in for modem hardware on the virtual rack: NOT a modem, NOT a driver.

`ctl lab up` runs this inside a modem host's network namespace (controller/lab.py). It starts the AT
modem emulator of nodes/modem/emulator.py on a pseudo-terminal, replaying the recorded drive trace
`field_test_trace()` (SINR dip, cell change, a 3-second modem reset, LTE -> EN-DC) in real time, looped,
on the wall clock: the trace's state at wall time T is the state at T mod the trace's length, so a test
knows what the "modem" said at any second. The pty's path changes from one start to the next, so the
emulator links it at the stable path the inventory's `device:` names, and removes the link on exit.

    python3 nodes/fieldlog/modem_double.py --link /run/ctl/ctlv/hosts/m2/ttyAT0 --family at-quectel
    python3 nodes/fieldlog/modem_double.py --link /run/ctl/ctlv/hosts/m1/mm/pty --vendor quectel   (ModemManager's)
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from typing import Callable, List, Optional

if __name__ == "__main__":                       # run as a script by the lab: make `nodes` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from nodes.modem.emulator import FAMILY_VENDOR, VENDORS, AtModemEmulator, field_test_trace  # noqa: E402


def trace_clock(duration_s: float, now: Callable[[], float] = time.time) -> Callable[[], float]:
    """The trace position at wall time: T mod duration (every host and test agree on it)."""
    return lambda: now() % duration_s


def link_atomically(target: str, link: str) -> None:
    tmp = link + ".tmp"
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    os.symlink(target, tmp)
    os.replace(tmp, link)


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description="AT modem emulator (TEST DOUBLE) on a pty, replaying a drive trace")
    ap.add_argument("--link", required=True, help="stable path to link the pty at (the inventory's device)")
    ap.add_argument("--family", default="at-quectel", choices=sorted(FAMILY_VENDOR),
                    help="the AT family the modem host reads it with (sets the vendor)")
    ap.add_argument("--vendor", choices=sorted(VENDORS),
                    help="the vendor the emulated modem plays, whatever reads it (e.g. ModemManager)")
    args = ap.parse_args(argv)
    vendor = args.vendor or FAMILY_VENDOR[args.family]
    trace = field_test_trace()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    os.makedirs(os.path.dirname(args.link), exist_ok=True)
    with AtModemEmulator(trace, trace_clock(trace.duration_s), vendor=vendor) as emu:
        link_atomically(emu.path, args.link)
        print("modem test double (%s) on %s, linked at %s; trace %g s looped on the wall clock"
              % (vendor, emu.path, args.link, trace.duration_s), flush=True)
        try:
            while not stop.wait(1.0):
                pass
        finally:
            try:
                if os.path.realpath(args.link) == os.path.realpath(emu.path):
                    os.unlink(args.link)
            except OSError:
                pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
