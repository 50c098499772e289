"""The classic dummynet listing (FreeBSD <= 7, macOS dnctl, Emulab/GENI) parsed back from lines
rendered with the very printf formats of that code (ipfw2.c list_pipes / print_flowset_parms /
list_queues, quoted in bridges/ipfw_classic.py), over a grid of values: every bandwidth unit,
unlimited and a clock interface, slot and byte queues (the KiB truncation from 8 KiB), plr,
RED and gentle RED, masks, IPv4 and IPv6 flows, verbose lines, queues of a pipe."""
from __future__ import annotations

import itertools
import json
import subprocess
import sys

import pytest

from bridges import ipfw_classic as C
from bridges.ipfw_parse import pipe_show_to_json
from controller.errors import ParseError

SCALE_RED = 16


def c_bw(b: float, if_name: str = "") -> str:
    if if_name:
        return if_name
    if b == 0:
        return "unlimited"
    if b >= 1_000_000:
        return "%7.3f Mbit/s" % (b / 1_000_000)
    if b >= 1000:
        return "%7.3f Kbit/s" % (b / 1000)
    return "%7.3f bit/s " % b


def c_flowset(prefix: str, qsize: int, in_bytes: bool, plr: int, elements: int, buckets: int,
              red: tuple | None = None) -> str:
    if in_bytes:
        qs = "%d KB" % (qsize // 1024) if qsize >= 8192 else "%d B" % qsize
    else:
        qs = "%3d sl." % qsize
    p = "plr %f" % (plr / 0x7fffffff) if plr else ""
    if red:
        gentle, w_q, min_th, max_th, max_p = red
        r = "\n\t  %cRED w_q %f min_th %d max_th %d max_p %f" % ("G" if gentle else " ", w_q, min_th, max_th, max_p)
    else:
        r = "droptail"
    return "%s %s%s %d queues (%d buckets) %s\n" % (prefix, qs, p, elements, buckets, r)


def c_pipe(nr: int, bw: float, delay: int, **fs) -> str:
    prefix = "%05d: %s %4d ms " % (nr, c_bw(bw, fs.pop("if_name", "")), delay)
    return c_flowset(prefix, **fs)


BWS = [0, 500, 64_000, 999_999, 1_000_000, 10_000_000, 123_456_789, 1_000_000_000]
QUEUES = [(50, False), (2, False), (100, False), (4096, True), (8192, True), (65536, True), (1_048_576, True)]
PLRS = [0, int(0.01 * 0x7fffffff), int(1e-6 * 0x7fffffff), 0x7fffffff]


@pytest.mark.parametrize("bw, queue, plr", list(itertools.product(BWS, QUEUES, PLRS)))
def test_a_pipe_line_of_every_shape(bw, queue, plr):
    qsize, in_bytes = queue
    text = c_pipe(7, bw, 250, qsize=qsize, in_bytes=in_bytes, plr=plr, elements=0, buckets=64)
    (o,) = C.parse(text)
    assert o.kind == "pipe" and o.number == 7 and o.delay_ms == 250 and o.buckets == 64 and o.queues == 0
    if bw == 0:
        assert o.bw_bps is None and o.bw_text == "unlimited"
    else:
        unit = 1_000_000 if bw >= 1_000_000 else 1000 if bw >= 1000 else 1
        assert abs(o.bw_bps - bw) <= unit * 0.0005 + 0.5          # 3 decimals of the printed unit
    if in_bytes:
        assert o.queue_slots is None
        assert o.queue_bytes == (qsize // 1024 * 1024 if qsize >= 8192 else qsize)
        assert o.queue_bytes_exact == (qsize < 8192)
    else:
        assert o.queue_slots == qsize and o.queue_bytes is None
    assert o.plr == pytest.approx(plr / 0x7fffffff, abs=5e-7)
    assert (o.plr_text is None) == (plr == 0)


@pytest.mark.parametrize("gentle", [False, True])
def test_red_and_gentle_red(gentle):
    text = c_pipe(3, 256_000, 100, qsize=65536, in_bytes=True, plr=0, elements=0, buckets=1,
                  red=(gentle, 0.002, 10, 30, 0.1))
    (o,) = C.parse(text)
    assert o.aqm == ("gred" if gentle else "red")
    assert o.red == {"w_q": 0.002, "min_th": 10, "max_th": 30, "max_p": 0.1}


def test_flows_masks_headers_and_verbose_lines():
    text = (c_pipe(1, 10_000_000, 50, qsize=50, in_bytes=False, plr=0, elements=2, buckets=64)
            + "    mask: 0x%02x 0x%08x/0x%04x -> 0x%08x/0x%04x\n" % (0x06, 0xffffff00, 0, 0, 0xffff)
            + "BKT Prot ___Source IP/port____ ____Dest. IP/port____ Tot_pkt/bytes Pkt/Byte Drp\n"
            + "%3d %-4s %15s/%-5d %15s/%-5d %4d %8d %2d %4d %3d\n" % (5, "tcp", "192.168.1.10", 51320, "10.0.0.2",
                                                                     80, 1532, 1872312, 3, 4500, 12)
            + "   S %20d  F %20d\n" % (12, 34)
            + "%3d %-4s %15s/%-5d %15s/%-5d %4d %8d %2d %4d %3d\n" % (9, "17", "10.1.1.5", 5000, "10.2.2.9", 5001,
                                                                     10, 5000, 0, 0, 0)
            + "\n        mask: proto: 0x%02x, flow_id: 0x%08x,  %s/0x%04x -> %s/0x%04x\n" % (0, 0, "::", 0, "::", 0)
            + "BKT ___Prot___ _flow-id_ ______________Source IPv6/port_______________ "
              "_______________Dest. IPv6/port_______________ Tot_pkt/bytes Pkt/Byte Drp\n"
            + "%3d %9s %7d  %39s/%-5d  %39s/%-5d  %4d %8d %2d %4d %3d\n" % (
                1, "udp", 0, "2001:db8::1", 4000, "2001:db8::2", 4001, 7, 700, 0, 0, 1)
            + c_pipe(2, 0, 0, qsize=50, in_bytes=False, plr=0, elements=0, buckets=1, if_name="tun0")
            + "q%05d: weight %d pipe %d " % (5, 10, 1)
            + c_flowset("", 20, False, 0, 0, 64).lstrip())
    text = text.replace("q00005: weight 10 pipe 1  ", "q00005: weight 10 pipe 1  ")
    objs = C.parse(text)
    p1, p2, q5 = objs
    assert [f.src for f in p1.flows] == ["192.168.1.10", "10.1.1.5", "2001:db8::1"]
    f = p1.flows[0]
    assert (f.bucket, f.proto, f.src_port, f.dst, f.dst_port, f.tot_pkts, f.tot_bytes, f.queue_pkts,
            f.queue_bytes, f.drops) == (5, "tcp", 51320, "10.0.0.2", 80, 1532, 1872312, 3, 4500, 12)
    assert p1.flows[1].proto == "17" and p1.flows[2].flow_id == 0 and p1.flows[2].drops == 1
    assert p1.mask["family"] == 6 and p1.verbose == ("S 12 F 34",)
    assert p2.clock_interface == "tun0" and p2.bw_bps is None
    assert (q5.kind, q5.number, q5.weight, q5.parent_pipe, q5.queue_slots) == ("queue", 5, 10, 1, 20)


def test_a_header_repeated_before_each_pipe_and_loss_rate_spelling():
    text = ("BKT Prot ___Source IP/port____ ____Dest. IP/port____ Tot_pkt/bytes Pkt/Byte Drp\n"
            "00010:  20.000 Mbit/s   10 ms   50 sl.loss rate 0.050000 0 queues (1 buckets) droptail\n")
    (o,) = C.parse(text)
    assert o.plr == 0.05 and o.bw_bps == 20_000_000


@pytest.mark.parametrize("text, why", [
    ("00001:  10.000 Mbit/s   50 ms   50 sl. 1 queues (1 buckets) droptail\nbogus line\n", "line 2"),
    ("  0 tcp 1.2.3.4/1 5.6.7.8/2 1 1 0 0 0\n", "expected a pipe line"),
    ("00001:  10.000 Mbit/s   50 ms 64 KB 0 queues (1 buckets) \n", "RED parameters"),
    ("00001: unlimited    0 ms   50 sl. 0 queues (1 buckets) droptail\n"
     "00001: unlimited    0 ms   50 sl. 0 queues (1 buckets) droptail\n", "twice"),
])
def test_what_is_not_the_classic_listing_is_an_error_naming_the_line(text, why):
    with pytest.raises(ParseError, match=why):
        C.parse(text)


def test_ctl_parse_says_which_format_it_saw(tmp_path):
    classic = tmp_path / "classic.txt"
    classic.write_text(c_pipe(1, 10_000_000, 50, qsize=50, in_bytes=False, plr=0, elements=0, buckets=1))
    out = json.loads(subprocess.run([sys.executable, "-m", "controller", "parse", "ipfw-pipe-show", str(classic)],
                                    capture_output=True, text=True, check=True).stdout)
    out = out.get("data", out) if "ctl" in out else out      # the result, with or without ctl's envelope
    assert out["format"] == "classic" and out["objects"][0]["bw_bps"] == 10_000_000
    assert pipe_show_to_json(classic.read_text())["format"] == "classic"
