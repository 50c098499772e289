"""bridges.ipfw_parse on the recorded real dummynet output (tests/fixtures/recorded/01_ipfw_dummynet.md).

Every recorded sample is parsed, every field asserted, and the listing re-rendered from the
parsed records must equal the recorded text: a field the parser dropped would make the
re-rendered line differ. Lines marked FORMAT below are built from the dummynet.c format
strings quoted in the fixture (no real capture of those shapes exists there).
"""
from __future__ import annotations

import json
import re

import pytest

from bridges import ipfw_host as H
from bridges import ipfw_parse as P
from bridges import ipfw_records as R
from controller.errors import ParseError
from controller.parsers import parse
from tests.support.shipped import TESTS

FIXTURE = TESTS / "fixtures" / "recorded" / "01_ipfw_dummynet.md"
PROMPT = re.compile(r"#\s*(?:/sbin/)?ipfw\s+(.*)$")


def _samples() -> dict[str, list[tuple[str | None, str]]]:
    """SAMPLE letter -> [(ipfw command or None, its output)], split at the shell prompts."""
    text = FIXTURE.read_text()
    secs = re.split(r"^## SAMPLE (\w) ", text, flags=re.MULTILINE)
    out: dict[str, list[tuple[str | None, str]]] = {}
    for name, body in zip(secs[1::2], secs[2::2]):
        outs: list[tuple[str | None, str]] = []
        for blk in re.split(r"^----8<----$", body, flags=re.MULTILINE)[1::2]:
            cmd: str | None = None
            cur: list[str] = []
            for line in blk.strip("\n").split("\n"):
                m = PROMPT.search(line)
                if m:
                    if cmd is not None or cur:
                        outs.append((cmd, "\n".join(cur)))
                    cmd, cur = m.group(1).strip(), []
                else:
                    cur.append(line)
            outs.append((cmd, "\n".join(cur)))
        out[name] = outs
    return out


SAMPLES = _samples()


def _norm(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.split("\n")).strip("\n")


def test_fixture_samples_found():
    assert [c for c, _ in SAMPLES["A"]] == ["pipe 1 show"]
    assert [c for c, _ in SAMPLES["B"]] == ["pipe show"]
    assert [c for c, _ in SAMPLES["C"]] == ["queue 1 show", "queue 2 show", "queue 1 show", "queue 2 show"]
    assert [c for c, _ in SAMPLES["D"]] == ["queue show", "pipe show"]
    assert [c for c, _ in SAMPLES["F"]] == ["sched show"]
    assert [c for c, _ in SAMPLES["G"]] == [None]


@pytest.mark.parametrize("name,index", [(n, i) for n, outs in SAMPLES.items() for i in range(len(outs))])
def test_every_real_sample_parses_and_renders_back_identically(name, index):
    cmd, text = SAMPLES[name][index]
    listing = P.parse_listing(text)
    assert listing.objects
    assert _norm(listing.render()) == _norm(text)
    # the kind-specific entry points accept their own output
    kind = (cmd or "pipe show").split()[0]
    getattr(P, f"parse_{kind}_show")(text)


# ---- SAMPLE A ---------------------------------------------------------------------------------

def test_sample_a_every_field():
    text = SAMPLES["A"][0][1]
    assert text.splitlines()[0].endswith("burst 0 ")          # the trailing space of the real output
    listing = P.parse_pipe_show(text)
    (pipe,) = listing.objects
    link = pipe.link
    assert (link.number, link.unlimited, link.bw_text, link.bw_unit, link.bw_bps) == (1, False, "100.000", "Kbit/s", 100_000)
    assert link.bw_resolution_bps == 1 and link.bw_printed == "100.000 Kbit/s"
    assert (link.delay_ms, link.burst_text, link.burst_bytes, link.burst_exact) == (300, "0", 0, True)
    fs = pipe.flowset
    assert (fs.fs_nr, fs.queue_slots, fs.queue_bytes, fs.queue_text) == (131073, 50, None, "50 sl.")
    assert (fs.plr_text, fs.plr) == ("0.050000", 0.05)                    # "sl.plr" glued
    assert (fs.count, fs.count_kind, fs.buckets, fs.sched_nr) == (0, "flows", 1, 65537)
    assert (fs.weight, fs.lmax, fs.pri, fs.qm) == (0, 0, 0, "droptail")
    assert fs.red is fs.codel is fs.pie is None
    s = pipe.sched
    assert (s.sched_nr, s.type, s.flags, s.buckets, s.active) == (65537, "FIFO", 0, 0, 1)
    assert pipe.flowset_mask is pipe.sched_mask is pipe.profile is pipe.children is None
    (flow,) = pipe.flows
    assert (flow.bucket, flow.extra, flow.proto, flow.ipv6, flow.flow_id) == (0, False, "ip", False, None)
    assert (flow.src, flow.src_port, flow.dst, flow.dst_port) == ("0.0.0.0", 0, "0.0.0.0", 0)
    # the doc's awk: $5 = Tot_pkt, $6 = Tot_bytes, $9 = Drp
    assert (flow.tot_pkts, flow.tot_bytes, flow.queued_pkts, flow.queued_bytes, flow.drops) == (130, 68642, 0, 0, 6)
    assert [h.line_no for h in listing.headers] == [4]
    assert pipe.totals() == {"tot_pkts": 130, "tot_bytes": 68642, "drops": 6, "queued_pkts": 0, "queued_bytes": 0,
                             "flows": 1}


# ---- SAMPLE B ---------------------------------------------------------------------------------

def test_sample_b_four_pipes_header_once():
    listing = P.parse_pipe_show(SAMPLES["B"][0][1])
    pipes = listing.by_number()
    assert list(pipes) == [40, 41, 61, 60]                               # listing order kept
    expect = {40: (10_000_000, 131112, 65576, 0), 41: (10_000_000, 131113, 65577, 0),
              61: (20_000_000, 131133, 65597, 1), 60: (20_000_000, 131132, 65596, 1)}
    for n, (bps, fs_nr, sched_nr, active) in expect.items():
        p = pipes[n]
        assert (p.link.bw_bps, p.link.bw_text, p.link.bw_unit, p.link.delay_ms) == (bps, f"{bps // 10**6}.000", "Mbit/s", 0)
        assert p.link.bw_resolution_bps == 1000
        assert (p.flowset.fs_nr, p.flowset.sched_nr, p.flowset.queue_slots, p.flowset.plr_text) == (fs_nr, sched_nr, 50, None)
        assert (p.sched.sched_nr, p.sched.active) == (sched_nr, active)
    assert len(listing.headers) == 1                                    # printed once for the whole listing
    f61, = pipes[61].flows
    assert (f61.tot_pkts, f61.tot_bytes, f61.queued_pkts, f61.queued_bytes, f61.drops) == (483, 378358, 9, 6349, 0)
    f60, = pipes[60].flows                                              # no header line before this one
    assert (f60.tot_pkts, f60.tot_bytes, f60.queued_pkts, f60.queued_bytes, f60.drops) == (125, 15881, 0, 0, 0)
    assert pipes[40].flows == () and pipes[41].flows == ()


# ---- SAMPLE C ---------------------------------------------------------------------------------

def _flows(obj):
    return [(f.bucket, f.src, f.src_port, f.dst, f.dst_port, f.tot_pkts, f.tot_bytes, f.queued_pkts, f.queued_bytes,
             f.drops) for f in obj.flows]


def test_sample_c_first_capture_masks_and_run_together_columns():
    (q1,) = P.parse_queue_show(SAMPLES["C"][0][1]).objects
    fs = q1.flowset
    assert (fs.fs_nr, fs.queue_slots, fs.count, fs.buckets, fs.sched_nr, fs.weight, fs.lmax, fs.pri, fs.qm) == \
        (1, 50, 2, 64, 1, 1, 1500, 0, "droptail")
    m = q1.flowset_mask
    assert (m.ipv6, m.queue_extra, m.proto, m.src, m.src_port, m.dst, m.dst_port) == \
        (False, False, 0, "0xffffffff", 0, "0x00000000", 0)
    assert _flows(q1) == [(2, "10.0.0.1", 0, "0.0.0.0", 0, 460, 23968, 0, 0, 0),
                          (6, "10.0.0.3", 0, "0.0.0.0", 0, 8914, 475448, 0, 0, 0)]
    (q2,) = P.parse_queue_show(SAMPLES["C"][1][1]).objects
    assert q2.flowset.fs_nr == 2 and q2.flowset.sched_nr == 2
    assert (q2.flowset_mask.src, q2.flowset_mask.dst) == ("0x00000000", "0xffffffff")
    # "131602 197344212 29 43500 235": columns overflowed and run together
    assert _flows(q2) == [(1, "0.0.0.0", 0, "10.0.0.1", 0, 131602, 197344212, 29, 43500, 235),
                          (3, "0.0.0.0", 0, "10.0.0.3", 0, 148839, 223199376, 46, 69000, 239)]
    assert q2.totals()["drops"] == 474


def test_sample_c_second_capture():
    (q1,) = P.parse_queue_show(SAMPLES["C"][2][1]).objects
    assert q1.flowset.count == 3
    assert _flows(q1) == [(2, "10.0.0.1", 0, "0.0.0.0", 0, 56973, 85424308, 49, 73500, 82),
                          (4, "10.0.0.2", 0, "0.0.0.0", 0, 53684, 80483232, 26, 39000, 87),
                          (6, "10.0.0.3", 0, "0.0.0.0", 0, 16313, 24462252, 33, 49500, 26)]
    (q2,) = P.parse_queue_show(SAMPLES["C"][3][1]).objects
    assert _flows(q2) == [(1, "0.0.0.0", 0, "10.0.0.1", 0, 1149, 61252, 0, 0, 0),
                          (2, "0.0.0.0", 0, "10.0.0.2", 0, 1094, 58504, 1, 72, 0),
                          (3, "0.0.0.0", 0, "10.0.0.3", 0, 1060, 56568, 1, 52, 0)]


# ---- SAMPLE D ---------------------------------------------------------------------------------

def test_sample_d_opnsense_queue_and_pipe():
    queue_text = SAMPLES["D"][0][1]
    listing = P.parse_queue_show(queue_text)
    q0, q1 = listing.objects
    assert (q0.flowset.fs_nr, q0.flowset.count, q0.flowset.sched_nr, q0.flowset.weight) == (10000, 1, 10000, 100)
    assert _flows(q0) == [(0, "0.0.0.0", 0, "0.0.0.0", 0, 3, 499, 0, 0, 0)]
    assert (q1.flowset.fs_nr, q1.flowset.count, q1.flows) == (10001, 0, ())
    pipe_text = SAMPLES["D"][1][1]
    assert pipe_text.splitlines()[0].endswith("burst 0 ")
    (p,) = P.parse_pipe_show(pipe_text).objects
    assert (p.link.number, p.link.bw_bps, p.flowset.fs_nr, p.flowset.sched_nr, p.sched.sched_nr) == \
        (10000, 10_000_000, 141072, 75536, 75536)


# ---- SAMPLE F ---------------------------------------------------------------------------------

def test_sample_f_sched_show_prio_wf2q_children_fq_pie():
    listing = P.parse_sched_show(SAMPLES["F"][0][1])
    s2, s0, s1 = listing.objects
    assert (s2.link.number, s2.link.bw_bps, s2.sched.type, s2.sched.active) == (10002, 3_000_000, "PRIO", 0)
    assert s2.flowset is None and s2.children is None
    assert (s0.link.bw_bps, s0.sched.type, s0.children.flowsets) == (25_000_000, "WF2Q+", (10002, 10001, 10000))
    assert (s1.link.bw_bps, s1.flowset.fs_nr, s1.flowset.sched_nr, s1.sched.type) == (2_000_000, 75537, 10001, "FQ_PIE")
    e = s1.sched_params
    assert (e.type, e.target.text, e.target.us, e.tupdate.us, e.alpha_text, e.beta_text) == \
        ("FQ_PIE", "15ms", 15000, 15000, "0.125", "1.25")
    assert (e.max_burst.us, e.max_ecnth_text, e.quantum, e.limit, e.flows) == (150000, "0.1", 1514, 10240, 1024)
    assert (e.ecn, e.capdrop, e.onoff, e.dre, e.derand) == (True, True, False, False, True)


# ---- SAMPLE G, SAMPLE I, RECON -----------------------------------------------------------------

def test_sample_g_180_mbit():
    a, b = P.parse_pipe_show(SAMPLES["G"][0][1]).objects
    assert (a.link.number, a.link.bw_bps, a.flowset.fs_nr, a.flowset.sched_nr, a.sched.sched_nr) == \
        (10000, 180_000_000, 75536, 10000, 75536)
    assert (b.link.number, b.link.bw_bps, b.flowset.fs_nr, b.sched.sched_nr) == (10001, 180_000_000, 75537, 75537)


def test_sample_i_emulab_first_lines():
    text = FIXTURE.read_text()
    lines = re.findall(r'^\s+(60120: [^"\n]*)', text, flags=re.MULTILINE)       # without the comment's closing quote
    assert len(lines) == 2
    bits, unl = (P.parse_records(line)[0] for line in lines)
    assert (bits.number, bits.bw_text, bits.bw_unit, bits.bw_bps, bits.delay_ms) == (60120, "100.000", "bit/s", 100, 0)
    assert _norm(bits.render()) == lines[0]
    assert (unl.unlimited, unl.bw_bps, unl.bw_printed, unl.delay_ms, unl.burst_text) == (True, None, "unlimited", 0, "0")


def test_recon_listing_parses():
    # The fixture's RECON block (reconstructed from format strings, not a capture).
    text = FIXTURE.read_text().split("## RECON", 1)[1]
    block = "\n".join(line[4:] for line in text.splitlines()
                      if line.startswith(("    0000", "    q13", "     sched")))
    (p,) = P.parse_pipe_show(block).objects
    assert (p.link.bw_bps, p.link.delay_ms, p.flowset.plr_text, p.flowset.queue_slots) == (20_000_000, 50, "0.010000", 50)


# ---- FORMAT: shapes built from the dummynet.c format strings ------------------------------------

def test_format_gbit_and_old_style_mbit():
    new, old = (P.parse_records(t)[0] for t in ("10101:   1.000 Gbit/s    0 ms burst 0",
                                                 "10101: 1000.000 Mbit/s    0 ms burst 0"))
    assert (new.bw_bps, new.bw_unit, new.bw_resolution_bps) == (10**9, "Gbit/s", 10**6)
    assert (old.bw_bps, old.bw_unit, old.bw_text) == (10**9, "Mbit/s", "1000.000")
    assert new.render() == "10101:   1.000 Gbit/s    0 ms burst 0"
    assert old.render() == "10101: 1000.000 Mbit/s    0 ms burst 0"


def test_format_burst_with_prefix_is_marked_inexact():
    (link,) = P.parse_records("00001:  10.000 Mbit/s    0 ms burst 1048576 k")
    assert (link.burst_text, link.burst_bytes, link.burst_exact) == ("1048576 k", 1048576 * 1024, False)


def test_format_byte_queues_with_glued_plr():
    kb, b = (P.parse_records(t)[0] for t in (
        "q131073 64 KBplr 0.010000 0 flows (1 buckets) sched 65537 weight 0 lmax 0 pri 0 droptail",
        "q131073 1500 Bplr 1.000000 0 flows (1 buckets) sched 65537 weight 0 lmax 0 pri 0 droptail"))
    assert (kb.queue_slots, kb.queue_bytes, kb.queue_bytes_exact, kb.queue_text, kb.plr) == (None, 65536, False, "64 KB", 0.01)
    assert (b.queue_bytes, b.queue_bytes_exact, b.queue_text, b.plr_text) == (1500, True, "1500 B", "1.000000")
    assert kb.render().startswith("q131073 64 KBplr 0.010000 0 flows")


def test_format_red_gred_continuation_lines():
    text = ("q00001  50 sl. 0 flows (1 buckets) sched 1 weight 1 lmax 0 pri 0 \n"
            "\t  RED w_q 0.002000 min_th 30 max_th 80 max_p 0.100000\n"
            "q00002  50 sl. 0 flows (1 buckets) sched 1 weight 1 lmax 0 pri 0 \n"
            "\t GRED w_q 0.002000 min_th 30 max_th 80 max_p 0.100000 (ecn)")
    red, gred = P.parse_queue_show(text).objects
    assert (red.flowset.qm, red.flowset.red.w_q, red.flowset.red.min_th, red.flowset.red.max_th,
            red.flowset.red.max_p, red.flowset.red.ecn) == ("RED", 0.002, 30, 80, 0.1, False)
    assert (gred.flowset.qm, gred.flowset.red.gentle, gred.flowset.red.ecn) == ("GRED", True, True)
    assert _norm(P.parse_listing(text).render()) == _norm(text)


def test_format_aqm_codel_and_pie():
    codel, pie = (P.parse_records(t)[0] for t in (
        "q00001  50 sl. 0 flows (1 buckets) sched 1 weight 1 lmax 0 pri 0  AQM CoDel target 5ms interval 100ms NoECN",
        ("q00002  50 sl. 0 flows (1 buckets) sched 1 weight 1 lmax 0 pri 0  AQM type PIE target 15ms tupdate 15ms "
         "alpha 0.125 beta 1.25 max_burst 150ms max_ecnth 0.1 ECN CapDrop OnOff DRE Derand")))
    assert (codel.qm, codel.codel.target.us, codel.codel.interval.us, codel.codel.ecn) == ("CoDel", 5000, 100000, False)
    p = pie.pie
    assert (pie.qm, p.target.us, p.alpha, p.beta, p.max_burst.us, p.max_ecnth) == ("PIE", 15000, 0.125, 1.25, 150000, 0.1)
    assert (p.ecn, p.capdrop, p.onoff, p.dre, p.derand) == (True, True, True, True, True)


def test_format_fq_codel_params_and_times():
    (e,) = P.parse_records(" FQ_CODEL target 5ms interval 100ms quantum 1514 limit 10240 flows 1024 ECN")
    assert (e.type, e.target.us, e.interval.us, e.quantum, e.limit, e.flows, e.ecn) == \
        ("FQ_CODEL", 5000, 100000, 1514, 10240, 1024, True)
    assert e.render() == " FQ_CODEL target 5ms interval 100ms quantum 1514 limit 10240 flows 1024 ECN"
    (e2,) = P.parse_records(" FQ_CODEL target 500us interval 1fs quantum 1514 limit 10240 flows 1024 NoECN")
    assert (e2.target.us, e2.interval.us) == (500, 1_000_000)


def test_format_ipv6_mask_header_row_and_star_marker():
    text = ("q00003  50 sl. 1 flows (64 buckets) sched 3 weight 1 lmax 0 pri 0 droptail\n"
            "\n"
            "        mask: queue,proto: 0x00, flow_id: 0x00000000,  ffff:ffff:ffff:ffff::/0x0000 -> ::/0x0000\n"
            + R.HEADER_V6 + "\n"
            "  7*  ipv6-icmp       0              2001:db8::1/0        2001:db8::2/0       12     1248  0    0   0")
    (q,) = P.parse_queue_show(text).objects
    m = q.flowset_mask
    assert (m.ipv6, m.queue_extra, m.src, m.dst, m.flow_id) == (True, True, "ffff:ffff:ffff:ffff::", "::", 0)
    (f,) = q.flows
    assert (f.bucket, f.extra, f.proto, f.ipv6, f.flow_id, f.src, f.dst, f.tot_pkts, f.tot_bytes) == \
        (7, True, "ipv6-icmp", True, 0, "2001:db8::1", "2001:db8::2", 12, 1248)
    assert P.parse_listing(text).headers[0].ipv6


def test_format_profile_line():
    text = "00001: 100.000 Kbit/s    0 ms burst 0\n\t profile: name \"wifi\" loss 0.140000 samples 100"
    (p,) = P.parse_pipe_show(text).objects
    assert (p.profile.name, p.profile.loss, p.profile.samples) == ("wifi", 0.14, 100)


def test_blank_lines_are_kept_as_records():
    listing = P.parse_listing(SAMPLES["G"][0][1] + "\n\n" + SAMPLES["G"][0][1].splitlines()[0])
    assert any(isinstance(r, R.BlankLine) for r in listing.records)
    assert len(listing.objects) == 3


def test_trailing_spaces_present_or_stripped_parse_the_same():
    text = SAMPLES["B"][0][1]
    padded = "\n".join(line + "   " for line in text.splitlines())
    assert P.parse_pipe_show(padded).render() == P.parse_pipe_show(text).render()


# ---- errors -----------------------------------------------------------------------------------

@pytest.mark.parametrize("text,needle", [
    ("00001: 100.000 Kbit/s  300 ms burst 0\nthis is not ipfw output", "line 2"),
    ("00001: 1.5Mbit/s 300 ms", "line 1"),
    ("  0 ip           0.0.0.0/0             0.0.0.0/0      130    68642  0    0   6", "outside any flowset"),
    ("unrecognized object 12 size 96", "versions disagree"),
    ("q00001  50 sl. 0 flows (1 buckets) sched 1 weight 1 lmax 0 pri 0 ", "no RED line"),
    ("q00001  50 sl. 0 flows (1 buckets) sched 1 weight 1 lmax 0 pri 0 bogus", "queue management"),
])
def test_garbage_is_a_parse_error_naming_the_line(text, needle):
    with pytest.raises(ParseError) as e:
        P.parse_listing(text)
    assert needle in str(e.value)


def test_kind_mismatch_is_an_error():
    with pytest.raises(ParseError):
        P.parse_pipe_show(SAMPLES["C"][0][1])
    with pytest.raises(ParseError):
        P.parse_queue_show(SAMPLES["B"][0][1])


# ---- JSON for `ctl parse` ----------------------------------------------------------------------

def test_json_via_parser_registry():
    data = parse("ipfw-pipe-show", SAMPLES["B"][0][1])
    json.dumps(data)
    assert data["kind"] == "ipfw-pipe-show" and data["header_lines"] == [10]
    p61 = next(o for o in data["objects"] if o["link"]["number"] == 61)
    assert p61["link"]["bw_bps"] == 20_000_000 and p61["link"]["bw_text"] == "20.000"
    assert p61["link"]["bw_resolution_bps"] == 1000
    assert p61["totals"] == {"tot_pkts": 483, "tot_bytes": 378358, "drops": 0, "queued_pkts": 9,
                             "queued_bytes": 6349, "flows": 1}
    q = parse("ipfw-queue-show", SAMPLES["C"][1][1])
    assert q["objects"][0]["flows"][0]["tot_bytes"] == 197344212
    s = parse("ipfw-sched-show", SAMPLES["F"][0][1])
    assert s["objects"][1]["children"]["flowsets"] == [10002, 10001, 10000]
    with pytest.raises(ParseError):
        parse("ipfw-pipe-show", "garbage")


# ---- ipfw -S list, sysctl, version, sampler stream --------------------------------------------

def test_ipfw_list_with_sets_and_disabled_rules():
    rules = H.parse_ipfw_list("00100 set 0 allow ip from any to any via lo0\n"
                              "# DISABLED 10000 set 3 pipe 10101 ip from any to any layer2 out recv em0 xmit em1\n"
                              "65535 set 31 deny ip from any to any\n")
    assert [(r.number, r.set, r.disabled) for r in rules] == [(100, 0, False), (10000, 3, True), (65535, 31, False)]
    assert rules[1].tokens[:2] == ("pipe", "10101")
    assert rules[1].render() == "# DISABLED 10000 set 3 pipe 10101 ip from any to any layer2 out recv em0 xmit em1"
    with pytest.raises(ParseError):
        H.parse_ipfw_list("00100 allow ip from any to any\n")            # listed without -S


def test_sysctl_and_version():
    assert H.parse_sysctl("kern.hz: 1000\nnet.link.bridge.ipfw: 1\n") == {"kern.hz": "1000", "net.link.bridge.ipfw": "1"}
    with pytest.raises(ParseError):
        H.parse_sysctl("sysctl: unknown oid\n")
    assert H.parse_freebsd_version("14.1-RELEASE-p5\n") == ("14.1-RELEASE-p5", 14, 1)
    assert H.parse_freebsd_version("13.3-RELEASE") == ("13.3-RELEASE", 13, 3)
    with pytest.raises(ParseError):
        H.parse_freebsd_version("Linux 6.1")


def test_sample_stream():
    a = SAMPLES["A"][0][1]
    lines = a.splitlines() + ["---ctl-sample 1 1700000001---"] + a.splitlines() + ["---ctl-sample 2 1700000002---",
                                                                                    "00001: 100.000"]
    samples = H.parse_sample_stream(lines)
    assert [(s.seq, s.epoch) for s in samples] == [(1, 1700000001), (2, 1700000002)]
    assert samples[0].listing.objects[0].flows[0].drops == 6
    p = H.SampleStreamParser()
    for line in lines:
        p.feed(line)
    assert p.pending_lines == 1                                           # the cut listing is never a sample
    with pytest.raises(ParseError, match="sample 7"):
        H.parse_sample_stream(["garbage", "---ctl-sample 7 1700000000---"])
