"""The campaign schema's scenario parameters: a whole number written as text is bounded as a YAML
number is, and every bounded parameter's description names its range (issue 26 audit: "so an
editor catches what ctl catches"; `port_base: "80"` passed the schema while `port_base: 80` did
not, and nothing told an editor's user that a duration stops at 86400 s)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from controller import scenarios
from controller.campaign.param_schema import value_schema
from controller.errors import ParameterError
from controller.schema_patterns import int_between
from controller.units import parse_int

SCHEMA = json.loads((Path(__file__).resolve().parents[4] / "campaigns" / "campaign.schema.json").read_text())


def accepts(lo: int, hi: int, text: str) -> bool:
    """What ctl takes: parse_int's grammar, then the parameter's bounds."""
    try:
        return lo <= parse_int(text) <= hi
    except ParameterError:
        return False


@given(lo=st.integers(1, 10**6), span=st.integers(0, 10**6), n=st.integers(0, 3 * 10**6),
       zeros=st.integers(0, 3), blanks=st.sampled_from(["", " ", "\t"]))
def test_int_between_matches_exactly_the_numbers_ctl_takes_in_range(lo, span, n, zeros, blanks):
    hi = lo + span
    text = blanks + "0" * zeros + str(n) + blanks
    assert (re.search(int_between(lo, hi), text) is not None) == accepts(lo, hi, text)


@pytest.mark.parametrize("text", ["-5", "+5", "5.0", "0x10", "", " ", "5 5", "\u0665"])
def test_int_between_refuses_what_is_not_a_plain_number(text):
    assert re.search(int_between(1, 100), text) is None


def test_int_between_needs_a_positive_range():
    for lo, hi in [(0, 5), (5, 4), (-1, 3)]:
        with pytest.raises(ValueError):
            int_between(lo, hi)


def campaign(**fixed) -> dict:
    return {"version": 1, "scenario": "distinct-bottleneck", "fixed": fixed}


@pytest.mark.parametrize("fixed, ok", [
    ({"port_base": "80"}, False), ({"port_base": 80}, False),
    ({"port_base": "5201"}, True), ({"port_base": 5201}, True), ({"port-base": " 65000 "}, True),
    ({"port_base": "65001"}, False),
])
def test_the_shipped_schema_bounds_a_whole_number_as_text_like_a_number(fixed, ok):
    errors = list(Draft202012Validator(SCHEMA).iter_errors(campaign(**fixed)))
    assert (not errors) == ok, [e.message for e in errors]


def test_every_bounded_parameter_says_its_range_with_units():
    seen = 0
    for name in scenarios.available():
        for p in scenarios.get(name).all_params():
            desc = value_schema(p)["description"]
            if p.choices is None and (p.min is not None or p.max is not None):
                lo, hi = (p.display(b) if b is not None else "" for b in (p.min, p.max))
                assert f"range {lo}..{hi})" in desc, (name, p.name, desc)
                seen += 1
            else:
                assert "range" not in desc, (name, p.name, desc)
    assert seen >= 20
    duration = next(p for p in scenarios.get("distinct-bottleneck").all_params() if p.name == "duration")
    assert value_schema(duration)["description"] == "traffic duration (default 30 s; range 1 s..86400 s)"
