"""Slow-start and loss counters of each sending host (controller/results/summary.py
sender_counters), from `nstat -asz` read before and after the traffic.

Contract: the growth of each counter of SENDER_COUNTERS over the run, per sending host, with
the mean congestion window at a HyStart exit (tcp_cubic.c adds the window to ...Cwnd at each
...Detect); a host without both readings is `recorded: False`, never zeros.
"""
from __future__ import annotations

from controller.results.summary import (
    HYSTART_COUNTERS,
    SENDER_COUNTERS,
    SENDER_COUNTERS_DEFINITION,
    congestion_by_host,
    sender_counters,
    sender_counters_line,
)
from tests.support.shipped import RECORDED_RUNS

RAW = RECORDED_RUNS / "shared-bottleneck" / "delay-800ms" / "raw"


def _values(text: str) -> dict[str, int]:
    """nstat's "Name value rate" lines, read independently of controller.parsers.nstat."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and not line.startswith("#"):
            out[parts[0]] = int(parts[1])
    return out


def test_counters_of_the_recorded_mptcp_sender():
    before, after = (RAW / "sa1" / "nstat-before.txt").read_text(), (RAW / "sa1" / "nstat-after.txt").read_text()
    got = sender_counters({"sa1": (before, after)}, ["sa1", "sa2"])
    b, a = _values(before), _values(after)
    assert got["sa1"]["recorded"] is True
    assert got["sa1"]["counters"] == {name: a[name] - b[name] for name in SENDER_COUNTERS}
    # What this 800 ms run shows: no HyStart exit on sa1, slow start ended by loss (4 RTOs,
    # 156 segments resent in fast recovery).
    c = got["sa1"]["counters"]
    assert (c["TcpExtTCPHystartTrainDetect"], c["TcpExtTCPHystartDelayDetect"]) == (0, 0)
    assert (c["TcpExtTCPTimeouts"], c["TcpExtTCPFastRetrans"], c["TcpRetransSegs"]) == (4, 156, 173)
    assert got["sa1"]["mean_cwnd_at_hystart_train"] is None and got["sa1"]["mean_cwnd_at_hystart_delay"] is None
    # The run was recorded when ctl read only the MPTCP hosts' counters: sa2's are unknown, not zero.
    assert got["sa2"] == {"recorded": False}
    line = sender_counters_line(got)
    assert line == ("sender counters (nstat, whole run): sa1 HyStart train 0, delay 0; RTO 4; TLP 13/0 recovered; "
                    "retransmitted 173 segments | sa2 not recorded")


def _nstat(**values: int) -> str:
    # nstat's own layout ("%-32s%-16llu%6.1f"), written here for the arithmetic only
    return "#kernel\n" + "".join(f"{k:<32}{v:<16}{0.0:6.1f}\n" for k, v in values.items())


def test_mean_window_at_a_hystart_exit():
    before = _nstat(TcpExtTCPHystartTrainDetect=1, TcpExtTCPHystartTrainCwnd=30, TcpExtTCPHystartDelayDetect=0)
    after = _nstat(TcpExtTCPHystartTrainDetect=3, TcpExtTCPHystartTrainCwnd=130, TcpExtTCPHystartDelayDetect=1,
                   TcpExtTCPHystartDelayCwnd=812)
    got = sender_counters({"a2": (before, after)}, ["a2"])["a2"]
    assert got["mean_cwnd_at_hystart_train"] == 50.0 and got["mean_cwnd_at_hystart_delay"] == 812.0
    assert got["counters"]["TcpExtTCPTimeouts"] == 0       # absent on both sides: nstat -z would print 0
    assert "a2 HyStart train 2 (cwnd 50), delay 1 (cwnd 812)" in sender_counters_line({"a2": got})


def test_counters_that_went_backwards_are_not_reported():
    got = sender_counters({"a2": (_nstat(TcpRetransSegs=9), _nstat(TcpRetransSegs=2))}, ["a2"])["a2"]
    assert got["recorded"] is False and "went backwards" in got["error"]


def test_a_bpf_senders_hystart_is_not_counted_not_zero():
    """The HyStart counters are tcp_cubic.c's: ctl's mcubic (BPF, with its own HyStart) never adds
    to them, so a sender running it gets them as null with the reason, never a 0 that the
    definition would read as "slow start ended by loss"; a Cubic sender keeps its counts."""
    before = _nstat(TcpExtTCPHystartTrainDetect=1, TcpExtTCPHystartTrainCwnd=30, TcpTimeouts=0)
    after = _nstat(TcpExtTCPHystartTrainDetect=1, TcpExtTCPHystartTrainCwnd=30, TcpExtTCPTimeouts=2,
                   TcpRetransSegs=40)
    got = sender_counters({"a1": (before, after), "a2": (before, after)}, ["a1", "a2"],
                          congestion_by_host([("a1", "mcubic"), ("a2", "cubic")]))
    a1, a2 = got["a1"], got["a2"]
    assert all(a1["counters"][n] is None for n in HYSTART_COUNTERS)
    assert a1["mean_cwnd_at_hystart_train"] is None and a1["hystart_not_counted_for"] == ["mcubic"]
    assert "ctl BPF program, with its own HyStart" in a1["hystart_not_counted"]
    assert "tcp_cubic.c" in a1["hystart_not_counted"]
    assert (a1["counters"]["TcpExtTCPTimeouts"], a1["counters"]["TcpRetransSegs"]) == (2, 40)   # the rest counts
    assert a2["counters"]["TcpExtTCPHystartTrainDetect"] == 0 and "hystart_not_counted" not in a2
    line = sender_counters_line(got)
    assert "a1 HyStart not counted for mcubic (nstat's HyStart counters are Linux cubic's); RTO 2" in line
    assert "a2 HyStart train 0, delay 0; RTO 2" in line
    # the definition reads "ended by loss" only for a Cubic sender, and says a BPF sender's are null
    assert "For a sender whose flows run Linux's cubic: no HyStart detection" in SENDER_COUNTERS_DEFINITION
    assert "the HyStart counters are null" in SENDER_COUNTERS_DEFINITION


def test_a_host_running_cubic_and_a_bpf_algorithm_says_which_the_counts_are_of():
    texts = {"h": (_nstat(TcpExtTCPHystartDelayDetect=0), _nstat(TcpExtTCPHystartDelayDetect=1,
                                                                   TcpExtTCPHystartDelayCwnd=90))}
    got = sender_counters(texts, ["h"], congestion_by_host([("h", "mcubic_nohs"), ("h", "cubic")]))["h"]
    assert got["counters"]["TcpExtTCPHystartDelayDetect"] == 1 and got["mean_cwnd_at_hystart_delay"] == 90.0
    assert got["hystart_not_counted_for"] == ["mcubic_nohs"]
    assert "own HyStart" not in got["hystart_not_counted"]            # the build without HyStart
    assert "(kernel cubic only, not mcubic_nohs)" in sender_counters_line({"h": got})
    # a trace build's name is ctl's program too
    assert sender_counters(texts, ["h"], {"h": ["mcwrap_trace"]})["h"]["counters"]["TcpExtTCPHystartDelayDetect"] is None
