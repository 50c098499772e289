"""`ctl inventory check --probe` on the virtual rack (real namespaces, sshd, MPTCP, dnpipe).

Contract (controller/rack/probe.py, docs/howto/describe-rack.md "`--probe`: ask the hosts"): the probe reaches every host
ctl logs in to over SSH, asks only read-only questions (nothing on a host changes: the links'
shaping, the endpoints' sysctls and the kernel's registered congestion controls read the same
before and after), reports per host what its role needs and what is there, and exits 0 only if
every shipped scenario can run; otherwise it names the scenarios that cannot and why (exit 1).
A virtual rack that is down is one line, exit 1.
"""
from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from controller import scenarios
from controller.inventory import Role
from tests.support.rack import write_test_inventory
from tests.unit.controller.cli.test_json_envelope import check

pytestmark = pytest.mark.integration


def _data(stdout: str) -> dict:
    out = json.loads(stdout)
    return out.get("data", out) if isinstance(out, dict) and "format" in out else out


def _host_state(rack) -> dict:
    """What a probe must not change on this rack: every link's pipes and each endpoint's MPTCP
    settings and default congestion control (per namespace). Kernel-wide state (registered
    struct_ops, the allowed list) is shared with every other test on this machine and is not
    compared; that the probe sends no changing command is a unit test (test_inventory_check.py)."""
    links = _data(rack.ctl("link", "show", "--json").stdout)
    sysctls = {}
    for h, host in sorted(rack.inventory.hosts.items()):
        if host.role is Role.ENDPOINT:
            sysctls[h] = rack.netns(h, "sysctl", "net.mptcp", "net.ipv4.tcp_congestion_control")
    pipes = {l: {d: v.get("config") for d, v in x["directions"].items()} for l, x in links.items()}
    return {"pipes": pipes, "sysctls": sysctls}


def test_the_probe_reports_every_host_and_every_scenario_runs(rack):
    before = _host_state(rack)
    p = rack.ctl("inventory", "check", "--probe", "--json", timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    check(json.loads(p.stdout), "inventory check")           # the typed schema (controller/schemas/probe_outputs.py)
    probe = _data(p.stdout)["probe"]
    ssh_hosts = sorted(h for h, x in rack.inventory.hosts.items() if x.role is not Role.SWITCH)
    assert sorted(probe["hosts"]) == ssh_hosts
    for h, x in probe["hosts"].items():
        assert x["reached"] and x["ok"], (h, x)
        assert x["access"]["user"] == "root" and x["facts"]["clock"]["rtt_ms"] < 1000
    # what is there is what this machine has (the virtual rack's hosts are namespaces of its kernel)
    a1 = probe["hosts"]["a1"]
    assert a1["kernel"] == os.uname().release and a1["facts"]["mptcp_enabled"] == "1"
    iperf3 = subprocess.run(["iperf3", "--version"], capture_output=True, text=True).stdout.split()[1]
    assert a1["facts"]["tools"]["iperf3"] == iperf3
    assert a1["facts"]["tools"]["mptcpize"] and a1["facts"]["tools"]["ss"] and a1["facts"]["tools"]["nstat"]
    cc = a1["facts"]["congestion"]
    assert cc["btf"] and cc["struct_ops"] and set(cc["bpf"].values()) == {"loadable"}, cc
    assert "cubic" in cc["available"]
    br1 = probe["hosts"]["br1"]
    assert br1["facts"]["shaper"]["kind"] == "dnpipe" and all(c["ok"] for c in br1["checks"] if c["blocking"])
    assert [v["scenario"] for v in probe["scenarios"] if v["runs"]] == scenarios.available()
    assert probe["ok"] is True
    # read-only: nothing on any host changed
    assert _host_state(rack) == before


def test_the_probe_table(rack):
    p = rack.ctl("inventory", "check", "--probe", timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    lines = p.stdout.splitlines()
    assert any(l.startswith("probe of rack vtest: ") and "read-only" in l for l in lines)
    rows = {}
    for h, x in rack.inventory.hosts.items():
        if x.role is not Role.SWITCH:
            rows[h] = next((l for l in lines if l.split()[:2] == [h, x.role.value]), None)
            assert rows[h] is not None, h
            assert re.search(r"  root@\S+\s+" + re.escape(os.uname().release) + r"\s+[+-]\d+\.\d\d ms  ", rows[h]), rows[h]
    # a row shows what the JSON has, for every kind of host: no "?" for a value the probe read
    assert not [r for r in rows.values() if "?" in r], rows
    iperf3 = subprocess.run(["iperf3", "--version"], capture_output=True, text=True).stdout.split()[1]
    assert f"MPTCP on; iperf3 {iperf3}, mptcpize " in rows["a1"] and "BPF cc yes" in rows["a1"], rows["a1"]
    pids = {x["name"]: x["pid"] for x in rack.lab_state()["processes"]}
    for h, x in rack.inventory.hosts.items():
        if x.shaper is not None:
            links = sorted(l for l, y in rack.inventory.links.items() if y.bridge == h)
            ls = rack.inventory.links
            expect = re.escape(f"dnpipe: shapes {', '.join(links)}; ") + "; ".join(
                re.escape(f"{l}: forwarder pid {pids[f'dnpipe-{l}']} between {ls[l].a_port} and {ls[l].b_port}, up ")
                + r"\d+\.\d s" for l in links)
            what = rows[h].split("  ")[-1]
            assert re.fullmatch(expect, what), (what, expect)
    assert lines[-1] == "rack vtest can run every shipped scenario"


def test_the_probe_says_which_scenario_cannot_run_and_why(rack):
    """MPTCP switched off in one receiver's namespace (restored after): the MPTCP scenarios that use
    it cannot run, the TCP-only ones still can; exit 1."""
    was = rack.netns("b1", "sysctl", "-n", "net.mptcp.enabled").strip()
    rack.netns("b1", "sysctl", "-w", "net.mptcp.enabled=0")
    try:
        p = rack.ctl("inventory", "check", "--probe", "--json", timeout=600)
    finally:
        rack.netns("b1", "sysctl", "-w", f"net.mptcp.enabled={was}")
    assert p.returncode == 1, p.stderr
    check(json.loads(p.stdout), "inventory check")
    verdicts = {v["scenario"]: v for v in _data(p.stdout)["probe"]["scenarios"]}
    assert not verdicts["distinct-bottleneck"]["runs"]
    assert "b1: needs net.mptcp.enabled = 1 (MPTCP), has 0" in verdicts["distinct-bottleneck"]["reasons"]
    assert verdicts["rtt-loss-sweep"]["runs"] and verdicts["parallel-streams"]["runs"]
    assert rack.netns("b1", "sysctl", "-n", "net.mptcp.enabled").strip() == was


def test_a_virtual_rack_that_is_down_is_one_line(rack, tmp_path):
    down = write_test_inventory(tmp_path / "down.yaml", prefix="invh9", mgmt_octet=249, name="invhdown")
    p = rack.ctl("inventory", "check", str(down), "--probe")
    assert p.returncode == 1 and len(p.stderr.splitlines()) == 1, p.stderr
    assert p.stderr.strip() == "ctl: error: virtual rack invhdown is down: `ctl lab up` first (the probe asks its " \
                               "hosts over SSH)"
