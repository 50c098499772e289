"""The shipped JSON Schemas (inventory/inventory.schema.json, campaigns/campaign.schema.json)
are exactly what the pydantic models generate, every shipped example validates against its
schema and names it for editors, and the schema refuses what the model refuses structurally
(an unknown field, a wrong type)."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from controller import schemas

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
