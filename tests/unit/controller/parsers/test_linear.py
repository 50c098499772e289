"""The findings of issue 23, item 7, as regression inputs: each would take minutes to hours with the
patterns and loops they were found in (a cubic qmicli header, quadratic classic-dummynet and WiMAX
patterns, `--partial` parsing the input again per unknown line, 10 MB of garbage), and each is checked
here for its *result* -- the parse ends in the right values or in ctl's ParseError.

Speed is not asserted (bench/parser_bench.py measures it: ratio 1 MB / 100 KB). A guard turns a
blow-up into a failure instead of a hung suite: SIGALRM after GUARD_S seconds, far beyond what any of
these takes (well under a second each here, where the old code needed minutes or more)."""
from __future__ import annotations

import json
import random
import signal
import subprocess
import sys

import pytest

from controller.errors import ParseError
from controller.parsers import MAX_SKIPPED, parse, parse_partial
from nodes.modem import qmicli, wimax

GUARD_S = 120


class Blowup(Exception):
    pass


@pytest.fixture(autouse=True)
def blowup_guard():
    """Fail (not hang) if a parse runs away; `re` checks for signals while it backtracks."""
    def fire(signum, frame):
        raise Blowup(f"still parsing after {GUARD_S} s: not linear")
    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, GUARD_S)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


# ---- qmicli: the header pattern `^\[\s*([^\]]+?)\s*\]\s+(.*)$` was cubic (4 KB: 69 s) ----------------

def test_qmicli_header_with_runs_of_blanks_inside_the_brackets_is_read():
    pad = " " * 20_000
    text = f"[{pad}/dev/cdc-wdm0{pad}] Successfully got signal info\n\tLTE:\n\t\tRSSI: '-62 dBm'\n"
    out = qmicli.to_json(text)
    (o,) = out["outputs"]
    assert (o["type"], o["device"]) == ("signal-info", "/dev/cdc-wdm0")
    assert out["sample"]["rssi_dbm"] == -62.0


@pytest.mark.parametrize("end", ["x", "]", "] "])
def test_qmicli_bracket_of_blanks_that_is_no_header_is_refused(end):
    """1,000 blanks took the old pattern a second; these 100,000 would take it days."""
    with pytest.raises(ParseError, match="no qmicli output recognised"):
        qmicli.to_json("[" + " " * 100_000 + end)


def test_qmicli_headerless_output_after_many_stray_lines():
    """Stray lines ahead of a headerless output were dropped one at a time, a tree built per drop (here
    each stray line is the parent of the output until it is dropped: all 20,000 must go)."""
    text = "a: 'b'\n" * 20_000 + "  LTE:\n    RSSI: '-60 dBm'\n    RSRP: '-90 dBm'\n"
    out = qmicli.to_json(text)
    assert [o["type"] for o in out["outputs"]] == ["signal-info"]
    assert out["sample"]["rsrp_dbm"] == -90.0
    assert len(out["skipped"]) == 20_000 and out["skipped"][0]["line"] == 1


def test_qmicli_repeated_keys_are_numbered():
    text = "[/dev/cdc-wdm0] Successfully got signal info\n\tLTE:\n" + "\t\tRSSI: '-62 dBm'\n" * 20_000
    fields = qmicli.to_json(text)["outputs"][0]["fields"]["LTE"]
    assert len(fields) == 20_000 and fields["RSSI"] == "-62 dBm" and fields["RSSI #20000"] == "-62 dBm"


def test_qmicli_nesting_is_bounded():
    text = "".join(" " * i + "a:\n" for i in range(40))
    with pytest.raises(ParseError, match="line 33: nested more than 32 levels"):
        qmicli.to_json(text)


def test_ctl_parse_qmicli_refuses_10_mb_of_garbage(tmp_path):
    """Earlier review: 10 MB of garbage did not finish in 15 s. Now: exit 2, one line."""
    rng = random.Random(23)
    alphabet = "abcdefghijklmnopqrstuvwxyz :'[]$#@\t\n0123456789"
    f = tmp_path / "garbage.txt"
    f.write_text("".join(rng.choices(alphabet, k=10 << 20)))
    p = subprocess.run([sys.executable, "-m", "controller", "parse", "qmicli", str(f)],
                       capture_output=True, text=True, timeout=GUARD_S)
    assert p.returncode == 2, p.stderr[-500:]
    assert len(p.stderr.splitlines()) == 1 and "no qmicli output recognised" in p.stderr
    assert p.stdout == ""


# ---- classic dummynet: blanks before the queue size (a 100 KB line: over 30 s) -----------------------

@pytest.mark.parametrize("head", ["00001: unlimited   10 ms", "q00001: weight 1 pipe 1"])
def test_classic_object_line_with_a_long_run_of_blanks_is_read(head):
    line = head + " " * 100_000 + "50 sl. 1 queues (1 buckets) droptail\n"
    out = parse("ipfw-pipe-show", line)
    (obj,) = out["objects"]
    assert out["format"] == "classic" and obj["queue_slots"] == 50 and obj["queues"] == 1


def test_classic_object_line_of_blanks_without_a_queue_is_refused():
    with pytest.raises(ParseError):
        parse("ipfw-pipe-show", "00001: unlimited   10 ms" + " " * 100_000 + "x\n")


def test_dummynet_flow_rows_under_one_pipe():
    """Each row made a new tuple of all the rows before it."""
    row = "  0 ip           0.0.0.0/0             0.0.0.0/0        3      499  0    0   0\n"
    text = ("00001:  12.000 Mbit/s    0 ms burst 0\n"
            "q131073  50 sl. 1 flows (1 buckets) sched 65537 weight 0 lmax 0 pri 0 droptail\n"
            " sched 65537 type FIFO flags 0x0 0 buckets 0 active\n" + row * 30_000)
    (obj,) = parse("ipfw-pipe-show", text)["objects"]
    assert obj["totals"]["flows"] == 30_000 and obj["totals"]["tot_bytes"] == 499 * 30_000


# ---- WiMAX: `^\s+([A-Za-z][A-Za-z ]*?)\s*:\s*(.*?)\s*$` was quadratic in a run of blanks ------------

def test_wimax_key_value_lines_with_long_runs_of_blanks():
    pad = " " * 100_000
    text = f"Link Status: Connected{pad}\n  RSSI{pad}: -60 dBm{pad}\n  a{pad}x\n  BS ID :{pad}00:00:02:0A:1B:2C\n"
    (o,) = wimax.to_json(text)["outputs"]
    assert o["fields"]["header"] == "Connected"
    assert o["fields"]["RSSI"] == "-60 dBm" and o["sample"]["rssi_dbm"] == -60.0
    assert o["sample"]["cell_id"] == "00:00:02:0A:1B:2C"
    assert not any(k.startswith("a") for k in o["fields"])


def test_wimax_frequency_with_blanks_before_its_unit():
    text = "Link Status: Connected\n  Frequency : 2345000" + " " * 100_000 + "KHz\n"
    assert wimax.to_json(text)["sample"]["frequency_khz"] == 2345000


# ---- --partial: one parse per unknown line (1 MB: over 20 s) ----------------------------------------

def test_partial_sets_aside_a_thousand_lines_in_one_pass():
    row = "  0 tcp   199.47.217.146/80           10.0.1.2/59964 7938  4287713  0    0  66\n"
    noise = "Connection to br1 closed.\n"
    text = "00001:  12.000 Mbit/s    0 ms   50 sl. 1 queues (1 buckets) droptail\n" + (row * 13 + noise) * MAX_SKIPPED
    assert len(text) > 1_000_000
    out = parse_partial("ipfw-pipe-show", text)
    assert out["partial"] and len(out["unrecognised"]) == MAX_SKIPPED
    assert [u["line"] for u in out["unrecognised"][:2]] == [15, 29]
    assert all(u["text"] == noise.strip() and f"line {u['line']}:" in u["why"] for u in out["unrecognised"])
    (obj,) = out["result"]["objects"]
    assert len(obj["flows"]) == 13 * MAX_SKIPPED


def test_partial_refuses_more_than_max_skipped_unknown_lines_in_one_pass():
    text = "00001:  10.000 Mbit/s   50 ms   50 sl. 1 queues (1 buckets) droptail\n" + "noise\n" * 200_000
    with pytest.raises(ParseError, match=f"more than {MAX_SKIPPED} lines not recognised"):
        parse_partial("ipfw-pipe-show", text)


@pytest.mark.parametrize("kind, good, bad", [
    ("ss", "State Recv-Q Send-Q Local:Port Peer:Port\nESTAB 0 0 10.1.1.1:1 10.1.1.2:2\n", "garbage line\n"),
    ("nstat", "#kernel\nTcpExtX  1  0.0\n", "not a counter line at all\n"),
    ("ip-mptcp", "[       CREATED] token=dae409f8 remid=0 locid=0 saddr4=10.1.1.1 daddr4=10.1.1.2 sport=1 dport=2\n",
     "Connection closed.\n"),
    ("ipfw-queue-show", "q10000  50 sl. 1 flows (1 buckets) sched 10000 weight 100 lmax 0 pri 0 droptail\n", "junk\n"),
])
def test_partial_one_pass_for_every_line_oriented_kind(kind, good, bad):
    text = bad + good + bad * 500
    out = parse_partial(kind, text)
    assert out["partial"] and len(out["unrecognised"]) == 501
    assert out["unrecognised"][0]["line"] == 1 and out["unrecognised"][-1]["line"] == text.count("\n")
    with pytest.raises(ParseError, match="line 1"):
        parse(kind, text)                               # strict: the first unknown line refuses it


# ---- snmpwalk: garbage printed 122,680 lines and exit 0 ---------------------------------------------

def test_ctl_parse_snmpwalk_refuses_garbage(tmp_path):
    rng = random.Random(7)
    lines = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz0123456789 =.:\"'$#", k=rng.randint(1, 80)))
             for _ in range(40_000)]
    f = tmp_path / "garbage.txt"
    f.write_text("\n".join(lines) + "\n")
    p = subprocess.run([sys.executable, "-m", "controller", "parse", "snmpwalk", str(f)],
                       capture_output=True, text=True, timeout=GUARD_S)
    assert p.returncode == 2 and "not snmpwalk output" in p.stderr, p.stdout[:500]
    assert len(p.stderr.splitlines()) == 1 and p.stdout == ""


def test_snmpwalk_says_how_much_it_did_not_recognise():
    good = "IF-MIB::ifHCInOctets.2 = Counter64: 1234\n"
    out = parse("snmpwalk", good + "some prose, not output\n" * 3)
    assert out["unparsed_lines"] == 3 and out["runs"][0]["varbinds"][0]["value"] == 1234
    loose = '"eth0"\n1.3.6.1.2.1.2.2.1.10.2 5\n'              # -Oqv value, -Onq line: shapes prose can take
    assert parse("snmpwalk", loose + "prose\n" * 2)["unparsed_lines"] == 2
    with pytest.raises(ParseError, match="3 lines not recognised against 2 untyped values"):
        parse("snmpwalk", loose + "prose\n" * 3)


def test_snmpwalk_numbers_opening_prose_are_not_oids():
    with pytest.raises(ParseError, match="nothing recognisable"):
        parse("snmpwalk", "7 dwarves went home\n02 is a number\n$ ls\nfoo\n")


def test_snmpwalk_string_of_backslashes_and_open_quotes():
    text = 'iso.3.6.1.2.1.1.1.0 = STRING: "' + "\\" * 200_000 + '"\n'
    (vb,) = parse("snmpwalk", text)["runs"][0]["varbinds"]
    assert vb["value"] == "\\" * 100_000                   # escaped backslashes, closed by the final quote
    text = 'iso.3.6.1.2.1.1.1.0 = STRING: "abc\n' * 20_000
    vbs = parse("snmpwalk", text)["runs"][0]["varbinds"]
    assert len(vbs) == 20_000 and vbs[0]["value"] == '"abc'


# ---- deep JSON is an error, not a crash ----------------------------------------------------------------

@pytest.mark.parametrize("kind", ["iperf3", "tc-qdisc", "mmcli", "webtorrent", "ip-mptcp", "nstat"])
def test_json_nested_too_deep_is_a_parse_error(kind):
    text = {"mmcli": '{"modem": ', "nstat": '{"kernel": ', "ip-mptcp": "[{"}.get(kind, "") + "[" * 100_000
    with pytest.raises(ParseError):
        parse(kind, text)


def test_gpsd_line_nested_too_deep_is_a_line_error():
    text = '{"class":"TPV","mode":3,"lat":1.5,"lon":2.5}\n{"a":' + "[" * 100_000 + "\n"
    out = parse("gpsd", text)
    assert len(out["tpv"]) == 1 and out["errors"][0]["line"] == 2
    json.dumps(out)
