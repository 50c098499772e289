"""AT command responses: framing (echo, OK / ERROR / +CME ERROR) and the radio-counter replies.

`to_json(text)` auto-detects what it was given -- one reply, several replies, a whole serial log, or
mmcli's `response: '...'` wrapper -- by the information-text prefix of each line (+CSQ:, +CESQ:, +QENG:,
!GSTATUS:, ^HCSQ:, ^SYSINFOEX:, +COPS:, +CREG:/+CGREG:/+CEREG:/+C5GREG:, +QNWINFO:, +QCAINFO:,
+QSPN:). The prefix table
`RECORDS` is the only dispatch: no branching on a modem family name. Vendor dialects live as data in
their own modules (nodes/modem/vendors*.py: Huawei ^HCSQ/^SYSINFOEX, Cinterion ^SMONI, ...).

Conversions follow the recorded notes in tests/fixtures/recorded/02c_at_commands_cellular.md (vendor
documentation and ModemManager's helpers); the choices that the fixtures do not settle are marked
"ASSUMPTION" and listed in firmware-notes/modems.md. Stdlib only.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

from nodes.modem import registration, vendors
from nodes.modem.radio import (
    LTE_BW_MHZ, MAX_ABS, NR_BW_MHZ, NR_SCS_KHZ, ParseError, RadioSample, cell_identity, index_level, integer, lte_band,
    csv_fields, merge_samples, nr_band, number, split_plmn,
)
from nodes.modem.ranges import within
from nodes.modem.vendors_huawei import parse_hcsq, parse_sysinfoex

# ---------------------------------------------------------------------------------------------------------
# Framing

FINAL_RE = re.compile(r"^(OK|ERROR|NO CARRIER|\+CME ERROR:.*|\+CMS ERROR:.*)$", re.I)
# A command line (what we sent, or the modem's echo of it): "AT", "ATE0", "AT+CSQ", 'at+qeng="servingcell"'
COMMAND_RE = re.compile(r"^AT(?:$|[+!^#$%*&]\S|[A-Z]\S*$|[A-Z]\d)", re.I)
# Shell lines in pasted transcripts ("# mmcli -m 0 --command=...", "$ ...", "mmcli ...").
SHELL_RE = re.compile(r"^(?:[$#]\s|mmcli\s)")
PREFIX_RE = re.compile(r"^([+!^$#][A-Za-z0-9]+)\s*:\s?(.*)$")
# mmcli --command prints the modem's reply as: response: '<text>' (possibly over several lines)
MMCLI_RESPONSE_RE = re.compile(r"^\s*response:\s*'(.*)$")

# Unsolicited result codes a modem may interleave with replies. A line with one of these prefixes is
# treated as unsolicited unless it is the reply prefix of the command that was sent (see serial_poll).
URC_PREFIXES = (
    "+QIND", "RDY", "+CPIN", "+QUSIM", "+CEREG", "+CREG", "+CGREG", "+C5GREG", "^HCSQ", "^RSSI", "^MODE",
    "^SYSSTART", "^SRVST", "^SIMST", "^BOOT", "RING", "+CMTI", "+CRING", "+QSTAT", "+CGEV", "+CUSD",
    "+QNETDEVSTATUS", "+QIURC", "POWERED DOWN", "+QSIMSTAT", "APP RDY",
)

QUECTEL_MISSING = ("-", "", "-32768", "--")   # 02c: '"-" or - indicates the parameter is invalid'; -32768 invalid


@dataclass
class _Chunk:
    command: str | None
    lines: list[str] = field(default_factory=list)
    final: str | None = None


def _unwrap_mmcli(lines: list[str]) -> list[str]:
    """Strip mmcli's `response: '...'` wrapper (the reply may span lines; the closing quote may be missing
    in pasted excerpts)."""
    out: list[str] = []
    inside = False
    for line in lines:
        m = MMCLI_RESPONSE_RE.match(line)
        if m:
            line, inside = m.group(1), True
        if inside and line.rstrip().endswith("'"):
            line, inside = line.rstrip()[:-1], False
        out.append(line)
    return out


def split_chunks(text: str) -> list[_Chunk]:
    """Cut a transcript into (command, info lines, final result) chunks."""
    lines = _unwrap_mmcli(re.split(r"\r\n|\r|\n", text))
    chunks: list[_Chunk] = []
    cur: _Chunk | None = None
    for raw in lines:
        s = raw.strip()
        if COMMAND_RE.match(s) or SHELL_RE.match(s):
            cur = _Chunk(command=s)
            chunks.append(cur)
            continue
        if FINAL_RE.match(s):
            if cur is None:
                cur = _Chunk(command=None)
                chunks.append(cur)
            cur.final = s
            cur = None
            continue
        if cur is None:
            if not s:
                continue
            cur = _Chunk(command=None)
            chunks.append(cur)
        cur.lines.append(raw)
    return chunks


def _vals(text: str) -> list[str]:
    return [v for v, _ in csv_fields(text)]


def _q(text: Any) -> float | None:
    """Quectel numeric field with its sentinels."""
    return number(text, missing=QUECTEL_MISSING)


def _qi(text: Any) -> int | None:
    v = _q(text)
    return None if v is None else within(v, -MAX_ABS, MAX_ABS, integral=True)    # "1.5" is no index: None


def _mcc(text: str | None) -> str | None:
    # MCC is always three digits; Q1 prints the test PLMN 001 as "1". The MNC keeps its digits as printed.
    v = integer(text, missing=QUECTEL_MISSING)
    return None if v is None else f"{v:03d}"


def _mnc(text: str | None) -> str | None:
    return None if text is None or text.strip() in QUECTEL_MISSING else text.strip()


# ---------------------------------------------------------------------------------------------------------
# +CSQ / +CESQ (3GPP TS 27.007)

def csq_rssi_dbm(v: int | None) -> float | None:
    """0 = -113 dBm or less, 1..30 = -111..-53 (2 dB steps), 31 = -51 or greater, 99 = not known."""
    if v is None or v == 99 or not 0 <= v <= 31:
        return None
    return float(-113 + 2 * v)


def parse_csq(payloads: list[str]) -> tuple[dict, RadioSample | None]:
    vals = _vals(payloads[-1])
    rssi, ber = integer(vals[0]), integer(vals[1]) if len(vals) > 1 else None
    fields_ = {"rssi": rssi, "ber": ber}
    return fields_, RadioSample(rssi_dbm=csq_rssi_dbm(rssi), source="at:+CSQ")


def parse_cesq(payloads: list[str]) -> tuple[dict, RadioSample | None]:
    vals = [integer(v) for v in _vals(payloads[-1])]
    vals += [None] * (6 - len(vals))
    rxlev, ber, rscp, ecno, rsrq, rsrp = vals[:6]
    fields_ = {"rxlev": rxlev, "ber": ber, "rscp": rscp, "ecno": ecno, "rsrq": rsrq, "rsrp": rsrp}
    # ModemManager's conversions (02c §4); 99 (GERAN) / 255 (UTRA, E-UTRA) = not known.
    s = {
        "rssi_dbm": index_level(rxlev, 63, 99, 1.0, -111.0),
        "rscp_dbm": index_level(rscp, 96, 255, 1.0, -121.0),
        "ecio_db": index_level(ecno, 49, 255, 0.5, -24.5),
        "rsrq_db": index_level(rsrq, 34, 255, 0.5, -20.0),
        "rsrp_dbm": index_level(rsrp, 97, 255, 1.0, -141.0),
    }
    tech = "lte" if s["rsrp_dbm"] is not None or s["rsrq_db"] is not None else \
        "umts" if s["rscp_dbm"] is not None else "gsm" if s["rssi_dbm"] is not None else None
    return fields_, RadioSample(technology=tech, source="at:+CESQ", **s)


# ---------------------------------------------------------------------------------------------------------
# Quectel +QENG="servingcell"

LTE_FIELDS = ("is_tdd", "mcc", "mnc", "cell_id", "pci", "earfcn", "band", "ul_bandwidth", "dl_bandwidth",
              "tac", "rsrp", "rsrq", "rssi", "sinr")
# Trailing fields after <SINR> differ by module generation (02c "Field layouts"):
LTE_EXTRAS = {0: (), 1: ("srxlev",), 2: ("cqi", "tx_power"), 3: ("cqi", "tx_power", "srxlev")}
NR_SA_FIELDS = ("duplex", "mcc", "mnc", "cell_id", "pci", "tac", "arfcn", "band", "dl_bandwidth",
                "rsrp", "rsrq", "sinr", "scs", "srxlev")
NR_NSA_FIELDS = ("mcc", "mnc", "pci", "rsrp", "sinr", "rsrq", "arfcn", "band", "dl_bandwidth", "scs")
WCDMA_FIELDS = ("mcc", "mnc", "lac", "cell_id", "uarfcn", "psc", "rac", "rscp", "ecio", "phych", "sf",
                "slot", "speech_code", "com_mod")
QENG_STATE = {"SEARCH": ("searching", None), "LIMSRV": ("limited", None),
              "NOCONN": ("registered", "idle"), "CONNECT": ("registered", "connected")}


def _named(names: tuple[str, ...], vals: list[str]) -> dict[str, str]:
    return {n: v for n, v in zip(names, vals)}


def lte_sinr_db(raw: float | None, scale: str) -> float | None:
    """Quectel LTE <SINR>.

    "2x-20": RG50xQ/RM5xxQ vendor doc, Y = 2X - 20 (X 0..25 -> -20..30 dB); confirmed by SAMPLE Q1 (25 -> 30 dB)
             against qmicli SAMPLE A of the same session (LTE SNR '30.0 dB').
    "x/5-20": LTE-only modules (EC2x/EG25/BG9x): 1/5 dB steps, X 0..250 -> -20..30 dB. ASSUMPTION: from the
             EC2x manual wording, not in our fixtures; the ArduPilot EC25 line (SINR 53) only fits this scale.
    """
    if raw is None:
        return None
    return 2.0 * raw - 20.0 if scale == "2x-20" else raw / 5.0 - 20.0


def _lte_leg(vals: list[str], *, multi_line: bool, rat: str) -> tuple[dict, RadioSample]:
    f = _named(LTE_FIELDS, vals)
    extras = vals[len(LTE_FIELDS):]
    f.update(_named(LTE_EXTRAS.get(len(extras), ()), extras))
    if len(extras) > 3:
        f["extra"] = extras
    # Which SINR scale: 5G modules print the LTE leg on its own line in EN-DC form, or the long layout with
    # CQI/tx_power; the short single-line layout is the LTE-only modules' (see lte_sinr_db).
    scale = "2x-20" if (multi_line or len(extras) >= 2) and rat == "LTE" else "x/5-20"
    f["sinr_scale"] = scale
    tx = _q(f.get("tx_power"))
    tech = "lte-m" if rat in ("EMTC", "CAT-M", "CAT-M1") else "lte"
    sample = RadioSample(
        technology=tech,
        mcc=_mcc(f.get("mcc")), mnc=_mnc(f.get("mnc")),
        **cell_identity(_mnc(f.get("cell_id")), base=16, technology="lte"),
        pci=_qi(f.get("pci")), arfcn=_qi(f.get("earfcn")), band=lte_band(_qi(f.get("band"))),
        ul_bandwidth_mhz=LTE_BW_MHZ.get(_qi(f.get("ul_bandwidth"))),  # type: ignore[arg-type]
        bandwidth_mhz=LTE_BW_MHZ.get(_qi(f.get("dl_bandwidth"))),  # type: ignore[arg-type]
        tac=integer(f.get("tac"), base=16, missing=QUECTEL_MISSING),
        rsrp_dbm=_q(f.get("rsrp")), rsrq_db=_q(f.get("rsrq")), rssi_dbm=_q(f.get("rssi")),
        sinr_db=lte_sinr_db(_q(f.get("sinr")), scale),
        tx_power_dbm=None if tx is None else tx / 10.0,   # 1/10 dBm, "meaningful only when in traffic"
    )
    return f, sample


def nr_sinr_db(raw: float | None, *, tenths: bool) -> float | None:
    """NR <SINR> is dB (-23..40) per the vendor doc. Early RM500Q firmware (SAMPLE Q1, 2020) printed 1/10 dB:
    its NSA line says 180 where qmicli of the same session says '18.5 dB'. A value outside the documented dB
    range can only be tenths; the short (old-firmware) NSA layout is tenths too."""
    if raw is None:
        return None
    if tenths or not -23 <= raw <= 40:
        return raw / 10.0
    return raw


def _nr_nsa_leg(vals: list[str]) -> tuple[dict, RadioSample]:
    f: dict[str, Any] = _named(NR_NSA_FIELDS, vals)
    raw_sinr = _q(f.get("sinr"))
    tenths = len(vals) <= 6 or (raw_sinr is not None and not -23 <= raw_sinr <= 40)
    f["sinr_scale"] = "tenths" if tenths else "db"
    sample = RadioSample(
        technology="nr5g", pci=_qi(f.get("pci")), rsrp_dbm=_q(f.get("rsrp")), rsrq_db=_q(f.get("rsrq")),
        sinr_db=nr_sinr_db(raw_sinr, tenths=tenths), arfcn=_qi(f.get("arfcn")),
        band=nr_band(_qi(f.get("band"))), bandwidth_mhz=NR_BW_MHZ.get(_qi(f.get("dl_bandwidth"))),  # type: ignore[arg-type]
        mcc=_mcc(f.get("mcc")), mnc=_mnc(f.get("mnc")),
    )
    return f, sample


def _nr_sa_leg(vals: list[str]) -> tuple[dict, RadioSample]:
    f = _named(NR_SA_FIELDS, vals)
    scs = _qi(f.get("scs"))
    f["scs_khz"] = NR_SCS_KHZ.get(scs) if scs is not None else None  # type: ignore[assignment]
    sample = RadioSample(
        technology="nr5g-sa", mcc=_mcc(f.get("mcc")), mnc=_mnc(f.get("mnc")),
        **cell_identity(_mnc(f.get("cell_id")), base=16, technology="nr5g-sa"),   # 36-bit NCI
        pci=_qi(f.get("pci")), tac=integer(f.get("tac"), base=16, missing=QUECTEL_MISSING),
        arfcn=_qi(f.get("arfcn")), band=nr_band(_qi(f.get("band"))),
        bandwidth_mhz=NR_BW_MHZ.get(_qi(f.get("dl_bandwidth"))),  # type: ignore[arg-type]
        rsrp_dbm=_q(f.get("rsrp")), rsrq_db=_q(f.get("rsrq")),
        sinr_db=nr_sinr_db(_q(f.get("sinr")), tenths=False),
    )
    return f, sample


def _wcdma_leg(vals: list[str]) -> tuple[dict, RadioSample]:
    # SOURCE only (vendor field layout in 02c); no recorded WCDMA reply.
    f = _named(WCDMA_FIELDS, vals)
    sample = RadioSample(
        technology="umts", mcc=_mcc(f.get("mcc")), mnc=_mnc(f.get("mnc")),
        lac=integer(f.get("lac"), base=16, missing=QUECTEL_MISSING),
        **cell_identity(_mnc(f.get("cell_id")), base=16, technology="umts"),
        arfcn=_qi(f.get("uarfcn")), rscp_dbm=_q(f.get("rscp")), ecio_db=_q(f.get("ecio")),
    )
    return f, sample


def parse_qeng(payloads: list[str]) -> tuple[dict, RadioSample | None]:
    """+QENG: "servingcell" in its three shapes: single line (LTE, NR5G-SA, WCDMA), EN-DC multi-line
    ("servingcell",<state> then "LTE" and "NR5G-NSA" lines), or state only ("SEARCH")."""
    state: str | None = None
    legs: list[tuple[str, list[str], bool]] = []
    for p in payloads:
        vals = _vals(p)
        if vals and vals[0].lower() == "servingcell":
            state = vals[1] if len(vals) > 1 else None
            if len(vals) > 2:
                legs.append((vals[2].upper(), vals[3:], False))
        elif vals:
            legs.append((vals[0].upper(), vals[1:], True))
    fields_: dict[str, Any] = {"state": state, "legs": []}
    primary: RadioSample | None = None
    nr_leg: RadioSample | None = None
    for rat, vals, multi in legs:
        if rat in ("LTE", "EMTC", "CAT-M", "CAT-M1"):
            f, s = _lte_leg(vals, multi_line=multi, rat=rat)
            primary = s
        elif rat == "NR5G-NSA":
            f, s = _nr_nsa_leg(vals)
            # A leg printed with every value "-" is no leg: EN-DC is not active, the anchor is plain LTE.
            if any(getattr(s, k) is not None for k in ("pci", "rsrp_dbm", "rsrq_db", "sinr_db")):
                nr_leg = s
        elif rat == "NR5G-SA":
            f, s = _nr_sa_leg(vals)
            primary = s
        elif rat == "WCDMA":
            f, s = _wcdma_leg(vals)
            primary = s
        else:
            f = {"values": vals}
        f = {"rat": rat, **f}
        fields_["legs"].append(f)
    registration, connection = QENG_STATE.get((state or "").upper(), (None, None))
    base = primary or RadioSample()
    kw: dict[str, Any] = {"registration": registration, "connection": connection, "source": "at:+QENG"}
    if nr_leg is not None:
        kw["secondary"] = (nr_leg,)
        kw["technology"] = "nr5g-nsa"
    sample = RadioSample(**{**{k: getattr(base, k) for k in base.__dataclass_fields__}, **kw})
    return fields_, sample


def parse_qeng_neighbour(payloads: list[str]) -> tuple[dict, RadioSample | None]:
    # Neighbour lists are kept raw: they do not describe the serving cell.
    return {"cells": [_vals(p) for p in payloads]}, None


# ---------------------------------------------------------------------------------------------------------
# Quectel +QNWINFO / +QCAINFO / +QSPN

def _band_text(text: str) -> tuple[str | None, str | None]:
    """"LTE BAND 3" -> ("lte", "B3"); "NR5G BAND 41" -> ("nr5g", "n41")."""
    m = re.match(r"^\s*(LTE|NR5G|WCDMA|GSM)\s+BAND\s+(\d+)\s*$", text or "", re.I)
    if not m:
        return None, None
    rat, n = m.group(1).upper(), integer(m.group(2))
    if n is None:
        return None, None
    if rat == "LTE":
        return "lte", f"B{n}"
    if rat == "NR5G":
        return "nr5g", f"n{n}"
    return rat.lower(), str(n)


def parse_qnwinfo(payloads: list[str]) -> tuple[dict, RadioSample | None]:
    rows = []
    lte: RadioSample | None = None
    nr: RadioSample | None = None
    for p in payloads:
        vals = _vals(p) + [""] * 4
        act, oper, band_text, channel = vals[:4]
        rat, band = _band_text(band_text)
        mcc, mnc = split_plmn(oper)
        rows.append({"act": act, "operator": oper, "band": band_text, "channel": integer(channel)})
        s = RadioSample(band=band, arfcn=integer(channel), mcc=mcc, mnc=mnc)
        if rat == "lte" and lte is None:
            lte = s
        elif rat == "nr5g" and nr is None:
            nr = s
    if lte is not None and nr is not None:
        sample = RadioSample(**{**_kw(lte), "technology": "nr5g-nsa",
                                "secondary": (RadioSample(**{**_kw(nr), "technology": "nr5g"}),)})
    elif nr is not None:
        sample = RadioSample(**{**_kw(nr), "technology": "nr5g-sa"})
    elif lte is not None:
        sample = RadioSample(**{**_kw(lte), "technology": "lte"})
    else:
        sample = None
    if sample is not None:
        sample = RadioSample(**{**_kw(sample), "source": "at:+QNWINFO"})
    return {"rows": rows}, sample


def _kw(s: RadioSample) -> dict[str, Any]:
    return {k: getattr(s, k) for k in s.__dataclass_fields__}


def parse_qcainfo(payloads: list[str]) -> tuple[dict, RadioSample | None]:
    # Carrier-aggregation components, raw: per-role layouts differ (LTE RBs vs NR bandwidth index) and the
    # SINR encoding of this command is not documented in our fixtures, so nothing is normalized from it.
    comps = []
    for p in payloads:
        vals = _vals(p)
        comps.append({"role": vals[0] if vals else None, "arfcn": integer(vals[1]) if len(vals) > 1 else None,
                      "bandwidth": vals[2] if len(vals) > 2 else None,
                      "band": vals[3] if len(vals) > 3 else None, "rest": vals[4:]})
    return {"components": comps}, None


def parse_qspn(payloads: list[str]) -> tuple[dict, RadioSample | None]:
    vals = _vals(payloads[-1]) + [""] * 5
    fnn, snn, spn, alphabet, rplmn = vals[:5]
    mcc, mnc = split_plmn(rplmn)
    return ({"full_name": fnn, "short_name": snn, "spn": spn, "alphabet": alphabet, "rplmn": rplmn},
            RadioSample(operator_name=fnn or snn or None, mcc=mcc, mnc=mnc, source="at:+QSPN"))


# ---------------------------------------------------------------------------------------------------------
# Sierra Wireless !GSTATUS?

GSTATUS_MISSING = ("--", "---", "")
SIERRA_MODE = {"LTE": "lte", "WCDMA": "umts", "HSPA": "umts", "GSM": "gsm", "ENDC": "nr5g-nsa",
               "NR5G": "nr5g-sa", "NR5G SA": "nr5g-sa"}


def gstatus_pairs(lines: list[str]) -> dict[str, str]:
    """Key/value pairs of a !GSTATUS? reply.

    The module pads with TABs *and* spaces ("Current Time:  356\t\tTemperature: 40"); a segment without a
    colon continues the previous value ("EMM state: Registered \tNormal Service"). Keys repeat per antenna
    path ("PCC RxM RSSI: -48\t\tRSRP (dBm): -78"), so a repeated key is qualified with the line's leading
    key's prefix ("PCC RxM RSRP (dBm)"). Newer firmware prints "PCC RxM RSRP:" directly.
    """
    out: dict[str, list[str]] = {}      # key -> its value's pieces, joined once at the end (a string grown
    for line in lines:                  # per continuation segment was quadratic in a long line)
        tokens = [t for t in re.split(r"\t+|\s{2,}", line.strip()) if t.strip()]
        lead: str | None = None
        path: str | None = None
        key: str | None = None
        for tok in tokens:
            m = re.match(r"^([A-Za-z][A-Za-z0-9 ()/._-]*?)\s*:\s*(.*)$", tok)
            if m:
                key, val = m.group(1).strip(), m.group(2).strip()
                if lead is None:
                    lead = key
                    pm = PATH_RE.match(key)
                    path = pm.group(1) if pm else None
                elif path is not None and not key.startswith(path):
                    key = f"{path} {key}"          # "RSRP (dBm)" on the "PCC RxD RSSI" line
                elif key in out:
                    key = f"{lead.rsplit(' ', 1)[0]} {key}"
                out[key] = [val]
            elif key is not None:
                out[key].append(tok.strip())
    return {k: " ".join(p for p in parts if p) for k, parts in out.items()}


PATH_RE = re.compile(r"^((?:PCC|SCC\d*|SSC\d*)\s+Rx[MD])\b")


def _paren_or_hex(text: str | None) -> tuple[str | None, int | None]:
    """"550d (21773)" -> ("550d", 21773): printed hex plus its decimal in parentheses."""
    if text is None or text.strip() in GSTATUS_MISSING:
        return None, None
    m = re.match(r"^\s*([0-9A-Fa-f]+)\s*(?:\((\d+)\))?", text)
    if not m:
        return None, None
    return m.group(1), integer(m.group(2)) if m.group(2) else integer(m.group(1), base=16)


def parse_gstatus(lines: list[str]) -> tuple[dict, RadioSample | None]:
    kv = gstatus_pairs(lines)

    def g(*keys: str) -> float | None:
        for k in keys:
            if k in kv:
                return number(kv[k], missing=GSTATUS_MISSING)
        return None

    mode = (kv.get("System mode") or "").strip().upper()
    tech = SIERRA_MODE.get(mode)
    emm = (kv.get("EMM state") or "").lower()
    registration = "registered" if emm.startswith("registered") else \
        "not-registered" if emm.startswith("deregistered") else None
    rrc = (kv.get("RRC state") or "").lower()
    connection = "connected" if "connected" in rrc else "idle" if "idle" in rrc else None
    cell_printed, cell_int = _paren_or_hex(kv.get("Cell ID"))
    _, tac = _paren_or_hex(kv.get("TAC"))
    ident: dict[str, Any] = {}
    if cell_printed is not None:
        ident = cell_identity(cell_printed, base=16, technology="lte")
    band = (kv.get("LTE band") or "").strip()
    nr_rsrp = g("NR5G RSRP (dBm)")
    nr_sinr = g("NR5G SINR (dB)")
    nr_rsrq = g("NR5G RSRQ (dB)")
    secondary: tuple[RadioSample, ...] = ()
    if any(v is not None for v in (nr_rsrp, nr_sinr, nr_rsrq)):
        nb = (kv.get("NR5G band") or "").strip()
        secondary = (RadioSample(technology="nr5g", rsrp_dbm=nr_rsrp, sinr_db=nr_sinr, rsrq_db=nr_rsrq,
                                 band=nb if nb and nb not in GSTATUS_MISSING else None,
                                 arfcn=integer(kv.get("NR5G Rx chan"), missing=GSTATUS_MISSING)),)
    sample = RadioSample(
        technology=tech,
        rssi_dbm=g("PCC RxM RSSI"), rsrp_dbm=g("PCC RxM RSRP", "PCC RxM RSRP (dBm)"),
        rsrq_db=g("RSRQ (dB)"), sinr_db=g("SINR (dB)"), tx_power_dbm=g("Tx Power"),
        band=band if band and band not in GSTATUS_MISSING else None,
        bandwidth_mhz=g("LTE bw"), arfcn=integer(kv.get("LTE Rx chan"), missing=GSTATUS_MISSING),
        tac=tac, registration=registration, connection=connection, secondary=secondary,
        source="at:!GSTATUS", **ident,
    )
    return {"values": kv}, sample


# ---------------------------------------------------------------------------------------------------------
# +COPS? / +CEREG? (3GPP TS 27.007; not in the recorded fixtures except "+cops: 0,0,"3 UK Things Mobile",7"
# seen in a public transcript -- ASSUMPTION: AcT table from TS 27.007, verify on a device)

COPS_ACT = {0: "gsm", 1: "gsm", 2: "umts", 3: "gsm", 4: "umts", 5: "umts", 6: "umts", 7: "lte", 8: "gsm",
            9: "lte", 10: "lte", 11: "nr5g-sa", 12: "nr5g-sa", 13: "nr5g-nsa"}


def parse_cops(payloads: list[str]) -> tuple[dict, RadioSample | None]:
    """+COPS? read responses: <mode>[,<format>,<oper>[,<AcT>]]. A reply may hold several lines
    (the usual AT+COPS=3,0;+COPS?;+COPS=3,2;+COPS? chain prints the operator by name, then by
    numeric PLMN): each is kept, and the sample combines them (name from format 0/1, MCC/MNC
    from format 2, the access technology from any)."""
    entries = []
    for payload in payloads:
        vals = _vals(payload)
        entries.append({"mode": integer(vals[0]) if vals else None,
                        "format": integer(vals[1]) if len(vals) > 1 else None,
                        "operator": vals[2] if len(vals) > 2 and vals[2] else None,
                        "act": integer(vals[3]) if len(vals) > 3 else None})
    f = dict(entries[-1])
    if len(entries) > 1:
        f["lines"] = entries
    name = next((e["operator"] for e in reversed(entries) if e["format"] in (0, 1) and e["operator"]), None)
    plmn = next((e["operator"] for e in reversed(entries) if e["format"] == 2 and e["operator"]), None)
    act = next((e["act"] for e in reversed(entries) if e["act"] is not None), None)
    if name is None and plmn is None and act is None:
        return f, RadioSample(source="at:+COPS")
    mcc, mnc = split_plmn(plmn)
    return f, RadioSample(operator_name=name, mcc=mcc, mnc=mnc,
                          technology=COPS_ACT.get(act) if act is not None else None, source="at:+COPS")


def parse_registration(prefix: str) -> "Parser":
    """+CREG / +CGREG / +CEREG / +C5GREG (nodes.modem.registration: every <n> form, solicited and
    unsolicited, <stat> 0..11). The last line of the reply gives the sample; every line is kept."""
    def parse(payloads: list[str]) -> tuple[dict, RadioSample | None]:
        lines = [registration.parse_line(prefix, p) for p in payloads]
        f = dict(lines[-1])
        if len(lines) > 1:
            f["lines"] = lines
        act = f.get("act")
        tech = COPS_ACT.get(act) if act is not None else None
        area = f.get("tac") if "tac" in registration.AFTER_STAT[prefix] else f.get("lac")
        if tech is None:
            tech = {"+CEREG": "lte", "+C5GREG": "nr5g-sa"}.get(prefix) if f.get("ci") else None
        area_int = integer(area, base=16) if area else None
        return f, RadioSample(registration=f.get("registration"),  # type: ignore[arg-type]
                              tac=area_int if "tac" in f else None, lac=area_int if "lac" in f else None,
                              **cell_identity(f.get("ci"), base=16, technology=tech), technology=tech,
                              source=f"at:{prefix}")
    parse.__name__ = "parse_" + prefix.lstrip("+").lower()
    return parse


# ---------------------------------------------------------------------------------------------------------
# Dispatch table: information-text prefix -> (record type, parser). The parser receives the payloads
# (text after "PREFIX:") of all lines with that prefix in one reply; a BLOCK reply (its body lines carry
# no prefix) gets the text after its prefix followed by those lines.

Parser = Callable[[list[str]], "tuple[dict, RadioSample | None]"]
BLOCKS = ("!GSTATUS", "+GTCCINFO", "+UCGED")
RECORDS: dict[str, tuple[str, Parser]] = {
    "+CSQ": ("csq", parse_csq),
    "+CESQ": ("cesq", parse_cesq),
    "+QENG": ("qeng-servingcell", parse_qeng),
    "!GSTATUS": ("gstatus", parse_gstatus),
    "^HCSQ": ("hcsq", parse_hcsq),
    "^SYSINFOEX": ("sysinfoex", parse_sysinfoex),
    "^SMONI": ("smoni", vendors.parse_smoni),
    "#RFSTS": ("rfsts", vendors.parse_rfsts),
    "+CPSI": ("cpsi", vendors.parse_cpsi),
    "+GTCCINFO": ("gtccinfo", vendors.parse_gtccinfo),
    "+UCGED": ("ucged", vendors.parse_ucged),
    "+COPS": ("cops", parse_cops),
    "+CREG": ("creg", parse_registration("+CREG")),
    "+CGREG": ("cgreg", parse_registration("+CGREG")),
    "+CEREG": ("cereg", parse_registration("+CEREG")),
    "+C5GREG": ("c5greg", parse_registration("+C5GREG")),
    "+QNWINFO": ("qnwinfo", parse_qnwinfo),
    "+QCAINFO": ("qcainfo", parse_qcainfo),
    "+QSPN": ("qspn", parse_qspn),
}
# Which record wins a field when one transcript holds several (most specific first).
PRIORITY = ("qeng-servingcell", "gstatus", "smoni", "rfsts", "cpsi", "gtccinfo", "ucged", "hcsq", "cesq", "csq",
            "qnwinfo", "qspn", "cops", "c5greg", "cereg",
            "cgreg", "creg", "sysinfoex")


@dataclass(frozen=True)
class AtRecord:
    type: str
    command: str | None
    final: str | None
    fields: dict
    sample: RadioSample | None

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "command": self.command, "final": self.final, "fields": self.fields,
                "sample": None if self.sample is None else self.sample.to_json()}


def _error_code(final: str | None) -> int | None:
    m = re.match(r"^\+CM[ES] ERROR:\s*(\d+)", final or "", re.I)
    return integer(m.group(1)) if m else None


def parse_records(text: str) -> tuple[list[AtRecord], list[str], list[str]]:
    """All recognised replies in `text` -> (records, urcs, unparsed lines)."""
    records: list[AtRecord] = []
    urcs: list[str] = []
    unparsed: list[str] = []
    for chunk in split_chunks(text):
        groups: dict[str, list[str]] = {}
        order: list[str] = []
        gstatus: list[str] | None = None
        for raw in chunk.lines:
            s = raw.strip()
            m = PREFIX_RE.match(s)
            prefix = m.group(1).upper() if m else None
            if prefix in RECORDS:
                key = prefix
                if prefix == "+QENG":
                    first = _vals(m.group(2))[0].lower() if m.group(2) else ""  # type: ignore[union-attr]
                    key = "+QENG:neighbour" if first.startswith("neighbourcell") else "+QENG"
                if prefix in BLOCKS:
                    gstatus = [m.group(2)]  # type: ignore[union-attr]
                    groups[key] = gstatus
                else:
                    gstatus = None
                    groups.setdefault(key, []).append(m.group(2))  # type: ignore[union-attr]
                if key not in order:
                    order.append(key)
            elif gstatus is not None:
                gstatus.append(raw)          # a block's body lines carry no prefix
            elif s and (s.split(":")[0].strip().upper() in URC_PREFIXES or s.upper() in URC_PREFIXES):
                urcs.append(s)
            elif s:
                unparsed.append(s)
        for key in order:
            if key == "+QENG:neighbour":
                fields_, sample = parse_qeng_neighbour(groups[key])
                rtype = "qeng-neighbourcell"
            else:
                rtype, fn = RECORDS[key]
                fields_, sample = fn(groups[key])
            records.append(AtRecord(rtype, chunk.command, chunk.final, fields_, sample))
        if not order and chunk.final is not None and chunk.final.upper() != "OK":
            records.append(AtRecord("error", chunk.command, chunk.final, {"code": _error_code(chunk.final)}, None))
    return records, urcs, unparsed


def merged_sample(records: list[AtRecord]) -> RadioSample | None:
    """Latest record of each type, combined by PRIORITY (a repeated type replaces, never mixes)."""
    latest: dict[str, RadioSample | None] = {}
    for r in records:
        latest[r.type] = r.sample
    ordered = [latest[t] for t in PRIORITY if t in latest]
    return merge_samples(ordered)


def parse_sample(text: str) -> RadioSample | None:
    """Normalized sample of one reply (or poll round); None if the modem gave nothing usable."""
    records, _, _ = parse_records(text)
    return merged_sample(records)


def to_json(text: str) -> dict[str, Any]:
    records, urcs, unparsed = parse_records(text)
    if not records and not urcs and unparsed:
        raise ParseError("at: no recognised AT reply (" + ", ".join(sorted(RECORDS)) +
                         f") in input; first line: {unparsed[0]!r}")
    sample = merged_sample(records)
    return {"tool": "at", "responses": [r.to_json() for r in records], "urcs": urcs, "unparsed": unparsed,
            "sample": None if sample is None else sample.to_json()}


def sample_of(*record_types: str) -> Callable[[str], RadioSample | None]:
    """Parser for one command's reply that only looks at the given record types (so a URC of another
    type that slipped into the reply cannot fill fields); with no types, any record counts."""
    def parse(text: str) -> RadioSample | None:
        records, _, _ = parse_records(text)
        if record_types:
            records = [r for r in records if r.type in record_types]
        return merged_sample(records)
    parse.__name__ = "sample_of_" + "_".join(t.replace("-", "_") for t in record_types)
    return parse
