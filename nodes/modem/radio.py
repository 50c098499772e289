"""The normalized radio sample every modem parser produces, and the small decoders they share.

Design rules (they matter for the field-test timelines):
* A value the tool did not give, or gave as its "no value" sentinel (+CSQ 99, +CESQ 255, mmcli "--",
  Quectel "-" / -32768, qmicli "n/a", ...), is None -- never 0. A measured 0 dB SINR stays 0.0.
* Units are in the field names; values are already converted from the tool's encoding (index, 1/10 dB, ...).
* Identifiers are kept as printed (`cell_id`) AND decoded (`cell_id_int`, `enb_id`, ...), because tools print
  the same cell in hex (Quectel, mmcli location) or decimal (qmicli); comparisons use the decoded int.

Stdlib only: this module also runs on the modem host under a bare /usr/bin/python3.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, fields
from typing import Any, Iterable

from nodes.modem.ranges import RANGES, checked

try:  # the controller's error type when available; a stand-in on the bare modem host
    from controller.errors import ParseError
except ImportError:  # pragma: no cover - exercised only without the controller package
    class ParseError(ValueError):  # type: ignore[no-redef]
        """Tool output could not be parsed."""


# Technology names used in RadioSample.technology (the connection as a whole).
# "nr5g-nsa" = LTE anchor carries the primary fields + an NR leg in `secondary` (technology "nr5g").
TECHNOLOGIES = ("gsm", "umts", "lte", "lte-m", "nr5g-nsa", "nr5g-sa", "nr5g", "cdma", "evdo", "wimax")

# Registration vocabulary shared by all parsers (each tool's own words are mapped onto these).
REGISTRATION = ("home", "roaming", "registered", "searching", "denied", "not-registered", "limited", "unknown")


@dataclass(frozen=True)
class RadioSample:
    """One normalized reading of a modem's radio state.

    For EN-DC (technology "nr5g-nsa") the top-level measurement and identity fields describe the LTE anchor
    and `secondary` holds the NR leg (technology "nr5g"); NSA has no NR cell identity beyond its PCI.
    """

    technology: str | None = None
    # signal (dBm / dB)
    rssi_dbm: float | None = None
    rsrp_dbm: float | None = None
    rsrq_db: float | None = None
    sinr_db: float | None = None
    cinr_db: float | None = None          # WiMAX / WiBro
    snr_db: float | None = None           # tools that call it SNR (mmcli "s/n", qmicli "SNR"); not relabelled
    rscp_dbm: float | None = None         # UMTS
    ecio_db: float | None = None          # UMTS / CDMA
    tx_power_dbm: float | None = None
    signal_quality_pct: int | None = None  # ModemManager's 0-100 summary
    # identity
    cell_id: str | None = None            # as printed: LTE ECI / NR NCI (hex or decimal), WiMAX BSID
    cell_id_int: int | None = None        # decoded value of cell_id (for comparisons across tools)
    enb_id: int | None = None             # LTE: ECI >> 8
    local_cell_id: int | None = None      # LTE: ECI & 0xFF
    pci: int | None = None
    tac: int | None = None
    lac: int | None = None
    # channel
    band: str | None = None               # "B7" (E-UTRA), "n78" (NR), "B25" ...
    arfcn: int | None = None              # EARFCN (LTE), NR-ARFCN (NR), UARFCN (UMTS)
    frequency_khz: int | None = None      # WiMAX centre frequency
    bandwidth_mhz: float | None = None    # downlink
    ul_bandwidth_mhz: float | None = None
    # network
    operator_name: str | None = None
    mcc: str | None = None                # strings: the MNC's leading zero is significant ("01")
    mnc: str | None = None
    registration: str | None = None       # see REGISTRATION
    connection: str | None = None         # "idle" | "connected" (RRC state where the tool says it)
    secondary: tuple["RadioSample", ...] = ()
    source: str | None = None             # which parser(s) produced it, e.g. "at:+QENG"
    # fields the tool gave a value for that the quantity cannot take (nodes/modem/ranges.py): now None
    out_of_range: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # The boundary every parser's sample crosses: each number within its quantity's range, or None and
        # named in out_of_range (never clamped).
        changes, refused = checked({f: getattr(self, f) for f in RANGES} | {"band": self.band}, self.technology)
        for name, value in changes.items():
            object.__setattr__(self, name, value)
        if refused or not isinstance(self.out_of_range, tuple):
            object.__setattr__(self, "out_of_range", tuple(dict.fromkeys(
                [str(n) for n in self.out_of_range if n in RANGES or n == "band"] + refused)))

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["secondary"] = [s.to_json() for s in self.secondary]
        out["out_of_range"] = list(self.out_of_range)
        return out

    def refused(self) -> int:
        """How many values of this sample (its legs included) were out of their range."""
        return len(self.out_of_range) + sum(s.refused() for s in self.secondary)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "RadioSample":
        known = {f.name for f in fields(cls)}
        kw = {k: v for k, v in data.items() if k in known and k != "secondary"}
        kw["secondary"] = tuple(cls.from_json(s) for s in data.get("secondary") or ())
        kw["out_of_range"] = tuple(n for n in data.get("out_of_range") or () if isinstance(n, str))
        return cls(**kw)

    def cell_key(self) -> int | str | None:
        """What identifies the serving cell / base station for handover comparison."""
        if self.cell_id_int is not None:
            return self.cell_id_int
        return self.cell_id

    def is_empty(self) -> bool:
        """True when no field carries a value (e.g. "+HCSQ: NOSERVICE")."""
        return all(getattr(self, f.name) in (None, ()) for f in fields(self) if f.name not in ("source", "out_of_range"))

    def leg(self, technology: str) -> "RadioSample | None":
        for s in self.secondary:
            if s.technology == technology:
                return s
        return None


def merge_samples(samples: Iterable["RadioSample | None"]) -> "RadioSample | None":
    """Combine partial samples of one poll round; earlier samples win field by field.

    Pollers run several commands (e.g. signal, serving system, cell location) and each fills some fields;
    callers order them by trust. None entries (command failed / not answered) are skipped; if nothing is
    left the result is None, which is how a silent modem shows on the timeline (a gap, not zeros).
    """
    present = [s for s in samples if s is not None]
    if not present:
        return None
    kw: dict[str, Any] = {}
    for f in fields(RadioSample):
        if f.name in ("secondary", "source", "out_of_range"):
            continue
        for s in present:
            v = getattr(s, f.name)
            if v is not None:
                kw[f.name] = v
                break
    # Secondary legs: merged per leg technology, same precedence.
    legs: dict[str, list[RadioSample]] = {}
    for s in present:
        for leg in s.secondary:
            legs.setdefault(leg.technology or "", []).append(leg)
    kw["secondary"] = tuple(m for m in (merge_samples(v) for v in legs.values()) if m is not None)
    sources = [s.source for s in present if s.source]
    kw["source"] = "+".join(dict.fromkeys(sources)) or None
    kw["out_of_range"] = tuple(dict.fromkeys(n for s in present for n in s.out_of_range))
    return RadioSample(**kw)


# ---------------------------------------------------------------------------------------------------------
# Shared decoders

_NUM = re.compile(r"^[+-]?(?:\d+(?:[.,]\d*)?|[.,]\d+)")
MAX_ABS = 2 ** 64          # no modem or GPS tool prints a number beyond this; NaN and inf are no level either


def bounded(value: Any, text: Any = None) -> Any:
    """A number read from a tool's output, refused (ParseError) when it is not finite or beyond MAX_ABS:
    a 400-digit field would be inf as a float and crash int()/round() further on."""
    if value is not None and not (-MAX_ABS <= value <= MAX_ABS):     # False for NaN as well
        shown = str(text if text is not None else value)
        raise ParseError("number out of range: %s" % (shown if len(shown) <= 40 else shown[:37] + "..."))
    return value


def number(text: Any, *, missing: Iterable[str] = ()) -> float | None:
    """Leading number of `text` ("-62 dBm" -> -62.0); None for empty text or a listed sentinel.

    A decimal comma is accepted ("-67,00": mmcli under a non-C locale) because the value is still right.
    """
    if text is None:
        return None
    if isinstance(text, (int, float)):
        return float(bounded(text))
    t = str(text).strip().strip("'\"").strip()
    if t == "" or t in set(missing):
        return None
    m = _NUM.match(t)
    if not m:
        return None
    return bounded(float(m.group(0).replace(",", ".")), m.group(0))


def integer(text: Any, *, missing: Iterable[str] = (), base: int = 10) -> int | None:
    if text is None:
        return None
    t = str(text).strip().strip("'\"").strip()
    if t == "" or t in set(missing):
        return None
    if len(t.lstrip("+-").lstrip("0")) > 40:       # 2**64 is 20 decimal digits, 16 hex ones
        return bounded(float("inf"), t)
    try:
        return bounded(int(t, base), t)
    except ValueError:
        return None


def index_level(v: int | None, valid_max: int, unknown: int, scale: float, offset: float) -> float | None:
    """A 3GPP-style reporting index to its level: offset + scale * v for 0 <= v <= valid_max; None for
    the "not known" value or anything outside the range (+CESQ, ^HCSQ and the like)."""
    if v is None or v == unknown or not 0 <= v <= valid_max:
        return None
    return offset + scale * v


def lte_cell(eci: int | None) -> tuple[int | None, int | None]:
    """28-bit E-UTRAN cell identity = 20-bit eNB id << 8 | 8-bit local cell id (TS 36.413)."""
    if eci is None:
        return None, None
    return eci >> 8, eci & 0xFF


def cell_identity(printed: str | None, *, base: int, technology: str | None) -> dict[str, Any]:
    """cell_id/cell_id_int (+ enb_id/local_cell_id for LTE) from a printed id; {} when absent."""
    if printed is None:
        return {}
    value = integer(printed, base=base)
    if value is None:
        return {"cell_id": printed}
    out: dict[str, Any] = {"cell_id": printed, "cell_id_int": value}
    if technology in ("lte", "lte-m", "nr5g-nsa"):
        out["enb_id"], out["local_cell_id"] = lte_cell(value)
    return out


def split_plmn(code: str | None) -> tuple[str | None, str | None]:
    """"23415" -> ("234", "15"); MCC is always 3 digits, the MNC is the rest (2 or 3 digits)."""
    if not code:
        return None, None
    code = code.strip()
    if not code.isdigit() or len(code) not in (5, 6):
        return None, None
    return code[:3], code[3:]


def lte_band(n: int | str | None) -> str | None:
    v = integer(n) if not isinstance(n, int) else n
    return None if v is None else f"B{v}"


def nr_band(n: int | str | None) -> str | None:
    v = integer(n) if not isinstance(n, int) else n
    return None if v is None else f"n{v}"


# LTE <UL/DL_bandwidth> index (Quectel +QENG) and NR <NR_DL_bandwidth> index, in MHz (vendor doc, 02c).
LTE_BW_MHZ = {0: 1.4, 1: 3.0, 2: 5.0, 3: 10.0, 4: 15.0, 5: 20.0}
NR_BW_MHZ = {0: 5.0, 1: 10.0, 2: 15.0, 3: 20.0, 4: 25.0, 5: 30.0, 6: 40.0, 7: 50.0, 8: 60.0, 9: 70.0,
             10: 80.0, 11: 90.0, 12: 100.0, 13: 200.0, 14: 400.0, 15: 35.0, 16: 45.0}
NR_SCS_KHZ = {0: 15, 1: 30, 2: 60, 3: 120, 4: 240}


__all__ = [
    "RadioSample", "ParseError", "merge_samples", "number", "integer", "index_level", "lte_cell", "cell_identity",
    "split_plmn", "lte_band", "nr_band", "LTE_BW_MHZ", "NR_BW_MHZ", "NR_SCS_KHZ", "TECHNOLOGIES",
    "REGISTRATION",
]


def csv_fields(text: str) -> list[tuple[str, bool]]:
    """Split an AT parameter list on commas outside quotes -> [(value, was_quoted)].

    Quoting matters: +CEREG's solicited and unsolicited forms differ only in whether field 2 is quoted.
    """
    out: list[tuple[str, bool]] = []
    buf: list[str] = []
    quoted = in_q = False
    for ch in text:
        if ch == '"':
            in_q = not in_q
            quoted = True
        elif ch == "," and not in_q:
            out.append(("".join(buf).strip(), quoted))
            buf, quoted = [], False
        else:
            buf.append(ch)
    out.append(("".join(buf).strip(), quoted))
    return out
