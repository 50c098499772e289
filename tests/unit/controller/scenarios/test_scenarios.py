"""controller.scenarios (every shipped scenario, and distinct-bottleneck in detail) and
controller.results.records (run ids, manifest versions, finding runs).

Contract: a scenario is declarative; it documents its parameters, parses its defaults,
and plans on any inventory that has the roles it needs (both shipped inventories do);
bad parameters are a UsageError (exit 2) naming the flag, before anything is touched.
distinct-bottleneck (MCubic paper Fig. 2): one MPTCP connection over path 1 and path 2 and
one TCP flow per path; link 1 and link 2 shaped in both directions; exactly one subflow
per path from a `signal` endpoint on the server's path-2 address and none on the client.
"""
from __future__ import annotations

import calendar
import json
import os
import re
import time
from pathlib import Path

import pytest

from bridges.base import Direction, PipeConfig
from controller import scenarios
from controller.cli.run import prepare_run
from controller.errors import ParameterError, RecordError, ScenarioError, UsageError
from controller.inventory import Inventory
from controller.results.records import FORMAT_VERSION, RunRecord, find_run, load_manifest, make_run_id
from controller.units import Queue
from nodes.mptcp import MptcpEndpoint
from tests.support.shipped import INVENTORIES

F, R = Direction.FORWARD, Direction.REVERSE


@pytest.fixture(scope="module")
def db():
    return scenarios.get("distinct-bottleneck")


def addr(inv: Inventory, host: str, link: str) -> str:
    return inv.interface_on(host, link).ip


# ---- every shipped scenario -------------------------------------------------------------------


def test_registry_lists_distinct_bottleneck():
    names = scenarios.available()
    assert "distinct-bottleneck" in names
    assert len(names) == len(set(names))


@pytest.mark.parametrize("name", scenarios.names())
def test_every_registered_name_loads_or_is_reported_unavailable(name):
    if name in scenarios.available():
        assert scenarios.get(name).name == name
    else:
        with pytest.raises(ScenarioError, match=f"scenario '{name}' is not available in this build"):
            scenarios.get(name)


def test_unknown_scenario():
    with pytest.raises(ScenarioError, match="unknown scenario 'nope' \\(known: .*distinct-bottleneck"):
        scenarios.get("nope")


@pytest.mark.parametrize("name", scenarios.available())
def test_scenario_documents_its_parameters(name):
    s = scenarios.get(name)
    assert s.name == name
    assert s.title and s.reference and s.description.strip()
    text = s.describe()
    assert text.startswith(f"{name}: {s.title}")
    names = [p.name for p in s.all_params()]
    assert len(names) == len(set(names))
    assert "duration" in names                      # the common parameter
    for p in s.all_params():
        assert p.help, p.name
        line = next((l for l in text.splitlines() if l.strip().startswith(p.flag + " ")), None)
        assert line is not None, f"{p.flag} not documented"
        assert p.type in line and f"default {p.display(p.default)}" in line and p.help in line


UNITS = {"rate": ("bit/s",), "delay": (" ms", " s"), "duration": (" s",), "probability": (" %",),
         "size": ("B",), "queue": ("slots", "B")}


@pytest.mark.parametrize("name", scenarios.available())
def test_scenario_show_gives_every_value_its_unit(name):
    """`ctl scenarios show NAME`: every default and bound of a typed parameter with its unit
    (`0 %`, `1 Gbit/s`, `40 ms`), the same in the JSON form's `shown`."""
    s = scenarios.get(name)
    text = s.describe()
    params = {p["name"]: p for p in s.describe_json()["parameters"]}
    for p in s.all_params():
        if p.type not in UNITS:
            continue
        shown = [p.display(v) for v in (p.default, p.min, p.max) if v is not None]
        for v in shown:
            assert any(u in v for u in UNITS[p.type]), (p.name, v)
        line = next(l for l in text.splitlines() if l.strip().startswith(p.flag + " "))
        assert all(v in line for v in shown), (line, shown)
        assert params[p.name]["shown"]["default"] == p.display(p.default)


@pytest.mark.parametrize("name", scenarios.available())
def test_scenario_parses_its_defaults(name):
    s = scenarios.get(name)
    values, given = s.parse_args([])
    assert given == {}
    assert set(values) == {p.name for p in s.all_params()}
    for p in s.all_params():
        assert values[p.name] == p.parse(p.default)
    assert s.run_id_parts(given, values) == {}


@pytest.mark.parametrize("inventory", sorted(INVENTORIES))
@pytest.mark.parametrize("name", scenarios.available())
def test_scenario_plans_on_shipped_inventories(name, inventory, invs):
    inv = invs[inventory]
    s, values, given, plan = prepare_run(name, [], inv)       # also validated by each bridge's shaper
    assert plan.flows and plan.links and plan.endpoints
    for (link, _d), cfg in plan.links.items():
        assert link in inv.links and isinstance(cfg, PipeConfig)
    for f in plan.flows:
        assert f.client in inv.hosts and f.server in inv.hosts
        assert inv.link_of_address(f.server_addr) is not None
    for h, ifaces in plan.sample_ifaces.items():
        names = {i.name for i in inv.hosts[h].interfaces}
        assert set(ifaces) <= names, (h, ifaces)
    json.dumps(plan.to_json())                                 # recordable as it is


# ---- distinct-bottleneck plan ---------------------------------------------------------------


@pytest.mark.parametrize("inventory", sorted(INVENTORIES))
def test_distinct_bottleneck_links(db, invs, inventory):
    values, _ = db.parse_args(["--link2", "20M", "--queue", "64KB"])
    plan = db.plan(values, invs[inventory])
    want1 = PipeConfig(bw_bps=100_000_000, queue=Queue(bytes=65536))
    want2 = PipeConfig(bw_bps=20_000_000, queue=Queue(bytes=65536))
    assert plan.links == {("path1", F): want1, ("path1", R): want1, ("path2", F): want2, ("path2", R): want2}


@pytest.mark.parametrize("inventory", sorted(INVENTORIES))
def test_distinct_bottleneck_flows(db, invs, inventory):
    inv = invs[inventory]
    values, _ = db.parse_args(["--duration", "12s", "--cc", "bbr"])
    plan = db.plan(values, inv)
    by_name = {f.name: f for f in plan.flows}
    assert list(by_name) == ["mptcp", "tcp-path1", "tcp-path2"]
    m, t1, t2 = by_name["mptcp"], by_name["tcp-path1"], by_name["tcp-path2"]
    assert (m.protocol, m.client, m.server, m.cc, m.link) == ("mptcp", "a1", "b1", "bbr", None)
    assert (m.server_addr, m.client_addr) == (addr(inv, "b1", "path1"), addr(inv, "a1", "path1"))
    assert (t1.protocol, t1.client, t1.server, t1.cc, t1.link) == ("tcp", "a2", "b2", "cubic", "path1")
    assert (t1.server_addr, t1.client_addr) == (addr(inv, "b2", "path1"), addr(inv, "a2", "path1"))
    assert (t2.protocol, t2.link) == ("tcp", "path2")
    assert (t2.server_addr, t2.client_addr) == (addr(inv, "b2", "path2"), addr(inv, "a2", "path2"))
    ports = [f.port for f in plan.flows]
    assert len(set(ports)) == 3 and ports[0] == 5201
    assert all(f.duration_s == 12.0 for f in plan.flows) and plan.duration_s == 12.0
    assert plan.mptcp_hosts == ["a1", "b1"]


@pytest.mark.parametrize("inventory", sorted(INVENTORIES))
def test_distinct_bottleneck_endpoints(db, invs, inventory):
    inv = invs[inventory]
    values, _ = db.parse_args([])
    plan = db.plan(values, inv)
    server, client = plan.endpoints["b1"], plan.endpoints["a1"]
    p2 = inv.interface_on("b1", "path2")
    assert server.endpoints == (MptcpEndpoint(p2.ip, p2.name, ("signal",)),)   # its path-2 address only
    assert client.endpoints == ()
    for e in (server, client):
        assert e.mptcp and (e.subflows, e.add_addr_accepted) == (2, 2)
    assert "cubic" in client.congestion_controls
    assert plan.endpoints["a2"].mptcp is False                                 # plain TCP sender


def test_distinct_bottleneck_plan_record_says_which_hosts_are_plain_tcp(db, invs):
    # The record of the plan must not claim MPTCP limits for a host whose MPTCP state ctl leaves alone.
    values, _ = db.parse_args([])
    rec = db.plan(values, invs["virtual"]).to_json()["endpoints"]
    assert rec["a2"].get("mptcp") is False


def test_distinct_bottleneck_samples_bridge_ports(db, invs):
    values, _ = db.parse_args([])
    plan = db.plan(values, invs["lab-rack"])
    assert sorted(plan.sample_ifaces["dn1"]) == ["em0", "em1"]
    assert sorted(plan.sample_ifaces["a1"]) == ["enp3s0f0", "enp3s0f1"]


def test_distinct_bottleneck_role_errors(db, invs):
    values, _ = db.parse_args(["--mptcp-client", "br1"])
    with pytest.raises(ScenarioError, match="--mptcp-client: host 'br1' is a bridge"):
        db.plan(values, invs["virtual"])
    values, _ = db.parse_args(["--path2", "path9"])
    with pytest.raises(ScenarioError, match="link 'path9' is not in inventory virtual"):
        db.plan(values, invs["virtual"])
    values, _ = db.parse_args(["--tcp-server", "nohost"])
    with pytest.raises(ScenarioError, match="host 'nohost' is not in inventory"):
        db.plan(values, invs["virtual"])


# ---- parse_args errors --------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [["--link2", "-5M"], ["--link2=-5M"]])
def test_negative_rate(db, argv):
    with pytest.raises(ParameterError) as ei:
        db.parse_args(argv)
    assert str(ei.value) == "--link2: '-5M' must be a positive rate"
    assert ei.value.exit_code == 2


def test_unknown_flag(db):
    with pytest.raises(UsageError, match="unrecognized arguments: --bogus"):
        db.parse_args(["--bogus", "1"])


def test_bad_unit(db):
    with pytest.raises(ParameterError, match=r"--link2: unknown unit 'Q' in '20Q'"):
        db.parse_args(["--link2", "20Q"])


@pytest.mark.parametrize("argv, fragment", [
    (["--link2", "0.5k"], "below the minimum 1k"),
    (["--link2", "20G"], "above the maximum 10G"),
    (["--port-base", "80"], "below the minimum 1024"),
    (["--port-base", "x"], "is not a whole number"),
    (["--cc", "MCubic!"], "is not a valid name"),
    (["--queue", "0"], "must be a positive number of slots"),
    (["--duration", "0"], "must be positive"),
    (["--link2"], "expected one argument"),
])
def test_parameter_errors(db, argv, fragment):
    with pytest.raises(UsageError) as ei:
        db.parse_args(argv)
    assert fragment in str(ei.value)
    assert ei.value.exit_code == 2


def test_run_id_parts(db):
    values, given = db.parse_args(["--link2", "20000000", "--queue", "64KB", "--duration", "10",
                                   "--mptcp-client", "a1"])
    # only the given parameters that belong in a run id, in canonical spelling
    assert db.run_id_parts(given, values) == {"link2": "20M", "queue": "64KiB"}
    values, given = db.parse_args(["--tcp-cc", "bbr"])
    assert db.run_id_parts(given, values) == {"tcpcc": "bbr"}


# ---- results: run ids, records, manifests ---------------------------------------------------------

NOV22 = calendar.timegm((2026, 11, 22, 3, 18, 19))


def test_make_run_id_readable():
    assert make_run_id("distinct-bottleneck", {"link2": "20M"}, now=NOV22) == \
        "20261122T031819Z_distinct-bottleneck_link2-20M"        # the README's example
    assert make_run_id("distinct-bottleneck", {}, now=NOV22) == "20261122T031819Z_distinct-bottleneck"
    # a percentage keeps its unit (it was `loss-0.1-_cc-bbr3`)
    assert make_run_id("rtt-loss-sweep", {"rtt": "40ms", "loss": "0.1%", "cc": "bbr3"}, now=NOV22) == \
        "20261122T031819Z_rtt-loss-sweep_rtt-40ms_loss-0.1pct_cc-bbr3"


def test_make_run_id_is_a_safe_directory_name():
    rid = make_run_id("x", {"cc": "a b/c", "k": "v" * 500}, now=NOV22)
    assert re.fullmatch(r"[A-Za-z0-9._+-]+", rid)
    assert len(rid) <= 180


def test_run_records_get_a_uniqueness_suffix(tmp_path):
    rid = make_run_id("distinct-bottleneck", {"link2": "20M"}, now=NOV22)
    ids = [RunRecord(tmp_path, rid).id for _ in range(3)]
    assert ids == [rid, f"{rid}_2", f"{rid}_3"]
    assert all((tmp_path / i / "raw").is_dir() for i in ids)


def record(root: Path, rid: str, **manifest) -> Path:
    d = root / rid
    d.mkdir(parents=True)
    (d / "manifest.json").write_text(json.dumps({"format_version": FORMAT_VERSION, "run_id": rid, **manifest}))
    return d


def test_manifest_round_trip(tmp_path):
    rec = RunRecord(tmp_path, "r1")
    rec.start(scenario="distinct-bottleneck", parameters={"link2": 20_000_000}, inventory={"name": "v"},
              inventory_file="inventory/virtual.yaml")
    rec.finish("completed")
    m = load_manifest(rec.dir)
    assert (m["format_version"], m["status"], m["scenario"]) == (FORMAT_VERSION, "completed", "distinct-bottleneck")
    assert RunRecord.open(rec.dir).manifest == m


def test_newer_manifest_version_is_refused(tmp_path):
    d = record(tmp_path, "r", format_version=FORMAT_VERSION + 1)
    with pytest.raises(RecordError, match=f"format {FORMAT_VERSION + 1} is newer than this ctl understands"):
        load_manifest(d)


@pytest.mark.parametrize("content", ['{"run_id": "r"}', "{not json", '{"format_version": "1"}'])
def test_unreadable_manifest(tmp_path, content):
    d = tmp_path / "r"
    d.mkdir()
    (d / "manifest.json").write_text(content)
    with pytest.raises(RecordError):
        load_manifest(d)


def test_open_a_directory_that_is_not_a_record(tmp_path):
    with pytest.raises(RecordError, match="not a run record"):
        RunRecord.open(tmp_path)


def test_find_run(tmp_path):
    a = record(tmp_path, "20261122T031819Z_distinct-bottleneck_link2-20M")
    b = record(tmp_path, "20261122T041819Z_distinct-bottleneck_link2-10M")
    (tmp_path / "not-a-run").mkdir()
    now = time.time()
    os.utime(a, (now - 100, now - 100))
    os.utime(b, (now, now))
    assert find_run(tmp_path, a.name) == a                 # by id
    assert find_run(tmp_path, str(b)) == b                 # by path
    assert find_run(tmp_path, "link2-10M") == b            # by a unique part of the id
    assert find_run(tmp_path, None) == b                   # the latest
    with pytest.raises(RecordError, match="matches 2 runs"):
        find_run(tmp_path, "distinct-bottleneck")
    with pytest.raises(RecordError, match="no run record 'zzz'"):
        find_run(tmp_path, "zzz")
    # the text is matched as text: glob characters match nothing here (a glob would take both)
    for pattern in ("*", "2026*", "link2-?0M", "[0-9]*"):
        with pytest.raises(RecordError, match="no run record"):
            find_run(tmp_path, pattern)


def test_find_run_without_records(tmp_path):
    with pytest.raises(RecordError, match="no run records"):
        find_run(tmp_path / "missing", None)
    with pytest.raises(RecordError, match="no run records"):
        find_run(tmp_path, None)
