"""Vendor AT dialects as data: each reply's field layout per radio generation, and how each
field becomes a normalized value. Stdlib only (ships in the field logger).

Cinterion/Thales ^SMONI (AT^SMONI, "Cell Monitoring", Cinterion PLS8/ELS61/EXS82 AT command
manuals; the layouts and the note that the levels are printed directly in dBm/dB, with no
3GPP index conversion, as quoted in ModemManager's src/plugins/cinterion/
mm-modem-helpers-cinterion.c, `mm_cinterion_parse_smoni_query_response`):

    ^SMONI: 2G,ARFCN,BCCH,MCC,MNC,LAC,cell,C1,C2,NCC,BCC,GPRS,<more: state, or dedicated-channel fields>
    ^SMONI: 3G,UARFCN,PSC,EC/n0,RSCP,MCC,MNC,LAC,cell,SQual,SRxLev,<more>
    ^SMONI: 4G,EARFCN,Band,DL bandwidth,UL bandwidth,Mode,MCC,MNC,TAC,Global Cell ID,Physical Cell ID,
            Srxlev|TX_power,RSRP,RSRQ,Conn_state
    ^SMONI: 2G|3G|4G,SEARCH[,SEARCH]          (no cell: searching)

BCCH is the received level of the BCCH carrier in dBm (-110..-47), RSCP dBm, EC/n0 dB, RSRP dBm,
RSRQ dB. LAC, cell, TAC and the global cell id are hexadecimal. "-" / "--" mean no value.
"""
from __future__ import annotations

import re
from typing import Any

from nodes.modem.radio import (
    RadioSample, bounded, cell_identity, csv_fields, index_level, integer, lte_band, nr_band, number,
)

MISSING = ("-", "--", "---", "----", "")

# generation -> (technology, [(field name, kind)]) ; kind: num (float as printed), int, hex, text
SMONI_LAYOUT: dict[str, tuple[str, list[tuple[str, str]]]] = {
    "2G": ("gsm", [("arfcn", "int"), ("bcch_dbm", "num"), ("mcc", "text"), ("mnc", "text"), ("lac", "hex"),
                   ("cell", "hex"), ("c1", "int"), ("c2", "int"), ("ncc", "int"), ("bcc", "int"), ("gprs", "text")]),
    "3G": ("umts", [("uarfcn", "int"), ("psc", "int"), ("ecn0_db", "num"), ("rscp_dbm", "num"), ("mcc", "text"),
                    ("mnc", "text"), ("lac", "hex"), ("cell", "hex"), ("squal", "num"), ("srxlev", "num")]),
    "4G": ("lte", [("earfcn", "int"), ("band", "int"), ("dl_bandwidth_mhz", "num"), ("ul_bandwidth_mhz", "num"),
                   ("mode", "text"), ("mcc", "text"), ("mnc", "text"), ("tac", "hex"), ("cell", "hex"),
                   ("pci", "int"), ("srxlev_or_tx_power", "num"), ("rsrp_dbm", "num"), ("rsrq_db", "num"),
                   ("conn_state", "text")]),
}
CONN = {"CONN": "connected", "NOCONN": "idle", "LIMSRV": "idle"}


def _value(text: str, kind: str) -> Any:
    t = text.strip()
    if t in MISSING:
        return None
    if kind == "num":
        return number(t)
    if kind == "int":
        return integer(t)
    if kind == "hex":
        return t
    return t


def parse_smoni(payloads: list[str]) -> tuple[dict, RadioSample | None]:
    """The last ^SMONI line of a reply (the generation's layout applied; extra fields kept)."""
    vals = [v.strip() for v in payloads[-1].split(",")]
    gen = vals[0].upper() if vals else ""
    if gen not in SMONI_LAYOUT:
        return {"generation": gen or None, "raw": payloads[-1]}, None
    tech, layout = SMONI_LAYOUT[gen]
    if len(vals) > 1 and vals[1].upper() == "SEARCH":
        return {"generation": gen, "searching": True}, RadioSample(technology=tech, registration="searching",
                                                                   source="at:^SMONI")
    f: dict[str, Any] = {"generation": gen, "searching": False}
    for (name, kind), text in zip(layout, vals[1:]):
        f[name] = _value(text, kind)
    rest = vals[1 + len(layout):]
    if rest:
        f["more"] = rest                      # the state, or the dedicated-channel fields (kept as printed)
    state = (f.get("conn_state") or (rest[-1] if rest else "") or "").upper()
    area = f.get("tac") if gen == "4G" else f.get("lac")
    s = RadioSample(
        technology=tech, source="at:^SMONI",
        rssi_dbm=f.get("bcch_dbm") if gen == "2G" else None,
        rscp_dbm=f.get("rscp_dbm"), ecio_db=f.get("ecn0_db"),       # EC/n0 reported as Ec/Io, as ModemManager does
        rsrp_dbm=f.get("rsrp_dbm"), rsrq_db=f.get("rsrq_db"),
        mcc=f.get("mcc"), mnc=f.get("mnc"), pci=f.get("pci"),
        tac=integer(area, base=16) if gen == "4G" and area else None,
        lac=integer(area, base=16) if gen != "4G" and area else None,
        band=lte_band(f.get("band")) if gen == "4G" else None,
        arfcn=f.get("earfcn") or f.get("uarfcn") or f.get("arfcn"),
        bandwidth_mhz=f.get("dl_bandwidth_mhz"), ul_bandwidth_mhz=f.get("ul_bandwidth_mhz"),
        connection=CONN.get(state),
        registration="limited" if state == "LIMSRV" else "registered" if state in ("CONN", "NOCONN") else None,
        **cell_identity(f.get("cell"), base=16, technology=tech))
    return f, s


# ---------------------------------------------------------------------------------------------------------
# Shared pieces of the tables below: a field kind says how the printed text becomes a value. Every parser
# keeps the printed fields (raw strings) next to the converted ones, so a conversion can be redone.


def _num(text: str | None) -> float | None:
    return None if text is None or text.strip() in MISSING else number(text)


def _int(text: str | None, base: int = 10) -> int | None:
    if text is None or text.strip() in MISSING:
        return None
    t = text.strip()
    if base == 16 and t.lower().startswith("0x"):
        t = t[2:]
    return integer(t, base=base)


def _tenths_or_units(text: str | None, units_limit: float) -> float | None:
    """A level some firmwares print in tenths (-1126 = -112.6 dBm) and others in units: decided by
    its magnitude (a value beyond what the quantity can be in units is tenths)."""
    v = _num(text)
    if v is None or v >= 0:
        return None                        # not a level in dBm / dB (an index, or nothing)
    return round(v / 10.0, 1) if abs(v) > units_limit else v


def _named(names: tuple[str, ...], vals: list[str]) -> dict[str, str]:
    return {n: v for n, v in zip(names, vals)}


# ---------------------------------------------------------------------------------------------------------
# Telit #RFSTS ("Read current network status"). Layouts per RAT, as documented in the Telit AT
# command reference guides (LE910Cx, LM940/LM960 "#RFSTS") and as RooterSource reads them
# (ofmodemsandmen/RooterSource package/rooter/ext-rooter-basic/files/usr/lib/rooter/common/telitdata.sh
# @7704d24b: EARFCN field 2, RSRP 3, RSSI 4, RSRQ 5, band 16, SINR value/5 - 20):
#   LTE:   <PLMN>,<EARFCN>,<RSRP>,<RSSI>,<RSRQ>,<TAC>,<RAC>,[<TXPWR>],<DRX>,<MM>,<RRC>,<CID>,<IMSI>,
#          <NetNameAsc>,<SD>,<ABND>[,<SINR>]
#   WCDMA: <PLMN>,<UARFCN>,<PSC>,<Ec/Io>,<RSCP>,<RSSI>,<LAC>,<RAC>,<TXPWR>,<DRX>,<MM>,<RR>,<NOM>,<BLER>,
#          <CID>,<IMSI>,<NetNameAsc>,<SD>,<nAST>[,...]
#   GSM:   <PLMN>,<ARFCN>,<RSSI>,<LAC>,<RAC>,<TXPWR>,<MM>,<RR>,<NOM>,<CID>,<IMSI>,<NetNameAsc>,<SD>,<ABND>
# Levels are printed in dBm / dB; LAC, TAC and CID in hexadecimal; PLMN as "MCC MNC".
# Deciding by the line's own shape: the RAT is not printed, but the third field is a PSC (a plain
# non-negative number) only in WCDMA, and the fourth a LAC (hex, not negative) only in GSM. The fields
# between <TAC> and <DRX> vary by firmware (RAC and TXPWR both, RAC only, or RAC with TXPWR empty):
# the fields after them are placed from the IMSI, the second quoted field (CID just before it, then
# RRC, MM and DRX; the operator name, SD, band and SINR after it).
RFSTS_FRONT = {"lte": ("plmn", "earfcn", "rsrp", "rssi", "rsrq", "tac"),
               "umts": ("plmn", "uarfcn", "psc", "ecio", "rscp", "rssi", "lac", "rac", "txpwr", "drx", "mm", "rr",
                        "nom", "bler"),
               "gsm": ("plmn", "arfcn", "rssi", "lac", "rac", "txpwr", "mm", "rr", "nom")}
RFSTS_BEFORE_IMSI = {"lte": ("drx", "mm", "rrc", "cid"), "umts": ("cid",), "gsm": ("cid",)}
RFSTS_AFTER_IMSI = {"lte": ("operator", "sd", "band", "sinr"), "umts": ("operator", "sd", "n_ast"),
                    "gsm": ("operator", "sd", "band")}


def _rfsts_rat(vals: list[str]) -> str:
    third = vals[2] if len(vals) > 2 else ""
    if third.isdigit():
        return "umts"
    fourth = vals[3] if len(vals) > 3 else ""
    return "lte" if fourth.startswith("-") else "gsm"


def parse_rfsts(payloads: list[str]) -> tuple[dict, RadioSample | None]:
    cells = csv_fields(payloads[-1])
    vals = [v for v, _ in cells]
    rat = _rfsts_rat(vals)
    quoted = [i for i, (_v, q) in enumerate(cells) if q]
    imsi = quoted[1] if len(quoted) > 1 and quoted[0] == 0 else (quoted[0] if quoted and quoted[0] > 0 else None)
    front = RFSTS_FRONT[rat]
    f: dict[str, Any] = {"rat": rat, **_named(front, vals)}
    if imsi is not None:
        before = RFSTS_BEFORE_IMSI[rat]
        f.update(_named(before, vals[imsi - len(before):imsi]))
        f["imsi"] = vals[imsi]
        f.update(_named(RFSTS_AFTER_IMSI[rat], vals[imsi + 1:]))
        middle = vals[len(front):imsi - len(before)]
        if rat == "lte":
            f.update(_named(("rac", "txpwr"), middle))
        elif middle:
            f["more"] = middle
    plmn = (f.get("plmn") or "").split()
    sinr_raw = _num(f.get("sinr"))
    ident = _int(f.get("cid"), 16)
    s = RadioSample(
        technology=rat, source="at:#RFSTS",
        mcc=plmn[0] if len(plmn) == 2 else None, mnc=plmn[1] if len(plmn) == 2 else None,
        rsrp_dbm=_num(f.get("rsrp")), rsrq_db=_num(f.get("rsrq")), rssi_dbm=_num(f.get("rssi")),
        rscp_dbm=_num(f.get("rscp")), ecio_db=_num(f.get("ecio")),
        sinr_db=None if sinr_raw is None or not 0 <= sinr_raw <= 250 else round(sinr_raw / 5.0 - 20.0, 1),
        arfcn=_int(f.get("earfcn") or f.get("uarfcn") or f.get("arfcn")),
        band=lte_band(_int(f.get("band"))) if rat == "lte" else None,
        tac=_int(f.get("tac"), 16), lac=_int(f.get("lac"), 16),
        **cell_identity(f.get("cid") if ident is not None else None, base=16, technology=rat))
    return f, s


# ---------------------------------------------------------------------------------------------------------
# SIMCom +CPSI ("Inquiring UE system information"), per system mode. LTE layout from the SIM7500/SIM7600
# Series AT Command Manual V1.08, AT+CPSI (quoted with a real line in ROS message definitions and
# in RooterSource simcomdata.sh @e6871a58); the 5G layouts from RooterSource simcomdata.sh
# (SIM8200/SIM8262: NR5G_SA with MCC-MNC, TAC, cell, PCI, band, ARFCN, RSRP, RSRQ, SINR in tenths;
# NR5G_NSA with PCI[, band], ARFCN, RSRP, RSRQ, SINR in tenths):
#   LTE|CAT-M1|CAT-NB: Online,<MCC>-<MNC>,<TAC>,<SCellID>,<PCellID>,<Band>,<EARFCN>,<dlbw>,<ulbw>,<RSRQ>,
#                      <RSRP>,<RSSI>,<RSSNR>
#   NR5G_SA:  Online,<MCC>-<MNC>,<TAC>,<SCellID>,<PCellID>,<Band>,<ARFCN>,<RSRP>,<RSRQ>,<SINR>
#   NR5G_NSA: <PCellID>,[<Band>,]<ARFCN>,<RSRP>,<RSRQ>,<SINR>[,...]
#   GSM:      Online,<MCC>-<MNC>,<LAC>,<CellID>,<ARFCN band>,<RxLev>,<TrackLOAdjust>,<C1-C2>
#   WCDMA:    Online,<MCC>-<MNC>,<LAC>,<CellID>,<Band>,<PSC>,<Freq>,<SSC>,<EC/IO>,<RSCP>,<Qual>,<RxLev>,<TXPWR>
# Conversions: LTE RSRQ/RSRP/RSSI are tenths of dB/dBm on current firmware (-1126 = -112.6 dBm) but some
# print whole units: decided per value by magnitude (an RSRP/RSSI beyond -200 or an RSRQ beyond -30
# can only be tenths); positive numbers are not levels and give nothing. RSSNR: SINR = 2 * RSSNR - 20
# (the manual, RooterSource), index 0..25. NR levels: tenths. SCellID is decimal, TAC hexadecimal (0x..).
CPSI_LAYOUT: dict[str, tuple[str, tuple[str, ...]]] = {
    "LTE": ("lte", ("op_mode", "plmn", "tac", "cell", "pci", "band", "earfcn", "dl_bw", "ul_bw", "rsrq", "rsrp",
                    "rssi", "rssnr")),
    "CAT-M1": ("lte-m", ("op_mode", "plmn", "tac", "cell", "pci", "band", "earfcn", "dl_bw", "ul_bw", "rsrq",
                         "rsrp", "rssi", "rssnr")),
    "NR5G_SA": ("nr5g-sa", ("op_mode", "plmn", "tac", "cell", "pci", "band", "arfcn", "nr_rsrp", "nr_rsrq",
                            "nr_sinr")),
    "GSM": ("gsm", ("op_mode", "plmn", "lac", "cell", "arfcn_band", "rxlev", "track_lo", "c1_c2")),
    "WCDMA": ("umts", ("op_mode", "plmn", "lac", "cell", "band", "psc", "uarfcn", "ssc", "ecio", "rscp", "qual",
                       "rxlev", "txpwr")),
}
CPSI_ALIASES = {"CAT-M": "CAT-M1", "EMTC": "CAT-M1", "CAT-NB": "LTE", "NB-IOT": "LTE"}
LTE_BW_INDEX = {0: 1.4, 1: 3.0, 2: 5.0, 3: 10.0, 4: 15.0, 5: 20.0}


def _band_number(text: str | None) -> int | None:
    m = re.search(r"([0-9]+)\s*$", text or "")
    return integer(m.group(1)) if m else None


def _cpsi_nsa(vals: list[str]) -> tuple[dict, RadioSample]:
    has_band = len(vals) > 2 and not vals[1].lstrip("-").isdigit()
    names = ("pci", "band", "arfcn", "nr_rsrp", "nr_rsrq", "nr_sinr") if has_band else \
        ("pci", "arfcn", "nr_rsrp", "nr_rsrq", "nr_sinr")
    f = _named(names, vals)
    if len(vals) > len(names):
        f["more"] = vals[len(names):]          # type: ignore[assignment]
    s = RadioSample(technology="nr5g", pci=_int(f.get("pci")), arfcn=_int(f.get("arfcn")),
                    band=nr_band(_band_number(f.get("band"))) if has_band else None,
                    rsrp_dbm=_tenths(f.get("nr_rsrp")), rsrq_db=_tenths(f.get("nr_rsrq")),
                    sinr_db=_tenths(f.get("nr_sinr")))
    return f, s


def _tenths(text: str | None) -> float | None:
    v = _num(text)
    return None if v is None else round(v / 10.0, 1)


def _cpsi_line(payload: str) -> tuple[dict, RadioSample | None]:
    vals = [v for v, _ in csv_fields(payload)]
    mode = vals[0].upper() if vals else ""
    mode = CPSI_ALIASES.get(mode, mode)
    if mode == "NR5G_NSA":
        f, s = _cpsi_nsa(vals[1:])
        return {"mode": mode, **f}, s
    if mode.startswith("NO SERVICE"):
        return {"mode": mode, "values": vals[1:]}, RadioSample(registration="searching", source="at:+CPSI")
    if mode not in CPSI_LAYOUT:
        return {"mode": mode, "values": vals[1:]}, None
    tech, names = CPSI_LAYOUT[mode]
    f: dict[str, Any] = {"mode": mode, **_named(names, vals[1:])}
    if len(vals) - 1 > len(names):
        f["more"] = vals[1 + len(names):]
    mcc, _, mnc = (f.get("plmn") or "").partition("-")
    rssnr = _num(f.get("rssnr"))
    band_n = _band_number(f.get("band"))
    online = (f.get("op_mode") or "").lower() == "online"
    s = RadioSample(
        technology=tech, source="at:+CPSI", registration="registered" if online else None,
        mcc=mcc.strip() or None, mnc=mnc.strip() or None,
        tac=_int(f.get("tac"), 16), lac=_int(f.get("lac"), 16), pci=_int(f.get("pci")),
        arfcn=_int(f.get("earfcn") or f.get("arfcn") or f.get("uarfcn")),
        band=(nr_band(band_n) if tech == "nr5g-sa" else lte_band(band_n)) if tech in ("lte", "lte-m", "nr5g-sa")
        else None,
        bandwidth_mhz=LTE_BW_INDEX.get(_int(f.get("dl_bw"))),  # type: ignore[arg-type]
        ul_bandwidth_mhz=LTE_BW_INDEX.get(_int(f.get("ul_bw"))),  # type: ignore[arg-type]
        rsrq_db=_tenths_or_units(f.get("rsrq"), 30) if "rsrq" in f else _tenths(f.get("nr_rsrq")),
        rsrp_dbm=_tenths_or_units(f.get("rsrp"), 200) if "rsrp" in f else _tenths(f.get("nr_rsrp")),
        rssi_dbm=_tenths_or_units(f.get("rssi"), 200) if "rssi" in f else _tenths_or_units(f.get("rxlev"), 200),
        sinr_db=(2.0 * rssnr - 20.0 if rssnr is not None and 0 <= rssnr <= 25 else None) if "rssnr" in f
        else _tenths(f.get("nr_sinr")),
        rscp_dbm=_tenths_or_units(f.get("rscp"), 200), ecio_db=_tenths_or_units(f.get("ecio"), 30),
        **cell_identity(f.get("cell"), base=10, technology=tech))          # SCellID / CellID: decimal
    return f, s


def parse_cpsi(payloads: list[str]) -> tuple[dict, RadioSample | None]:
    """Every +CPSI line of a reply; an LTE line with an NR5G_NSA line is EN-DC (the NR leg secondary)."""
    lines = [_cpsi_line(p) for p in payloads]
    f = dict(lines[-1][0])
    if len(lines) > 1:
        f["lines"] = [x for x, _ in lines]
    anchor = next((s for x, s in lines if x["mode"] in ("LTE", "CAT-M1") and s is not None), None)
    nr = next((s for x, s in lines if x["mode"] == "NR5G_NSA" and s is not None), None)
    if anchor is not None and nr is not None:
        kw = {k: getattr(anchor, k) for k in anchor.__dataclass_fields__}
        kw.update(technology="nr5g-nsa", secondary=(nr,))
        return f, RadioSample(**kw)
    s = lines[-1][1]
    if s is not None and s.technology == "nr5g":     # an NSA leg reported without its anchor line
        return f, RadioSample(technology="nr5g-nsa", secondary=(s,), source="at:+CPSI")
    return f, s


# ---------------------------------------------------------------------------------------------------------
# Fibocom +GTCCINFO (FM150/FM160/FM350, L850/L860): a block, "+GTCCINFO:" then a title line per cell
# kind ("LTE service cell:", "NR neighbor cell:", ...) and one row per cell:
#   <type>,<rat>,<MCC>,<MNC>,<TAC>,<CellID>,<ARFCN>,<PCI>,<band>,<bandwidth>,<SINR>,<RxLev>,<RSRP>,<RSRQ>
# type 1 = serving, 2 = neighbour; rat 4 = LTE, 9 = NR; TAC, CellID, ARFCN and PCI hexadecimal.
# Conversions as RooterSource's fibocomdata.sh reads them (@009afec3, `decode_signal` and the SINR and
# band decoding): LTE RSRP -141 + v, RSRQ v/2 - 20, SINR v/2; NR RSRP -157 + v, RSRQ v/2 - 43,
# SINR (v - 47)/2 (the TS 38.133 SS-RSRP/RSRQ/SINR index scales); 255 = not known. Band: LTE 1xx ->
# B(xx), NR 50xx -> n(xx). LTE bandwidth in resource blocks (MHz = RB / 5; 6 RB = 1.4 MHz).
GTCCINFO_ROW = ("type", "rat", "mcc", "mnc", "tac", "cell", "arfcn", "pci", "band", "bandwidth", "sinr", "rxlev",
                "rsrp", "rsrq")
# rat -> (technology, RSRP (max, scale, offset), RSRQ, SINR)
GTCCINFO_SCALES: dict[str, tuple[str, tuple[int, float, float], tuple[int, float, float], tuple[int, float, float]]] = {
    "4": ("lte", (97, 1.0, -141.0), (34, 0.5, -20.0), (254, 0.5, 0.0)),
    "9": ("nr5g", (127, 1.0, -157.0), (127, 0.5, -43.0), (127, 0.5, -23.5)),
}


def _gtcc_band(rat: str, text: str | None) -> str | None:
    v = _int(text)
    if v is None:
        return None
    if rat == "4":
        return lte_band(v - 100 if 100 < v < 300 else v)
    return nr_band(v - 5000 if v >= 5000 else v - 500 if v >= 500 else v)


def _gtcc_row(vals: list[str]) -> tuple[dict, RadioSample | None]:
    f: dict[str, Any] = _named(GTCCINFO_ROW, vals)
    rat = f.get("rat", "")
    if rat not in GTCCINFO_SCALES:
        return f, None
    tech, rsrp, rsrq, sinr = GTCCINFO_SCALES[rat]

    def level(name: str, scale: tuple[int, float, float]) -> float | None:
        v = index_level(_int(f.get(name)), scale[0], 255, scale[1], scale[2])
        return None if v is None else round(v, 1)

    rb = _int(f.get("bandwidth"))
    bw = (1.4 if rb == 6 else rb / 5.0) if rat == "4" and rb else (float(bounded(rb)) if rb else None)
    s = RadioSample(technology=tech, source="at:+GTCCINFO", mcc=f.get("mcc") or None, mnc=f.get("mnc") or None,
                    tac=_int(f.get("tac"), 16), arfcn=_int(f.get("arfcn"), 16), pci=_int(f.get("pci"), 16),
                    band=_gtcc_band(rat, f.get("band")), bandwidth_mhz=bw,
                    rsrp_dbm=level("rsrp", rsrp), rsrq_db=level("rsrq", rsrq), sinr_db=level("sinr", sinr),
                    **cell_identity(f.get("cell") or None, base=16, technology=tech))
    return f, s


def parse_gtccinfo(lines: list[str]) -> tuple[dict, RadioSample | None]:
    """The whole block (first element: the text after "+GTCCINFO:", then the body lines)."""
    rows, title = [], None
    for line in lines:
        t = line.strip()
        if not t:
            continue
        if t.endswith(":"):
            title = t[:-1]
            continue
        f, s = _gtcc_row([v for v, _ in csv_fields(t)])
        rows.append(({"title": title, **f}, s))
    serving = [(f, s) for f, s in rows if f.get("type") == "1" and s is not None]
    lte = next((s for f, s in serving if f["rat"] == "4"), None)
    nr = next((s for f, s in serving if f["rat"] == "9"), None)
    out = {"cells": [f for f, _ in rows]}
    if lte is not None and nr is not None:
        kw = {k: getattr(lte, k) for k in lte.__dataclass_fields__}
        kw.update(technology="nr5g-nsa", secondary=(nr,))
        return out, RadioSample(**kw)
    if nr is not None:
        kw = {k: getattr(nr, k) for k in nr.__dataclass_fields__}
        kw.update(technology="nr5g-sa")
        return out, RadioSample(**kw)
    return out, lte


# ---------------------------------------------------------------------------------------------------------
# u-blox +UCGED (AT+UCGED? after AT+UCGED=2): "+UCGED: 2", a RAT line, a serving-cell line. Two layouts,
# from u-blox's own host library ubxlib (u-blox/ubxlib cell/src/u_cell_info.c @07980f4d,
# getRadioParamsUcged2SaraR5 / getRadioParamsUcged2SaraR422, quoting the SARA-R5 and SARA-R422 AT
# manuals):
#   SARA-R5 (and TOBY/LARA): <rat>,<svc>,<MCC>,<MNC>
#     <earfcn>,<Lband>,<ul_BW>,<dl_BW>,<tac>,<LcellId>,<PCID>,<mTmsi>,<mmeGrId>,<mmeCode>,<rsrp>,<rsrq>,
#     <Lsinr>,<Lrrc>,<RI>,<CQI>,<avg_rsrp>,<totalPuschPwr>,<avgPucchPwr>,<drx>,<l2w>,<volte_mode>
#     [,<meas_gap>,<tti_bundling>]      -- RSRP, RSRQ as TS 36.133 indices, Lsinr in dB
#   SARA-R422: <rat>,<MCC>,<MNC>
#     <EARFCN>,<Lband>,<ul_BW>,<dl_BW>,<TAC>,<P-CID>,<RSRP_value>,<RSRQ_value>,<NBMsinr>,<esm_cause>,
#     <emm_state>,<tx_pwr>,<drx_cycle_len>,<tmsi>        -- RSRP dBm and RSRQ dB as printed
# Which one by the RAT line's shape: four fields (with <svc>) or three. RSRP index: -141 + v (0..97);
# RSRQ index: -20 + v/2 over the extended range -30..46 (TS 36.133 Table 9.1.7-1; ubxlib computes the
# upper bound (v - 39)/2); 255 = not known. <rat> 6 is LTE (ubxlib's examples); others are kept raw.
UCGED_R5 = ("earfcn", "band", "ul_bw", "dl_bw", "tac", "cell", "pci", "m_tmsi", "mme_group", "mme_code", "rsrp",
            "rsrq", "sinr", "rrc", "ri", "cqi", "avg_rsrp", "pusch_power", "pucch_power", "drx", "l2w", "volte_mode",
            "meas_gap", "tti_bundling")
UCGED_R422 = ("earfcn", "band", "ul_bw", "dl_bw", "tac", "pci", "rsrp", "rsrq", "nbm_sinr", "esm_cause",
              "emm_state", "tx_power", "drx", "tmsi")
UCGED_RAT = {"6": "lte"}


def parse_ucged(lines: list[str]) -> tuple[dict, RadioSample | None]:
    mode = lines[0].strip() if lines else ""
    body = [[v for v, _ in csv_fields(t.strip())] for t in lines[1:] if t.strip()]
    f: dict[str, Any] = {"mode": mode}
    if mode != "2" or len(body) < 2:
        f["lines"] = body
        return f, None
    head, cell = body[0], body[1]
    r5 = len(head) >= 4
    f.update(_named(("rat", "svc", "mcc", "mnc") if r5 else ("rat", "mcc", "mnc"), head))
    f["layout"] = "sara-r5" if r5 else "sara-r422"
    f.update(_named(UCGED_R5 if r5 else UCGED_R422, cell))
    tech = UCGED_RAT.get(f.get("rat", ""))
    if r5:
        rsrp = index_level(_int(f.get("rsrp")), 97, 255, 1.0, -141.0)
        rsrq_i = _int(f.get("rsrq"))
        rsrq = None if rsrq_i is None or rsrq_i == 255 or not -30 <= rsrq_i <= 46 else -20.0 + rsrq_i / 2.0
        sinr = _num(f.get("sinr"))
    else:
        rsrp, rsrq, sinr = _num(f.get("rsrp")), _num(f.get("rsrq")), None
    unset = ("fff", "ffff", "ffffff", "0000000", "65535")
    mcc, mnc = f.get("mcc"), f.get("mnc")
    s = RadioSample(technology=tech, source="at:+UCGED",
                    mcc=mcc if mcc and mcc.lower() not in unset else None,
                    mnc=mnc if mnc and mnc.lower() not in unset else None,
                    arfcn=None if f.get("earfcn") in unset else _int(f.get("earfcn")),
                    band=None if f.get("band") == "255" else lte_band(_int(f.get("band"))),
                    tac=None if (f.get("tac") or "").lower() in unset else _int(f.get("tac"), 16),
                    pci=None if f.get("pci") in ("65535", "254") else _int(f.get("pci")),
                    rsrp_dbm=rsrp, rsrq_db=rsrq, sinr_db=sinr,
                    **cell_identity(f.get("cell") if f.get("cell") and f["cell"] not in unset else None, base=16,
                                    technology=tech))
    return f, s
