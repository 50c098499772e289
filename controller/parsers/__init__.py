"""Registry of tool-output parsers for `ctl parse KIND FILE`.

Each kind names a module and a function `f(text: str) -> JSON-serialisable object` in the
one registry (`controller.registry`); the modules are imported lazily so that one parser's
import problem stays local. Parsers are pure: text in, typed objects out; they are tested on recorded real output.
"""
from __future__ import annotations

import inspect
import sys
from typing import Any, Callable

from controller.errors import ParseError, UsageError
from controller.parsers import numbers
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


MAX_SKIPPED = 1000


def _one_pass(fn: Callable[..., Any]) -> bool:
    """Whether a parser sets lines aside itself (`unrecognised=` keyword): every line-oriented parser
    whose errors name a line does; JSON formats do not (they name no line to set aside)."""
    try:
        return "unrecognised" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def parse_partial(kind: str, text: str) -> dict[str, Any]:
    """Parse what can be parsed, in one pass: a parser that refuses a line (naming it, "line N") is
    given a list to put it in instead -- the line, its text, and the parser's reason -- and goes on as
    if the line were blank. The result says which lines were set aside and why. A format that names no
    line (JSON), an error about the input as a whole, more than MAX_SKIPPED unrecognised lines, or input
    of which no line was recognised, is still an error (pure)."""
    fn = parser(kind)
    if not _one_pass(fn):
        return {"partial": False, "unrecognised": [], "result": parse(kind, text)}
    skipped: list[dict[str, Any]] = []
    try:
        result = _guarded(kind, lambda: fn(text, unrecognised=skipped))
    except ParseError:
        _judge(kind, text, skipped)
        raise                                  # an error about the whole input (e.g. no pipe line at all)
    _judge(kind, text, skipped)
    skipped.sort(key=lambda x: x["line"])
    return {"partial": bool(skipped), "unrecognised": skipped, "result": result}


def _judge(kind: str, text: str, skipped: list[dict[str, Any]]) -> None:
    """Refuse input that is mostly not the tool's: too many lines set aside, or every line."""
    if len(skipped) > MAX_SKIPPED:
        raise ParseError(f"{kind}: more than {MAX_SKIPPED} lines not recognised (the first: "
                         f"{skipped[0]['why'][:160]}): not {kind} output")
    if skipped and len(skipped) >= sum(1 for line in text.splitlines() if line.strip()):
        raise ParseError(f"{kind}: no line of the input was recognised (the first: {skipped[0]['why'][:160]})")


def _guarded(kind: str, call: Callable[[], Any]) -> Any:
    """A parser's result, or ParseError: the exceptions a parser's own checks leave to Python (a failed
    int(), a missing key, a number too large for a float) and JSON nested too deep for json's recursive
    decoder become ParseError; a result with a number that is not finite or beyond 2**64 is refused."""
    try:
        return numbers.check(call(), kind)
    except ParseError:
        raise
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise ParseError(f"{kind}: cannot parse input: {str(exc)[:200]}") from exc
    except OverflowError:
        raise ParseError(f"{kind}: a number out of range in the input") from None
    except RecursionError:
        raise ParseError(f"{kind}: input nested too deeply") from None


def parse(kind: str, text: str) -> Any:
    return _guarded(kind, lambda: parser(kind)(text))
