"""`ctl inventory check` and `ctl inventory init`, scenario role defaults that follow the
inventory (`plays`), and the dry run of a bridge whose facts are missing (issue 26).

Contract (controller/inventory_check.py, controller/cli/inventory.py, README "Describing your
rack"): every error of a file is printed at once, one line each as `file:line: field: message`
in ctl's words (never pydantic's), exit 2, and a valid file exits 0; a secret's value is never
printed; `inventory init` writes a file `check` accepts as it is when every management address
is given, and refuses on their lines the placeholders it leaves otherwise; a rack whose hosts
and links are named differently runs every scenario with no role flag when its hosts and links
say what they `play`; a dry run of a dummynet bridge without facts completes and says what it
assumed. The CLI runs as a user runs it (`python -m controller` in a subprocess).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller import scenarios
from controller.errors import InventoryError, ScenarioError
from controller.inventory import load_inventory
from controller.inventory_check import check_file
from controller.run.prepare import prepare_run
from tests.support.shipped import LAB, ROOT, VIRTUAL

pytestmark = pytest.mark.usefixtures("tmp_state_dir")

# What pydantic's own messages look like: none of it may reach a user.
PYDANTIC_WORDS = re.compile(r"Input should|Value error|valid dictionary|instance of|Extra inputs|Field required|"
                            r"pydantic|type=|For further information")


def ctl(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if not k.startswith("CTL_")}
    e.update(CTL_STATE_DIR=str(tmp_path / "state"), CTL_RUNS_DIR=str(tmp_path / "runs"), **(env or {}))
    return subprocess.run([sys.executable, "-m", "controller", *args], cwd=ROOT, env=e, capture_output=True,
                          text=True, timeout=120)


def line_of(text: str, needle: str) -> int:
    hits = [i for i, line in enumerate(text.splitlines(), 1) if needle in line]
    assert len(hits) == 1, (needle, hits)
    return hits[0]


def replace_once(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


# ---- every error at once -------------------------------------------------------------------------

# Each mistake: (the line as shipped, the broken line, the marker that finds the broken line, the field
# the error names, words of its message).
MISTAKES = [
    ("  sudo: true ", "  sudo: true\n  colour: blue ", "colour: blue", "ssh.colour",
     "unknown field (typo?)"),
    ("  token: {env: CTL_INFLUX_TOKEN}", "  token: CTL_INFLUX_TOKEN", "token: CTL_INFLUX_TOKEN", "influxdb.token",
     "a secret is a reference, not a value"),
    ("mgmt: {address: 192.168.50.12}", "mgmt: {address: 192.168.50.300}", "192.168.50.300", "hosts.a2.mgmt.address",
     "is not an IPv4 address"),
    ("{name: enp3s0f0, address: 10.1.0.21/24, link: path1, side: b}",
     "{name: enp3s0f0, address: 10.1.0.321/24, link: path1, side: b}", "10.1.0.321/24",
     "hosts.b1.interfaces[0].address", "is not an address with prefix length"),
    ("{name: enp3s0f1, address: 10.2.0.22/24, link: path2, side: b}",
     "{name: enp3s0f1, address: 10.2.0.22/24, link: path3, side: b}", "link: path3", "hosts.b2.interfaces[1].link",
     "names link 'path3', which this inventory does not have (did you mean path2?"),
    ("    capacity: 1G\n    switch: sw1\n    switch_ports: [Gi1/0/1", "    capacity: 2 parsecs\n    switch: sw1\n"
     "    switch_ports: [Gi1/0/1", "2 parsecs", "links.path1.capacity", "unknown unit 'parsecs'"),
    ("    forward: {pipe: 10201}\n    reverse: {pipe: 10202}", "    forward: {pipe: 10201}\n    reverse: {pipe: 10201}",
     "reverse: {pipe: 10201}", "links.path2.reverse.pipe", "forward and reverse share pipe 10201"),
]


@pytest.fixture
def broken_lab(tmp_path) -> tuple[Path, str]:
    text = LAB.read_text()
    for shipped, broken, *_ in MISTAKES:
        text = replace_once(text, shipped, broken)
    path = tmp_path / "lab-broken.yaml"
    path.write_text(text)
    return path, text


def test_a_broken_lab_rack_gets_every_error_at_once_with_its_line(tmp_path, broken_lab):
    path, text = broken_lab
    p = ctl(tmp_path, "inventory", "check", str(path))
    assert p.returncode == 2 and p.stdout == "", p.stderr
    lines = p.stderr.splitlines()
    errors = [l for l in lines if ": warning: " not in l and not l.startswith("ctl: error:")]
    want = [f"{path}:{line_of(text, marker)}: {field}: " for _old, _new, marker, field, _msg in MISTAKES]
    for prefix, (*_x, msg) in zip(want, MISTAKES):
        hits = [l for l in errors if l.startswith(prefix)]
        assert len(hits) == 1 and msg in hits[0], (prefix, msg, errors)
    assert len(errors) == len(MISTAKES), errors           # nothing else, nothing twice
    assert lines[-1] == f"ctl: error: {path}: {len(MISTAKES)} errors: nothing was changed"
    # in line order, and never pydantic's words
    nums = [int(l.split(":")[1]) for l in errors]
    assert nums == sorted(nums)
    assert not PYDANTIC_WORDS.search(p.stderr), p.stderr


def test_the_same_errors_as_json(tmp_path, broken_lab):
    path, text = broken_lab
    p = ctl(tmp_path, "inventory", "check", str(path), "--json")
    assert p.returncode == 2, p.stderr
    out = json.loads(p.stdout)
    out = out.get("data", out)               # the --json envelope, where ctl has one
    assert out["valid"] is False and len(out["errors"]) == len(MISTAKES)
    assert {e["field"] for e in out["errors"]} == {m[3] for m in MISTAKES}
    assert all(isinstance(e["line"], int) for e in out["errors"])


def test_a_run_on_a_broken_file_names_the_first_error_and_the_check(tmp_path, broken_lab):
    path, _text = broken_lab
    p = ctl(tmp_path, "run", "rtt-loss-sweep", "--dry-run", "-i", str(path))
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1, p.stderr
    assert "ssh.colour: unknown field (typo?)" in p.stderr
    # loading stops at the fields: 4 of the 7 (the address that only looks like one, the dangling link
    # and the shared pipe are cross-references, checked once every field is valid); check finds all 7
    assert f"(and 3 more errors; `ctl inventory check {path}` lists every one)" in p.stderr


def test_the_shipped_inventories_are_valid_and_every_scenario_runs_on_them(tmp_path):
    for inv in (VIRTUAL, LAB):
        p = ctl(tmp_path, "inventory", "check", str(inv))
        assert p.returncode == 0, p.stderr
        assert p.stdout.startswith(f"{inv}: valid: rack ")
        rows = {l.split()[0]: l.split()[1] for l in p.stdout.splitlines()[2:]}
        assert rows == {n: "plans" for n in scenarios.available()}, p.stdout
        assert ": error" not in p.stderr


def test_a_secret_value_is_never_printed(tmp_path):
    secret = "s3cr3t-Value-0123456789"
    text = LAB.read_text()
    text = replace_once(text, "  token: {env: CTL_INFLUX_TOKEN}", f"  token: {secret}\n  tokne: {secret}x")
    dn1_snmp = ("      auth_key: {env: CTL_SNMP_AUTH}\n      priv_protocol: aes\n"
                "      priv_key: {env: CTL_SNMP_PRIV}\n      refresh_s: 0          # bsnmpd (FreeBSD base)")
    text = replace_once(text, dn1_snmp, dn1_snmp.replace("{env: CTL_SNMP_AUTH}", f"{{env: \"{secret} \"}}"))
    path = tmp_path / "leaky.yaml"
    path.write_text(text)
    for args in ((), ("--json",)):
        p = ctl(tmp_path, "inventory", "check", str(path), *args, env={"CTL_SNMP_PRIV": secret + "-env"})
        assert p.returncode == 2
        assert secret not in p.stdout + p.stderr, p.stdout + p.stderr
        assert "influxdb.token" in p.stdout + p.stderr and "influxdb.tokne" in p.stdout + p.stderr
    # a valid file: the secrets resolve (or not) without their values being shown
    p = ctl(tmp_path, "inventory", "check", str(LAB), "--json",
            env={"CTL_INFLUX_TOKEN": secret, "CTL_SNMP_AUTH": secret, "CTL_SNMP_PRIV": secret})
    assert p.returncode == 0 and secret not in p.stdout + p.stderr
    warned = [w["field"] for w in (json.loads(p.stdout).get("data") or json.loads(p.stdout))["warnings"]]
    assert not any("token" in f or "_key" in f for f in warned), warned


def test_a_secret_that_does_not_resolve_here_is_a_warning_not_an_error(tmp_path):
    key = tmp_path / "snmp-key"
    key.write_text("k" * 20 + "\n")
    key.chmod(0o644)
    text = replace_once(LAB.read_text(), "  token: {env: CTL_INFLUX_TOKEN}", f"  token: {{file: {key}}}")
    path = tmp_path / "inv.yaml"
    path.write_text(text)
    r = check_file(path, environ={})
    assert r.valid and not r.errors
    by_field = {w.render("f").split(": ", 2)[1]: w.message for w in r.warnings}
    assert "can be read by others (mode 0644)" in by_field["influxdb.token"]
    assert "$CTL_SNMP_AUTH is not set" in by_field["hosts.dn1.snmp.auth_key"]
    assert "also named by 4 other fields" in by_field["hosts.dn1.snmp.auth_key"]
    assert "k" * 20 not in " ".join(by_field.values())


@pytest.mark.parametrize("config, words", [
    ("Host *\n  Match exec \"touch {marker}\"\n", "line 2: Match exec is refused"),
    ("Host bastion\n  ProxyCommand sh -c 'touch {marker}'\n", "line 2: ProxyCommand"),
    ("Host *\n  LocalCommand touch {marker}\n", "line 2: LocalCommand"),
])
def test_a_refused_openssh_config_is_an_error_of_the_check_and_nothing_runs(tmp_path, config, words):
    # The config is read as a connection would read it (controller.sshconfig), offline, executing
    # nothing: a refused directive is an error on the inventory's `config_file` line, exit 2.
    marker = tmp_path / "ran"
    cfg = tmp_path / "ssh_config"
    cfg.write_text(config.format(marker=marker))
    text = replace_once(LAB.read_text(), "\nssh:\n", f"\nssh:\n  config_file: {cfg}\n")
    path = tmp_path / "inv.yaml"
    path.write_text(text)
    r = check_file(path, environ={})
    assert not r.valid and len(r.errors) == 1
    assert r.errors[0].line == line_of(text, "config_file:")
    shown = r.errors[0].render(str(path))
    assert "ssh.config_file" in shown and words in shown, shown
    p = ctl(tmp_path, "inventory", "check", str(path))
    assert p.returncode == 2 and words in p.stdout + p.stderr, p.stdout + p.stderr
    assert not marker.exists()
    # the same config without the refused line is accepted
    cfg.write_text("Host *\n  ServerAliveInterval 5\n")
    assert check_file(path, environ={}).valid


@pytest.mark.parametrize("old, new, field, words", [
    ("mgmt: {address: 192.168.50.22}", "mgmt: {address: 192.168.50.21}", "hosts.b2.mgmt.address",
     "management address 192.168.50.21 is also host b1's management address"),
    ("    a_port: em0\n    b_port: em1\n    forward: {pipe: 10201}", "    a_port: em0\n    b_port: em0\n"
     "    forward: {pipe: 10201}", "links.path2.b_port", "a_port and b_port are both 'em0'"),
    ("    bridge: dn2\n", "    bridge: dn9\n", "links.path2.bridge", "'dn9' is not a host of this inventory"),
    ("    bridge: dn2\n", "    bridge: sw1\n", "links.path2.bridge", "host sw1 is a switch, not a bridge"),
    ("      - {name: enp3s0, address: 10.30.0.100/24, segment: inet}",
     "      - {name: enp3s0, address: 10.30.0.100/24, segment: inte}", "hosts.tr1.interfaces[0].segment",
     "names segment 'inte', which this inventory does not have (did you mean inet?"),
    ("    b_segment: sbm\n    forward: {pipe: 10303}",
     "    b_segment: sbm\n    a_segment: sbm\n    forward: {pipe: 10303}", "links.sbd2", "both sides are segment sbm"),
])
def test_cross_reference_mistakes(tmp_path, old, new, field, words):
    path = tmp_path / "inv.yaml"
    path.write_text(replace_once(LAB.read_text(), old, new))
    r = check_file(path, environ={})
    assert not r.valid
    hits = [e for e in r.errors if e.render("f").split(": ", 2)[1] == field]
    assert hits and words in hits[0].message, [e.render("f") for e in r.errors]
    with pytest.raises(InventoryError):   # the model refuses it too: check is never more lenient than a run
        load_inventory(path)


def test_a_loop_of_segments_is_an_error(tmp_path):
    text = replace_once(LAB.read_text(), "  wan2:\n    bridge: dn4\n", "  wan2:\n    bridge: dn4\n    a_segment: sbm\n"
                                                                           "    b_segment: inet\n")
    text = replace_once(text, "  sbd1:\n    bridge: dn3\n", "  sbd1:\n    bridge: dn3\n    a_segment: inet\n")
    path = tmp_path / "inv.yaml"
    path.write_text(text)
    msgs = [e.message for e in check_file(path, environ={}).errors]
    assert any("already joined by other links" in m for m in msgs), msgs


# ---- inventory init -------------------------------------------------------------------------------

MINIMAL = ["--hosts", "snd@192.168.1.10", "rcv@192.168.1.11", "shp:bridge@192.168.1.12"]


def test_init_writes_the_minimal_three_host_rack_that_check_accepts_as_is(tmp_path):
    path = tmp_path / "mini.yaml"
    p = ctl(tmp_path, "inventory", "init", str(path), "--name", "mini", *MINIMAL)
    assert p.returncode == 0 and path.exists(), p.stderr
    c = ctl(tmp_path, "inventory", "check", str(path))
    assert c.returncode == 0, c.stderr
    rows = {l.split()[0]: l for l in c.stdout.splitlines()[2:]}
    assert "plans" in rows["rtt-loss-sweep"] and "client snd (plays a1)" in rows["rtt-loss-sweep"]
    assert "server rcv (plays b1)" in rows["rtt-loss-sweep"]
    # the rack runs rtt-loss-sweep with no role flag; the dry run says what it assumed about the bridge
    d = ctl(tmp_path, "run", "rtt-loss-sweep", "--dry-run", "--duration", "5s", "-i", str(path))
    assert d.returncode == 0, d.stderr
    assumed = [l for l in d.stderr.splitlines() if l.startswith("warning: shp (dummynet): ")]
    assert len(assumed) == 2, d.stderr
    assert "facts.os_release is not set and shaper.tool is auto: this dry run assumes FreeBSD 14.1-RELEASE " \
           "(pipes configured with dnctl)" in assumed[0]
    assert "pipe_slot_limit=100" in assumed[1]
    assert any(" dnctl pipe 10101 config " in l or l.strip().startswith("dnctl pipe 10101 config")
               for l in d.stdout.splitlines()), d.stdout
    # the other scenarios say why they cannot run here, in one line each
    assert all("cannot" in rows[n] for n in rows if n != "rtt-loss-sweep")


def test_init_to_stdout_with_two_bridges_and_four_endpoints(tmp_path):
    from controller.rack.fit import all_fits
    hosts = ["s1@10.9.0.1", "s2@10.9.0.2", "r1@10.9.0.3", "r2@10.9.0.4", "x1:bridge@10.9.0.5", "x2:bridge@10.9.0.6"]
    fits = {}
    for shaper in ("dummynet", "tc"):
        p = ctl(tmp_path, "inventory", "init", "--name", "duo", "--hosts", *hosts, "--shaper", shaper)
        assert p.returncode == 0, p.stderr
        path = tmp_path / f"duo-{shaper}.yaml"
        path.write_text(p.stdout)
        r = check_file(path, environ={})
        assert r.valid, [e.render(path) for e in r.errors]
        fits[shaper] = {f.scenario: f for f in all_fits(r.inventory)}
    # two dual-homed senders and receivers over two bridges: the dumbbell scenarios find every role
    runs = {n for n, f in fits["dummynet"].items() if f.ok}
    assert runs == {"distinct-bottleneck", "parallel-streams", "rtt-loss-sweep"}, fits["dummynet"]
    # tc bridges cannot delay: rtt-loss-sweep (40 ms by default) is refused by the bridge's own check
    assert not fits["tc"]["rtt-loss-sweep"].ok and "delay" in fits["tc"]["rtt-loss-sweep"].reason


def test_init_without_addresses_leaves_placeholders_check_refuses_on_their_lines(tmp_path):
    path = tmp_path / "todo.yaml"
    assert ctl(tmp_path, "inventory", "init", str(path), "--hosts", "snd", "rcv", "shp:bridge").returncode == 0
    text = path.read_text()
    p = ctl(tmp_path, "inventory", "check", str(path))
    assert p.returncode == 2
    for host in ("snd", "rcv", "shp"):
        n = line_of(text, f"<management address of {host}>")
        assert f"{path}:{n}: hosts.{host}.mgmt.address: '<management address of {host}>' is neither an IP " \
               "address nor a host name" in p.stderr, p.stderr
    assert "name: todo" in text


@pytest.mark.parametrize("args, words", [
    (["--hosts", "snd", "rcv"], "at least two endpoints and one bridge"),
    (["--hosts", "snd", "rcv", "shp:router"], "init writes endpoint and bridges"),
    (["--hosts", "Snd", "rcv", "shp:bridge"], "host name 'Snd' must be lower-case"),
    (["--hosts", "snd@10.0.0.1", "rcv@10.0.0.1", "shp:bridge"], "a management address is given twice"),
    (["--hosts", "snd@1.2.3.400", "rcv", "shp:bridge"], "'1.2.3.400' (of snd) is neither an IP address nor a host"),
    (["--hosts", "snd", "snd", "shp:bridge"], "snd given twice"),
])
def test_init_bad_input_is_one_line(tmp_path, args, words):
    p = ctl(tmp_path, "inventory", "init", "--name", "x", *args)
    assert p.returncode == 2 and p.stdout == "" and len(p.stderr.splitlines()) == 1, p.stderr
    assert words in p.stderr


def test_init_never_writes_over_a_file_nor_through_a_symlink(tmp_path):
    existing = tmp_path / "mine.yaml"
    existing.write_text("keep\n")
    link = tmp_path / "link.yaml"
    victim = tmp_path / "victim"
    link.symlink_to(victim)
    for target in (existing, link):
        p = ctl(tmp_path, "inventory", "init", str(target), *MINIMAL)
        assert p.returncode == 2 and len(p.stderr.splitlines()) == 1, p.stderr
    assert existing.read_text() == "keep\n" and not victim.exists()


# ---- role defaults that follow the inventory -------------------------------------------------------

def renamed(source: Path, dest: Path) -> tuple[Path, dict[str, str]]:
    """The inventory with every host and link renamed (`x-<name>`) and each new name playing the old
    one; references follow. Returns the file and old -> new."""
    data: dict[str, Any] = yaml.safe_load(source.read_text())
    new = {n: f"x-{n}" for n in list(data["hosts"]) + list(data["links"])}
    hosts = {}
    for name, h in data["hosts"].items():
        for i in h.get("interfaces", []):
            if "link" in i:
                i["link"] = new[i["link"]]
        hosts[new[name]] = {**h, "plays": [name]}
    links = {}
    for name, l in data["links"].items():
        l["bridge"] = new[l["bridge"]]
        if "switch" in l:
            l["switch"] = new[l["switch"]]
        links[new[name]] = {**l, "plays": [name]}
    for seg in (data.get("segments") or {}).values():
        if "switch" in seg:
            seg["switch"] = new[seg["switch"]]
    data.update(hosts=hosts, links=links, name="renamed")
    dest.write_text(yaml.safe_dump(data, sort_keys=False))
    return dest, new


@pytest.mark.parametrize("source", [VIRTUAL, LAB], ids=["virtual", "lab-rack"])
def test_every_scenario_plans_on_a_renamed_rack_with_no_role_flag(tmp_path, source):
    path, new = renamed(source, tmp_path / "renamed.yaml")
    inv = load_inventory(path)
    orig = load_inventory(source)
    for name in scenarios.available():
        _sc, params, given, plan = prepare_run(name, [], inv)
        _sc, params0, _g, plan0 = prepare_run(name, [], orig)
        assert given == {}
        # every role is the renamed host or link of the shipped default, and the plan is the same plan
        roles = {p.name for p in scenarios.get(name).all_params() if p.type == "host"}
        assert {k: params[k] for k in roles} == {k: new[params0[k]] for k in roles}, name
        assert [(new[f.client], new[f.server], f.server_addr, f.port) for f in plan0.flows] == \
               [(f.client, f.server, f.server_addr, f.port) for f in plan.flows], name
        assert {(new[k[0]], k[1]): v for k, v in plan0.links.items()} == plan.links, name
    # `ctl inventory check` says how each role was chosen
    p = ctl(tmp_path, "inventory", "check", str(path))
    assert p.returncode == 0, p.stderr
    assert "client x-a1 (plays a1)" in p.stdout and "cannot" not in p.stdout


def test_a_flag_still_wins_and_two_players_of_one_name_are_refused(tmp_path):
    path, _new = renamed(VIRTUAL, tmp_path / "renamed.yaml")
    inv = load_inventory(path)
    _sc, params, given, _plan = prepare_run("rtt-loss-sweep", ["--client", "x-a2", "--server", "x-b2"], inv)
    assert (params["client"], params["server"], params["link"]) == ("x-a2", "x-b2", "x-path1")
    data = yaml.safe_load(path.read_text())
    data["hosts"]["x-a2"]["plays"] = ["a2", "a1"]
    both = tmp_path / "both.yaml"
    both.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(ScenarioError, match="host x-a1 and host x-a2 both play 'a1'"):
        prepare_run("rtt-loss-sweep", [], load_inventory(both))
    r = check_file(both, environ={})
    assert not r.valid and any("'a1' is already played by host x-a1" in e.message for e in r.errors)



# ---- the probe asks, it never changes ---------------------------------------------------------------

def test_every_command_the_probe_can_send_is_read_only(invs):
    from bridges.base import shaper_class
    from controller.rack import probe
    cmds = probe.endpoint_commands() + probe.bittorrent_commands("/opt/ctl/bittorrent")
    for inv in invs.values():
        for h, host in inv.hosts.items():
            if host.shaper is not None and any(l.bridge == h for l in inv.links.values()):
                cmds += shaper_class(host.shaper.kind)(inv, h).read_commands()
    assert cmds and not [c.argv for c in cmds if c.mutates]
    # and the probe's own runner refuses one that would
    import asyncio

    from controller.commands import Command

    class Session:
        async def run(self, c):
            raise AssertionError("sent")
    with pytest.raises(AssertionError, match="mutates"):
        asyncio.run(probe._run(Session(), [Command(("sysctl", "-w", "x=1"), mutates=True)]))


def test_versions_as_tools_print_them():
    from controller.rack.probe import version_of
    assert version_of("iperf 3.12 (cJSON 1.7.15)\nLinux vm 6.18\n") == "3.12"
    assert version_of("mptcpize 0.12\n") == "0.12"
    assert version_of("ss utility, iproute2-6.1.0\n") == "6.1.0"
    assert version_of("Python 3.11.7\n") == "3.11.7"
    assert version_of("") is None and version_of("command not found") is None


@pytest.mark.parametrize("release, sysctls, tool, problem", [
    ("14.1-RELEASE", {}, "dnctl", None),
    ("13.3-RELEASE", {"net.inet.ip.dummynet.pipe_slot_limit": "1000"}, "ipfw", None),
    ("14.1-RELEASE", {"net.link.bridge.ipfw": "0"}, "dnctl", "net.link.bridge.ipfw is 0"),
])
def test_a_dummynet_bridge_probed_on_the_simulated_freebsd_host(invs, release, sysctls, tool, problem):
    """The dummynet half of the probe against tests/support/ipfw_fake.py (a test double: there is no
    FreeBSD bridge here): release, tool, listing format, limits and the settings ctl refuses, and
    not one command that changes the host."""
    import asyncio

    from bridges.base import shaper_class
    from controller.rack.probe import HostProbe, _run, shaper_checks
    from tests.support.ipfw_fake import FakeDummynetHost
    inv = invs["lab-rack"]
    fake = FakeDummynetHost("dn1", release, sysctls=sysctls)
    results = asyncio.run(_run(fake, shaper_class("dummynet")(inv, "dn1").read_commands()))
    p = HostProbe("dn1", "bridge", "192.168.50.31", reached=True)
    shaper_checks(p, inv, results)
    s = p.facts["shaper"]
    assert (s["release"], s["tool"], s["listing_format"]) == (release, tool, "modern")
    assert s["limits"]["net.inet.ip.dummynet.pipe_slot_limit"] == sysctls.get("net.inet.ip.dummynet.pipe_slot_limit",
                                                                                "100")
    bad = [c for c in p.checks if not c.ok]
    assert (bad[0].have.split(":")[0] if bad else None) == problem
    assert p.ok is (problem is None)
    assert fake.mutations == []
