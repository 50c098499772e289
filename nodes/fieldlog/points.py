"""Spool records the field logger writes (pure). Line format = controller.telemetry.points.Point.to_json.

Measurements (every point also carries the tags run, scenario="field", host):

| measurement | tags             | fields |
|-------------|------------------|--------|
| field       | workload         | seq (the second of the run; exactly one point per tick), modem_ok, rtt_ms, rtt_min_ms, rtt_max_ms, jitter_ms, ping_replies, ping_lost, ping_errors, lat, lon, alt_m, speed_mps, track_deg, gps_mode, gps_reports_skipped (runs with GPS: gpsd TPV reports refused since the last second -- a value no gpsd sends, a position off the globe; nodes/modem/gps.py), dl_bps, dl_bytes, peers_connected, peers_unchoked, peers_active, workload_running, ping_unparsed_lines and workload_unparsed_lines (lines of ping / of the workload's tool since the last second that were neither data nor one of the tool's known other lines; written every second the source exists; nodes/fieldlog/parsers.py Unread) |
| radio       | technology, cell | seq, rssi_dbm, rsrp_dbm, rsrq_db, sinr_db, cinr_db, snr_db, rscp_dbm, ecio_db, tx_power_dbm, signal_quality_pct, cell_id, cell_id_int, enb_id, local_cell_id, pci, tac, lac, band, arfcn, frequency_khz, bandwidth_mhz, ul_bandwidth_mhz, operator_name, mcc, mnc, registration, connection, nr_* (the EN-DC NR leg); out_of_range (only when the modem printed a value its quantity cannot take: the fields refused, comma-separated, nr_ for the NR leg; nodes/modem/ranges.py); read_from, daemon_recent, same_values_s (what the point can be vouched for: logger.Provenance) -- only when the modem answered: a silent modem is a missing point, never zeros |
| iface       | iface            | rx_bytes, tx_bytes, rx_packets, tx_packets, rx_dropped, tx_dropped, rx_bps, tx_bps (the uplink) |
| handover    | kind             | before_/after_ time_s, technology, cell_id, pci, rsrp_dbm, metric_db; metric, dip_start_s, dip_end_s, dip_duration_s, dip_min_db, gap_s, detected ("host") |
| field_event | event            | seq, detail, and per event: source and n (unparsed-line: the first few lines a source did not understand, per logger start, as `detail`, control characters removed, at most 160 characters; n: its number among that source's), from_seq/to_seq/missing (gap, late), outage_s (modem-back), exit_status (workload-exit), path/from_path (modem-found, modem-moved, modem-enabled, modem-not-enabled: where the modem is now / was) |

Field types are fixed per name (InfluxDB refuses a field whose type changes within a shard): every
value is coerced to the type listed in the tables below before it is written.
"""
from __future__ import annotations

import json
from typing import Any, Dict, Mapping, Optional

FLOAT_FIELDS = {"rssi_dbm", "rsrp_dbm", "rsrq_db", "sinr_db", "cinr_db", "snr_db", "rscp_dbm", "ecio_db",
                "tx_power_dbm", "bandwidth_mhz", "ul_bandwidth_mhz"}
INT_FIELDS = {"signal_quality_pct", "cell_id_int", "enb_id", "local_cell_id", "pci", "tac", "lac", "arfcn",
              "frequency_khz"}
STR_FIELDS = {"cell_id", "band", "operator_name", "mcc", "mnc", "registration", "connection"}
LEG_FIELDS = ("rsrp_dbm", "rsrq_db", "sinr_db", "snr_db", "rssi_dbm", "pci", "arfcn", "band", "bandwidth_mhz",
              "cell_id")


def record(measurement: str, tags: Mapping[str, str], fields: Mapping[str, Any], t_ns: int) -> Dict[str, Any]:
    """A spool record; None fields are left out (missing stays missing)."""
    return {"m": measurement, "t": int(t_ns), "tags": {k: str(v) for k, v in tags.items() if v is not None},
            "f": {k: v for k, v in fields.items() if v is not None}}


def dumps(rec: Mapping[str, Any]) -> str:
    return json.dumps(rec, separators=(",", ":"))


def _typed(name: str, v: Any) -> Any:
    if v is None:
        return None
    if name in FLOAT_FIELDS:
        return float(v)
    if name in INT_FIELDS:
        return int(v)
    if name in STR_FIELDS:
        return str(v)
    return v


def out_of_range(sample: Any) -> str:
    """The sample's refused fields (nodes/modem/ranges.py), its NR leg's as nr_<name>, comma-separated."""
    names = list(getattr(sample, "out_of_range", ()))
    for leg in getattr(sample, "secondary", ())[:1]:
        names += ["nr_" + n for n in getattr(leg, "out_of_range", ())]
    return ",".join(names)


def radio_record(sample: Any, t_ns: int, seq: int, base: Mapping[str, str]) -> Optional[Dict[str, Any]]:
    """RadioSample -> `radio` record (None for no sample: the gap is the absence of the point). A sample
    whose only values were out of range still gives a point: its `out_of_range` says what was refused."""
    refused = out_of_range(sample) if sample is not None else ""
    if sample is None or (sample.is_empty() and not refused):
        return None
    fields: Dict[str, Any] = {"seq": seq}
    for name in sorted(FLOAT_FIELDS | INT_FIELDS | STR_FIELDS):
        fields[name] = _typed(name, getattr(sample, name, None))
    leg = sample.secondary[0] if sample.secondary else None
    if leg is not None:
        for name in LEG_FIELDS:
            fields["nr_" + name] = _typed(name, getattr(leg, name, None))
        fields["nr_technology"] = leg.technology
    fields["out_of_range"] = refused or None
    key = sample.cell_key()
    tags = dict(base, technology=sample.technology or "", cell="" if key is None else str(key))
    return record("radio", tags, fields, t_ns)


UNPARSED_SOURCES = ("ping", "workload")
GPS_FIELDS = (("lat", "lat"), ("lon", "lon"), ("alt_m", "alt_m"), ("speed_mps", "speed_mps"),
              ("track_deg", "track_deg"))


def field_record(seq: int, t_ns: int, base: Mapping[str, str], workload: str, *, modem_ok: Optional[bool],
                 ping: Mapping[str, Any], gps: Any, work: Mapping[str, Any],
                 gps_reports_skipped: Optional[int] = None,
                 unparsed: Optional[Mapping[str, int]] = None) -> Dict[str, Any]:
    """The per-tick heartbeat: always written, so `seq` shows every second the logger ran.
    `gps_reports_skipped`: gpsd reports refused since the previous tick (None: the run has no GPS).
    `unparsed`: lines not understood since the previous tick, per source ("ping", "workload"; a source
    the run does not have is left out)."""
    fields: Dict[str, Any] = {"seq": seq, "modem_ok": modem_ok}
    if gps_reports_skipped is not None:
        fields["gps_reports_skipped"] = int(gps_reports_skipped)
    for src, n in (unparsed or {}).items():
        if src in UNPARSED_SOURCES:
            fields[src + "_unparsed_lines"] = int(n)
    for k in ("rtt_ms", "rtt_min_ms", "rtt_max_ms", "jitter_ms"):
        if ping.get(k) is not None:
            fields[k] = float(ping[k])
    for k in ("ping_replies", "ping_lost", "ping_errors"):
        if ping.get(k) is not None:
            fields[k] = int(ping[k])
    if gps is not None:
        fields["gps_mode"] = int(gps.mode)
        for src, dst in GPS_FIELDS:
            v = getattr(gps, src, None)
            if v is not None:
                fields[dst] = float(v)
    for k in ("dl_bps",):
        if work.get(k) is not None:
            fields[k] = float(work[k])
    for k in ("dl_bytes", "peers_connected", "peers_unchoked", "peers_active"):
        if work.get(k) is not None:
            fields[k] = int(work[k])
    if work.get("running") is not None:
        fields["workload_running"] = bool(work["running"])
    return record("field", dict(base, workload=workload), fields, t_ns)


def iface_record(iface: str, t_ns: int, base: Mapping[str, str], counters: Mapping[str, int],
                 rates: Mapping[str, float]) -> Dict[str, Any]:
    fields: Dict[str, Any] = {k: int(v) for k, v in counters.items()}
    fields.update({k: float(v) for k, v in rates.items()})
    return record("iface", dict(base, iface=iface), fields, t_ns)


def event_record(event: str, t_ns: int, base: Mapping[str, str], **fields: Any) -> Dict[str, Any]:
    return record("field_event", dict(base, event=event), fields, t_ns)


def handover_record(ev: Any, t_ns: int, base: Mapping[str, str]) -> Dict[str, Any]:
    """nodes.modem.handover.HandoverEvent -> `handover` record at the event's own time."""
    d = ev.to_json()
    fields: Dict[str, Any] = {"detected": "host"}
    for k in ("before_time", "after_time", "dip_start", "dip_end"):
        if d.get(k) is not None:
            fields[k + "_s"] = float(d[k])
    for k in ("before_technology", "after_technology", "before_cell_id", "after_cell_id", "metric"):
        if d.get(k) is not None:
            fields[k] = str(d[k])
    for k in ("before_pci", "after_pci"):
        if d.get(k) is not None:
            fields[k] = int(d[k])
    for k in ("before_rsrp_dbm", "after_rsrp_dbm", "before_metric_db", "after_metric_db", "dip_duration_s",
              "dip_min_db", "gap_s"):
        if d.get(k) is not None:
            fields[k] = float(d[k])
    return record("handover", dict(base, kind=ev.kind), fields, t_ns)
