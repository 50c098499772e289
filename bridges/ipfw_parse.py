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

The records themselves are in `bridges.ipfw_records`; `ipfw -S list` rules, `sysctl` output,
`freebsd-version` and the sampler's stream are parsed in `bridges.ipfw_host`.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from bridges import ipfw_classic
from bridges.ipfw_records import (
    BW_UNITS,
    HEADER_V4,
    HEADER_V6,
    HN_PREFIX,
    BlankLine,
    ChildrenLine,
    CodelParams,
    DnListing,
    DnObject,
    FlowRow,
    FlowsetLine,
    HeaderLine,
    LinkLine,
    MaskLine,
    PieParams,
    ProfileLine,
    Record,
    RedParams,
    SchedLine,
    SchedParams,
    line_error,
    parse_time,
)
from controller.errors import ParseError
from controller.parsers import numbers


def _n(text: str, base: int = 10) -> int:
    """A number of the listing, bounded: a 400-digit one is a ParseError, not a huge int passed on."""
    return numbers.integer(text, "dummynet listing: number", base)


def _f(text: str) -> float:
    """A decimal of the listing (plr, RED and PIE parameters, times): finite and bounded."""
    return numbers.finite(text, "dummynet listing: number")


# ---- small value types --------------------------------------------------------------------


# ---- line records -----------------------------------------------------------------------


# ---- grouping ------------------------------------------------------------------------------


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
        burst_bytes, exact = _n(num) * 1024 ** HN_PREFIX[prefix], False
    else:
        burst_bytes, exact = _n(burst), True
    if m["unl"]:
        return LinkLine(line_no, _n(m["nr"]), True, None, None, None, _n(m["delay"]), burst, burst_bytes, exact)
    bps = Decimal(m["val"]) * BW_UNITS[m["unit"]]
    return LinkLine(line_no, _n(m["nr"]), False, m["val"], m["unit"], numbers.bounded(int(bps), "dummynet listing: bandwidth"), _n(m["delay"]),
                    burst, burst_bytes, exact)


def _parse_qm(text: str | None, line_no: int, line: str) -> tuple[str, CodelParams | None, PieParams | None]:
    if text is None or text == "":
        return "RED?", None, None   # RED/GRED: the parameters follow on the next line
    if text == "droptail":
        return "droptail", None, None
    m = _CODEL_RE.match(text)
    if m:
        return "CoDel", CodelParams(parse_time(m["t"], line_no, line), parse_time(m["i"], line_no, line),
                                    m["ecn"] == "ECN"), None
    m = _PIE_RE.match(text)
    if m:
        return "PIE", None, PieParams(
            parse_time(m["t"], line_no, line), parse_time(m["tu"], line_no, line), m["a"], m["b"],
            parse_time(m["mb"], line_no, line), m["me"], m["ecn"] == "ECN", m["cap"] == "CapDrop",
            bool(m["onoff"]), m["dre"] == "DRE", m["der"] == "Derand")
    raise line_error(line_no, line, f"unknown queue management {text!r}")


def _parse_flowset(m: re.Match, line_no: int, line: str) -> FlowsetLine:
    qn, qu = _n(m["qn"]), m["qu"]
    if qu == "sl.":
        slots, qbytes, exact, qtext = qn, None, True, f"{qn} sl."
    elif qu == "KB":
        slots, qbytes, exact, qtext = None, qn * 1024, False, f"{qn} KB"
    else:
        slots, qbytes, exact, qtext = None, qn, True, f"{qn} B"
    qm, codel, pie = _parse_qm(m["qm"].strip() if m["qm"] is not None else None, line_no, line)
    return FlowsetLine(
        line_no=line_no, fs_nr=_n(m["nr"]), queue_slots=slots, queue_bytes=qbytes, queue_bytes_exact=exact,
        queue_text=qtext, plr_text=m["plr"], plr=_f(m["plr"]) if m["plr"] else 0.0,
        count=_n(m["count"]), count_kind=m["kind"], buckets=_n(m["buckets"]), sched_nr=_n(m["sched"]),
        weight=_n(m["w"]), lmax=_n(m["lmax"]), pri=_n(m["pri"]), qm=qm, codel=codel, pie=pie)


def _parse_flow(m: re.Match, line_no: int, ipv6: bool) -> FlowRow:
    return FlowRow(
        line_no=line_no, bucket=_n(m["bkt"]), extra=m["star"] == "*", proto=m["proto"], ipv6=ipv6,
        flow_id=_n(m["fl"]) if ipv6 else None, src=m["src"], src_port=_n(m["sp"]), dst=m["dst"],
        dst_port=_n(m["dp"]), tot_pkts=_n(m["tp"]), tot_bytes=_n(m["tb"]), queued_pkts=_n(m["qp"]),
        queued_bytes=_n(m["qb"]), drops=_n(m["dr"]))


def set_aside(unrecognised: list[dict[str, Any]] | None, line_no: int, text: str, exc: ParseError) -> None:
    """`ctl parse --partial`: a refused line goes to the caller's list (or the error is raised as is)."""
    if unrecognised is None:
        raise exc
    unrecognised.append({"line": line_no, "text": text, "why": exc.one_line()})


def parse_records(text: str, unrecognised: list[dict[str, Any]] | None = None) -> tuple[Record, ...]:
    """Every line of a dummynet listing as a typed record (pure; ParseError on any unknown line, or,
    given `unrecognised`, the line set aside there and read as a blank one)."""
    lines = text.splitlines()
    out: list[Record] = []
    i = 0
    while i < len(lines):
        line_no = i + 1
        try:
            try:
                rec, i = _record(lines, i)
            except ValueError as exc:             # a number of the right characters but no number ("1.2.3")
                raise line_error(line_no, lines[i], f"not a number ({exc})") from None
        except ParseError as exc:
            set_aside(unrecognised, line_no, lines[i], exc)
            rec, i = BlankLine(line_no), i + 1
        out.append(rec)
    return tuple(out)


def _record(lines: list[str], i: int) -> tuple[Record, int]:
    """The record of line i (0-based) and the index of the line after it (a RED flowset takes two)."""
    raw = lines[i]
    line_no = i + 1
    line = raw.rstrip()           # trailing blanks are not information ("burst 0 ")
    i += 1
    if line == "":
        return BlankLine(line_no), i
    m = _LINK_RE.match(line)
    if m:
        return _parse_link(m, line_no), i
    m = _FS_RE.match(line)
    if m:
        fs = _parse_flowset(m, line_no, line)
        if fs.qm == "RED?":
            # "pri %d %s" with a RED string that starts with "\n\t": parameters on the next line
            nxt = lines[i].rstrip() if i < len(lines) else ""
            r = _RED_RE.match(nxt)
            if not r:
                raise line_error(line_no, line, "flowset without queue management and no RED line after it")
            i += 1
            red = RedParams(gentle=r["g"] == "G", w_q_text=r["wq"], w_q=_f(r["wq"]), min_th=_n(r["min"]),
                            max_th=_n(r["max"]), max_p_text=r["maxp"], max_p=_f(r["maxp"]),
                            ecn=bool(r["ecn"]))
            fs = dataclasses.replace(fs, qm="GRED" if red.gentle else "RED", red=red)
        return fs, i
    stripped = line.strip()
    if stripped == HEADER_V4 or stripped == HEADER_V6:
        return HeaderLine(line_no, stripped == HEADER_V6), i
    m = _FLOW4_RE.match(line)
    if m:
        return _parse_flow(m, line_no, ipv6=False), i
    m = _FLOW6_RE.match(line)
    if m:
        return _parse_flow(m, line_no, ipv6=True), i
    m = _SCHED_RE.match(line)
    if m:
        return SchedLine(line_no, _n(m["nr"]), m["type"], _n(m["flags"], 16), _n(m["b"]), _n(m["a"])), i
    m = _MASK4_RE.match(line)
    if m:
        return MaskLine(line_no, False, bool(m["extra"]), _n(m["proto"], 16), m["src"], _n(m["sp"], 16),
                             m["dst"], _n(m["dp"], 16)), i
    m = _MASK6_RE.match(line)
    if m:
        return MaskLine(line_no, True, bool(m["extra"]), _n(m["proto"], 16), m["src"], _n(m["sp"], 16),
                             m["dst"], _n(m["dp"], 16), flow_id=_n(m["fl"], 16)), i
    m = _FQCODEL_RE.match(line)
    if m:
        return SchedParams(
            line_no, "FQ_CODEL", parse_time(m["t"], line_no, line), parse_time(m["i"], line_no, line), None, None, None,
            None, None, _n(m["q"]), _n(m["l"]), _n(m["f"]), m["ecn"] == "ECN"), i
    m = _FQPIE_RE.match(line)
    if m:
        return SchedParams(
            line_no, "FQ_PIE", parse_time(m["t"], line_no, line), None, parse_time(m["tu"], line_no, line), m["a"],
            m["b"], parse_time(m["mb"], line_no, line), m["me"], _n(m["q"]), _n(m["l"]), _n(m["f"]),
            m["ecn"] == "ECN", capdrop=m["cap"] == "CapDrop", onoff=bool(m["onoff"]), dre=m["dre"] == "DRE",
            derand=m["der"] == "Derand"), i
    m = _CHILDREN_RE.match(line)
    if m:
        return ChildrenLine(line_no, tuple(_n(x) for x in m["n"].split())), i
    m = _PROFILE_RE.match(line)
    if m:
        return ProfileLine(line_no, m["name"], m["loss"], _f(m["loss"]), _n(m["s"])), i
    if _UNRECOGNISED_RE.match(line):
        raise line_error(line_no, line, "ipfw could not decode a kernel object (ipfw userland and kernel "
                                  "versions disagree)")
    raise line_error(line_no, line, "unrecognised line")


def group(records: Iterable[Record], unrecognised: list[dict[str, Any]] | None = None) -> tuple[DnObject, ...]:
    """Group records into objects following the listing order of dummynet.c list_pipes(). A record out of
    place is a ParseError naming its line, or, given `unrecognised`, set aside there."""
    objects: list[DnObject] = []
    cur: DnObject | None = None
    flows: list[FlowRow] = []         # the current object's flow rows (a tuple grown per row was quadratic)

    def flush() -> None:
        nonlocal cur, flows
        if cur is not None:
            objects.append(dataclasses.replace(cur, flows=tuple(flows)) if flows else cur)
        cur, flows = None, []

    for r in records:
        try:
            cur, new = _place(cur, bool(flows), r)
        except ParseError as exc:
            set_aside(unrecognised, r.line_no, r.render(), exc)
            continue
        if new:
            flush()
            cur = new
        elif isinstance(r, FlowRow):
            flows.append(r)
    flush()
    return tuple(objects)


def _place(cur: DnObject | None, has_flows: bool, r: Record) -> tuple[DnObject | None, DnObject | None]:
    """Where record `r` goes: (the current object updated, None), or (cur, a new object) when `r` opens
    one; ParseError (naming r's line) when it belongs nowhere. Pure: raising changes nothing. A flow row
    leaves `cur` as it is (the caller collects the rows)."""
    if isinstance(r, (BlankLine, HeaderLine)):
        return cur, None
    if isinstance(r, LinkLine):
        return cur, DnObject(link=r)
    if isinstance(r, FlowsetLine):
        if cur is None or cur.flowset is not None or cur.sched is not None or has_flows:
            return cur, DnObject(flowset=r)
        return dataclasses.replace(cur, flowset=r), None
    if isinstance(r, SchedLine):
        if cur is None or cur.sched is not None or has_flows:
            return cur, DnObject(sched=r)
        return dataclasses.replace(cur, sched=r), None
    if isinstance(r, MaskLine):
        if cur is not None and cur.sched is not None and cur.sched_mask is None and not has_flows:
            return dataclasses.replace(cur, sched_mask=r), None
        if cur is not None and cur.sched is None and cur.flowset is not None and cur.flowset_mask is None \
                and not has_flows:
            return dataclasses.replace(cur, flowset_mask=r), None
        raise line_error(r.line_no, r.render(), "mask line not after a flowset or scheduler")
    if isinstance(r, SchedParams):
        if cur is None or cur.sched is None or cur.sched_params is not None or has_flows:
            raise line_error(r.line_no, r.render(), "scheduler parameters not after a scheduler line")
        return dataclasses.replace(cur, sched_params=r), None
    if isinstance(r, ChildrenLine):
        if cur is None or cur.sched is None or cur.children is not None:
            raise line_error(r.line_no, r.render(), "children list not after a scheduler line")
        return dataclasses.replace(cur, children=r), None
    if isinstance(r, ProfileLine):
        if cur is None or cur.link is None or cur.profile is not None:
            raise line_error(r.line_no, r.render(), "delay profile not after a pipe line")
        return dataclasses.replace(cur, profile=r), None
    assert isinstance(r, FlowRow)
    if cur is None or (cur.flowset is None and cur.sched is None):
        raise line_error(r.line_no, r.render(), "flow row outside any flowset or scheduler")
    return cur, None


def parse_listing(text: str, unrecognised: list[dict[str, Any]] | None = None) -> DnListing:
    """Any dummynet listing (pipe, queue or sched show) -> DnListing (`unrecognised`: see parse_records)."""
    records = parse_records(text, unrecognised)
    return DnListing(records, group(records, unrecognised))


def parse_pipe_show(text: str, unrecognised: list[dict[str, Any]] | None = None) -> DnListing:
    """`ipfw pipe show`, `ipfw pipe N show`, `dnctl pipe show` (each object opens with a pipe line).
    Given `unrecognised`, an object without its pipe line is set aside there (its first line), not kept."""
    listing = parse_listing(text, unrecognised)
    kept = []
    for o in listing.objects:
        if o.link is None:
            first = o.flowset or o.sched
            exc = ParseError(f"pipe listing: object at line {first.line_no if first else '?'} has no pipe line "
                             "(is this `queue show` or `sched show` output?)")
            set_aside(unrecognised, first.line_no if first else 0, first.render() if first else "", exc)
            continue
        kept.append(o)
    if len(kept) != len(listing.objects):
        listing = DnListing(listing.records, tuple(kept))
    listing.by_number()  # duplicates are an error
    return listing


def parse_queue_show(text: str, unrecognised: list[dict[str, Any]] | None = None) -> DnListing:
    """`ipfw queue show` / `ipfw queue N show` (each object opens with a q line)."""
    listing = parse_listing(text, unrecognised)
    for o in listing.objects:
        if o.flowset is None or o.link is not None:
            raise ParseError(f"queue listing: object {o.number} is not a flowset (is this `pipe show` output?)")
    return listing


def parse_sched_show(text: str, unrecognised: list[dict[str, Any]] | None = None) -> DnListing:
    """`ipfw sched show` (each object has a link line and a sched line)."""
    listing = parse_listing(text, unrecognised)
    for o in listing.objects:
        if o.link is None or o.sched is None:
            raise ParseError(f"sched listing: object {o.number} lacks its link or sched line")
    return listing


def _listing_json(kind: str, listing: DnListing) -> dict[str, Any]:
    return {"kind": kind, "objects": [o.to_json() for o in listing.objects],
            "header_lines": [h.line_no for h in listing.headers]}


def _modern_object_line(line: str) -> bool:
    return bool(_LINK_RE.match(line) or _FS_RE.match(line) or _SCHED_RE.match(line))


def pipe_show_to_json(text: str, unrecognised: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """`ctl parse ipfw-pipe-show`: the parsed listing as JSON-able data, in either format: the
    modern listing (FreeBSD >= 8's dummynet) or the classic one (older FreeBSD, macOS `dnctl`,
    Emulab/GENI; bridges.ipfw_classic). `format` says which was seen: the format of the first object
    line (`--partial`, `unrecognised` given: the first line of either format, noise before it skipped)."""
    skip = None if unrecognised is None else _modern_object_line
    if ipfw_classic.looks_classic(text, skip_unless=skip):
        return {"kind": "ipfw-pipe-show", **ipfw_classic.to_json(text, unrecognised)}
    return {**_listing_json("ipfw-pipe-show", parse_pipe_show(text, unrecognised)), "format": "modern"}


def queue_show_to_json(text: str, unrecognised: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """`ctl parse ipfw-queue-show`."""
    return _listing_json("ipfw-queue-show", parse_queue_show(text, unrecognised))


def sched_show_to_json(text: str, unrecognised: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """`ctl parse ipfw-sched-show`."""
    return _listing_json("ipfw-sched-show", parse_sched_show(text, unrecognised))


# ---- ipfw -S list ----------------------------------------------------------------------------


# ---- sysctl / version ------------------------------------------------------------------------


# ---- the sampler stream -----------------------------------------------------------------------
