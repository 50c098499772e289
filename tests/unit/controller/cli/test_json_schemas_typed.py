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

import inspect
import json
import time

import pytest
import yaml
from pydantic import BaseModel

from controller.cli import main
from controller.labdb import connect
from controller.labdb.migrations import migrate
from controller.rack.lease import DatabaseLease
from controller.schemas import OUTPUT_DIR, item_outputs, parse_items
from controller.schemas.outputs import OUTPUTS, file_name
from tests.support.shipped import VIRTUAL, isolated_ctl
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
    # Not raw, and not typed yet (the next step): `inventory check --probe`'s report of what each host
    # and shaper said (controller/rack/probe.py RackProbe.to_json); its text form is the reference.
    ("InventoryCheck", "probe"): "ctl's probe report, per host and shaper (RackProbe.to_json), not typed yet",
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


@pytest.mark.parametrize("module", [item_outputs, parse_items], ids=["item_outputs", "parse_items"])
def test_every_member_typed_here_says_what_it_is(module):
    models = [m for m in vars(module).values()
              if inspect.isclass(m) and issubclass(m, BaseModel) and m.__module__ == module.__name__]
    assert len(models) > 10
    undescribed = [f"{m.__name__}.{k}" for m in models for k, f in m.model_fields.items() if not f.description]
    assert undescribed == []


# ---- real outputs -----------------------------------------------------------------------------------

@pytest.fixture()
def ctl(tmp_path, monkeypatch, capsys):
    isolated_ctl(monkeypatch, tmp_path)
    monkeypatch.setenv("CTL_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.delenv("CTL_INFLUX_TOKEN", raising=False)

    def call(*argv: str, code: int = 0) -> dict:
        got = main([*argv, "--json"])
        out, err = capsys.readouterr()
        assert got == code, (argv, got, err)
        return json.loads(out)
    return call


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
