"""`ctl link set | show | measure` on the virtual rack (dnpipe bridges), and the same scenario on
Linux tc bridges."""
from __future__ import annotations

import json
import subprocess

import pytest

from tests.unit.controller.cli.test_json_envelope import check

pytestmark = pytest.mark.integration


def test_set_show_measure_path2(rack):
    log = rack.state_dir / "link-changes.jsonl"
    earlier = len(log.read_text().splitlines()) if log.exists() else 0    # other tests' changes
    p = rack.ctl("link", "set", "path2", "--bw", "20M", "--delay", "50ms", "--json")
    assert p.returncode == 0, p.stderr
    try:
        after = check_json(p, "link set")["after"]
        assert after["path2.forward"]["delay_us"] == 50_000 and after["path2.reverse"]["bw_bps"] == 20_000_000
        show = check_json(rack.ctl("link", "show", "path2", "--json"), "link show")["path2"]
        assert show["kind"] == "dnpipe" and all(d["shaped"] for d in show["directions"].values())
        m = rack.ctl("link", "measure", "path2", "--json")
        assert m.returncode == 0, m.stderr
        r = check_json(m, "link measure")
        # RTT: the minimum is the pipe's own figure (averages pick up this shared machine's load).
        assert abs(r["rtt"]["min_ms"] - 100.0) <= 1.0, r["rtt"]
        # the warm-up took the neighbour resolution (one reply ~200 ms when ARP had expired)
        assert len(r["rtt"]["warmup_ms"]) == 2 and r["rtt"]["max_ms"] < 150, r["rtt"]
        assert r["rtt"]["configured_ms"] == 100.0
        assert r["throughput"]["wire_bps"] >= 19e6, r["throughput"]
        assert r["throughput"]["tcp_receiver_bps"] > 15e6
        assert r["loss"]["configured"] == 0 and r["loss"]["lost"] == 0 and r["loss"]["packets"] > 1000
        # only the given fields change; a single direction can be set
        p = rack.ctl("link", "set", "path2", "--plr", "1%", "--dir", "forward", "--json")
        after = json.loads(p.stdout)["data"]["after"]
        assert after["path2.forward"]["plr"] == 0.01 and after["path2.forward"]["delay_us"] == 50_000
        assert after["path2.reverse"]["plr"] == 0.0
        # a run restores to what the link was set to, not to unshaped
        run = rack.ctl("run", "distinct-bottleneck", "--link2", "10M", "--duration", "3", "--json")
        assert run.returncode in (0, 4), run.stderr
        show = json.loads(rack.ctl("link", "show", "path2", "--json").stdout)["data"]["path2"]["directions"]
        assert show["forward"]["config"]["plr"] == 0.01 and show["forward"]["config"]["bw_bps"] == 20_000_000
        changes = log.read_text().splitlines()[earlier:]
        assert len(changes) >= 2 and json.loads(changes[0])["before"]["path2.forward"] is None
    finally:
        p = rack.ctl("link", "set", "path2", "--bw", "0", "--delay", "0", "--plr", "0", "--queue", "50")
        assert p.returncode == 0, p.stderr
    show = json.loads(rack.ctl("link", "show", "--json").stdout)["data"]
    assert not any(d["shaped"] for l in show.values() for d in l["directions"].values())
    reset = check_json(rack.ctl("link", "reset", "path2", "--json"), "link reset")     # no baseline: unshaped
    assert [e["link"] for e in reset] == ["path2"] and not any(reset[0]["after"].values())


def test_red_with_ecn_through_ctl_is_read_back_marks_ect_traffic_and_is_removed(rack):
    """`ctl link set --red ... --ecn` on a dnpipe bridge (issue 24): applied, read back and shown;
    ECN-capable traffic through it is marked CE (the forwarder's `marked` counter, which
    `link show` prints), a later set keeps it, `--droptail` removes it."""
    try:
        p = rack.ctl("link", "set", "path2", "--bw", "20M", "--delay", "20ms", "--queue", "100",
                     "--red", "0.002/5/30/0.1", "--ecn", "--dir", "forward", "--json")
        after = check_json(p, "link set")["after"]
        assert after["path2.forward"]["red"] == {"w_q": 0.002, "min_th": 5, "max_th": 30, "max_p": 0.1,
                                                 "gentle": False, "ecn": True}, after["path2.forward"]
        assert (after["path2.reverse"] or {}).get("red") is None   # only the direction asked
        # ECN-capable bulk traffic (the sender asks for ECN) queues above min_th: marked, not dropped by RED
        # (the measuring client is a host on path2's a side; each sets its own namespace's sysctl)
        old = {h: subprocess.run(["ip", "netns", "exec", rack.ns(h), "sysctl", "-n", "net.ipv4.tcp_ecn"],
                                 capture_output=True, text=True, check=True).stdout.strip() for h in ("a1", "a2")}
        try:
            for h in old:
                subprocess.run(["ip", "netns", "exec", rack.ns(h), "sysctl", "-qw", "net.ipv4.tcp_ecn=1"], check=True)
            m = rack.ctl("link", "measure", "path2", "--json")
            assert m.returncode == 0, m.stderr
        finally:
            for h, v in old.items():
                subprocess.run(["ip", "netns", "exec", rack.ns(h), "sysctl", "-qw", f"net.ipv4.tcp_ecn={v}"], check=True)
        fwd = check_json(rack.ctl("link", "show", "path2", "--json"), "link show")["path2"]["directions"]["forward"]
        assert fwd["config"]["red"]["ecn"] is True
        assert fwd["counters"]["marked_pkts"] > 0, fwd["counters"]
        text = rack.ctl("link", "show", "path2")
        assert text.returncode == 0 and "red 0.002/5/30/0.1 ecn" in text.stdout, text.stdout
        # a later set of another field keeps RED; --droptail removes it
        after = check_json(rack.ctl("link", "set", "path2", "--delay", "30ms", "--dir", "forward", "--json"),
                           "link set")["after"]
        assert after["path2.forward"]["red"]["max_th"] == 30 and after["path2.forward"]["delay_us"] == 30_000
        after = check_json(rack.ctl("link", "set", "path2", "--droptail", "--dir", "forward", "--json"),
                           "link set")["after"]
        assert "red" not in after["path2.forward"]
    finally:
        p = rack.ctl("link", "set", "path2", "--bw", "0", "--delay", "0", "--plr", "0", "--queue", "50", "--droptail")
        assert p.returncode == 0, p.stderr


def check_json(p, command: str):
    """The data of a --json output, checked against the command's shipped schema (controller/schemas)."""
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    check(doc, command)
    return doc["data"]


@pytest.mark.parametrize("args, message", [
    (["set", "path2", "--bw", "-1M"], "must be a positive rate"),
    (["set", "path9", "--bw", "1M"], "unknown link 'path9'"),
    (["set", "path2"], "nothing to change"),
    (["set", "path2", "--queue", "200000"], "above the forwarder's 100000"),
])
def test_link_set_bad_input(rack, args, message):
    p = rack.ctl("link", *args)
    assert p.returncode == 2 and message in p.stderr and p.stderr.count("\n") == 1, p.stderr


def test_distinct_bottleneck_on_tc_bridges(tc_rack):
    p = tc_rack.ctl("run", "distinct-bottleneck", "--link2", "20M", "--duration", "8", "--json")
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)["data"]["summary"]
    assert s["valid"] and s["mptcp"]["subflows_established_per_link"] == {"path1": 1, "path2": 1}
    assert 17 <= s["links"]["path2"]["flows_total_mbps"] <= 20
    m = json.loads((json.loads(p.stdout)["data"]["record"] + "/manifest.json") and
                   open(json.loads(p.stdout)["data"]["record"] + "/manifest.json").read())
    assert m["shapers"]["br2"]["kind"] == "tc"
    assert m["shapers"]["br2"]["after"]["pipes"]["path2.forward"]["bw_bps"] == 20_000_000
    # the kernel back-end cannot delay: refused with one line, before anything is touched
    bad = tc_rack.ctl("link", "set", "path2", "--delay", "10ms")
    assert bad.returncode == 2 and "cannot delay packets" in bad.stderr
    assert [q["kind"] for q in tc_rack.qdiscs("br2", "pb")] == ["noqueue"]
