"""How far along a run's traffic is (pure): iperf3 flows and staggered tests, BitTorrent
downloads one after the other (their done count, the running one's bytes, rate and ETA from
the client's own `Downloaded:` lines, what the step waits for), and numbered steps."""
from __future__ import annotations

import pytest

from controller.traffic.bittorrent import BitTorrentRunner, BtSettings, download_status
from controller.traffic.iperf3 import FlowSpec, TrafficRunner
from controller.traffic.progress import StepNote, Unit, counted_progress, format_seconds, timed_progress

MiB = 1 << 20


def flow(name: str, delay: float = 0.0, duration: float = 10.0) -> FlowSpec:
    return FlowSpec(name, "tcp", "ns2", "ns1", "10.20.0.1", 5201, duration_s=duration, start_delay_s=delay)


def settings(**kw) -> BtSettings:
    base = dict(tools_dir="/opt/bt", seeder="ns1", leecher="ns2", tracker_host="tr1", tracker_bind="10.30.0.9",
                tracker_port=6969, size_bytes=20 * MiB, repetitions=10, protocols=("tcp", "mptcp"),
                seed_ports={"tcp": 6881, "mptcp": 6882}, leech_ports={"tcp": 6901, "mptcp": 6902},
                http_ports={}, download_timeout_s=600.0)
    base.update(kw)
    return BtSettings(**base)


def test_format_seconds():
    assert [format_seconds(s) for s in (None, 0, 42.4, 61, 3599, 3720)] == ["?", "0 s", "42 s", "1m01s", "59m59s",
                                                                          "1h02m"]


def test_timed_progress_of_concurrent_flows():
    units = [Unit("mptcp", "running"), Unit("tcp-path1", "running"), Unit("tcp-path2", "running")]
    p = timed_progress("3 iperf3 flows", units, 12.0, 30.0)
    assert (p.done, p.total, p.remaining_s, p.counted) == (0, 3, 18.0, False)
    assert p.fraction == pytest.approx(0.4)
    assert timed_progress("x", units, 45.0, 30.0).fraction == 1.0          # late clients: never past the end


def test_staggered_iperf3_tests_are_counted_and_say_what_they_wait_for():
    r = TrafficRunner(None, [flow(f"t{k}", delay=k * 13.0) for k in range(60)], {})
    assert r.staggered and r.unit_name == "iperf3 tests" and r.span_s == 59 * 13 + 10
    assert r.describe() == "60 iperf3 tests of 10 s one after the other, 12m57s in all"
    assert r.progress(0.0).waiting_for == "the iperf3 servers to listen"
    r.t0 = 1000.0
    for k in range(14):
        r.runs[k].client_started, r.runs[k].client_status = 1000.0 + 13 * k, 0
    r.runs[3].error = "connect failed"
    p = r.progress(1000.0 + 14 * 13 - 1)          # between test 14's end and test 15's start
    assert (p.done, p.total, p.failed, p.counted) == (14, 60, 1, True)
    assert p.waiting_for == "the next test (in 1 s)"
    r.runs[14].client_started = 1000.0 + 14 * 13
    p = r.progress(1000.0 + 14 * 13 + 5)
    assert [u.name for u in p.units if u.state == "running"] == ["t14"] and p.waiting_for == ""
    # ended: ran to its own end (its exit status is known), not cut short by an abort
    assert r.runs[0].ended and not r.runs[14].ended


def test_concurrent_flows_are_described_as_flows():
    r = TrafficRunner(None, [flow("mptcp"), flow("tcp-path1"), flow("tcp-path2")], {})
    assert not r.staggered and r.unit_name == "iperf3 flows" and r.describe() == "3 iperf3 flows for 10 s"


def test_download_status_from_the_clients_own_lines():
    lines = [(100.0, "Downloading: payload.bin"),
             (101.0, "Speed: 1.2 MB/s Downloaded: 1.0 MB/20 MB Uploaded: 0 B"),
             (102.0, "Speed: 1.2 MB/s Downloaded: 2.0 MB/20 MB Uploaded: 0 B"),
             (104.0, "Speed: 1.2 MB/s Downloaded: 4.0 MB/20 MB Uploaded: 0 B"),
             (105.0, "Speed: 1.2 MB/s Downloaded: 5.0 MB/20 MB Uploaded: 0 B")]
    got, rate = download_status(lines, 20 * MiB)
    # over at least RATE_SPAN_S (3 s): 102 -> 105, 3 MB
    assert got == 5_000_000 and rate == pytest.approx(3_000_000 * 8 / 3)
    assert download_status(lines[:3], 20 * MiB) == (2_000_000, None)   # not 3 s of lines yet
    assert download_status([(1.0, "fetching torrent metadata from 1 peers")], 20 * MiB) == (0, None)


def test_bittorrent_progress_counts_downloads_and_estimates_the_rest():
    s = settings()
    flows = [FlowSpec("bt-tcp", "tcp", "ns2", "ns1", "10.30.0.1", 6881),
             FlowSpec("bt-mptcp", "mptcp", "ns2", "ns1", "10.30.0.1", 6882)]
    r = BitTorrentRunner(None, flows, s)
    assert r.describe() == "20 BitTorrent downloads of 20MiB (TCP and MPTCP alternating), each up to 10m00s"
    assert [d.name for d in r.runs[:3]] == ["tcp-1", "mptcp-1", "tcp-2"]
    r.t0 = 0.0
    for k, d in enumerate(r.runs[:14]):            # 14 done in 40 s each
        d.seeder_started, d.ended_at, d.sha256 = 40.0 * k, 40.0 * k + 40.0, "ab"
        d.expected_sha256 = "ab"
    cur = r.runs[14]
    cur.seeder_started, cur.client_started = 560.0, 562.0
    cur.lines = [(563.0 + t, f"Speed: 1 MB/s Downloaded: {t + 1}.0 MB/21 MB Uploaded: 0 B") for t in range(10)]
    r.waiting_for = ""
    p = r.progress(573.0)
    assert (p.done, p.total, p.counted, p.limit) == (14, 20, True, "each up to 10m00s")
    running = [u for u in p.units if u.state == "running"]
    assert [u.name for u in running] == ["tcp-8"] and running[0].flow == "bt-tcp"
    assert running[0].detail.startswith("9.5 MiB of 20.0 MiB, ETA ")
    # the running one's fraction counts; the time left: its ETA plus 40 s for each of the 5 to go
    assert p.fraction == pytest.approx((14 + 10_000_000 / (20 * MiB)) / 20)
    left_now = (20 * MiB - 10_000_000) * 8 / (3_000_000 * 8 / 3)
    assert p.remaining_s == pytest.approx(left_now + 5 * 40.0)
    # a failed download is counted as over, and said
    r.runs[13].sha256 = "cd"
    r.runs[13].error = "downloaded file differs from the payload (SHA-256)"
    p = r.progress(573.0)
    assert p.done == 14 and p.failed == 1
    assert r.runs[13].ended and not r.runs[14].ended


def test_counted_progress_without_history_has_no_estimate():
    units = [Unit("a", "running"), Unit("b", "waiting")]
    p = counted_progress("x", units, 5.0, current_fraction=0.5, current_remaining_s=10.0)
    assert p.remaining_s is None and p.fraction == pytest.approx(0.25)
    units = [Unit("a", "done"), Unit("b", "running")]
    assert counted_progress("x", units, 5.0, current_remaining_s=7.0).remaining_s == 7.0   # the last one
    assert counted_progress("x", [Unit("a", "done")], 5.0).remaining_s == 0.0


def test_step_note():
    n = StepNote(2, 3, "throughput: 4 TCP streams a1 -> b1 for 8 s", 9.0)
    assert str(n) == "[2/3] throughput: 4 TCP streams a1 -> b1 for 8 s (about 9 s)"


def test_a_complete_download_whose_client_has_not_exited_yet():
    flows = [FlowSpec("bt-tcp", "tcp", "ns2", "ns1", "10.30.0.1", 6881),
             FlowSpec("bt-mptcp", "mptcp", "ns2", "ns1", "10.30.0.1", 6882)]
    r = BitTorrentRunner(None, flows, settings(repetitions=1))
    r.t0 = 0.0
    d = r.runs[0]
    d.seeder_started, d.client_started = 1.0, 2.0
    d.lines = [(3.0, "fetching torrent metadata from 1 peers"),
               (4.0, "Speed: 1 MB/s Downloaded: 4.1 MB/21 MB Uploaded: 0 B"),
               (6.5, "torrent downloaded successfully from 1/1 peers in 3s!")]
    p = r.progress(20.0)
    (u,) = [u for u in p.units if u.state == "running"]
    assert u.detail == "downloaded in 3.5 s"
    assert p.waiting_for == "the tcp-1 leecher to exit (its download is complete)"
    assert p.fraction == pytest.approx(0.5)             # one of two, this one whole
