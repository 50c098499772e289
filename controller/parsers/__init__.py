"""Registry of tool-output parsers for `ctl parse KIND FILE`.

Each kind names a module and a function `f(text: str) -> JSON-serialisable object` in the
one registry (`controller.registry`); the modules are imported lazily so that one parser's
import problem stays local. Parsers are pure: text in, typed objects out; they are tested on recorded real output.
"""
from __future__ import annotations

import re
import sys
from typing import Any, Callable

from controller.errors import ParseError, UsageError
from controller.registry import Registry

class UnparsableInput(UsageError):
    """`ctl parse` input that no parser recognises, or that is not text at all (exit 2)."""


PARSERS: Registry = Registry("parse kind", UsageError)
PARSERS.lazy("iperf3", "controller.parsers.iperf3:to_json",
             "iperf3 --json output (client or server)")
PARSERS.lazy("tc-qdisc", "controller.parsers.tc:to_json",
             "tc -j -s qdisc show")
PARSERS.lazy("ss", "controller.parsers.ss:to_json",
             "ss -tinM / ss -Mni socket listing")
PARSERS.lazy("nstat", "controller.parsers.nstat:to_json",
             "nstat -asz output or /proc/net/netstat")
PARSERS.lazy("ip-mptcp", "controller.parsers.ip_mptcp:to_json",
             "ip mptcp endpoint show (text or -j), limits show, or monitor events")
PARSERS.lazy("ipfw-pipe-show", "bridges.ipfw_parse:pipe_show_to_json",
             "ipfw pipe show / pipe N show")
PARSERS.lazy("ipfw-queue-show", "bridges.ipfw_parse:queue_show_to_json",
             "ipfw queue show")
PARSERS.lazy("ipfw-sched-show", "bridges.ipfw_parse:sched_show_to_json",
             "ipfw sched show")
PARSERS.lazy("ping", "controller.parsers.ping:to_json",
             "iputils ping output (replies, loss, rtt min/avg/max/mdev)")
PARSERS.lazy("snmpwalk", "controller.parsers.snmpwalk:to_json",
             "snmpwalk / snmpget output (numeric or named OIDs)")
PARSERS.lazy("mmcli", "nodes.modem.mmcli:to_json",
             "mmcli -m N [-J] [--signal-get] output")
PARSERS.lazy("qmicli", "nodes.modem.qmicli:to_json",
             "qmicli --nas-get-* output")
PARSERS.lazy("at", "nodes.modem.at:to_json",
             "AT command responses: +CSQ, +CESQ, +COPS, the 27.007 registration family "
             "(+CREG, +CGREG, +CEREG, +C5GREG), and vendor dialects: Quectel +QENG/+QNWINFO/+QCAINFO/+QSPN, "
             "Sierra !GSTATUS, Huawei ^HCSQ (incl. NR)/^SYSINFOEX, Cinterion ^SMONI, Telit #RFSTS, SIMCom +CPSI, "
             "Fibocom +GTCCINFO, u-blox +UCGED")
PARSERS.lazy("wimax", "nodes.modem.wimax:to_json",
             "wimaxcu status link/connect, madwimax log (SOURCE/RECON formats)")
PARSERS.lazy("gpsd", "nodes.modem.gps:to_json",
             "gpspipe -w JSON lines")
PARSERS.lazy("webtorrent", "controller.parsers.webtorrent:to_json",
             "webtorrent-cli download/seed output, webtorrent info JSON, or a bittorrent-tracker log")


def kinds() -> list[str]:
    return PARSERS.names()


def parser(kind: str) -> Callable[[str], Any]:
    return PARSERS.get(kind)


MAX_INPUT = 64 << 20      # the largest saved tool output ctl parses (iperf3 -J of a long run: a few MB)


def read_input(source: str, limit: int = MAX_INPUT) -> str:
    """The text of a saved tool output (a path, or '-' for stdin), refused with one line when it
    is too large (/dev/zero ends after `limit` bytes), binary (NUL bytes, not UTF-8) or empty."""
    try:
        if source == "-":
            data = sys.stdin.buffer.read(limit + 1)
        else:
            with open(source, "rb") as f:
                data = f.read(limit + 1)
    except IsADirectoryError:
        raise UnparsableInput(f"{source}: is a directory") from None
    except OSError as exc:
        raise UnparsableInput(f"cannot read {source}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise UnparsableInput(f"{source}: larger than {limit >> 20} MiB: not a saved tool output")
    if b"\0" in data:
        raise UnparsableInput(f"{source}: binary data (NUL bytes at line {data[:data.index(0)].count(10) + 1}): "
                              "not tool output")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise UnparsableInput(f"{source}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x})") from None
    if not text.strip():
        raise UnparsableInput(f"{source}: empty input")
    return text


def parse_input(kind: str, source: str, partial: bool = False) -> Any:
    """`ctl parse KIND SOURCE [--partial]`: read, parse, and refuse what no parser recognises
    (exit 2). With `partial`, what the parser recognised comes back with the lines it did not
    (see parse_partial); it still refuses input of which nothing is recognised."""
    text = read_input(source)
    try:
        if partial:
            return parse_partial(kind, text)
        return parse(kind, text)
    except ParseError as exc:
        raise UnparsableInput(exc.one_line()) from None


_LINE = re.compile(r"\bline (\d+)\b")
MAX_SKIPPED = 1000


def parse_partial(kind: str, text: str) -> dict[str, Any]:
    """Parse what can be parsed: each time the parser refuses a line it names ("line N", the
    convention of every line-oriented parser here), that line is set aside (blanked, so the
    others keep their numbers) and the rest parsed again. The result says which lines were set
    aside and why. A parser that names no line (JSON input) or input with nothing recognisable
    left is still an error (pure)."""
    lines = text.split("\n")
    skipped: list[dict[str, Any]] = []
    while True:
        try:
            result = parse(kind, "\n".join(lines))
            break
        except ParseError as exc:
            m = _LINE.search(str(exc))
            n = int(m.group(1)) if m else 0
            if not m or not 1 <= n <= len(lines) or not lines[n - 1].strip() or len(skipped) >= MAX_SKIPPED:
                raise
            skipped.append({"line": n, "text": lines[n - 1], "why": exc.one_line()})
            lines[n - 1] = ""
            if not any(line.strip() for line in lines):
                raise ParseError(f"{kind}: no line of the input was recognised") from None
    return {"partial": bool(skipped), "unrecognised": skipped, "result": result}


def parse(kind: str, text: str) -> Any:
    try:
        return parser(kind)(text)
    except ParseError:
        raise
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise ParseError(f"{kind}: cannot parse input: {exc}") from exc
