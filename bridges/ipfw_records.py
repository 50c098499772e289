"""The typed records of a dummynet listing (one frozen dataclass per line shape, each with a `render()` that
reproduces its line) and the small value types they hold. Pure data; the grammar that builds them is in
`bridges.ipfw_parse`."""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from controller.errors import ParseError
from controller.parsers import numbers


def _n(text: str, base: int = 10) -> int:
    """A number of the listing, bounded: a 400-digit one is a ParseError, not a huge int passed on."""
    return numbers.integer(text, "dummynet listing: number", base)


def _f(text: str) -> float:
    """A decimal of the listing (plr, RED and PIE parameters, times): finite and bounded."""
    return numbers.finite(text, "dummynet listing: number")


BW_UNITS = {"bit/s": 1, "Kbit/s": 10**3, "Mbit/s": 10**6, "Gbit/s": 10**9}


# humanize_number(..., HN_AUTOSCALE, 0) prefixes (divisor 1024, no HN_B): "", k, M, G, T, P, E
HN_PREFIX = {"": 0, "k": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}


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


def parse_time(text: str, line_no: int, line: str) -> TimeValue:
    m = _TIME_RE.match(text)
    if not m:
        raise line_error(line_no, line, f"bad time value {text!r}")
    zero, us, ms, s = m.groups()
    if zero is not None:
        return TimeValue(text, 0)
    if us is not None:
        return TimeValue(text, _n(us))
    if ms is not None:
        return TimeValue(text, numbers.scaled(ms, 1000, "dummynet listing: time"))
    return TimeValue(text, numbers.scaled(s, 1_000_000, "dummynet listing: time"))


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
        return max(1, BW_UNITS[self.bw_unit] // 1000)

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
        return _f(self.alpha_text)

    @property
    def beta(self) -> float:
        return _f(self.beta_text)

    @property
    def max_ecnth(self) -> float:
        return _f(self.max_ecnth_text)

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
        d = jsonable(self)
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


def line_error(line_no: int, line: str, why: str) -> ParseError:
    return ParseError(f"dummynet listing line {line_no}: {why}: {line!r}")


def jsonable(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [jsonable(x) for x in obj]
    return obj
