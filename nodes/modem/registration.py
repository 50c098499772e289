"""The 3GPP TS 27.007 network-registration family: +CREG (CS), +CGREG (GPRS), +CEREG (EPS) and
+C5GREG (5GS), in every <n> form, solicited and unsolicited. Stdlib only (runs in the field
logger on the modem host).

Read response (solicited, after AT+CxREG?):  +CxREG: <n>,<stat>[,<area>,<ci>[,<AcT>...]]
Unsolicited result code (<n> >= 1):          +CxREG: <stat>[,<area>,<ci>[,<AcT>...]]

What follows <stat> depends on the command (TS 27.007 sections 7.2, 10.1.20, 10.1.22, 10.1.36):
    +CREG   <lac>,<ci>,<AcT>,<cause_type>,<reject_cause>
    +CGREG  <lac>,<ci>,<AcT>,<rac>,<cause_type>,<reject_cause>,<Active-Time>,<Periodic-RAU>,<GPRS-READY-timer>
    +CEREG  <tac>,<ci>,<AcT>,<cause_type>,<reject_cause>,<Active-Time>,<Periodic-TAU>
    +C5GREG <tac>,<ci>,<AcT>,<Allowed_NSSAI_length>,<Allowed_NSSAI>,<cause_type>,<reject_cause>
Area codes and cell ids are hexadecimal strings (LAC/TAC 2 or 3 bytes, a UMTS/LTE ci 28 bits,
an NR ci 36 bits); any field may be empty. Modems quote them or not.

Telling the two forms apart, by the line's own shape (the command sent is not always known,
and a URC may arrive in a reply): a quoted field fixes the positions (the first area code is
field 2 of a read response, field 1 of a URC); without quotes, one field is a URC's <stat>,
two are <n>,<stat>, and otherwise the second field decides: a plain number of one or two
digits that is a valid <stat> (0..11) after a valid <n> (0..5) means a read response, anything
else (an area code such as 1F00 or 0001) a URC. One real deviation is accepted for +CEREG, as
ModemManager does (Novatel E362, u-blox): an extra routing-area field between <tac> and <ci>,
recognised when the field after the TAC has at most two hex digits and the one after it more.
"""
from __future__ import annotations

import re
from typing import Any

from nodes.modem.radio import csv_fields

# <stat> values (TS 27.007 7.2 / 10.1.22): the spec's meaning, and the normalized registration.
STAT = {
    0: ("not registered, not searching", "not-registered"),
    1: ("registered, home network", "home"),
    2: ("not registered, searching", "searching"),
    3: ("registration denied", "denied"),
    4: ("unknown", "unknown"),
    5: ("registered, roaming", "roaming"),
    6: ("registered for SMS only, home network", "home"),
    7: ("registered for SMS only, roaming", "roaming"),
    8: ("attached for emergency bearer services only", "limited"),
    9: ("registered for CSFB not preferred, home network", "home"),
    10: ("registered for CSFB not preferred, roaming", "roaming"),
    11: ("attached for access to RLOS", "limited"),
}
# The fields after <stat>, per command, in order (TS 27.007).
AFTER_STAT = {
    "+CREG": ("lac", "ci", "act", "cause_type", "reject_cause"),
    "+CGREG": ("lac", "ci", "act", "rac", "cause_type", "reject_cause", "active_time", "periodic_rau",
               "gprs_ready_timer"),
    "+CEREG": ("tac", "ci", "act", "cause_type", "reject_cause", "active_time", "periodic_tau"),
    "+C5GREG": ("tac", "ci", "act", "allowed_nssai_length", "allowed_nssai", "cause_type", "reject_cause"),
}
DOMAIN = {"+CREG": "cs", "+CGREG": "gprs", "+CEREG": "eps", "+C5GREG": "5gs"}
_HEX = re.compile(r"[0-9A-Fa-f]{1,16}")      # an area or cell code: 16 hex digits hold 64 bits


_DIGITS = re.compile(r"[0-9]{1,20}")         # ASCII digits only: str.isdigit() is true for "²", int() fails


def _uint(v: Any) -> int | None:
    """A field of ASCII decimal digits as an int (at most 20 digits: 2**64), else None."""
    return int(v) if isinstance(v, str) and _DIGITS.fullmatch(v) else None


def _small_int(v: str, top: int) -> bool:
    n = _uint(v) if len(v) <= 2 else None
    return n is not None and n <= top


def solicited(cells: list[tuple[str, bool]]) -> bool:
    """Whether a line is a read response (<n> first) or a URC, from its shape (see the module doc)."""
    if len(cells) <= 1:
        return False
    first_quoted = next((i for i, (_v, q) in enumerate(cells) if q), None)
    if first_quoted is not None:
        return first_quoted >= 2
    if len(cells) == 2:
        return True
    return _small_int(cells[0][0], 5) and _small_int(cells[1][0], 11)


def parse_line(prefix: str, payload: str) -> dict[str, Any]:
    """One +CxREG line (the text after the prefix's colon) -> its fields, raw strings kept."""
    prefix = prefix.upper()
    names = AFTER_STAT[prefix]
    cells = csv_fields(payload)
    sol = solicited(cells)
    n = _uint(cells[0][0]) if sol else None
    rest = [v for v, _q in (cells[1:] if sol else cells)]
    stat_text = rest[0] if rest else ""
    after = rest[1:]
    out: dict[str, Any] = {"command": prefix, "domain": DOMAIN[prefix], "form": "read" if sol else "unsolicited",
                           "n": n, "stat": _uint(stat_text)}
    if prefix == "+CEREG" and len(after) >= 4 and _HEX.fullmatch(after[1] or "-") and len(after[1]) <= 2 \
            and len(after[2]) > 2:
        out["rac"] = after[1]                       # the extra routing-area field some modems print
        after = [after[0]] + after[2:]
    for name, value in zip(names, after):
        out[name] = value if value != "" else None
    if len(after) > len(names):
        out["extra"] = after[len(names):]
    stat = out["stat"]
    out["stat_text"] = STAT[stat][0] if stat in STAT else None
    out["registration"] = STAT[stat][1] if stat in STAT else None
    for key in ("lac", "tac", "ci", "rac"):
        v = out.get(key)
        out[f"{key}_int"] = int(v, 16) if isinstance(v, str) and _HEX.fullmatch(v) else None
    out["act"] = _uint(out.get("act"))
    return out
