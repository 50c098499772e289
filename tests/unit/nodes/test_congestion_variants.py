"""The variants for analysis and MCubic's HyStart in the reference model, against hand-computed
cases (and the catalog that names them): mcubic_wrap (Linux 3.14's u32 arithmetic), mcubic_stretch
(the concave part stretched to start at the window after the loss), balia_floor (the authors'
integer alpha), and hystart_update of Linux 6.18's tcp_cubic.c."""
from __future__ import annotations

import json

import pytest

from controller.commands import CommandResult
from nodes.congestion.build import compile_argv
from nodes.congestion.catalog import ALGORITHMS, KERNEL_BUILTIN, NAME_MAX, SHORT_MAX, paper_algorithms, variants
from nodes.congestion.driver import CongestionDriver
from nodes.congestion.model import (HYSTART_ACK_TRAIN, HYSTART_DELAY, MC_C_SCALED, U32_MAX, HyStart, View,
                                    balia_decrease_spec, balia_floor_decrease_spec, balia_ssthresh, hystart_update,
                                    mcubic_cnt, mcubic_delayed_ack, mcubic_kc, mcubic_stretch_cnt,
                                    mcubic_stretch_target_spec, mcubic_wrap_cnt)

MS = 1000


# ---- the catalog ---------------------------------------------------------------------------------

def test_the_papers_algorithms_and_their_variants():
    assert paper_algorithms() == ["lia", "olia", "balia", "wvegas", "mcubic", "bbr3"]
    assert variants() == ["mcubic_wrap", "mcubic_stretch", "mcubic_nohs", "balia_floor", "cubic314"]
    for name in variants():
        a = ALGORITHMS[name]
        if a.variant_of in KERNEL_BUILTIN:          # cubic314: a variant of the kernel's own cubic, its own source
            assert a.variant_of not in ALGORITHMS and not a.defines and a.source != "cubic.bpf.c", name
            continue
        base = ALGORITHMS[a.variant_of]
        assert base.variant_of is None and a.source == base.source and a.defines, name   # one source of truth
    assert all(a.reading.strip() for a in ALGORITHMS.values())
    assert "HyStart" in ALGORITHMS["mcubic"].base and "no HyStart" in ALGORITHMS["mcubic_nohs"].base


def test_every_name_the_kernel_sees_fits_and_is_distinct():
    kernel_names = [a.name for a in ALGORITHMS.values()] + [a.trace_name for a in ALGORITHMS.values()]
    assert all(len(n) <= NAME_MAX for n in kernel_names), [n for n in kernel_names if len(n) > NAME_MAX]
    assert len(set(kernel_names)) == len(kernel_names)
    stems = [a.stem for a in ALGORITHMS.values()]
    assert all(len(s) <= SHORT_MAX for s in stems) and len(set(stems)) == len(stems)
    maps = [f"{s}_{m}" for s in stems for m in ("conns", "clash", "trace", "tidx")]
    assert all(len(m) <= NAME_MAX for m in maps) and len(set(maps)) == len(maps)       # never cut to one name
    assert ALGORITHMS["mcubic_stretch"].trace_name == "mcstretch_trace"
    assert ALGORITHMS["lia"].trace_name == "lia_trace"


def test_a_variant_is_its_source_with_its_defines():
    argv = compile_argv("/usr/bin/clang", ALGORITHMS["mcubic_wrap"].path, __import__("pathlib").Path("/o"),
                        __import__("pathlib").Path("/inc"), "x86", True, ALGORITHMS["mcubic_wrap"])
    assert {"-DCTL_NAME=mcwrap", "-DCTL_ALG=mcubic_wrap", "-DMC_WRAP", "-DCTL_TRACE"} <= set(argv)
    plain = compile_argv("/usr/bin/clang", ALGORITHMS["mcubic"].path, __import__("pathlib").Path("/o"),
                         __import__("pathlib").Path("/inc"), "x86", False, ALGORITHMS["mcubic"])
    assert not [a for a in plain if a.startswith("-DCTL_") or a.startswith("-DMC_")]


def test_the_driver_reads_what_the_coupling_map_held_at_unload():
    drv = CongestionDriver("sa1", "run:x")
    def res(args, out):
        return CommandResult("sa1", ("python3", "-c", "SRC", *args), 0, out, "")
    results = [res(("unload", "mcubic", "run:x"), json.dumps({"ok": True, "action": "unregistered", "name": "mcubic",
                                                              "id": 7, "conns_left": 0}) + "\n"),
               res(("unload", "olia", "run:x"), json.dumps({"ok": True, "action": "left", "name": "olia"}) + "\n"),
               res(("unload", "lia", "run:x"), json.dumps({"ok": True, "action": "unregistered", "name": "lia",
                                                           "id": 9, "conns_left": 2}) + "\n"),
               res(("unload", "balia", "run:x"), json.dumps({"ok": True, "action": "unregistered", "name": "balia",
                                                             "id": 9, "conns_left": None}) + "\n")]
    assert drv.conns_left(results) == {"mcubic": 0, "lia": 2, "balia": None}     # olia: another run still holds it


def test_the_driver_reads_how_many_subflows_a_program_refused_to_couple():
    """hostctl's `coupling_refused`: subflows whose slot (subflow id modulo 8) a live sibling held."""
    drv = CongestionDriver("sa1", "run:x")
    def res(args, out):
        return CommandResult("sa1", ("python3", "-c", "SRC", *args), 0, out, "")
    results = [res(("unload", "mcubic", "run:x"), json.dumps({"ok": True, "action": "unregistered", "name": "mcubic",
                                                              "conns_left": 0, "coupling_refused": 1}) + "\n"),
               res(("unload", "lia", "run:x"), json.dumps({"ok": True, "action": "unregistered", "name": "lia",
                                                           "conns_left": 0, "coupling_refused": 0}) + "\n"),
               res(("unload", "olia", "run:x"), json.dumps({"ok": True, "action": "unregistered", "name": "olia",
                                                            "conns_left": 0}) + "\n"),     # an older hostctl
               res(("unload", "balia", "run:x"), json.dumps({"ok": True, "action": "left", "name": "balia"}) + "\n")]
    assert drv.coupling_refused(results) == {"mcubic": 1, "lia": 0, "olia": None}


def test_the_driver_reads_how_many_gone_subflows_a_program_took_out_itself():
    """hostctl's `subflows_reaped` (ctl_dead): subflows whose socket the kernel freed without
    `.release`, taken out of their connection by the program; None from an older hostctl."""
    drv = CongestionDriver("sa1", "run:x")
    def res(args, out):
        return CommandResult("sa1", ("python3", "-c", "SRC", *args), 0, out, "")
    results = [res(("unload", "balia", "run:x"), json.dumps({"ok": True, "action": "unregistered", "name": "balia",
                                                             "conns_left": 0, "subflows_reaped": 3}) + "\n"),
               res(("unload", "lia", "run:x"), json.dumps({"ok": True, "action": "unregistered", "name": "lia",
                                                           "conns_left": 0}) + "\n"),
               res(("unload", "olia", "run:x"), json.dumps({"ok": True, "action": "left", "name": "olia"}) + "\n")]
    assert drv.subflows_reaped(results) == {"balia": 3, "lia": None}


def test_the_driver_reads_mcubics_own_hystart_exits():
    """hostctl's `hystart_exits` (mcubic.bpf.c's counters; the kernel's count only its Cubic):
    kept per program; a program without them, or a malformed answer, is left out."""
    drv = CongestionDriver("sa1", "run:x")
    def res(args, out):
        return CommandResult("sa1", ("python3", "-c", "SRC", *args), 0, out, "")
    results = [res(("unload", "mcubic", "run:x"), json.dumps({"ok": True, "action": "unregistered", "name": "mcubic",
                                                              "hystart_exits": {"ack_train": 2, "delay": 1}}) + "\n"),
               res(("unload", "lia", "run:x"), json.dumps({"ok": True, "action": "unregistered", "name": "lia"}) + "\n"),
               res(("unload", "mcubic_wrap", "run:x"), json.dumps({"ok": True, "action": "unregistered",
                                                                   "name": "mcubic_wrap",
                                                                   "hystart_exits": {"ack_train": "2"}}) + "\n")]
    assert drv.hystart_exits(results) == {"mcubic": {"ack_train": 2, "delay": 1}}


def test_hostctl_never_shows_a_slot_socket_address():
    """The slots' `sk` (a kernel address the program compares) stays out of what hostctl reports."""
    from nodes.congestion import hostctl
    elem = {"key": 1, "value": {"token": 5, "nactive": 1, "s": [
        {"cwnd": 10, "rtt_us": 100, "aux": 0, "token": 5, "id": 1, "sk": 0xffff888100000000}] +
        [{"cwnd": 0, "rtt_us": 0, "aux": 0, "token": 0, "id": 0, "sk": 0}] * 7}}
    e = hostctl.entry_summary(elem)
    assert e["slots"] == [{"slot": 0, "cwnd": 10, "rtt_us": 100, "aux": 0, "token": 5, "id": 1}]


def test_hostctl_reads_the_clash_counter_with_or_without_btf(monkeypatch):
    from nodes.congestion import hostctl
    monkeypatch.setattr(hostctl, "_bpftool_json", lambda *a: [{"key": ["0x00"] * 4, "value": ["0x03", "0x00", "0x00",
                                                                                              "0x00"],
                                                               "formatted": {"key": 0, "value": 3}}])
    assert hostctl._counter(5) == 3
    monkeypatch.setattr(hostctl, "_bpftool_json", lambda *a: [{"key": ["0x00"] * 4,
                                                               "value": ["0x02", "0x01", "0x00", "0x00"]}])
    assert hostctl._counter(5) == 258
    monkeypatch.setattr(hostctl, "_bpftool_json", lambda *a: None)
    assert hostctl._counter(5) is None and hostctl._counter(None) is None
    assert hostctl._clash_map({"mcubic_conns": 4, "mcubic_clash": 6}) == 6


# ---- mcubic_wrap: Linux 3.14's bictcp_update with K_mptcp ---------------------------------------------

K_I, K_J = 4316, 2000                      # 2^-10 s: K_i = cbrt((100 - 70) / 0.4), a sibling's K_j
KC = K_I + K_I * K_I // K_J                # K_mptcp = 13629 units = 13.3 s


def test_below_zero_the_literal_reading_freezes_and_the_wrapped_one_regrows_by_hand():
    delta = (MC_C_SCALED * KC ** 3) >> 40   # C (K_mptcp - 0)^3 = 0.4 * 13.31^3 = 944 packets > W_max = 100
    assert delta == 944
    cnt, target = mcubic_cnt(cwnd=70, t=0, kc=KC, origin=100, last_max_cwnd=100)
    assert (cnt, target) == (7000, 0)                                   # 100 cwnd: flat
    cnt, target = mcubic_wrap_cnt(cwnd=70, t=0, kc=KC, origin=100, last_max_cwnd=100, delayed_ack=2 << 4)
    assert target == (100 - 944) % 2 ** 32 == 4294966452                # u32: wrapped
    assert cnt == 1                                                     # 70 // (target - 70) = 0 -> 3.14's minimum


def test_wrap_above_zero_follows_3_14_with_its_delayed_ack_units():
    # at t = K_mptcp the target is W_max: cnt = 70 // 30 = 2 packets, in ACKs with 2 packets per ACK: 1
    assert mcubic_wrap_cnt(70, KC, KC, 100, 100, delayed_ack=2 << 4) == (1, 100)
    assert mcubic_wrap_cnt(70, KC, KC, 100, 100, delayed_ack=1 << 4) == (2, 100)   # one packet per ACK
    # target at or below the window: 100 cwnd packets -> 3500 ACKs at 2 packets per ACK
    assert mcubic_wrap_cnt(100, KC, KC, 100, 100, delayed_ack=2 << 4) == (5000, 100)
    # before the first loss the cnt is at most 20 packets (5 % per RTT)
    assert mcubic_wrap_cnt(70, 0, 0, 70, 0, delayed_ack=1 << 4)[0] == 20


def test_the_delayed_ack_ratio_is_3_14s_moving_average():
    r = 2 << 4
    for _ in range(200):
        r = mcubic_delayed_ack(r, 1)                  # every ACK acks one packet
    assert r == 16 + 15                               # 15/16 r + 1 settles at 31 (integer arithmetic)
    assert mcubic_delayed_ack(32 << 4, 64) == 32 << 4  # clamped at 32 << 4
    assert mcubic_delayed_ack(0, 0) == 1


# ---- mcubic_stretch --------------------------------------------------------------------------------

def test_stretch_starts_at_the_window_after_the_loss_and_reaches_w_max_at_k_mptcp_by_hand():
    # t = 0: the whole span below W_max: the target is W_0 itself
    assert mcubic_stretch_cnt(cwnd=70, t=0, kc=KC, origin=100, last_max_cwnd=100, w0=70) == (7000, 70)
    # half way: W_max - 30 * (1/2)^3 = 96.25; the integer drop 30 * 0.1249 = 3.75 is floored: 97
    cnt, target = mcubic_stretch_cnt(cwnd=80, t=KC // 2 + 1, kc=KC, origin=100, last_max_cwnd=100, w0=70)
    assert target == 97 and cnt == 80 // 17
    assert mcubic_stretch_target_spec(13.3 / 2, 13.3, 100, 70) == pytest.approx(96.25)
    # at K_mptcp: W_max; after it Cubic's convex part with the paper's C
    assert mcubic_stretch_cnt(90, KC, KC, 100, 100, 70)[1] == 100
    assert mcubic_stretch_cnt(90, KC + 10 * 1024, KC, 100, 100, 70)[1] == 500 == mcubic_cnt(90, KC + 10 * 1024, KC,
                                                                                            100, 100)[1]


@pytest.mark.parametrize("frac", [0.05, 0.25, 0.5, 0.75, 0.95])
def test_stretch_integer_curve_matches_its_definition(frac):
    t = int(KC * frac)
    _, target = mcubic_stretch_cnt(60, t, KC, 1000, 1000, 700)
    assert target == pytest.approx(mcubic_stretch_target_spec(t / 1024, KC / 1024, 1000, 700), abs=1.0)


def test_stretch_and_literal_agree_without_coupling():
    # one subflow: K_mptcp = K_i, and the stretched curve is Cubic's own (C_i = C)
    v = View((70,), (100 * MS,), (K_I,), 0)
    kc = mcubic_kc(v, K_I)
    assert kc == K_I
    for t in (0, 1000, 2000, 3000, 4000):
        lit = mcubic_cnt(70, t, kc, 100, 100)[1]
        st = mcubic_stretch_cnt(70, t, kc, 100, 100, 70)[1]
        assert abs(lit - st) <= 1, t


# ---- balia_floor -----------------------------------------------------------------------------------

def test_balia_floor_cuts_half_or_three_quarters_never_between_by_hand():
    # x_max / x_r = 1.5: the paper cuts w/2 * 1.5 (10 -> 3 in integers), the authors' code floors alpha to 1
    v = View((15, 10), (100 * MS, 100 * MS), (0, 0), 1)
    assert balia_ssthresh(v, 10) == 3
    assert balia_ssthresh(v, 10, floor=True) == 5
    assert balia_decrease_spec([15, 10], [100 * MS] * 2, 1) == pytest.approx(2.5)
    assert balia_floor_decrease_spec([15, 10], [100 * MS] * 2, 1) == 5.0
    # x_max / x_r >= 2: both are capped at 3/2
    v2 = View((25, 10), (100 * MS, 100 * MS), (0, 0), 1)
    assert balia_ssthresh(v2, 10) == balia_ssthresh(v2, 10, floor=True) == 3
    # the largest subflow (alpha = 1): both halve
    assert balia_ssthresh(View((15, 10), (100 * MS,) * 2, (0, 0), 0), 15, floor=True) == 8


# ---- HyStart (Linux 6.18 tcp_cubic.c) ------------------------------------------------------------------

def st(round_start=0, last_ack=0, end_seq=5000, curr_rtt=U32_MAX, sample_cnt=0) -> HyStart:
    return HyStart(round_start, last_ack, end_seq, curr_rtt, sample_cnt)


def hs(state, *, now, cwnd=20, delay=40 * MS, delay_min=40 * MS, ack_delay=0, paced=False, snd_una=4000,
       snd_nxt=9000):
    return hystart_update(state, now=now, snd_una=snd_una, snd_nxt=snd_nxt, cwnd=cwnd, delay=delay,
                          delay_min=delay_min, ack_delay=ack_delay, paced=paced)


def test_a_new_round_starts_when_snd_una_passes_the_rounds_end():
    s, found = hs(st(round_start=1, last_ack=2, end_seq=3000, curr_rtt=41000, sample_cnt=8), now=77_000,
                  cwnd=10, snd_una=3001, snd_nxt=12345)
    assert s == HyStart(77_000, 77_000, 12345, U32_MAX, 0) and found == 0   # below the low window: nothing more
    s, _ = hs(st(end_seq=3000), now=77_000, cwnd=10, snd_una=3000)
    assert s == st(end_seq=3000)                                            # not after: no reset (cwnd < 16)


def test_ack_train_fires_past_half_the_min_rtt_by_hand():
    # delay_min 40 ms, unpaced: threshold (40000 + 0) / 2 = 20000 us after the round's start
    s, found = hs(st(round_start=100, last_ack=100 + 18_600), now=100 + 20_001, delay=40 * MS)
    assert found == HYSTART_ACK_TRAIN and s.last_ack == 100 + 20_001
    _, found = hs(st(round_start=100, last_ack=100 + 18_600), now=100 + 20_000)
    assert found == 0                                                       # not past it
    # ACKs more than 2 ms apart are no train
    s, found = hs(st(round_start=100, last_ack=100 + 18_000), now=100 + 20_001)
    assert found == 0 and s.last_ack == 100 + 18_000
    # a paced socket waits the whole min RTT (plus the TSO cushion)
    _, found = hs(st(round_start=0, last_ack=29_000), now=30_000, paced=True)
    assert found == 0
    _, found = hs(st(round_start=0, last_ack=40_500), now=41_001, paced=True, ack_delay=1000)
    assert found == HYSTART_ACK_TRAIN


def test_delay_fires_after_eight_samples_past_min_rtt_plus_an_eighth_clamped_by_hand():
    # delay_min 40 ms: threshold 40 + clamp(5, 4, 16) = 45 ms; the round's minimum after 8 samples
    s = st()
    for i in range(8):
        s, found = hs(s, now=1000 * i, delay=60 * MS, snd_una=4000 + i)
        assert found == 0 and s.sample_cnt == i + 1                      # sampling only
    s2, found = hs(s, now=9000, delay=45_001)
    assert found == HYSTART_DELAY and s2.curr_rtt == 45_001
    _, found = hs(s, now=9000, delay=45_000)
    assert found == 0
    # short RTT: the 4 ms floor; long RTT: the 16 ms ceiling
    eight = st(sample_cnt=8, curr_rtt=14_001)
    assert hs(eight, now=0, delay=50_000, delay_min=10_000)[1] == HYSTART_DELAY
    assert hs(st(sample_cnt=8, curr_rtt=14_000), now=0, delay=50_000, delay_min=10_000)[1] == 0
    assert hs(st(sample_cnt=8, curr_rtt=216_001), now=0, delay=300_000, delay_min=200_000)[1] == HYSTART_DELAY
    assert hs(st(sample_cnt=8, curr_rtt=216_000), now=0, delay=300_000, delay_min=200_000)[1] == 0


def test_both_detectors_can_fire_on_one_ack():
    s = st(round_start=0, last_ack=24_000, sample_cnt=8, curr_rtt=50_000)
    _, found = hs(s, now=25_000, delay=50_000)
    assert found == HYSTART_ACK_TRAIN | HYSTART_DELAY
