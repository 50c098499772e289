"""controller.lab.rack.plan_lab: the pure plan of the virtual rack (no root, nothing run).

Contract (module and README): one network namespace per host named `<prefix>-<host>`; a
management bridge with one veth per host; per link and side an L2 segment in the switch
host; offloads off on every data veth; one sshd per SSH host with a strict config; every
command an argv tuple (never a shell string; the only `sh -c` is the constant boot script,
with data in "$@").
"""
from __future__ import annotations

import ipaddress
import re
from collections import defaultdict
from pathlib import Path

import pytest

from controller.lab.plan import _SSHD_BOOT
from controller.errors import LabError
from controller.inventory import Role, load_inventory
from controller.lab.plan import plan_lab
from tests.support.shipped import LAB, VIRTUAL



pytestmark = pytest.mark.usefixtures("tmp_state_dir")


@pytest.fixture
def inv():
    return load_inventory(VIRTUAL)


@pytest.fixture
def plan(inv):
    return plan_lab(inv)


def variant(tmp_path: Path, replacements: list[tuple[str, str]]):
    text = VIRTUAL.read_text()
    for old, new in replacements:
        assert old in text, old
        text = text.replace(old, new)
    p = tmp_path / "v.yaml"
    p.write_text(text)
    return load_inventory(p)


def all_argvs(plan) -> list[tuple[str, ...]]:
    return list(plan.commands) + [d.argv for d in plan.daemons]


def netns_of(argv: tuple[str, ...]) -> str | None:
    """The namespace an `ip` command acts in (None: the root namespace)."""
    if argv[:2] == ("ip", "-n"):
        return argv[2]
    if argv[:3] == ("ip", "netns", "exec"):
        return argv[3]
    return None


def created_links(plan) -> dict[str | None, list[str]]:
    """Per namespace, every interface name an `ip link add` creates there (veth peers included)."""
    out: dict[str | None, list[str]] = defaultdict(list)
    for argv in plan.commands:
        ns = netns_of(argv)
        rest = argv[3:] if argv[:2] == ("ip", "-n") else argv[1:]
        if rest[:2] != ("link", "add"):
            continue
        out[ns].append(rest[2])
        if "peer" in rest:
            i = rest.index("peer")
            assert rest[i + 1] == "name"
            peer_ns = rest[rest.index("netns", i) + 1] if "netns" in rest[i:] else ns
            out[peer_ns].append(rest[i + 2])
    return out


# ---- namespaces and names -----------------------------------------------------------------


def test_one_namespace_per_host(plan, inv):
    assert {"a1", "a2", "b1", "b2", "br1", "br2", "sw1"} <= set(inv.hosts)
    assert plan.namespaces == [f"ctlv-{h}" for h in sorted(inv.hosts)]
    adds = [c[3] for c in plan.commands if c[:3] == ("ip", "netns", "add")]
    assert adds == plan.namespaces
    for ns in plan.namespaces:
        assert ("ip", "-n", ns, "link", "set", "lo", "up") in plan.commands


def test_namespaces_created_before_use(plan):
    first_use = {}
    for i, argv in enumerate(plan.commands):
        ns = netns_of(argv)
        if ns is not None:
            first_use.setdefault(ns, i)
    created = {c[3]: i for i, c in enumerate(plan.commands) if c[:3] == ("ip", "netns", "add")}
    for ns, i in first_use.items():
        assert created[ns] < i, ns


def test_every_interface_name_fits_ifnamsiz(plan):
    links = created_links(plan)
    names = [n for ns_names in links.values() for n in ns_names] + plan.root_links
    assert names
    for n in names:
        assert 1 <= len(n) <= 15, n
        assert re.match(r"^[A-Za-z0-9_.:-]+$", n), n


def test_interface_names_unique_per_namespace(plan):
    for ns, names in created_links(plan).items():
        assert len(names) == len(set(names)), (ns, sorted(names))


def test_root_namespace_links_are_recorded_for_teardown(plan):
    links = created_links(plan)
    # Only the root-namespace end of each management veth and the bridge live in the root ns.
    assert sorted(links[None]) == sorted(plan.root_links)
    assert plan.root_links[0] == "ctlv-mgmt"


def test_long_prefix_and_many_hosts_keep_names_short(tmp_path):
    extra = "".join(f"  e{i}:\n    role: endpoint\n    mgmt: {{address: 10.250.0.{100 + i}}}\n"
                    f"    interfaces:\n      - {{name: eth-data-{i:02d}, address: 10.1.0.{100 + i}/24, "
                    "link: path1, side: a}\n"
                    for i in range(12))
    inv = variant(tmp_path, [("netns_prefix: ctlv", "netns_prefix: abcdef"), ("  sw1:\n", extra + "  sw1:\n")])
    plan = plan_lab(inv)
    for ns, names in created_links(plan).items():
        assert len(names) == len(set(names)), ns
        assert all(len(n) <= 15 for n in names), names
    assert all(len(n) <= 15 for n in plan.root_links)
    assert all(ns.startswith("abcdef-") for ns in plan.namespaces)


def assert_unique_or_refused(inv) -> None:
    """Either the plan refuses the inventory (LabError), or the names it creates stay unique."""
    try:
        plan = plan_lab(inv)
    except LabError:
        return
    links = created_links(plan)
    for ns, names in links.items():
        assert len(names) == len(set(names)), (ns, sorted(names))


def test_data_interface_named_like_the_mgmt_veth(tmp_path):
    inv = variant(tmp_path, [("{name: p1, address: 10.1.0.11/24", "{name: mgmt0, address: 10.1.0.11/24")])
    assert_unique_or_refused(inv)


def test_tc_bridge_port_named_like_the_linux_bridge(tmp_path):
    text = VIRTUAL.read_text()
    assert text.count("      - {name: pa}") == 2
    text = text.replace("      - {name: pa}", "      - {name: br0}", 1)
    text = text.replace("    a_port: pa\n", "    a_port: br0\n", 1)
    p = tmp_path / "v.yaml"
    p.write_text(text)
    assert_unique_or_refused(load_inventory(p))


# ---- management network -------------------------------------------------------------------


def test_management_addresses_inside_the_mgmt_subnet(plan, inv):
    net = ipaddress.ip_interface(inv.virtual.mgmt_address).network
    adds = [c for c in plan.commands if c[3:5] == ("addr", "add") and c[-1] == "mgmt0"]
    assert len(adds) == len(inv.hosts)
    for c in adds:
        iface = ipaddress.ip_interface(c[5])
        assert iface.network == net
        host = c[2].removeprefix("ctlv-")
        assert str(iface.ip) == inv.hosts[host].mgmt.address
    assert ("ip", "addr", "add", "10.250.0.1/24", "dev", "ctlv-mgmt") in plan.commands


def test_ssh_hosts_are_all_but_the_switch(plan, inv):
    assert plan.ssh_hosts == {h: host.mgmt.address for h, host in inv.hosts.items() if host.role is not Role.SWITCH}
    assert {"a1": "10.250.0.11", "b2": "10.250.0.22", "br1": "10.250.0.31"}.items() <= plan.ssh_hosts.items()
    assert "sw1" not in plan.ssh_hosts


def test_mgmt_address_outside_the_subnet_is_an_error(tmp_path):
    inv = variant(tmp_path, [("mgmt: {address: 10.250.0.22}", "mgmt: {address: 10.250.1.22}")])
    with pytest.raises(LabError, match=r"host b2: management address 10\.250\.1\.22 is outside 10\.250\.0\.0/24"):
        plan_lab(inv)


def test_physical_inventory_is_refused():
    with pytest.raises(LabError, match="not a virtual rack"):
        plan_lab(load_inventory(LAB))


def test_link_without_switch_is_an_error(tmp_path):
    text = VIRTUAL.read_text()
    p = tmp_path / "v.yaml"
    p.write_text(text.replace("    capacity: 1G\n    switch: sw1\n", "    capacity: 1G\n", 1))
    with pytest.raises(LabError, match=r"link path1: a virtual link needs `switch`"):
        plan_lab(load_inventory(p))


# ---- data paths -----------------------------------------------------------------------------


def test_segments_and_bridge_ports(plan):
    sw = "ctlv-sw1"
    segs = [c[5] for c in plan.commands if c[:5] == ("ip", "-n", sw, "link", "add") and c[6:8] == ("type", "bridge")]
    assert sorted(segs) == ["seg0a", "seg0b", "seg1a", "seg1b"]
    # each endpoint's data interface is a veth whose peer sits in the switch, in its side's segment
    peers = {}
    for c in plan.commands:
        if c[3:5] == ("link", "add") and "veth" in c and c[2] != sw and c[5] != "mgmt0" and "peer" in c:
            peers[(c[2], c[5])] = c[c.index("name") + 1]
            assert c[-2:] == ("netns", sw) or c[-2:] == ("netns", "ctlv-sw2")   # sw2: the other topologies
    master = {c[5]: c[7] for c in plan.commands if c[:5] == ("ip", "-n", sw, "link", "set") and "master" in c}
    assert master[peers[("ctlv-a1", "p1")]] == "seg0a"
    assert master[peers[("ctlv-b2", "p1")]] == "seg0b"
    assert master[peers[("ctlv-br1", "pa")]] == "seg0a"     # a_port faces the a side
    assert master[peers[("ctlv-br1", "pb")]] == "seg0b"
    assert master[peers[("ctlv-br2", "pa")]] == "seg1a"
    assert master[peers[("ctlv-a2", "p2")]] == "seg1a"
    # dnpipe bridges: no kernel bridge; one forwarder per link between the two ports
    for ns in ("ctlv-br1", "ctlv-br2"):
        assert not any(c[:3] == ("ip", "-n", ns) and "master" in c for c in plan.commands)
    fwd = {d.host: d.argv for d in plan.daemons if d.name.startswith("dnpipe-")}
    assert fwd["br1"][:4] == ("ip", "netns", "exec", "ctlv-br1") and fwd["br1"][4].endswith("/bin/dnpipe")
    assert {"br1", "br2"} <= set(fwd)
    assert fwd["br1"][5:] == ("run", "--a", "pa", "--b", "pb", "--control", "/run/ctl/ctlv/dnpipe/path1.sock",
                              "--pidfile", "/run/ctl/ctlv/dnpipe/path1.pid")
    assert ("ip", "-n", "ctlv-a1", "addr", "add", "10.2.0.11/24", "dev", "p2") in plan.commands


def test_offloads_off_on_every_data_veth(plan, inv):
    data = set()   # both ends of every veth created inside a namespace (the management veths are not data)
    for c in plan.commands:
        if c[:2] == ("ip", "-n") and c[3:5] == ("link", "add") and c[6:8] == ("type", "veth"):
            data |= {(c[2], c[5]), (c[c.index("netns") + 1], c[c.index("name") + 1])}
    # every interface on a link, and the two ports of each link's bridge, with its switch-side peer
    # (and every interface on a named segment)
    on_links = sum(1 for h in inv.hosts.values() for i in h.interfaces if i.link or i.segment) + 2 * len(inv.links)
    assert len(data) == 2 * on_links
    assert {("ctlv-a1", "p1"), ("ctlv-b2", "p2"), ("ctlv-br1", "pa"), ("ctlv-br2", "pb")} <= data
    offloaded = {(c[3], c[6]) for c in plan.commands if c[4:6] == ("ethtool", "-K")}
    assert offloaded == data
    for c in plan.commands:
        if c[4:6] == ("ethtool", "-K"):
            assert c[7:] == ("tx", "off", "tso", "off", "gso", "off", "gro", "off")


def test_endpoints_get_mptcp_enabled(plan, inv):
    for h in inv.by_role(Role.ENDPOINT):
        assert ("ip", "netns", "exec", f"ctlv-{h}", "sysctl", "-q", "-w", "net.mptcp.enabled=1",
                "net.ipv4.conf.all.arp_ignore=1", "net.ipv4.conf.all.arp_announce=2") in plan.commands
    assert not any("net.mptcp.enabled=1" in c and c[3] in ("ctlv-br1", "ctlv-sw1") for c in plan.commands)


# ---- sshd ---------------------------------------------------------------------------------


def test_sshd_config_content(plan, inv):
    rt = inv.virtual.runtime_dir
    nat = {str(rt / "hosts" / h / "nat.nft") for h, host in inv.hosts.items() if host.nat is not None}
    bus = {str(rt / "hosts" / "m1" / "mm" / "system-bus.conf")}          # the modem host's own system bus
    assert set(plan.files) == {str(rt / "hosts" / h / "sshd_config") for h in plan.ssh_hosts} | \
        {str(rt / "shellrc")} | nat | bus
    for host, addr in plan.ssh_hosts.items():
        cfg = plan.files[str(rt / "hosts" / host / "sshd_config")]
        lines = cfg.splitlines()
        assert f"ListenAddress {addr}" in lines
        assert f"AuthorizedKeysFile {rt / 'authorized_keys'}" in lines
        assert str(rt / "authorized_keys").startswith(str(rt) + "/")
        for want in ("PasswordAuthentication no", "UsePAM no", "StrictModes yes", "PubkeyAuthentication yes",
                     "KbdInteractiveAuthentication no", "Port 22"):
            assert want in lines, (host, want)
        max_sessions = [l for l in lines if l.startswith("MaxSessions ")]
        assert len(max_sessions) == 1 and int(max_sessions[0].split()[1]) >= 10
        assert f"HostKey {rt / 'hosts' / host / 'ssh_host_ed25519_key'}" in lines
        assert not any(l.startswith("ListenAddress") and l != f"ListenAddress {addr}" for l in lines)


def test_one_sshd_daemon_per_ssh_host(plan, inv):
    sshd = [d for d in plan.daemons if d.name == "sshd"]
    assert sorted(d.host for d in sshd) == sorted(plan.ssh_hosts)
    for d in sshd:
        assert d.argv[:4] == ("ip", "netns", "exec", f"ctlv-{d.host}")
        assert d.argv[-5:] == ("/usr/sbin/sshd", "-D", "-e", "-f",
                               str(inv.virtual.runtime_dir / "hosts" / d.host / "sshd_config"))


# ---- no shell strings ------------------------------------------------------------------------

_SHELL_META = re.compile(r"[\s;&|<>`$()*?\\'\"]")


def test_commands_are_argv_tuples_without_shell_strings(plan):
    for argv in all_argvs(plan):
        assert isinstance(argv, tuple) and argv, argv
        assert all(isinstance(a, str) and a for a in argv), argv
        if "-c" in argv and argv[argv.index("-c") - 1] in ("sh", "bash", "/bin/sh"):
            i = argv.index("-c")
            assert argv[i + 1] == _SSHD_BOOT        # the constant script, nothing formatted in
            data = argv[i + 2:]
            for a in data:
                assert not _SHELL_META.search(a), (a, argv)
            continue
        for a in argv:
            assert not _SHELL_META.search(a), (a, argv)


def test_boot_script_takes_data_only_from_positional_parameters(plan, inv):
    script = _SSHD_BOOT
    # no host name, address or path is formatted into the script
    for h, addr in plan.ssh_hosts.items():
        assert not re.search(rf"\b{h}\b", script)
        assert addr not in script
    assert str(inv.virtual.runtime_dir) not in script
    assert '"$1"' in script and '"$2"' in script and 'exec "$@"' in script
    for d in plan.daemons:
        if d.name != "sshd":
            continue
        i = d.argv.index("-c")
        # $0 = a label, $1 = the clean shell rc, $2 = the host name, then the command to exec
        assert d.argv[i + 2] == "ctl-sshd"
        assert d.argv[i + 3] == str(inv.virtual.runtime_dir / "shellrc")
        assert d.argv[i + 4] == d.host
        assert d.argv[i + 5] == "/usr/sbin/sshd"


def test_plan_is_pure_and_repeatable(inv, tmp_path):
    before = sorted(p.name for p in tmp_path.iterdir())
    p1, p2 = plan_lab(inv), plan_lab(inv)
    assert p1 == p2
    assert sorted(p.name for p in tmp_path.iterdir()) == before
