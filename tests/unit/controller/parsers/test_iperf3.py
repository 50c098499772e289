"""iperf3 --json parser, checked field by field against the recorded real output."""
from __future__ import annotations

import json

import pytest

from controller.errors import ParseError, TrafficError
from controller.parsers import parse as registry_parse
from controller.parsers import iperf3
from tests.support.fixture_blocks import fenced_block, fenced_blocks, read_recorded

MD = "03_iperf3_json.md"


def gen(name: str) -> str:
    return read_recorded(f"generated/{name}")


def load(name: str) -> iperf3.Iperf3Result:
    return iperf3.parse(gen(name))


# ---------------------------------------------------------------------------- TCP, one stream


def test_tcp_1stream_client_start_and_intervals():
    r = load("iperf3_tcp_1stream.client.json")
    assert r.version == "iperf 3.12"
    assert r.system_info == "Linux vm 6.18.44-fc-v769 #1 SMP PREEMPT_DYNAMIC @0 x86_64"
    assert r.role == "client"
    assert r.time == "Sun, 22 Nov 2026 02:22:09 GMT"
    assert r.timesecs == 1795314129
    assert r.connected == (iperf3.Connection(socket=5, local_host="10.1.1.1", local_port=55784,
                                             remote_host="10.1.1.2", remote_port=5201),)
    assert r.connecting_to == iperf3.HostPort("10.1.1.2", 5201)
    assert r.accepted_connection is None
    assert r.cookie == "icu4szkjc6ypn367on4io2376f6hxw6wyy46"
    assert (r.tcp_mss_default, r.sock_bufsize, r.sndbuf_actual, r.rcvbuf_actual) == (1448, 0, 16384, 131072)
    assert (r.target_bitrate, r.timemillisecs, r.start_extra, r.extra) == (0, None, {}, {})
    assert (r.protocol, r.num_streams, r.duration, r.reverse) == ("TCP", 1, 5.0, False)
    ts = r.test_start
    assert (ts.blksize, ts.omit, ts.bytes, ts.blocks, ts.tos, ts.target_bitrate, ts.bidir) == (
        131072, 0.0, 0, 0, 0, 0, False)
    assert r.duplicate_keys == ()
    assert len(r.intervals) == 5
    first = r.intervals[0].streams[0]
    assert first == iperf3.IntervalSample(
        socket=5, start=0.0, end=1.000166, seconds=1.0001660585403442, bytes=3098720,
        bits_per_second=24785644.13211393, retransmits=225, snd_cwnd=14480, snd_wnd=3159040,
        rtt_us=5058, rttvar_us=695, pmtu=1500, omitted=False, sender=True, packets=None,
        jitter_ms=None, lost_packets=None, lost_percent=None, extra={})
    total = r.intervals[0].sum
    assert (total.socket, total.bytes, total.retransmits, total.rtt_us) == (None, 3098720, 225, None)
    last = r.intervals[4].streams[0]
    assert (last.start, last.end, last.snd_cwnd, last.rtt_us, last.rttvar_us) == (4.000118, 5.00016, 17376, 5164, 820)


def test_tcp_1stream_client_end():
    r = load("iperf3_tcp_1stream.client.json")
    end = r.end
    assert end.sum_sent.bytes == 12546920
    assert end.sum_sent.bits_per_second == 20074429.618252214
    assert end.sum_sent.retransmits == 225
    assert (end.sum_received.bytes, end.sum_received.seconds, end.sum_received.end) == (11876496, 5.004845, 5.004845)
    assert end.sum_received.retransmits is None
    assert end.sum is None
    (stream,) = end.streams
    assert (stream.sender.max_snd_cwnd, stream.sender.max_snd_wnd) == (23168, 5522432)
    assert (stream.sender.max_rtt_us, stream.sender.min_rtt_us, stream.sender.mean_rtt_us) == (5436, 4698, 5035)
    assert (stream.receiver.bytes, stream.receiver.end, stream.receiver.seconds) == (11876496, 5.004845, 5.00016)
    assert stream.udp is None
    assert end.cpu_utilization_percent == iperf3.CpuUtilization(
        host_total=0.0712649488428044, host_user=0.0, host_system=0.0712449530659125,
        remote_total=3.3557682605555215, remote_user=0.55214497152259456, remote_system=2.8036232890329269)
    assert (end.sender_tcp_congestion, end.receiver_tcp_congestion) == ("bbr", "bbr")
    assert r.error is None and r.failure is None and r.ok
    assert iperf3.receiver_throughput_bps(r) == 18983998.105835445
    assert iperf3.sender_throughput_bps(r) == 20074429.618252214


def test_tcp_1stream_server_sees_the_same_receiver_numbers_but_no_sender_numbers():
    s = load("iperf3_tcp_1stream.server.json")
    c = load("iperf3_tcp_1stream.client.json")
    assert s.role == "server"
    assert s.accepted_connection == iperf3.HostPort("10.1.1.1", 55782)   # the control connection
    assert s.connected[0].local_port == 5201 and s.connected[0].remote_port == 55784
    first = s.intervals[0].streams[0]
    assert (first.bytes, first.sender, first.retransmits, first.rtt_us) == (2393544, False, None, None)
    # the server only measured receiving: its sum_sent is all zeros, not a measurement
    assert (s.end.sum_sent.bytes, s.end.sum_sent.bits_per_second) == (0, 0.0)
    assert s.end.sender_tcp_congestion is None and s.end.receiver_tcp_congestion == "bbr"
    assert iperf3.receiver_throughput_bps(s) == iperf3.receiver_throughput_bps(c) == 18983998.105835445
    with pytest.raises(TrafficError, match="no sender measurement"):
        iperf3.sender_throughput_bps(s)


def test_md_sample_equals_generated_file():
    assert iperf3.parse(fenced_block(MD, "TCP, 1 stream")) == load("iperf3_tcp_1stream.client.json")
    assert iperf3.parse(fenced_block(MD, "MPTCP via")) == load("iperf3_mptcp.client.json")
    assert iperf3.parse(fenced_block(MD, "UDP, `iperf3")) == load("iperf3_udp_5M.client.json")
    assert iperf3.parse(fenced_block(MD, "2 parallel streams")) == load("iperf3_tcp_P2.client.json")


# ---------------------------------------------------------------------------- -P 2 and the duplicate keys


def test_parallel_streams_and_duplicated_start_keys_are_all_kept():
    for text in (gen("iperf3_tcp_P2.client.json"), fenced_block(MD, "2 parallel streams")):
        r = iperf3.parse(text)
        assert r.num_streams == 2
        assert [(c.socket, c.local_port) for c in r.connected] == [(5, 59674), (7, 59690)]
        assert r.duplicate_keys == (
            iperf3.DuplicateKey(path="start", key="sock_bufsize", values=(0, 0)),
            iperf3.DuplicateKey(path="start", key="sndbuf_actual", values=(16384, 16384)),
            iperf3.DuplicateKey(path="start", key="rcvbuf_actual", values=(131072, 131072)),
        )
        assert (r.sock_bufsize, r.sndbuf_actual, r.rcvbuf_actual) == (0, 16384, 131072)
        assert len(r.intervals) == 4
        iv = r.intervals[0]
        assert [s.retransmits for s in iv.streams] == [595, 272]
        assert iv.sum.retransmits == 867 == sum(s.retransmits for s in iv.streams)
        assert iv.sum.bytes == 2632464 == sum(s.bytes for s in iv.streams)
        assert [s.sender.retransmits for s in r.end.streams] == [607, 280]
        assert r.end.sum_sent.retransmits == 887
        assert [s.receiver.bytes for s in r.end.streams] == [4743816, 4847904]
        assert r.end.sum_received.bytes == 9591720
        assert iperf3.receiver_throughput_bps(r) == 19132361.378210522


def test_parallel_server_has_no_duplicates_and_its_own_socket_numbers():
    r = load("iperf3_tcp_P2.server.json")
    assert r.duplicate_keys == ()
    assert [(c.socket, c.remote_port) for c in r.connected] == [(5, 59674), (8, 59690)]
    assert iperf3.receiver_throughput_bps(r) == 19132361.378210522


def test_duplicates_visible_in_to_json():
    out = registry_parse("iperf3", gen("iperf3_tcp_P2.client.json"))
    assert {"path": "start", "key": "sndbuf_actual", "values": [16384, 16384]} in json.loads(json.dumps(out))[
        "duplicate_keys"]


# ---------------------------------------------------------------------------- UDP


def test_udp_client():
    r = load("iperf3_udp_5M.client.json")
    assert (r.protocol, r.test_start.blksize, r.test_start.target_bitrate) == ("UDP", 1448, 5000000)
    assert r.tcp_mss_default is None
    assert r.duplicate_keys == ()
    s = r.intervals[0].streams[0]
    assert (s.bytes, s.packets, s.sender, s.jitter_ms, s.retransmits) == (625536, 432, True, None, None)
    assert r.intervals[2].sum.bits_per_second == 5004288.0
    udp = r.end.streams[0].udp
    assert (udp.bytes, udp.packets, udp.out_of_order, udp.jitter_ms) == (1875160, 1295, 0, 0.00709039901599817)
    assert (r.end.sum.packets, r.end.sum.lost_packets, r.end.sum.lost_percent) == (1295, 0, 0.0)
    assert r.end.sum_sent.jitter_ms == 0.0            # sender-side placeholder, not a measurement
    assert (r.end.sum_received.jitter_ms, r.end.sum_received.sender) == (0.00709039901599817, False)
    assert r.end.sender_tcp_congestion is None
    assert iperf3.receiver_throughput_bps(r) == 5000159.99146712
    assert iperf3.sender_throughput_bps(r) == 5000254.9912453


def test_udp_server_quirks():
    r = load("iperf3_udp_5M.server.json")
    # iperf 3.12's UDP server writes start.target_bitrate twice (not only with -P)
    assert r.duplicate_keys == (iperf3.DuplicateKey("start", "target_bitrate", (5000000, 5000000)),)
    s = r.intervals[0].streams[0]
    assert (s.jitter_ms, s.lost_packets, s.lost_percent, s.sender) == (0.017598203447247749, 0, 0.0, False)
    # the per-stream udp record and end.sum say 0 bytes on the server; only sum_received has them
    assert r.end.streams[0].udp.bytes == 0 and r.end.sum.bytes == 0
    assert (r.end.sum_received.bytes, r.end.sum_received.packets) == (1875160, 1295)
    assert iperf3.receiver_throughput_bps(r) == 5000159.99146712


# ---------------------------------------------------------------------------- reverse, MPTCP, 3.9


def test_reverse_client_and_server():
    c = load("iperf3_tcp_reverse.client.json")
    assert c.reverse is True
    assert c.intervals[0].streams[0].sender is False
    assert c.intervals[0].streams[0].retransmits is None
    snd = c.end.streams[0].sender
    # the client did not send: the server's sender record arrives without tcp_info details
    assert (snd.retransmits, snd.max_snd_cwnd, snd.max_rtt_us, snd.sender) == (96, 0, 0, False)
    assert iperf3.receiver_throughput_bps(c) == 19136531.982772212
    assert iperf3.sender_throughput_bps(c) == 21205297.580597315

    s = load("iperf3_tcp_reverse.server.json")
    assert s.reverse is True and s.role == "server"
    assert (s.intervals[0].streams[0].retransmits, s.intervals[0].streams[0].snd_cwnd) == (96, 17376)
    assert s.end.streams[0].sender.max_snd_cwnd == 20272
    assert s.end.sum_received.bytes == 0
    assert iperf3.sender_throughput_bps(s) == 21205297.580597315
    with pytest.raises(TrafficError, match="reverse"):
        iperf3.receiver_throughput_bps(s)


def test_mptcp_run_under_mptcpize():
    c = load("iperf3_mptcp.client.json")
    assert c.connected[0].local_port == 34488 and c.connected[0].remote_port == 5210
    assert c.duration == 8.0 and len(c.intervals) == 8
    assert c.intervals[3].streams[0].rtt_us == 41297
    assert c.end.streams[0].sender.max_rtt_us == 41297
    assert c.end.sum_sent.retransmits == 621
    assert iperf3.receiver_throughput_bps(c) == 24610881.683190767
    s = load("iperf3_mptcp.server.json")
    # accepted_connection is the control connection (34478); the data stream is 34488
    assert s.accepted_connection == iperf3.HostPort("10.1.1.1", 34478)
    assert s.connected[0].remote_port == 34488
    assert iperf3.receiver_throughput_bps(s) == iperf3.receiver_throughput_bps(c)


def test_iperf_3_9_real_sample():
    r = iperf3.parse(fenced_block(MD, "iperf 3.9 client JSON"))
    assert r.version == "iperf 3.9"
    assert r.timesecs == 1629371741
    assert r.tcp_mss_default == 1428
    ts = r.test_start
    assert (ts.duration, ts.bytes, ts.target_bitrate) == (0.0, 10240, None)
    s = r.intervals[0].streams[0]
    assert (s.snd_wnd, s.snd_cwnd, s.rtt_us, s.pmtu) == (None, 14280, 194883, 1480)
    assert r.end.streams[0].sender.max_snd_wnd is None
    assert (r.end.sum_sent.bytes, r.end.sum_received.bytes) == (265608, 14280)
    assert r.end.sender_tcp_congestion == "cubic"
    assert iperf3.receiver_throughput_bps(r) == 267428.250386254


# ---------------------------------------------------------------------------- errors


def test_error_json_is_a_result_not_an_exception():
    for text in (gen("iperf3_error_conn_refused.client.json"), fenced_block(MD, "Exit status / errors")):
        r = iperf3.parse(text)
        assert r.error == "unable to connect to server: Connection refused"
        assert r.version == "iperf 3.12"
        assert (r.connected, r.intervals, r.end, r.role, r.test_start) == ((), (), None, None, None)
        assert r.failure == "unable to connect to server: Connection refused" and not r.ok
        with pytest.raises(TrafficError, match="Connection refused"):
            iperf3.receiver_throughput_bps(r)
        with pytest.raises(TrafficError, match="Connection refused"):
            iperf3.sender_throughput_bps(r)
    out = registry_parse("iperf3", gen("iperf3_error_conn_refused.client.json"))
    assert out["error"] == out["failure"] == "unable to connect to server: Connection refused"
    assert out["end"] is None


def test_empty_end_without_error_key_is_still_a_failure():
    doc = json.loads(gen("iperf3_tcp_1stream.client.json"))
    doc["end"] = {}
    r = iperf3.parse(json.dumps(doc))
    assert r.error is None and r.failure == "iperf3 wrote no end-of-test summary"
    with pytest.raises(TrafficError):
        iperf3.receiver_throughput_bps(r)


def test_newer_keys_are_kept_not_dropped():
    doc = json.loads(gen("iperf3_tcp_1stream.client.json"))
    doc["start"]["timestamp"]["timemillisecs"] = 1795314129123
    doc["start"]["target_bitrate_new"] = 1
    doc["start"]["test_start"]["gso"] = 0
    doc["intervals"][0]["streams"][0]["reorder"] = 3
    doc["end"]["streams"][0]["sender"]["reorder"] = 7
    doc["extra_data"] = "x"
    r = iperf3.parse(json.dumps(doc))
    assert r.start_extra == {"target_bitrate_new": 1}
    assert r.timemillisecs == 1795314129123
    assert r.test_start.extra == {"gso": 0}
    assert r.intervals[0].streams[0].extra == {"reorder": 3}
    assert r.end.streams[0].sender.extra == {"reorder": 7}
    assert r.extra == {"extra_data": "x"}


def test_bidir_refuses_a_single_throughput_number():
    doc = json.loads(gen("iperf3_tcp_1stream.client.json"))
    doc["start"]["test_start"]["bidir"] = 1
    with pytest.raises(TrafficError, match="bidir"):
        iperf3.receiver_throughput_bps(iperf3.parse(json.dumps(doc)))


def test_server_output_json_is_parsed_too():
    doc = json.loads(gen("iperf3_tcp_1stream.client.json"))
    doc["server_output_json"] = json.loads(gen("iperf3_tcp_1stream.server.json"))
    r = iperf3.parse(json.dumps(doc))
    assert r.server_output is not None and r.server_output.role == "server"
    assert r.server_output.accepted_connection.port == 55782


def test_several_documents_back_to_back():
    text = gen("iperf3_tcp_1stream.server.json") + gen("iperf3_tcp_P2.server.json")
    results = iperf3.parse_all(text)
    assert [r.num_streams for r in results] == [1, 2]
    with pytest.raises(ParseError, match="found 2"):
        iperf3.parse(text)
    assert isinstance(iperf3.to_json(text), list)


@pytest.mark.parametrize("text", [
    "",
    "   \n",
    "not json at all",
    "[1, 2]",
    '{"foo": 1}',
    '{"start": {"connected": [], "version": "iperf 3.12"',            # truncated
    '{"start": {"test_start": {"protocol": "TCP", "num_streams": "2", "duration": 1}}}',
    '{"start": {}, "intervals": [{"streams": [{"start": 0}]}]}',       # interval without bytes
    '{"start": {}, "intervals": {}}',
    '{"start": {}, "error": 5}',
    '{"start": {"test_start": {"protocol": "TCP", "num_streams": 1, "duration": 1, "reverse": 2}}}',
])
def test_malformed_input_raises_parse_error(text):
    with pytest.raises(ParseError):
        iperf3.parse(text)


def test_human_readable_output_is_rejected_with_a_hint():
    for text in (gen("iperf3_tcp_P2_text.client.txt"), gen("iperf3_tcp_text.server.txt"),
                 fenced_blocks(MD, "human-readable output")[0]):
        with pytest.raises(ParseError):
            iperf3.parse(text)
    with pytest.raises(ParseError, match="-J"):
        iperf3.parse(gen("iperf3_tcp_P2_text.client.txt"))


def test_registry_round_trip():
    out = registry_parse("iperf3", gen("iperf3_udp_5M.client.json"))
    again = json.loads(json.dumps(out))
    assert again["test_start"]["protocol"] == "UDP"
    assert again["end"]["sum_received"]["bits_per_second"] == 5000159.99146712
    assert again["intervals"][0]["streams"][0]["packets"] == 432
    assert again["failure"] is None
    with pytest.raises(ParseError):
        registry_parse("iperf3", "garbage")
