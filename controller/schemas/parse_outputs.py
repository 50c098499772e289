"""What `ctl parse KIND FILE` prints in `data`, per KIND (the parsers' `to_json`, registered in
controller/parsers/__init__.py): the top-level keys a script may rely on, each parser's own
(open models: a parser may add keys). With `--partial`, `data` wraps the same result:
{partial, unrecognised, result}.

The keys of the parsers whose output is a dataclass's fields (iperf3, ss, tc-qdisc, ping) are
read from the dataclass, so a field added there is required here without a second list to keep.
`PARSE_OUTPUTS` maps each kind to the type of its data; `parse_conditions` gives the JSON Schema
`if command is "parse KIND" then data is KIND's` clauses of the one `parse` schema.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, create_model

from controller.schemas.base import Open as _Open

from controller.parsers.iperf3 import Iperf3Result
from controller.parsers.ping import PingResult
from controller.parsers.ss import Socket
from controller.parsers.tc import Qdisc
from controller.schemas.parse_items import (ClassicObjectParsed, DnObjectParsed, MptcpConnection, MptcpCounterSummary, MptcpEndpointParsed, MptcpEvent,
                                            SkippedLine, SnmpRun, TorrentDone, TorrentFrame, TrackerEvent,
                                            modem_output)


def _of_dataclass(name: str, dc: type, doc: str, *extra: str) -> type[BaseModel]:
    """An open model requiring every field of the dataclass `dc` (and `extra` keys), any value each."""
    keys = [f.name for f in dataclasses.fields(dc)] + list(extra)
    return create_model(name, __base__=_Open, __doc__=doc, **{k: (Any, ...) for k in keys})


ParsedIperf3 = _of_dataclass("ParsedIperf3", Iperf3Result, "One iperf3 --json document (its sections as iperf3 "
                             "named them; `failure`: why the test failed, null when it did not).", "failure")
ParsedSocket = _of_dataclass("ParsedSocket", Socket, "One socket of an ss listing.", "is_mptcp_socket")
ParsedQdisc = _of_dataclass("ParsedQdisc", Qdisc, "One qdisc of `tc -j -s qdisc show`.", "ingress")
ParsedPing = _of_dataclass("ParsedPing", PingResult, "An iputils ping run: the replies, loss and RTT statistics "
                           "(ms); jitter_ms: mean absolute difference of consecutive RTTs.")


class ParsedNstat(_Open):
    source: str = Field(description="nstat -asz, or /proc/net/netstat")
    counters: dict[str, int] = Field(description="counter name (the kernel's) -> value")
    rates: Optional[dict[str, float]] = Field(None, description="counter name -> rate per second (nstat's third "
                                                                 "column)")
    mptcp_summary: Optional[MptcpCounterSummary] = Field(None, description="where MPTcpExt counters are present")


class ParsedMptcpEndpoints(_Open):
    kind: Literal["endpoints"]
    endpoints: list[MptcpEndpointParsed]          # type: ignore[valid-type]


class ParsedMptcpMonitor(_Open):
    kind: Literal["monitor"]
    events: list[MptcpEvent] = Field(description="the `ip mptcp monitor` events, in order")  # type: ignore[valid-type]
    subflows: dict[str, MptcpConnection] = Field(description="MPTCP token -> its subflows (initial and established)")


class ParsedMptcpLimits(_Open):
    kind: Literal["limits"]
    add_addr_accepted: Optional[int]
    subflows: Optional[int]


class ParsedIpfwListing(_Open):
    kind: Literal["ipfw-pipe-show", "ipfw-queue-show", "ipfw-sched-show"]
    objects: list[DnObjectParsed] = Field(description="the pipes, queues or schedulers listed")


class ParsedIpfwPipes(ParsedIpfwListing):
    format: str = Field(description="modern (FreeBSD >= 8's dummynet) or classic (older FreeBSD, macOS dnctl)")
    objects: list[Union[DnObjectParsed, ClassicObjectParsed]] = Field(  # type: ignore[assignment,valid-type]
        description="the pipes listed, as the listing's format gives them")


class ParsedSnmpwalk(_Open):
    runs: list[SnmpRun] = Field(description="per command: command, exit_status, varbinds, errors, notes, "
                                                   "unparsed")
    unparsed_lines: Any


def _radio_sample_model(name: str, leg: type[BaseModel] | None) -> type[BaseModel]:
    """nodes.modem.radio.RadioSample as `to_json` writes it: each number within its quantity's range
    (nodes/modem/ranges.py: minimum/maximum are the widest over the technologies), or null."""
    from nodes.modem.radio import RadioSample
    from nodes.modem.ranges import RANGES, SOURCES
    kw: dict[str, Any] = {}
    for f in dataclasses.fields(RadioSample):
        if f.name in RANGES:
            r = RANGES[f.name]
            by = r if isinstance(r, dict) else {"": r}
            lo, hi = min(x.lo for x in by.values()), max(x.hi for x in by.values())
            integral = next(iter(by.values())).integral
            per = "; ".join(f"{g or 'other'}: {x.lo:g}..{x.hi:g}" for g, x in by.items()) if len(by) > 1 else ""
            kw[f.name] = (Optional[int] if integral else Optional[float],
                          Field(default=None, ge=lo, le=hi, description=SOURCES[f.name] + (
                              f" (by technology: {per})" if per else "")))
        elif f.name == "secondary":
            kw[f.name] = (list[leg] if leg is not None else list[Any],      # type: ignore[valid-type]
                          Field(default=[], description="the other legs (EN-DC: the NR one)"))
        elif f.name == "out_of_range":
            kw[f.name] = (list[Literal[tuple([*RANGES, "band"])]],            # type: ignore[misc]
                          Field(default=[], description="fields the tool gave a value for outside the quantity's "
                                                        "range: now null (nodes/modem/ranges.py)"))
        else:
            kw[f.name] = (Optional[str], Field(default=None))
    return create_model(name, __base__=_Open, __doc__="A normalized radio sample (nodes/modem/radio.py).", **kw)


RadioLeg = _radio_sample_model("RadioLeg", None)
RadioSampleOut = _radio_sample_model("RadioSample", RadioLeg)


_RADIO = "(a tool's output: which one, its fields as printed, its radio sample)"
MmcliOutput = modem_output("MmcliOutput", RadioSampleOut, "One mmcli output " + _RADIO)
QmicliOutput = modem_output("QmicliOutput", RadioSampleOut, "One qmicli output " + _RADIO)
WimaxOutput = modem_output("WimaxOutput", RadioSampleOut, "One wimaxcu / madwimax output " + _RADIO)
AtResponse = modem_output("AtResponse", RadioSampleOut, "One AT command's reply " + _RADIO,
                          command=(Optional[str], Field(description="the command echoed; null: none")),
                          final=(Optional[str], Field(description="the final result code (OK, ERROR, +CME ERROR: n)")))


class _Radio(_Open):
    sample: Optional[RadioSampleOut] = Field(description="the radio sample merged from every output (null: none)")  # type: ignore[valid-type]


class ParsedMmcli(_Radio):
    tool: Literal["mmcli"]
    outputs: list[MmcliOutput]                    # type: ignore[valid-type]


class ParsedQmicli(_Radio):
    tool: Literal["qmicli"]
    outputs: list[QmicliOutput]                   # type: ignore[valid-type]
    skipped: list[SkippedLine] = Field(description="lines set aside as not qmicli's output, and why")


class ParsedAt(_Radio):
    tool: Literal["at"]
    responses: list[AtResponse]                   # type: ignore[valid-type]
    urcs: list[Any] = Field(description="unsolicited result codes")
    unparsed: list[Any]


class ParsedWimax(_Radio):
    tool: Literal["wimax"]
    confidence: str
    outputs: list[WimaxOutput]                    # type: ignore[valid-type]


class ParsedGpsd(_Open):
    tool: Literal["gpsd"]
    tpv: list[dict[str, Any]] = Field(description="the TPV (position) reports")
    sky: list[dict[str, Any]]
    version: Any
    devices: Any
    other: Any
    errors: Any
    fix: Optional[dict[str, Any]] = Field(description="the last fix (null: none)")


class ParsedTorrentInfo(_Open):
    info_hash: str
    name: Optional[str]
    length: Optional[int] = Field(description="bytes")
    piece_length: Optional[int] = Field(description="bytes")
    pieces: int
    announce: list[str]


class ParsedTracker(_Open):
    kind: Literal["tracker"]
    urls: dict[str, str] = Field(description="the tracker's URLs by protocol, as its log printed them")
    events: list[TrackerEvent] = Field(description="peer events, in order")
    warnings: list[str]


class ParsedWebtorrentClient(_Open):
    kind: Literal["client"]
    frames: list[TorrentFrame] = Field(description="the progress frames webtorrent-cli printed")  # type: ignore[valid-type]
    done: Optional[TorrentDone] = Field(description="its closing line; null: not printed")


PARSE_OUTPUTS: dict[str, Any] = {
    "iperf3": Union[ParsedIperf3, list[ParsedIperf3]],       # a list when the file holds several documents
    "tc-qdisc": list[ParsedQdisc],
    "ss": list[ParsedSocket],
    "nstat": ParsedNstat,
    "ip-mptcp": Union[ParsedMptcpEndpoints, ParsedMptcpMonitor, ParsedMptcpLimits],
    "ipfw-pipe-show": ParsedIpfwPipes,
    "ipfw-queue-show": ParsedIpfwListing,
    "ipfw-sched-show": ParsedIpfwListing,
    "ping": ParsedPing,
    "snmpwalk": ParsedSnmpwalk,
    "mmcli": ParsedMmcli,
    "qmicli": ParsedQmicli,
    "at": ParsedAt,
    "wimax": ParsedWimax,
    "gpsd": ParsedGpsd,
    "webtorrent": Union[ParsedTorrentInfo, ParsedTracker, ParsedWebtorrentClient],
}


class Unrecognised(_Open):
    line: int = Field(description="its number, from 1")
    text: str
    why: str = Field(description="the parser's reason")


class ParsedPartial(BaseModel):
    """`ctl parse KIND FILE --partial`: the result of what was recognised (KIND's data), and the
    lines set aside."""

    model_config = ConfigDict(extra="forbid")
    partial: bool = Field(description="whether any line was set aside")
    unrecognised: list[Unrecognised] = Field(description="the lines set aside: number, text, the parser's reason")
    result: Any = Field(description="KIND's data, as without --partial")


# `data` of every `parse KIND`: one of these (parse_conditions says which for which KIND)
ParseData = Union[tuple([ParsedPartial, *dict.fromkeys(PARSE_OUTPUTS.values())])]     # type: ignore[misc]


def parse_conditions() -> list[dict]:
    """`if command is "parse KIND" then data is KIND's (or --partial's wrapping KIND's)` for every
    kind, referring to the models in the envelope schema's $defs."""
    out = []
    for kind, t in PARSE_OUTPUTS.items():
        s = TypeAdapter(t).json_schema(ref_template="#/$defs/{model}", mode="validation")
        s.pop("$defs", None)
        partial = {"type": "object", "required": ["partial", "unrecognised", "result"],
                   "properties": {"result": s}}
        out.append({"if": {"properties": {"command": {"const": f"parse {kind}"}}, "required": ["command"]},
                    "then": {"properties": {"data": {"anyOf": [s, partial]}}}})
    return out
