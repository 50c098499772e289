"""The `ctl inventory check --probe` table: a bridge's row shows what its JSON (`facts.shaper`) holds,
for every shaper kind (issue 26).

Contract (controller/rack/probe.py `shaper_summary`, `render`): the row of a dummynet bridge names
its release, tool, listing format, the net.inet.ip.dummynet.* limits (with units) and kern.hz; a
dnpipe bridge's row each link's forwarder (pid, ports, uptime); a tc bridge's row the links read
back and the ports whose qdiscs ctl would not overwrite; a dummynet host warning is printed under
the host. Rendering is pure: the probe results here come from each shaper's own parse of real or
simulated output -- dnpipe's captured `show` documents (tests/fixtures/generated/dnpipe), tc's
captured `tc -j -s qdisc show` (tests/fixtures/generated/tc), and for dummynet the simulated
FreeBSD host tests/support/ipfw_fake.py (a test double: there is no FreeBSD bridge here).
"""
from __future__ import annotations

import asyncio
import json

import pytest
import yaml

from bridges.base import shaper_class
from controller.commands import CommandResult
from controller.inventory import load_inventory
from controller.rack.probe import HostProbe, ProbeReport, _run, render, shaper_checks, shaper_summary
from tests.support.ipfw_fake import FakeDummynetHost
from tests.support.shipped import FIXTURES, VIRTUAL, no_state_dir


def _row(report: ProbeReport, host: str) -> str:
    return next(line for line in render(report) if line.split()[:1] == [host])


def _report(p: HostProbe) -> ProbeReport:
    return ProbeReport("t", {p.host: p}, [], 0.1)


def test_a_dummynet_bridge_row_has_release_tool_listing_limits_and_hz(invs):
    inv = invs["lab-rack"]
    fake = FakeDummynetHost("dn1", "14.1-RELEASE", sysctls={"net.inet.ip.dummynet.pipe_slot_limit": "1000",
                                                            "kern.hz": "100"})
    results = asyncio.run(_run(fake, shaper_class("dummynet")(inv, "dn1").read_commands()))
    p = HostProbe("dn1", "bridge", "192.168.50.31", reached=True, access={"user": "root", "sudo": False})
    shaper_checks(p, inv, results)
    s = p.facts["shaper"]
    row = _row(_report(p), "dn1")
    what = row.split("  ")[-1]
    assert what == (f"dummynet 14.1-RELEASE: shapes path1; dnctl, modern listing, "
                    f"pipe_byte_limit {s['limits']['net.inet.ip.dummynet.pipe_byte_limit']} bytes, "
                    f"pipe_slot_limit 1000 slots, kern.hz 100 Hz"), row
    assert "?" not in what
    # kern.hz 100 is a warning the JSON carries: printed under the host
    lines = render(_report(p))
    assert s["warnings"] and all(f"      dn1: note: {w}" in lines for w in s["warnings"])
    assert any("kern.hz=100" in w for w in s["warnings"])


def test_a_dnpipe_bridge_row_has_each_forwarder(invs):
    inv = invs["virtual"]
    shaper = shaper_class("dnpipe")(inv, "br3")
    shows = ["show_default.json", "show_mixed_after_traffic.json", "set_forward_queue_64KiB.json"]
    cmds = shaper.read_commands()
    assert len(cmds) == len(shows)
    results = [CommandResult("br3", c.argv, 0, (FIXTURES / "generated" / "dnpipe" / f).read_text(), "")
               for c, f in zip(cmds, shows)]
    p = HostProbe("br3", "bridge", "10.0.0.3", reached=True, access={"user": "root", "sudo": False})
    shaper_checks(p, inv, results)
    assert p.ok
    docs = [json.loads((FIXTURES / "generated" / "dnpipe" / f).read_text()) for f in shows]
    what = _row(_report(p), "br3").split("  ")[-1]
    assert what == "dnpipe: shapes sbd1, sbd2, sbn; " + "; ".join(
        f"{link}: forwarder pid {d['pid']} between {d['a']} and {d['b']}, up {d['uptime_s']:.1f} s"
        for link, d in zip(["sbd1", "sbd2", "sbn"], docs)), what
    assert "?" not in what


@pytest.fixture
def tc_inventory(tmp_path):
    """virtual.yaml with br1 shaped by tc (as its comment says a user may set)."""
    text = VIRTUAL.read_text()
    data = yaml.safe_load(text)
    data["hosts"]["br1"]["shaper"] = {"kind": "tc"}
    path = tmp_path / "tc.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with no_state_dir():
        return load_inventory(path)


@pytest.mark.parametrize("pa, pb, expect", [
    ("01_default.json", "02_tbf_pfifo.json", "tc: shapes path1; no foreign qdisc"),
    ("05_htb.json", "01_default.json", "tc: shapes path1; port pa: root htb 1: (ctl will not overwrite it)"),
])
def test_a_tc_bridge_row_has_its_links_and_the_ports_it_will_not_touch(tc_inventory, pa, pb, expect):
    shaper = shaper_class("tc")(tc_inventory, "br1")
    outs = {"pa": pa, "pb": pb}
    results = [CommandResult("br1", c.argv, 0, (FIXTURES / "generated" / "tc" / outs[c.argv[-1]]).read_text(), "")
               for c in shaper.read_commands()]
    p = HostProbe("br1", "bridge", "10.0.0.1", reached=True, access={"user": "root", "sudo": False})
    shaper_checks(p, tc_inventory, results)
    assert _row(_report(p), "br1").split("  ")[-1] == expect


def test_a_bridge_whose_state_could_not_be_read_says_so_under_it(invs):
    inv = invs["virtual"]
    cmds = shaper_class("dnpipe")(inv, "br1").read_commands()
    results = [CommandResult("br1", c.argv, 1, "", "connect: No such file or directory") for c in cmds]
    p = HostProbe("br1", "bridge", "10.0.0.1", reached=True, access={"user": "root", "sudo": False})
    shaper_checks(p, inv, results)
    lines = render(_report(p))
    assert _row(_report(p), "br1").split("  ")[-1] == "dnpipe: shapes path1"
    assert any(l.startswith("      br1: needs dnpipe: its state readable, has `") and "No such file" in l
               for l in lines), lines


def test_any_other_back_end_detail_is_shown_key_by_key():
    assert shaper_summary({"kind": "x", "links": ["l1"], "details": {"l1": {"queue": 3, "mode": "fast"}}}) == \
        "x: shapes l1; l1: mode fast, queue 3"
    assert shaper_summary({"kind": "dummynet", "links": []}) == "dummynet: no link to shape"
