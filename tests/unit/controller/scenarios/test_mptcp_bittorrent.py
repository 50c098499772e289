"""mptcp-bittorrent (MPTCP + BitTorrent feasibility paper, Fig. 1-3): parameters, the plans of both
steps on both inventories (initial paths, the NAT router's forwards, MPTCP endpoints), the
BitTorrent runner's pure command builders, its dry run, and the summaries of recorded runs
(tests/fixtures/generated/runs/mptcp-bittorrent: step 1, step 2 with a local and a global tracker).
"""
from __future__ import annotations

import asyncio
import urllib.parse

import pytest

from bridges.base import Direction, PipeConfig
from controller import scenarios
from controller.traffic.bittorrent import (BitTorrentRunner, BtSettings, downloads, leecher_argv, magnet, seeder_argv,
                                   tracker_argv)
from controller.cli.run import prepare_run
from controller.commands import DryRunSession
from controller.traffic.iperf3 import TrafficRunner
from controller.errors import ParameterError, UsageError
from controller.inventory import load_inventory
from controller.run.replay import load_run
from controller.units import Queue
from tests.support.shipped import INVENTORIES, RECORDED_RUNS, no_state_dir

RUNS = RECORDED_RUNS / "mptcp-bittorrent"
F, R = Direction.FORWARD, Direction.REVERSE


@pytest.fixture(scope="module")
def sc():
    return scenarios.get("mptcp-bittorrent")


@pytest.fixture(scope="module")
def recorded():
    sc = scenarios.get("mptcp-bittorrent")
    with no_state_dir():
        out = {}
        for name in ("iperf3", "bittorrent-local", "bittorrent-global"):
            data = load_run(RUNS / name)
            out[name] = (data, sc.summarize(data))
        yield out


# ---- parameters -------------------------------------------------------------------------------


@pytest.mark.parametrize("argv, message", [
    (["--tracker", "remote"], "--tracker: 'remote' is not one of local, global"),
    (["--step", "3"], "--step: '3' is not one of iperf3, bittorrent"),
    (["--size", "100"], "--size: 100 is below the minimum 64KiB"),
    (["--size", "100MB/s"], "--size: "),
    (["--repetitions", "0"], "--repetitions: 0 is below the minimum 1"),
    (["--initial", "path3"], "--initial: 'path3' is not one of all, local1, local2, global"),
    (["--global-delay", "3s"], "--global-delay: 3s is above the maximum 2s"),
    (["--bt-tools", "nodes/bittorrent"], "--bt-tools: 'nodes/bittorrent' is not an absolute path"),
])
def test_bad_parameters_are_one_line_errors(sc, argv, message):
    with pytest.raises(UsageError) as ei:
        sc.parse_args(argv)
    assert str(ei.value).startswith(message) and "\n" not in str(ei.value) and ei.value.exit_code == 2


def test_defaults_are_the_papers(sc):
    values, _ = sc.parse_args([])
    assert (values["step"], values["tracker"], values["size"], values["repetitions"]) == \
        ("bittorrent", "local", 100 * 2**20, 10)


# ---- plans -------------------------------------------------------------------------------------


@pytest.mark.parametrize("inventory", sorted(INVENTORIES))
def test_step1_plan(invs, inventory):
    inv = invs[inventory]
    _, values, _, plan = prepare_run("mptcp-bittorrent", ["--step", "iperf3", "--repetitions", "2",
                                                          "--duration", "5s"], inv)
    names = [f.name for f in plan.flows]
    assert names[:6] == ["tcp-lp1-1", "mptcp-lp1-1", "tcp-lp2-1", "mptcp-lp2-1", "tcp-global-1", "mptcp-global-1"]
    assert len(names) == 12 and len({f.port for f in plan.flows}) == 12
    # one after the other, 3 s apart
    assert [f.start_delay_s for f in plan.flows[:3]] == [0.0, 8.0, 16.0]
    by = {f.name: f for f in plan.flows}
    assert (by["tcp-lp1-1"].client_addr, by["tcp-lp1-1"].server_addr) == ("10.21.0.12", "10.21.0.11")
    assert (by["mptcp-lp2-1"].client_addr, by["mptcp-lp2-1"].server_addr) == ("10.22.0.12", "10.22.0.11")
    # global: to the router's outside address from the leecher's access-link address
    assert (by["tcp-global-1"].client_addr, by["tcp-global-1"].server_addr, by["tcp-global-1"].link) == \
        ("10.32.0.12", "10.30.0.1", "wan2")
    assert plan.links[("lp1", F)] == PipeConfig(bw_bps=20_000_000, delay_us=5000, queue=Queue(slots=50))
    assert plan.links[("wan2", R)] == PipeConfig(bw_bps=5_000_000, delay_us=50_000, queue=Queue(slots=50))
    ns1 = plan.endpoints["ns1"]
    # the seeder announces its two local addresses, never its access-link address
    assert [e.address for e in ns1.endpoints] == ["10.21.0.11", "10.22.0.11"]
    assert all(e.flags == ("signal",) for e in ns1.endpoints)
    assert plan.endpoints["ns2"].endpoints == () and plan.endpoints["ns2"].add_addr_accepted == 2
    assert plan.mptcp_hosts == ["ns1", "ns2"] and plan.traffic_factory is None


def test_step1_single_initial_path(sc, invs):
    values, _ = sc.parse_args(["--step", "iperf3", "--initial", "global", "--repetitions", "3"])
    plan = sc.plan(values, invs["virtual"])
    assert [f.name for f in plan.flows] == ["tcp-global-1", "mptcp-global-1", "tcp-global-2", "mptcp-global-2",
                                            "tcp-global-3", "mptcp-global-3"]


def test_global_tests_need_the_routers_forwards(sc, invs):
    values, _ = sc.parse_args(["--step", "iperf3", "--initial", "global", "--port-base", "5290",
                               "--repetitions", "10"])
    with pytest.raises(ParameterError, match=r"router gw1 does not forward tcp port 5300 to 10.31.0.11 "
                                             r"\(add it under hosts.gw1.nat.forwards\)"):
        sc.plan(values, invs["virtual"])


@pytest.mark.parametrize("inventory", sorted(INVENTORIES))
@pytest.mark.parametrize("tracker", ["local", "global"])
def test_step2_plan(invs, inventory, tracker):
    inv = invs[inventory]
    _, values, _, plan = prepare_run("mptcp-bittorrent", ["--tracker", tracker, "--repetitions", "3"], inv)
    assert [(f.name, f.protocol, f.client, f.server, f.port) for f in plan.flows] == \
        [("bt-tcp", "tcp", "ns2", "ns1", 6881), ("bt-mptcp", "mptcp", "ns2", "ns1", 6882)]
    assert plan.flows[0].server_addr == ("10.21.0.11" if tracker == "local" else "10.30.0.1")
    assert plan.traffic_factory is not None
    s = plan.traffic_factory.keywords["settings"]
    assert s.announce == ("http://10.21.0.11:6969/announce" if tracker == "local" else "http://10.30.0.100:6969/announce")
    assert s.tracker_host == ("ns1" if tracker == "local" else "tr1")
    assert s.tracker_host in plan.sample_ifaces      # the runner reaches the tracker host over SSH
    assert s.size_bytes == 100 * 2**20 and s.repetitions == 3


def test_router_must_be_the_gateway(sc, invs, tmp_path):
    text = INVENTORIES["virtual"].read_text().replace(", gateway: 10.31.0.1}", "}")
    p = tmp_path / "v.yaml"
    p.write_text(text)
    with no_state_dir():
        values, _ = sc.parse_args([])
        with pytest.raises(ParameterError, match="seeder: ns1 g \\(on wan1\\) has no `gateway`"):
            sc.plan(values, load_inventory(p))


# ---- the runner's commands (pure) and its dry run ---------------------------------------------------


def settings(**kw) -> BtSettings:
    base = dict(tools_dir="/opt/bt", seeder="ns1", leecher="ns2", tracker_host="tr1", tracker_bind="10.30.0.100",
                tracker_port=6969, size_bytes=1 << 20, repetitions=2, protocols=("tcp", "mptcp"),
                seed_ports={"tcp": 6881, "mptcp": 6882}, leech_ports={"tcp": 6901, "mptcp": 6902},
                http_ports={"seed-tcp": 8101, "seed-mptcp": 8102, "leech-tcp": 8201, "leech-mptcp": 8202},
                download_timeout_s=60)
    return BtSettings(**{**base, **kw})


def test_command_builders():
    s = settings()
    assert tracker_argv(s) == ("/opt/bt/node_modules/.bin/bittorrent-tracker", "--http", "--port", "6969",
                               "--http-hostname", "10.30.0.100", "--interval", "600000")
    assert seeder_argv(s, "mptcp", "/w/t.torrent", "/w") == (
        "mptcpize", "run", "/opt/bt/node_modules/.bin/webtorrent", "download", "/w/t.torrent", "-o", "/w",
        "--keep-seeding", "--torrent-port", "6882", "-p", "8102")
    assert leecher_argv(s, "tcp", "magnet:?x", "/l/tcp-1") == (
        "/opt/bt/node_modules/.bin/webtorrent", "download", "magnet:?x", "-o", "/l/tcp-1", "--torrent-port", "6901",
        "-p", "8201")
    m = magnet("ab" * 20, "payload.bin", s.announce)
    q = urllib.parse.parse_qs(urllib.parse.urlsplit(m).query)
    assert q == {"xt": [f"urn:btih:{'ab' * 20}"], "dn": ["payload.bin"], "tr": ["http://10.30.0.100:6969/announce"]}
    assert downloads(s) == [("tcp", 1), ("mptcp", 1), ("tcp", 2), ("mptcp", 2)]


def test_dry_run_lists_every_command_and_changes_nothing(invs):
    _, _, _, plan = prepare_run("mptcp-bittorrent", ["--repetitions", "1", "--size", "1MiB"], invs["lab-rack"])
    log: list = []

    class Pool(dict):
        def __getitem__(self, h):
            return self.setdefault(h, DryRunSession(h, log))
    runner = plan.traffic_factory(Pool(), plan, None)  # a dry run has no record
    assert isinstance(runner, BitTorrentRunner) and [d.name for d in runner.runs] == ["tcp-1", "mptcp-1"]

    async def go():
        await runner.start_servers()
        await runner.run_clients(60)
        await runner.collect_servers()
        await runner.stop_all()
    asyncio.run(go())
    argvs = [r.argv for r in log]
    assert ("mktemp", "-d", "/tmp/ctl-bt-seed.XXXXXX") in argvs
    assert any(a[0] == "dd" and "count=1048576" in a for a in argvs)
    assert any(a[1:3] == ("run", str(plan.traffic_factory.keywords["settings"].tool("webtorrent"))) and "6882" in a
               for a in argvs if a[0] == "mptcpize")
    # only what the run made is removed, by exact path: each download's copy, then the mktemp directories
    # (a dry run shows mktemp's own template where the name it makes at run time goes)
    assert [a for a in argvs if a[0] == "rm"] == [("rm", "-r", "--", "/tmp/ctl-bt-leech.XXXXXX/tcp-1"),
                                                 ("rm", "-r", "--", "/tmp/ctl-bt-leech.XXXXXX/mptcp-1"),
                                                 ("rm", "-r", "--", "/tmp/ctl-bt-seed.XXXXXX"),
                                                 ("rm", "-r", "--", "/tmp/ctl-bt-leech.XXXXXX")]
    # no made-up info hash in the magnet link: it says where the hash comes from
    magnets = [x for a in argvs for x in a if x.startswith("magnet:")]
    assert magnets and all("btih:<info hash of the .torrent, read at run time>&" in m for m in magnets)
    assert all(not any(ch in " ".join(a) for ch in (";", "|", "&&")) for a in argvs)


def test_tools_dir_on_the_hosts_is_a_parameter(invs):
    # A physical rack's endpoints do not share the controller's checkout: --bt-tools names
    # where nodes/bittorrent is installed on them.
    _, params, _, plan = prepare_run("mptcp-bittorrent", ["--bt-tools", "/opt/ctl/bittorrent/"], invs["lab-rack"])
    settings = plan.traffic_factory.keywords["settings"]
    assert settings.tool("webtorrent") == "/opt/ctl/bittorrent/node_modules/.bin/webtorrent"
    assert settings.tool("bittorrent-tracker") == "/opt/ctl/bittorrent/node_modules/.bin/bittorrent-tracker"
    _, _, _, plan = prepare_run("mptcp-bittorrent", [], invs["lab-rack"])
    assert plan.traffic_factory.keywords["settings"].tools_dir.endswith("/nodes/bittorrent")


def test_dry_run_of_step1_does_not_wait_out_the_start_delays(invs, monkeypatch):
    # Step 1 runs its 60 iperf3 tests one after another through start delays (~12 min);
    # a dry run prints them all without waiting for any.
    _, _, _, plan = prepare_run("mptcp-bittorrent", ["--step", "iperf3"], invs["lab-rack"])
    assert max(f.start_delay_s for f in plan.flows) > 600
    log: list = []
    waits: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(s, *a, **k):
        waits.append(s)
        await real_sleep(0)
    monkeypatch.setattr("controller.traffic.iperf3.asyncio.sleep", sleep)

    class Pool(dict):
        def __getitem__(self, h):
            return self.setdefault(h, DryRunSession(h, log))
    assert plan.traffic_factory is None               # step 1 is plain iperf3
    hosts = {f.client for f in plan.flows} | {f.server for f in plan.flows}
    runner = TrafficRunner(Pool(), list(plan.flows), {h: True for h in hosts})

    async def go():
        await runner.start_servers()
        await runner.run_clients(60)
    asyncio.run(go())
    assert sum(1 for r in log if r.argv[0] in ("iperf3", "mptcpize") and "-c" in r.argv) == len(plan.flows) == 60
    assert all(w < 1 for w in waits), sorted(waits)[-3:]


# ---- recorded runs -----------------------------------------------------------------------------------


def test_step1_recorded(recorded):
    _, s = recorded["iperf3"]
    assert s["valid"], s["invalid_reasons"]
    rows = {r["initial"]: r for r in s["paths"]}
    assert list(rows) == ["lp1", "lp2", "global"]
    for r in rows.values():
        assert r["tcp"]["n"] == r["mptcp"]["n"] == 1
    assert rows["global"]["tcp"]["median"] < 5.0                       # one 5 Mbit/s access link
    assert rows["lp1"]["mptcp_subflows_per_link"] == {"lp1": 1, "lp2": 1}
    assert rows["global"]["mptcp_subflows_per_link"] == {"lp1": 1, "lp2": 1, "wan2": 1}
    assert s["mptcp_better_on_every_path"] is True
    t = next(x for x in s["tests"] if x["name"] == "tcp-lp2-1")
    import json
    j = json.loads((RUNS / "iperf3" / "raw" / "ns2" / "iperf3-tcp-lp2-1.client.json").read_text())
    assert t["receiver_mbps"] == pytest.approx(j["end"]["sum_received"]["bits_per_second"] / 1e6, abs=0.001)


def test_step2_local_tracker_recorded(recorded):
    _, s = recorded["bittorrent-local"]
    assert s["valid"], s["invalid_reasons"]
    tcp, mptcp = s["downloads"]
    assert (tcp["name"], mptcp["name"]) == ("tcp-1", "mptcp-1")
    assert tcp["first_path"] == mptcp["first_path"] == ["lp1"]           # the local tracker gives the lp1 address
    assert tcp["peer_addrs"] == ["10.21.0.11:6881"]                     # its connections to itself left out
    assert mptcp["subflows_per_link"] == {"lp1": 1, "lp2": 1}
    assert tcp["sha256_ok"] and mptcp["sha256_ok"]
    assert tcp["throughput_mbps"] == pytest.approx(20 * 2**20 * 8 / tcp["download_s"] / 1e6, abs=0.01)
    assert tcp["throughput_mbps"] < 20.0 < mptcp["throughput_mbps"]      # one 20 Mbit/s path vs two
    assert s["mptcp_over_tcp"] == pytest.approx(s["mptcp_mbps"] / s["tcp_mbps"], abs=0.001)
    assert sum(mptcp["received_mbps_per_link"].values()) > 20.0


def test_step2_global_tracker_recorded(recorded):
    _, s = recorded["bittorrent-global"]
    assert s["valid"], s["invalid_reasons"]
    tcp, mptcp = s["downloads"]
    # the global tracker knows every peer by the router's outside address: the first connection is global
    assert tcp["peer_addrs"] == ["10.30.0.1:6881"] and mptcp["peer_addrs"] == ["10.30.0.1:6882"]
    assert tcp["first_path"] == mptcp["first_path"] == ["global"]
    assert tcp["received_mbps_per_link"].keys() == {"wan2"} and tcp["throughput_mbps"] < 5.0
    assert mptcp["subflows_per_link"] == {"lp1": 1, "lp2": 1, "wan2": 1}
    assert mptcp["received_mbps_per_link"]["lp1"] > mptcp["received_mbps_per_link"]["wan2"]


def test_a_corrupt_download_is_invalid(recorded):
    import dataclasses
    data, _ = recorded["bittorrent-local"]
    flows = [dataclasses.replace(d, sha256="0" * 64) if d.name == "mptcp-1" else d for d in data.flows]
    s = scenarios.get("mptcp-bittorrent").summarize(dataclasses.replace(data, flows=flows))
    assert s["valid"] is False and "mptcp-1: download incomplete or corrupt" in s["invalid_reasons"]


def test_render_and_figures(recorded, tmp_path):
    sc = scenarios.get("mptcp-bittorrent")
    text = sc.render(recorded["bittorrent-global"][1])
    assert "mptcp-bittorrent step 2 (webtorrent, Fig. 3b: tracker global), 20MiB x 1" in text
    row = next(l.split() for l in text.splitlines() if l.startswith("mptcp-1"))
    assert row[4:6] == ["global", "TCPOUT"]
    text1 = sc.render(recorded["iperf3"][1])
    assert "mptcp-bittorrent step 1 (iperf3, Fig. 2)" in text1
    assert next(l for l in text1.splitlines() if l.startswith("global")).endswith("lp1 1, lp2 1, wan2 1")
    for name, fig in (("iperf3", "boxplot.png"), ("bittorrent-local", "bittorrent.png")):
        data, s = recorded[name]
        assert sc.figures(data, s, tmp_path) == [fig]
        assert (tmp_path / fig).read_bytes()[:4] == b"\x89PNG"


def test_summary_json_carries_the_papers_tables(recorded):
    t1 = recorded["iperf3"][1]["paper_table"]
    assert t1["columns"] == ["initial path", "TCP", "MPTCP", "MPTCP/TCP"] and [r[0] for r in t1["rows"]] == \
        ["lp1", "lp2", "global"]
    t2 = recorded["bittorrent-global"][1]["paper_table"]
    assert t2["title"].startswith("Fig. 3b") and [r[0] for r in t2["rows"]] == ["TCP", "MPTCP"]
    assert t2["rows"][1][1] == recorded["bittorrent-global"][1]["mptcp_mbps"]


def test_long_global_path_keeps_mptcp_on_slow_syns(sc, invs):
    values, _ = sc.parse_args(["--global-delay", "150ms"])       # host to host: 4 x 150 ms = 600 ms RTT
    assert sc.plan(values, invs["virtual"]).endpoints["ns2"].sysctls == {
        "net.mptcp.syn_retrans_before_tcp_fallback": "6", "net.mptcp.blackhole_timeout": "0"}
    values, _ = sc.parse_args([])
    assert sc.plan(values, invs["virtual"]).endpoints["ns2"].sysctls == {}


def test_the_bittorrent_step_runs_cc_as_the_hosts_default_and_iperf3_asks_per_socket(sc, invs):
    values, _ = sc.parse_args(["--step", "bittorrent", "--cc", "lia"])
    plan = sc.plan(values, invs["virtual"])
    for h in ("ns1", "ns2"):       # the clients pick no algorithm: the run makes lia the default
        assert plan.endpoints[h].sysctls["net.ipv4.tcp_congestion_control"] == "lia"
        assert plan.endpoints[h].congestion_controls == frozenset({"lia"})
    values, _ = sc.parse_args(["--step", "iperf3", "--cc", "lia"])
    plan = sc.plan(values, invs["virtual"])
    assert all("net.ipv4.tcp_congestion_control" not in plan.endpoints[h].sysctls for h in ("ns1", "ns2"))
    assert {f.cc for f in plan.flows} == {"lia"}
    # without --cc: iperf3 asks for cubic per socket; the BitTorrent step leaves the hosts'
    # default alone (it is recorded), and claims no algorithm for its flows
    values, _ = sc.parse_args(["--step", "iperf3"])
    assert {f.cc for f in sc.plan(values, invs["virtual"]).flows} == {"cubic"}
    values, _ = sc.parse_args(["--step", "bittorrent"])
    plan = sc.plan(values, invs["virtual"])
    assert {f.cc for f in plan.flows} == {None}
    assert all(not plan.endpoints[h].congestion_controls and "net.ipv4.tcp_congestion_control" not in
               plan.endpoints[h].sysctls for h in ("ns1", "ns2"))


@pytest.mark.parametrize("step", ["iperf3", "bittorrent"])
def test_the_long_path_mptcp_settings_are_a_conversion(invs, step):
    """The leecher's global path is 4 x --global-delay long: from 500 ms of RTT on ctl changes its
    MPTCP fallback settings for the run, and says so (a warning and a manifest entry)."""
    _, _, _, plan = prepare_run("mptcp-bittorrent", ["--step", step, "--global-delay", "200ms"], invs["virtual"])
    assert [c.what for c in plan.conversions] == ["MPTCP fallback on ns2"]
    assert "800 ms RTT" in plan.conversions[0].reason
    _, _, _, plan = prepare_run("mptcp-bittorrent", ["--step", step], invs["virtual"])      # 200 ms: none
    assert plan.conversions == []


@pytest.mark.parametrize("tracker", ["local", "global"])
def test_an_unknown_tracker_host_is_refused_also_where_the_tracker_is_local(sc, invs, tracker):
    """issue 23: `--tracker-host nosuchhost` passed a dry run when the tracker was local."""
    params, _ = sc.parse_args(["--step", "bittorrent", "--tracker", tracker, "--tracker-host", "nosuchhost"])
    with pytest.raises(UsageError) as ei:
        sc.plan(params, invs["virtual"])
    assert "--tracker-host" in str(ei.value) and "nosuchhost" in str(ei.value) and ei.value.exit_code == 2


def test_a_dry_run_of_downloads_never_reports_a_failure(tmp_path):
    """A dry run downloads nothing: it says so, instead of 'FAILED: incomplete; 1 complete so far'."""
    import subprocess
    import sys
    env = {**__import__("os").environ, "CTL_STATE_DIR": str(tmp_path / "state"), "CTL_RUNS_DIR": str(tmp_path / "runs")}
    p = subprocess.run([sys.executable, "-m", "controller", "run", "mptcp-bittorrent", "--step", "bittorrent",
                        "--repetitions", "1", "--size", "1MiB", "--dry-run"], capture_output=True, text=True,
                       env=env, timeout=120)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert "dry run, nothing downloaded" in out and "FAILED" not in out and "complete so far" not in out
