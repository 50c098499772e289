"""WiMAX / WiBro link counters: Intel `wimaxcu status link|connect` and madwimax log lines.

CONFIDENCE: SOURCE + RECON ONLY. No captured output of either tool exists in our fixtures (02d): the
formats below are the printf format strings read from the tools' sources (wimax-ns 1.5.2
wimaxcu_util.c; madwimax src/wimax.c), and the only "sample" is RECON, i.e. assembled from those formats
with invented numbers. Verify on a real device before trusting field positions.

wimaxcu prints converted values (RSSI = raw - 123 dBm, CINR = raw - 10 dB, TX power = raw/2 - 84 dBm,
Frequency in KHz); madwimax prints the driver's values as they are ("RSSI: %d   CINR: %f   TX Power: %d
Frequency: %d") -- the unit of its Frequency is not stated in the source, so it is kept raw only.
A not-connected wimaxcu ("Link Status: Network is not connected.") gives a sample with no values, never
zeros. Stdlib only.
"""
from __future__ import annotations

import re
from typing import Any

from nodes.modem.radio import ParseError, RadioSample, integer, merge_samples, number

# Patterns anchored on literals with no two quantifiers over the same characters next to each other
# (linear; no possessive quantifiers: this runs under a host's python3 >= 3.9); the blanks around keys
# and values are stripped in code, not matched lazily.
HEADER_RE = re.compile(r"^\s*(Link Status|Network Info|NSP)\s*:(.*)$")
KEY_RE = re.compile(r"[A-Za-z][A-Za-z ]*")
MADWIMAX_SIGNAL_RE = re.compile(
    r"RSSI:\s*(-?\d+)\s+CINR:\s*(-?[\d.]+)\s+TX Power:\s*(-?\d+)\s+Frequency:\s*(-?\d+)")
MADWIMAX_BSID_RE = re.compile(r"BSID:\s*((?:[0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2})")
MADWIMAX_STATE_RE = re.compile(r"State:\s*(\S+)\s+Number:\s*(\d+)\s+Response:\s*(\d+)")
BSID_RE = re.compile(r"^(?:[0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2}$")


def bsid_identity(bsid: str | None) -> dict[str, Any]:
    """Base-station id as printed ("00:00:02:0A:1B:2C") plus its 48-bit value for comparisons
    (madwimax prints lower case, wimaxcu upper case)."""
    if not bsid or not BSID_RE.match(bsid):
        return {}
    return {"cell_id": bsid, "cell_id_int": int(bsid.replace(":", ""), 16)}


def _key_value(line: str) -> tuple[str, str] | None:
    """An indented "Key Name : value" line -> (key, value), both stripped; None for any other line.
    The key starts with a letter and holds letters and spaces."""
    if not line[:1].isspace():
        return None
    key, sep, value = line.partition(":")
    key = key.strip()
    if not sep or not KEY_RE.fullmatch(key):
        return None
    return key, value.strip()


def _wimaxcu_blocks(text: str) -> list[tuple[str, str, dict[str, str]]]:
    blocks: list[tuple[str, str, dict[str, str]]] = []
    for line in text.splitlines():
        m = HEADER_RE.match(line)
        if m:
            blocks.append((m.group(1), m.group(2).strip(), {}))
            continue
        kv = _key_value(line.expandtabs(8)) if blocks else None
        if kv:
            blocks[-1][2][kv[0]] = kv[1]
    return blocks


def wimaxcu_sample(header: str, inline: str, kv: dict[str, str]) -> RadioSample:
    if header == "Link Status" and "not connected" in inline.lower():
        return RadioSample(technology="wimax", registration="not-registered", source="wimaxcu:link")
    src = "wimaxcu:link" if header == "Link Status" else "wimaxcu:connect"
    freq_text = kv.get("Frequency", "")
    if freq_text[-3:].lower() == "khz":
        freq_text = freq_text[:-3].rstrip()
    freq = integer(freq_text)
    return RadioSample(
        technology="wimax", rssi_dbm=number(kv.get("RSSI")), cinr_db=number(kv.get("CINR")),
        tx_power_dbm=number(kv.get("Avg TX PWR")), frequency_khz=freq,
        registration="registered" if header == "Link Status" else None,
        **bsid_identity(kv.get("BS ID")), source=src,
    )


def madwimax_samples(text: str) -> list[dict[str, Any]]:
    """One entry per "RSSI: ... CINR: ..." line; the BSID/State lines that follow belong to it."""
    out: list[dict[str, Any]] = []
    for n, line in enumerate(text.splitlines(), 1):
        m = MADWIMAX_SIGNAL_RE.search(line)
        if m:
            out.append({"line": n, "rssi": integer(m.group(1)), "cinr": number(m.group(2)),
                        "tx_power": integer(m.group(3)), "frequency": integer(m.group(4)), "bsid": None, "state": None})
            continue
        m = MADWIMAX_BSID_RE.search(line)
        if m and out:
            out[-1]["bsid"] = m.group(1)
            continue
        m = MADWIMAX_STATE_RE.search(line)
        if m and out:
            out[-1]["state"] = m.group(1)
    return out


def _madwimax_sample(f: dict[str, Any]) -> RadioSample:
    return RadioSample(technology="wimax", rssi_dbm=number(f["rssi"]), cinr_db=f["cinr"],
                       tx_power_dbm=number(f["tx_power"]), **bsid_identity(f["bsid"]), source="madwimax:log")


def parse_outputs(text: str) -> list[dict[str, Any]]:
    outputs: list[dict[str, Any]] = []
    for header, inline, kv in _wimaxcu_blocks(text):
        kind = {"Link Status": "wimaxcu-link", "Network Info": "wimaxcu-connect", "NSP": "wimaxcu-scan"}[header]
        sample = None if kind == "wimaxcu-scan" else wimaxcu_sample(header, inline, kv)
        fields_: dict[str, Any] = {"header": inline or None, **kv}
        if kind == "wimaxcu-link":
            fields_["connected"] = "not connected" not in inline.lower()
        outputs.append({"type": kind, "fields": fields_, "sample": sample})
    for f in madwimax_samples(text):
        outputs.append({"type": "madwimax-log", "fields": f, "sample": _madwimax_sample(f)})
    return outputs


def parse_sample(text: str) -> RadioSample | None:
    """Latest reading: for a madwimax log the last line group, for wimaxcu link+connect their merge."""
    outs = parse_outputs(text)
    mad = [o for o in outs if o["type"] == "madwimax-log"]
    if mad:
        return mad[-1]["sample"]
    return merge_samples([o["sample"] for t in ("wimaxcu-link", "wimaxcu-connect") for o in outs if o["type"] == t])


def to_json(text: str) -> dict[str, Any]:
    outs = parse_outputs(text)
    if not outs:
        raise ParseError("wimax: no `wimaxcu status link|connect` block and no madwimax RSSI/CINR line found")
    sample = parse_sample(text)
    return {"tool": "wimax", "confidence": "SOURCE/RECON formats only (no recorded real output)",
            "outputs": [{**o, "sample": None if o["sample"] is None else o["sample"].to_json()} for o in outs],
            "sample": None if sample is None else sample.to_json()}
