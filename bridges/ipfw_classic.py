"""The classic dummynet listing: `ipfw pipe show` of FreeBSD before the 2010 dummynet rewrite
(FreeBSD <= 7), macOS `dnctl pipe show` / `dnctl list` (current macOS included), Emulab/GENI
delay nodes and the ipfw ports that kept the old code. Pure: text in, frozen dataclasses out.

The grammar is the printf format strings of that code (ipfw2.c `list_pipes`,
`print_flowset_parms`, `list_queues`; dnctl's copy is the same):

    %05d: <bw> %4d ms <qs><plr> %d queues (%d buckets) <droptail | \\n\\t  [G]RED w_q ...>
        <bw>  = "%7.3f Mbit/s" | "%7.3f Kbit/s" | "%7.3f bit/s " | "unlimited" | <clock interface>
        <qs>  = "%3d sl." (slots) | "%d KB" (bytes >= 8192, printed /1024) | "%d B"
        <plr> = "plr %f" (probability, 6 decimals; absent when 0)
    q%05d: weight %d pipe %d <qs><plr> %d queues (%d buckets) <droptail | RED ...>
        mask: 0x%02x 0x%08x/0x%04x -> 0x%08x/0x%04x
    BKT Prot ___Source IP/port____ ____Dest. IP/port____ Tot_pkt/bytes Pkt/Byte Drp
    %3d %-4s %15s/%-5d %15s/%-5d %4llu %8llu %2u %4u %3u
       S <n>  F <n> / V <n>   (verbose)

plus the IPv6 variant of the mask and flow lines. Values printed with less precision than the
kernel holds (bandwidth to 3 decimals of its unit, a byte queue in whole KiB from 8 KiB, plr to
6 decimals) keep the printed text next to the value. `loss rate X` is read like `plr X` (a
spelling some delay-node tools print); a header repeated before each pipe is accepted. An
unrecognised line is a ParseError naming it, never skipped.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from controller.errors import ParseError
from controller.parsers import numbers


def _n(text: str, base: int = 10) -> int:
    """A number of the listing, bounded: a 400-digit one is a ParseError, not a huge int passed on."""
    return numbers.integer(text, "dummynet listing: number", base)


def _f(text: str) -> float:
    """A decimal of the listing (plr, RED and PIE parameters, times): finite and bounded."""
    return numbers.finite(text, "dummynet listing: number")


FORMAT = "classic"
_BW = r"(?P<bw>unlimited|\s*[0-9.]+ (?:Mbit|Kbit|bit)/s|[A-Za-z][A-Za-z0-9_.]*)"
_QS = r"(?P<qs>\s*\d+ sl\.|\d+ KB|\d+ B)"
_PLR = r"(?:\s*+(?:plr|loss rate) (?P<plr>[0-9.]+))?"
_TAIL = r"\s+(?P<queues>\d+) queues \((?P<buckets>\d+) buckets\)\s*(?P<aqm>droptail|.*)$"
# The blanks before the queue size are taken possessively (`\s++`): _QS may start with blanks of its own,
# and two quantifiers sharing a run of blanks made the match quadratic in the run's length.
PIPE_RE = re.compile(r"^(?P<nr>\d{5,}): " + _BW + r"\s+(?P<delay>\d+) ms\s++" + _QS + _PLR + _TAIL)
QUEUE_RE = re.compile(r"^q(?P<nr>\d{5,}): weight (?P<weight>\d+) pipe (?P<pipe>\d+)\s++" + _QS + _PLR + _TAIL)
RED_RE = re.compile(r"^\s*(?P<g>G?)RED w_q (?P<wq>[0-9.]+) min_th (?P<min>\d+) max_th (?P<max>\d+) "
                    r"max_p (?P<maxp>[0-9.]+)\s*$")
MASK4_RE = re.compile(r"^\s*mask: 0x(?P<proto>[0-9a-f]{2}) 0x(?P<src>[0-9a-f]{8})/0x(?P<sport>[0-9a-f]{4}) -> "
                      r"0x(?P<dst>[0-9a-f]{8})/0x(?P<dport>[0-9a-f]{4})\s*$", re.I)
MASK6_RE = re.compile(r"^\s*mask: proto: 0x(?P<proto>[0-9a-f]{2}), flow_id: 0x(?P<flow>[0-9a-f]{8}),\s+"
                      r"(?P<src>\S+)/0x(?P<sport>[0-9a-f]{4}) -> (?P<dst>\S+)/0x(?P<dport>[0-9a-f]{4})\s*$", re.I)
HEADER_RE = re.compile(r"^BKT (?:Prot|___Prot___) .*Tot_pkt/bytes Pkt/Byte Drp\s*$")
_COUNTS = r"(?P<tp>\d+)\s+(?P<tb>\d+)\s+(?P<qp>\d+)\s+(?P<qb>\d+)\s+(?P<dr>\d+)\s*$"
FLOW4_RE = re.compile(r"^\s*(?P<bkt>\d+) (?P<proto>\S+)\s+(?P<src>[0-9.]+)/(?P<sport>\d+)\s+"
                      r"(?P<dst>[0-9.]+)/(?P<dport>\d+)\s+" + _COUNTS)
FLOW6_RE = re.compile(r"^\s*(?P<bkt>\d+)\s+(?P<proto>\S+)\s+(?P<flow>\d+)\s+(?P<src>[0-9A-Fa-f:.]+)/(?P<sport>\d+)\s+"
                      r"(?P<dst>[0-9A-Fa-f:.]+)/(?P<dport>\d+)\s+" + _COUNTS)
VERBOSE_RE = re.compile(r"^\s*(?:S\s+(?P<s>\d+)\s+F\s+(?P<f>\d+)|V\s+(?P<v>\d+))\s*$")
_UNITS = {"Mbit/s": 10**6, "Kbit/s": 10**3, "bit/s": 1}


@dataclass(frozen=True)
class ClassicFlow:
    line_no: int
    bucket: int
    proto: str
    src: str
    src_port: int
    dst: str
    dst_port: int
    tot_pkts: int
    tot_bytes: int
    queue_pkts: int
    queue_bytes: int
    drops: int
    flow_id: int | None = None          # IPv6 flows


@dataclass(frozen=True)
class ClassicObject:
    """One pipe (`NNNNN:`) or queue (`qNNNNN:`) with its mask and flows."""
    kind: str                           # "pipe" | "queue"
    number: int
    line_no: int
    bw_text: str | None                 # as printed; None for a queue
    bw_bps: int | None                  # None: unlimited, a clock interface, or a queue
    clock_interface: str | None
    delay_ms: int | None
    queue_text: str
    queue_slots: int | None
    queue_bytes: int | None
    queue_bytes_exact: bool             # False: printed in whole KiB (>= 8 KiB), truncated
    plr: float
    plr_text: str | None
    queues: int
    buckets: int
    aqm: str                            # "droptail" | "red" | "gred"
    red: dict[str, Any] | None = None
    weight: int | None = None
    parent_pipe: int | None = None
    mask: dict[str, Any] | None = None
    flows: tuple[ClassicFlow, ...] = ()
    verbose: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__ if k not in ("flows",)}
        d["flows"] = [f.__dict__ for f in self.flows]
        d["verbose"] = list(self.verbose)
        return d


def _err(line_no: int, line: str, why: str) -> ParseError:
    return ParseError(f"dummynet classic listing, line {line_no}: {why}: {line.strip()[:120]!r}")


def _bandwidth(text: str) -> tuple[int | None, str | None]:
    t = text.strip()
    if t == "unlimited":
        return None, None
    m = re.fullmatch(r"([0-9.]+) (Mbit/s|Kbit/s|bit/s)", t)
    if m:
        return numbers.scaled(m.group(1), _UNITS[m.group(2)], "dummynet listing: bandwidth"), None
    return None, t                                   # a clock interface: `bw tun0`


def _queue(text: str) -> tuple[int | None, int | None, bool]:
    t = text.strip()
    n = _n(t.split()[0])
    if t.endswith("sl."):
        return n, None, True
    if t.endswith("KB"):
        return None, n * 1024, False
    return None, n, True


def looks_classic(text: str, skip_unless: Callable[[str], bool] | None = None) -> bool:
    """The listing's first object line is of the classic shape (the rewrite prints `burst`). With
    `skip_unless` (the other format's object-line test), lines of neither shape before it are skipped."""
    for line in text.splitlines():
        if line.strip():
            line = line.rstrip("\r")
            classic = bool(PIPE_RE.match(line) or QUEUE_RE.match(line))
            if classic or skip_unless is None or skip_unless(line):
                return classic
    return False


def parse(text: str, unrecognised: list[dict[str, Any]] | None = None) -> list[ClassicObject]:
    """The objects of a classic listing; an unknown line is a ParseError naming it, or, given
    `unrecognised`, set aside there ({"line", "text", "why"}) and read as a blank line."""
    objects: list[dict[str, Any]] = []
    state: dict[str, Any] = {"cur": None, "pending_red": False, "seen": set()}
    for i, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip("\r")
        if not line.strip():
            continue
        try:
            try:
                _line(state, objects, i, line)
            except ValueError as exc:             # a number of the right characters but no number ("1.2.3")
                raise _err(i, line, f"not a number ({exc})") from None
        except ParseError as exc:
            if unrecognised is None:
                raise
            unrecognised.append({"line": i, "text": raw, "why": exc.one_line()})
    if state["pending_red"]:
        raise ParseError("dummynet classic listing: the last object's RED parameters line is missing")
    if not objects:
        raise ParseError("dummynet classic listing: no pipe or queue line")
    return [ClassicObject(**{**o, "flows": tuple(o["flows"]), "verbose": tuple(o["verbose"])}) for o in objects]


def _line(state: dict[str, Any], objects: list[dict[str, Any]], i: int, line: str) -> None:
    """Read line i into `state` (the current object, whether its RED line is due, the objects seen) and
    `objects`; ParseError, with nothing changed, for a line that does not fit."""
    cur: dict[str, Any] | None = state["cur"]
    m = PIPE_RE.match(line) or QUEUE_RE.match(line)
    if m:
        slots, qbytes, exact = _queue(m.group("qs"))
        is_pipe = "delay" in m.groupdict() and m.groupdict().get("delay") is not None
        bw_bps, clock = _bandwidth(m.group("bw")) if is_pipe else (None, None)
        aqm = m.group("aqm").strip()
        if aqm not in ("droptail", ""):
            raise _err(i, line, "unknown queue management")
        kind, number = "pipe" if is_pipe else "queue", _n(m.group("nr"))
        if (kind, number) in state["seen"]:
            raise ParseError(f"dummynet classic listing, line {i}: {kind} {number} twice")
        cur = {"kind": kind, "number": number, "line_no": i,
               "bw_text": m.group("bw").strip() if is_pipe else None, "bw_bps": bw_bps, "clock_interface": clock,
               "delay_ms": _n(m.group("delay")) if is_pipe else None, "queue_text": m.group("qs").strip(),
               "queue_slots": slots, "queue_bytes": qbytes, "queue_bytes_exact": exact,
               "plr": _f(m.group("plr")) if m.group("plr") else 0.0, "plr_text": m.group("plr"),
               "queues": _n(m.group("queues")), "buckets": _n(m.group("buckets")),
               "aqm": "droptail", "red": None,
               "weight": None if is_pipe else _n(m.group("weight")),
               "parent_pipe": None if is_pipe else _n(m.group("pipe")),
               "mask": None, "flows": [], "verbose": []}
        state["seen"].add((kind, number))
        state["cur"], state["pending_red"] = cur, aqm == ""
        objects.append(cur)
        return
    if cur is None:
        if HEADER_RE.match(line):
            return
        raise _err(i, line, "expected a pipe line `NNNNN: <bw> <delay> ms ...` first")
    r = RED_RE.match(line)
    if r and state["pending_red"]:
        red = {"w_q": _f(r.group("wq")), "min_th": _n(r.group("min")), "max_th": _n(r.group("max")),
               "max_p": _f(r.group("maxp"))}
        cur["aqm"], cur["red"] = "gred" if r.group("g") else "red", red
        state["pending_red"] = False
        return
    if state["pending_red"]:
        raise _err(i, line, "the RED parameters line is missing")
    m4, m6 = MASK4_RE.match(line), MASK6_RE.match(line)
    if m4 or m6:
        mm = m4 or m6
        cur["mask"] = {"family": 4 if m4 else 6, "proto": _n(mm.group("proto"), 16), "src": mm.group("src"),
                       "src_port": _n(mm.group("sport"), 16), "dst": mm.group("dst"),
                       "dst_port": _n(mm.group("dport"), 16),
                       **({"flow_id": _n(mm.group("flow"), 16)} if m6 else {})}
        return
    if HEADER_RE.match(line):
        return
    f = FLOW4_RE.match(line) or FLOW6_RE.match(line)
    if f:
        g = f.groupdict()
        cur["flows"].append(ClassicFlow(i, _n(g["bkt"]), g["proto"], g["src"], _n(g["sport"]), g["dst"],
                                        _n(g["dport"]), _n(g["tp"]), _n(g["tb"]), _n(g["qp"]), _n(g["qb"]),
                                        _n(g["dr"]), _n(g["flow"]) if g.get("flow") else None))
        return
    if VERBOSE_RE.match(line):
        cur["verbose"].append(" ".join(line.split()))      # S <n> F <n> / V <n>, blanks folded
        return
    raise _err(i, line, "not a line of the classic dummynet listing")


def to_json(text: str, unrecognised: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    objs = parse(text, unrecognised)
    return {"format": FORMAT, "format_note": "classic dummynet listing (FreeBSD <= 7, macOS dnctl, Emulab/GENI)",
            "objects": [o.to_json() for o in objs]}
