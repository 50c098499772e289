"""controller.inventory: the strict, typed rack model.

Contract (module docstring, README): both shipped inventories load; a typo or a missing
field is an InventoryError `file:line: field: message` with the line of the offending key;
duplicate keys and cross-reference mistakes are refused; secrets are references (env first,
then file) and never appear in a snapshot.

Broken variants are the shipped files with one line changed, written into tmp_path; the
expected line number is found in the modified text, so the tests follow edits of the
shipped files.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from controller.errors import InventoryError, ParameterError
from controller.inventory import Role, SecretRef, load_inventory
from tests.support.shipped import LAB, VIRTUAL



pytestmark = pytest.mark.usefixtures("tmp_state_dir")


def variant(tmp_path: Path, source: Path, old: str, new: str, name: str = "inv.yaml") -> tuple[Path, str]:
    text = source.read_text()
    assert text.count(old) == 1, f"{old!r} must occur once in {source.name}"
    out = tmp_path / name
    out.write_text(text.replace(old, new))
    return out, out.read_text()


def line_of(text: str, needle: str, occurrence: int = 1) -> int:
    """1-based line number of the `occurrence`-th line containing `needle`."""
    hits = [i for i, line in enumerate(text.splitlines(), 1) if needle in line]
    assert len(hits) >= occurrence, needle
    return hits[occurrence - 1]


def load_error(path: Path) -> str:
    with pytest.raises(InventoryError) as ei:
        load_inventory(path)
    assert ei.value.exit_code == 2
    return str(ei.value)


# ---- the shipped inventories ---------------------------------------------------------------


def test_virtual_inventory_loads(tmp_path):
    inv = load_inventory(VIRTUAL)
    assert (inv.name, inv.kind) == ("virtual", "virtual")
    # a1..b2 on path1/path2 (distinct bottleneck); sa*/sb* (shared bottleneck), ns1/ns2/tr1
    # (MPTCP + BitTorrent) on their own segments behind sw2
    assert inv.by_role(Role.ENDPOINT) == ["a1", "a2", "b1", "b2", "ns1", "ns2", "sa1", "sa2", "sb1", "sb2", "tr1"]
    assert inv.by_role(Role.BRIDGE) == ["br1", "br2", "br3", "br4"]
    assert inv.by_role(Role.SWITCH) == ["sw1", "sw2"]
    assert inv.by_role(Role.ROUTER) == ["gw1"]
    assert sorted(inv.links) == ["lp1", "lp2", "path1", "path2", "sbd1", "sbd2", "sbn", "wan1", "wan2"]
    assert (inv.links["path1"].switch, inv.links["path2"].switch) == ("sw1", "sw1")
    assert inv.links["path1"].capacity_bps == 10**9
    assert inv.hosts["br1"].shaper.kind == "dnpipe"
    assert str(inv.hosts["br1"].shaper.control_dir) == "/run/ctl/ctlv/dnpipe"
    assert inv.hosts_on("path1", "a") == ["a1", "a2"]
    assert inv.hosts_on("path2", "b") == ["b1", "b2"]
    assert inv.interface_on("b1", "path2").ip == "10.2.0.21"
    # ${CTL_STATE_DIR} is expanded in paths
    assert inv.influxdb.token.file == tmp_path / "state" / "influxdb" / "virtual" / "token"
    assert inv.influxdb.token.env == "CTL_INFLUX_TOKEN"


def test_lab_rack_example_loads():
    inv = load_inventory(LAB)
    assert (inv.name, inv.kind) == ("lab-rack", "physical")
    assert inv.virtual is None
    assert inv.by_role(Role.BRIDGE) == ["dn1", "dn2", "dn3", "dn4"]
    assert inv.by_role(Role.ROUTER) == ["gw1"]
    assert inv.by_role(Role.MODEM_HOST) == ["bus1", "static1", "subway1"]
    assert (inv.links["path1"].forward.pipe, inv.links["path1"].reverse.pipe) == (10101, 10102)
    assert (inv.links["path2"].forward.pipe, inv.links["path2"].reverse.pipe) == (10201, 10202)
    assert inv.hosts["dn1"].shaper.kind == "dummynet"
    # `~` expanded in paths
    assert str(inv.ssh.key_file) == str(Path("~/.ssh/ctl_lab_ed25519").expanduser())


def test_interface_on_missing_link_is_an_inventory_error():
    inv = load_inventory(VIRTUAL)
    with pytest.raises(InventoryError, match="br1 has no interface on link path1"):
        inv.interface_on("br1", "path1")


# ---- typos and missing fields: file, line, field -------------------------------------------


def test_typo_in_host_names_file_line_field(tmp_path):
    path, text = variant(tmp_path, VIRTUAL, "    mgmt: {address: 10.250.0.12}", "    mgmnt: {address: 10.250.0.12}")
    msg = load_error(path)
    assert msg.startswith(f"{path}:{line_of(text, 'mgmnt:')}: hosts.a2.mgmnt: unknown field (typo?)")


def test_typo_at_top_level(tmp_path):
    path, text = variant(tmp_path, VIRTUAL, "description:", "descripton:")
    assert load_error(path) == f"{path}:{line_of(text, 'descripton:')}: descripton: unknown field (typo?): " \
        "did you mean `description`?"


def test_typo_in_flow_mapping_of_a_list_item(tmp_path):
    old = "{name: p2, address: 10.2.0.21/24, link: path2, side: b}"
    path, text = variant(tmp_path, VIRTUAL, old, old.replace("address:", "adress:"))
    assert load_error(path) == (f"{path}:{line_of(text, 'adress:')}: hosts.b1.interfaces[1].adress: "
                                "unknown field (typo?): did you mean `address`?")


def test_typo_in_link(tmp_path):
    path, text = variant(tmp_path, LAB, "    switch_ports: [Gi1/0/5", "    switch_port: [Gi1/0/5")
    assert load_error(path) == (f"{path}:{line_of(text, 'switch_port:')}: links.path2.switch_port: unknown field "
                                "(typo?): did you mean `switch_ports`?")


def test_missing_field_points_at_its_parent_key(tmp_path):
    path, text = variant(tmp_path, VIRTUAL, "  b2:\n    role: endpoint\n", "  b2:\n")
    assert load_error(path) == f"{path}:{line_of(text, '  b2:')}: hosts.b2.role: required field missing"


def test_missing_link_port(tmp_path):
    lab = LAB.read_text()
    assert lab.count("    b_port: em1\n") == 2
    path = tmp_path / "inv.yaml"
    path.write_text(lab.replace("    b_port: em1\n", "", 1))
    text = path.read_text()
    assert load_error(path) == (f"{path}:{line_of(text, '  path1:')}: links.path1.b_port: "
                                "required field missing")


def test_bad_value_names_field_and_line(tmp_path):
    path, text = variant(tmp_path, LAB, "  bucket: ctl\n", "  bucket: ctl\n  org2: x\n")
    assert load_error(path).startswith(f"{path}:{line_of(text, 'org2:')}: influxdb.org2: unknown field")
    path, text = variant(tmp_path, LAB, "    mgmt: {address: 192.168.50.31}", "    mgmt: {address: 'not an address!'}",
                         name="inv2.yaml")
    msg = load_error(path)
    assert msg.startswith(f"{path}:{line_of(text, 'not an address')}: hosts.dn1.mgmt.address: ")
    assert "neither an IP address nor a host name" in msg


def test_bad_capacity_rate(tmp_path):
    lab = LAB.read_text()
    path = tmp_path / "inv.yaml"
    path.write_text(lab.replace("    capacity: 1G\n", "    capacity: -1G\n", 1))
    text = path.read_text()
    assert load_error(path) == (f"{path}:{line_of(text, 'capacity: -1G')}: links.path1.capacity: "
                                "'-1G' must be a positive rate")


def test_yaml_syntax_error_has_a_line(tmp_path):
    path, text = variant(tmp_path, VIRTUAL, "  org: ctl\n", "  org: [ctl\n")
    msg = load_error(path)
    assert msg.startswith(f"{path}:")
    assert "YAML error" in msg


@pytest.mark.parametrize("content, expected", [
    ("", "empty file"),
    ("- a\n- b\n", ":1: the inventory must be a mapping"),
])
def test_not_an_inventory(tmp_path, content, expected):
    path = tmp_path / "x.yaml"
    path.write_text(content)
    assert expected in load_error(path)


def test_missing_file(tmp_path):
    msg = load_error(tmp_path / "nope.yaml")
    assert msg.startswith(f"{tmp_path / 'nope.yaml'}: cannot read")


# ---- duplicate keys -----------------------------------------------------------------------


def test_duplicate_key(tmp_path):
    path, text = variant(tmp_path, VIRTUAL, "  bucket: ctl\n", "  bucket: ctl\n  bucket: other\n")
    assert load_error(path) == f"{path}:{line_of(text, 'bucket:', 2)}: duplicate key 'bucket'"


def test_duplicate_host(tmp_path):
    path, text = variant(tmp_path, VIRTUAL, "  sw1:\n",
                         "  a1:\n    role: endpoint\n    mgmt: {address: 10.250.0.99}\n  sw1:\n")
    assert load_error(path) == f"{path}:{line_of(text, '  a1:', 2)}: duplicate key 'a1'"


# ---- cross checks ---------------------------------------------------------------------------


def test_link_naming_a_non_bridge_host(tmp_path):
    path, _ = variant(tmp_path, VIRTUAL, "    bridge: br1\n", "    bridge: a1\n")
    assert "link path1: host 'a1' is not a bridge" in load_error(path)


def test_link_naming_an_unknown_host(tmp_path):
    path, _ = variant(tmp_path, VIRTUAL, "    bridge: br1\n", "    bridge: brx\n")
    assert "link path1: bridge 'brx' is not a host" in load_error(path)


def test_link_port_not_on_bridge(tmp_path):
    lab = LAB.read_text()
    path = tmp_path / "inv.yaml"
    path.write_text(lab.replace("    a_port: em0\n", "    a_port: em7\n", 1))
    assert "link path1: bridge dn1 has no interface 'em7'" in load_error(path)


def test_dummynet_link_without_pipes(tmp_path):
    path, _ = variant(tmp_path, LAB, "    forward: {pipe: 10101}\n    reverse: {pipe: 10102}\n", "")
    assert "link path1: a dummynet link needs forward.pipe" in load_error(path)


def test_dummynet_link_one_pipe_for_both_directions(tmp_path):
    path, _ = variant(tmp_path, LAB, "    reverse: {pipe: 10102}\n", "    reverse: {pipe: 10101}\n")
    assert "link path1: one pipe per direction (forward and reverse share pipe 10101)" in load_error(path)


def test_pipe_used_twice_on_one_bridge(tmp_path):
    # dn1 gets two more ports so that path2 can cross it too: only the pipe number collides.
    path, text = variant(tmp_path, LAB, "    bridge: dn2\n    a_port: em0\n    b_port: em1\n    forward: {pipe: 10201}",
                         "    bridge: dn1\n    a_port: em2\n    b_port: em3\n    forward: {pipe: 10101}")
    old = "      - {name: em0}\n      - {name: em1}\n"
    i = text.index(old, text.index("  dn1:"))
    path.write_text(text[:i] + old + "      - {name: em2}\n      - {name: em3}\n" + text[i + len(old):])
    assert "link path2: pipe 10101 on dn1 is already used by path1.forward" in load_error(path)


def test_two_links_on_one_bridge_port(tmp_path):
    path, _ = variant(tmp_path, LAB, "    bridge: dn2\n    a_port: em0\n    b_port: em1\n    forward: {pipe: 10201}",
                      "    bridge: dn1\n    a_port: em0\n    b_port: em1\n    forward: {pipe: 10201}")
    assert "link path2: port em0 of bridge dn1 is already a port of link path1" in load_error(path)


def test_a_link_from_a_port_to_itself(tmp_path):
    path, _ = variant(tmp_path, LAB, "    bridge: dn2\n    a_port: em0\n    b_port: em1\n",
                      "    bridge: dn2\n    a_port: em0\n    b_port: em0\n")
    assert "link path2: a_port and b_port are both 'em0'" in load_error(path)


def test_same_pipe_number_on_two_bridges_is_fine(tmp_path):
    path, _ = variant(tmp_path, LAB, "    forward: {pipe: 10201}\n    reverse: {pipe: 10202}\n",
                      "    forward: {pipe: 10101}\n    reverse: {pipe: 10102}\n")
    inv = load_inventory(path)
    assert inv.links["path2"].forward.pipe == inv.links["path1"].forward.pipe == 10101


def test_interface_on_unknown_link(tmp_path):
    old = "{name: p2, address: 10.2.0.22/24, link: path2, side: b}"
    path, _ = variant(tmp_path, VIRTUAL, old, old.replace("path2", "path9"))
    assert "host b2: interface p2 names unknown link 'path9'" in load_error(path)


def test_interface_link_without_side(tmp_path):
    old = "{name: p2, address: 10.2.0.22/24, link: path2, side: b}"
    path, text = variant(tmp_path, VIRTUAL, old, "{name: p2, address: 10.2.0.22/24, link: path2}")
    msg = load_error(path)
    assert "needs both `link` and `side`" in msg
    assert msg.startswith(f"{path}:{line_of(text, 'link: path2}')}: hosts.b2.interfaces[1]")


def test_bridge_without_shaper(tmp_path):
    text = VIRTUAL.read_text()
    br2 = text.index("  br2:")
    shaper_line = next(l for l in text[br2:].splitlines(keepends=True) if l.startswith("    shaper:"))
    out = tmp_path / "inv.yaml"
    out.write_text(text[:br2] + text[br2:].replace(shaper_line, "", 1))
    assert "a bridge needs a `shaper`" in load_error(out)


def test_dummynet_shaper_needs_freebsd(tmp_path):
    path, _ = variant(tmp_path, LAB, "    os: freebsd\n    mgmt: {address: 192.168.50.32}",
                      "    os: linux\n    mgmt: {address: 192.168.50.32}")
    assert "a dummynet shaper runs on os: freebsd" in load_error(path)


def test_undefined_variable_in_path(tmp_path):
    old = '{env: CTL_INFLUX_TOKEN, file: "${CTL_STATE_DIR}/influxdb/virtual/token"}'
    path, text = variant(tmp_path, VIRTUAL, old, old.replace("CTL_STATE_DIR", "CTL_NO_SUCH_VARIABLE_XYZ"))
    msg = load_error(path)
    assert msg.startswith(f"{path}:{line_of(text, 'CTL_NO_SUCH_VARIABLE_XYZ')}: influxdb.token.file: ")
    assert "only ${CTL_STATE_DIR}, ${HOME} and ~ are expanded in paths" in msg


def test_a_secret_variable_in_a_path_is_refused_and_never_shown(tmp_path, monkeypatch):
    monkeypatch.setenv("CTL_INFLUX_TOKEN", "s3cr3t-token-value")
    old = '{env: CTL_INFLUX_TOKEN, file: "${CTL_STATE_DIR}/influxdb/virtual/token"}'
    path, _ = variant(tmp_path, VIRTUAL, old, old.replace("${CTL_STATE_DIR}", "/x/${CTL_INFLUX_TOKEN}"))
    msg = load_error(path)
    assert "'${CTL_INFLUX_TOKEN}': only ${CTL_STATE_DIR}" in msg and "s3cr3t" not in msg


def test_credentials_in_the_influxdb_url_are_refused(tmp_path):
    old = "url: http://"
    text = VIRTUAL.read_text()
    assert text.count(old) == 1
    path = tmp_path / "inv.yaml"
    path.write_text(text.replace(old, "url: http://ctl:hunter2@"))
    msg = load_error(path)
    assert "influxdb.url: credentials in the URL (user:password@) are not allowed" in msg and "hunter2" not in msg


def test_virtual_inventory_needs_ctl_state_dir(monkeypatch):
    monkeypatch.delenv("CTL_STATE_DIR")
    assert "influxdb.token.file: ${CTL_STATE_DIR} is not set" in load_error(VIRTUAL)


def test_state_dir_expansion_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("CTL_STATE_DIR", str(tmp_path / "other"))
    assert load_inventory(VIRTUAL).influxdb.token.file == tmp_path / "other" / "influxdb" / "virtual" / "token"


def test_host_without_ssh_credentials(tmp_path):
    path, _ = variant(tmp_path, VIRTUAL, "  key_file: /run/ctl/ctlv/id_ed25519\n", "")
    assert "no SSH known_hosts, or no key_file, agent or config_file" in load_error(path)


# ---- secrets --------------------------------------------------------------------------------


def test_secret_env_first_then_file(tmp_path, monkeypatch):
    f = tmp_path / "token"
    f.write_text("from-file\nsecond line\n")
    ref = SecretRef(env="CTL_TEST_SECRET_X", file=f)
    monkeypatch.setenv("CTL_TEST_SECRET_X", "from-env")
    assert ref.resolve("influxdb token") == "from-env"
    monkeypatch.delenv("CTL_TEST_SECRET_X")
    assert ref.resolve("influxdb token") == "from-file"
    monkeypatch.setenv("CTL_TEST_SECRET_X", "")          # empty variable: treated as unset
    assert ref.resolve("influxdb token") == "from-file"


def test_secret_env_only(monkeypatch):
    monkeypatch.setenv("CTL_TEST_SECRET_X", "v")
    assert SecretRef(env="CTL_TEST_SECRET_X").resolve("t") == "v"
    monkeypatch.delenv("CTL_TEST_SECRET_X")
    with pytest.raises(ParameterError, match=r"t: secret not available \(set \$CTL_TEST_SECRET_X\)"):
        SecretRef(env="CTL_TEST_SECRET_X").resolve("t")


def test_secret_missing_everywhere_names_env_and_file(tmp_path, monkeypatch):
    monkeypatch.delenv("CTL_TEST_SECRET_X", raising=False)
    f = tmp_path / "no" / "token"
    with pytest.raises(ParameterError) as ei:
        SecretRef(env="CTL_TEST_SECRET_X", file=f).resolve("influxdb token")
    msg = str(ei.value)
    assert msg.startswith("influxdb token: ")
    assert "$CTL_TEST_SECRET_X" in msg
    assert str(f) in msg


def test_secret_empty_file_names_env_and_file(tmp_path, monkeypatch):
    monkeypatch.delenv("CTL_TEST_SECRET_X", raising=False)
    f = tmp_path / "token"
    f.write_text("")
    with pytest.raises(ParameterError) as ei:
        SecretRef(env="CTL_TEST_SECRET_X", file=f).resolve("influxdb token")
    assert "$CTL_TEST_SECRET_X" in str(ei.value) and str(f) in str(ei.value)


def test_secret_ref_needs_a_reference():
    with pytest.raises(ValueError, match="secrets are references"):
        SecretRef()


def test_snapshot_holds_references_not_values(tmp_path, monkeypatch):
    token = "s3cr3t-token-value-4711"
    monkeypatch.setenv("CTL_INFLUX_TOKEN", token)
    monkeypatch.setenv("CTL_SNMP_AUTH", "auth-key-value-0815")
    monkeypatch.setenv("CTL_SNMP_PRIV", "priv-key-value-0816")
    for src in (VIRTUAL, LAB):
        inv = load_inventory(src)
        assert inv.influxdb.token.resolve("t") == token
        snap = inv.snapshot()
        text = json.dumps(snap)
        for value in (token, "auth-key-value-0815", "priv-key-value-0816"):
            assert value not in text
        assert snap["influxdb"]["token"]["env"] == "CTL_INFLUX_TOKEN"
    lab = load_inventory(LAB).snapshot()
    assert lab["hosts"]["dn1"]["snmp"]["auth_key"] == {"env": "CTL_SNMP_AUTH", "file": None}


# ---- queries ------------------------------------------------------------------------------


def test_ssh_for_merges_host_over_defaults(tmp_path):
    path, _ = variant(tmp_path, LAB, "    mgmt: {address: 192.168.50.12}\n",
                      "    mgmt: {address: 192.168.50.12}\n    ssh: {user: admin, port: 2222}\n")
    inv = load_inventory(path)
    a2, a1 = inv.ssh_for("a2"), inv.ssh_for("a1")
    assert (a2.user, a2.port) == ("admin", 2222)
    assert a2.key_file == a1.key_file == Path("~/.ssh/ctl_lab_ed25519").expanduser()
    assert a2.known_hosts == a1.known_hosts
    assert a2.connect_timeout == 10 and a2.command_timeout == 60
    assert (a1.user, a1.port) == ("ctl", 22)


def test_ssh_for_host_supplies_missing_key(tmp_path):
    # No key_file in the defaults: each host that is reached over SSH names its own.
    text = VIRTUAL.read_text().replace("  key_file: /run/ctl/ctlv/id_ed25519\n", "")
    hosts = yaml.safe_load(text)["hosts"]
    for h, spec in hosts.items():
        if spec["role"] != "switch":
            assert text.count(f"\n  {h}:\n") == 1
            text = text.replace(f"\n  {h}:\n", f"\n  {h}:\n    ssh: {{key_file: /k/{h}}}\n")
    path = tmp_path / "inv.yaml"
    path.write_text(text)
    inv = load_inventory(path)
    assert inv.ssh_for("b2").key_file == Path("/k/b2")
    assert inv.ssh_for("b2").user == "root"
    assert inv.ssh_for("b2").known_hosts == Path("/run/ctl/ctlv/known_hosts")
    assert inv.ssh_for("sw1") is None   # a switch is not reached over SSH


@pytest.mark.parametrize("address, link", [
    ("10.1.0.11", "path1"),
    ("10.2.0.21", "path2"),
    ("10.1.0.22%p1", "path1"),           # ss prints interface-bound addresses with %dev
    ("::ffff:10.2.0.11", "path2"),       # IPv4-mapped IPv6 (a server listening on ::)
    ("::ffff:10.1.0.12", "path1"),
    ("10.250.0.11", None),               # management address: on no link
    ("10.1.0.99", None),
    ("not-an-address", None),
    ("", None),
])
def test_link_of_address(address, link):
    assert load_inventory(VIRTUAL).link_of_address(address) == link
