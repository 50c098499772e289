"""`ctl lab up --json` and `ctl lab down --json` on a real virtual rack, validated against their shipped
schemas (controller/schemas/output/lab-up.schema.json, lab-down.schema.json; issue 25: every `--json`
output validates against its schema). Until this test, both printed their text line with --json.

The rack is this test's own (prefix j<pid>, a free management subnet chosen under the build lock, as
tests/conftest.py builds the session's racks), built by the command under test and taken down by it;
whatever a failure leaves is removed at the end from the rack's lab.json.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from controller.inventory import load_inventory
from controller.lab.rack import lab_down
from tests.support import rack as racks
from tests.support.rack import free_mgmt_octet, make_state_dir, rack_build_lock, write_test_inventory
from tests.unit.controller.cli.test_json_envelope import check

pytestmark = pytest.mark.integration


def lab_json(rack: racks.TestRack, action: str, code: int = 0) -> dict:
    p = rack.ctl("lab", action, "--json", timeout=600)
    assert p.returncode == code, (action, p.returncode, p.stdout, p.stderr)
    doc = json.loads(p.stdout)
    check(doc, f"lab {action}")
    return doc["data"]


def test_lab_up_and_down_print_their_schemas(tmp_path, monkeypatch):
    prefix = f"j{os.getpid() % 100000:05d}"
    state = make_state_dir(tmp_path / "state")
    monkeypatch.setenv("CTL_STATE_DIR", str(state))           # the inventory's InfluxDB token lives there
    (tmp_path / "runs").mkdir()
    with rack_build_lock():
        octet = free_mgmt_octet()
        inv_path = write_test_inventory(tmp_path / "vjson.yaml", prefix=prefix, mgmt_octet=octet,
                                        influx_port=18000 + octet, name="vjson")
        inv = load_inventory(inv_path)
        rack = racks.TestRack(inv_path, state, tmp_path / "runs", prefix, inv)
        try:
            up = lab_json(rack, "up")
        except BaseException:
            lab_down(inv)
            raise
    try:
        assert up["inventory"] == "vjson" and up["up"] is True and up["daemons"] > 0
        have = set(subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout.split())
        assert up["namespaces"] and set(up["namespaces"]) <= have
        assert set(up["ssh_hosts"]) >= {"a1", "b1", "br1"}
        status = lab_json(rack, "status")
        assert status["up"] is True and all(v.startswith("ssh ok") for v in status["hosts"].values())

        down = lab_json(rack, "down")
        assert down == {"inventory": "vjson", "up": False, "removed": down["removed"]} and down["removed"]
        have = set(subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout.split())
        assert not set(up["namespaces"]) & have
        assert lab_json(rack, "down")["removed"] == []                     # not up: nothing removed, exit 0
        assert lab_json(rack, "status", code=1)["up"] is False
    finally:
        lab_down(inv)
        shutil.rmtree(Path("/run/ctl") / prefix, ignore_errors=True)
