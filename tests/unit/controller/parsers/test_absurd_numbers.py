"""Issue 23 audit: one absurd number in a host's output (400 digits, 1e999, NaN) crashed the parsers with
OverflowError -- a traceback from `ctl parse`, and the same exception in run-time code (a dummynet
bridge's listing read by the shaper, the link measurement's iperf3 and ping, a leecher's output).
Now each is ctl's ParseError: a one-line error, exit 2, from `ctl parse`; an error naming the host (or
a reason in the summary) at run time. Real outputs still parse."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bridges.dummynet.shaper import DummynetShaper
from controller.commands import CommandResult
from controller.errors import ParseError
from controller.inventory import Inventory
from controller.parsers import iperf3, numbers, parse, ping, ss, webtorrent
from nodes.modem import gps
from nodes.modem.radio import integer, number
from tests.support.shipped import ROOT

BIG = "9" * 400


def _ctl_parse(tmp_path: Path, kind: str, text: str) -> subprocess.CompletedProcess:
    f = tmp_path / "out.txt"
    f.write_text(text)
    return subprocess.run([sys.executable, "-m", "controller", "parse", kind, str(f)], capture_output=True,
                          text=True, timeout=120)


PIPE = "00001:  " + BIG + ".000 Mbit/s    0 ms   50 sl. 1 queues (1 buckets) droptail\n"
WEBTORRENT = "Downloading: x\nSpeed: 1.9 MB/s Downloaded: " + BIG + " MB/12 MB Uploaded: 8.8 KB\n"
GPSD = '{"class":"TPV","mode":1e999,"time":"2026-01-01T00:00:00Z"}\n'


@pytest.mark.parametrize("kind,text", [("ipfw-pipe-show", PIPE), ("webtorrent", WEBTORRENT), ("gpsd", GPSD)])
def test_ctl_parse_of_an_absurd_number_is_one_line_and_exit_2(tmp_path, kind, text):
    """The auditor's three inputs (/tmp/audit-23/pipe.txt, wt_min2.txt, gps.txt): a traceback, exit 1, before."""
    p = _ctl_parse(tmp_path, kind, text)
    assert p.returncode == 2, p.stderr[-800:]
    assert len(p.stderr.splitlines()) == 1 and "Traceback" not in p.stderr
    assert "out of range" in p.stderr or "is not 0, 1, 2 or 3" in p.stderr
    assert len(p.stderr) < 400 and p.stdout == ""


@pytest.mark.parametrize("value", [BIG, "1e999", "-1e999", "nan", "inf", "1e20"])
def test_numbers_refuses_what_no_tool_prints(value):
    with pytest.raises(ParseError, match="out of range"):
        numbers.finite(value)


@pytest.mark.parametrize("value", [BIG, "1e999", "-1e999", "NaN", "Infinity", "-Infinity", "18446744073709551617"])
def test_json_numbers_refused(value):
    with pytest.raises(ParseError, match="out of range"):
        numbers.loads('{"x": [1, %s]}' % value)


def test_numbers_keep_real_values():
    assert numbers.finite("12.5") == 12.5 and numbers.scaled("12.5", 10**6) == 12_500_000
    assert numbers.integer(str(2**64 - 1)) == 2**64 - 1 and numbers.integer("ff", base=16) == 255
    assert numbers.loads('{"a": 1.5, "b": 18446744073709551615, "c": -3}') == {"a": 1.5, "b": 2**64 - 1, "c": -3}


def test_a_result_with_an_unbounded_number_is_refused():
    """The walk in `parse` is the last line of defence: here a Hex-STRING-free snmpwalk Counter64 of 30 digits."""
    with pytest.raises(ParseError, match="out of range"):
        parse("snmpwalk", "IF-MIB::ifHCInOctets.1 = Counter64: " + "9" * 30 + "\n")
    assert parse("snmpwalk", "IF-MIB::ifHCInOctets.1 = Counter64: 18446744073709551615\n")


# ---- run-time call sites ----------------------------------------------------------------------------

def test_the_shaper_reading_a_bridge_with_an_absurd_bandwidth_names_the_host():
    """bridges/dummynet/shaper.py (snapshot -> read_pipes): OverflowError before."""
    inv = Inventory.model_validate(yaml.safe_load((ROOT / "inventory" / "lab-rack.example.yaml").read_text()))
    shaper = DummynetShaper(inv, "dn1")
    outs = ["14.1-RELEASE\n", "kern.hz: 1000\n", PIPE, ""]
    results = [CommandResult(shaper.host, c.argv, 0, o, "") for c, o in zip(shaper.read_commands(), outs)]
    with pytest.raises(ParseError, match=r"^dn1 \(dummynet\): .*out of range"):
        shaper.parse_state(results)


IPERF3 = ROOT / "tests" / "fixtures" / "recorded" / "generated" / "iperf3_tcp_1stream.client.json"


@pytest.mark.parametrize("value", [BIG, "1e999", "NaN"])
def test_iperf3_json_with_an_absurd_number_is_a_parse_error(value):
    """controller/rack/links.py's throughput step reads the client's JSON with iperf3.parse (a real one here,
    its last bits_per_second replaced)."""
    text = IPERF3.read_text()
    assert iperf3.parse(text).end is not None
    at = text.rindex('"bits_per_second":')
    end = at + len('"bits_per_second":')
    while text[end] in " \t":
        end += 1
    stop = end
    while text[stop] in "0123456789.e+-":
        stop += 1
    with pytest.raises(ParseError, match="out of range"):
        iperf3.parse(text[:end] + value + text[stop:])


def test_ping_with_an_absurd_time_is_a_parse_error():
    """links.py's RTT step: ping.parse."""
    text = ("64 bytes from 10.0.0.2: icmp_seq=1 ttl=64 time=" + BIG + " ms\n"
            "1 packets transmitted, 1 received, 0% packet loss, time 0ms\n")
    with pytest.raises(ParseError, match="out of range"):
        ping.parse(text)


def test_leecher_output_with_an_absurd_size_is_a_parse_error_the_caller_reports():
    """controller/traffic/bittorrent.py and the scenario's summary catch it: the reason, not a traceback."""
    with pytest.raises(ParseError, match="out of range"):
        webtorrent.parse_client(WEBTORRENT)
    src = (ROOT / "controller" / "traffic" / "bittorrent.py").read_text()
    assert "except ParseError as exc:        # an output ctl cannot read" in src


def test_ss_rate_out_of_range():
    with pytest.raises(ParseError, match="out of range"):
        ss.parse_rate(BIG + "Mbps")
    assert ss.parse_rate("31.4Mbps") == (31_400_000, False)


def test_modem_numbers_are_bounded():
    with pytest.raises(ParseError, match="out of range"):
        number(BIG + " dBm")
    with pytest.raises(ParseError, match="out of range"):
        integer("1" + "0" * 4400, base=16)
    assert number("-62 dBm") == -62.0 and integer("1A2B", base=16) == 0x1A2B


def test_wimax_madwimax_line_with_an_absurd_rssi():
    with pytest.raises(ParseError):
        parse("wimax", "RSSI: -" + BIG + "   CINR: 12.5   TX Power: 20   Frequency: 2345000\n")


def test_gpsd_report_with_a_value_no_gpsd_sends_is_that_line_s_error():
    good = '{"class":"TPV","mode":3,"time":"2026-01-01T00:00:00Z","lat":1.5,"lon":2.5}\n'
    out = gps.to_json('{"class":"TPV","mode":"x"}\n' + GPSD + '{"class":"TPV","mode":3,"lat":1e999}\n' + good * 3)
    assert [e["line"] for e in out["errors"]] == [1, 2, 3]
    assert out["fix"]["lat"] == 1.5 and len(out["tpv"]) == 3
    with pytest.raises(ParseError):
        gps.tpv({"class": "TPV", "mode": 1e999})


@pytest.mark.parametrize("value", ["1e999", BIG, "NaN"])
def test_tc_json_with_an_absurd_number_is_a_parse_error(value):
    """bridges/tc.py reads the shaper's state with this parser: refused where read, not passed on as inf."""
    from controller.parsers import tc
    doc = '[{"kind":"tbf","handle":"1:","root":true,"refcnt":2,"options":{"rate":%s,"burst":32767,"lat":0}}]'
    with pytest.raises(ParseError, match="out of range"):
        tc.parse(doc % value)
