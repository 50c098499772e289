"""Huawei AT dialect: ^HCSQ (signal per system mode, including NR and EN-DC) and ^SYSINFOEX.
Stdlib only (ships in the field logger).

^HCSQ: "<sysmode>",<value1>[,<value2>[,<value3>[,<value4>]]]   (sysmode quoted or not)

The layout per sysmode and each value's conversion are the table `HCSQ_LAYOUT`. Sources:
- GSM, WCDMA, LTE: ModemManager src/plugins/huawei/mm-broadband-modem-huawei.c
  (`huawei_hcsq_changed`, `get_rssi_dbm`, `get_ecio_db`, `get_rsrp_dbm`, `get_sinr_db`,
  `get_rsrq_db`, at commit 9a2d5863), itself from Huawei's LTE module AT manuals:
  RSSI -121 + v (v <= 96), RSCP -121 + v, Ec/Io -32.5 + v/2 (v <= 65), RSRP -141 + v (v <= 97),
  SINR -20.2 + v/5 (v <= 251), RSRQ -20 + v/2 (v <= 34); 255 = not known.
- NR (Huawei 5G modules, e.g. MT5700M / MH5000): "NR",<rsrp>,<sinr>,<rsrq> -- three values, in a
  different order from LTE (no RSSI) and on the LTE scales. ModemManager does not parse NR (its
  huawei plugin handles GSM/UMTS/LTE only); the layout and scales are those of the MT5700M AT
  manual as implemented in LianXia233/luci-app-mt5700m, root/usr/sbin/mt5700m-at `print_signal`
  (commit 123951ee), which states "NR=RSRP,SINR,RSRQ; LTE=RSSI,RSRP,SINR,RSRQ".
  Deciding between candidate scales by the line's own shape: real NR lines carry SINR indices such
  as 236 and 241, impossible on the 3GPP TS 38.133 SS-SINR scale (0..127) that some projects
  assume, and possible only on the 0..251, 0.2 dB scale; so the LTE scales apply, and an index
  outside them (NR RSRP > 97, say) gives no value rather than a guess. The raw indices are always
  kept in the fields.
- EN-DC: the modem reports the anchor and the NR leg as two ^HCSQ lines ("LTE" and "NR") in one
  reply; both are kept, the sample is "nr5g-nsa" with the NR leg in `secondary`. No "LTE+NR"
  sysmode is documented in the sources above: an unknown sysmode is kept raw, with no sample.
"""
from __future__ import annotations

import csv
import re
from typing import Any

from nodes.modem.radio import RadioSample, index_level, integer

UNKNOWN = 255
# conversion name -> (valid max index, scale, offset)
SCALES: dict[str, tuple[int, float, float]] = {
    "rssi_dbm": (96, 1.0, -121.0),
    "rscp_dbm": (96, 1.0, -121.0),
    "ecio_db": (65, 0.5, -32.5),
    "rsrp_dbm": (97, 1.0, -141.0),
    "sinr_db": (251, 0.2, -20.2),
    "rsrq_db": (34, 0.5, -20.0),
}
# sysmode -> (technology, the values in the order printed; None = printed but not used)
HCSQ_LAYOUT: dict[str, tuple[str, tuple[str | None, ...]]] = {
    "GSM": ("gsm", ("rssi_dbm",)),
    "WCDMA": ("umts", ("rssi_dbm", "rscp_dbm", "ecio_db")),
    "TD-SCDMA": ("umts", ("rssi_dbm", "rscp_dbm", "ecio_db")),
    "LTE": ("lte", ("rssi_dbm", "rsrp_dbm", "sinr_db", "rsrq_db")),
    "NR": ("nr5g", ("rsrp_dbm", "sinr_db", "rsrq_db")),
}


def _vals(payload: str) -> list[str]:
    return [v.strip() for v in next(csv.reader([payload.strip()], skipinitialspace=True), [])]


def _convert(name: str, raw: int | None) -> float | None:
    top, scale, offset = SCALES[name]
    v = index_level(raw, top, UNKNOWN, scale, offset)
    return None if v is None else round(v, 2)


def hcsq_line(payload: str) -> tuple[dict[str, Any], RadioSample | None]:
    """One ^HCSQ line -> (fields with the raw indices, sample or None)."""
    vals = _vals(payload)
    # Some firmwares prefix the report-config pair: ^HCSQ: 2,0,"LTE",... : skip leading numbers.
    # (one pass: the last field that is not a number bounds how many leading numbers may go)
    last_word = max((i for i, v in enumerate(vals) if not re.fullmatch(r"\d*", v)), default=-1)
    start = 0
    while start < len(vals) and start < last_word and re.fullmatch(r"\d+", vals[start]):
        start += 1
    vals = vals[start:]
    sysmode = vals[0].upper() if vals else ""
    raw = [integer(v) for v in vals[1:]]
    f: dict[str, Any] = {"sysmode": sysmode, "values": raw}
    if sysmode == "NOSERVICE":
        return f, RadioSample(registration="not-registered", source="at:^HCSQ")
    if sysmode not in HCSQ_LAYOUT:
        return f, None
    tech, layout = HCSQ_LAYOUT[sysmode]
    levels: dict[str, Any] = {}
    for name, v in zip(layout, raw):
        if name is not None:
            f[name.rsplit("_", 1)[0]] = v
            levels[name] = _convert(name, v)
    return f, RadioSample(technology=tech, source="at:^HCSQ", **levels)


def parse_hcsq(payloads: list[str]) -> tuple[dict, RadioSample | None]:
    """Every ^HCSQ line of a reply. The last line gives the sample, except that an "LTE" and an
    "NR" line together are EN-DC: the LTE line is the anchor, the NR line its secondary leg."""
    lines = [hcsq_line(p) for p in payloads]
    f = dict(lines[-1][0])
    if len(lines) > 1:
        f["lines"] = [x for x, _ in lines]
    latest = {x["sysmode"]: s for x, s in lines if s is not None}
    lte, nr = latest.get("LTE"), latest.get("NR")
    if lte is not None and nr is not None:
        kw = {k: getattr(lte, k) for k in lte.__dataclass_fields__}
        kw.update(technology="nr5g-nsa", secondary=(nr,))
        return f, RadioSample(**kw)
    return f, lines[-1][1]


SYSINFOEX_MODE = {1: "gsm", 2: "cdma", 3: "umts", 4: "umts", 5: "wimax", 6: "lte"}


def parse_sysinfoex(payloads: list[str]) -> tuple[dict, RadioSample | None]:
    vals = _vals(payloads[-1]) + [""] * 9
    names = ("srv_status", "srv_domain", "roam_status", "sim_state", "reserved", "sysmode", "sysmode_name",
             "submode", "submode_name")
    f = dict(zip(names, vals[:9]))
    srv, roam, mode = integer(f["srv_status"]), integer(f["roam_status"]), integer(f["sysmode"])
    if srv == 2:
        # roam_status 0 = home, 1 = roaming; other values (MM's test string has 5) say nothing either way.
        registration = {0: "home", 1: "roaming"}.get(roam, "registered")  # type: ignore[arg-type]
    elif srv in (1, 3):
        registration = "limited"
    elif srv == 0:
        registration = "not-registered"
    else:
        registration = None
    return f, RadioSample(technology=SYSINFOEX_MODE.get(mode) if srv != 0 else None,  # type: ignore[arg-type]
                          registration=registration, source="at:^SYSINFOEX")
