"""cubic314's reference model (nodes/congestion/model_cubic314.py) against hand-computed cases of
Linux 3.14's tcp_cubic.c arithmetic: the epoch start and K, the u32 wrap of the target and of
`100 * cwnd`, the TCP-friendly region, the HZ/32 skip, the delayed-ACK conversion, 3.14's HyStart
(and where it differs from 6.18's), the decrease; and its catalog entry (a variant of the kernel's
cubic for analysis, never named `cubic`)."""
from __future__ import annotations

from pathlib import Path

from nodes.congestion import model_cubic314 as m
from nodes.congestion.catalog import ALGORITHMS, KERNEL_BUILTIN
from nodes.congestion.model import EV_HYSTART, EV_INCREASE, EV_SSTHRESH, TraceRecord, View, hystart_update

U32 = 1 << 32


def test_a_new_epoch_after_a_loss_starts_below_the_old_maximum():
    # last_max 100, cwnd 70: K = cbrt(2^40 / 410 * 30) = cbrt(80452070310) = 4316 (2^-10 s; 4.21 s,
    # cbrt(30 / 0.4) = 4.217 s); at t = 0: delta = 410 * 4316^3 >> 40 = 29, target 71, cnt = 70 / 1
    # = 70 ACKs; friendliness: ack_cnt 1 < 70 * 15 >> 3 = 131, tcp_cwnd 70 not above; (70 << 4) / 32 = 35
    c = m.update(m.Curve(last_max_cwnd=100), 70, 5000)
    assert (c.epoch_start, c.ack_cnt, c.tcp_cwnd, c.bic_k, c.origin, c.cnt) == (5000, 1, 70, 4316, 100, 35)
    assert abs(c.bic_k / 1024 - m.k_spec(100, 70)) < 0.01


def test_below_the_origin_the_u32_target_wraps_and_cnt_falls_to_one():
    # K 4096 (4 s) at t = 0 with origin 2: delta = 410 * 2^36 >> 40 = 25, target 2 - 25 wraps to
    # 2^32 - 23; cnt = 10 / (2^32 - 33) = 0; (0 << 4) / 32 = 0 becomes 1
    c = m.Curve(epoch_start=1000, last_cwnd=9, bic_k=4096, origin=2, tcp_cwnd=10, last_max_cwnd=2)
    assert m.target(c, 1000) == U32 - 23
    assert m.update(c, 10, 1000).cnt == 1


def test_100_cwnd_and_the_delayed_ack_shift_are_u32():
    # target at or below cwnd: cnt = 100 * 2^26 = 6710886400, mod 2^32 = 2415919104; << 4 is
    # 38654705664 = 9 * 2^32, so 0 in u32: cnt 1
    w = 1 << 26
    c = m.Curve(epoch_start=1, last_cwnd=w - 1, origin=w, tcp_cwnd=w, last_max_cwnd=w, delayed_ack=32)
    assert m.update(c, w, 1).cnt == 1


def test_the_tcp_friendly_region_caps_cnt():
    # cwnd 50 at its origin 100 ms into the epoch: t = (100 << 10) / 1000 = 102, delta = 0, target 50
    # = cwnd, so cnt = 5000; friendliness: 401 ACKs, one Reno packet per 50 * 15 >> 3 = 93 of them:
    # 401 -> 308 -> 215 -> 122 -> 29, tcp_cwnd 54; cnt = min(5000, 50 / 4 = 12); (12 << 4) / 16 = 12
    c = m.Curve(ack_cnt=400, last_cwnd=50, last_time=1000, epoch_start=1000, tcp_cwnd=50, origin=50,
                last_max_cwnd=50, delayed_ack=16)
    out = m.update(c, 50, 1100)
    assert (out.cnt, out.ack_cnt, out.tcp_cwnd) == (12, 29, 54)
    assert m.BETA_SCALE == 15
    assert abs(m.friendly_window_spec(400, 50) - 54.3) < 0.1


def test_cnt_is_recomputed_at_most_every_hz_over_32_while_the_window_stands():
    c = m.Curve(cnt=7, ack_cnt=3, last_cwnd=40, last_time=1000, epoch_start=900, tcp_cwnd=40, origin=60,
                bic_k=3000, last_max_cwnd=60)
    kept = m.update(c, 40, 1031)                          # 31 ms = HZ / 32: skipped, the ACK counted
    assert (kept.cnt, kept.ack_cnt, kept.last_time) == (7, 4, 1000)
    again = m.update(c, 40, 1032)
    assert again.last_time == 1032 and again.cnt != 7
    moved = m.update(c, 41, 1001)                         # a new window: recomputed at once
    assert moved.last_cwnd == 41 and moved.last_time == 1001


def test_the_decrease_and_fast_convergence():
    assert m.ssthresh(100, 120) == (70, 85)               # 71700 / 1024; 100 * 1741 / 2048 = 85
    assert m.ssthresh(100, 80) == (70, 100)
    assert m.ssthresh(2, 0) == (2, 2)


def test_slow_start_steps_and_the_delayed_ack_ratio():
    assert m.slow_start(10, 11, 5) == 12                  # at most ssthresh + 1 (3.14)
    assert m.slow_start(10, 100, 2) == 12
    assert m.cong_avoid_ai(20, 5, 5) == (21, 0) and m.cong_avoid_ai(20, 4, 5) == (20, 5)
    assert m.delayed_ack(32, 1) == 31 and m.delayed_ack(16, 2) == 17 and m.delayed_ack(512, 40) == 512
    assert m.delay_of(20_000) == 160 and m.delay_of(50) == 1


def test_hystart_ack_train_within_2_ms_beyond_half_the_minimum_rtt():
    # delay_min 20 ms = 160 (ms << 3): the train must span more than 160 >> 4 = 10 ms
    st, found = m.hystart_update(m.Round(1000, 1010), now=1012, delay=170, delay_min=160)
    assert found == m.HYSTART_ACK_TRAIN and st.last_ack == 1012
    st, found = m.hystart_update(m.Round(1000, 1010), now=1013, delay=170, delay_min=160)   # 3 ms gap
    assert found == 0 and st.last_ack == 1010
    _, found = m.hystart_update(m.Round(1000, 1008), now=1010, delay=170, delay_min=160)    # 10 ms: not more
    assert found == 0


def test_hystart_delay_threshold_is_a_sixteenth_of_delay_min_where_6_18_takes_an_eighth():
    # delay_min 100 ms (800): 3.14's threshold 800 >> 4 = 50 (6.25 ms); a round minimum 6.375 ms above
    # fires here, while 6.18's threshold (100 ms / 8 = 12.5 ms) does not fire on the same samples
    st = m.Round(0, 0, curr_rtt=851, sample_cnt=8)
    _, found = m.hystart_update(st, now=500, delay=900, delay_min=800)
    assert found == m.HYSTART_DELAY
    from nodes.congestion.model import HyStart
    _, found618 = hystart_update(HyStart(0, 0, 10, 106_375, 8), now=500_000, snd_una=1, snd_nxt=20, cwnd=32,
                                 delay=112_500, delay_min=100_000, ack_delay=0, paced=False)
    assert found618 == 0
    # the clamp: 4 ms at least (delay_min 20 ms: 160 >> 4 = 10 < 32), 16 ms at most
    assert m.hystart_update(m.Round(0, 0, 160 + 32, 8), now=9, delay=300, delay_min=160)[1] == 0
    assert m.hystart_update(m.Round(0, 0, 160 + 33, 8), now=9, delay=300, delay_min=160)[1] == m.HYSTART_DELAY
    assert m.hystart_update(m.Round(0, 0, 4000 + 129, 8), now=9, delay=9000, delay_min=4000)[1] == m.HYSTART_DELAY
    # the first 8 samples only collect the round's minimum (0 = none yet)
    st, found = m.hystart_update(m.Round(0, 0), now=9, delay=300, delay_min=100)
    assert (found, st.curr_rtt, st.sample_cnt) == (0, 300, 1)


def _rec(event: int, cwnd: int, ssthresh: int, acked: int, inputs: tuple, outputs: tuple) -> TraceRecord:
    return TraceRecord(1, event, cwnd, ssthresh, acked, 0, 0, 0, View((), (), (), 0),
                       tuple(inputs) + (0,) * (12 - len(inputs)), tuple(outputs) + (0,) * (6 - len(outputs)))


def test_replay_of_traced_decisions():
    inc = _rec(EV_INCREASE, 70, 70, 1, (5000, 0, 0, 0, 0, 0, 0, 0, 0, 100, 0, 32), (35, 1, 70, 4316, 100, 5000))
    assert m.replay(inc) == (35, 1, 70, 4316, 100, 5000)
    hs = _rec(EV_HYSTART, 20, 1 << 30, 170, (1012, 160, 1000, 1010, 0, 0), (m.HYSTART_ACK_TRAIN, 20, 1012, 170, 1))
    assert m.replay(hs) == (m.HYSTART_ACK_TRAIN, 20, 1012, 170, 1)
    assert m.replay(_rec(EV_SSTHRESH, 100, 50, 0, (120,), ())) == (70, 85)
    # a decrease of a socket whose window read 2079186382 (seen once in an MPTCP trace): u32 products
    assert m.replay(_rec(EV_SSTHRESH, 2079186382, 0, 0, (21,), ())) == (413070, 2079186382)
    assert m.replay(_rec(m.EV_SLOW_START, 10, 11, 5, (U32 - 1,), ())) == (12,)
    assert m.replay(_rec(m.EV_UNDO, 10, 11, 0, (14,), ())) == (14,)
    replayed, bad = m.check_trace([inc, hs, _rec(EV_SSTHRESH, 100, 50, 0, (120,), (70, 84))])
    assert replayed == 3 and len(bad) == 1 and bad[0][1] == (70, 85)


def test_the_catalog_names_it_a_variant_of_the_kernels_cubic_never_cubic():
    a = ALGORITHMS["cubic314"]
    assert a.variant_of == "cubic" and a.variant_of in KERNEL_BUILTIN and a.is_variant and not a.coupled
    assert a.name != "cubic" and a.trace_name == "cubic314_trace" and a.path.exists()
    assert a.title == "Cubic after Linux 3.14's tcp_cubic.c, BPF; not the kernel's cubic"
    assert len(a.differences) >= 5 and any("clock" in d for d in a.differences)
    assert any("ack_delay" in d for d in a.differences)
    header = " ".join(w for w in Path(a.path).read_text().split("*/", 1)[0].split() if w != "*")
    assert "NOT the kernel's cubic" in header and "hooks force a difference" in header
