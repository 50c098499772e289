"""The pipe listing the dummynet driver reads, in either format, as one model (pure).

A bridge answers `ipfw pipe show` (or `dnctl pipe show`) in one of two formats:

- modern: FreeBSD 8 and later (the 2010 dummynet rewrite): `burst`, a `q1310NN` flowset line
  and a `sched` line per pipe (bridges.ipfw_parse);
- classic: FreeBSD 7 and older, Emulab/GENI delay nodes and macOS `dnctl`: one line per pipe,
  `NNNNN: <bw> <delay> ms <queue>[ plr x] N queues (B buckets) droptail`, then its mask and
  flows (bridges.ipfw_classic).

`read_pipes` tells them apart by the first object line and carries a classic pipe into the
same records the modern parser gives (LinkLine, FlowsetLine, MaskLine, FlowRow), so planning,
verification, restore and the counters work unchanged on either; the format seen is recorded
with the bridge's state. What the classic format does not print is set to what it means
there: no burst (the old code had none), the pipe's own flowset and FIFO scheduler. Classic
WF2Q+ queues (`qNNNNN: weight W pipe N ...`, separate flowsets feeding a pipe) are kept apart
in `PipeListing.queues_on`: a pipe ctl uses that has one attached is reported, never silently shaped.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from bridges import ipfw_classic
from bridges.dummynet.values import DN_MAX_ID
from bridges.ipfw_host import IpfwRule
from bridges.ipfw_parse import parse_pipe_show
from bridges.ipfw_records import DnListing, DnObject, FlowRow, FlowsetLine, LinkLine, MaskLine, RedParams

MODERN, CLASSIC = "modern", ipfw_classic.FORMAT


@dataclass(frozen=True)
class HostSnapshot:
    """Everything the dummynet driver read from a bridge, typed; rebuilt from ShaperState.raw
    (pure and lossless)."""

    os_release: str | None
    major: int | None
    sysctl: Mapping[str, str]
    pipes: Mapping[int, DnObject]
    rules: tuple[IpfwRule, ...]
    sysctl_stderr: str = ""
    listing_format: str = MODERN
    queues_on: Mapping[int, list[int]] = field(default_factory=dict)   # classic WF2Q+ queues per pipe


@dataclass(frozen=True)
class PipeListing:
    """A `pipe show` listing as the driver reads it, whichever its format."""

    listing: DnListing
    format: str                                    # MODERN or CLASSIC
    queues_on: Mapping[int, list[int]]             # classic: pipe -> the WF2Q+ queues feeding it


def read_pipes(text: str) -> PipeListing:
    """Tell the format by the first object line and parse it once; a ParseError names an unknown line."""
    if not ipfw_classic.looks_classic(text):
        return PipeListing(parse_pipe_show(text), MODERN, {})
    objs = ipfw_classic.parse(text)
    queues: dict[int, list[int]] = {}
    for o in objs:
        if o.kind == "queue" and o.parent_pipe is not None:
            queues.setdefault(o.parent_pipe, []).append(o.number)
    return PipeListing(_classic_listing(objs), CLASSIC, queues)


def _link(o: ipfw_classic.ClassicObject) -> LinkLine:
    text, unit = None, None
    if o.bw_bps is not None and o.bw_text:
        text, unit = o.bw_text.split()
    return LinkLine(line_no=o.line_no, number=o.number, unlimited=o.bw_text == "unlimited",
                    bw_text=text if unit else o.clock_interface, bw_unit=unit, bw_bps=o.bw_bps,
                    delay_ms=o.delay_ms or 0, burst_text="0", burst_bytes=0, burst_exact=True)


def _flowset(o: ipfw_classic.ClassicObject) -> FlowsetLine:
    red = None
    if o.red is not None:
        red = RedParams(gentle=o.aqm == "gred", w_q_text=str(o.red["w_q"]), w_q=o.red["w_q"],
                        min_th=o.red["min_th"], max_th=o.red["max_th"], max_p_text=str(o.red["max_p"]),
                        max_p=o.red["max_p"], ecn=False)
    return FlowsetLine(line_no=o.line_no, fs_nr=o.number + 2 * DN_MAX_ID, queue_slots=o.queue_slots,
                       queue_bytes=o.queue_bytes, queue_bytes_exact=o.queue_bytes_exact, queue_text=o.queue_text,
                       plr_text=o.plr_text, plr=o.plr, count=o.queues, count_kind="queues", buckets=o.buckets,
                       sched_nr=o.number + DN_MAX_ID, weight=0, lmax=0, pri=0,
                       qm={"droptail": "droptail", "red": "RED", "gred": "GRED"}[o.aqm], red=red)


def _mask(o: ipfw_classic.ClassicObject) -> MaskLine | None:
    m = o.mask
    # the old code prints the mask before the flows of every pipe that has any: all zeros is no mask
    if m is None or not (m["proto"] or m["src_port"] or m["dst_port"] or m.get("flow_id")
                         or m["src"].strip("0x:") or m["dst"].strip("0x:")):
        return None
    v6 = m["family"] == 6
    return MaskLine(line_no=o.line_no, ipv6=v6, queue_extra=False, proto=m["proto"],
                    src=m["src"] if v6 else f"0x{m['src']}", src_port=m["src_port"],
                    dst=m["dst"] if v6 else f"0x{m['dst']}", dst_port=m["dst_port"], flow_id=m.get("flow_id"))


def _classic_listing(objs: list[ipfw_classic.ClassicObject]) -> DnListing:
    """A classic listing's pipes as the records the driver reads (its queues: PipeListing.queues_on)."""
    objects = []
    for o in objs:
        if o.kind != "pipe":
            continue
        flows = tuple(FlowRow(line_no=f.line_no, bucket=f.bucket, extra=False, proto=f.proto,
                              ipv6=f.flow_id is not None, flow_id=f.flow_id, src=f.src, src_port=f.src_port,
                              dst=f.dst, dst_port=f.dst_port, tot_pkts=f.tot_pkts, tot_bytes=f.tot_bytes,
                              queued_pkts=f.queue_pkts, queued_bytes=f.queue_bytes, drops=f.drops)
                      for f in o.flows)
        objects.append(DnObject(link=_link(o), flowset=_flowset(o), flowset_mask=_mask(o), flows=flows))
    return DnListing(records=(), objects=tuple(objects))
