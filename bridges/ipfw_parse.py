"""Parsers for FreeBSD dummynet listings (`ipfw|dnctl pipe|queue|sched show`) and friends.

Everything here is pure: text in, frozen dataclasses out. The grammar is taken from the
printf format strings of sbin/ipfw/dummynet.c (quoted in tests/fixtures/recorded/
01_ipfw_dummynet.md) and checked against the real recorded samples there.

Losslessness is a design rule, not a hope: every line becomes one typed record whose
`render()` reproduces the line exactly as dummynet.c printed it (up to trailing blanks,
which markdown copies and some terminals drop). The unit tests re-render every recorded
sample and compare, so a field the parser forgot to keep shows up as a test failure.

Where ipfw prints a value with less precision than the kernel holds (bandwidth with 3
decimals of its unit, plr with 6 decimals, byte queues >= 8 KiB in whole KiB, bursts
>= 10^9 bytes with a binary prefix), the record keeps the printed text AND the integer or
float it denotes, plus a flag or resolution saying how exact that value is.

Anything that does not match a known line shape raises ParseError naming the line: a
silently skipped line would be a silently dropped measurement.

Also here: `ipfw -S list` rules, `sysctl` name/value output and `freebsd-version`.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from controller.errors import ParseError

# ---- small value types --------------------------------------------------------------------

_BW_UNITS = {"bit/s": 1, "Kbit/s": 10**3, "Mbit/s": 10**6, "Gbit/s": 10**9}
# humanize_number(..., HN_AUTOSCALE, 0) prefixes (divisor 1024, no HN_B): "", k, M, G, T, P, E
_HN_PREFIX = {"": 0, "k": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}


@dataclass(frozen=True)
class TimeValue:
    """A time printed by dummynet's us_to_time(): `0`, `500us`, `15ms`, `1.5ms`, `1fs`.

    (`fs` is not a typo of ours: us_to_time() formats seconds with "%gfs".)
    """

    text: str
    us: int

    def render(self) -> str:
        return self.text


_TIME_RE = re.compile(r"^(?:(0)|(\d+)us|([0-9.]+(?:e[+-]?\d+)?)ms|([0-9.]+(?:e[+-]?\d+)?)f?s)$")


def _time(text: str, line_no: int, line: str) -> TimeValue:
    m = _TIME_RE.match(text)
    if not m:
        raise _err(line_no, line, f"bad time value {text!r}")
    zero, us, ms, s = m.groups()
    if zero is not None:
        return TimeValue(text, 0)
    if us is not None:
        return TimeValue(text, int(us))
    if ms is not None:
        return TimeValue(text, round(float(ms) * 1000))
    return TimeValue(text, round(float(s) * 1_000_000))


# ---- line records -----------------------------------------------------------------------

@dataclass(frozen=True)
class LinkLine:
    """`00001: 100.000 Kbit/s  300 ms burst 0` — a pipe (dummynet link) or scheduler link.

    `bw_text`/`bw_unit` are the printed `%7.3f` value and unit; `bw_bps` is the integer they
    denote (Decimal arithmetic, no float rounding). The kernel value lies within
    +-`bw_resolution_bps`/2 of it: exact for bit/s and Kbit/s, 1 kbit/s for Mbit/s, 1 Mbit/s
    for Gbit/s. Old ipfw (no Gbit branch) prints 1 Gbit/s as `1000.000 Mbit/s`.
    """

    line_no: int
    number: int
    unlimited: bool
    bw_text: str | None
    bw_unit: str | None
    bw_bps: int | None           # None when unlimited
    delay_ms: int
    burst_text: str              # as printed by humanize_number: "0", "1048576 k"
    burst_bytes: int             # value denoted (lower bound when a prefix was printed)
    burst_exact: bool

    @property
    def bw_resolution_bps(self) -> int:
        if self.bw_unit is None:
            return 1
        return max(1, _BW_UNITS[self.bw_unit] // 1000)

    @property
    def bw_printed(self) -> str:
        return "unlimited" if self.unlimited else f"{self.bw_text} {self.bw_unit}"

    def render(self) -> str:
        if self.unlimited:
            bw = "unlimited     "
        else:
            bw = f"{self.bw_text:>7} {self.bw_unit}" + (" " if self.bw_unit == "bit/s" else "")
        return f"{self.number:05d}: {bw} {self.delay_ms:4d} ms burst {self.burst_text}"


@dataclass(frozen=True)
class RedParams:
    """RED/GRED parameters, printed on a continuation line `\\t  RED w_q ... max_p ...`."""

    gentle: bool
    w_q_text: str
    w_q: float
    min_th: int
    max_th: int
    max_p_text: str
    max_p: float
    ecn: bool

    def render(self) -> str:
        return (f"\t {'G' if self.gentle else ' '}RED w_q {self.w_q_text} min_th {self.min_th} "
                f"max_th {self.max_th} max_p {self.max_p_text}" + (" (ecn)" if self.ecn else ""))


@dataclass(frozen=True)
class CodelParams:
    """` AQM CoDel target 5ms interval 100ms NoECN` (NEW_AQM kernels only)."""

    target: TimeValue
    interval: TimeValue
    ecn: bool

    def render(self) -> str:
        return (f"AQM CoDel target {self.target.text} interval {self.interval.text} "
                f"{'ECN' if self.ecn else 'NoECN'}")


@dataclass(frozen=True)
class PieParams:
    """` AQM type PIE target .. tupdate .. alpha .. beta .. max_burst .. max_ecnth .. flags`."""

    target: TimeValue
    tupdate: TimeValue
    alpha_text: str
    beta_text: str
    max_burst: TimeValue
    max_ecnth_text: str
    ecn: bool
    capdrop: bool
    onoff: bool
    dre: bool        # True: DRE (departure rate estimation), False: TS (timestamp)
    derand: bool

    @property
    def alpha(self) -> float:
        return float(self.alpha_text)

    @property
    def beta(self) -> float:
        return float(self.beta_text)

    @property
    def max_ecnth(self) -> float:
        return float(self.max_ecnth_text)

    def _flags(self) -> str:
        return " ".join(x for x in ("ECN" if self.ecn else "NoECN", "CapDrop" if self.capdrop else "NoCapDrop",
                                    "OnOff" if self.onoff else "", "DRE" if self.dre else "TS",
                                    "Derand" if self.derand else "NoDerand") if x)

    def render(self) -> str:
        return (f"AQM type PIE target {self.target.text} tupdate {self.tupdate.text} alpha {self.alpha_text} "
                f"beta {self.beta_text} max_burst {self.max_burst.text} max_ecnth {self.max_ecnth_text} "
                + self._flags())


@dataclass(frozen=True)
class FlowsetLine:
    """`q131073  50 sl.plr 0.050000 0 flows (1 buckets) sched 65537 weight 0 lmax 0 pri 0 droptail`.

    `plr` is glued to the queue size (`sl.plr`, `KBplr`, `Bplr`) because dummynet.c prints
    "%s%s" with no separator. Byte queues of 8192 B or more are printed in whole KiB
    (l/1024, truncated): `queue_bytes` is then N*1024 and `queue_bytes_exact` False.
    """

    line_no: int
    fs_nr: int
    queue_slots: int | None
    queue_bytes: int | None
    queue_bytes_exact: bool
    queue_text: str               # "50 sl.", "64 KB", "1500 B"
    plr_text: str | None          # "0.050000" as printed (None: no plr printed, i.e. 0)
    plr: float
    count: int                    # fs->oid.id: number of flows (queues) instantiated
    count_kind: str               # "flows"
    buckets: int
    sched_nr: int
    weight: int
    lmax: int
    pri: int
    qm: str                       # "droptail" | "RED" | "GRED" | "CoDel" | "PIE"
    red: RedParams | None = None
    codel: CodelParams | None = None
    pie: PieParams | None = None

    def render(self) -> str:
        if self.queue_slots is not None:
            qs = f"{self.queue_slots:3d} sl."
        elif self.queue_text.endswith(" KB"):
            qs = self.queue_text
        else:
            qs = f"{self.queue_bytes} B"
        plr = f"plr {self.plr_text}" if self.plr_text is not None else ""
        if self.red is not None:
            tail = "\n" + self.red.render()
        elif self.codel is not None:
            tail = " " + self.codel.render()
        elif self.pie is not None:
            tail = " " + self.pie.render()
        else:
            tail = "droptail"
        return (f"q{self.fs_nr:05d} {qs}{plr} {self.count} {self.count_kind} ({self.buckets} buckets) "
                f"sched {self.sched_nr} weight {self.weight} lmax {self.lmax} pri {self.pri} {tail}")


@dataclass(frozen=True)
class MaskLine:
    """A flow mask: IPv4 `    mask:  0x00 0xffffffff/0x0000 -> 0x00000000/0x0000`, or IPv6
    (printed after an empty line) `        mask: proto: 0x00, flow_id: 0x00000000,  src/0x0000 -> dst/0x0000`.
    """

    line_no: int
    ipv6: bool
    queue_extra: bool            # "queue," — the mask includes the queue number
    proto: int
    src: str                     # IPv4: "0xffffffff"; IPv6: address text
    src_port: int
    dst: str
    dst_port: int
    flow_id: int | None = None   # IPv6 only

    def render(self) -> str:
        extra = "queue," if self.queue_extra else ""
        if not self.ipv6:
            return (f"    mask: {extra} 0x{self.proto:02x} {self.src}/0x{self.src_port:04x} -> "
                    f"{self.dst}/0x{self.dst_port:04x}")
        return (f"        mask: {extra}proto: 0x{self.proto:02x}, flow_id: 0x{self.flow_id or 0:08x},  "
                f"{self.src}/0x{self.src_port:04x} -> {self.dst}/0x{self.dst_port:04x}")


@dataclass(frozen=True)
class SchedLine:
    """` sched 65537 type FIFO flags 0x0 0 buckets 1 active`.

    On a `pipe show` this is the pipe's internal FIFO scheduler (number N+65536); the
    scheduler the user configured is listed by `sched show` (see SAMPLE G).
    """

    line_no: int
    sched_nr: int
    type: str
    flags: int
    buckets: int
    active: int

    def render(self) -> str:
        return f" sched {self.sched_nr} type {self.type} flags 0x{self.flags:x} {self.buckets} buckets {self.active} active"


@dataclass(frozen=True)
class SchedParams:
    """FQ_CODEL / FQ_PIE extra-parameters line printed after a sched line (NEW_AQM)."""

    line_no: int
    type: str                    # "FQ_CODEL" | "FQ_PIE"
    target: TimeValue
    interval: TimeValue | None   # FQ_CODEL
    tupdate: TimeValue | None    # FQ_PIE
    alpha_text: str | None
    beta_text: str | None
    max_burst: TimeValue | None
    max_ecnth_text: str | None
    quantum: int
    limit: int
    flows: int
    ecn: bool
    capdrop: bool | None = None
    onoff: bool | None = None
    dre: bool | None = None
    derand: bool | None = None

    def render(self) -> str:
        if self.type == "FQ_CODEL":
            return (f" FQ_CODEL target {self.target.text} interval {self.interval.text if self.interval else ''}"
                    f" quantum {self.quantum} limit {self.limit} flows {self.flows} {'ECN' if self.ecn else 'NoECN'}")
        flags = " ".join(x for x in ("ECN" if self.ecn else "NoECN", "CapDrop" if self.capdrop else "NoCapDrop",
                                     "OnOff" if self.onoff else "", "DRE" if self.dre else "TS",
                                     "Derand" if self.derand else "NoDerand") if x)
        return (f"  FQ_PIE target {self.target.text} tupdate {self.tupdate.text if self.tupdate else ''} "
                f"alpha {self.alpha_text} beta {self.beta_text} max_burst {self.max_burst.text if self.max_burst else ''} "
                f"max_ecnth {self.max_ecnth_text} quantum {self.quantum} limit {self.limit} flows {self.flows} {flags}")


@dataclass(frozen=True)
class ChildrenLine:
    """`   Children flowsets: 10002 10001 10000 ` (each number followed by a space)."""

    line_no: int
    flowsets: tuple[int, ...]

    def render(self) -> str:
        return "   Children flowsets: " + "".join(f"{n} " for n in self.flowsets)


@dataclass(frozen=True)
class ProfileLine:
    """`\\t profile: name "x" loss 0.140000 samples 100` — an empirical delay profile."""

    line_no: int
    name: str
    loss_text: str
    loss: float
    samples: int

    def render(self) -> str:
        return f'\t profile: name "{self.name}" loss {self.loss_text} samples {self.samples}'


HEADER_V4 = "BKT Prot ___Source IP/port____ ____Dest. IP/port____ Tot_pkt/bytes Pkt/Byte Drp"
HEADER_V6 = ("BKT ___Prot___ _flow-id_ ______________Source IPv6/port_______________ "
             "_______________Dest. IPv6/port_______________ Tot_pkt/bytes Pkt/Byte Drp")


@dataclass(frozen=True)
class HeaderLine:
    """The flow-table header. Newer ipfw prints it ONCE per listing (before the first flow
    of any pipe), older ipfw after every mask: never rely on it preceding a flow table."""

    line_no: int
    ipv6: bool

    def render(self) -> str:
        return HEADER_V6 if self.ipv6 else HEADER_V4


@dataclass(frozen=True)
class FlowRow:
    """One flow (queue instance): totals since it was created, current occupancy, drops.

    Columns run together when numbers overflow their widths, so rows are split on
    whitespace, never on fixed columns. `extra` is the '*' printed after the bucket when
    the flow id carries the queue number (mask "queue,").
    """

    line_no: int
    bucket: int
    extra: bool
    proto: str                   # protocol name, or its number when unknown
    ipv6: bool
    flow_id: int | None          # IPv6 flow label field
    src: str
    src_port: int
    dst: str
    dst_port: int
    tot_pkts: int
    tot_bytes: int
    queued_pkts: int             # "Pkt" column: packets in the queue now
    queued_bytes: int            # "Byte" column: bytes in the queue now
    drops: int

    def render(self) -> str:
        head = f"{self.bucket:3d}{'*' if self.extra else ' '}"
        numeric = self.proto.isdigit()
        if not self.ipv6:
            proto = f"{int(self.proto):4d} " if numeric else f"{self.proto:<4s} "
            addr = f"{self.src:>15s}/{self.src_port:<5d} {self.dst:>15s}/{self.dst_port:<5d} "
        else:
            proto = f"{int(self.proto):9d} " if numeric else f"{self.proto:>9s} "
            addr = (f"{self.flow_id:7d}  {self.src:>39s}/{self.src_port:<5d}  "
                    f"{self.dst:>39s}/{self.dst_port:<5d} ")
        return (head + proto + addr + f"{self.tot_pkts:4d} {self.tot_bytes:8d} "
                f"{self.queued_pkts:2d} {self.queued_bytes:4d} {self.drops:3d}")


@dataclass(frozen=True)
class BlankLine:
    """An empty line (IPv6 masks are printed after one)."""

    line_no: int

    def render(self) -> str:
        return ""


Record = (LinkLine | FlowsetLine | MaskLine | SchedLine | SchedParams | ChildrenLine | ProfileLine
          | HeaderLine | FlowRow | BlankLine)


# ---- grouping ------------------------------------------------------------------------------

@dataclass(frozen=True)
class DnObject:
    """One listed dummynet object with what follows it, in listing order:
    pipe (`pipe show`): link, its FIFO flowset (q N+131072), FIFO sched (N+65536), flows;
    queue (`queue show`): flowset, [mask], flows;
    scheduler (`sched show`): link, [internal flowset], sched, [params], [children], flows.
    """

    link: LinkLine | None = None
    flowset: FlowsetLine | None = None
    flowset_mask: MaskLine | None = None
    sched: SchedLine | None = None
    sched_params: SchedParams | None = None
    sched_mask: MaskLine | None = None
    children: ChildrenLine | None = None
    profile: ProfileLine | None = None
    flows: tuple[FlowRow, ...] = ()

    @property
    def number(self) -> int:
        if self.link is not None:
            return self.link.number
        if self.flowset is not None:
            return self.flowset.fs_nr
        assert self.sched is not None
        return self.sched.sched_nr

    def totals(self) -> dict[str, int]:
        """Per-object counters summed over its flows (a pipe without a mask has one flow)."""
        return {"tot_pkts": sum(f.tot_pkts for f in self.flows),
                "tot_bytes": sum(f.tot_bytes for f in self.flows),
                "drops": sum(f.drops for f in self.flows),
                "queued_pkts": sum(f.queued_pkts for f in self.flows),
                "queued_bytes": sum(f.queued_bytes for f in self.flows),
                "flows": len(self.flows)}

    def to_json(self) -> dict[str, Any]:
        d = _jsonable(self)
        if self.link is not None:
            d["link"]["bw_resolution_bps"] = self.link.bw_resolution_bps
        d["totals"] = self.totals()
        return d


@dataclass(frozen=True)
class DnListing:
    """A whole listing: the typed records in order, and the objects they form."""

    records: tuple[Record, ...]
    objects: tuple[DnObject, ...]

    def render(self) -> str:
        """The listing as ipfw printed it (trailing blanks excepted)."""
        return "\n".join(r.render() for r in self.records)

    def by_number(self) -> dict[int, DnObject]:
        out: dict[int, DnObject] = {}
        for o in self.objects:
            if o.number in out:
                raise ParseError(f"dummynet listing: object {o.number} listed twice")
            out[o.number] = o
        return out

    @property
    def headers(self) -> tuple[HeaderLine, ...]:
        return tuple(r for r in self.records if isinstance(r, HeaderLine))


def _err(line_no: int, line: str, why: str) -> ParseError:
    return ParseError(f"dummynet listing line {line_no}: {why}: {line!r}")


# ---- line regexes (from the dummynet.c format strings) -------------------------------------

_LINK_RE = re.compile(
    r"^(?P<nr>\d{5,}): +(?:(?P<unl>unlimited)|(?P<val>\d+\.\d{3}) (?P<unit>Gbit/s|Mbit/s|Kbit/s|bit/s))"
    r" +(?P<delay>\d+) ms burst (?P<burst>\d+(?: [kMGTPE])?)$")
_FS_RE = re.compile(
    r"^q(?P<nr>\d{5,}) +(?P<qn>\d+) (?P<qu>KB|B|sl\.)(?:plr (?P<plr>\d+\.\d+))? (?P<count>\d+) (?P<kind>flows)"
    r" \((?P<buckets>\d+) buckets\) sched (?P<sched>\d+) weight (?P<w>-?\d+) lmax (?P<lmax>-?\d+)"
    r" pri (?P<pri>-?\d+)(?: +(?P<qm>.*))?$")
_RED_RE = re.compile(
    r"^\s+(?P<g>G?)RED w_q (?P<wq>\d+\.\d+) min_th (?P<min>-?\d+) max_th (?P<max>-?\d+)"
    r" max_p (?P<maxp>\d+\.\d+)(?P<ecn> \(ecn\))?$")
_CODEL_RE = re.compile(r"^AQM CoDel target (?P<t>\S+) interval (?P<i>\S+) (?P<ecn>ECN|NoECN)$")
_PIE_FLAGS = r"(?P<ecn>ECN|NoECN) (?P<cap>CapDrop|NoCapDrop)(?P<onoff> OnOff)? (?P<dre>DRE|TS) (?P<der>Derand|NoDerand)"
_PIE_RE = re.compile(
    r"^AQM type PIE target (?P<t>\S+) tupdate (?P<tu>\S+) alpha (?P<a>\S+) beta (?P<b>\S+)"
    r" max_burst (?P<mb>\S+) max_ecnth (?P<me>\S+) " + _PIE_FLAGS + "$")
_MASK4_RE = re.compile(
    r"^\s+mask: (?P<extra>queue,)? ?0x(?P<proto>[0-9a-f]{2}) (?P<src>0x[0-9a-f]{8})/0x(?P<sp>[0-9a-f]{4})"
    r" -> (?P<dst>0x[0-9a-f]{8})/0x(?P<dp>[0-9a-f]{4})$")
_MASK6_RE = re.compile(
    r"^\s+mask: (?P<extra>queue,)?proto: 0x(?P<proto>[0-9a-f]{2}), flow_id: 0x(?P<fl>[0-9a-f]{8}),"
    r" +(?P<src>[0-9a-fA-F:.]+)/0x(?P<sp>[0-9a-f]{4}) -> (?P<dst>[0-9a-fA-F:.]+)/0x(?P<dp>[0-9a-f]{4})$")
_SCHED_RE = re.compile(
    r"^\s*sched (?P<nr>\d+) type (?P<type>\S+) flags 0x(?P<flags>[0-9a-fA-F]+) (?P<b>\d+) buckets"
    r" (?P<a>\d+) active$")
_FQCODEL_RE = re.compile(
    r"^\s*FQ_CODEL target (?P<t>\S+) interval (?P<i>\S+) quantum (?P<q>-?\d+) limit (?P<l>-?\d+)"
    r" flows (?P<f>-?\d+) (?P<ecn>ECN|NoECN)$")
_FQPIE_RE = re.compile(
    r"^\s*FQ_PIE target (?P<t>\S+) tupdate (?P<tu>\S+) alpha (?P<a>\S+) beta (?P<b>\S+) max_burst (?P<mb>\S+)"
    r" max_ecnth (?P<me>\S+) quantum (?P<q>-?\d+) limit (?P<l>-?\d+) flows (?P<f>-?\d+) " + _PIE_FLAGS + "$")
_CHILDREN_RE = re.compile(r"^\s*Children flowsets:(?P<n>(?: \d+)+)$")
_PROFILE_RE = re.compile(r'^\s*profile: name "(?P<name>.*)" loss (?P<loss>\d+\.\d+) samples (?P<s>\d+)$')
_UNRECOGNISED_RE = re.compile(r"^unrecognized object (\d+) size (\d+)$")
_COUNTERS = r"(?P<tp>\d+)\s+(?P<tb>\d+)\s+(?P<qp>\d+)\s+(?P<qb>\d+)\s+(?P<dr>\d+)"
_FLOW4_RE = re.compile(
    r"^\s*(?P<bkt>\d+)(?P<star>[ *])\s*(?P<proto>\S+)\s+(?P<src>\d+\.\d+\.\d+\.\d+)/(?P<sp>\d+)"
    r"\s+(?P<dst>\d+\.\d+\.\d+\.\d+)/(?P<dp>\d+)\s+" + _COUNTERS + "$")
_FLOW6_RE = re.compile(
    r"^\s*(?P<bkt>\d+)(?P<star>[ *])\s*(?P<proto>\S+)\s+(?P<fl>-?\d+)\s+(?P<src>[0-9a-fA-F.]*:[0-9a-fA-F:.]*)"
    r"/(?P<sp>\d+)\s+(?P<dst>[0-9a-fA-F.]*:[0-9a-fA-F:.]*)/(?P<dp>\d+)\s+" + _COUNTERS + "$")


def _parse_link(m: re.Match, line_no: int) -> LinkLine:
    burst = m["burst"]
    if " " in burst:
        num, prefix = burst.split(" ")
        burst_bytes, exact = int(num) * 1024 ** _HN_PREFIX[prefix], False
    else:
        burst_bytes, exact = int(burst), True
    if m["unl"]:
        return LinkLine(line_no, int(m["nr"]), True, None, None, None, int(m["delay"]), burst, burst_bytes, exact)
    bps = Decimal(m["val"]) * _BW_UNITS[m["unit"]]
    return LinkLine(line_no, int(m["nr"]), False, m["val"], m["unit"], int(bps), int(m["delay"]),
                    burst, burst_bytes, exact)


def _parse_qm(text: str | None, line_no: int, line: str) -> tuple[str, CodelParams | None, PieParams | None]:
    if text is None or text == "":
        return "RED?", None, None   # RED/GRED: the parameters follow on the next line
    if text == "droptail":
        return "droptail", None, None
    m = _CODEL_RE.match(text)
    if m:
        return "CoDel", CodelParams(_time(m["t"], line_no, line), _time(m["i"], line_no, line),
                                    m["ecn"] == "ECN"), None
    m = _PIE_RE.match(text)
    if m:
        return "PIE", None, PieParams(
            _time(m["t"], line_no, line), _time(m["tu"], line_no, line), m["a"], m["b"],
            _time(m["mb"], line_no, line), m["me"], m["ecn"] == "ECN", m["cap"] == "CapDrop",
            bool(m["onoff"]), m["dre"] == "DRE", m["der"] == "Derand")
    raise _err(line_no, line, f"unknown queue management {text!r}")


def _parse_flowset(m: re.Match, line_no: int, line: str) -> FlowsetLine:
    qn, qu = int(m["qn"]), m["qu"]
    if qu == "sl.":
        slots, qbytes, exact, qtext = qn, None, True, f"{qn} sl."
    elif qu == "KB":
        slots, qbytes, exact, qtext = None, qn * 1024, False, f"{qn} KB"
    else:
        slots, qbytes, exact, qtext = None, qn, True, f"{qn} B"
    qm, codel, pie = _parse_qm(m["qm"].strip() if m["qm"] is not None else None, line_no, line)
    return FlowsetLine(
        line_no=line_no, fs_nr=int(m["nr"]), queue_slots=slots, queue_bytes=qbytes, queue_bytes_exact=exact,
        queue_text=qtext, plr_text=m["plr"], plr=float(m["plr"]) if m["plr"] else 0.0,
        count=int(m["count"]), count_kind=m["kind"], buckets=int(m["buckets"]), sched_nr=int(m["sched"]),
        weight=int(m["w"]), lmax=int(m["lmax"]), pri=int(m["pri"]), qm=qm, codel=codel, pie=pie)


def _parse_flow(m: re.Match, line_no: int, ipv6: bool) -> FlowRow:
    return FlowRow(
        line_no=line_no, bucket=int(m["bkt"]), extra=m["star"] == "*", proto=m["proto"], ipv6=ipv6,
        flow_id=int(m["fl"]) if ipv6 else None, src=m["src"], src_port=int(m["sp"]), dst=m["dst"],
        dst_port=int(m["dp"]), tot_pkts=int(m["tp"]), tot_bytes=int(m["tb"]), queued_pkts=int(m["qp"]),
        queued_bytes=int(m["qb"]), drops=int(m["dr"]))


def parse_records(text: str) -> tuple[Record, ...]:
    """Every line of a dummynet listing as a typed record (pure; ParseError on any unknown line)."""
    lines = text.splitlines()
    out: list[Record] = []
    i = 0
    while i < len(lines):
        raw = lines[i]
        line_no = i + 1
        line = raw.rstrip()           # trailing blanks are not information ("burst 0 ")
        i += 1
        if line == "":
            out.append(BlankLine(line_no))
            continue
        m = _LINK_RE.match(line)
        if m:
            out.append(_parse_link(m, line_no))
            continue
        m = _FS_RE.match(line)
        if m:
            fs = _parse_flowset(m, line_no, line)
            if fs.qm == "RED?":
                # "pri %d %s" with a RED string that starts with "\n\t": parameters on the next line
                nxt = lines[i].rstrip() if i < len(lines) else ""
                r = _RED_RE.match(nxt)
                if not r:
                    raise _err(line_no, line, "flowset without queue management and no RED line after it")
                i += 1
                red = RedParams(gentle=r["g"] == "G", w_q_text=r["wq"], w_q=float(r["wq"]), min_th=int(r["min"]),
                                max_th=int(r["max"]), max_p_text=r["maxp"], max_p=float(r["maxp"]),
                                ecn=bool(r["ecn"]))
                fs = dataclasses.replace(fs, qm="GRED" if red.gentle else "RED", red=red)
            out.append(fs)
            continue
        stripped = line.strip()
        if stripped == HEADER_V4 or stripped == HEADER_V6:
            out.append(HeaderLine(line_no, stripped == HEADER_V6))
            continue
        m = _FLOW4_RE.match(line)
        if m:
            out.append(_parse_flow(m, line_no, ipv6=False))
            continue
        m = _FLOW6_RE.match(line)
        if m:
            out.append(_parse_flow(m, line_no, ipv6=True))
            continue
        m = _SCHED_RE.match(line)
        if m:
            out.append(SchedLine(line_no, int(m["nr"]), m["type"], int(m["flags"], 16), int(m["b"]), int(m["a"])))
            continue
        m = _MASK4_RE.match(line)
        if m:
            out.append(MaskLine(line_no, False, bool(m["extra"]), int(m["proto"], 16), m["src"], int(m["sp"], 16),
                                m["dst"], int(m["dp"], 16)))
            continue
        m = _MASK6_RE.match(line)
        if m:
            out.append(MaskLine(line_no, True, bool(m["extra"]), int(m["proto"], 16), m["src"], int(m["sp"], 16),
                                m["dst"], int(m["dp"], 16), flow_id=int(m["fl"], 16)))
            continue
        m = _FQCODEL_RE.match(line)
        if m:
            out.append(SchedParams(
                line_no, "FQ_CODEL", _time(m["t"], line_no, line), _time(m["i"], line_no, line), None, None, None,
                None, None, int(m["q"]), int(m["l"]), int(m["f"]), m["ecn"] == "ECN"))
            continue
        m = _FQPIE_RE.match(line)
        if m:
            out.append(SchedParams(
                line_no, "FQ_PIE", _time(m["t"], line_no, line), None, _time(m["tu"], line_no, line), m["a"],
                m["b"], _time(m["mb"], line_no, line), m["me"], int(m["q"]), int(m["l"]), int(m["f"]),
                m["ecn"] == "ECN", capdrop=m["cap"] == "CapDrop", onoff=bool(m["onoff"]), dre=m["dre"] == "DRE",
                derand=m["der"] == "Derand"))
            continue
        m = _CHILDREN_RE.match(line)
        if m:
            out.append(ChildrenLine(line_no, tuple(int(x) for x in m["n"].split())))
            continue
        m = _PROFILE_RE.match(line)
        if m:
            out.append(ProfileLine(line_no, m["name"], m["loss"], float(m["loss"]), int(m["s"])))
            continue
        if _UNRECOGNISED_RE.match(line):
            raise _err(line_no, line, "ipfw could not decode a kernel object (ipfw userland and kernel "
                                      "versions disagree)")
        raise _err(line_no, line, "unrecognised line")
    return tuple(out)


def group(records: Iterable[Record]) -> tuple[DnObject, ...]:
    """Group records into objects following the listing order of dummynet.c list_pipes()."""
    objects: list[DnObject] = []
    cur: DnObject | None = None

    def flush() -> None:
        nonlocal cur
        if cur is not None:
            objects.append(cur)
        cur = None

    for r in records:
        if isinstance(r, (BlankLine, HeaderLine)):
            continue
        if isinstance(r, LinkLine):
            flush()
            cur = DnObject(link=r)
        elif isinstance(r, FlowsetLine):
            if cur is None or cur.flowset is not None or cur.sched is not None or cur.flows:
                flush()
                cur = DnObject(flowset=r)
            else:
                cur = dataclasses.replace(cur, flowset=r)
        elif isinstance(r, SchedLine):
            if cur is None or cur.sched is not None or cur.flows:
                flush()
                cur = DnObject(sched=r)
            else:
                cur = dataclasses.replace(cur, sched=r)
        elif isinstance(r, MaskLine):
            if cur is not None and cur.sched is not None and cur.sched_mask is None and not cur.flows:
                cur = dataclasses.replace(cur, sched_mask=r)
            elif cur is not None and cur.sched is None and cur.flowset is not None and cur.flowset_mask is None \
                    and not cur.flows:
                cur = dataclasses.replace(cur, flowset_mask=r)
            else:
                raise _err(r.line_no, r.render(), "mask line not after a flowset or scheduler")
        elif isinstance(r, SchedParams):
            if cur is None or cur.sched is None or cur.sched_params is not None or cur.flows:
                raise _err(r.line_no, r.render(), "scheduler parameters not after a scheduler line")
            cur = dataclasses.replace(cur, sched_params=r)
        elif isinstance(r, ChildrenLine):
            if cur is None or cur.sched is None or cur.children is not None:
                raise _err(r.line_no, r.render(), "children list not after a scheduler line")
            cur = dataclasses.replace(cur, children=r)
        elif isinstance(r, ProfileLine):
            if cur is None or cur.link is None or cur.profile is not None:
                raise _err(r.line_no, r.render(), "delay profile not after a pipe line")
            cur = dataclasses.replace(cur, profile=r)
        elif isinstance(r, FlowRow):
            if cur is None or (cur.flowset is None and cur.sched is None):
                raise _err(r.line_no, r.render(), "flow row outside any flowset or scheduler")
            cur = dataclasses.replace(cur, flows=cur.flows + (r,))
    flush()
    return tuple(objects)


def parse_listing(text: str) -> DnListing:
    """Any dummynet listing (pipe, queue or sched show) -> DnListing."""
    records = parse_records(text)
    return DnListing(records, group(records))


def parse_pipe_show(text: str) -> DnListing:
    """`ipfw pipe show`, `ipfw pipe N show`, `dnctl pipe show` (each object opens with a pipe line)."""
    listing = parse_listing(text)
    for o in listing.objects:
        if o.link is None:
            first = o.flowset or o.sched
            raise ParseError(f"pipe listing: object at line {first.line_no if first else '?'} has no pipe line "
                             "(is this `queue show` or `sched show` output?)")
    listing.by_number()  # duplicates are an error
    return listing


def parse_queue_show(text: str) -> DnListing:
    """`ipfw queue show` / `ipfw queue N show` (each object opens with a q line)."""
    listing = parse_listing(text)
    for o in listing.objects:
        if o.flowset is None or o.link is not None:
            raise ParseError(f"queue listing: object {o.number} is not a flowset (is this `pipe show` output?)")
    return listing


def parse_sched_show(text: str) -> DnListing:
    """`ipfw sched show` (each object has a link line and a sched line)."""
    listing = parse_listing(text)
    for o in listing.objects:
        if o.link is None or o.sched is None:
            raise ParseError(f"sched listing: object {o.number} lacks its link or sched line")
    return listing


def _jsonable(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(x) for x in obj]
    return obj


def _listing_json(kind: str, listing: DnListing) -> dict[str, Any]:
    return {"kind": kind, "objects": [o.to_json() for o in listing.objects],
            "header_lines": [h.line_no for h in listing.headers]}


def pipe_show_to_json(text: str) -> dict[str, Any]:
    """`ctl parse ipfw-pipe-show`: the parsed listing as JSON-able data."""
    return _listing_json("ipfw-pipe-show", parse_pipe_show(text))


def queue_show_to_json(text: str) -> dict[str, Any]:
    """`ctl parse ipfw-queue-show`."""
    return _listing_json("ipfw-queue-show", parse_queue_show(text))


def sched_show_to_json(text: str) -> dict[str, Any]:
    """`ctl parse ipfw-sched-show`."""
    return _listing_json("ipfw-sched-show", parse_sched_show(text))


# ---- ipfw -S list ----------------------------------------------------------------------------

@dataclass(frozen=True)
class IpfwRule:
    """One static rule from `ipfw -S list`: `# DISABLED 10000 set 3 pipe 10101 ip from ...`.

    With -S ipfw prints the set of every rule and also lists rules of disabled sets
    (prefixed `# DISABLED `) which plain `ipfw list` hides; both matter to restore a range
    exactly. `body` is the rule text after the set, as ipfw prints it; it is valid input for
    `ipfw add NUMBER set SET <body>`.
    """

    number: int
    set: int
    body: str
    disabled: bool = False

    @property
    def tokens(self) -> tuple[str, ...]:
        return tuple(self.body.split())

    def render(self) -> str:
        return f"{'# DISABLED ' if self.disabled else ''}{self.number:05d} set {self.set} {self.body}"


_RULE_RE = re.compile(r"^(?P<dis># DISABLED )?(?P<nr>\d{5,}) set (?P<set>\d+) (?P<body>\S.*)$")


def parse_ipfw_list(text: str) -> tuple[IpfwRule, ...]:
    """`ipfw -S list` (no counters, no dynamic states) -> rules in listing order."""
    rules = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if not line:
            continue
        m = _RULE_RE.match(line)
        if not m:
            raise ParseError(f"ipfw -S list line {n}: not a rule with its set (was -S given?): {line!r}")
        rules.append(IpfwRule(int(m["nr"]), int(m["set"]), m["body"], bool(m["dis"])))
    return tuple(rules)


# ---- sysctl / version ------------------------------------------------------------------------

_SYSCTL_RE = re.compile(r"^(?P<name>[A-Za-z0-9_%-]+(?:\.[A-Za-z0-9_%-]+)+): ?(?P<value>.*)$")


def parse_sysctl(text: str) -> dict[str, str]:
    """`sysctl a.b c.d` output (`name: value` lines) -> {name: value}."""
    out: dict[str, str] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if not line:
            continue
        m = _SYSCTL_RE.match(line)
        if not m:
            raise ParseError(f"sysctl output line {n}: not `name: value`: {line!r}")
        out[m["name"]] = m["value"].strip()
    return out


_VERSION_RE = re.compile(r"^(?P<major>\d+)\.(?P<minor>\d+)-(?P<rest>[A-Za-z0-9.-]+)$")


def parse_freebsd_version(text: str) -> tuple[str, int, int]:
    """`freebsd-version -u` / `uname -r` output `14.1-RELEASE-p5` -> (text, major, minor)."""
    line = text.strip().splitlines()[0].strip() if text.strip() else ""
    m = _VERSION_RE.match(line)
    if not m:
        raise ParseError(f"not a FreeBSD version string: {text.strip()!r}")
    return line, int(m["major"]), int(m["minor"])


# ---- the sampler stream -----------------------------------------------------------------------

SAMPLE_MARK_RE = re.compile(r"^---ctl-sample (?P<seq>\d+) (?P<epoch>\d+)---$")


@dataclass(frozen=True)
class PipeSample:
    """One `ipfw pipe show` taken by the long-lived sampler, closed by its marker line."""

    seq: int
    epoch: int          # `date +%s` on the host right after the listing (1 s resolution)
    listing: DnListing


class SampleStreamParser:
    """Incremental parser of the sampler's stdout: feed lines, get a PipeSample per marker.

    Lines after the last marker belong to a listing still being printed (or cut short when
    the sampler was stopped) and are never returned as a sample.
    """

    def __init__(self) -> None:
        self._pending: list[str] = []

    def feed(self, line: str) -> PipeSample | None:
        m = SAMPLE_MARK_RE.match(line.rstrip("\r\n").rstrip())
        if not m:
            self._pending.append(line.rstrip("\r\n"))
            return None
        text = "\n".join(self._pending)
        self._pending = []
        try:
            listing = parse_pipe_show(text)
        except ParseError as exc:
            raise ParseError(f"sampler sample {m['seq']}: {exc}") from None
        return PipeSample(int(m["seq"]), int(m["epoch"]), listing)

    @property
    def pending_lines(self) -> int:
        return len(self._pending)


def parse_sample_stream(lines: Iterable[str]) -> list[PipeSample]:
    """All complete samples of a captured sampler stream."""
    p = SampleStreamParser()
    out = []
    for line in lines:
        s = p.feed(line)
        if s is not None:
            out.append(s)
    return out
