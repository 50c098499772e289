"""Inventory topology beyond two paths: named L2 segments, gateways, routers with NAT, and
how the virtual rack builds them (controller.inventory, controller.lab.rack.plan_lab).

Contract: a link joins its a-segment to its b-segment (`<link>.a` / `<link>.b` unless it
names a segment); an interface attaches to a link side or to a named segment; segments
joined by links form a tree (a loop is refused at load, naming the link that closes it);
a `gateway` becomes the host's default route; a router's `nat` becomes an nftables ruleset
in its namespace (masquerade on `outside`, DNAT of the forwarded ports on the outside
address) with forwarding on.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from controller.errors import InventoryError, LabError
from controller.inventory import Role, load_inventory
from controller.lab.plan import plan_lab, render_nat_ruleset, segment_bridge_names
from tests.support.shipped import LAB, VIRTUAL, no_state_dir



pytestmark = pytest.mark.usefixtures("tmp_state_dir")


@pytest.fixture(scope="module")
def inv():
    with no_state_dir():
        yield load_inventory(VIRTUAL)


def variant(tmp_path: Path, source: Path, old: str, new: str) -> Path:
    text = source.read_text()
    assert text.count(old) == 1, old
    p = tmp_path / "inv.yaml"
    p.write_text(text.replace(old, new))
    return p


def load_error(path: Path) -> str:
    with pytest.raises(InventoryError) as ei:
        load_inventory(path)
    return str(ei.value)


# ---- the model ------------------------------------------------------------------------------


@pytest.mark.parametrize("source", [VIRTUAL, LAB])
def test_shipped_inventories_have_the_extra_topologies(source):
    inv = load_inventory(source)
    # shared bottleneck: two delay links meet on `sbm`, the bottleneck leaves it
    assert inv.link_segment("sbd1", "b") == inv.link_segment("sbd2", "b") == inv.link_segment("sbn", "a") == "sbm"
    assert inv.link_segment("sbd1", "a") == "sbd1.a" and inv.link_segment("sbn", "b") == "sbn.b"
    assert [h for h, _ in inv.interfaces_on_segment("sbn.b")] == ["sb1", "sb1", "sb2"]
    # BitTorrent: the router is both hosts' default gateway; the tracker is behind it
    assert inv.hosts["ns1"].gateway == "10.31.0.1" and inv.hosts["ns2"].gateway == "10.32.0.1"
    assert inv.hosts["gw1"].role is Role.ROUTER and inv.hosts["gw1"].nat.outside in {"out", "eth0"}
    assert {h for h, _ in inv.interfaces_on_segment("inet")} == {"gw1", "tr1"}
    # the MCubic distinct-bottleneck paths are what they were
    assert inv.hosts_on("path1", "a") == ["a1", "a2"] and inv.hosts_on("path2", "b") == ["b1", "b2"]
    assert inv.link_of_address("10.11.0.11") == "sbd1" and inv.link_of_address("10.12.0.11") == "sbd2"
    assert inv.link_of_address("10.30.0.100") is None          # on a named segment, not a link side


def test_all_segments_lists_link_sides_and_named_segments_once(inv):
    segs = inv.all_segments()
    assert len(segs) == len(set(segs))
    assert {"path1.a", "path1.b", "path2.a", "path2.b", "sbm", "inet"} <= set(segs)
    assert "sbd1.b" not in segs and "sbn.a" not in segs          # replaced by the named segment


def test_a_loop_of_segments_is_refused(tmp_path):
    # sbn's b side onto sbd1's a side: sbd1.a - sbm - sbn.b would close a loop through sbd1
    p = variant(tmp_path, VIRTUAL, "    a_segment: sbm\n", "    a_segment: sbm\n    b_segment: sbm\n")
    assert "link sbn: both sides are segment sbm" in load_error(p)
    text = VIRTUAL.read_text().replace("  lp2:\n    bridge: br4\n", "  lp2:\n    bridge: br4\n    b_segment: loopy\n")
    text = text.replace("  lp1:\n    bridge: br4\n", "  lp1:\n    bridge: br4\n    b_segment: loopy\n")
    text = text.replace("  inet: {switch: sw2}", "  inet: {switch: sw2}\n  loopy: {switch: sw2}")
    p.write_text(text.replace("    a_port: l2a\n", "    a_port: l2a\n    a_segment: loopy2\n").replace(
        "    a_port: l1a\n", "    a_port: l1a\n    a_segment: loopy2\n").replace(
        "  loopy: {switch: sw2}", "  loopy: {switch: sw2}\n  loopy2: {switch: sw2}"))
    msg = load_error(p)
    assert "link lp2: segments loopy2 and loopy are already joined by other links" in msg
    assert "must form a tree" in msg


def test_unknown_segment_names_are_errors(tmp_path):
    p = variant(tmp_path, VIRTUAL, "    b_segment: sbm\n    capacity: 1G\n    switch: sw2\n  sbd2:",
                "    b_segment: sbx\n    capacity: 1G\n    switch: sw2\n  sbd2:")
    assert "link sbd1: b_segment 'sbx' is not a named segment (segments: inet, sbm)" in load_error(p)
    p = variant(tmp_path, VIRTUAL, "{name: p1, address: 10.30.0.100/24, segment: inet}",
                "{name: p1, address: 10.30.0.100/24, segment: nowhere}")
    assert "host tr1: interface p1 names unknown segment 'nowhere'" in load_error(p)


def test_interface_on_a_link_and_a_segment_is_an_error(tmp_path):
    p = variant(tmp_path, VIRTUAL, "{name: p1, address: 10.11.0.12/24, link: sbd1, side: a}",
                "{name: p1, address: 10.11.0.12/24, link: sbd1, side: a, segment: sbm}")
    assert "attaches to a link side or to a `segment`, not both" in load_error(p)


@pytest.mark.parametrize("gateway, fragment", [
    ("10.99.0.1", "gateway 10.99.0.1 is not another address of 10.31.0.0/24"),
    ("10.31.0.11", "gateway 10.31.0.11 is not another address of 10.31.0.0/24"),   # itself
    ("router", "gateway 'router' is not an IP address"),
])
def test_gateway_must_be_another_address_of_the_subnet(tmp_path, gateway, fragment):
    p = variant(tmp_path, VIRTUAL, "gateway: 10.31.0.1}", f"gateway: {gateway}}}")
    assert fragment in load_error(p)


def test_nat_only_on_a_router_with_its_outside_interface(tmp_path):
    p = variant(tmp_path, VIRTUAL, "      outside: out\n", "      outside: eth9\n")
    assert "nat.outside: no addressed interface 'eth9' on this router" in load_error(p)
    p = variant(tmp_path, VIRTUAL, "  gw1:\n    role: router\n", "  gw1:\n    role: endpoint\n")
    assert "only a router has `nat`" in load_error(p)
    p = variant(tmp_path, VIRTUAL, 'ports: "6901-6919"', 'ports: "6919-6901"')
    assert "need 1 <= low <= high <= 65535" in load_error(p)
    p = variant(tmp_path, VIRTUAL, "to: 10.32.0.12}", "to: ns2}")
    assert "'ns2' is not an IPv4 address" in load_error(p)


def test_port_forward_covers(inv):
    fw = inv.hosts["gw1"].nat.forwards
    assert [f.port_range for f in fw] == [(5201, 5299), (6881, 6899), (6901, 6919)]
    assert fw[0].covers("tcp", 5201) and fw[0].covers("tcp", 5299)
    assert not fw[0].covers("udp", 5201) and not fw[0].covers("tcp", 5300)


# ---- the virtual rack's plan ------------------------------------------------------------------


def test_segments_are_bridges_in_their_switch(inv):
    plan = plan_lab(inv)
    names = segment_bridge_names(inv)
    # the distinct-bottleneck segments keep their names in sw1
    assert [names[s] for s in ("path1.a", "path1.b", "path2.a", "path2.b")] == ["seg0a", "seg0b", "seg1a", "seg1b"]
    assert names["sbm"].startswith("segn") and names["inet"].startswith("segn")
    made = {(c[2], c[5]) for c in plan.commands if c[:2] == ("ip", "-n") and c[3:5] == ("link", "add")
            and c[6:8] == ("type", "bridge")}
    for seg, br in names.items():
        assert (f"ctlv-{inv.segment_switch(seg)}", br) in made
    assert all(len(b) <= 15 for b in names.values())


def test_veths_join_the_right_segment(inv):
    plan = plan_lab(inv)
    names = segment_bridge_names(inv)
    peers = {}
    for c in plan.commands:
        if c[:2] == ("ip", "-n") and c[3:5] == ("link", "add") and "peer" in c and c[5] != "mgmt0":
            peers[(c[2].removeprefix("ctlv-"), c[5])] = (c[-1], c[c.index("name") + 1])
    master = {(c[2], c[5]): c[7] for c in plan.commands if c[:2] == ("ip", "-n") and c[3:5] == ("link", "set")
              and "master" in c}

    def seg_of(host: str, ifname: str) -> str:
        ns, peer = peers[(host, ifname)]
        return master[(ns, peer)]
    assert seg_of("br3", "d1b") == seg_of("br3", "d2b") == seg_of("br3", "na") == names["sbm"]
    assert seg_of("sa1", "p1") == seg_of("sa2", "p1") == seg_of("br3", "d1a") == names["sbd1.a"]
    assert seg_of("sb1", "p2") == seg_of("sb2", "p1") == seg_of("br3", "nb") == names["sbn.b"]
    assert seg_of("gw1", "out") == seg_of("tr1", "p1") == names["inet"]
    assert peers[("gw1", "out")][0] == "ctlv-sw2"


def test_gateways_become_default_routes_after_the_interface_is_up(inv):
    plan = plan_lab(inv)
    cmds = plan.commands
    route = ("ip", "-n", "ctlv-ns1", "route", "add", "default", "via", "10.31.0.1", "dev", "g")
    assert route in cmds
    assert cmds.index(("ip", "-n", "ctlv-ns1", "link", "set", "g", "up")) < cmds.index(route)
    defaults = [c for c in cmds if c[3:6] == ("route", "add", "default")]
    assert sorted(c[2] for c in defaults) == ["ctlv-ns1", "ctlv-ns2"]     # nobody else leaves its subnets


def test_router_forwards_and_loads_its_nat_ruleset(inv):
    plan = plan_lab(inv)
    path = str(inv.virtual.runtime_dir / "hosts" / "gw1" / "nat.nft")
    assert ("ip", "netns", "exec", "ctlv-gw1", "sysctl", "-q", "-w", "net.ipv4.ip_forward=1") in plan.commands
    load = ("ip", "netns", "exec", "ctlv-gw1", "nft", "-f", path)
    assert load in plan.commands
    # the ruleset file is written before any command runs; addresses are up before it loads
    assert plan.commands.index(("ip", "-n", "ctlv-gw1", "addr", "add", "10.30.0.1/24", "dev", "out")) < \
        plan.commands.index(load)
    assert plan.files[path] == render_nat_ruleset(inv, "gw1")
    assert not any(c[3] == "ctlv-ns1" and "ip_forward=1" in c for c in plan.commands if len(c) > 3)


def test_nat_ruleset_text(inv):
    text = render_nat_ruleset(inv, "gw1")
    lines = [l.strip() for l in text.splitlines()]
    assert "flush ruleset" in lines
    assert "ip daddr 10.30.0.1 tcp dport 5201-5299 dnat to 10.31.0.11" in lines
    assert "ip daddr 10.30.0.1 tcp dport 6901-6919 dnat to 10.32.0.12" in lines
    assert 'oifname "out" masquerade' in lines
    assert "type nat hook prerouting priority dstnat; policy accept;" in lines
    assert "type nat hook postrouting priority srcnat; policy accept;" in lines


def test_named_segment_without_switch_is_a_lab_error(tmp_path):
    p = variant(tmp_path, VIRTUAL, "  inet: {switch: sw2}", "  inet: {}")
    with pytest.raises(LabError, match=r"segment inet: a virtual segment needs `switch`"):
        plan_lab(load_inventory(p))


def test_segment_on_a_non_switch_is_an_inventory_error(tmp_path):
    p = variant(tmp_path, VIRTUAL, "  inet: {switch: sw2}", "  inet: {switch: br4}")
    assert "segment inet: switch 'br4' is not a switch host" in load_error(p)


def test_no_shell_in_the_new_commands(inv):
    meta = re.compile(r"[\s;&|<>`$()*?\\'\"]")
    for argv in plan_lab(inv).commands:
        if "route" in argv or "nft" in argv or "ip_forward=1" in argv:
            assert all(not meta.search(a) for a in argv), argv


def test_tc_bridge_host_gets_one_kernel_bridge_per_link(tmp_path):
    # br3 carries three links whose sides share segment sbm: one kernel bridge over all six
    # ports would loop sbm through it three times
    text = VIRTUAL.read_text()
    i = text.index("  br3:\n")
    j = text.index("    interfaces:\n", i)
    head = text[i:j]
    shaper = next(l for l in head.splitlines(keepends=True) if l.startswith("    shaper:"))
    p = tmp_path / "tc.yaml"
    p.write_text(text[:i] + head.replace(shaper, "    shaper: {kind: tc}\n") + text[j:])
    plan = plan_lab(load_inventory(p))
    ns = "ctlv-br3"
    made = [c[5] for c in plan.commands if c[:5] == ("ip", "-n", ns, "link", "add") and c[6:8] == ("type", "bridge")]
    assert made == ["br0", "br1", "br2"]
    master = {c[5]: c[7] for c in plan.commands if c[:5] == ("ip", "-n", ns, "link", "set") and "master" in c}
    # links sorted by name: sbd1, sbd2, sbn
    assert master == {"d1a": "br0", "d1b": "br0", "d2a": "br1", "d2b": "br1", "na": "br2", "nb": "br2"}
