"""The scenarios in the campaign file's JSON Schema (CampaignSpec's `json_schema_extra`, so
`python -m controller.schemas` writes them into campaigns/campaign.schema.json): `scenario` is one of the registered
scenarios, and for each scenario its `fixed`, `sweep` and `cases` take only that scenario's
parameters (in every spelling the campaign loader accepts: `tcp_cc`, `tcp-cc`, `--tcp-cc`),
each value in its parameter's syntax (a rate, a delay, a loss ... : controller.schema_patterns),
a choice among its choices, a whole number within its bounds (as a YAML number or as text), a
loss percentage up to the scenario's maximum (`loss: 60%` is refused where the scenario stops at
50 %). What JSON Schema cannot say (a rate's or a duration's bounds with units, two parameters
that must differ) ctl says when it plans the campaign; the description of every bounded
parameter names its range, as `ctl scenarios show` does. Pure: the registry's parameter tables in, schema fragments out.
"""
from __future__ import annotations

from typing import Any

from controller import scenarios
from controller.argutil import NAME_PATTERNS
from controller.errors import CtlError
from controller.schema_patterns import (
    DELAY,
    DURATION,
    INT,
    PROBABILITY,
    QUEUE,
    RATE,
    SIZE,
    decimal_up_to,
    int_between,
)
from controller.scenarios.base import Param

_NUM = r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"


def spellings(name: str) -> list[str]:
    """Every key the campaign loader reads as parameter `name` (controller.campaign.spec._norm)."""
    dashed = name.replace("_", "-")
    out = [name, dashed, "--" + dashed, "--" + name]
    return list(dict.fromkeys(out))


def _probability_pattern(p: Param) -> str:
    """PROBABILITY, with the percentage form bounded by the parameter's maximum when that is a
    whole number of percent (a fraction in scientific notation is left to ctl)."""
    if p.max is None:
        return PROBABILITY
    try:
        top = p._bound(p.max) * 100
    except (CtlError, KeyError, TypeError, ValueError):   # a bound ctl cannot read: the syntax alone
        return PROBABILITY
    if top != int(top):
        return PROBABILITY
    return (rf"^\s*(?:{decimal_up_to(int(top))}\s*%|{_NUM}[eE][+-]?[0-9]+|0+(?:\.0*)?|\.0+)\s*$")


def value_schema(p: Param) -> dict[str, Any]:
    """The schema of one value of parameter `p` in a campaign file (text, or a YAML number)."""
    t = p.type
    notes = [f"default {p.display(p.default)}"] if p.default is not None else []
    if p.choices is None and (p.min is not None or p.max is not None):
        # the range as `ctl scenarios show` prints it, with units: what the patterns of rates,
        # delays and durations cannot hold is at least said where an editor shows the field
        lo_, hi_ = (p.display(b) if b is not None else "" for b in (p.min, p.max))
        notes.append(f"range {lo_}..{hi_}")
    desc = p.help + (f" ({'; '.join(notes)})" if notes else "")
    if t == "choice" and p.choices:
        return {"enum": list(p.choices), "description": desc}
    if t == "int":
        num: dict[str, Any] = {"type": "integer"}
        lo, hi = (p._bound(b) if b is not None else None for b in (p.min, p.max))
        if lo is not None:
            num["minimum"] = lo
        if hi is not None:
            num["maximum"] = hi
        # a whole number written as text ("80") within the same bounds as a YAML number (80)
        text_int = int_between(lo, hi) if lo is not None and hi is not None and 1 <= lo <= hi else INT
        return {"anyOf": [{"type": "string", "pattern": text_int}, num], "description": desc}
    text: dict[str, Any] = {"type": "string"}
    number: dict[str, Any] | None = None
    if t == "rate":
        text["pattern"], number = RATE, {"type": "number", "exclusiveMinimum": 0}
    elif t == "duration":
        text["pattern"], number = DURATION, {"type": "number", "exclusiveMinimum": 0}
    elif t == "delay":
        text["pattern"], number = DELAY, {"type": "number", "minimum": 0, "maximum": 0}
    elif t == "probability":
        text["pattern"], number = _probability_pattern(p), {"type": "number", "minimum": 0, "maximum": 0}
    elif t == "size":
        text["pattern"], number = SIZE, {"type": "integer", "minimum": 1}
    elif t == "queue":
        text["pattern"], number = QUEUE, {"type": "integer", "minimum": 1}
    elif t == "name":
        text["pattern"] = "^" + NAME_PATTERNS["cc"] + "$"
    elif t in ("host", "link"):
        text["pattern"] = "^" + NAME_PATTERNS["name"] + "$"
    elif t == "path":
        text["pattern"] = r"^/[^\x00-\x1f]*$"
    out: dict[str, Any] = {"anyOf": [text, number]} if number is not None else dict(text)
    out["description"] = desc
    return out


def scenario_clause(name: str) -> dict[str, Any]:
    """`if scenario is NAME then fixed/sweep/cases hold NAME's parameters only`."""
    sc = scenarios.get(name)
    values = {k: value_schema(p) for p in sc.all_params() for k in spellings(p.name)}
    one = {"type": "object", "properties": values, "additionalProperties": False}
    lists = {"type": "object", "additionalProperties": False,
             "properties": {k: {"type": "array", "items": v, "description": v.get("description", "")}
                            for k, v in values.items()}}
    return {"if": {"properties": {"scenario": {"const": name}}, "required": ["scenario"]},
            "then": {"properties": {"fixed": one, "sweep": lists, "cases": {"type": "array", "items": one}}}}


def add_scenarios(schema: dict[str, Any]) -> None:
    """CampaignSpec's `json_schema_extra`: the scenario enum and one clause per scenario, added to
    the campaign file's schema (in place, as pydantic hands it over)."""
    out = schema
    names = scenarios.available()
    props = dict(out.get("properties", {}))
    scenario = dict(props.get("scenario", {}))
    scenario.pop("type", None)
    scenario["enum"] = names
    props["scenario"] = scenario
    out["properties"] = props
    out["allOf"] = list(out.get("allOf", [])) + [scenario_clause(n) for n in names]
