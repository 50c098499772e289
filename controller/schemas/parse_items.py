"""Models of the members of `ctl parse KIND --json` outputs that parse_outputs.py once left as bare
objects (issue 25): MPTCP endpoints, monitor events and subflows, nstat's counters and MPTCP summary,
snmpwalk's runs, webtorrent-cli's frames and tracker events, the modem tools' outputs and skipped lines.

Where ctl's parser shapes the member from a dataclass (controller/parsers/*.py), the model is read from
that dataclass's fields and annotations (`of_dataclass`), so a field added there appears here without
a second list to keep. What a tool printed under its own names stays open, said so in its description:
a modem output's `fields`, a monitor event's `attrs`, an endpoint's `extra`, gpsd's reports.
"""
from __future__ import annotations

import dataclasses
import typing
from typing import Any, Literal, Optional

from pydantic import BaseModel, Field, create_model

from controller.schemas.base import Open as _Open

from controller.parsers.ip_mptcp import ConnectionSubflows, Endpoint, MonitorEvent
from controller.parsers.snmpwalk import VarBind
from bridges.ipfw_classic import ClassicObject
from bridges.ipfw_records import DnObject
from controller.parsers.webtorrent import Frame

TOOL_FIELDS = "the tool's own fields, as it printed them (names and values are the tool's: deliberately open)"


def of_dataclass(dc: type, doc: str, descriptions: dict[str, str], *, optional: tuple[str, ...] = (),
                 replace: dict[str, Any] | None = None, name: str | None = None) -> type[BaseModel]:
    """An open model of what `dataclasses.asdict(dc)` gives: each field with its annotation (or `replace`'s
    type), required unless it has a default or is in `optional` (a key the producer drops when null)."""
    hints = typing.get_type_hints(dc)
    kw: dict[str, Any] = {}
    for f in dataclasses.fields(dc):
        t = (replace or {}).get(f.name, hints[f.name])
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        default = None if (has_default or f.name in optional) else ...
        kw[f.name] = (t, Field(default, description=descriptions.get(f.name)))
    return create_model(name or dc.__name__, __base__=_Open, __doc__=doc, **kw)


# ---- ip-mptcp ----------------------------------------------------------------------------------------

MptcpEndpointParsed = of_dataclass(
    Endpoint, "One endpoint of `ip -j mptcp endpoint show` (controller/parsers/ip_mptcp.py Endpoint).",
    {"address": "the endpoint's IP address", "port": "its port (signal endpoints); null: none", "id": "the endpoint id", "signal": "flag: announced to the peer (ADD_ADDR)",
     "subflow": "flag: used to open subflows", "backup": "flag", "fullmesh": "flag", "implicit": "flag",
     "dev": "the interface; null: none printed", "rawflags": "flag bits iproute2 could not name; null: none",
     "extra": "keys iproute2 printed that ctl does not know: " + TOOL_FIELDS},
    name="MptcpEndpointParsed")

MptcpEvent = of_dataclass(
    MonitorEvent, "One `ip mptcp monitor` event (controller/parsers/ip_mptcp.py MonitorEvent).",
    {"event": "canonical name: CREATED, ESTABLISHED, SF_ESTABLISHED, ..., or UNKNOWN_<n>",
     "printed": "the bracket content as printed", "event_id": "the kernel's uapi event number",
     "token": "the MPTCP connection's token, 8 lowercase hex digits", "saddr": "as printed (IPv4 or IPv6)",
     "daddr": "as printed", "saddr_ipv4": "IPv4 form of saddr (also of an IPv4-mapped IPv6 address); null: none",
     "daddr_ipv4": "IPv4 form of daddr; null: none", "flags": "printed as hex", "error": "the errno printed", "remid": "the remote address id",
     "locid": "the local address id", "sport": "source port", "dport": "destination port",
     "backup": "the backup flag (0 or 1)", "ifindex": "the interface index",
     "attrs": "every key=value exactly as printed: " + TOOL_FIELDS,
     "timestamp": "as `ip -t` / `ip -ts` printed it; null: not printed", "line": "its line in the input, from 1"},
    name="MptcpEvent")


class MptcpConnection(of_dataclass(      # type: ignore[misc]
        ConnectionSubflows, "", {
            "token": "the MPTCP connection's token, 8 lowercase hex digits",
            "initial": "the MP_CAPABLE subflow (from ESTABLISHED, else CREATED); null: not seen",
            "established": "subflows joined after the initial one (SF_ESTABLISHED)",
            "closed": "subflows closed (SF_CLOSED)",
            "announced": "addresses announced (ANNOUNCED): [daddr, dport, remid]",
            "connection_closed": "a CLOSED event was seen"},
        replace={"announced": list[list[Optional[str | int]]]}, name="_MptcpConnection")):
    """One MPTCP connection's subflows over the monitor's events (controller/parsers/ip_mptcp.py
    subflows_to_json)."""
    pairs: list[list[Optional[str]]] = Field(description="[saddr, daddr] of every joined subflow, in order")
    total_established: int = Field(description="subflows established, the initial one included")


# ---- nstat -------------------------------------------------------------------------------------------

class MptcpCounterSummary(_Open):
    """The MPTcpExt counters grouped (controller/parsers/nstat.py MptcpSummary); each a map counter name (the
    kernel's) -> value."""
    negotiated: dict[str, int] = Field(description="MPCapableSYNTX/SYNACKRX (active side), MPCapableSYNRX/ACKRX "
                                                   "(passive side)")
    fallbacks: dict[str, int] = Field(description="every counter with Fallback in its name")
    joins: dict[str, int] = Field(description="every MPJoin* counter")
    addresses: dict[str, int] = Field(description="ADD_ADDR / echo / RM_ADDR / RmSubflow / port counters")
    errors: dict[str, int] = Field(description="counters whose name says something failed, was dropped or rejected")
    other: dict[str, int] = Field(description="the rest (MPTCPRetrans, OFO*, SndWndShared, MPCurrEstab, ...)")
    mptcp_negotiated: bool = Field(description="MP_CAPABLE completed on the active or the passive side")
    fell_back: bool = Field(description="a fallback counter is above 0")
    joins_completed: int = Field(description="subflows joined: SYN-ACKs received for our joins + final ACKs "
                                             "received for the peer's")


# ---- snmpwalk ----------------------------------------------------------------------------------------

SnmpVarBind = of_dataclass(
    VarBind, "One `OID = TYPE: value` line (controller/parsers/snmpwalk.py VarBind); a key other than oid, type "
             "and value is left out when null.",
    {"oid": "numeric, without the leading dot, when known without MIB files; null: not known",
     "printed": "the OID exactly as printed", "type": "the SNMP type as printed; null: none printed",
     "value": "int for integer-like types and TimeTicks (centiseconds), text for strings, lower-case hex for "
              "Hex-STRING, a numeric OID for OID values; null: an exception",
     "text": "the rendered remainder (Timeticks 0:02:03.45, Hex-STRING bytes, OID)", "enum": "`up` of INTEGER: up(1)",
     "units": "`seconds` of INTEGER: 5 seconds", "exception": "noSuchObject, noSuchInstance or endOfMibView",
     "module": "IF-MIB of IF-MIB::ifHCInOctets.2", "name": "ifHCInOctets", "index": "2",
     "expected_type": "X of `Wrong Type (should be X): ...`; null: none"},
    optional=("printed",), replace={"value": Optional[int | str]}, name="SnmpVarBind")


class SnmpError(_Open):
    """An error snmpwalk reported (timeout, error_in_packet, mib_module_missing, ...)."""
    kind: str = Field(description="timeout, error_in_packet, mib_module_missing, ...")
    message: Optional[str] = Field(description="the tool's line")


class SnmpRun(_Open):
    """One snmpwalk command of the input (controller/parsers/snmpwalk.py Run)."""
    command: Optional[str] = Field(description="the `$ command` line; null: plain tool output")
    exit_status: Optional[int] = Field(description="as the transcript recorded it; null: not recorded")
    varbinds: list[SnmpVarBind] = Field(description="the `OID = TYPE: value` lines")  # type: ignore[valid-type]
    errors: list[SnmpError] = Field(description="the errors the tool reported")
    notes: list[str] = Field(description="the tool's other messages (e.g. end of MIB)")
    unparsed: list[str] = Field(description="lines no rule knows")


# ---- webtorrent --------------------------------------------------------------------------------------

TorrentFrame = of_dataclass(
    Frame, "One progress frame webtorrent-cli printed (controller/parsers/webtorrent.py Frame).",
    {"status": "Seeding or Downloading", "name": "the torrent's name", "speed_bps": "download speed, bit/s",
     "downloaded": "bytes", "total": "bytes", "uploaded": "bytes", "running_time": "as printed",
     "remaining": "as printed", "unchoked": "peers unchoked", "peers": "peers connected",
     "peer_rows": "the peer table: progress, type, addr, downloaded (bytes), download_bps, upload_bps (bit/s)"},
    name="TorrentFrame")


class TorrentDone(_Open):
    """webtorrent-cli's closing line."""
    active: int = Field(description="peers active")
    peers: int = Field(description="peers seen")
    seconds: int = Field(description="the download's duration, seconds")


class TrackerEvent(_Open):
    time: Optional[str] = Field(description="as the tracker's log printed it (ISO 8601); null: not printed")
    event: str = Field(description="the peer event (start, complete, update, stop, ...)")
    addr: str = Field(description="the peer's address and port")


# ---- the modem tools ---------------------------------------------------------------------------------

class SkippedLine(_Open):
    line: int = Field(description="its number, from 1")
    text: str = Field(description="the line")
    why: str = Field(description="shell-prompt, glib-log, qmi-log, serial-echo, sudo, not qmicli output")


def modem_output(name: str, sample: type[BaseModel], doc: str, **extra: Any) -> type[BaseModel]:
    """One output of a modem tool: what it is, its fields as the tool printed them, its radio sample."""
    return create_model(
        name, __base__=_Open, __doc__=doc,
        type=(str, Field(description="which command's output (or error, an acknowledgement, ...)")),
        fields=(dict[str, Any], Field(description=TOOL_FIELDS)),
        sample=(Optional[sample], Field(description="the radio sample read from it; null: none")), **extra)


# ---- ipfw pipe|queue|sched show ----------------------------------------------------------------------

class DnObjectParsed(of_dataclass(      # type: ignore[misc]
        DnObject, "", {
            "link": "the pipe's or scheduler's link line (bandwidth, delay, burst); null: a queue",
            "flowset": "the flowset line (queue size, loss rate, AQM); null: none listed",
            "flowset_mask": "the flowset's mask; null: none", "sched": "the scheduler line; null: none",
            "sched_params": "the scheduler's parameters line; null: none", "sched_mask": "the scheduler's mask",
            "children": "the scheduler's children line", "profile": "the pipe's delay profile; null: none",
            "flows": "the flow rows: per flow counters (packets, bytes, queued, drops)"},
        name="_DnObjectParsed")):
    """One dummynet object of a modern listing (FreeBSD >= 8; bridges/ipfw_records.py DnObject), each of its
    lines parsed."""
    totals: dict[str, int] = Field(description="counters summed over its flows: tot_pkts, tot_bytes, drops, "
                                               "queued_pkts, queued_bytes, flows")


class ClassicRed(_Open):
    """The RED / GRED line of a classic pipe (ipfw's own parameter names)."""
    w_q: float = Field(description="queue weight")
    min_th: int = Field(description="minimum threshold (slots or bytes, as the queue)")
    max_th: int = Field(description="maximum threshold")
    max_p: float = Field(description="maximum drop probability, 0..1")


class ClassicMask(_Open):
    """The mask line of a classic pipe or queue (hex in the listing, numbers here)."""
    family: Literal[4, 6] = Field(description="IPv4 or IPv6 mask")
    proto: int = Field(description="the protocol mask")
    src: str = Field(description="source address mask as printed")
    src_port: int = Field(description="the source port mask")
    dst: str = Field(description="destination address mask as printed")
    dst_port: int = Field(description="the destination port mask")
    flow_id: Optional[int] = Field(default=None, description="IPv6 flow id mask")


ClassicObjectParsed = of_dataclass(
    ClassicObject, "One pipe or queue of a classic dummynet listing (FreeBSD <= 7, macOS dnctl; "
                   "bridges/ipfw_classic.py ClassicObject).",
    {"kind": "pipe or queue", "bw_text": "as printed; null: a queue", "bw_bps": "bit/s; null: unlimited, a clock "
     "interface, or a queue", "delay_ms": "ms", "queue_slots": "packets", "queue_bytes": "bytes",
     "queue_bytes_exact": "false: printed in whole KiB (>= 8 KiB), truncated", "plr": "packet loss rate, 0..1",
     "aqm": "droptail, red or gred", "flows": "the flow rows", "verbose": "the -v lines as printed",
     "red": "the RED / GRED parameters; null: droptail", "mask": "the flow mask; null: none",
     "number": "the pipe's or queue's number", "line_no": "its line in the listing, from 1",
     "clock_interface": "the interface whose clock paces the pipe; null: none", "queue_text": "the queue size as "
     "printed", "plr_text": "the loss rate as printed; null: none printed", "queues": "queues in use (ipfw's count)",
     "buckets": "hash buckets", "weight": "a queue's weight; null: a pipe", "parent_pipe": "a queue's pipe; null: a pipe"},
    replace={"red": Optional[ClassicRed], "mask": Optional[ClassicMask]}, name="ClassicObjectParsed")
