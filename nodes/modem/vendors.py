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

from typing import Any

from nodes.modem.radio import RadioSample, cell_identity, integer, lte_band, number

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
