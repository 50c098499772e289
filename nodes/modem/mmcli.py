"""ModemManager `mmcli` output: `-m N` (modem), `--signal-get`, `--location-get`, `-b N` (bearer), in the
human layout or `-J` JSON; plus the `--signal-setup=N` acknowledgement and `error: ...` lines.

`to_json(text)` auto-detects the format and the command. Both formats are first turned into the same
nested structure (JSON keys), so one normalizer serves both; the human labels are mapped through the
table `HUMAN_KEYS` (labels and keys from ModemManager's cli/mmcli-output.c, see 02a).

Quirks handled here (details in firmware-notes/modems.md):
* every JSON scalar is a string and "no value" is "--"; in human mode missing fields are simply omitted;
* numbers are printed with "%.2lf" under the caller's locale: "-67,00" under cs_CZ -- parsed, flagged,
  and the poll commands run mmcli with LC_ALL=C so it does not happen;
* signal values stay "--" until `--signal-setup=N` (N > 0) has been run once: refresh rate "0" is reported
  as `signal_setup_needed`;
* location: lac/tac/cid are HEX ("%04lX", "%08lX") while mcc/mnc are "%u" (MNC "01" prints as "1"), and the
  human label of the MNC is "operator name".
Stdlib only.
"""
from __future__ import annotations

import json
import re
from typing import Any

from nodes.modem.radio import (
    ParseError, RadioSample, cell_identity, integer, merge_samples, number, split_plmn,
)

MISSING = ("--", "")

# (human section, human label) -> dotted JSON key under "modem" (or "bearer").
HUMAN_KEYS: dict[tuple[str, str], str] = {
    ("General", "path"): "dbus-path",
    ("General", "device id"): "generic.device-identifier",
    ("Hardware", "manufacturer"): "generic.manufacturer",
    ("Hardware", "model"): "generic.model",
    ("Hardware", "firmware revision"): "generic.revision",
    ("Hardware", "revision"): "generic.revision",          # mmcli <= 1.6
    ("Hardware", "equipment id"): "generic.equipment-identifier",
    ("System", "device"): "generic.device",
    ("System", "drivers"): "generic.drivers",
    ("System", "plugin"): "generic.plugin",
    ("System", "primary port"): "generic.primary-port",
    ("System", "ports"): "generic.ports",
    ("Status", "state"): "generic.state",
    ("Status", "failed reason"): "generic.state-failed-reason",
    ("Status", "power state"): "generic.power-state",
    ("Status", "access tech"): "generic.access-technologies",
    ("Status", "signal quality"): "generic.signal-quality.value",
    ("3GPP", "imei"): "3gpp.imei",
    ("3GPP", "operator id"): "3gpp.operator-code",
    ("3GPP", "operator name"): "3gpp.operator-name",
    ("3GPP", "registration"): "3gpp.registration-state",
    ("3GPP", "packet service state"): "3gpp.packet-service-state",
    ("Signal", "refresh rate"): "signal.refresh.rate",
    ("Signal", "rssi threshold"): "signal.threshold.rssi",
    ("Signal", "error rate threshold"): "signal.threshold.error-rate",
}
# Signal sections: human section name -> JSON sub-key; labels -> keys.
SIGNAL_SECTIONS = {"CDMA1x": "cdma1x", "EV-DO": "evdo", "GSM": "gsm", "UMTS": "umts", "LTE": "lte", "5G": "5g"}
SIGNAL_LABELS = {"rssi": "rssi", "rsrq": "rsrq", "rsrp": "rsrp", "s/n": "snr", "error rate": "error-rate",
                 "ecio": "ecio", "sinr": "sinr", "io": "io", "rscp": "rscp"}
# Location "3GPP" section: the MCC is labelled "operator code" and the MNC "operator name" (sic) up to some
# release; ModemManager 1.20.4 prints "operator mcc" / "operator mnc" (tests/fixtures/generated/modemmanager).
LOCATION_LABELS = {"operator code": "mcc", "operator name": "mnc", "operator mcc": "mcc", "operator mnc": "mnc",
                   "location area code": "lac", "tracking area code": "tac", "cell id": "cid"}
GPS_LABELS = {"utc": "utc", "longitude": "longitude", "latitude": "latitude", "altitude": "altitude",
              "nmea": "nmea"}
# mmcli <= 1.6 (cli/mmcli-modem-location.c) named its location sections differently and printed LAC and
# cell id in DECIMAL ('%lu'), not hex: section -> (nested prefix, lower-cased label -> key). The NMEA
# section has no label: its lines are the section's own (unlabelled) value.
OLD_LOCATION_SECTIONS: dict[str, tuple[str, dict[str, str]]] = {
    "3GPP location": ("location.3gpp", {"mobile country code": "mcc", "mobile network code": "mnc",
                                        "location area code": "lac", "tracking area code": "tac",
                                        "cell id": "cid"}),
    "Raw GPS": ("location.gps", {"utc time": "utc", "longitude": "longitude", "latitude": "latitude",
                                 "altitude": "altitude"}),
    "GPS NMEA traces": ("location.gps", {"": "nmea"}),
}
LIST_KEYS = {"generic.access-technologies", "generic.ports", "generic.drivers"}

# ModemManager registration states -> shared vocabulary (radio.REGISTRATION)
REGISTRATION = {"idle": "not-registered", "home": "home", "searching": "searching", "denied": "denied",
                "unknown": "unknown", "roaming": "roaming", "home-sms-only": "home",
                "roaming-sms-only": "roaming", "emergency-only": "limited", "home-csfb-not-preferred": "home",
                "roaming-csfb-not-preferred": "roaming", "attached-rlos": "limited"}
UMTS_TECH = {"umts", "hsdpa", "hsupa", "hspa", "hspa-plus"}
GSM_TECH = {"gsm", "gsm-compact", "gprs", "edge", "pots"}


def technology_from_access(access: list[str]) -> str | None:
    """ModemManager access technologies -> RadioSample.technology ("lte, 5gnr" is EN-DC)."""
    a = {x.strip().lower() for x in access if x and x.strip() not in MISSING}
    if "5gnr" in a and a & {"lte", "lte-cat-m", "lte-nb-iot"}:
        return "nr5g-nsa"
    if "5gnr" in a:
        return "nr5g-sa"
    if "lte" in a or "lte-nb-iot" in a:
        return "lte"
    if "lte-cat-m" in a:
        return "lte-m"
    if a & UMTS_TECH:
        return "umts"
    if a & GSM_TECH:
        return "gsm"
    if a & {"evdo0", "evdoa", "evdob"}:
        return "evdo"
    if "1xrtt" in a:
        return "cdma"
    return None


def _get(d: dict, dotted: str) -> Any:
    cur: Any = d
    for part in dotted.split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur


def _put(d: dict, dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    for p in parts[:-1]:
        d = d.setdefault(p, {})
    d[parts[-1]] = value


def _val(v: Any) -> str | None:
    if v is None:
        return None
    s = str(v).strip()
    return None if s in MISSING else s


def _num(v: Any) -> float | None:
    return number(v, missing=MISSING)


def _as_list(v: Any) -> list[str]:
    if v is None:
        return []
    if isinstance(v, list):
        out: list[str] = []
        for x in v:   # "current-capabilities": ["gsm-umts, lte"] -- one comma-joined string in a list
            out.extend(p.strip() for p in str(x).split(","))
        return [x for x in out if x]
    return [p.strip() for p in str(v).split(",") if p.strip()]


# ---------------------------------------------------------------------------------------------------------
# Normalizers (nested "modem" dict as mmcli -J prints it)

def _leg(d: dict, technology: str) -> RadioSample | None:
    s = RadioSample(technology=technology, rssi_dbm=_num(d.get("rssi")), rsrp_dbm=_num(d.get("rsrp")),
                    rsrq_db=_num(d.get("rsrq")), snr_db=_num(d.get("snr")), sinr_db=_num(d.get("sinr")),
                    rscp_dbm=_num(d.get("rscp")), ecio_db=_num(d.get("ecio")))
    return None if all(getattr(s, k) is None for k in ("rssi_dbm", "rsrp_dbm", "rsrq_db", "snr_db", "sinr_db",
                                                       "rscp_dbm", "ecio_db")) else s


def signal_fields(sig: dict) -> dict[str, Any]:
    out: dict[str, Any] = {}
    comma = False
    for sec, vals in sig.items():
        if not isinstance(vals, dict):
            continue
        out[sec] = {}
        for k, v in vals.items():
            sv = _val(v)
            if sv is not None and re.fullmatch(r"-?\d+,\d+", sv):
                comma = True
            out[sec][k] = sv if k in ("error-rate",) and sec == "threshold" else (
                _num(sv) if sv is not None and re.match(r"^-?\d", sv) else sv)
    rate_n = _num(_get(sig, "refresh.rate"))          # "10" (JSON) or "10 seconds" (human)
    rate = None if rate_n is None else int(rate_n)
    out["refresh_rate_s"] = rate
    out["signal_setup_needed"] = rate == 0
    out["locale_comma"] = comma
    return out


def signal_sample(sig: dict) -> RadioSample | None:
    lte = _leg(sig.get("lte") or {}, "lte")
    nr = _leg(sig.get("5g") or {}, "nr5g")
    umts = _leg(sig.get("umts") or {}, "umts")
    gsm = _leg(sig.get("gsm") or {}, "gsm")
    evdo = _leg(sig.get("evdo") or {}, "evdo")
    cdma = _leg(sig.get("cdma1x") or {}, "cdma")
    if lte and nr:
        s = RadioSample(**{**_kw(lte), "technology": "nr5g-nsa", "secondary": (nr,)})
    elif nr:
        s = RadioSample(**{**_kw(nr), "technology": "nr5g-sa"})
    else:
        s = lte or umts or gsm or evdo or cdma
    return None if s is None else RadioSample(**{**_kw(s), "source": "mmcli:signal"})


def _kw(s: RadioSample) -> dict[str, Any]:
    return {k: getattr(s, k) for k in s.__dataclass_fields__}


# Modem states (ModemManager's MMModemState) in which the radio values it reports are the modem's current
# ones. In the others (failed, unknown, initializing, locked, disabled, disabling, enabling) the modem is not
# measuring: a disabled modem still reports signal quality "0" (recent "no") -- a value nobody measured.
RADIO_STATES = {"enabled", "searching", "registered", "disconnecting", "connecting", "connected"}


def modem_fields(m: dict) -> dict[str, Any]:
    g = m.get("generic") or {}
    t = m.get("3gpp") or {}
    ports = _as_list(g.get("ports"))
    sq = g.get("signal-quality") or {}
    return {
        "dbus_path": _val(m.get("dbus-path")),
        # The modem's identity: the IMEI/MEID, a hash ModemManager keeps for the same hardware, the physical
        # device (sysfs path, or a kernel event's uid): what finds the modem again after a reset.
        "equipment_identifier": _val(g.get("equipment-identifier")),
        "device_identifier": _val(g.get("device-identifier")),
        "device": _val(g.get("device")),
        "manufacturer": _val(g.get("manufacturer")), "model": _val(g.get("model")),
        "revision": _val(g.get("revision")), "plugin": _val(g.get("plugin")),
        "state": _val(g.get("state")), "power_state": _val(g.get("power-state")),
        "access_technologies": _as_list(g.get("access-technologies")),
        "signal_quality_pct": integer(_val(sq.get("value"))),
        "signal_quality_recent": {"yes": True, "no": False}.get(str(_val(sq.get("recent")))),
        "primary_port": _val(g.get("primary-port")), "ports": ports,
        # The AT ports ModemManager found; MM keeps them open, so poll them only through mmcli --command
        # or with ModemManager stopped / the port marked ignored (see firmware-notes/modems.md).
        "at_ports": [p.split()[0] for p in ports if p.endswith("(at)")],
        "operator_code": _val(t.get("operator-code")), "operator_name": _val(t.get("operator-name")),
        "registration_state": _val(t.get("registration-state")),
        "packet_service_state": _val(t.get("packet-service-state")),
        "imei": _val(t.get("imei")),
    }


def modem_sample(m: dict) -> RadioSample | None:
    f = modem_fields(m)
    if f["state"] is not None and f["state"] not in RADIO_STATES:
        return None                       # not measuring (disabled after a reset, locked, ...): a gap, not zeros
    mcc, mnc = split_plmn(f["operator_code"])
    return RadioSample(
        technology=technology_from_access(f["access_technologies"]),
        signal_quality_pct=f["signal_quality_pct"], operator_name=f["operator_name"], mcc=mcc, mnc=mnc,
        registration=REGISTRATION.get(f["registration_state"] or "", None) if f["registration_state"] else None,
        source="mmcli:modem",
    )


def location_fields(loc: dict) -> dict[str, Any]:
    g3 = loc.get("3gpp") or {}
    gps = loc.get("gps") or {}
    return {
        "mcc": _val(g3.get("mcc")), "mnc": _val(g3.get("mnc")), "lac": _val(g3.get("lac")),
        "tac": _val(g3.get("tac")), "cid": _val(g3.get("cid")),
        "numbering": "decimal" if g3.get("decimal") else "hex",
        "gps": {k: (_val(v) if not isinstance(v, list) else v) for k, v in gps.items()},
    }


def location_sample(loc: dict) -> RadioSample | None:
    f = location_fields(loc)
    base = 10 if f["numbering"] == "decimal" else 16
    cid = f["cid"]
    tac = integer(f["tac"], base=base)
    lac = integer(f["lac"], base=base)
    cid_int = integer(cid, base=base)
    if cid_int == 0:      # mm_location_3gpp_get_cell_id(): "0 if unknown"
        cid = None
    tac = None if tac == 0 else tac
    lac = None if lac == 0 else lac
    # A tracking area means E-UTRAN; a 28-bit id is then an ECI (eNB id + local cell id).
    tech = "lte" if tac is not None and cid_int is not None and cid_int <= 0xFFFFFFF else None
    mcc = integer(f["mcc"])
    s = RadioSample(mcc=None if not mcc else f"{mcc:03d}", mnc=f["mnc"] if mcc else None, tac=tac, lac=lac,
                    **cell_identity(cid, base=base, technology=tech), source="mmcli:location")
    return None if s.is_empty() else s


# ---------------------------------------------------------------------------------------------------------
# Human layout -> nested dict

SEPARATOR_RE = re.compile(r"^\s*-{3,}\s*$")
KEY_RE = re.compile(r"^(\s*)(\S.*?): (.*)$|^(\s*)(\S.*?):$")
# mmcli <= 1.6 quotes every value ('vodafone UK', '67' (recent)) and opens with the object's path:
#   /org/freedesktop/ModemManager1/Modem/0 (device id '8f4e...')
OLD_HEADER_RE = re.compile(r"^\s*(/org/freedesktop/ModemManager1/\S+)\s+\(device id '([^']*)'\)\s*$")


def _unquote(value: str) -> str:
    r""""'vodafone UK'" -> "vodafone UK", "'67' (recent)" -> "67 (recent)": the quotes around a value,
    with an optional "(...)" after the closing one, removed; anything else unchanged. (Written out: the
    pattern it replaces, `^'(.*)'(\s*\(.*\))?$`, tried the bracket at every quote: quadratic.)"""
    if len(value) < 2 or value[0] != "'" or "\n" in value:
        return value
    if value[-1] == "'":
        return value[1:-1]
    if value[-1] != ")":
        return value
    following = ""                     # the first non-blank character right of position q
    for q in range(len(value) - 1, 0, -1):
        c = value[q]
        if c == "'" and following == "(":
            return value[1:q] + value[q + 1:]
        if not c.isspace():
            following = c
    return value
# The section names mmcli prints in its '|' layout (cli/mmcli-output.c section_infos, ModemManager 1.20;
# mmcli <= 1.6: cli/mmcli-modem.c and mmcli-modem-location.c, e.g. "Bearers", "3GPP location"). A part of
# the input is an mmcli output only if most of its entries sit in sections of these names: a newer
# release's new section still parses beside the known ones, input of '|' lines in made-up sections
# (garbage: 10 MB of it made 16 MB of "sections") is not an output at all.
KNOWN_SECTIONS = frozenset({
    "General", "Hardware", "System", "Numbers", "Status", "Modes", "Bands", "IP", "3GPP", "3GPP EPS",
    "3GPP scan", "3GPP USSD", "3GPP location", "CDMA", "CDMA BS", "SIM", "Bearer", "Bearers", "Time",
    "Timezone", "Messaging", "Signal", "OMA", "Current session", "Pending sessions", "Location", "GPS",
    "GPS NMEA traces", "Raw GPS", "Firmware", "Properties", "IPv4 configuration", "IPv6 configuration",
    "Statistics", "Audio format", "Content", *SIGNAL_SECTIONS, *OLD_LOCATION_SECTIONS,
    *(sec for sec, _ in HUMAN_KEYS),
})


def _recognised(sections: list[tuple[str, list[tuple[str, list[str]]]]]) -> bool:
    """Whether one '|' part is an mmcli output: entries in known sections, at least as many as in others
    (so what it prints stays bounded by what was recognised)."""
    known = other = 0
    for sec, entries in sections:
        if sec in KNOWN_SECTIONS:
            known += len(entries)
        else:
            other += max(1, len(entries))
    return known > 0 and known >= other


PROMPT_RE = re.compile(r"^\s*(?:[$#]\s+)?(?:sudo\s+)?mmcli\b|^\s*[$#]\s")


def human_sections(text: str) -> list[tuple[str, list[tuple[str, list[str]]]]]:
    """[(section, [(label, [value lines])])] in order; a continuation line adds a value line.

    Field names are right-aligned so every value starts in one column: a line whose text starts at or
    after that column continues the previous field ("allowed: 4g; preferred: none" would otherwise look
    like a field of its own).
    """
    sections: list[tuple[str, list[tuple[str, list[str]]]]] = []
    value_col: int | None = None
    for line in text.splitlines():
        if SEPARATOR_RE.match(line) or "|" not in line:
            continue
        sec, rest = line.split("|", 1)
        sec = sec.strip()
        if sec or not sections:
            sections.append((sec, []))
        entries = sections[-1][1]
        lead = len(rest) - len(rest.lstrip(" "))
        m = KEY_RE.match(rest)
        if m and (value_col is None or lead < value_col):
            label = (m.group(2) or m.group(5)).strip()
            value = _unquote((m.group(3) or "").strip())
            if m.group(2):
                value_col = len(m.group(1)) + len(m.group(2)) + 2
            entries.append((label, [value] if value else []))
        elif entries and rest.strip():
            entries[-1][1].append(_unquote(rest.strip()))
        elif rest.strip():           # a section whose value has no label (mmcli <= 1.6 "GPS NMEA traces")
            entries.append(("", [_unquote(rest.strip())]))
    return sections


def _join(values: list[str], *, as_list: bool) -> Any:
    if as_list:
        return _as_list(" ".join(values))
    if len(values) == 1:
        return values[0]
    return values


def human_to_nested(text: str, sections: list | None = None) -> tuple[str, dict, dict]:
    """(kind, nested modem/bearer dict, raw sections) for one human-layout output (its sections when known)."""
    sections = human_sections(text) if sections is None else sections
    raw: dict[str, Any] = {}
    nested: dict[str, Any] = {}
    kind = "modem"
    repeat: dict[str, int] = {}      # a section name can repeat within one output: "#2", "#3", ...
    for sec, entries in sections:
        labels = {lab for lab, _ in entries}
        name = sec
        if name in raw:
            n = repeat.get(sec, 2)
            while f"{sec} #{n}" in raw:
                n += 1
            name, repeat[sec] = f"{sec} #{n}", n + 1
        block = raw.setdefault(name, {})
        for label, values in entries:
            block[label] = _join(values, as_list=False)
        if sec == "3GPP" and labels & {"cell id", "tracking area code", "location area code"}:
            kind = "location"
            for label, values in entries:
                if label in LOCATION_LABELS:
                    _put(nested, f"location.3gpp.{LOCATION_LABELS[label]}", _join(values, as_list=False))
            continue
        if sec in OLD_LOCATION_SECTIONS:
            prefix, table = OLD_LOCATION_SECTIONS[sec]
            for label, values in entries:
                key = table.get(label.lower())
                if key is not None:       # "Not available" is an unlabelled value: nothing to keep
                    kind = "location"
                    _put(nested, f"{prefix}.{key}", values if key == "nmea" else _join(values, as_list=False))
                    if prefix.endswith("3gpp"):
                        _put(nested, "location.3gpp.decimal", True)
            continue
        if sec == "GPS" and labels & set(GPS_LABELS):
            kind = "location"
            for label, values in entries:
                if label in GPS_LABELS:
                    _put(nested, f"location.gps.{GPS_LABELS[label]}", _join(values, as_list=False))
            continue
        if sec in SIGNAL_SECTIONS:
            kind = "signal"
            for label, values in entries:
                if label in SIGNAL_LABELS:
                    _put(nested, f"signal.{SIGNAL_SECTIONS[sec]}.{SIGNAL_LABELS[label]}", _join(values, as_list=False))
            continue
        for label, values in entries:
            key = HUMAN_KEYS.get((sec, label))
            if key is None:
                continue
            if sec == "Signal":
                kind = "signal"
            if key == "generic.signal-quality.value":
                m = re.match(r"^(\d+)%?\s*(?:\((recent|cached)\))?", " ".join(values))
                if m:
                    _put(nested, "generic.signal-quality.value", m.group(1))
                    _put(nested, "generic.signal-quality.recent", "yes" if m.group(2) == "recent" else "no")
                continue
            _put(nested, key, _join(values, as_list=key in LIST_KEYS))
    for line in text.splitlines():
        old = OLD_HEADER_RE.match(line)
        if old:                       # mmcli <= 1.6: the path and device id head the output
            _put(nested, "dbus-path", old.group(1))
            _put(nested, "generic.device-identifier", old.group(2))
            raw["layout"] = "quoted (mmcli <= 1.6)"
            break
    path = _get(nested, "dbus-path") or ""
    if "/Bearer/" in str(path):
        kind = "bearer"
    return kind, nested, raw


# ---------------------------------------------------------------------------------------------------------
# Entry points

def _json_docs(text: str) -> list[Any]:
    """All JSON documents in text (one-line -J output, pretty-printed files, several in a row)."""
    dec = json.JSONDecoder()
    docs: list[Any] = []
    i = 0
    while True:
        j = text.find("{", i)
        if j < 0:
            break
        try:
            obj, end = dec.raw_decode(text, j)
        except json.JSONDecodeError as exc:
            raise ParseError(f"mmcli: invalid JSON at offset {j}: {exc.msg}") from None
        docs.append(obj)
        i = end
    return docs


def _split_human(text: str) -> list[str]:
    """Split a transcript holding several commands at their shell prompts."""
    parts: list[list[str]] = [[]]
    filled = False                       # whether the current part has a non-blank line
    for line in text.splitlines():
        if PROMPT_RE.match(line):
            if filled:
                parts.append([])
                filled = False
            continue
        parts[-1].append(line)
        filled = filled or bool(line.strip())
    return ["\n".join(p) for p in parts if any("|" in x for x in p)]


def _output(kind: str, fmt: str, nested: dict, raw: Any = None) -> dict[str, Any]:
    if kind == "signal":
        sig = nested.get("signal") or {}
        fields_, sample = signal_fields(sig), signal_sample(sig)
    elif kind == "location":
        loc = nested.get("location") or {}
        fields_, sample = location_fields(loc), location_sample(loc)
    elif kind == "bearer":
        fields_, sample = {"bearer": raw if raw is not None else nested}, None
    else:
        fields_, sample = modem_fields(nested), modem_sample(nested)
    out: dict[str, Any] = {"type": kind, "format": fmt, "fields": fields_, "sample": sample}
    if fmt == "human":
        out["fields"] = {**fields_, "sections": raw}
    return out


def parse_outputs(text: str) -> list[dict[str, Any]]:
    outputs: list[dict[str, Any]] = []
    body = "\n".join(line for line in text.splitlines() if not PROMPT_RE.match(line))
    for line in body.splitlines():
        s = line.strip()
        if s.startswith("Successfully setup signal quality information"):
            outputs.append({"type": "signal-setup", "format": "text", "fields": {"message": s}, "sample": None})
        elif s in ACKS:
            outputs.append({"type": ACKS[s], "format": "text", "fields": {"message": s}, "sample": None})
        elif s.startswith("error:"):
            outputs.append({"type": "error", "format": "text", "fields": {"message": s}, "sample": None})
    if body.lstrip().startswith("{"):
        for doc in _json_docs(body):
            if not isinstance(doc, dict):
                continue
            if "bearer" in doc:
                outputs.append(_output("bearer", "json", doc["bearer"], doc["bearer"]))
                continue
            m = doc.get("modem") or {}
            if "signal" in m:
                outputs.append(_output("signal", "json", m))
            if "location" in m:
                outputs.append(_output("location", "json", m))
            if "generic" in m or "3gpp" in m:
                outputs.append(_output("modem", "json", m))
    else:
        for part in _split_human(text):
            sections = human_sections(part)
            if not _recognised(sections):     # '|' lines in sections mmcli does not print: not an output
                continue
            kind, nested, raw = human_to_nested(part, sections)
            outputs.append(_output(kind, "human", nested, raw))
    return outputs


PRIORITY = ("modem", "signal", "location")
# The other acknowledgements the field logger's setup commands print (mmcli 1.20.4: -e, --location-enable-3gpp;
# tests/fixtures/generated/modemmanager enable.txt, location_enable_3gpp.txt).
ACKS = {"successfully enabled the modem": "enable", "successfully disabled the modem": "disable",
        "successfully setup location gathering": "location-setup"}


def parse_sample(text: str) -> RadioSample | None:
    outs = parse_outputs(text)
    return merge_samples([o["sample"] for t in PRIORITY for o in outs if o["type"] == t])


def daemon_recent(text: str) -> bool | None:
    """ModemManager's own "recent" flag on the modem's signal quality (`mmcli -m N -J`): False when the daemon
    got no new signal quality for 60 s (SIGNAL_QUALITY_RECENT_TIMEOUT_SEC, src/mm-iface-modem.c, 1.20.4;
    it polls the quality every 30 s). None when the output does not say."""
    for o in parse_outputs(text):
        if o["type"] == "modem" and o["fields"].get("signal_quality_recent") is not None:
            return bool(o["fields"]["signal_quality_recent"])
    return None


def to_json(text: str) -> dict[str, Any]:
    outs = parse_outputs(text)
    if not outs:
        raise ParseError("mmcli: no mmcli output recognised (expected -J JSON, the '|' human layout, "
                         "'Successfully setup ...' or 'error: ...')")
    merged = merge_samples([o["sample"] for t in PRIORITY for o in outs if o["type"] == t])
    return {"tool": "mmcli",
            "outputs": [{**o, "sample": None if o["sample"] is None else o["sample"].to_json()} for o in outs],
            "sample": None if merged is None else merged.to_json()}
