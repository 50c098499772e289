"""Read a modem's AT port: send commands, collect each reply up to its final result code.

Runs on the modem host itself under /usr/bin/python3 -- stdlib only (os, termios, tty, select).

What a real AT port throws at a reader, and how it is handled here:
* echo: with echo on (the power-up default, and again after every modem reset) the command comes back
  first ("AT+CSQ\\r\\r\\n+CSQ: 24,99\\r\\n\\r\\nOK\\r\\n"); a leading line equal to the command is dropped;
* framing: lines end in \\r\\n (echo ends in a bare \\r); a reply ends at OK, ERROR, +CME ERROR: <n>,
  +CMS ERROR: <n> or NO CARRIER; blank framing lines are dropped, blank lines inside a reply are kept
  (Sierra !GSTATUS? has them);
* unsolicited result codes (+QIND:, RDY, ^HCSQ:, +CEREG: ...) can arrive before, inside or after a reply:
  a line whose prefix is a known URC prefix and is NOT the reply prefix of the command sent goes to
  `urcs`; input already waiting before a command is sent is unsolicited by definition;
* a silent modem (resetting, USB re-enumerating) gives a timeout: `AtPort.command` raises AtTimeout and
  `AtPoller.poll_once` returns None for that round's commands (a gap, never zeros), re-runs the setup
  commands on the next round, and reopens the tty after an I/O error.

CLI (one poll round, JSON on stdout; used over SSH by families.serial_poll_argv):
    python3 -m nodes.modem.serial_poll --device /dev/ttyUSB2 --baud 115200 --setup ATE0 \\
        --command 'qeng=AT+QENG="servingcell"' --command csq=AT+CSQ
"""
from __future__ import annotations

import argparse
import json
import os
import re
import select
import sys
import termios
import time
import tty
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

FINAL_RE = re.compile(r"^(OK|ERROR|NO CARRIER|\+CME ERROR:.*|\+CMS ERROR:.*)$", re.I)
_LINE_END = re.compile(rb"\r\n|\n|\r(?=[^\n])")
MAX_LINE = 64 * 1024          # longer than any reply line a modem prints (a +QENG neighbour list: < 1 KB)
# Kept in sync with at.URC_PREFIXES by a test; duplicated so this file stays importable on its own.
URC_PREFIXES = (
    "+QIND", "RDY", "+CPIN", "+QUSIM", "+CEREG", "+CREG", "+CGREG", "+C5GREG", "^HCSQ", "^RSSI", "^MODE",
    "^SYSSTART", "^SRVST", "^SIMST", "^BOOT", "RING", "+CMTI", "+CRING", "+QSTAT", "+CGEV", "+CUSD",
    "+QNETDEVSTATUS", "+QIURC", "POWERED DOWN", "+QSIMSTAT", "APP RDY",
)


class AtTimeout(TimeoutError):
    """No final result code within the timeout (modem busy, resetting or gone)."""

    def __init__(self, command: str, partial: str):
        super().__init__(f"{command}: no final result code (got {partial[:80]!r})")
        self.command = command
        self.partial = partial


@dataclass(frozen=True)
class AtReply:
    command: str
    lines: tuple[str, ...]          # information text, without echo, framing and URCs
    final: str                      # "OK", "ERROR", "+CME ERROR: 10", ...
    urcs: tuple[str, ...] = ()
    echoed: bool = False
    elapsed_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.final.upper() == "OK"

    @property
    def text(self) -> str:
        """The reply as the parsers take it: information lines then the final result code."""
        return "\n".join(self.lines + (self.final,))


def reply_prefix(command: str) -> str | None:
    """'AT+QENG="servingcell"' -> '+QENG'; 'AT!GSTATUS?' -> '!GSTATUS'; 'ATE0' -> None."""
    m = re.match(r"^AT([+!^#$%*&][A-Za-z0-9]+)", command.strip(), re.I)
    return m.group(1).upper() if m else None


def is_urc(line: str, own_prefix: str | None) -> bool:
    head = line.split(":", 1)[0].strip().upper() if ":" in line else line.strip().upper()
    if own_prefix is not None and head == own_prefix:
        return False
    return head in URC_PREFIXES


BAUD_RATES = {b: getattr(termios, f"B{b}") for b in (9600, 19200, 38400, 57600, 115200, 230400, 460800, 921600)
              if hasattr(termios, f"B{b}")}


class AtPort:
    """One open AT tty. Not thread-safe: one reader per port (ModemManager must not hold it too)."""

    def __init__(self, path: str, baud: int = 115200, *, timeout_s: float = 2.0,
                 clock: Callable[[], float] = time.monotonic):
        if baud not in BAUD_RATES:
            raise ValueError(f"unsupported baud rate {baud} (known: {sorted(BAUD_RATES)})")
        self.path = path
        self.baud = baud
        self.timeout_s = timeout_s
        self.clock = clock
        self.fd: int | None = None
        self._buf = b""

    def open(self) -> "AtPort":
        fd = os.open(self.path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        try:
            # Raw: no echo by the tty itself, no CR/LF translation, no line buffering -- the modem's own
            # bytes, exactly. 8N1, no flow control, receiver on, modem-control lines ignored.
            tty.setraw(fd, termios.TCSANOW)
            attrs = termios.tcgetattr(fd)
            attrs[2] = (attrs[2] & ~(termios.CSIZE | termios.PARENB | termios.CSTOPB)) | termios.CS8 \
                | termios.CREAD | termios.CLOCAL
            if hasattr(termios, "CRTSCTS"):
                attrs[2] &= ~termios.CRTSCTS
            attrs[4] = attrs[5] = BAUD_RATES[self.baud]
            termios.tcsetattr(fd, termios.TCSANOW, attrs)
            termios.tcflush(fd, termios.TCIOFLUSH)
        except (termios.error, OSError):
            os.close(fd)
            raise
        self.fd = fd
        self._buf = b""
        return self

    def close(self) -> None:
        if self.fd is not None:
            try:
                os.close(self.fd)
            finally:
                self.fd = None

    def __enter__(self) -> "AtPort":
        return self.open() if self.fd is None else self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- byte level ------------------------------------------------------------------------------------

    def _read_available(self, wait_s: float) -> bool:
        assert self.fd is not None
        r, _, _ = select.select([self.fd], [], [], max(0.0, wait_s))
        if not r:
            return False
        try:
            data = os.read(self.fd, 4096)
        except BlockingIOError:
            return False
        if not data:
            raise OSError(f"{self.path}: end of file (device gone?)")
        self._buf += data
        return True

    def _take_lines(self) -> list[str]:
        """Complete lines from the buffer. A line ends at \\n, or at \\r not followed by \\n; a trailing \\r
        waits for the next byte (it may be the first half of \\r\\n). One pass over the buffer, cut once;
        what is left without a line end is bounded by MAX_LINE (a modem that never ends its line cannot
        make every read rescan a growing buffer)."""
        lines: list[str] = []
        pos = 0
        for m in _LINE_END.finditer(self._buf):
            lines.append(self._buf[pos:m.start()].decode("utf-8", "replace"))
            pos = m.end()
        self._buf = self._buf[pos:]
        if len(self._buf) > MAX_LINE:
            lines.append(self._buf[:MAX_LINE].decode("utf-8", "replace"))   # cut: a line no modem prints
            self._buf = b""
        return lines

    def drain(self) -> list[str]:
        """Whatever arrived unasked (URCs, a late reply to a timed-out command): read and return it."""
        while self._read_available(0.0):
            pass
        lines = self._take_lines()
        if self._buf.endswith(b"\r"):
            lines.append(self._buf[:-1].decode("utf-8", "replace"))
            self._buf = b""
        return [x.strip() for x in lines if x.strip()]

    def write(self, data: bytes) -> None:
        assert self.fd is not None
        view = memoryview(data)
        deadline = self.clock() + self.timeout_s
        while view:
            try:
                n = os.write(self.fd, view)
                view = view[n:]
            except BlockingIOError:
                if self.clock() > deadline:
                    raise AtTimeout("write", "") from None
                select.select([], [self.fd], [], 0.05)

    # -- command level ---------------------------------------------------------------------------------

    def command(self, cmd: str, timeout_s: float | None = None) -> AtReply:
        if self.fd is None:
            self.open()
        timeout = self.timeout_s if timeout_s is None else timeout_s
        urcs = [x for x in self.drain() if not FINAL_RE.match(x) and x.upper() != cmd.upper()]
        started = self.clock()
        self.write(cmd.encode("ascii") + b"\r")
        own = reply_prefix(cmd)
        body: list[str] = []
        echoed = False
        deadline = started + timeout
        while True:
            for line in self._take_lines():
                s = line.strip()           # for matching only: reply lines are kept byte for byte
                if not s and not body:
                    continue                 # framing: the \r\n that opens every response
                if not echoed and not body and s.upper() == cmd.strip().upper():
                    echoed = True
                    continue
                if FINAL_RE.match(s):
                    return AtReply(cmd, tuple(_trim_blank(body)), s, tuple(urcs), echoed, self.clock() - started)
                if s and is_urc(s, own):
                    urcs.append(s)
                    continue
                body.append(line)
            remaining = deadline - self.clock()
            if remaining <= 0:
                raise AtTimeout(cmd, "\n".join(body))
            self._read_available(min(remaining, 0.05))


def _trim_blank(lines: list[str]) -> list[str]:
    while lines and not lines[0].strip():
        lines = lines[1:]
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return lines


@dataclass
class AtPoller:
    """Poll rounds over one AT port, surviving modem resets.

    `poll_once()` -> {name: reply text or None}. After a timeout the remaining commands of the round are
    skipped (the modem is not listening; waiting for each would stretch a 1 s sample to seconds), and the
    setup commands (ATE0, ...) are sent again first on the next round, because a reset restores defaults.
    """

    path: str
    baud: int = 115200
    setup: Sequence[str] = ()
    commands: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = 2.0
    clock: Callable[[], float] = time.monotonic
    port: AtPort | None = None
    needs_setup: bool = True
    last_urcs: tuple[str, ...] = ()
    replies: dict[str, AtReply] = field(default_factory=dict)

    def close(self) -> None:
        if self.port is not None:
            self.port.close()
            self.port = None

    def poll_once(self) -> dict[str, str | None]:
        out: dict[str, str | None] = {name: None for name in self.commands}
        self.replies = {}
        urcs: list[str] = []
        try:
            if self.port is None:
                self.port = AtPort(self.path, self.baud, timeout_s=self.timeout_s, clock=self.clock).open()
                self.needs_setup = True
            if self.needs_setup:
                for cmd in self.setup:
                    r = self.port.command(cmd)
                    urcs.extend(r.urcs)
                self.needs_setup = False
            for name, cmd in self.commands.items():
                r = self.port.command(cmd)
                urcs.extend(r.urcs)
                self.replies[name] = r
                out[name] = r.text
        except AtTimeout:
            self.needs_setup = True
        except OSError:
            self.close()          # device gone (USB re-enumeration): reopen next round
            self.needs_setup = True
        self.last_urcs = tuple(urcs)
        return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m nodes.modem.serial_poll",
                                 description="one AT poll round; prints {name: reply text or null} as JSON")
    ap.add_argument("--device", required=True)
    ap.add_argument("--baud", type=int, default=115200)
    ap.add_argument("--timeout", type=float, default=2.0)
    ap.add_argument("--setup", action="append", default=[], help="AT command run before polling (repeatable)")
    ap.add_argument("--command", action="append", default=[], help="NAME=AT-COMMAND (repeatable)")
    args = ap.parse_args(argv)
    commands: dict[str, str] = {}
    for item in args.command:
        name, sep, cmd = item.partition("=")
        if not sep or not cmd.upper().startswith("AT"):
            ap.error(f"--command wants NAME=AT..., got {item!r}")
        commands[name] = cmd
    poller = AtPoller(args.device, args.baud, setup=args.setup, commands=commands, timeout_s=args.timeout)
    try:
        out = poller.poll_once()
    finally:
        poller.close()
    json.dump({"replies": out, "urcs": list(poller.last_urcs)}, sys.stdout)
    sys.stdout.write("\n")
    return 0 if any(v is not None for v in out.values()) or not out else 1


if __name__ == "__main__":
    raise SystemExit(main())
