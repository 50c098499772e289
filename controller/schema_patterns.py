"""JSON-Schema patterns of ctl's value syntaxes (rates, delays, durations, sizes, loss, queues,
addresses, time windows), for the schemas of the inventory and campaign formats, so an editor
refuses as you type what ctl's parsers refuse.

Each pattern is the grammar of its parser in controller.units (or of the address and window
validators) written as one regular expression that both ECMA-262 (editors) and Python's `re`
(the tests, `jsonschema`) read alike: no look-behind, no named groups. A pattern never refuses
what the parser accepts (tests/unit/controller/test_schemas.py checks that on the parsers' own
examples and on generated values); it may accept what only a range check refuses (a rate of 0,
a loss above a scenario's maximum): ctl says so when it loads the file. Pure constants.
"""
from __future__ import annotations

from typing import Any

_NUM = r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
_EXP = r"(?:[eE][+-]?[0-9]+)"
_WS = r"\s*"

# controller.units._RATE_BITS and _RATE_BYTES, after an optional k/M/G/T prefix
_RATE_UNITS = r"(?:bit/s|bits/s|bit/sec|bits/sec|bits|bit|bps|b/s|b|Byte/s|Bytes/s|byte/s|bytes/s|B/s|Bps|B)"
RATE = rf"^{_WS}{_NUM}{_EXP}?{_WS}[kKmMgGtT]?{_RATE_UNITS}?{_WS}$"

# controller.units._DURATION_UNITS
_TIME_UNITS = (r"(?:ns|us|\u00b5s|usec|ms|msec|seconds|second|secs|sec|s|minutes|minute|mins|min|m|hours|hour|hr|h)")
DURATION = rf"^{_WS}{_NUM}{_EXP}?{_WS}{_TIME_UNITS}?{_WS}$"           # a bare number is seconds
DELAY = rf"^(?:{_WS}{_NUM}{_EXP}?{_WS}{_TIME_UNITS}{_WS}|{_WS}0(?:\.0)?{_WS})$"   # a unit, or 0

# controller.units.parse_probability: a percentage, a fraction in scientific notation, or zero
_ZERO = r"(?:0+(?:\.0*)?|\.0+)"
PROBABILITY = rf"^{_WS}(?:{_NUM}{_EXP}?{_WS}%|{_NUM}{_EXP}|{_ZERO}){_WS}$"

# controller.units._SIZE_UNITS
_SIZE_UNITS = (r"(?:bytes|byte|b|B|KBytes|Kbytes|KiB|KB|kB|K|k|MBytes|Mbytes|MiB|MB|M|GiB|GB|G)")
SIZE = rf"^{_WS}{_NUM}{_EXP}?{_WS}{_SIZE_UNITS}?{_WS}$"
_SLOTS = r"[0-9]+\s*(?:slots?|sl\.?|pkts?|packets?)?"
QUEUE = rf"^(?:{_WS}{_SLOTS}{_WS}|{_WS}{_NUM}{_EXP}?{_WS}{_SIZE_UNITS}?{_WS})$"
INT = r"^\s*-?[0-9]{1,18}\s*$"

# Addresses (Python's ipaddress refuses leading zeros in IPv4, as these do)
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
IPV4_BODY = rf"{_OCTET}(?:\.{_OCTET}){{3}}"
_IPV6_BODY = r"[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){1,7}(?::" + IPV4_BODY + r")?"   # the shape; ctl checks it all
IPV4 = rf"^{IPV4_BODY}$"
IP = rf"^(?:{IPV4_BODY}|{_IPV6_BODY})$"
# a management address: an IP address or a host name (never all digits and dots: that is a broken IPv4)
MGMT = rf"^(?:{IPV4_BODY}|{_IPV6_BODY}|(?![0-9.]+$)[A-Za-z0-9][A-Za-z0-9.-]*)$"
CIDR = rf"^(?:{IPV4_BODY}/(?:3[0-2]|[12]?[0-9])|{_IPV6_BODY}/(?:12[0-8]|1[01][0-9]|[1-9]?[0-9]))$"

# controller.campaign.timing.parse_window: HH:MM-HH:MM, local time
_HHMM = r"\s*(?:[01]?[0-9]|2[0-3]):[0-5][0-9]\s*"
WINDOW = rf"^{_HHMM}-{_HHMM}$"


def string_or_number(pattern: str, number: dict[str, Any] | None, description: str | None = None) -> dict:
    """A value written as text of `pattern`, or (when `number` is given) as a YAML number."""
    alts: list[dict[str, Any]] = [{"type": "string", "pattern": pattern}]
    if number is not None:
        alts.append({"type": "number", **number})
    out: dict[str, Any] = {"anyOf": alts} if len(alts) > 1 else dict(alts[0])
    if description:
        out["description"] = description
    return out


def nullable(schema: dict) -> dict:
    """`schema`, or null (a field left empty)."""
    desc = schema.get("description")
    inner = {k: v for k, v in schema.items() if k != "description"}
    alts = inner["anyOf"] if list(inner) == ["anyOf"] else [inner]
    out: dict[str, Any] = {"anyOf": [*alts, {"type": "null"}]}
    if desc:
        out["description"] = desc
    return out


def int_up_to(n: int) -> str:
    """A regular expression (no anchors) of the whole numbers 0..n, leading zeros allowed."""
    if n < 0:
        raise ValueError(n)
    return "0*(?:" + "|".join(_range_alternatives(0, n)) + ")"


def int_between(lo: int, hi: int) -> str:
    """A regular expression (anchored, blanks around allowed as units.parse_int allows them) of the
    whole numbers lo..hi written in digits, leading zeros allowed; lo at least 1 (no sign)."""
    if not 1 <= lo <= hi:
        raise ValueError((lo, hi))
    return r"^\s*0*(?:" + "|".join(_range_alternatives(lo, hi)) + r")\s*$"


def _range_alternatives(lo: int, hi: int) -> list[str]:
    """Alternatives matching exactly the decimal numbers lo..hi (no leading zeros)."""
    out: list[str] = []
    while lo <= hi:
        # the largest block [lo, lo + 10^k - 1] aligned on 10^k that fits under hi
        k = 0
        while lo % 10 ** (k + 1) == 0 and lo + 10 ** (k + 1) - 1 <= hi:
            k += 1
        top = lo + 10 ** k - 1
        s_lo = str(lo)
        if lo == 0 and k > 0:
            # 0..10^k-1: one to k digits
            out.append(f"[0-9]{{1,{k}}}" if k > 1 else "[0-9]")
        else:
            fixed = s_lo[:len(s_lo) - k]
            out.append(fixed + ("[0-9]" * k if k <= 2 else f"[0-9]{{{k}}}"))
        lo = top + 1
    return out


def decimal_up_to(n: int) -> str:
    """A regular expression (no anchors) of decimal numbers from 0 to n (n a whole number), with
    an optional fraction: n itself only with a zero fraction."""
    below = int_up_to(n - 1) if n > 0 else None
    at = f"0*{n}(?:\\.0*)?"
    return f"(?:{below}(?:\\.[0-9]*)?|\\.[0-9]+|{at})" if below is not None else f"(?:{at}|\\.0+)"


def value_schema(pattern: str, number: dict[str, Any] | None, *, nullable: bool = False):
    """A pydantic `json_schema_extra` for a value ctl parses from text or a YAML number: the
    field's schema becomes text of `pattern`, or (with `number`) a number within those bounds,
    or (with `nullable`) null; its description, default and title are kept."""
    def extra(schema: dict[str, Any]) -> None:
        kept = {k: schema[k] for k in ("description", "default", "title") if k in schema}
        alts: list[dict[str, Any]] = [{"type": "string", "pattern": pattern}]
        if number is not None:
            alts.append({"type": "number", **number} if "type" not in number else dict(number))
        if nullable:
            alts.append({"type": "null"})
        schema.clear()
        schema.update(kept)
        schema["anyOf"] = alts
    return extra
