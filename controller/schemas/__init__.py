"""JSON Schemas of ctl's two file formats, generated from the pydantic models that validate
them (controller.inventory.Inventory, controller.campaign.spec.CampaignSpec), so an editor
with a YAML language server checks an inventory or a campaign file as it is typed.

    python -m controller.schemas            # (re)write inventory/ and campaigns/*.schema.json,
                                            # and controller/schemas/output/*.schema.json
    python -m controller.schemas --check    # exit 1 if a shipped schema is out of date

The files are shipped next to the examples (`# yaml-language-server: $schema=...` at the top
of each shipped YAML file); tests/unit/controller/test_schemas.py keeps them in sync with the
models. ctl itself validates with the models, not the schema (the models also check what a
schema cannot: cross-references between hosts and links, units, secrets). An app-layer package:
it imports the inventory model and the campaign spec.

The same command writes the schema of every command's `--json` output (the envelope of
controller/cli/common.py around the command's data), one file per command in
controller/schemas/output/ (`outputs.py` has the models).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from controller.schemas.outputs import OUTPUTS, file_name
from controller.schemas.outputs import schema as output_schema

PROJECT = Path(__file__).resolve().parent.parent.parent
TARGETS = {"inventory": PROJECT / "inventory" / "inventory.schema.json",
           "campaign": PROJECT / "campaigns" / "campaign.schema.json"}
TITLES = {"inventory": "ctl inventory (a rack: hosts, links, shapers, SSH, InfluxDB)",
          "campaign": "ctl campaign file (a sweep of one scenario's parameters with repetitions)"}


def schema(kind: str) -> dict:
    """The JSON Schema (draft 2020-12) of one format, from its model (pure)."""
    if kind == "inventory":
        from controller.inventory import Inventory as model
    elif kind == "campaign":
        from controller.campaign.spec import CampaignSpec as model
    else:
        raise ValueError(kind)
    s = model.model_json_schema(mode="validation")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": f"ctl-{kind}.schema.json",
            "title": TITLES[kind], **{k: v for k, v in s.items() if k != "title"}}


def render(kind: str) -> str:
    return json.dumps(schema(kind), indent=1, sort_keys=True) + "\n"


OUTPUT_DIR = Path(__file__).resolve().parent / "output"


def output_targets() -> dict[Path, str]:
    """Every output schema file and its text."""
    return {OUTPUT_DIR / file_name(c): json.dumps(output_schema(c), indent=1, sort_keys=True) + "\n"
            for c in OUTPUTS}


def main(argv: list[str]) -> int:
    stale = []
    files = [(path, render(kind)) for kind, path in TARGETS.items()] + list(output_targets().items())
    if "--check" not in argv:
        OUTPUT_DIR.mkdir(exist_ok=True)
    for path, text in files:
        if "--check" in argv:
            if not path.exists() or path.read_text() != text:
                stale.append(str(path.relative_to(PROJECT)))
        else:
            path.write_text(text)
    if stale:
        print("out of date (python -m controller.schemas rewrites them): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0
