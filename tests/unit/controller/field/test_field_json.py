"""The `--json` schemas of the link, field and metrics-push commands are typed (controller/schemas/
rack_outputs.py): no object in them is left as a bare "object"; and `ctl field report --json` of the
field run recorded by ctl on the virtual rack (tests/fixtures/generated/field, copied) validates against
its schema. The commands that need a rack are checked against their schemas on the rack by
tests/integration/test_links.py, test_field_mode.py, test_field_mm.py and test_influx_outage.py.
"""
from __future__ import annotations

import json
import shutil

import pytest

from controller.cli import main
from controller.schemas import OUTPUT_DIR
from controller.schemas.outputs import file_name
from controller.schemas.rack_outputs import RACK_OUTPUTS
from tests.support.shipped import ROOT, isolated_ctl
from tests.unit.controller.cli.test_json_envelope import check

FIELD = ROOT / "tests" / "fixtures" / "generated" / "field" / "iperf3-m2"
FIELD_ID = json.loads((FIELD / "manifest.json").read_text())["run_id"]


def _bare_objects(node, path=""):
    """Paths of schema nodes of type object that say nothing of their members."""
    if isinstance(node, dict):
        if node.get("type") == "object" and not ({"properties", "patternProperties"} & set(node)) \
                and not isinstance(node.get("additionalProperties"), dict):
            yield path or "/"
        for k, v in node.items():
            yield from _bare_objects(v, f"{path}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _bare_objects(v, f"{path}/{i}")


@pytest.mark.parametrize("command", sorted(RACK_OUTPUTS))
def test_the_schema_types_every_object(command):
    schema = json.loads((OUTPUT_DIR / file_name(command)).read_text())
    assert list(_bare_objects(schema["properties"]["data"])) == []
    assert list(_bare_objects(schema.get("$defs", {}))) == []


def test_field_report_json_of_the_recorded_run(tmp_path, monkeypatch, capsys):
    runs = tmp_path / "runs"
    shutil.copytree(FIELD, runs / FIELD_ID)
    isolated_ctl(monkeypatch, tmp_path, runs)
    assert main(["field", "report", FIELD_ID, "--no-fetch", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    check(doc, "field report")
    data = doc["data"]
    assert data["run_id"] == FIELD_ID and data["table1"][0]["host"] == "m2"
    assert data["refused_inputs"] == {"m2": {"gps_reports_skipped": None, "radio_values_out_of_range": 0,
                                             "radio_samples_flagged": 0}}
    # what it wrote into the copy is the same report
    assert json.loads((runs / FIELD_ID / "summary.json").read_text())["table1"] == data["table1"]
