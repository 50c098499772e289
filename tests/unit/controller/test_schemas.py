"""The shipped JSON Schemas (inventory/inventory.schema.json, campaigns/campaign.schema.json)
are exactly what the pydantic models generate, every shipped example validates against its
schema and names it for editors, and the schema refuses what the model refuses structurally
(an unknown field, a wrong type)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from controller import schema_patterns, schemas, units
from controller.errors import ParameterError

PROJECT = Path(__file__).resolve().parents[3]
EXAMPLES = {"inventory": sorted((PROJECT / "inventory").glob("*.yaml")),
            "campaign": sorted((PROJECT / "campaigns").glob("*.yaml"))}


@pytest.mark.parametrize("kind", sorted(schemas.TARGETS))
def test_the_shipped_schema_is_what_the_model_generates(kind):
    assert schemas.TARGETS[kind].read_text() == schemas.render(kind), \
        f"{schemas.TARGETS[kind].name} is out of date: python -m controller.schemas"


@pytest.mark.parametrize("kind, path", [(k, p) for k, ps in EXAMPLES.items() for p in ps],
                         ids=lambda v: v.name if isinstance(v, Path) else v)
def test_every_shipped_example_validates_and_names_its_schema(kind, path):
    assert EXAMPLES[kind], kind
    text = path.read_text()
    assert text.splitlines()[0] == f"# yaml-language-server: $schema=./{schemas.TARGETS[kind].name}"
    validator = jsonschema.Draft202012Validator(json.loads(schemas.TARGETS[kind].read_text()))
    errors = [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(yaml.safe_load(text))]
    assert errors == []


def test_the_schema_refuses_an_unknown_field_and_a_wrong_type():
    inv = yaml.safe_load((PROJECT / "inventory" / "virtual.yaml").read_text())
    v = jsonschema.Draft202012Validator(schemas.schema("inventory"))
    assert v.is_valid(inv)
    typo = dict(inv, hostz={})
    assert not v.is_valid(typo)
    camp = yaml.safe_load((PROJECT / "campaigns" / "mcubic-table1.yaml").read_text())
    c = jsonschema.Draft202012Validator(schemas.schema("campaign"))
    assert c.is_valid(camp) and not c.is_valid(dict(camp, repetitions="many"))
    assert schemas.main(["--check"]) == 0


# ---- schemas that carry the meaning (issue 26) ----------------------------------------------------

def _properties(s: dict):
    yield "(top level)", s
    yield from s.get("$defs", {}).items()


@pytest.mark.parametrize("kind", sorted(schemas.TARGETS))
def test_every_field_has_a_description(kind):
    s = schemas.schema(kind)
    missing = [f"{where}.{name}" for where, d in _properties(s) for name, p in d.get("properties", {}).items()
               if not p.get("description")]
    assert missing == []


def _validator(kind):
    return jsonschema.Draft202012Validator(schemas.schema(kind))


def _refuses(kind, data) -> list[str]:
    return [e.message for e in _validator(kind).iter_errors(data)]


@pytest.mark.parametrize("where, value", [
    (("hosts", "a1", "mgmt", "address"), "192.168.50.300"),        # a broken IPv4 is no host name
    (("hosts", "a1", "interfaces", 0, "address"), "10.1.0.321/24"),
    (("hosts", "a1", "interfaces", 0, "address"), "10.1.0.11"),     # no prefix length
    (("links", "path1", "capacity"), "2 parsecs"),
    (("hosts", "gw1", "nat", "forwards", 0, "to"), "10.31.0.256"),
    (("influxdb", "token"), "CTL_INFLUX_TOKEN"),                    # a value, not a reference
    (("links", "path1", "baseline"), {"plr": "0.01"}),              # a bare loss is ambiguous
    (("links", "path1", "baseline"), {"delay": "50"}),              # a delay needs its unit
    (("links", "path1", "baseline"), {"bw": "fast"}),
])
def test_the_inventory_schema_refuses_what_ctl_refuses(where, value):
    inv = yaml.safe_load((PROJECT / "inventory" / "lab-rack.example.yaml").read_text())
    node = inv
    for k in where[:-1]:
        node = node[k]
    node[where[-1]] = value
    assert _refuses("inventory", inv), (where, value)


@pytest.mark.parametrize("change", [
    {"window": "25:00-07:00"},
    {"window": "22:00"},
    {"scenario": "rtt-los-sweep"},
    {"sweep": {"rtt": ["40ms"], "lossy": ["1%"]}},          # not a parameter of rtt-loss-sweep
    {"sweep": {"loss": ["60%"]}},                           # above rtt-loss-sweep's 50 %
    {"sweep": {"loss": ["0.01"]}},                          # a bare loss
    {"sweep": {"rtt": ["40"]}},                             # a delay without its unit
    {"fixed": {"bw": "2 parsecs"}},
    {"fixed": {"port_base": 80}},                           # below the parameter's minimum 1024
    {"cases": [{"cc": "BBR!"}]},
    {"pause": "5 parsecs"},
])
def test_the_campaign_schema_refuses_what_ctl_refuses(change):
    camp = yaml.safe_load((PROJECT / "campaigns" / "rtt-loss-sweep.yaml").read_text())
    camp.update(change)
    if "cases" in change:
        camp.pop("sweep")
    assert _refuses("campaign", camp), change


def test_the_campaign_schema_takes_every_spelling_and_yaml_numbers():
    camp = yaml.safe_load((PROJECT / "campaigns" / "rtt-loss-sweep.yaml").read_text())
    camp["fixed"] = {"--port-base": 6000, "duration": 30, "bw": "1G"}
    camp["sweep"] = {"rtt": ["20ms", 0], "loss": ["0%", "50%", "1e-4", 0], "--cc": ["bbr", "cubic"]}
    assert _refuses("campaign", camp) == []


# Values each parser accepts (its docstring's examples and more): the schema's pattern must accept them.
ACCEPTED = {
    "RATE": (units.parse_rate, ["20M", "20Mbit/s", "100Mbps", "1G", "2.5M", "10MB/s", "20000000", " 1 Gbit/s ", "1e9",
                                "5kbit/s", "1.5e3M", "100 Mbit/sec", "8bits/s", "1T"]),
    "DELAY": (units.parse_delay_us, ["50ms", "0.5ms", "800ms", "0", "0.0", "1s", "250us", "2e3us", "1 min", "1µs"]),
    "DURATION": (units.parse_duration, ["30", "30s", "1.5s", "10min", "2h", "50ms", "1 hour", "3 seconds"]),
    "PROBABILITY": (units.parse_probability, ["0.01%", "1%", "1e-4", "2.5E-3", "0", "0.0", "0%", "100%", ".5%"]),
    "SIZE": (units.parse_size, ["1500", "1500B", "64KB", "64KiB", "100MiB", "1GB", "2 MBytes", "1k"]),
    "QUEUE": (units.parse_queue, ["50", "50slots", "64KB", "30000B", "100 packets", "10 sl.", "1MiB"]),
}


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_a_pattern_never_refuses_what_its_parser_accepts(name):
    parse, values = ACCEPTED[name]
    pattern = re.compile(getattr(schema_patterns, name))
    for v in values:
        parse(v)                                   # the example is valid to ctl ...
        assert pattern.search(v), (name, v)        # ... and to the schema


_NUMBERS = st.one_of(st.integers(0, 10**6).map(str),
                     st.tuples(st.integers(0, 9999), st.integers(0, 999)).map(lambda t: f"{t[0]}.{t[1]}"))


@given(_NUMBERS, st.sampled_from(["", "k", "M", "G"]), st.sampled_from(["", "bit/s", "bps", "B/s", "b"]),
       st.sampled_from(["", " "]))
@settings(max_examples=300, deadline=None)
def test_rate_pattern_agrees_with_the_parser(number, prefix, unit, space):
    text = f"{number}{space}{prefix}{unit}"
    try:
        units.parse_rate(text)
    except ParameterError:
        return                                     # (a zero rate: only ctl's range check refuses it)
    assert re.search(schema_patterns.RATE, text), text


@given(_NUMBERS, st.sampled_from(["us", "ms", "s", "min", "h", " ms"]))
@settings(max_examples=200, deadline=None)
def test_delay_pattern_agrees_with_the_parser(number, unit):
    text = number + unit
    try:
        units.parse_delay_us(text)
    except ParameterError:
        return                                     # (finer than 1 us: only ctl's check refuses it)
    assert re.search(schema_patterns.DELAY, text), text


@given(_NUMBERS, st.sampled_from(["%", " %", ""]), st.sampled_from(["", "e-4", "E-2"]))
@settings(max_examples=300, deadline=None)
def test_probability_pattern_agrees_with_the_parser(number, percent, exponent):
    text = number + exponent + percent
    try:
        units.parse_probability(text)
        accepted = True
    except ParameterError:
        accepted = False
    if accepted:
        assert re.search(schema_patterns.PROBABILITY, text), text
    elif not percent and not exponent:
        # a bare number: ambiguous to ctl, and to the schema unless it is zero
        assert not re.search(schema_patterns.PROBABILITY, text) or float(number) == 0, text


@given(st.integers(0, 1200), st.integers(0, 1000))
@settings(max_examples=300, deadline=None)
def test_bounded_numbers(n, value):
    assert bool(re.fullmatch(schema_patterns.int_up_to(n), str(value))) == (value <= n)
    assert bool(re.fullmatch(schema_patterns.decimal_up_to(n), f"{value}.5")) == (value < n)


@pytest.mark.parametrize("text", ["10.0.0.1", "255.255.255.255", "gate.lab.example", "ctl-host", "::1",
                                  "fe80::1", "::ffff:10.0.0.1", "2001:db8::42"])
def test_management_addresses_ctl_takes(text):
    from controller.inventory import Mgmt
    Mgmt(address=text)
    assert re.search(schema_patterns.MGMT, text)


@pytest.mark.parametrize("text", ["192.168.50.300", "1.2.3", "010.0.0.1", "-gate", "gate_1", "<fill in>"])
def test_management_addresses_ctl_refuses(text):
    from pydantic import ValidationError

    from controller.inventory import Mgmt
    assert not re.search(schema_patterns.MGMT, text)
    if text not in ("192.168.50.300", "1.2.3", "010.0.0.1"):   # the model takes these for host names; check does not
        with pytest.raises(ValidationError):
            Mgmt(address=text)
