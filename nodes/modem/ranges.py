"""The values each radio quantity can take, and the one check every parsed number goes through (pure).

A modem's output is untrusted input (issue 23): a broken firmware, a tool bug or a hostile host can print
RSRP +300 dBm, a PCI of 70000 or a band "B4000000". Such a value is not a measurement: it becomes
"unknown" (None) AND is flagged -- the sample names the field in `out_of_range` and the field logger
counts it -- never clamped to the nearest valid value (a clamp would invent a measurement).

`within(value, lo, hi)` is the check; `checked(values, technology)` applies RANGES (by the sample's
technology where the quantity's range depends on it) to every field of a RadioSample, which calls it on
construction: whatever parser built the sample (AT dialects, mmcli, qmicli, WiMAX), its numbers are
within the ranges below or None.

Where the ranges come from (3GPP specifications as of Release 17; a reporting table's open-ended first and
last bins, "RSRP < -156 dBm", are its ends: a modem prints that bin as its bound):

* RSRP: TS 38.133 Table 10.1.6.1-1 (SS-RSRP, -156 .. -31 dBm), which contains TS 36.133 Table 9.1.4-1
  (E-UTRA RSRP with the Rel-13 extension, -156 .. -44 dBm).
* RSRQ: TS 38.133 Table 10.1.11.1-1 (SS-RSRQ, -43 .. 20 dB), containing TS 36.133 Tables 9.1.7-1/-2
  (-34 .. 2.5 dB with the extended range).
* SINR: TS 38.133 Table 10.1.16.1-1 (SS-SINR, -23 .. 40 dB) = TS 36.133 Table 9.1.17-1 (RS-SINR,
  -23 .. 40 dB). A tool's "SNR" of an LTE/NR carrier (mmcli "s/n", qmicli "SNR") is held to the same range.
* RSCP: TS 25.133 CPICH RSCP reporting range (-120 .. -25 dBm); Ec/Io: TS 25.133 CPICH Ec/No (-24 .. 0 dB),
  widened to CDMA2000's pilot strength, 6 bits of -0.5 dB (3GPP2 C.S0005 PILOT_STRENGTH: 0 .. -31.5 dB).
* RSSI: no single table covers every technology (TS 27.007 +CSQ: "-113 dBm or less" .. "-51 dBm or
  greater"; TS 25.133 UTRA carrier RSSI and TS 38.133 NR-U RSSI: -100 .. -25 dBm). Upper end: -25 dBm, the
  top of those tables and the maximum input level a UE is specified for (TS 36.101 / 38.101-1 clause 7.4).
  Lower end: RSSI includes the receiver's own thermal noise, kTB = -121.4 dBm over the narrowest carrier
  (NB-IoT, 180 kHz); -125 dBm leaves the few dB a receiver's calibration may be off.
* UE transmit power: TS 36.101 / 38.101-1 clause 6.3 minimum output power (-40 dBm) .. TS 36.101 Table
  6.2.2-1 power class 1 (31 dBm, the highest class).
* PCI: TS 36.211 clause 6.11 (504 E-UTRA physical-layer cell identities, 0 .. 503); TS 38.211 clause
  7.4.2.1 (1008 NR ones, 0 .. 1007); any other technology: 0 .. 1007 (UMTS primary scrambling code
  0 .. 511, TS 25.213, is inside).
* Cell identity: E-UTRA 28 bits (TS 36.331 CellIdentity), NR 36 bits (TS 38.331 CellIdentity), UMTS 28
  bits (TS 25.331 cell identity: RNC-id + C-id), GSM 16 bits (TS 24.008 clause 10.5.1.1), WiMAX base station
  id 48 bits (IEEE 802.16 BSID); eNB id 20 bits and local cell id 8 bits (TS 36.413 clause 9.2.1.38).
* Tracking area code: 16 bits in EPS (TS 24.301 clause 9.9.3.32), 24 bits in 5GS (TS 24.501 clause
  9.11.3.8); location area code 16 bits (TS 24.008 clause 10.5.1.3).
* Channel numbers: EARFCN 0 .. 262143 (TS 36.331 ARFCN-ValueEUTRA-r9), NR-ARFCN 0 .. 3279165 (TS 38.331
  ARFCN-ValueNR), UARFCN 0 .. 16383 (TS 25.331), GSM ARFCN 0 .. 1023 (TS 44.018, 10 bits).
* Band numbers: E-UTRA "B1" .. "B256" (TS 36.331 FreqBandIndicator-r11, 1..256), NR "n1" .. "n1024" (TS 38.331
  FreqBandIndicatorNR, 1..1024).
* Channel bandwidth: 0.18 MHz (an NB-IoT carrier, TS 36.101 clause 5.6) .. 2000 MHz (TS 38.101-2, FR2-2).
* Centre frequency (WiMAX): 410 MHz (E-UTRA band 87, TS 36.101 Table 5.5-1, the lowest cellular band) ..
  71 GHz (NR band n263, TS 38.101-2 Table 5.2-1).
* ModemManager's signal quality: a percentage, 0 .. 100 (ModemManager D-Bus API, SignalQuality).
* WiMAX CINR: ctl has no IEEE 802.16 reporting table to cite; the bounds are SINR's (-23 .. 40 dB) widened
  to -30 .. 60 dB, a span no radio link measures beyond (documented, not a standard's number).

Stdlib only: this module also runs on the modem host under a bare /usr/bin/python3.
"""
from __future__ import annotations

import math
import re
from typing import Any, Mapping, NamedTuple


class Range(NamedTuple):
    lo: float
    hi: float
    integral: bool          # an integer quantity (an identifier, a channel number, a percentage)


def within(value: Any, lo: float, hi: float, integral: bool = False) -> Any:
    """`value` when it is a number within [lo, hi], else None -- the one check of "a value the quantity can
    take". With `integral`, the value must be a whole number (an int, or a float such as 42.0, returned as
    int). A bool is no number here; NaN and infinities are outside every range."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if not lo <= value <= hi:
        return None
    if integral:
        if isinstance(value, float):
            return int(value) if value.is_integer() else None
        return value
    return float(value)


_LTE = ("lte", "lte-m", "nr5g-nsa")     # nr5g-nsa: the top-level fields are the LTE anchor's
_NR = ("nr5g", "nr5g-sa")

# field -> Range for every technology, or {technology group: Range} with "" for the rest
RANGES: dict[str, Range | dict[str, Range]] = {
    "rssi_dbm": Range(-125.0, -25.0, False),
    "rsrp_dbm": Range(-156.0, -31.0, False),
    "rsrq_db": Range(-43.0, 20.0, False),
    "sinr_db": Range(-23.0, 40.0, False),
    "snr_db": Range(-23.0, 40.0, False),
    "cinr_db": Range(-30.0, 60.0, False),
    "rscp_dbm": Range(-120.0, -25.0, False),
    "ecio_db": Range(-31.5, 0.0, False),
    "tx_power_dbm": Range(-40.0, 31.0, False),
    "signal_quality_pct": Range(0, 100, True),
    "cell_id_int": {"lte": Range(0, 2 ** 28 - 1, True), "nr": Range(0, 2 ** 36 - 1, True),
                    "umts": Range(0, 2 ** 28 - 1, True), "gsm": Range(0, 2 ** 16 - 1, True),
                    "": Range(0, 2 ** 48 - 1, True)},
    "enb_id": Range(0, 2 ** 20 - 1, True),
    "local_cell_id": Range(0, 255, True),
    "pci": {"lte": Range(0, 503, True), "": Range(0, 1007, True)},
    "tac": {"lte": Range(0, 2 ** 16 - 1, True), "": Range(0, 2 ** 24 - 1, True)},
    "lac": Range(0, 2 ** 16 - 1, True),
    "arfcn": {"lte": Range(0, 262143, True), "nr": Range(0, 3279165, True), "umts": Range(0, 16383, True),
              "gsm": Range(0, 1023, True), "": Range(0, 3279165, True)},
    "frequency_khz": Range(410_000, 71_000_000, True),
    "bandwidth_mhz": Range(0.18, 2000.0, False),
    "ul_bandwidth_mhz": Range(0.18, 2000.0, False),
}
# where each range comes from (the module doc says more): shown in `ctl parse`'s schema and reference
SOURCES = {
    "rssi_dbm": "RSSI: TS 25.133 / 38.133 RSSI tables' top, thermal noise over 180 kHz at the bottom",
    "rsrp_dbm": "RSRP: TS 38.133 Table 10.1.6.1-1 (contains TS 36.133 Table 9.1.4-1)",
    "rsrq_db": "RSRQ: TS 38.133 Table 10.1.11.1-1 (contains TS 36.133 Tables 9.1.7-1/-2)",
    "sinr_db": "SINR: TS 38.133 Table 10.1.16.1-1 = TS 36.133 Table 9.1.17-1",
    "snr_db": "a tool's SNR of an LTE/NR carrier: SINR's range",
    "cinr_db": "WiMAX CINR: SINR's range widened (no standard table)",
    "rscp_dbm": "CPICH RSCP: TS 25.133",
    "ecio_db": "Ec/Io: TS 25.133 CPICH Ec/No, CDMA2000 pilot strength (3GPP2 C.S0005)",
    "tx_power_dbm": "UE output power: TS 36.101 / 38.101-1 clause 6.3 minimum, power class 1",
    "signal_quality_pct": "ModemManager's signal quality, percent",
    "cell_id_int": "cell identity bits: TS 36.331 (28), TS 38.331 (36), TS 25.331 (28), TS 24.008 (16), "
                   "IEEE 802.16 BSID (48)",
    "enb_id": "eNB id, 20 bits: TS 36.413",
    "local_cell_id": "cell within the eNB, 8 bits: TS 36.413",
    "pci": "TS 36.211 clause 6.11 (504), TS 38.211 clause 7.4.2.1 (1008)",
    "tac": "TS 24.301 (16 bits), TS 24.501 (24 bits)",
    "lac": "TS 24.008 clause 10.5.1.3 (16 bits)",
    "arfcn": "TS 36.331 EARFCN, TS 38.331 NR-ARFCN, TS 25.331 UARFCN, TS 44.018 ARFCN",
    "frequency_khz": "410 MHz (E-UTRA band 87) .. 71 GHz (NR band n263)",
    "bandwidth_mhz": "NB-IoT carrier (TS 36.101) .. FR2-2 channel (TS 38.101-2)",
    "ul_bandwidth_mhz": "NB-IoT carrier (TS 36.101) .. FR2-2 channel (TS 38.101-2)",
}

# the printed band: "B<n>" (E-UTRA) or "n<n>" (NR) with n in these ranges; another spelling is kept as printed
BANDS = {"B": Range(1, 256, True), "n": Range(1, 1024, True)}
_BAND = re.compile(r"([Bn])(\d{1,12})")


def group(technology: str | None) -> str:
    if technology in _LTE:
        return "lte"
    if technology in _NR:
        return "nr"
    return technology if technology in ("umts", "gsm") else ""


def range_of(name: str, technology: str | None) -> Range | None:
    """The range of field `name` of a sample of `technology` (None: not a bounded number)."""
    r = RANGES.get(name)
    if isinstance(r, dict):
        return r.get(group(technology)) or r[""]
    return r


def band_ok(band: Any) -> bool:
    """A printed band in its range; a spelling other than B<n>/n<n> ("3" for WCDMA) is not judged."""
    if not isinstance(band, str):
        return band is None
    m = _BAND.fullmatch(band)
    if m is None:
        return not re.fullmatch(r"[Bn]\d+", band)       # B/n with more digits than any band has: refused
    r = BANDS[m.group(1)]
    return within(int(m.group(2)), r.lo, r.hi, True) is not None


def checked(values: Mapping[str, Any], technology: str | None) -> tuple[dict[str, Any], list[str]]:
    """(the fields to change, the fields refused) for a sample's `values`: a number within its range is
    kept (as int for an integral quantity, float otherwise), one outside it becomes None and is named
    among the refused. Linear in the number of fields."""
    changes: dict[str, Any] = {}
    refused: list[str] = []
    for name in RANGES:
        v = values.get(name)
        if v is None:
            continue
        r = range_of(name, technology)
        assert r is not None
        ok = within(v, r.lo, r.hi, r.integral)
        if ok is None:
            changes[name] = None
            refused.append(name)
        elif type(ok) is not type(v) or ok != v:
            changes[name] = ok
    if not band_ok(values.get("band")):
        changes["band"] = None
        refused.append("band")
    return changes, refused


__all__ = ["Range", "RANGES", "SOURCES", "BANDS", "within", "range_of", "band_ok", "checked", "group"]
