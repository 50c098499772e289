"""`ctl parse --partial`: what a parser recognises comes back with every line it did not, each
with the parser's own reason; without --partial the first unknown line is an error naming it;
input with nothing recognisable, or a format without lines (JSON), stays an error."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from controller.errors import ParseError
from controller.parsers import parse_partial

CLASSIC = "00001:  10.000 Mbit/s   50 ms   50 sl. 1 queues (1 buckets) droptail\n"
SNMP = 'IF-MIB::ifHCInOctets.2 = Counter64: 1234\nIF-MIB::ifHCOutOctets.2 = Counter64: 99\n'


def test_noise_lines_are_set_aside_with_their_reason():
    text = "$ ipfw pipe show\n" + CLASSIC + "Connection to br1 closed.\n" + CLASSIC.replace("00001", "00002")
    out = parse_partial("ipfw-pipe-show", text)
    assert out["partial"] is True
    assert [u["line"] for u in out["unrecognised"]] == [1, 3]
    assert out["unrecognised"][0]["text"] == "$ ipfw pipe show" and "line 1" in out["unrecognised"][0]["why"]
    assert [o["number"] for o in out["result"]["objects"]] == [1, 2]


def test_clean_input_is_not_partial():
    out = parse_partial("ipfw-pipe-show", CLASSIC)
    assert out == {"partial": False, "unrecognised": [], "result": out["result"]}


@pytest.mark.parametrize("kind, text", [
    ("ipfw-pipe-show", "nothing\nof this\nis dummynet\n"),
    ("iperf3", '{"start": {"connected": ['),          # JSON names no line: nothing to set aside
])
def test_what_cannot_be_parsed_at_all_stays_an_error(kind, text):
    with pytest.raises(ParseError):
        parse_partial(kind, text)


def test_the_cli_flag(tmp_path):
    f = tmp_path / "noisy.txt"
    f.write_text(CLASSIC + "garbage\n")
    strict = subprocess.run([sys.executable, "-m", "controller", "parse", "ipfw-pipe-show", str(f)],
                            capture_output=True, text=True)
    assert strict.returncode == 2 and "line 2" in strict.stderr and len(strict.stderr.splitlines()) == 1
    loose = subprocess.run([sys.executable, "-m", "controller", "parse", "ipfw-pipe-show", str(f), "--partial"],
                           capture_output=True, text=True)
    assert loose.returncode == 0, loose.stderr
    doc = json.loads(loose.stdout)
    doc = doc.get("data", doc) if "ctl" in doc else doc      # the result, with or without ctl's envelope
    assert doc["partial"] and doc["unrecognised"][0]["text"] == "garbage"
