"""Issue 23 audit, item 4 (the class of the earlier snmpwalk fix): input with nothing recognisable is a
ParseError (exit 2, one line), and what a parser prints stays bounded by what it recognised. Before:
`ctl parse mmcli` on 10 MB of random garbage with '|' in it exited 0 with 16 MB of made-up "sections";
`ctl parse gpsd` on garbage exited 0 with no report and only per-line errors. Real outputs (the recorded
ModemManager 1.20.4 captures, the corpus) parse as before (test_mmcli_real_1_20.py, test_modem_parsers.py)."""
from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from controller.errors import ParseError
from controller.parsers import parse
from tests.support.shipped import ROOT

MM = ROOT / "tests" / "fixtures" / "generated" / "modemmanager"
ALPHABET = "abcdefghijklmnopqrstuvwxyz :'[]{}()\"$#@|=,.-\\/\t\n0123456789"


@pytest.fixture(scope="module")
def garbage(tmp_path_factory) -> Path:
    """10 MB of random characters, '|' and '{' among them (as the auditor's garbage10m.txt)."""
    rng = random.Random(23)
    f = tmp_path_factory.mktemp("garbage") / "garbage.txt"
    f.write_text("".join(rng.choices(ALPHABET, k=10 << 20)))
    return f


@pytest.mark.parametrize("kind,says", [("mmcli", "no mmcli output recognised"), ("gpsd", "no gpsd report")])
def test_ctl_parse_refuses_10_mb_of_garbage(garbage, kind, says):
    p = subprocess.run([sys.executable, "-m", "controller", "parse", kind, str(garbage)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 2, (p.stdout[:300], p.stderr[-300:])
    assert len(p.stderr.splitlines()) == 1 and says in p.stderr and len(p.stderr) < 500
    assert p.stdout == ""


# ---- mmcli -------------------------------------------------------------------------------------------

def test_mmcli_real_output_with_a_section_of_a_newer_release_still_parses():
    real = (MM / "modem_lte_cell_a.txt").read_text()
    before = parse("mmcli", real)
    newer = real.rstrip("\n") + "\n  ----------------\n  Carrier config |     name: default\n"
    out = parse("mmcli", newer)
    (o,) = out["outputs"]
    assert o["fields"]["sections"]["Carrier config"] == {"name": "default"}
    assert out["sample"] == before["sample"]


def test_mmcli_real_output_drowned_in_made_up_sections_is_refused():
    real = (MM / "signal_lte_cell_a.txt").read_text()
    junk = "".join(f"  x{i} | y: z\n" for i in range(50))
    with pytest.raises(ParseError, match="no mmcli output recognised"):
        parse("mmcli", real + junk)


def test_mmcli_output_size_is_bounded_by_what_was_recognised():
    """A transcript: a real output, then a prompt and 100,000 '|' lines of junk: the junk part is no output."""
    real = (MM / "signal_lte_cell_a.txt").read_text()
    junk = "$ cat junk\n" + "".join(f"  s{i % 977} | k{i}: v\n" for i in range(100_000))
    out = parse("mmcli", "$ mmcli -m 0 --signal-get\n" + real + junk)
    assert [o["type"] for o in out["outputs"]] == ["signal"]
    assert len(json.dumps(out)) < 4 * len(json.dumps(parse("mmcli", real)))


def test_every_recorded_mmcli_capture_still_parses():
    for f in sorted(MM.glob("*_lte_cell_a.txt")):
        out = parse("mmcli", f.read_text())
        assert out["outputs"] and out["sample"] is not None, f.name


# ---- gpsd --------------------------------------------------------------------------------------------

GOOD = '{"class":"TPV","mode":3,"time":"2026-01-01T00:00:00Z","lat":1.5,"lon":2.5}\n'


@pytest.mark.parametrize("text", ['{"a": 1}\n{}\n[1]\n', '{"class": "tpv"}\n{"class": 3}\n', "{x\n{\"\n"])
def test_gpsd_json_lines_that_are_no_reports_are_refused(text):
    with pytest.raises(ParseError, match="no gpsd report"):
        parse("gpsd", text)


def test_gpsd_more_errors_than_reports_is_refused_fewer_are_line_errors():
    out = parse("gpsd", GOOD * 3 + "{broken\n" * 3)
    assert len(out["tpv"]) == 3 and len(out["errors"]) == 3
    with pytest.raises(ParseError, match="4 JSON line\\(s\\) are not gpsd reports, more than the 3"):
        parse("gpsd", GOOD * 3 + "{broken\n" * 4)


def test_gpsd_report_of_a_class_ctl_does_not_read_is_counted():
    """gpsd_json(5): object types 'include, but are not limited to' those it lists."""
    out = parse("gpsd", GOOD + '{"class":"GST","rms":1.0}\n{"class":"NEWTHING"}\n')
    assert out["other"] == {"GST": 1, "NEWTHING": 1} and out["errors"] == []
