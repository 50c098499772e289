"""`ctl field report --json` of the field run recorded by ctl on the virtual rack
(tests/fixtures/generated/field, copied) validates against its typed schema (controller/schemas/
rack_outputs.py), with the members a reader relies on present: Table 1's rows and the refused inputs.
That no object in the link, field and metrics-push schemas is left bare is checked with every other
output by tests/unit/controller/cli/test_json_schemas_typed.py (this file had its own copy of that walk).
The commands that need a rack are checked against their schemas on the rack by
tests/integration/test_links.py, test_field_mode.py, test_field_mm.py and test_influx_outage.py.
"""
from __future__ import annotations

import json
import shutil

from controller.cli import main
from tests.support.shipped import ROOT, isolated_ctl
from tests.unit.controller.cli.test_json_envelope import check

FIELD = ROOT / "tests" / "fixtures" / "generated" / "field" / "iperf3-m2"
FIELD_ID = json.loads((FIELD / "manifest.json").read_text())["run_id"]


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
                                             "radio_samples_flagged": 0, "unparsed_lines": {}}}
    # what it wrote into the copy is the same report
    assert json.loads((runs / FIELD_ID / "summary.json").read_text())["table1"] == data["table1"]
