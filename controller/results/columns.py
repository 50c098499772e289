"""The data dictionary of `ctl runs export`: what each column of each table is, and its unit.
Pure data and one lookup.

A column is described per table (`flows.sender_mbps` is iperf3's sender rate over the flow's
own test; `connections.sender_mbps` is bytes acked over the traffic window: two quantities
under one name). `describe` resolves, for one scenario:

1. the scenario summary's own definition under `table.column` (e.g. `subflows.mbps`);
2. the summary's definition under the bare column name, where that name occurs in one table
   only of that summary (where it occurs in several, it cannot say which it defines);
3. `COLUMNS[(table, column)]`, a scenario's own entry before the generic one;
4. a nested column (`a.b.c`): `NESTED[(table, "a.b")]`, a mapping keyed by a link, host,
   algorithm or counter name (`{key}` in its text), or `STATS[(table, "a")]`, the statistics
   of a set of values (`n`, `mean`, `median`, `min`, `max`, `stdev`); a column `a.b.c` of an object
   per key: `NESTED_FIELDS[(table, "a")][c]` (`{key}`: b).

Units: the entry's own where it gives one, else the one the name spells (wire.unit_of).
"""
from __future__ import annotations

from typing import Mapping

from controller.results.summary import SENDER_COUNTERS

# (unit or None: the name's own, text)
Entry = tuple[str | None, str]
_WINDOW = " (a windowed summary: over its window, see window.*)"
_IPERF_RECV = "iperf3 receiver goodput: end.sum_received bits/s over the flow's own test"
_IPERF_SENT = ("iperf3's sender rate: end.sum_sent bits/s over the flow's own test (from its own start to its end, "
               "not the traffic window)")

# (table, column) -> Entry, or {scenario: Entry} (with "" for every other scenario)
COLUMNS: dict[tuple[str, str], Entry | dict[str, Entry]] = {
    # ---- flows: one iperf3 test each (controller/results/summary.py FlowThroughput), every scenario
    ("flows", "name"): (None, "the flow's name in the run's plan (e.g. mptcp, tcp, tcp-sbd1, x1, m0)"),
    ("flows", "protocol"): (None, "the flow's transport: tcp or mptcp"),
    ("flows", "link"): (None, "the link the flow is pinned to (empty: not pinned, e.g. an MPTCP flow on every path)"),
    ("flows", "receiver_mbps"): ("Mbit/s", _IPERF_RECV + "; windowed: bytes_received growth of the receiver's "
                                 "sockets over the window"),
    ("flows", "sender_mbps"): ("Mbit/s", _IPERF_SENT + "; windowed: bytes_acked growth of the sender's sockets over "
                               "the window. Not the Tables 2 and 3 rate: that is connections.sender_mbps"),
    ("flows", "bytes_received"): ("bytes", "bytes the iperf3 receiver got (end.sum_received.bytes)" + _WINDOW),
    ("flows", "seconds"): ("s", "length of the flow's iperf3 test (end.sum_received.seconds), or of the window"),
    ("flows", "retransmits"): ("segments", "segments the sender retransmitted (iperf3 end.sum_sent.retransmits; "
                                           "windowed: retrans_total growth of its sockets)"),
    ("flows", "congestion"): (None, "the sender's congestion control as iperf3 reports it "
                                    "(end.sender_tcp_congestion)"),
    ("flows", "error"): (None, "what went wrong with the flow (empty: nothing)"),
    # ---- connections (shared-bottleneck): the paper's Tables 2 and 3
    ("connections", "connection"): (None, "the connection: mptcp (the multipath one) or tcp (the single-path one)"),
    ("connections", "protocol"): (None, "the connection's transport: tcp or mptcp"),
    ("connections", "paths"): (None, "the links the connection uses (sbd1+sbd2: both)"),
    ("connections", "cc"): (None, "the connection's congestion control"),
    ("connections", "sender_mbps"): ("Mbit/s", "sender_bytes x 8 / the length of the traffic window: the "
                                     "connection's throughput at the sender (the paper's 'at the sender'), over the "
                                     "same time for both connections" + _WINDOW),
    ("connections", "sender_bytes"): ("bytes", "growth of bytes_acked of the connection's sockets at the sender "
                                      "(ss, 10 Hz), summed over an MPTCP connection's subflows, over the traffic "
                                      "window" + _WINDOW),
    ("connections", "receiver_mbps"): ("Mbit/s", _IPERF_RECV + " (the connection's flow's flows.receiver_mbps)"),
    ("connections", "bottleneck_share_pct"): ("%", "sender_mbps / the bottleneck's rate x 100"),
    ("connections", "retransmits"): ("segments", "segments the connection's sender retransmitted (iperf3 "
                                                 "end.sum_sent.retransmits)"),
    # ---- subflows: one socket of an MPTCP connection (results/summary.py subflow_throughput)
    ("subflows", "subflow"): (None, "the socket: local address:port -> remote address:port"),
    ("subflows", "link"): (None, "the link the subflow's packets cross"),
    ("subflows", "mbps"): ("Mbit/s", "the socket's own rate: growth of its byte counter x 8 from its first to its "
                                     "last sample in the window (a subflow that joins late is averaged over its "
                                     "own life)"),
    ("subflows", "bytes"): ("bytes", "growth of the socket's byte counter (ss: bytes_acked at a sender, "
                                     "bytes_received at a receiver) over the window"),
    ("subflows", "samples"): ("count", "ss samples of the socket in the window (10 Hz)"),
    ("subflows", "mptcp_token"): (None, "the MPTCP connection token the socket belongs to (empty: plain TCP)"),
    ("subflows", "initial"): (None, "true for the connection's first subflow (MP_CAPABLE), false for a joined one"),
    # ---- links (distinct-bottleneck): per bottleneck link
    ("links", "mptcp_subflow_mbps"): ("Mbit/s", "sum of subflows.mbps of the MPTCP subflows on the link"),
    ("links", "tcp_mbps"): ("Mbit/s", "receiver goodput of the single-path TCP flow on the link (flows."
                                      "receiver_mbps)"),
    ("links", "flows_total_mbps"): ("Mbit/s", "mptcp_subflow_mbps + tcp_mbps: what the flows got of the link"),
    ("links", "bridge_forward_mbps"): ("Mbit/s", "bits/s the link's bridge sent out of its b port (forward, "
                                                 "frames incl. headers) over the traffic window"),
    ("links", "capacity_mbps"): ("Mbit/s", "the link's shaped rate (--link1 / --link2)"),
    # ---- sender_counters: per sending host (results/summary.py sender_counters)
    ("sender_counters", "recorded"): (None, "whether both nstat readings (before and after the traffic) were "
                                            "recorded on the host"),
    ("sender_counters", "error"): (None, "why the host's counters could not be read (empty: they were)"),
    ("sender_counters", "mean_cwnd_at_hystart_train"): ("segments", "TcpExtTCPHystartTrainCwnd / "
                                                        "TcpExtTCPHystartTrainDetect: mean congestion window when "
                                                        "HyStart's ACK-train test ended slow start"),
    ("sender_counters", "mean_cwnd_at_hystart_delay"): ("segments", "TcpExtTCPHystartDelayCwnd / "
                                                        "TcpExtTCPHystartDelayDetect: mean congestion window when "
                                                        "HyStart's delay test ended slow start"),
    ("sender_counters", "hystart_not_counted"): (None, "why the HyStart counters are empty or partial: ctl's BPF "
                                                       "congestion controls are not counted by tcp_cubic.c"),
    ("sender_counters", "hystart_not_counted_for"): (None, "the host's BPF congestion controls the HyStart "
                                                           "counters do not count"),
    # ---- hosts (parallel-streams): x1 and m0, the paper's Fig. 8
    ("hosts", "host"): (None, "the host's role in the experiment: x1 (the base streams) or m0 (the added streams)"),
    ("hosts", "sender"): (None, "the inventory host that sent"),
    ("hosts", "receiver"): (None, "the inventory host that received"),
    ("hosts", "connections"): ("count", "parallel TCP connections the host opened (iperf3 -P)"),
    ("hosts", "role"): (None, "the host's part in the model: V_k (x1) or A_n (m0)"),
    ("hosts", "measured_mbps"): ("Mbit/s", "rx_bytes growth x 8 of the receiver's interface on the link (frames "
                                           "incl. headers, 10 Hz) over the overlap window, like the paper's sniffer"),
    ("hosts", "measured_share_pct"): ("%", "measured_mbps / the bottleneck's rate B x 100"),
    ("hosts", "predicted_mbps"): ("Mbit/s", "x1: IB = B*V_k/(V_k+A_n); m0: BNA = B*A_n/(V_k+A_n) (paper eq. 4 "
                                            "and 2)"),
    ("hosts", "predicted_share_pct"): ("%", "predicted_mbps / B x 100"),
    ("hosts", "error_pp"): ("percentage points", "(measured - predicted) / B x 100"),
    ("hosts", "error_rel_pct"): ("%", "(measured - predicted) / predicted x 100"),
    ("hosts", "goodput_whole_run_mbps"): ("Mbit/s", _IPERF_RECV + " (the host's whole test, not the overlap)"),
    ("hosts", "setup_s"): ("s", "from the client's spawn to its first data at the receiver (iperf3 connects its "
                                "streams one by one before sending; a lost SYN costs 1 s)"),
    # ---- paths, tests, protocols, downloads (mptcp-bittorrent)
    ("paths", "initial"): (None, "the initial path of the tests in the row: a local link, or global (to the "
                                 "router's outside address, forwarded to the seeder)"),
    ("paths", "mptcp_over_tcp"): ("1", "mptcp.median / tcp.median: MPTCP's median goodput over TCP's on this path"),
    ("tests", "name"): (None, "the test: <protocol>-<initial path>-<repetition>"),
    ("tests", "protocol"): (None, "the test's transport: tcp or mptcp"),
    ("tests", "initial"): (None, "the path of the test's first subflow: a local link, or global (to the router's "
                                 "outside address, forwarded to the seeder)"),
    ("tests", "repetition"): ("count", "the repetition's number (from 1)"),
    ("tests", "receiver_mbps"): ("Mbit/s", _IPERF_RECV),
    ("tests", "sender_mbps"): ("Mbit/s", _IPERF_SENT),
    ("tests", "error"): (None, "what went wrong with the test (empty: nothing)"),
    ("protocols", "complete"): ("count", "downloads of this protocol that completed: leecher exit 0 and the "
                                         "file's SHA-256 equal to the payload's"),
    ("protocols", "downloads"): ("count", "downloads of this protocol that were run"),
    ("protocols", "first_path"): (None, "every path the protocol's downloads' leecher listed its peer "
                                        "connection(s) on (downloads.first_path, together)"),
    ("downloads", "name"): (None, "the download: <protocol>-<repetition>"),
    ("downloads", "protocol"): (None, "the download's transport: tcp or mptcp"),
    ("downloads", "repetition"): ("count", "the repetition's number (from 1)"),
    ("downloads", "complete"): (None, "leecher exit 0 and the file's SHA-256 equals the payload's"),
    ("downloads", "download_s"): ("s", "controller time from the leecher's first output line to its 'torrent "
                                       "downloaded successfully' line (announce, metadata and data)"),
    ("downloads", "throughput_mbps"): ("Mbit/s", "payload bits / download_s (complete downloads only)"),
    ("downloads", "cli_seconds"): ("s", "the download time webtorrent-cli printed itself (whole seconds)"),
    ("downloads", "peer_types"): (None, "the kinds of peer connection the leecher listed (TCP, UTP, ...)"),
    ("downloads", "peer_addrs"): (None, "the peers' addresses the leecher listed (its own left out)"),
    ("downloads", "first_path"): (None, "path of the peer connection(s) the leecher listed (the seeder's local "
                                        "address, or global: the router's outside address)"),
    ("downloads", "sha256_ok"): (None, "the downloaded file's SHA-256 equals the payload's"),
    ("downloads", "error"): (None, "what went wrong with the download (empty: nothing)"),
    # ---- the field report (ctl field report): per modem host
    ("table1", "host"): (None, "the modem host"),
    ("table1", "workload"): (None, "the logger's workload: iperf3, torrent or idle"),
    ("table1", "seconds_logged"): ("s", "seconds the logger recorded a sample for"),
    ("table1", "seconds_spanned"): ("s", "seconds from the first to the last logged second"),
    ("table1", "seconds_not_logged"): ("s", "seconds inside the run when no logger ran (restart, reboot): "
                                            "recorded as gap events"),
    ("table1", "radio_samples"): ("count", "radio samples the modem gave"),
    ("table1", "radio_missing_s"): ("s", "logged seconds without a radio sample (modem silent or resetting): "
                                         "missing, not zero"),
    ("table1", "bandwidth_kbps"): ("kbit/s", "mean over the logged seconds of the uplink interface's receive "
                                             "rate (rx bytes of /proc/net/dev between consecutive seconds, x8)"),
    ("table1", "download_kbps"): ("kbit/s", "mean of the workload's per-second download rate (iperf3 -R interval "
                                            "bitrate, or webtorrent-cli's Speed), over the seconds it reported one"),
    ("table1", "rtt_ms"): ("ms", "mean over the logged seconds of the per-second mean ping RTT to the reference "
                                 "host (ping every 0.2 s); seconds without a reply do not count"),
    ("table1", "jitter_ms"): ("ms", "mean over the logged seconds of the per-second mean absolute difference "
                                    "between consecutive RTTs"),
    ("table1", "quality_metric"): (None, "the radio quality metric of quality_mean_db: CINR for WiMAX/WiBro, else "
                                         "SINR, else SNR"),
    ("table1", "quality_mean_db"): ("dB", "mean of the radio quality metric over the modem's samples"),
    ("table1", "quality_sd_db"): ("dB", "sample standard deviation (n-1) of the radio quality metric"),
    ("table1", "handovers"): ("count", "handovers detected over the run's radio series (cell or base station "
                                       "change, technology change, NR leg move, SINR/CINR collapse)"),
    ("download_percentiles", "host"): (None, "the modem host"),
    ("download_percentiles", "n"): ("count", "seconds with a download rate"),
    ("download_percentiles", "mean_kbps"): ("kbit/s", "mean per-second download rate"),
    # ---- what a field logger refused from its inputs (controller/field/stats.py refused_inputs), per host
    ("refused_inputs", "gps_reports_skipped"): ("count", "gpsd TPV reports the logger refused and skipped (a value "
                                                         "no gpsd sends, a position off the globe), summed over "
                                                         "the logged seconds (empty: the run has no GPS)"),
    ("refused_inputs", "radio_values_out_of_range"): ("count", "radio values the modem printed outside their "
                                                               "quantity's range (nodes/modem/ranges.py), "
                                                               "recorded as missing"),
    ("refused_inputs", "radio_samples_flagged"): ("count", "radio samples with at least one value out of range"),
    # ---- runs: numbers about a run as a whole
    ("runs", "invalid_reasons"): (None, "why the scenario judged the run invalid (empty: valid)"),
    # foreign traffic: connections not of the run acknowledged in its window (results/foreign.py)
    ("runs", "foreign_traffic.bytes"): ("bytes", "bytes acknowledged inside the window by senders' connections "
                                                 "that are not the run's (a previous run's still draining, or "
                                                 "not one of its data connections)"),
    ("runs", "foreign_traffic.own_bytes"): ("bytes", "bytes the run's own sender sockets had acknowledged inside "
                                                     "the window (the share's denominator)"),
    ("runs", "foreign_traffic.share_pct"): ("%", "foreign_traffic.bytes / foreign_traffic.own_bytes x 100 "
                                                 "(empty: the run had no bytes of its own)"),
    ("runs", "foreign_traffic.threshold_pct"): ("%", "share above which the foreign traffic made the run invalid "
                                                     "(foreign_traffic.limit_bytes / foreign_traffic.own_bytes x 100)"),
    ("runs", "foreign_traffic.limit_bytes"): ("bytes", "foreign bytes above which the run is invalid: the most that "
                                                       "can move a ratio of its flows or their Jain's index by a tenth "
                                                       "of the smallest recorded run-to-run CV (results/foreign.py)"),
    ("runs", "foreign_traffic.limit_basis"): (None, "which bound set limit_bytes: ratio (0.1 x 0.0215 x the smallest "
                                                    "flow's bytes) or jain (0.1 x 0.0031 / Jain's sensitivity)"),
    ("runs", "foreign_traffic.unseen"): (None, "what the check could not see: senders without socket samples, other "
                                               "ports and hosts on the same links, connections shorter than 0.1 s, UDP"),
    ("runs", "foreign_traffic.invalid"): (None, "whether the foreign traffic made the run invalid"),
    ("runs", "foreign_traffic.connections"): (None, "the foreign connections: host, socket, why, bytes, first "
                                                    "sample and last growth (s from the window's start)"),
    ("runs", "foreign_traffic.warning"): (None, "foreign traffic below the limit (the run stays valid)"),
    ("runs", "retransmits"): ("segments", "segments the sender retransmitted (iperf3 end.sum_sent.retransmits; "
                                          "windowed: retrans_total growth of its sockets)"),
    ("runs", "congestion"): (None, "the sender's congestion control as iperf3 reports it"),
    ("runs", "step"): (None, "which part of the experiment ran: iperf3 tests or bittorrent downloads"),
    ("runs", "case"): {"parallel-streams": (None, "the stream counts: SC<base streams>+SC<streams>"),
                       "": (None, "the case of the experiment")},
    ("runs", "table"): (None, "the paper's table the run is a cell of (Table 2: equal delays, Table 3: unequal)"),
    ("runs", "column"): (None, "the column of that table: the delay(s) of the run's case"),
    ("runs", "ratio_receiver"): ("1", "MPTCP receiver_mbps / TCP receiver_mbps (iperf3 receiver goodput, each "
                                      "over its own test)"),
    ("runs", "mptcp_mbps"): {"shared-bottleneck": ("Mbit/s", "the MPTCP connection's connections.sender_mbps"),
                             "mptcp-bittorrent": ("Mbit/s", "mean throughput_mbps of the MPTCP downloads")},
    ("runs", "tcp_mbps"): {"shared-bottleneck": ("Mbit/s", "the TCP connection's connections.sender_mbps"),
                           "mptcp-bittorrent": ("Mbit/s", "mean throughput_mbps of the TCP downloads")},
    ("runs", "mptcp_over_tcp"): ("1", "mptcp_mbps / tcp_mbps"),
    ("runs", "mptcp_better_on_every_path"): (None, "MPTCP's median goodput above TCP's on every initial path "
                                                   "(paths.mptcp_over_tcp > 1)"),
    ("runs", "sender_mbps"): {"rtt-loss-sweep": ("Mbit/s", _IPERF_SENT + "; windowed: bytes_acked growth of the "
                                                 "sender's sockets over the window")},
    ("runs", "jain_index"): ("1", "(sum x)^2 / (n sum x^2) over the flows' receiver goodput"),
    ("runs", "jain_over"): (None, "the flows Jain's index is over"),
    ("runs", "case.rtt"): (None, "the round-trip time added on the bottleneck (half in each direction), as "
                                 "`ctl report rtt-loss` spells it"),
    ("runs", "case.loss"): (None, "the random loss rate on the bottleneck, as `ctl report rtt-loss` spells it"),
    ("runs", "case.cc"): (None, "the congestion control, as `ctl report rtt-loss` groups runs"),
    ("runs", "overlap.start"): (None, "start of the overlap window (both hosts sending): m0's first data at its "
                                      "receiver + settle"),
    ("runs", "overlap.end"): (None, "end of the overlap window: m0's end or x1's, whichever is first"),
    ("runs", "overlap.seconds"): ("s", "length of the overlap window"),
    ("runs", "overlap.m0_data_start"): (None, "m0's first data at its receiver"),
    ("runs", "overlap.x1_data_start"): (None, "x1's first data at its receiver"),
    ("runs", "measured_total_mbps"): ("Mbit/s", "sum of hosts.measured_mbps"),
    ("runs", "x1_share_pct"): ("%", "x1's hosts.measured_share_pct"),
    ("runs", "m0_share_pct"): ("%", "m0's hosts.measured_share_pct"),
    ("runs", "x1_error_pp"): ("percentage points", "x1's hosts.error_pp"),
    ("runs", "m0_error_pp"): ("percentage points", "m0's hosts.error_pp"),
    ("runs", "m0_setup_s"): ("s", "m0's hosts.setup_s"),
    ("runs", "mptcp.flow"): (None, "the MPTCP flow the verdict is about"),
    ("runs", "mptcp.negotiated"): (None, "MPTCP was negotiated and no connection fell back to TCP (MPTcpExt "
                                         "counters)"),
    ("runs", "mptcp.all_subflows_carried_data"): (None, "every expected link carried at least the scenario's "
                                                        "minimum of the MPTCP connection's bytes"),
    ("runs", "mptcp.problems"): (None, "what is wrong with the MPTCP connection (empty: nothing)"),
    ("runs", "mptcp.monitor_connections"): ("count", "MPTCP connections `ip mptcp monitor` saw on the client"),
    ("runs", "mptcp.client_counters.negotiated"): (None, "an MP_CAPABLE handshake completed on the client "
                                                         "(MPTcpExt counters)"),
    ("runs", "mptcp.client_counters.fell_back"): (None, "a connection of the client fell back to TCP"),
    ("runs", "mptcp.client_counters.joins_completed"): ("count", "MP_JOIN subflows completed on the client"),
    ("runs", "mptcp.client_counters.errors"): (None, "the client's MPTcpExt error counters that grew"),
    ("runs", "mptcp.client_counters.MPCapableSYNTX"): ("count", "growth of MPTcpExtMPCapableSYNTX on the client: "
                                                                "MP_CAPABLE SYNs sent"),
    ("runs", "mptcp.client_counters.MPCapableSYNACKRX"): ("count", "growth of MPTcpExtMPCapableSYNACKRX on the "
                                                                   "client: MP_CAPABLE SYN-ACKs received"),
    ("runs", "forwarder"): (None, "the bottleneck forwarder's counters (empty: the shaper streams none)"),
    ("runs", "forwarder.kernel_drops"): ("packets", "frames of the data direction the kernel dropped before the "
                                                    "bottleneck forwarder read them (above 0: the forwarder, not "
                                                    "the path, was the limit)"),
    ("runs", "forwarder.late_mean_us"): ("us", "the bottleneck forwarder's mean lateness (departure minus due "
                                               "time) in the data direction"),
    ("runs", "diagnostics.bottleneck"): (None, "the bottleneck pipe's data direction over the overlap (empty: "
                                               "the shaper streams no pipe counters)"),
    ("runs", "diagnostics.bottleneck.arrived_pkts"): ("packets", "packets that arrived at the bottleneck pipe in "
                                                                 "the data direction over the overlap"),
    ("runs", "diagnostics.bottleneck.queue_drops_pkts"): ("packets", "of those, packets the full queue dropped"),
    ("runs", "diagnostics.bottleneck.drop_pct"): ("%", "queue_drops_pkts / arrived_pkts x 100"),
    ("runs", "diagnostics.bottleneck.queue_peak_pkts"): ("packets", "the queue's peak occupancy over the overlap"),
    ("runs", "window.start_s"): ("s", "start of the window the summary is over, from the traffic's start"),
    ("runs", "window.end_s"): ("s", "end of the window the summary is over, from the traffic's start"),
    ("runs", "window.traffic_s"): ("s", "length of the run's traffic window the window is part of"),
    ("runs", "window.of"): (None, "what the window's times count from (traffic: the traffic window's start)"),
    ("runs", "diagnostics.packets_per_connection"): ("packets", "(queue + bandwidth-delay product) / (V_k + A_n), "
                                                                "full-size packets"),
}

# (table, parent) -> Entry with {key}: the columns `parent.<key>` of a mapping keyed by a name
NESTED: dict[tuple[str, str], Entry | dict[str, Entry]] = {
    ("runs", "paper_column"): ("1", "the paper's MPTCP/TCP throughput ratio for {key} in this run's cell "
                                    "(paper_table)"),
    ("runs", "paper_shares_pct"): ("%", "the paper's measured share of {key} for this case (Fig. 8)"),
    ("runs", "mptcp.subflows_established_per_link"): ("count", "subflows of the MPTCP connection established on "
                                                               "link {key} (`ip mptcp monitor`)"),
    ("runs", "foreign_traffic.own_bytes_per_flow"): ("bytes", "bytes flow {key}'s own sender sockets had "
                                                             "acknowledged inside the window (the limit's x_i)"),
    ("runs", "mptcp.bytes_per_link"): ("bytes", "bytes the MPTCP connection's subflows on link {key} carried "
                                                "(sum of subflows.bytes)"),
    ("runs", "diagnostics.connections_alive"): ("count", "{key}'s connections that did not starve"),
    ("runs", "diagnostics.alive_model_share_pct"): ("%", "{key}'s share by the model over the connections that "
                                                         "did not starve (BNA/IB with V_k and A_n minus the "
                                                         "starved)"),
    ("sender_counters", "counters"): ("count", "growth of {key} (nstat -asz, host-wide, before to after the "
                                               "traffic): {what}"),
    ("paths", "mptcp_subflows_per_link"): ("count", "subflows on link {key} of the path's last MPTCP test (ss)"),
    ("tests", "subflows_per_link"): ("count", "subflows of the MPTCP test on link {key} (ss)"),
    ("protocols", "subflows_per_link"): ("count", "subflows on link {key} of the protocol's last MPTCP download"),
    ("downloads", "subflows_per_link"): ("count", "subflows of the MPTCP download on link {key} (ss)"),
    ("downloads", "received_mbps_per_link"): ("Mbit/s", "bytes_received x 8 of the leecher's sockets to the seeder "
                                                        "on link {key} (ss, 10 Hz), over the download"),
    ("table1", "handovers_by_kind"): ("count", "handovers of kind {key}"),
}
# (table, object) -> {field: Entry}: columns `object.<key>.<field>`, one object per key (an algorithm, a tool)
NESTED_FIELDS: dict[tuple[str, str], dict[str, Entry]] = {
    ("sender_counters", "own_hystart_exits"): {
        "program": (None, "{key}: the BPF program whose own HyStart counters these are"),
        "ack_train": ("count", "slow starts {key}'s own HyStart ended by its ACK-train test (the program's counter, "
                               "whole run); empty unless the count is this run's senders' alone (attribution)"),
        "delay": ("count", "slow starts {key}'s own HyStart ended by its delay test (the program's counter, whole "
                           "run); empty unless the count is this run's senders' alone (attribution)"),
        "hosts": (None, "the senders of this run whose connections {key}'s counts cover (one kernel, one program)"),
        "attribution": (None, "whose {key}'s HyStart counts are, or why none is given (controller/results/hystart.py)"),
        "other_holders": ("count", "other holders (runs) that held {key} while it counted: no per-sender number"),
    },
    ("refused_inputs", "unparsed_lines"): {
        "lines": ("count", "lines of {key}'s output the field logger did not understand (neither data nor a known "
                           "header or total), summed over the logged seconds"),
        "first": (None, "the first of those {key} lines (control characters removed, at most 160 characters)"),
    },
}
_PER_CONNECTION = {"connections": ("count", "connections with a receiver byte count"),
                   "starved": ("count", "connections that got under the starvation share of the host's mean"),
                   "jain": ("1", "Jain's index over the connections' receiver bytes"),
                   "bytes_min": ("bytes", "fewest receiver bytes of one connection"),
                   "bytes_median": ("bytes", "median receiver bytes of one connection"),
                   "bytes_max": ("bytes", "most receiver bytes of one connection")}

# (table, parent) -> (unit, what the values are): columns `parent.n|mean|median|min|max|stdev`
STATS: dict[tuple[str, str], tuple[str, str]] = {
    ("paths", "tcp"): ("Mbit/s", "the TCP tests' receiver_mbps on this initial path"),
    ("paths", "mptcp"): ("Mbit/s", "the MPTCP tests' receiver_mbps on this initial path"),
    ("protocols", "throughput_mbps"): ("Mbit/s", "the protocol's downloads' throughput_mbps"),
    ("protocols", "download_s"): ("s", "the protocol's complete downloads' download_s"),
}
_STAT_WORDS = {"n": "number of", "mean": "mean of", "median": "median of", "min": "least of", "max": "greatest of",
               "stdev": "sample standard deviation (n-1; 0 for one value) of"}
_PERCENTILE = "the {q}th percentile of the per-second download rates (linear interpolation between closest ranks)"


def _pick(e: Entry | dict[str, Entry] | None, scenario: str) -> Entry | None:
    if isinstance(e, dict):
        return e.get(scenario) or e.get("")
    return e


def describe(table: str, column: str, scenario: str, own: Mapping[str, str]) -> Entry | None:
    """(unit or None, definition) of `column` of `table` for a run of `scenario` (module doc);
    `own`: the definitions the scenario's summary gave that belong to this table's columns
    (`export.own_definitions`). None: nothing describes it."""
    if column in own:
        e = _pick(COLUMNS.get((table, column)), scenario)
        return (e[0] if e else None, own[column])
    e = _pick(COLUMNS.get((table, column)), scenario)
    if e is not None:
        return e
    parent, _, key = column.rpartition(".")
    if not parent:
        if table == "download_percentiles" and column.startswith("p") and column.endswith("_kbps"):
            return ("kbit/s", _PERCENTILE.format(q=column[1:-5]))
        return None
    if (table, parent) in STATS and key in _STAT_WORDS:
        unit, what = STATS[(table, parent)]
        return ("count" if key == "n" else unit, f"{_STAT_WORDS[key]} {what}")
    if (table, parent) == ("hosts", "per_connection") and key in _PER_CONNECTION:
        unit, text = _PER_CONNECTION[key]
        return (unit, f"{text} (iperf3 end.streams of the host's whole test)")
    e = _pick(NESTED.get((table, parent)), scenario)
    if e is not None:
        return (e[0], e[1].format(key=key, what=SENDER_COUNTERS.get(key, "a kernel counter")))
    obj, _, name = parent.rpartition(".")
    f = NESTED_FIELDS.get((table, obj), {}).get(key)
    if f is not None:
        return (f[0], f[1].format(key=name))
    return None
