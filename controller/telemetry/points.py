"""Measurement points and the one InfluxDB schema of ctl.

Schema (tags are strings; field names carry their unit):

| measurement | tags                                              | fields |
|-------------|---------------------------------------------------|--------|
| iface       | host, iface, link, side, role                     | rx_bytes, tx_bytes, rx_packets, tx_packets, rx_dropped, tx_dropped (counters); rx_bps, tx_bps (rates) |
| subflow     | host, flow, subflow, link, role                   | cwnd_pkts, rtt_ms, rttvar_ms, bytes_acked, bytes_sent, bytes_received, bytes_retrans, retrans_total, delivery_rate_bps; acked_bps, received_bps (rates); cc (the congestion control `ss` shows) |
| flow        | host, flow                                        | throughput_bps, bytes, retransmits, snd_cwnd_bytes, rtt_ms (iperf3 intervals) |
| pipe        | host, link, direction                             | tx_pkts, tx_bytes, drop_queue_pkts, drop_plr_pkts, queue_pkts, queue_bytes, ... |
| snmp_if     | host, ifname, ifindex                             | in_octets, out_octets, in_ucast_pkts, out_ucast_pkts, in_discards, in_errors, high_speed_mbps; in_bps, out_bps, in_pps, out_pps |
| mptcp_event | host, event, token                                | saddr, daddr, sport, dport, locid, remid (from `ip mptcp monitor`) |
| mptcp_conn  | host, flow, token, role                           | subflows_added, add_addr_signal, add_addr_accepted, fallback, remote_key (`ss -M` once a second, per MPTCP connection of a flow) |
| mptcp_counters | host                                           | every `MPTcpExt*` counter of `nstat` without its prefix (MPCapableSYNTX, MPJoinSynRx, ...): growth since the run's first sample |
| radio       | host, technology, cell                            | seq; rssi_dbm, rsrp_dbm, rsrq_db, sinr_db, cinr_db, snr_db, rscp_dbm, ecio_db, tx_power_dbm, bandwidth_mhz, ul_bandwidth_mhz (float); signal_quality_pct, cell_id_int, enb_id, local_cell_id, pci, tac, lac, arfcn, frequency_khz (int); cell_id, band, operator_name, mcc, mnc, registration, connection (str); nr_* = the EN-DC NR leg. Only when the modem answered: a silent modem is a missing point, never zeros (field tests) |
| field       | host, workload                                    | seq (one point per logged second), modem_ok, rtt_ms, rtt_min_ms, rtt_max_ms, jitter_ms, ping_replies, ping_lost, ping_errors, lat, lon, alt_m, speed_mps, track_deg, gps_mode, dl_bps, dl_bytes, peers_connected, peers_unchoked, peers_active, workload_running, ping_unparsed_lines, workload_unparsed_lines |
| handover    | host, kind                                        | before_time_s, after_time_s, before_/after_technology, before_/after_cell_id, before_/after_pci, before_/after_rsrp_dbm, metric, before_/after_metric_db, dip_start_s, dip_end_s, dip_duration_s, dip_min_db, gap_s, detected |
| field_event | host, event                                       | seq, detail; from_seq, to_seq, missing (gap, late, modem-back); outage_s (modem-back) |
| snmp_event  | host, kind, ifname, ifindex                       | message, counters (agent_unreachable, agent_restart, counter_wrap, discontinuity, ...) |
| campaign    | campaign                                          | runs_done, runs_failed, runs_total, eta_s |

Every point also carries the run's common tags: `campaign` (when in one), `run`, `scenario`.
Timestamps are nanoseconds since the epoch, taken on the host that measured, corrected by
the clock offset measured at run start. Field-test points (scenario "field") carry the modem
host's own clock, uncorrected: the logger runs without the controller; the offset measured at
`ctl field start` is in the run manifest. A field test's uplink uses the iface measurement
(host, iface).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping

from nodes.fieldlog.lineproto import line

FieldValue = int | float | bool | str


@dataclass(frozen=True, slots=True)
class Point:
    measurement: str
    tags: Mapping[str, str]
    fields: Mapping[str, FieldValue]
    time_ns: int

    def to_json(self) -> dict:
        return {"m": self.measurement, "t": self.time_ns, "tags": dict(self.tags), "f": dict(self.fields)}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Point":
        return cls(d["m"], d["tags"], d["f"], int(d["t"]))

    def with_tags(self, extra: Mapping[str, str]) -> "Point":
        return Point(self.measurement, {**extra, **self.tags}, self.fields, self.time_ns)

    def key(self) -> tuple:
        """Series identity + time: two points with the same key are the same point in InfluxDB."""
        return (self.measurement, tuple(sorted(self.tags.items())), self.time_ns)


def to_line(p: Point) -> str | None:
    """InfluxDB line protocol (tags sorted; empty tag values dropped, as InfluxDB requires)."""
    return line(p.measurement, p.tags, p.fields, p.time_ns)


def dumps(p: Point) -> str:
    return json.dumps(p.to_json(), separators=(",", ":"))
