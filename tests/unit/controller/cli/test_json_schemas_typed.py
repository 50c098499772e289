"""Every object in every shipped `--json` schema says what its members are (issue 25): no schema node
is a bare `"type": "object"` except the deliberately open ones in OPEN, each with its reason; and
the outputs whose members were typed last (controller/schemas/item_outputs.py) validate when the
real commands print them, with those members present: `ctl cc list` (this machine's kernel),
`ctl inventory check` of an invalid file and of one with warnings, `ctl rack status` and
`ctl rack reservations` on a real PostgreSQL lab database with a lease held and a malformed
reservation row. (campaign plan, scenarios show, runs list/show, run --dry-run, reproduce --dry-run,
status and compare are validated by test_json_envelope.py and test_json_schemas_offline.py; `ctl run`
itself by tests/integration/test_grafana_dashboard.py.)
"""
from __future__ import annotations

import asyncio
import inspect
import json
import subprocess
import time

import jsonschema
import pytest
import yaml
from pydantic import BaseModel

from bridges.base import shaper_class
from controller.cli.common import envelope
from controller.commands import CommandResult
from controller.inventory import load_inventory
from controller.labdb import connect
from controller.labdb.migrations import migrate
from controller.rack.lease import DatabaseLease
from controller.rack.probe import (HostProbe, ProbeReport, ScenarioVerdict, _run, endpoint_checks, endpoint_commands,
                                   shaper_checks)
from controller.schemas import OUTPUT_DIR, item_outputs, parse_items, probe_outputs
from controller.schemas.outputs import OUTPUTS, file_name
from tests.support.ipfw_fake import FakeDummynetHost
from tests.support.shipped import FIXTURES, LAB, VIRTUAL, isolated_ctl, json_cli, no_state_dir
from tests.unit.controller.cli.test_json_envelope import check

# (model title, property) -> why its members are not typed. A model's title is its class name.
_SCENARIO_SUMMARY = ("a scenario's own summary: its keys are the scenario's, described on the Scenarios page and by "
                     "the summary's `definitions`")
_RAW = "ctl parse keeps the tool's own fields as the tool printed them (names and values are the tool's)"
OPEN: dict[tuple[str, str], str] = {
    ("RunDone", "summary"): _SCENARIO_SUMMARY,
    ("AtResponse", "fields"): _RAW + ": the reply's fields, by the modem's AT dialect",
    ("MmcliOutput", "fields"): _RAW + ": mmcli's key-value sections",
    ("QmicliOutput", "fields"): _RAW + ": qmicli's sections, nested as it indented them",
    ("WimaxOutput", "fields"): _RAW + ": wimaxcu's / madwimax's fields",
    ("MptcpEndpointParsed", "extra"): _RAW + ": keys iproute2 printed that ctl does not know",
    ("ParsedGpsd", "fix"): _RAW + ": the last TPV report, in gpsd's JSON",
    ("ParsedGpsd", "sky"): _RAW + ": gpsd's SKY reports",
    ("ParsedGpsd", "tpv"): _RAW + ": gpsd's TPV reports",
    # Not raw, but the back-end's own: a shaper's parsed details in `inventory check --probe`'s report.
    ("ProbeShaper", "details"): "a shaper back-end's own parsed state (bridges/: dnpipe's forwarder per link, tc's "
                                "foreign qdiscs per port); its keys are the back-end's",
}


def _bare_objects(node, title: str = "", prop: str = "", path: str = ""):
    """(title of the enclosing model, property, path) of every schema node of type object that says
    nothing of its members (no properties, no patternProperties, no schema for additional ones)."""
    if isinstance(node, dict):
        if node.get("type") == "object" and not ({"properties", "patternProperties"} & set(node)) \
                and not isinstance(node.get("additionalProperties"), dict):
            yield title, prop, path or "/"
        if "properties" in node:
            title = node.get("title", title)
            for k, v in node["properties"].items():
                yield from _bare_objects(v, title, k, f"{path}/properties/{k}")
        for k, v in node.items():
            if k != "properties":
                yield from _bare_objects(v, title, prop, f"{path}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _bare_objects(v, title, prop, f"{path}/{i}")


@pytest.mark.parametrize("command", sorted(OUTPUTS))
def test_no_object_is_left_untyped_but_the_deliberately_open_ones(command):
    schema = json.loads((OUTPUT_DIR / file_name(command)).read_text())
    bare = [(t, p, path) for t, p, path in _bare_objects(schema) if (t, p) not in OPEN]
    assert bare == [], f"{command}: objects without members (type them, or add them to OPEN with the reason)"


def test_every_open_object_is_open_in_a_shipped_schema_and_says_why():
    found = {(t, p) for c in OUTPUTS for t, p, _ in _bare_objects(json.loads((OUTPUT_DIR / file_name(c)).read_text()))}
    assert set(OPEN) <= found, f"no longer open (drop from OPEN): {set(OPEN) - found}"
    run = json.loads((OUTPUT_DIR / file_name("run")).read_text())
    assert "deliberately open" in run["$defs"]["RunDone"]["properties"]["summary"]["description"]


def test_the_walk_finds_a_bare_object():
    # the check checks: a member typed as a bare object is found, with its model and property
    node = {"title": "M", "type": "object", "properties": {"x": {"type": "array", "items": {"type": "object"}},
                                                           "y": {"type": "object", "additionalProperties":
                                                                 {"type": "integer"}}}}
    assert [(t, p) for t, p, _ in _bare_objects(node)] == [("M", "x")]


@pytest.mark.parametrize("module", [item_outputs, parse_items, probe_outputs],
                         ids=["item_outputs", "parse_items", "probe_outputs"])
def test_every_member_typed_here_says_what_it_is(module):
    models = [m for m in vars(module).values()
              if inspect.isclass(m) and issubclass(m, BaseModel) and m.__module__ == module.__name__]
    assert len(models) >= 10
    undescribed = [f"{m.__name__}.{k}" for m in models for k, f in m.model_fields.items() if not f.description]
    assert undescribed == []


# ---- real outputs -----------------------------------------------------------------------------------

@pytest.fixture()
def ctl(tmp_path, monkeypatch, capsys):
    isolated_ctl(monkeypatch, tmp_path)
    monkeypatch.setenv("CTL_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.delenv("CTL_INFLUX_TOKEN", raising=False)
    return json_cli(capsys)


def test_cc_list_on_this_kernel(ctl):
    doc = ctl("cc", "list")
    check(doc, "cc list")
    rows = {r["name"]: r for r in doc["data"]["algorithms"]}
    assert rows["cubic"]["kind"] == "kernel" and rows["cubic"]["source"] == "kernel"
    assert rows["olia"]["kind"] == "bpf" and rows["olia"]["source"].endswith("olia.bpf.c")


def test_inventory_check_with_errors_and_with_warnings(ctl, tmp_path):
    # a fresh state dir: the virtual rack's secrets are not there (warnings; the file is valid)
    doc = ctl("inventory", "check", str(VIRTUAL))
    check(doc, "inventory check")
    assert doc["data"]["valid"] and doc["data"]["warnings"]
    assert {w["severity"] for w in doc["data"]["warnings"]} == {"warning"}
    bad = yaml.safe_load(VIRTUAL.read_text())
    bad["hosts"][next(iter(bad["hosts"]))]["colour"] = "blue"           # an unknown key
    f = tmp_path / "bad.yaml"
    f.write_text(yaml.safe_dump(bad))
    doc = ctl("inventory", "check", str(f), code=2)
    check(doc, "inventory check")
    errs = doc["data"]["errors"]
    assert not doc["data"]["valid"] and errs and errs[0]["severity"] == "error" and isinstance(errs[0]["line"], int)
    assert "colour" in errs[0]["field"]


@pytest.fixture()
def db(pg_url, monkeypatch):
    monkeypatch.setenv("CTL_DATABASE_URL", pg_url)
    return pg_url


def test_rack_status_and_reservations_with_a_lease_held_and_a_malformed_row(ctl, db):
    now = time.time()
    with connect(db, "test") as c:
        migrate(c, target=3)       # a row as an old ctl (before the database checked times) wrote it
        c.execute("INSERT INTO reservations (rack, owner_user, owner_host, starts, ends, note, created) VALUES "
                  "('virtual', 'mallory', 'm', %s, 'NaN', 'nan', 0)", (now + 3600,))
        migrate(c)
    booked = ctl("rack", "reserve", "virtual", "--from", time.strftime("%Y-%m-%dT%H:%M", time.localtime(now + 7200)),
                 "--for", "10m", "--note", "calibration")
    check(booked, "rack reserve")
    lease = DatabaseLease(db, "virtual", "ctl run shared-bottleneck")
    assert lease.try_acquire() is None
    from controller.lock import FileLock, rack_lock_dir
    machine = FileLock("virtual", "ctl run shared-bottleneck", rack_lock_dir())   # this machine's rack lock
    assert machine.try_acquire()
    try:
        status = ctl("rack", "status")
    finally:
        machine.release()
        lease.release()
    check(status, "rack status")
    d = status["data"]
    assert d["lease"]["purpose"] == "ctl run shared-bottleneck" and d["leases"][0]["holder"] == d["lease"]
    m = d["machine_lock"]
    assert m["purpose"] == "ctl run shared-bottleneck" and isinstance(m["pid"], int) and m["since"].endswith("Z")
    assert d["runs"] == []
    rows = {r["note"]: r for r in d["reservations"]}
    assert rows["nan"]["problem"] and rows["nan"]["end"] is None
    assert rows["calibration"]["problem"] == "" and rows["calibration"]["start"].endswith("Z")
    listed = ctl("rack", "reservations")
    check(listed, "rack reservations")
    assert {r["note"] for r in listed["data"]} == {"nan", "calibration"}


class _Here:
    """A session that runs a probe's (read-only) commands on this machine: the endpoint the virtual
    rack's namespaces would be (same kernel, same tools)."""

    async def run(self, c):
        p = subprocess.run(c.argv, capture_output=True, text=True, timeout=c.timeout, input=c.stdin)
        return CommandResult("here", c.argv, p.returncode, p.stdout, p.stderr)


def test_inventory_check_probe_report_of_every_kind_of_host():
    """`inventory check --probe`'s report, made by the probe's own code from real answers: an endpoint
    asked on this machine (kernel, tools, the congestion-control probe; the commands are read-only), a
    dnpipe bridge from captured `show` documents, a dummynet bridge from the simulated FreeBSD host
    (tests/support/ipfw_fake.py: no FreeBSD here), a modem host that answered and a host not reached.
    The envelope validates against the typed schema; the integration test
    (tests/integration/test_inventory_probe.py) validates the real command on the virtual rack."""
    with no_state_dir():
        virtual = load_inventory(VIRTUAL)
        lab = load_inventory(LAB)
    ep = HostProbe("a1", "endpoint", "10.0.0.11", reached=True, access={"user": "root", "sudo": False, "route": []})
    res = asyncio.run(_run(_Here(), endpoint_commands()))
    endpoint_checks(ep, {" ".join(r.argv): r for r in res})
    ep.facts["clock"] = {"offset_ms": 0.012, "rtt_ms": 0.31, "method": "date over separate exec channels"}
    shaper = shaper_class("dnpipe")(virtual, "br1")
    dn = HostProbe("br1", "bridge", "10.0.0.1", reached=True, access={"user": "root", "sudo": True, "route": ["jump"]})
    shaper_checks(dn, virtual, [CommandResult("br1", c.argv, 0, (FIXTURES / "generated" / "dnpipe" /
                                                                  "show_default.json").read_text(), "")
                                for c in shaper.read_commands()])
    fake = FakeDummynetHost("dn1", "14.1-RELEASE", sysctls={"kern.hz": "1000"})
    bsd = HostProbe("dn1", "bridge", "192.168.50.31", reached=True, access={"user": "ctl", "sudo": True, "route": []})
    shaper_checks(bsd, lab, asyncio.run(_run(fake, shaper_class("dummynet")(lab, "dn1").read_commands())))
    modem = HostProbe("m1", "modem-host", "10.0.0.41", reached=True, access={"user": "root", "sudo": False, "route": []},
                      kernel="6.8.0")
    modem.facts["extra"] = {"mmcli -L": {"exit": None, "out": ""}}
    gone = HostProbe("b2", "endpoint", "10.0.0.12", error="b2: connection refused")
    report = ProbeReport("vtest", {p.host: p for p in (ep, dn, bsd, modem, gone)},
                         [ScenarioVerdict("distinct-bottleneck", False, ["b2: not reached"], ["a1", "b2"])], 1.25)
    doc = envelope({"file": str(VIRTUAL), "valid": True, "errors": [], "warnings": [], "scenarios": [],
                    "probe": report.to_json()}, command="inventory check")
    check(doc, "inventory check")
    hosts = doc["data"]["probe"]["hosts"]
    assert hosts["a1"]["facts"]["tools"]["python3"] and "cubic" in hosts["a1"]["facts"]["congestion"]["available"]
    assert hosts["br1"]["facts"]["shaper"]["details"] and hosts["dn1"]["facts"]["shaper"]["hz"] == "1000"
    assert hosts["b2"]["access"] == {} and not hosts["b2"]["reached"]
    # and a report the schema refuses: a check's `ok` that is no boolean
    hosts["a1"]["checks"][0]["ok"] = "yes"
    with pytest.raises(jsonschema.ValidationError):
        check(doc, "inventory check")
