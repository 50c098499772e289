"""Parser for kernel SNMP/netstat counters: `nstat` output and the raw /proc/net/netstat form.

Accepted inputs (auto-detected):
- `nstat -asz` (or any nstat text): an optional "#kernel" line, then "Name value rate" lines.
  nstat prints "%-32s%-16llu%6.1f", so a name of 32+ characters touches its value; handled.
- `nstat --json`: {"kernel": {"Name": value, ...}}.
- /proc/net/netstat and /proc/net/snmp: pairs of lines "Prefix: Name1 Name2 ..." /
  "Prefix: v1 v2 ...". Names become nstat's names (prefix + name: "MPTcpExt" + "MPCapableSYNTX"),
  so both sources can be compared and subtracted.
- /proc/net/snmp6: "Name value" lines.

Counters are per network namespace and monotonic; `delta(before, after)` subtracts them and
refuses a counter that went backwards (the namespace, or the host, was reset in between).
nstat without -z omits zero counters, so a counter missing on one side counts as 0.

`mptcp_summary` groups the MPTcpExt counters (see 04_linux_mptcp.md for what each means): whether
MPTCP was negotiated, any fallback to TCP, MP_JOIN subflows, address announcements, errors.
"""
from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from controller.errors import ParseError, ResultInvalid
from controller.parsers import numbers

_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_GLUED_RE = re.compile(r"^([A-Za-z][A-Za-z0-9_]*[A-Za-z_])(\d+)$")
_PROC_RE = re.compile(r"^([A-Za-z][A-Za-z0-9]*):\s*(.*)$")
MPTCP_PREFIX = "MPTcpExt"


@dataclass(frozen=True)
class Counters:
    values: dict[str, int]                       # nstat names -> value
    rates: dict[str, float] = field(default_factory=dict)   # nstat's rate column (0.0 with -s)
    source: str = "nstat"                        # "nstat", "nstat-json", "proc"

    def get(self, name: str, default: int = 0) -> int:
        return self.values.get(name, default)

    def group(self, prefix: str) -> dict[str, int]:
        """Counters whose name starts with `prefix`, with the prefix removed."""
        return {k[len(prefix):]: v for k, v in self.values.items() if k.startswith(prefix)}


def _uint(text: str, where: str) -> int:
    if not text.isdigit():
        # /proc/net/snmp has a few signed fields (e.g. TcpMaxConn -1); keep them, they are not counters
        if text.startswith("-") and text[1:].isdigit():
            return numbers.integer(text, f"nstat: {where}")
        raise ParseError(f"nstat: {where}: {text[:40]!r} is not an integer")
    try:
        return numbers.integer(text, f"nstat: {where}")
    except ValueError:                  # "²" is a digit to isdigit() but not to int(); 5000 digits neither
        raise ParseError(f"nstat: {where}: {text[:40]!r} is not an integer") from None


def _parse_json(text: str) -> Counters:
    try:
        doc = numbers.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"nstat: invalid JSON: {exc.msg}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("kernel"), dict):
        raise ParseError('nstat: JSON without a "kernel" object')
    values: dict[str, int] = {}
    for name, value in doc["kernel"].items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise ParseError(f"nstat: {name} is {value!r}, expected an integer")
        values[name] = value
    return Counters(values=values, source="nstat-json")


def _parse_proc(lines: list[tuple[int, str]]) -> Counters:
    values: dict[str, int] = {}
    if len(lines) % 2:
        raise ParseError("nstat: /proc/net/netstat form needs header/value line pairs")
    for (n1, head), (n2, vals) in zip(lines[0::2], lines[1::2], strict=True):
        m1, m2 = _PROC_RE.match(head), _PROC_RE.match(vals)
        if not m1 or not m2 or m1.group(1) != m2.group(1):
            raise ParseError(f"nstat: lines {n1}-{n2}: not a 'Prefix: names' / 'Prefix: values' pair")
        prefix = m1.group(1)
        names, numbers = m1.group(2).split(), m2.group(2).split()
        if len(names) != len(numbers):
            raise ParseError(f"nstat: {prefix}: {len(names)} names but {len(numbers)} values")
        for name, number in zip(names, numbers, strict=True):
            values[prefix + name] = _uint(number, f"line {n2} {prefix}{name}")
    return Counters(values=values, source="proc")


def _parse_nstat(lines: list[tuple[int, str]], unrecognised: list[dict[str, Any]] | None = None) -> Counters:
    values: dict[str, int] = {}
    rates: dict[str, float] = {}
    for n, line in lines:
        try:
            name, value, rate = _nstat_line(n, line, values)
        except ParseError as exc:
            if unrecognised is None:
                raise
            unrecognised.append({"line": n, "text": line, "why": exc.one_line()})
            continue
        values[name] = value
        if rate is not None:
            rates[name] = rate
    return Counters(values=values, rates=rates, source="nstat")


def _nstat_line(n: int, line: str, values: dict[str, int]) -> tuple[str, int, float | None]:
    """(name, value, rate) of one counter line; ParseError naming line n for anything else."""
    parts = line.split()
    rate: str | None = None
    if len(parts) == 3:
        name, value, rate = parts
    elif len(parts) == 2 and parts[1].isdigit():
        name, value = parts                         # /proc/net/snmp6 style, no rate
    elif len(parts) == 2 and (m := _GLUED_RE.match(parts[0])) and len(m.group(1)) >= 32:
        name, value = m.groups()                    # "%-32s%-16llu": a long name touches its value
        rate = parts[1]
    else:
        raise ParseError(f"nstat: line {n}: expected 'name value rate', got {line.strip()[:80]!r}")
    if not _NAME_RE.match(name):
        raise ParseError(f"nstat: line {n}: {name[:80]!r} is not a counter name")
    if name in values:
        raise ParseError(f"nstat: line {n}: counter {name} appears twice")
    number = _uint(value, f"line {n} {name}")
    try:
        return name, number, None if rate is None else numbers.finite(rate, f"nstat: line {n} rate")
    except ValueError:
        raise ParseError(f"nstat: line {n}: rate {rate[:40]!r} is not a number") from None


def parse(text: str, unrecognised: list[dict[str, Any]] | None = None) -> Counters:
    """Counters of any of the accepted forms; `unrecognised` (`ctl parse --partial`): a line of the
    `nstat` form that is not a counter is set aside there instead of refused."""
    stripped = text.strip()
    if stripped.startswith("{"):
        return _parse_json(stripped)
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1)
             if line.strip() and not line.startswith("#")]   # "#kernel" header of nstat
    if not lines:
        raise ParseError("nstat: no counters in input")
    if _PROC_RE.match(lines[0][1]):
        return _parse_proc(lines)
    return _parse_nstat(lines, unrecognised)


def delta(before: Counters | Mapping[str, int], after: Counters | Mapping[str, int]) -> dict[str, int]:
    """after - before for every counter on either side (absent = 0, as nstat without -z omits zeros)."""
    b = before.values if isinstance(before, Counters) else before
    a = after.values if isinstance(after, Counters) else after
    out: dict[str, int] = {}
    backwards: list[str] = []
    for name in sorted(set(a) | set(b)):
        d = a.get(name, 0) - b.get(name, 0)
        if d < 0:
            backwards.append(f"{name} {b.get(name, 0)} -> {a.get(name, 0)}")
        out[name] = d
    if backwards:
        raise ResultInvalid("counters went backwards (reset between the two readings?): " + "; ".join(backwards))
    return out


# MPTcpExt counter groups. These are views, not a partition: a failed join is both a join and an error.
NEGOTIATION = ("MPCapableSYNTX", "MPCapableSYNACKRX", "MPCapableSYNRX", "MPCapableACKRX")
_ADDRESS_PREFIXES = ("AddAddr", "EchoAdd", "RmAddr", "PortAdd", "RmSubflow", "MismatchPort")
_ERROR_MARKERS = ("Err", "Fail", "Drop", "NotMatching", "NoMatch", "Corruption", "NoTokenFound",
                  "Rejected", "Mismatch", "Rst", "Blackhole", "Disabled")


@dataclass(frozen=True)
class MptcpSummary:
    negotiated: dict[str, int]   # MPCapableSYNTX/SYNACKRX (active side), MPCapableSYNRX/ACKRX (passive side)
    fallbacks: dict[str, int]    # every counter with "Fallback" in its name
    joins: dict[str, int]        # every MPJoin* counter
    addresses: dict[str, int]    # ADD_ADDR / echo / RM_ADDR / RmSubflow / port counters
    errors: dict[str, int]       # anything whose name says it failed, was dropped or rejected
    other: dict[str, int]        # the rest (MPTCPRetrans, OFO*, SndWndShared, MPCurrEstab, ...)

    @property
    def mptcp_negotiated(self) -> bool:
        active = self.negotiated.get("MPCapableSYNTX", 0) > 0 and self.negotiated.get("MPCapableSYNACKRX", 0) > 0
        passive = self.negotiated.get("MPCapableSYNRX", 0) > 0 and self.negotiated.get("MPCapableACKRX", 0) > 0
        return active or passive

    @property
    def fell_back(self) -> bool:
        return any(v > 0 for v in self.fallbacks.values())

    @property
    def joins_completed(self) -> int:
        """Subflows joined: SYN-ACKs received for our joins + final ACKs received for the peer's."""
        return self.joins.get("MPJoinSynAckRx", 0) + self.joins.get("MPJoinAckRx", 0)

    @property
    def nonzero_errors(self) -> dict[str, int]:
        return {k: v for k, v in self.errors.items() if v}


def mptcp_summary(counters: Counters | Mapping[str, int]) -> MptcpSummary:
    """Group MPTcpExt counters (a delta from `delta`, or absolute values). Names may carry the
    "MPTcpExt" prefix (nstat) or not; non-MPTCP counters are ignored."""
    values = counters.values if isinstance(counters, Counters) else counters
    mp: dict[str, int] = {}
    for name, value in values.items():
        if name.startswith(MPTCP_PREFIX):
            mp[name[len(MPTCP_PREFIX):]] = value
    negotiated = {k: mp.get(k, 0) for k in NEGOTIATION}
    fallbacks = {k: v for k, v in mp.items() if "Fallback" in k}
    joins = {k: v for k, v in mp.items() if k.startswith("MPJoin")}
    addresses = {k: v for k, v in mp.items() if k.startswith(_ADDRESS_PREFIXES)}
    errors = {k: v for k, v in mp.items() if any(marker in k for marker in _ERROR_MARKERS)}
    grouped = set(negotiated) | set(fallbacks) | set(joins) | set(addresses) | set(errors)
    other = {k: v for k, v in mp.items() if k not in grouped}
    return MptcpSummary(negotiated=negotiated, fallbacks=fallbacks, joins=joins, addresses=addresses,
                        errors=errors, other=other)


def summary_to_json(summary: MptcpSummary) -> dict[str, Any]:
    out = asdict(summary)
    out["mptcp_negotiated"] = summary.mptcp_negotiated
    out["fell_back"] = summary.fell_back
    out["joins_completed"] = summary.joins_completed
    return out


def to_json(text: str, unrecognised: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    counters = parse(text, unrecognised)
    out: dict[str, Any] = {"source": counters.source, "counters": counters.values}
    if counters.rates:
        out["rates"] = counters.rates
    if any(name.startswith(MPTCP_PREFIX) for name in counters.values):
        out["mptcp_summary"] = summary_to_json(mptcp_summary(counters))
    return out
