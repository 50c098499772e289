"""Parser for `ip mptcp` output (iproute2 6.1 verified): endpoints, limits and monitor events.

Pure: text in, frozen dataclasses out. Facts from the recorded real output
(tests/fixtures/recorded/04_linux_mptcp.md, generated/ip_mptcp_*.txt) that shape this parser:

- `ip mptcp endpoint show` text: "<addr> [port <p>] id <id> [signal] [subflow] [backup] [fullmesh]
  [implicit] [rawflags <hex>] [dev <ifname>] " -- every line ends with a space.
- `ip -j mptcp endpoint show` is JSON, but with iproute2 6.1 `ip -j mptcp limits show` still prints
  TEXT ("add_addr_accepted 2 subflows 2 "): a caller that asked for JSON must accept both.
- `ip mptcp monitor` prints "[%14s] key=value ..." (newer iproute2 "[%16s]"); events iproute2 does
  not name are printed as "[UNKNOWN <n>]" with no attributes. 6.1 does not know the listener events,
  so "[UNKNOWN 15]"/"[UNKNOWN 16]" are LISTENER_CREATED/LISTENER_CLOSED (kernel uapi mptcp_pm.h).
  `flags=` is printed in hex, `reset_flags=` as 0x..., the token as 8 hex digits.
- A server listening on :: reports IPv4 peers as IPv4-mapped IPv6 (saddr6=::ffff:10.1.1.2); events
  keep the printed address and add the IPv4 form, so client and server views can be matched.

`to_json` auto-detects which of these it was given.
"""
from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

from controller.errors import ParseError
from controller.parsers import numbers

# Kernel uapi include/uapi/linux/mptcp_pm.h (enum mptcp_event_type)
EVENT_IDS: dict[str, int] = {
    "CREATED": 1, "ESTABLISHED": 2, "CLOSED": 3, "ANNOUNCED": 6, "REMOVED": 7,
    "SF_ESTABLISHED": 10, "SF_CLOSED": 11, "SF_PRIORITY": 13,
    "LISTENER_CREATED": 15, "LISTENER_CLOSED": 16,
}
_EVENT_BY_ID = {v: k for k, v in EVENT_IDS.items()}
# names differing between iproute2 versions -> one canonical name
_EVENT_ALIASES = {"SF_PRIO": "SF_PRIORITY"}

ENDPOINT_FLAGS = ("signal", "subflow", "backup", "fullmesh", "implicit")

_INT_ATTRS = frozenset({"remid", "locid", "sport", "dport", "backup", "error", "timeout", "ifindex",
                        "reset_reason", "server_side"})
_HEX_ATTRS = frozenset({"flags", "reset_flags"})     # printed with %x / 0x%x
_ADDR_ATTRS = frozenset({"saddr4", "daddr4", "saddr6", "daddr6"})

_EVENT_RE = re.compile(r"^\[\s*(?P<name>[A-Z_]+(?: (?P<num>\d+))?)\s*\](?P<rest>.*)$")
# `ip -ts monitor` puts "[2026-11-22T02:22:49.123456] " before the event
_SHORT_TS_RE = re.compile(r"^\[(?P<ts>\d{4}-\d\d-\d\dT[0-9:.]+)\]\s*(?P<line>.*)$")
_LONG_TS_RE = re.compile(r"^Timestamp:\s*(?P<ts>.*)$")     # `ip -t monitor`, on its own line


# ---------------------------------------------------------------------------- data model


@dataclass(frozen=True)
class Endpoint:
    address: str
    id: int | None
    port: int | None
    signal: bool
    subflow: bool
    backup: bool
    fullmesh: bool
    implicit: bool
    dev: str | None
    rawflags: int | None           # flag bits iproute2 could not name (printed in hex)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Limits:
    add_addr_accepted: int | None
    subflows: int | None


@dataclass(frozen=True)
class MonitorEvent:
    event: str                     # canonical name: "CREATED", ..., "LISTENER_CREATED", or "UNKNOWN_<n>"
    printed: str                   # the bracket content as printed, e.g. "UNKNOWN 15", "SF_ESTABLISHED"
    event_id: int | None           # kernel uapi event number (from the name, or as printed in "[UNKNOWN n]")
    token: str | None              # 8 lowercase hex digits
    remid: int | None
    locid: int | None
    saddr: str | None              # as printed (saddr4 or saddr6)
    daddr: str | None
    saddr_ipv4: str | None         # IPv4 form (also of an IPv4-mapped IPv6 address), else None
    daddr_ipv4: str | None
    sport: int | None
    dport: int | None
    backup: int | None
    flags: int | None              # printed as hex
    error: int | None
    ifindex: int | None
    attrs: dict[str, str]          # every key=value exactly as printed
    timestamp: str | None = None   # from `ip -t` / `ip -ts`
    line: int = 0

    @property
    def saddr_norm(self) -> str | None:
        return self.saddr_ipv4 or self.saddr

    @property
    def daddr_norm(self) -> str | None:
        return self.daddr_ipv4 or self.daddr


@dataclass(frozen=True)
class Subflow:
    saddr: str | None              # IPv4-mapped addresses given as IPv4
    daddr: str | None
    sport: int | None
    dport: int | None
    locid: int | None
    remid: int | None
    backup: int | None


@dataclass(frozen=True)
class ConnectionSubflows:
    token: str
    initial: Subflow | None                 # from ESTABLISHED (else CREATED): the MP_CAPABLE subflow
    established: tuple[Subflow, ...]        # SF_ESTABLISHED: subflows joined after the initial one
    closed: tuple[Subflow, ...]             # SF_CLOSED
    announced: tuple[tuple[str | None, int | None, int | None], ...]   # ANNOUNCED (daddr, dport, remid)
    connection_closed: bool                 # a CLOSED event was seen

    @property
    def pairs(self) -> tuple[tuple[str | None, str | None], ...]:
        """(saddr, daddr) of every joined subflow, in order of establishment."""
        return tuple((s.saddr, s.daddr) for s in self.established)

    @property
    def total_established(self) -> int:
        """The initial subflow plus every joined one."""
        return len(self.established) + (1 if self.initial is not None else 0)


# ---------------------------------------------------------------------------- helpers


def _ipv4_form(addr: str) -> str | None:
    try:
        ip = ipaddress.ip_address(addr)
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv4Address):
        return str(ip)
    return str(ip.ipv4_mapped) if ip.ipv4_mapped is not None else None


def _int(text: str, what: str) -> int:
    try:
        return numbers.integer(text, f"ip-mptcp: {what}")
    except ValueError:
        raise ParseError(f"ip-mptcp: {what} {text!r} is not an integer") from None


def _hex(text: str, what: str) -> int:
    try:
        return numbers.integer(text, f"ip-mptcp: {what}", 16)
    except ValueError:
        raise ParseError(f"ip-mptcp: {what} {text!r} is not hexadecimal") from None


def _check_no_error(text: str) -> None:
    for line in text.splitlines():
        if line.startswith("Error:"):
            raise ParseError(f"ip-mptcp: ip reported an error, not output: {line.strip()}")


# ---------------------------------------------------------------------------- endpoints / limits


def _set_aside(unrecognised: list[dict[str, Any]] | None, lineno: int, line: str, exc: ParseError) -> None:
    if unrecognised is None:
        raise exc
    unrecognised.append({"line": lineno, "text": line, "why": exc.one_line()})


def parse_endpoints_text(text: str, unrecognised: list[dict[str, Any]] | None = None) -> list[Endpoint]:
    """Endpoint lines; a line that is not one is a ParseError naming it, or, given `unrecognised`
    (`ctl parse --partial`), set aside there."""
    _check_no_error(text)
    out: list[Endpoint] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        words = line.split()
        if not words:
            continue
        try:
            out.append(_endpoint_line(words, lineno))
        except ParseError as exc:
            _set_aside(unrecognised, lineno, line, exc)
    return out


def _endpoint_line(words: list[str], lineno: int) -> Endpoint:
    address = words[0]
    try:
        ipaddress.ip_address(address)
    except ValueError:
        raise ParseError(f"ip-mptcp: line {lineno}: {address[:60]!r} is not an endpoint address") from None
    values: dict[str, Any] = {"id": None, "port": None, "dev": None, "rawflags": None}
    flags = dict.fromkeys(ENDPOINT_FLAGS, False)
    extra: dict[str, Any] = {}
    i = 1
    while i < len(words):
        word = words[i]
        if word in flags:
            flags[word] = True
            i += 1
        elif word in values:
            if i + 1 >= len(words):
                raise ParseError(f"ip-mptcp: line {lineno}: {word!r} without a value")
            raw = words[i + 1]
            if word in ("id", "port"):
                values[word] = _int(raw, word)
            elif word == "rawflags":
                values[word] = _hex(raw, word)
            else:
                values[word] = raw
            i += 2
        else:
            # a flag a newer iproute2 may print: keep it rather than drop it
            extra[word] = True
            i += 1
    return Endpoint(
        address=address, id=values["id"], port=values["port"], dev=values["dev"], rawflags=values["rawflags"],
        signal=flags["signal"], subflow=flags["subflow"], backup=flags["backup"], fullmesh=flags["fullmesh"],
        implicit=flags["implicit"], extra=extra)


def _endpoint_from_json(obj: Any, index: int) -> Endpoint:
    if not isinstance(obj, dict) or not isinstance(obj.get("address"), str):
        raise ParseError(f"ip-mptcp: endpoint #{index} has no address")
    known = {"address", "id", "port", "dev", "rawflags", *ENDPOINT_FLAGS}
    for key in ("id", "port"):
        if key in obj and (isinstance(obj[key], bool) or not isinstance(obj[key], int)):
            raise ParseError(f"ip-mptcp: endpoint #{index} {key} is {obj[key]!r}")
    rawflags = obj.get("rawflags")
    return Endpoint(
        address=obj["address"], id=obj.get("id"), port=obj.get("port"),
        signal=obj.get("signal") is True, subflow=obj.get("subflow") is True,
        backup=obj.get("backup") is True, fullmesh=obj.get("fullmesh") is True,
        implicit=obj.get("implicit") is True, dev=obj.get("dev"),
        rawflags=_hex(rawflags, "rawflags") if isinstance(rawflags, str) else rawflags,
        extra={k: v for k, v in obj.items() if k not in known},
    )


def parse_endpoints_json(text: str) -> list[Endpoint]:
    try:
        doc = numbers.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"ip-mptcp: invalid JSON: {exc.msg}") from None
    if not isinstance(doc, list):
        raise ParseError("ip-mptcp: endpoint JSON is not a list")
    return [_endpoint_from_json(obj, i) for i, obj in enumerate(doc)]


def parse_endpoints(text: str, unrecognised: list[dict[str, Any]] | None = None) -> list[Endpoint]:
    """`ip mptcp endpoint show`, text or -j (auto-detected)."""
    stripped = text.strip()
    if stripped.startswith("["):
        return parse_endpoints_json(stripped)
    return parse_endpoints_text(text, unrecognised)


def parse_limits(text: str) -> Limits:
    """`ip mptcp limits show`: text ("add_addr_accepted 2 subflows 2 ", also what 6.1 prints with -j)
    or the JSON object newer iproute2 prints with -j."""
    _check_no_error(text)
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            doc = numbers.loads(stripped)
        except json.JSONDecodeError as exc:
            raise ParseError(f"ip-mptcp: invalid JSON: {exc.msg}") from None
        values = {k: doc.get(k) for k in ("add_addr_accepted", "subflows")}
        for k, v in values.items():
            if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
                raise ParseError(f"ip-mptcp: limits {k} is {v!r}")
        if not any(v is not None for v in values.values()):
            raise ParseError("ip-mptcp: limits JSON has neither add_addr_accepted nor subflows")
        return Limits(**values)
    lines = [line for line in stripped.splitlines() if line.strip()]
    if len(lines) != 1:
        raise ParseError(f"ip-mptcp: limits output should be one line, got {len(lines)}")
    words = lines[0].split()
    if len(words) % 2:
        raise ParseError(f"ip-mptcp: limits line {lines[0]!r} is not 'name value' pairs")
    found: dict[str, int] = {}
    for name, value in zip(words[0::2], words[1::2], strict=True):
        if name not in ("add_addr_accepted", "subflows"):
            raise ParseError(f"ip-mptcp: unknown limit {name!r}")
        found[name] = _int(value, name)
    return Limits(add_addr_accepted=found.get("add_addr_accepted"), subflows=found.get("subflows"))


# ---------------------------------------------------------------------------- monitor


def _event(printed: str, number: str | None, rest: str, lineno: int, timestamp: str | None) -> MonitorEvent:
    event_id: int | None
    if printed.startswith("UNKNOWN"):
        if number is None:
            raise ParseError(f"ip-mptcp: line {lineno}: [UNKNOWN] without an event number")
        event_id = int(number)
        event = _EVENT_BY_ID.get(event_id, f"UNKNOWN_{event_id}")
    else:
        event = _EVENT_ALIASES.get(printed, printed)
        event_id = EVENT_IDS.get(event)
    attrs: dict[str, str] = {}
    for word in rest.split():
        key, sep, value = word.partition("=")
        if not sep or not key:
            raise ParseError(f"ip-mptcp: line {lineno}: {word!r} is not key=value")
        attrs[key] = value
    typed: dict[str, Any] = {}
    for key, value in attrs.items():
        if key in _INT_ATTRS:
            typed[key] = _int(value, key)
        elif key in _HEX_ATTRS:
            typed[key] = _hex(value, key)
        elif key in _ADDR_ATTRS:
            try:
                ipaddress.ip_address(value)
            except ValueError:
                raise ParseError(f"ip-mptcp: line {lineno}: {key}={value} is not an address") from None
    token = attrs.get("token")
    if token is not None:
        token = f"{_hex(token, 'token'):08x}"
    saddr = attrs.get("saddr4", attrs.get("saddr6"))
    daddr = attrs.get("daddr4", attrs.get("daddr6"))
    return MonitorEvent(
        event=event, printed=printed, event_id=event_id, token=token,
        remid=typed.get("remid"), locid=typed.get("locid"),
        saddr=saddr, daddr=daddr,
        saddr_ipv4=_ipv4_form(saddr) if saddr else None, daddr_ipv4=_ipv4_form(daddr) if daddr else None,
        sport=typed.get("sport"), dport=typed.get("dport"), backup=typed.get("backup"),
        flags=typed.get("flags"), error=typed.get("error"), ifindex=typed.get("ifindex"),
        attrs=attrs, timestamp=timestamp, line=lineno,
    )


def parse_monitor(text: str, unrecognised: list[dict[str, Any]] | None = None) -> list[MonitorEvent]:
    """`ip mptcp monitor` lines (also with `ip -t` / `ip -ts` timestamps); a line that is not an event
    is a ParseError naming it, or, given `unrecognised` (`ctl parse --partial`), set aside there."""
    events: list[MonitorEvent] = []
    pending_ts: str | None = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw
        if not line.strip():
            continue
        m_long = _LONG_TS_RE.match(line)
        if m_long:
            pending_ts = m_long.group("ts").strip()
            continue
        timestamp = pending_ts
        m_short = _SHORT_TS_RE.match(line)
        if m_short:
            timestamp, line = m_short.group("ts"), m_short.group("line")
        try:
            m = _EVENT_RE.match(line)
            if not m:
                raise ParseError(f"ip-mptcp: line {lineno}: not a monitor event: {line.strip()[:80]!r}")
            events.append(_event(m.group("name"), m.group("num"), m.group("rest"), lineno, timestamp))
        except ParseError as exc:
            _set_aside(unrecognised, lineno, raw, exc)
            continue
        pending_ts = None
    return events


def _subflow_of(ev: MonitorEvent) -> Subflow:
    return Subflow(saddr=ev.saddr_norm, daddr=ev.daddr_norm, sport=ev.sport, dport=ev.dport,
                   locid=ev.locid, remid=ev.remid, backup=ev.backup)


def count_subflows(events: Iterable[MonitorEvent]) -> dict[str, ConnectionSubflows]:
    """Per MPTCP token: the initial subflow, joined subflows (SF_ESTABLISHED), closed ones (SF_CLOSED).
    Tokens are local to the host that printed them: the client and the server see different tokens."""
    acc: dict[str, dict[str, Any]] = {}
    for ev in events:
        if ev.token is None:
            continue   # listener events carry no token
        entry = acc.setdefault(ev.token, {"initial": None, "created": None, "established": [],
                                          "closed": [], "announced": [], "connection_closed": False})
        if ev.event == "CREATED":
            entry["created"] = _subflow_of(ev)
        elif ev.event == "ESTABLISHED":
            entry["initial"] = _subflow_of(ev)
        elif ev.event == "SF_ESTABLISHED":
            entry["established"].append(_subflow_of(ev))
        elif ev.event == "SF_CLOSED":
            entry["closed"].append(_subflow_of(ev))
        elif ev.event == "ANNOUNCED":
            entry["announced"].append((ev.daddr_norm, ev.dport, ev.remid))
        elif ev.event == "CLOSED":
            entry["connection_closed"] = True
    return {
        token: ConnectionSubflows(
            token=token,
            initial=e["initial"] if e["initial"] is not None else e["created"],
            established=tuple(e["established"]),
            closed=tuple(e["closed"]),
            announced=tuple(e["announced"]),
            connection_closed=e["connection_closed"],
        )
        for token, e in acc.items()
    }


# ---------------------------------------------------------------------------- auto-detect


def _known_line(line: str) -> bool:
    """A line of one of the forms (an event, a timestamp, an endpoint address, a limit)."""
    s = line.strip()
    if _EVENT_RE.match(s) or _SHORT_TS_RE.match(s) or _LONG_TS_RE.match(s):
        return True
    word = s.split(maxsplit=1)[0] if s else ""
    if word in ("add_addr_accepted", "subflows"):
        return True
    try:
        ipaddress.ip_address(word)
    except ValueError:
        return False
    return True


def detect(text: str, skip_unknown: bool = False) -> str:
    """"endpoints", "limits" or "monitor" for a piece of `ip mptcp` output, told by its first line
    (`skip_unknown`, for --partial: by its first line of a known form)."""
    stripped = text.strip()
    if not stripped:
        return "endpoints"   # `ip mptcp endpoint show` with no endpoint prints nothing
    lines = stripped.splitlines()
    first = next((x.strip() for x in lines if _known_line(x)), lines[0].strip()) if skip_unknown \
        else lines[0].strip()
    if stripped.startswith("{"):
        return "limits"
    if stripped.startswith("[") and (stripped == "[]" or re.match(r"^\[\s*\{", stripped)):
        return "endpoints"
    if _EVENT_RE.match(first) or _SHORT_TS_RE.match(first) or _LONG_TS_RE.match(first):
        return "monitor"
    if first.split()[0] in ("add_addr_accepted", "subflows"):
        return "limits"
    return "endpoints"


def subflows_to_json(conn: ConnectionSubflows) -> dict[str, Any]:
    out = asdict(conn)
    out["pairs"] = [list(p) for p in conn.pairs]
    out["total_established"] = conn.total_established
    return out


def to_json(text: str, unrecognised: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """`ctl parse ip-mptcp`; `unrecognised` (`--partial`): lines of endpoint or monitor output that are
    not set aside there (limits output is one line: refused whole)."""
    kind = detect(text, skip_unknown=unrecognised is not None)
    if kind == "limits":
        return {"kind": "limits", **asdict(parse_limits(text))}
    if kind == "monitor":
        events = parse_monitor(text, unrecognised)
        return {"kind": "monitor", "events": [asdict(e) for e in events],
                "subflows": {t: subflows_to_json(c) for t, c in count_subflows(events).items()}}
    return {"kind": "endpoints", "endpoints": [asdict(e) for e in parse_endpoints(text, unrecognised)]}
