"""The field test's statistics (pure): per-host series from the points, the WiBro paper's
Table 1 row per host, download-rate percentiles, and the report built from them.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from dataclasses import field as dc_field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from controller.telemetry.points import Point
from controller.telemetry.spool import iter_points
from controller.textsafe import shown
from controller.timefmt import iso_utc
from nodes.modem.handover import HandoverEvent, detect_handovers
from nodes.modem.radio import RadioSample


PERCENTILES = (5, 25, 50, 75, 95)


QUALITY_METRICS = ("cinr_db", "sinr_db", "snr_db")


@dataclass
class HostSeries:
    host: str
    ticks: dict[int, tuple[int, dict[str, Any]]] = dc_field(default_factory=dict)    # seq -> (t ns, fields)
    radio: dict[int, tuple[int, dict[str, Any], dict[str, str]]] = dc_field(default_factory=dict)  # seq -> ...
    iface: dict[int, dict[str, Any]] = dc_field(default_factory=dict)                # t ns -> fields
    host_handovers: list[Point] = dc_field(default_factory=list)
    events: list[Point] = dc_field(default_factory=list)
    workload: str | None = None

    def radio_series(self) -> list[tuple[float, RadioSample | None]]:
        """(t s, sample) per logged second; None where the modem did not answer (a gap, not zeros)."""
        out: list[tuple[float, RadioSample | None]] = []
        for seq in sorted(self.ticks):
            t, _f = self.ticks[seq]
            r = self.radio.get(seq)
            out.append((t / 1e9, None if r is None else sample_from_point(r[1], r[2])))
        return out


def sample_from_point(f: Mapping[str, Any], tags: Mapping[str, str]) -> RadioSample:
    """A `radio` point back to a RadioSample (the fields handover detection compares)."""
    keys = ("rssi_dbm", "rsrp_dbm", "rsrq_db", "sinr_db", "cinr_db", "snr_db", "cell_id", "cell_id_int", "pci",
            "band", "arfcn", "tac")
    leg: tuple[RadioSample, ...] = ()
    if f.get("nr_pci") is not None or f.get("nr_technology"):
        leg = (RadioSample(technology=f.get("nr_technology") or "nr5g", pci=f.get("nr_pci"),
                           rsrp_dbm=f.get("nr_rsrp_dbm"), sinr_db=f.get("nr_sinr_db")),)
    return RadioSample(technology=tags.get("technology") or None, secondary=leg,
                       **{k: f.get(k) for k in keys})


def series_by_host(points: Iterable[Point]) -> dict[str, HostSeries]:
    out: dict[str, HostSeries] = {}
    for p in points:
        h = p.tags.get("host", "")
        s = out.setdefault(h, HostSeries(h))
        if p.measurement == "field":
            s.ticks[int(p.fields["seq"])] = (p.time_ns, dict(p.fields))
            s.workload = p.tags.get("workload") or s.workload
        elif p.measurement == "radio":
            s.radio[int(p.fields["seq"])] = (p.time_ns, dict(p.fields), dict(p.tags))
        elif p.measurement == "iface":
            s.iface[p.time_ns] = dict(p.fields)
        elif p.measurement == "handover":
            s.host_handovers.append(p)
        elif p.measurement == "field_event":
            s.events.append(p)
    return out


def mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def stdev(xs: Sequence[float]) -> float | None:
    return statistics.stdev(xs) if len(xs) >= 2 else None


def percentile(xs: Sequence[float], q: float) -> float | None:
    """Linear interpolation between closest ranks (numpy's default 'linear' method)."""
    if not xs:
        return None
    s = sorted(xs)
    pos = (len(s) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def _r(x: float | None, nd: int = 3) -> float | None:
    return None if x is None else round(x, nd)


def quality_metric(s: HostSeries) -> str | None:
    for m in QUALITY_METRICS:
        if any(r[1].get(m) is not None for r in s.radio.values()):
            return m
    return None


def table1_row(s: HostSeries, handovers: Sequence[HandoverEvent]) -> dict[str, Any]:
    fields = [f for _t, f in s.ticks.values()]
    rx = [f["rx_bps"] / 1e3 for f in s.iface.values() if f.get("rx_bps") is not None]
    dl = [f["dl_bps"] / 1e3 for f in fields if f.get("dl_bps") is not None]
    rtt = [f["rtt_ms"] for f in fields if f.get("rtt_ms") is not None]
    jit = [f["jitter_ms"] for f in fields if f.get("jitter_ms") is not None]
    metric = quality_metric(s)
    q = [r[1][metric] for r in s.radio.values() if metric and r[1].get(metric) is not None]
    seqs = sorted(s.ticks)
    span = (seqs[-1] - seqs[0] + 1) if seqs else 0
    kinds: dict[str, int] = {}
    for e in handovers:
        kinds[e.kind] = kinds.get(e.kind, 0) + 1
    return {
        "host": s.host, "workload": s.workload, "seconds_logged": len(seqs), "seconds_spanned": span,
        "seconds_not_logged": span - len(seqs), "radio_samples": len(s.radio),
        "radio_missing_s": sum(1 for seq in seqs if seq not in s.radio),
        "bandwidth_kbps": _r(mean(rx)), "download_kbps": _r(mean(dl)), "rtt_ms": _r(mean(rtt)),
        "jitter_ms": _r(mean(jit)), "quality_metric": metric, "quality_mean_db": _r(mean(q)),
        "quality_sd_db": _r(stdev(q)), "handovers": len(handovers), "handovers_by_kind": kinds,
    }


def refused_inputs(s: HostSeries) -> dict[str, Any]:
    """What the host's logger refused from its inputs (issue 23): counted, never passed off as values."""
    skipped = [f["gps_reports_skipped"] for _t, f in s.ticks.values() if f.get("gps_reports_skipped") is not None]
    flagged = [str(r[1]["out_of_range"]) for r in s.radio.values() if r[1].get("out_of_range")]
    return {"gps_reports_skipped": sum(int(x) for x in skipped) if skipped else None,
            "radio_values_out_of_range": sum(len(f.split(",")) for f in flagged),
            "radio_samples_flagged": len(flagged), "unparsed_lines": unparsed_lines(s)}


UNPARSED_KEEP = 5                     # the first lines kept per source (the logger sends at most 5 per start)
UNPARSED_CHARS = 160                  # each at most this long (the logger's bound, applied again: host data)
_TOOL_OF_WORKLOAD = {"iperf3": "iperf3", "torrent": "webtorrent"}


def unparsed_lines(s: HostSeries) -> dict[str, Any]:
    """Per source (ping, the workload's tool: iperf3 or webtorrent), the lines of its output the logger
    did not understand, summed over the logged seconds, and the first of them (nodes/fieldlog/parsers.py
    Unread: the `..._unparsed_lines` fields and `unparsed-line` events). A source the logger did not
    count (no such source, or a logger before this count) is absent."""
    out: dict[str, Any] = {}
    for key, tool in (("ping_unparsed_lines", "ping"),
                      ("workload_unparsed_lines", _TOOL_OF_WORKLOAD.get(s.workload or ""))):
        vals = [f[key] for _t, f in s.ticks.values() if isinstance(f.get(key), int) and not isinstance(f[key], bool)]
        if vals and tool is not None:
            out[tool] = {"lines": sum(max(0, v) for v in vals), "first": []}
    for p in sorted(s.events, key=lambda p: p.time_ns):
        src, detail = p.fields.get("source"), p.fields.get("detail")
        if p.tags.get("event") == "unparsed-line" and src in out and isinstance(detail, str) \
                and len(out[src]["first"]) < UNPARSED_KEEP:
            out[src]["first"].append(detail[:UNPARSED_CHARS])
    return out


def download_percentiles(s: HostSeries) -> dict[str, Any]:
    dl = [f["dl_bps"] / 1e3 for _t, f in s.ticks.values() if f.get("dl_bps") is not None]
    out: dict[str, Any] = {"host": s.host, "n": len(dl), "mean_kbps": _r(mean(dl))}
    for q in PERCENTILES:
        out[f"p{q}_kbps"] = _r(percentile(dl, q))
    return out


DEFINITIONS = {
    "bandwidth_kbps": "mean over the logged seconds of the uplink interface's receive rate (rx bytes of "
                      "/proc/net/dev between consecutive seconds, x8): what the modem link carried",
    "download_kbps": "mean of the workload's per-second download rate (iperf3 -R interval bitrate, or "
                     "webtorrent-cli's Speed), over the seconds it reported one",
    "rtt_ms": "mean over the logged seconds of the per-second mean ping RTT to the reference host "
              "(ping every 0.2 s); seconds without a reply do not count",
    "jitter_ms": "mean over the logged seconds of the per-second mean absolute difference between "
                 "consecutive RTTs (RFC 3550 style instantaneous delay variation of a round trip)",
    "quality_mean_db / quality_sd_db": "mean and sample standard deviation (n-1) of the radio quality "
                                       "metric over the samples the modem gave: CINR for WiMAX/WiBro, "
                                       "else SINR, else SNR (quality_metric says which)",
    "radio_missing_s": "logged seconds without a radio sample (modem silent or resetting): missing, not zero",
    "seconds_not_logged": "seconds inside the run when no logger ran (restart, reboot): recorded as gap events",
    "download percentiles": "per-second download rates, linear interpolation between closest ranks",
    "handovers": "nodes.modem.handover.detect_handovers over the whole run's radio series (cell / base "
                 "station change, technology change, NR leg move, SINR/CINR collapse with recovery)",
    "refused_inputs.gps_reports_skipped": "gpsd TPV reports the logger refused and skipped (a value no gpsd "
                                          "sends, a position off the globe), summed over the logged seconds "
                                          "(count; null: the run has no GPS)",
    "refused_inputs.radio_values_out_of_range": "radio values the modem printed outside their quantity's range "
                                                "(nodes/modem/ranges.py): recorded as missing, summed over the "
                                                "radio samples (count)",
    "refused_inputs.radio_samples_flagged": "radio samples with at least one such value (count)",
    "refused_inputs.unparsed_lines": "per source (ping, iperf3, webtorrent): `lines`, the lines of the tool's output "
                                     "the logger did not understand -- neither data nor one of the tool's known "
                                     "headers and summaries; its error messages among them -- summed over the "
                                     "logged seconds (count); `first`, the first few of them as printed (control "
                                     "characters removed, cut at 160 characters); the raw logs have every line. "
                                     "A source absent: not counted (no such source, or a logger before this count)",
}


def report_data(points: Sequence[Point]) -> dict[str, Any]:
    by_host = series_by_host(points)
    table, pct, handovers, refused = [], [], {}, {}
    for h in sorted(by_host):
        s = by_host[h]
        evs = detect_handovers(s.radio_series())
        handovers[h] = [e.to_json() for e in evs]
        table.append(table1_row(s, evs))
        pct.append(download_percentiles(s))
        refused[h] = refused_inputs(s)
    events = {h: [{"t_ns": p.time_ns, "event": p.tags.get("event"), **p.fields} for p in by_host[h].events]
              for h in sorted(by_host)}
    host_detected = {h: [{"t_ns": p.time_ns, "kind": p.tags.get("kind"), **p.fields}
                         for p in by_host[h].host_handovers] for h in sorted(by_host)}
    return {"table1": table, "download_percentiles": pct, "handovers": handovers,
            "host_detected_handovers": host_detected, "events": events, "refused_inputs": refused,
            "definitions": DEFINITIONS}


def render_report(summary: Mapping[str, Any]) -> str:
    lines = ["Table 1 (per host)",
             f"{'host':<10} {'seconds':>7} {'bandwidth':>10} {'download':>9} {'RTT':>8} {'jitter':>8} "
             f"{'quality dB (sd)':>22} {'handovers':>9} {'radio gaps':>10}",
             f"{'':<10} {'':>7} {'kbit/s':>10} {'kbit/s':>9} {'ms':>8} {'ms':>8} {'':>22} {'':>9} {'s':>10}"]

    def f(x: Any, nd: int = 1) -> str:
        return "-" if x is None else f"{x:.{nd}f}"
    for r in summary["table1"]:
        metric = (r["quality_metric"] or "-").replace("_db", "").upper()
        q = f"{metric} {f(r['quality_mean_db'])} ({f(r['quality_sd_db'], 2)})"
        lines.append(f"{r['host']:<10} {r['seconds_logged']:>7} {f(r['bandwidth_kbps']):>10} "
                     f"{f(r['download_kbps']):>9} {f(r['rtt_ms'], 2):>8} {f(r['jitter_ms'], 2):>8} {q:>22} "
                     f"{r['handovers']:>9} {r['radio_missing_s']:>10}")
    lines += ["", "Download rate percentiles (kbit/s)",
              f"{'host':<10} {'n':>6} " + " ".join(f"{'p' + str(q):>9}" for q in PERCENTILES) + f" {'mean':>9}"]
    for p in summary["download_percentiles"]:
        lines.append(f"{p['host']:<10} {p['n']:>6} " + " ".join(f"{f(p[f'p{q}_kbps']):>9}" for q in PERCENTILES)
                     + f" {f(p['mean_kbps']):>9}")
    refused = summary.get("refused_inputs") or {}
    if refused:
        lines += ["", "Inputs refused (counted, recorded as missing)"]
    for h, r in refused.items():
        gps = "no GPS" if r.get("gps_reports_skipped") is None else f"{r['gps_reports_skipped']} GPS reports skipped"
        lines.append(f"{h:<10} {gps}; {r.get('radio_values_out_of_range', 0)} radio values out of range "
                     f"in {r.get('radio_samples_flagged', 0)} samples")
        for tool, u in (r.get("unparsed_lines") or {}).items():
            lines.append(f"{'':<10} {u.get('lines', 0)} {tool} lines not understood"
                         + (": " + " | ".join(shown(x) for x in u.get("first") or []) if u.get("lines") else ""))
    for h, evs in summary["handovers"].items():
        lines += ["", f"Handovers on {h}: {len(evs)}"]
        for e in evs[:20]:
            lines.append(f"  {iso_utc(e['time'])}  {e['kind']:<18} "
                         f"{e['before_cell_id'] or '-'} -> {e['after_cell_id'] or '-'}  "
                         f"{e['metric'] or ''} {f(e['before_metric_db'])} -> {f(e['after_metric_db'])} dB")
        if len(evs) > 20:
            lines.append(f"  ... and {len(evs) - 20} more (summary.json)")
    return "\n".join(lines)


def load_points(path: Path) -> list[Point]:
    return list(iter_points(path)) if path.exists() else []
