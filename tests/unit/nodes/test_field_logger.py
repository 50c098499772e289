"""The field logger's pure parts: schedule, spool format and recovery, acknowledged-offset bookkeeping,
resume after a kill / reboot (state file + spool), parsers on recorded output, online handovers.

The modem in these tests is the AT emulator or its trace -- a TEST DOUBLE (we have no modem hardware).
"""
from __future__ import annotations

import json
import math
import os
import threading
from pathlib import Path

import pytest

from controller.telemetry.points import Point
from controller.telemetry.points import to_line as controller_to_line
from controller.telemetry.spool import PushState, read_points
from nodes.fieldlog import influx, parsers, rundir, schedule
from nodes.fieldlog import points as P
from nodes.fieldlog.handovers import OnlineHandovers
from nodes.fieldlog.logger import FieldLogger, Sources, last_seq_in_spool
from nodes.fieldlog.spool import AppendFile, load_push_state, read_complete, recover_tail
from nodes.modem.emulator import field_test_trace
from nodes.modem.handover import detect_handovers
from tests.support.shipped import TESTS

NS = 1_000_000_000
FIXTURES = TESTS / "fixtures" / "recorded" / "generated"
T0 = 1_795_000_000 * NS            # a run start on the host's wall clock


# ---- schedule --------------------------------------------------------------------------------------------

def test_tick_grid_is_wall_clock_from_the_run_start():
    assert schedule.next_seq(T0, T0, NS, None) == 0
    assert schedule.next_seq(T0 - 5 * NS, T0, NS, None) == 0
    assert schedule.next_seq(T0 + 3 * NS + 20_000_000, T0, NS, None) == 3      # 20 ms late: still tick 3
    assert schedule.next_seq(T0 + 3 * NS + 600_000_000, T0, NS, None) == 4     # too late: next slot
    assert schedule.due_ns(T0, NS, 7) == T0 + 7 * NS


def test_seq_is_never_reused_when_the_clock_steps_back():
    assert schedule.next_seq(T0 + 2 * NS, T0, NS, last_seq=9) == 10


def test_duration_counts_ticks_from_the_run_start():
    assert schedule.total_ticks(600, 1.0) == 600
    assert schedule.total_ticks(2.5, 1.0) == 3
    assert schedule.total_ticks(None, 1.0) is None
    assert not schedule.finished(599, 600, 1.0) and schedule.finished(600, 600, 1.0)
    assert not schedule.finished(10**9, None, 1.0)


def test_missing_seconds_between_two_loggers():
    assert schedule.missing_between(9, 14) == (10, 13)
    assert schedule.missing_between(9, 10) is None
    assert schedule.missing_between(None, 0) is None
    assert schedule.missing_between(None, 3) == (0, 2)


# ---- spool format ----------------------------------------------------------------------------------------

def sample_records():
    trace = field_test_trace()
    base = {"host": "m1", "run": "r1", "scenario": "field"}
    recs = [P.field_record(0, T0, base, "torrent", modem_ok=True,
                           ping={"rtt_ms": 155.0, "jitter_ms": 74.0, "ping_replies": 5, "ping_lost": 0,
                                 "ping_errors": 0},
                           gps=None, work={"dl_bps": 2.0e6, "dl_bytes": 12, "peers_connected": 3, "peers_unchoked": 1,
                                           "peers_active": 1, "running": True}),
            P.radio_record(trace.truth_at(41.0), T0, 0, base),
            P.iface_record("wwan0", T0, base, {"rx_bytes": 10, "tx_bytes": 2, "rx_packets": 1, "tx_packets": 1,
                                              "rx_dropped": 0, "tx_dropped": 0}, {"rx_bps": 80.0, "tx_bps": 16.0}),
            P.event_record("gap", T0 + 5, base, seq=4, from_seq=1, to_seq=3, missing=3, detail='say "hi", a=b c\\d')]
    return [r for r in recs if r is not None]


def test_spool_lines_are_controller_points_and_encode_identically():
    for rec in sample_records():
        line = P.dumps(rec)
        p = Point.from_json(json.loads(line))
        assert influx.to_line(json.loads(line)) == controller_to_line(p)
        assert p.tags["run"] == "r1" and p.tags["host"] == "m1"


def test_radio_record_keeps_missing_values_missing_and_types_fixed():
    trace = field_test_trace()
    base = {"host": "m1", "run": "r1", "scenario": "field"}
    assert P.radio_record(None, T0, 3, base) is None            # modem silent: no point at all
    rec = P.radio_record(trace.truth_at(5.0), T0, 5, base)
    assert rec["tags"]["technology"] == "lte" and rec["tags"]["cell"] == str(3697446)
    assert rec["f"]["sinr_db"] == 8.0 and isinstance(rec["f"]["sinr_db"], float)
    assert isinstance(rec["f"]["pci"], int) and "cinr_db" not in rec["f"] and "nr_pci" not in rec["f"]
    nsa = P.radio_record(trace.truth_at(45.0), T0, 45, base)
    assert nsa["f"]["nr_pci"] == 747 and nsa["f"]["nr_sinr_db"] == 33.0


def test_append_file_recovers_a_torn_last_line(tmp_path):
    p = tmp_path / "metrics.jsonl"
    p.write_bytes(b'{"a":1}\n{"b":2}\n{"c":')
    assert recover_tail(str(p)) == 5
    assert p.read_bytes() == b'{"a":1}\n{"b":2}\n'
    p.write_bytes(b'{"a":1}\n' + b"\0" * 100)                 # a crashed file system's NUL fill
    f = AppendFile(str(p))
    assert f.truncated == 100 and f.size == 8 and f.durable_size == 8
    f.append_lines(['{"d":4}'])
    f.close()
    assert p.read_bytes() == b'{"a":1}\n{"d":4}\n'


def test_only_fsynced_bytes_count_as_durable(tmp_path):
    clock = [0.0]
    f = AppendFile(str(tmp_path / "s.jsonl"), fsync_every_s=5.0, clock=lambda: clock[0])
    f.append_lines(["one"])
    assert (f.size, f.durable_size) == (4, 0)
    clock[0] = 5.0
    f.append_lines(["two"])
    assert f.durable_size == 8
    f.close()


def test_read_complete_stops_at_the_last_newline_and_at_end(tmp_path):
    p = tmp_path / "s"
    p.write_bytes(b"aa\nbb\ncc")
    assert read_complete(str(p), 0) == (b"aa\nbb\n", 6)
    assert read_complete(str(p), 0, end=4) == (b"aa\n", 3)
    assert read_complete(str(p), 6) == (b"", 6)


# ---- exactly-once push bookkeeping ------------------------------------------------------------------------

class FakeInflux:
    """Stores points by (measurement, tags, time) like InfluxDB; can fail or lose the acknowledgement."""

    def __init__(self):
        self.bodies: list[bytes] = []
        self.stored: dict[tuple, str] = {}
        self.fail = 0
        self.lose_ack = 0

    def post(self, url: str, body: bytes, headers: dict, timeout: float) -> int:
        import gzip
        assert headers["Authorization"] == "Token secret-token" and "precision=ns" in url
        if self.fail:
            self.fail -= 1
            raise OSError("Network is unreachable")
        self.bodies.append(body)
        for line in gzip.decompress(body).decode().splitlines():
            head, fields, t = line.rsplit(" ", 2)
            self.stored[(head, t)] = fields
        if self.lose_ack:
            self.lose_ack -= 1
            raise TimeoutError("the 204 never arrived")
        return 204


def _spool(tmp_path: Path, n: int) -> AppendFile:
    f = AppendFile(str(tmp_path / "metrics.jsonl"), fsync_every_s=0.0)
    base = {"host": "m1", "run": "r1", "scenario": "field"}
    f.append_lines([P.dumps(P.field_record(k, T0 + k * NS, base, "idle", modem_ok=None, ping={}, gps=None, work={}))
                    for k in range(n)])
    return f


def test_offset_moves_only_after_acknowledgement(tmp_path):
    spool = _spool(tmp_path, 10)
    db = FakeInflux()
    target = {"url": "http://db:8086", "org": "o", "bucket": "b"}
    pusher = influx.Pusher(str(tmp_path), target, "secret-token", durable_size=lambda: spool.durable_size,
                           post=db.post, batch_bytes=400)
    db.fail = 1
    with pytest.raises(OSError):
        pusher.push_once()
    assert load_push_state(str(tmp_path))["offset"] == 0
    assert pusher.push_once() == 10
    st = PushState.load(tmp_path)               # the controller reads the host's bookkeeping as is
    assert (st.offset, st.points, st.url, st.bucket) == (spool.size, 10, "http://db:8086", "b")
    assert len(db.stored) == 10 and len(db.bodies) > 1      # several batches of 400 bytes


def test_lost_acknowledgement_resends_identical_points(tmp_path):
    spool = _spool(tmp_path, 4)
    db = FakeInflux()
    pusher = influx.Pusher(str(tmp_path), {"url": "http://db", "org": "o", "bucket": "b"}, "secret-token",
                           durable_size=lambda: spool.durable_size, post=db.post)
    db.lose_ack = 1
    with pytest.raises(TimeoutError):
        pusher.push_once()
    assert load_push_state(str(tmp_path))["offset"] == 0
    # a new logger (restart) picks up the same offset and sends the same bytes again
    again = influx.Pusher(str(tmp_path), {"url": "http://db", "org": "o", "bucket": "b"}, "secret-token",
                          durable_size=lambda: spool.durable_size, post=db.post)
    assert again.push_once() == 4
    assert db.bodies[0] == db.bodies[1]
    assert len(db.stored) == 4                  # identical points: stored once


def test_points_not_yet_fsynced_are_not_sent(tmp_path):
    spool = _spool(tmp_path, 3)
    durable = [0]
    db = FakeInflux()
    pusher = influx.Pusher(str(tmp_path), {"url": "http://db", "org": "o", "bucket": "b"}, "secret-token",
                           durable_size=lambda: durable[0], post=db.post)
    assert pusher.push_once() == 0 and not db.bodies
    durable[0] = spool.size
    assert pusher.push_once() == 3


def test_push_loop_backs_off_and_records_the_error(tmp_path):
    spool = _spool(tmp_path, 2)
    db = FakeInflux()
    db.fail = 10**6
    pusher = influx.Pusher(str(tmp_path), {"url": "http://db", "org": "o", "bucket": "b"}, "secret-token",
                           durable_size=lambda: spool.durable_size, post=db.post)
    stop = threading.Event()
    t = threading.Thread(target=pusher.run, args=(stop,), kwargs={"idle_s": 0.01, "max_backoff_s": 0.02})
    t.start()
    stop.wait(0.2)
    stop.set()
    t.join()
    st = load_push_state(str(tmp_path))
    assert st["offset"] == 0 and "Network is unreachable" in st["last_error"]


# ---- resume after a kill / reboot ---------------------------------------------------------------------------

class FakeClock:
    """Wall clock for the logger; waiting advances it (the loop sleeps on the stop event)."""

    def __init__(self, t: int):
        self.t = t

    def __call__(self) -> int:
        return self.t


class ClockedStop(threading.Event):
    def __init__(self, clock: FakeClock, stop_at: int):
        super().__init__()
        self.clock, self.stop_at = clock, stop_at

    def wait(self, timeout: float | None = None) -> bool:
        self.clock.t += int((timeout or 0) * NS)
        if self.clock.t >= self.stop_at:
            self.set()
        return self.is_set()


class FakeRadio:
    """Answers from the drive trace (a test double) for the tick's wall time."""

    def __init__(self, clock: FakeClock, start: int):
        self.clock, self.start_ns, self.trace = clock, start, field_test_trace()

    def start(self): ...

    def stop(self): ...

    def request(self, seq):
        self.seq = seq
        return True

    def result(self, seq, deadline):
        s = self.trace.truth_at(((self.clock.t - self.start_ns) / NS) % self.trace.duration_s)
        return s, {"replies": {}}


def _config(run_id: str = "r1", duration_s: float | None = None) -> dict:
    return {"run_id": run_id, "host": "m1", "interval_s": 1.0, "duration_s": duration_s,
            "workload": {"kind": "idle"}, "tags": {"run": run_id, "scenario": "field", "host": "m1"},
            "modem": {"family": "at-quectel", "device": "/dev/null"}}


def _run_logger(paths, clock, until_ns):
    cfg, st = rundir.load(paths)
    stop = ClockedStop(clock, until_ns)
    lg = FieldLogger(paths, cfg, st, stop=stop, clock_ns=clock, monotonic=lambda: clock.t / NS,
                     sources=Sources(radio=FakeRadio(clock, cfg["started_ns"])), log=lambda m: None)
    return lg.run()


def field_seqs(spool: Path) -> list[int]:
    return [p.fields["seq"] for p in read_points(spool)[0] if p.measurement == "field"]


def test_decide_resumes_an_unfinished_run_within_its_duration():
    cfg = {"started_ns": T0, "interval_s": 1.0, "duration_s": 60}
    assert rundir.decide(cfg, {"status": "running", "last_seq": 10}, T0 + 20 * NS) == "resume"
    assert rundir.decide(cfg, {"status": "running", "last_seq": 10}, T0 + 61 * NS) == "expire"
    assert rundir.decide(cfg, {"status": "stopped"}, T0 + 20 * NS) == "none"
    assert rundir.decide(None, None, T0) == "none"
    assert rundir.decide(dict(cfg, duration_s=None), {"status": "running"}, T0 + 10**6 * NS) == "resume"


def test_restart_continues_the_same_run_with_the_gap_recorded(tmp_path):
    paths = rundir.Paths(str(tmp_path), "r1")
    os.makedirs(paths.runs, exist_ok=True)
    rundir.create(paths, _config(duration_s=40), now_ns=T0)
    clock = FakeClock(T0)
    # first logger: ticks 0..14, then "kill -9": state stays running (simulated by the status we force)
    assert _run_logger(paths, clock, T0 + 14 * NS + NS // 2) == "stopped"
    cfg, st = rundir.load(paths)
    st["status"] = "running"                 # as after kill -9: nobody wrote stopped
    rundir.save_state(paths, st)
    assert rundir.decide(cfg, st, T0 + 20 * NS) == "resume"
    # "reboot": five seconds later a new logger resumes the same run and runs to the end of its duration
    clock.t = T0 + 20 * NS + 10_000_000
    assert _run_logger(paths, clock, T0 + 100 * NS) == "completed"
    seqs = field_seqs(Path(paths.spool))
    assert seqs == list(range(0, 15)) + list(range(20, 40))          # never a duplicate, never a filler
    events = [p for p in read_points(Path(paths.spool))[0] if p.measurement == "field_event"]
    gap = next(e for e in events if e.tags["event"] == "gap")
    assert (gap.fields["from_seq"], gap.fields["to_seq"], gap.fields["missing"]) == (15, 19, 5)
    assert [e.tags["event"] for e in events if e.tags["event"] in ("start", "stop", "gap", "complete")] == \
        ["start", "stop", "gap", "complete"]
    st = rundir.load(paths)[1]
    assert st["status"] == "completed" and len(st["starts"]) == 2 and st["starts"][1]["gap"] == [15, 19]
    assert last_seq_in_spool(paths.spool)[0] == 39
    # the resumed logger rebuilt its handover window from raw/radio.jsonl: the dip at 10 s (settled only
    # after the kill) is still written, once, and the cell change across the gap is one event
    hos = [(p.tags["kind"], (p.time_ns - T0) // NS) for p in read_points(Path(paths.spool))[0]
           if p.measurement == "handover"]
    assert ("signal-dip", 10) in hos and ("cell-change", 20) in hos and len(hos) == len(set(hos))


def test_modem_reset_is_missing_samples_and_events_not_zeros(tmp_path):
    paths = rundir.Paths(str(tmp_path), "r1")
    os.makedirs(paths.runs, exist_ok=True)
    rundir.create(paths, _config(duration_s=50), now_ns=T0)
    clock = FakeClock(T0)
    assert _run_logger(paths, clock, T0 + 100 * NS) == "completed"
    pts = read_points(Path(paths.spool))[0]
    radio = {p.fields["seq"]: p for p in pts if p.measurement == "radio"}
    field = {p.fields["seq"]: p for p in pts if p.measurement == "field"}
    assert sorted(field) == list(range(50))
    assert sorted(set(field) - set(radio)) == [30, 31, 32]            # the trace's reset: no radio points
    assert all(field[k].fields["modem_ok"] is (k not in (30, 31, 32)) for k in field)
    ev = {p.tags["event"]: p for p in pts if p.measurement == "field_event"}
    assert ev["modem-lost"].fields["seq"] == 30 and ev["modem-back"].fields["missing"] == 3
    # handovers written by the host, settled (written once, never revised)
    hos = [(p.tags["kind"], (p.time_ns - T0) // NS) for p in pts if p.measurement == "handover"]
    assert ("signal-dip", 10) in hos and ("cell-change", 20) in hos
    assert len(hos) == len(set(hos))


# ---- online handovers equal the batch detection ------------------------------------------------------------

def test_online_handovers_match_batch_detection_over_the_trace():
    trace = field_test_trace()
    series = [(T0 + int(t * NS), trace.truth_at(t)) for t in trace.times()] * 1
    series += [(T0 + int((50 + t) * NS), trace.truth_at(t)) for t in trace.times()]
    series += [(T0 + int((100 + t) * NS), trace.truth_at(t)) for t in trace.times()]
    online = OnlineHandovers()
    got = []
    for t, s in series:
        got += [(ev.kind, t_ev) for t_ev, ev in online.feed(t, s)]
    batch = [(e.kind, T0 + round((e.time - T0 / NS) * NS)) for e in detect_handovers([(t / NS, s) for t, s in series])]
    settled = [b for b in batch if b[1] <= series[-1][0] - online.settle_s * NS]
    assert got == settled
    assert ("cell-change", T0 + 20 * NS) in got and ("cell-change", T0 + 70 * NS) in got   # B -> A at the loop


# ---- parsers on recorded output -------------------------------------------------------------------------------

def test_webtorrent_leecher_frames_recorded():
    frames = parsers.parse_webtorrent((FIXTURES / "webtorrent" / "leecher.stdout.txt").read_text())
    assert len(frames) == 5
    assert [f["dl_bps"] for f in frames] == [1.8e6 * 8, 1.9e6 * 8, 1.9e6 * 8, 2.0e6 * 8, 2.1e6 * 8]
    assert frames[0]["downloaded_bytes"] == 2_100_000 and frames[0]["total_bytes"] == 12_000_000
    assert all((f["peers_connected"], f["peers_unchoked"], f["peers_active"]) == (1, 1, 1) for f in frames)


def test_webtorrent_seeder_has_connected_but_no_active_peers():
    frames = parsers.parse_webtorrent((FIXTURES / "webtorrent" / "seeder.stdout.txt").read_text())
    assert frames and all(f["peers_active"] == 0 for f in frames)
    assert max(f["peers_connected"] for f in frames) == 1 and max(f["uploaded_bytes"] for f in frames) == 12_000_000


def test_webtorrent_verbose_frames_and_completion():
    p = parsers.WebtorrentFrames()
    frames = [f for f in (p.feed(line) for line in
                          (FIXTURES / "webtorrent" / "leecher_verbose_keepseeding.stdout.txt").read_text().splitlines())
              if f is not None]
    assert frames[0]["dl_bps"] == 3.6e6 * 8 and frames[0]["peers_active"] == 1
    assert p.done == {"active": 1, "peers": 1, "seconds": 2}


def test_iperf3_interval_lines_recorded():
    text = (FIXTURES / "iperf3_tcp_P2_text.client.txt").read_text()
    sums = [iv for iv in (parsers.parse_iperf3_interval(line, streams=2) for line in text.splitlines()) if iv]
    assert [(iv["start"], iv["end"]) for iv in sums] == [(0.0, 1.0), (1.0, 2.0), (2.0, 3.0)]
    assert sums[0]["bps"] == 24.9e6 and sums[0]["bytes"] == pytest.approx(2.96 * 1024 ** 2)
    one = [iv for iv in (parsers.parse_iperf3_interval(line) for line in text.splitlines()) if iv]
    assert len(one) == 6                     # per-stream lines; summaries never count
    assert parsers.parse_iperf3_interval("[  5]   0.00-10.00  sec  1.12 MBytes   941 Kbits/sec  receiver") is None


# Captured on this project's build host (iputils 20221126), `ping -n -D -O`.
PING_CAPTURE = """PING 127.0.0.1 (127.0.0.1) 56(84) bytes of data.
[1795318543.665170] 64 bytes from 127.0.0.1: icmp_seq=1 ttl=64 time=0.021 ms
[1795318543.867671] 64 bytes from 127.0.0.1: icmp_seq=2 ttl=64 time=0.033 ms
[1795318544.092143] From 21.4.2.61 icmp_seq=1 Destination Port Unreachable
[1795318545.092733] no answer yet for icmp_seq=1
ping: connect: Network is unreachable
ping: sendmsg: Network is unreachable
--- 127.0.0.1 ping statistics ---
3 packets transmitted, 3 received, 0% packet loss, time 414ms"""


def test_ping_lines_and_per_second_rtt_and_jitter():
    kinds = [parsers.parse_ping_line(line) for line in PING_CAPTURE.splitlines()]
    assert [k[0] for k in kinds if k] == ["reply", "reply", "error", "lost", "error", "error"]
    assert kinds[1] == ("reply", 1795318543.66517, 0.021)
    st = parsers.rtt_stats([150.0, 160.0, 140.0], previous=155.0)
    assert st["rtt_ms"] == 150.0 and st["rtt_min_ms"] == 140.0 and st["rtt_max_ms"] == 160.0
    assert st["jitter_ms"] == pytest.approx((5 + 10 + 20) / 3)
    assert "jitter_ms" not in parsers.rtt_stats([150.0], previous=None)
    assert parsers.rtt_stats([], previous=1.0) == {}


def test_netdev_counters_and_rates():
    text = ("Inter-|   Receive                                                |  Transmit\n"
            " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n"
            "  mgmt0: 1000 10 0 1 0 0 0 0 500 5 0 2 0 0 0 0\n")
    c = parsers.parse_netdev(text, "mgmt0")
    assert c == {"rx_bytes": 1000, "rx_packets": 10, "rx_dropped": 1, "tx_bytes": 500, "tx_packets": 5, "tx_dropped": 2}
    assert parsers.parse_netdev(text, "wwan0") is None
    later = dict(c, rx_bytes=2000, tx_bytes=750)
    assert parsers.iface_rates((0, c), (NS, later)) == {"rx_bps": 8000.0, "tx_bps": 2000.0}
    assert parsers.iface_rates((0, later), (NS, c)) == {}          # counters went back: no rate


def test_nan_is_left_out_of_line_protocol():
    rec = P.record("field", {"host": "m1"}, {"seq": 1, "rtt_ms": math.nan}, T0)
    assert influx.to_line(rec) == f"field,host=m1 seq=1i {T0}"


def test_state_file_written_from_two_threads_at_once(tmp_path):
    # the tick loop and a child's reader thread both save state.json (this raced once on the rack)
    from nodes.fieldlog.spool import read_json, write_json_atomic
    path = str(tmp_path / "state.json")
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(200):
                write_json_atomic(path, {"writer": n, "i": i})
        except BaseException as exc:  # noqa: BLE001 - the test reports any failure
            errors.append(exc)
    threads = [threading.Thread(target=writer, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and read_json(path)["i"] == 199
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_pusher_sends_right_after_an_fsync_not_a_polling_interval_later(tmp_path):
    spool = AppendFile(str(tmp_path / "metrics.jsonl"), fsync_every_s=0.0)
    db = FakeInflux()
    pusher = influx.Pusher(str(tmp_path), {"url": "http://db", "org": "o", "bucket": "b"}, "secret-token",
                           durable_size=lambda: spool.durable_size, post=db.post)
    stop = threading.Event()
    t = threading.Thread(target=pusher.run, args=(stop,), kwargs={"idle_s": 30.0, "wake": spool.durable})
    t.start()
    try:
        import time
        time.sleep(0.2)
        base = {"host": "m1", "run": "r1", "scenario": "field"}
        spool.append_lines([P.dumps(P.field_record(0, T0, base, "idle", modem_ok=None, ping={}, gps=None, work={}))])
        t_end = time.monotonic() + 3.0
        while time.monotonic() < t_end and load_push_state(str(tmp_path))["offset"] < spool.size:
            time.sleep(0.02)
        assert load_push_state(str(tmp_path))["offset"] == spool.size      # long before idle_s = 30 s
    finally:
        stop.set()
        spool.durable.set()
        t.join()


# ---- the modem re-enumerated by ModemManager: found again, enabled again, the gap recorded ------------------------

class TrackerRadio:
    """The radio source with the mmcli tracker, one round per tick, synchronously (the threaded RadioSource is
    tests/unit/nodes/test_field_sources.py); ModemManager is the fake printing the real 1.20.4 shapes."""

    def __init__(self, tracker):
        self.tracker, self.family = tracker, tracker.family
        self.events: list = []
        tracker.event = lambda kind, fields: self.events.append((kind, fields))

    def start(self): ...

    def stop(self): ...

    def request(self, seq):
        self.out = self.tracker.round()[0]
        return True

    def result(self, seq, deadline):
        sample = self.family.merge(self.out)            # as RadioSource._run makes it
        return sample, {"replies": self.out, **({"provenance": self.family.provenance(self.out)} if sample else {})}

    def take_events(self):
        out, self.events = self.events, []
        return out


def test_a_modem_manager_reset_is_a_marked_gap_with_the_modem_found_and_enabled_again(tmp_path):
    from nodes.fieldlog.modemtrack import MmcliTracker
    from nodes.fieldlog.sources import ModemSettings
    from nodes.modem.families import FAMILIES
    from tests.support.fake_modemmanager import FakeModemManager
    paths = rundir.Paths(str(tmp_path), "r1")
    os.makedirs(paths.runs, exist_ok=True)
    cfg = dict(_config(duration_s=50), modem={"family": "mmcli", "device": "867978050021665"})
    rundir.create(paths, cfg, now_ns=T0)
    clock = FakeClock(T0)
    pos = lambda: ((clock.t - T0) / NS) % 50                               # noqa: E731
    mm = FakeModemManager(pos)

    class Stop(ClockedStop):
        def wait(self, timeout=None):
            done = super().wait(timeout)
            if 30 <= pos() < 37 and mm.present:                             # the daemon drops the modem ...
                mm.reset()
            elif pos() >= 37 and not mm.present:                            # ... and re-creates it, disabled
                mm.reappear()
            return done
    cfg, st = rundir.load(paths)
    radio = TrackerRadio(MmcliTracker(FAMILIES["mmcli"], ModemSettings("mmcli", cfg["modem"]["device"]), mm.run))
    lg = FieldLogger(paths, cfg, st, stop=Stop(clock, T0 + 100 * NS), clock_ns=clock,
                     monotonic=lambda: clock.t / NS, sources=Sources(radio=radio), log=lambda m: None)
    assert lg.run() == "completed"
    pts = read_points(Path(paths.spool))[0]
    field = {p.fields["seq"]: p for p in pts if p.measurement == "field"}
    radio_pts = {p.fields["seq"]: p for p in pts if p.measurement == "radio"}
    assert sorted(field) == list(range(50))                                  # every second has its point
    assert sorted(set(field) - set(radio_pts)) == list(range(30, 37))        # the reset: marked, not filled
    assert all(field[k].fields["modem_ok"] is (k not in range(30, 37)) for k in field)
    assert {p.fields["rsrp_dbm"] for p in radio_pts.values()} == {-93.0, -98.0, -110.0, -112.0}
    assert all(p.fields["mcc"] == "234" and p.fields["tac"] == 12299 for p in radio_pts.values())
    ev = [(p.tags["event"], p.fields["seq"], p.fields.get("path", "")) for p in pts if p.measurement == "field_event"
          and p.tags["event"] not in ("start", "complete")]
    m = "/org/freedesktop/ModemManager1/Modem/"
    assert ev == [("modem-found", 0, m + "0"), ("modem-enabled", 0, m + "0"), ("modem-lost", 30, ""),
                  ("modem-moved", 37, m + "1"), ("modem-enabled", 37, m + "1"), ("modem-back", 37, "")]
    back = next(p for p in pts if p.measurement == "field_event" and p.tags["event"] == "modem-back")
    assert back.fields["missing"] == 7
    hos = [(p.tags["kind"], (p.time_ns - T0) // NS) for p in pts if p.measurement == "handover"]
    assert ("cell-change", 20) in hos


def test_provenance_counts_the_seconds_the_signal_values_stayed_the_same():
    from nodes.fieldlog.logger import Provenance
    from nodes.modem.radio import RadioSample
    a, b = RadioSample(rsrp_dbm=-93.0, rsrq_db=-11.0), RadioSample(rsrp_dbm=-98.0, rsrq_db=-11.0)
    leg = RadioSample(technology="nr5g", rsrp_dbm=-90.0)
    pv = Provenance()
    daemon = {"read_from": "daemon", "daemon_recent": True}
    assert pv.fields(0, a, daemon) == {"read_from": "daemon", "daemon_recent": True}   # nothing to compare yet
    assert pv.fields(1, a, daemon)["same_values_s"] == 1
    assert pv.fields(2, a, None) == {"same_values_s": 2}             # no provenance said: none written
    assert pv.fields(3, b, {"read_from": "modem"}) == {"read_from": "modem", "same_values_s": 0}
    assert pv.fields(7, b, None)["same_values_s"] == 4               # across a gap: the same values as at 3
    assert pv.fields(8, RadioSample(rsrp_dbm=-98.0, rsrq_db=-11.0, cell_id="1"), None)["same_values_s"] == 5
    assert pv.fields(9, RadioSample(rsrp_dbm=-98.0, rsrq_db=-11.0, secondary=(leg,)), None)["same_values_s"] == 0
    assert pv.fields(10, a, {"read_from": "bogus", "daemon_recent": "yes"}) == {"same_values_s": 0}


def test_values_the_daemon_keeps_while_the_modem_is_silent_are_marked_as_its_repeats(tmp_path):
    """ModemManager 1.20.4 keeps its last signal values when a refresh fails (load_values_ready in
    src/mm-iface-modem-signal.c returns after a warning) and still lists the modem while it is silent (the
    emulator's reset keeps the port): the logger cannot tell those seconds from an unchanged radio, and the
    record says exactly that -- read from the daemon, the same values for one second more each tick."""
    from nodes.fieldlog.modemtrack import MmcliTracker
    from nodes.fieldlog.sources import ModemSettings
    from nodes.modem.families import FAMILIES
    from tests.support.fake_modemmanager import FakeModemManager
    paths = rundir.Paths(str(tmp_path), "r1")
    os.makedirs(paths.runs, exist_ok=True)
    cfg = dict(_config(duration_s=40), modem={"family": "mmcli", "device": "867978050021665"})
    rundir.create(paths, cfg, now_ns=T0)
    clock = FakeClock(T0)
    mm = FakeModemManager(lambda: ((clock.t - T0) / NS) % 50)
    last: dict = {}

    def daemon(argv, timeout):                       # the fake, plus the daemon's keeping of its last values
        st, out = mm.run(argv, timeout)
        if st == 0:
            last[tuple(argv)] = out
        elif tuple(argv) in last:
            return 0, last[tuple(argv)]
        return st, out
    cfg, st = rundir.load(paths)
    radio = TrackerRadio(MmcliTracker(FAMILIES["mmcli"], ModemSettings("mmcli", cfg["modem"]["device"]), daemon))
    lg = FieldLogger(paths, cfg, st, stop=ClockedStop(clock, T0 + 100 * NS), clock_ns=clock,
                     monotonic=lambda: clock.t / NS, sources=Sources(radio=radio), log=lambda m: None)
    assert lg.run() == "completed"
    pts = read_points(Path(paths.spool))[0]
    radio_pts = {p.fields["seq"]: p for p in pts if p.measurement == "radio"}
    assert sorted(radio_pts) == list(range(40))                    # the daemon answered every second ...
    assert all(p.fields["read_from"] == "daemon" and p.fields["daemon_recent"] is True for p in radio_pts.values())
    assert "same_values_s" not in radio_pts[0].fields
    same = {k: p.fields["same_values_s"] for k, p in radio_pts.items() if k}
    for k in (30, 31, 32):                                         # ... and in the modem's silence it repeated
        assert same[k] == same[k - 1] + 1 and radio_pts[k].fields["rsrp_dbm"] == radio_pts[29].fields["rsrp_dbm"]
    assert same[20] == 0 and same[10] == 0                         # the cell change and the dip: new values
    raw = [json.loads(line) for line in Path(paths.radio_raw).read_text().splitlines()]
    assert all(r["provenance"] == {"read_from": "daemon", "daemon_recent": True} for r in raw)


def test_a_fresh_run_that_starts_late_says_which_seconds_it_never_measured(tmp_path):
    """A loaded host started the logger 3.6 s after the run's start (the clean-clone suite of
    2026-11-27 lost seq 0 silently): the first ticks are not invented, and a `late` event names them."""
    paths = rundir.Paths(str(tmp_path), "r1")
    os.makedirs(paths.runs, exist_ok=True)
    rundir.create(paths, _config(duration_s=10), now_ns=T0)
    clock = FakeClock(T0 + 3 * NS + 600_000_000)
    assert _run_logger(paths, clock, T0 + 100 * NS) == "completed"
    assert field_seqs(Path(paths.spool)) == list(range(4, 10))
    events = [p for p in read_points(Path(paths.spool))[0] if p.measurement == "field_event"]
    late = [e for e in events if e.tags["event"] == "late"]
    assert [(e.fields["from_seq"], e.fields["to_seq"], e.fields["missing"]) for e in late] == [(0, 3, 4)]
