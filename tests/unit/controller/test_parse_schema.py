"""The schema of `ctl parse KIND FILE --json`'s data, per KIND (controller/schemas/parse_outputs.py):
every recorded or corpus file a parser accepts gives data that validates against the one shipped
`parse` schema under its own KIND, and not under another KIND whose shape differs; --partial's
wrapper likewise.

Inputs: every file of tests/fixtures (recorded real output, the corpus, the generated captures)
that a parser accepts; its output is what `ctl parse` prints (controller.parsers.parse_input).
"""
from __future__ import annotations

import json
from functools import lru_cache

import jsonschema
import pytest

from controller.cli.common import envelope
from controller.errors import CtlError
from controller.parsers import kinds, parse_input
from controller.schemas import OUTPUT_DIR
from controller.schemas.outputs import file_name
from controller.schemas.parse_outputs import PARSE_OUTPUTS
from tests.support.shipped import ROOT

FIXTURES = sorted(p for p in (ROOT / "tests" / "fixtures").rglob("*")
                  if p.is_file() and p.suffix not in (".png", ".sha256", ".py") and p.stat().st_size < 3_000_000)


@lru_cache(maxsize=None)
def validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads((OUTPUT_DIR / file_name("parse")).read_text()))


def accepted(kind: str, partial: bool = False) -> list[tuple[str, object]]:
    out = []
    for p in FIXTURES:
        try:
            out.append((str(p.relative_to(ROOT)), parse_input(kind, str(p), partial=partial)))
        except CtlError:
            continue
    return out


def test_every_kind_has_a_schema():
    assert sorted(PARSE_OUTPUTS) == sorted(kinds())


@pytest.mark.parametrize("kind", kinds())
def test_what_each_parser_prints_validates_under_its_kind(kind):
    got = accepted(kind) or accepted(kind, partial=True)
    assert got, f"no fixture that {kind} parses"
    for name, data in got:
        doc = json.loads(json.dumps(envelope(data, command=f"parse {kind}")))
        errors = [e.message[:200] for e in validator().iter_errors(doc)]
        assert errors == [], (name, errors[:3])


def test_data_of_another_kind_does_not_validate():
    ping = ROOT / "tests" / "fixtures" / "generated" / "ping" / "ping_c5_i0.2_25ms_each_way.txt"
    data = parse_input("ping", str(ping))
    assert validator().is_valid(json.loads(json.dumps(envelope(data, command="parse ping"))))
    for other in ("iperf3", "tc-qdisc", "ip-mptcp", "nstat", "mmcli", "gpsd", "webtorrent"):
        assert not validator().is_valid(json.loads(json.dumps(envelope(data, command=f"parse {other}")))), other


def test_partial_wraps_the_kinds_data():
    mptcp = ROOT / "tests" / "fixtures" / "recorded" / "04_linux_mptcp.md"
    data = parse_input("ss", str(mptcp), partial=True)
    assert data["partial"] is True and data["unrecognised"] and data["result"]
    assert validator().is_valid(json.loads(json.dumps(envelope(data, command="parse ss"))))
    bad = {**data, "result": {"not": "a socket list"}}
    assert not validator().is_valid(json.loads(json.dumps(envelope(bad, command="parse ss"))))
