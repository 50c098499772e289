"""distinct-bottleneck end to end on the virtual rack: real sshd, tc, MPTCP, iperf3, InfluxDB."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from controller import scenarios
from controller.results.records import FORMAT_VERSION, load_manifest, read_jsonl
from controller.results.timefields import FILES, decode

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def completed_run(rack):
    p = rack.ctl("run", "distinct-bottleneck", "--link2", "20M", "--duration", "12", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)["data"]
    return out, Path(out["record"]), p


def test_summary_meets_the_issue_ranges(completed_run):
    out, record, _ = completed_run
    s = out["summary"]
    assert out["status"] == "completed"
    assert s["valid"] is True, s["invalid_reasons"]
    # Both MPTCP subflows carried data, one per path.
    links = {x["link"]: x for x in s["subflows"]}
    assert set(links) == {"path1", "path2"}
    assert all(x["bytes"] > 1_000_000 for x in s["subflows"])
    assert s["mptcp"]["negotiated"] is True
    assert s["mptcp"]["subflows_established_per_link"] == {"path1": 1, "path2": 1}
    # Path totals (goodput of the flows on each path) within the ranges of the issue.
    assert 85 <= s["links"]["path1"]["flows_total_mbps"] <= 100
    assert 17 <= s["links"]["path2"]["flows_total_mbps"] <= 20
    # What crossed each bridge (frames incl. headers) never exceeds the configured rate.
    assert s["links"]["path1"]["bridge_forward_mbps"] <= 100.5
    assert s["links"]["path2"]["bridge_forward_mbps"] <= 20.1
    assert 0.34 <= s["jain_index"] <= 1.0
    flows = {f["name"]: f for f in s["flows"]}
    assert set(flows) == {"mptcp", "tcp-path1", "tcp-path2"}
    assert all(f["receiver_mbps"] > 1 for f in flows.values())


def test_terminal_table_printed(rack):
    # the table, not the rates, is checked: 3 s of traffic (test_live_view's pipe run is as long)
    p = rack.ctl("run", "distinct-bottleneck", "--link2", "10M", "--duration", "3")
    assert p.returncode == 0, p.stderr
    assert "Jain's fairness index over mptcp, tcp-path1, tcp-path2:" in p.stdout
    assert "MPTCP negotiated: yes" in p.stdout
    assert "link2 10 Mbit/s" in p.stdout


def test_run_record_is_complete(completed_run, rack):
    out, record, _ = completed_run
    m = load_manifest(record)
    assert m["format_version"] == FORMAT_VERSION == 2 and m["status"] == "completed"
    assert len(m["neighbour_warmup"]) == 4 and all(w["replied"] for w in m["neighbour_warmup"])
    assert m["parameters"]["values"]["link2"] == 20_000_000
    assert "a1" in m["hosts"] and "uname -a" in m["hosts"]["a1"]["metadata"]
    # shaper state before, applied, after and restored, for both bridges
    for b in ("br1", "br2"):
        sh = m["shapers"][b]
        assert set(sh) >= {"before", "applied", "after", "restored"}
        assert all(v is None for v in sh["before"]["pipes"].values())
        assert all(v is None for v in sh["restored"]["pipes"].values())
    assert m["shapers"]["br2"]["after"]["pipes"]["path2.forward"]["bw_bps"] == 20_000_000
    # secrets are references only
    assert m["inventory"]["influxdb"]["token"]["env"] == "CTL_INFLUX_TOKEN"
    token = (rack.state_dir / "influxdb" / "vtest" / "token").read_text().strip()
    assert token not in (record / "manifest.json").read_text()
    assert token not in (record / "commands.jsonl").read_text()
    # every command with its exit status
    cmds = [json.loads(l) for l in (record / "commands.jsonl").read_text().splitlines()]
    assert any(c["argv"][1:2] == ["ctl"] and "set" in c["argv"] and c["exit_status"] == 0 for c in cmds)
    assert all("exit_status" in c and "stdout" in c for c in cmds)
    # raw tool output
    raw = record / "raw"
    assert json.loads((raw / "a1" / "iperf3-mptcp.client.json").read_text())["end"]["sum_received"]["bytes"] > 0
    assert "SF_ESTABLISHED" in (raw / "a1" / "mptcp-monitor.txt").read_text()
    assert (raw / "a1" / "nstat-before.txt").exists() and (raw / "a1" / "nstat-after.txt").exists()
    assert (record / "summary.json").exists()
    png = (record / "throughput.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    assert m["clock_offsets"]["start"] and all(abs(o["measured_s"]) < 0.05 for o in m["clock_offsets"]["start"])
    # how late the controller stamped its own times: its event loop's lag over the traffic window
    lag = m["controller_loop"]
    t0, t1 = m["traffic_window"]["start"], m["traffic_window"]["end"]
    assert lag["traffic"]["samples"] >= 0.5 * (t1 - t0) / lag["period_s"]
    assert 0 <= lag["traffic"]["median_s"] <= lag["traffic"]["p99_s"] <= lag["traffic"]["max_s"]
    assert ("warning" in lag) == bool(lag["stalls"])
    # each flow's client: asked for, seen running, output ended, in that order
    for f in m["flows"]:
        assert f["client_spawned"] <= f["client_started"] < f["client_exited"]


def _epoch_numbers(obj, path=""):
    """Where a written document still has a float that looks like Unix seconds (2001..5138)."""
    if isinstance(obj, dict):
        return [p for k, v in obj.items() for p in _epoch_numbers(v, f"{path}.{k}")]
    if isinstance(obj, list):
        return [p for i, v in enumerate(obj) for p in _epoch_numbers(v, f"{path}[{i}]")]
    return [path] if isinstance(obj, float) and 1e9 <= obj < 1e11 else []


def test_the_record_is_written_in_format_2_and_read_back_to_numbers(completed_run):
    """Every time in manifest.json, commands.jsonl and processes.jsonl is ISO 8601 UTC on disk (no
    epoch float left anywhere), the host's process start times have a zone, and the reader gives
    the numbers back."""
    out, record, _ = completed_run
    raw = json.loads((record / "manifest.json").read_text())
    lines = {n: [json.loads(x) for x in (record / n).read_text().splitlines()]
             for n in ("commands.jsonl", "processes.jsonl")}
    assert _epoch_numbers(raw) == [] and all(_epoch_numbers(e) == [] for v in lines.values() for e in v)
    assert raw["format_version"] == 2 and raw["created"].endswith("Z") and raw["traffic_window"]["end"].endswith("Z")
    assert raw["processes"] and all(p["host_start"].endswith(".000000Z") and p["started"].endswith("Z")
                                    for p in raw["processes"])
    assert all(c["started"].endswith("Z") for c in lines["commands.jsonl"])
    m = load_manifest(record)
    assert m == decode(raw, FILES["manifest.json"])
    assert m["created"] <= m["traffic_window"]["start"] < m["traffic_window"]["end"] <= m["finished"]
    # each process's start on its host (ps under TZ=UTC0, to the second) is the moment ctl spawned it on
    # its own clock (the same machine), not hours off as a time read in the wrong zone would be
    assert all(abs(p["host_start"] - p["started"]) < 900 for p in m["processes"])
    journal = read_jsonl(record / "processes.jsonl")
    assert {(p["host"], p["pid"], p["started"]) for p in journal} <= \
        {(p["host"], p["pid"], p["started"]) for p in m["processes"]}
    assert all(isinstance(c["started"], float) for c in read_jsonl(record / "commands.jsonl"))


def test_sampled_at_10hz_by_one_sampler_per_host(completed_run):
    out, record, _ = completed_run
    m = load_manifest(record)
    samples = m["telemetry"]["samples"]
    assert set(samples) >= {"a1", "a2", "b1", "b2", "br1", "br2"}
    assert all(n >= 100 for n in samples.values())  # 12 s at 10 Hz
    cmds = read_jsonl(record / "commands.jsonl")
    samplers = [c for c in cmds if c["argv"][:3] == ["python3", "-u", "-c"]]
    per_host = Counter(c["host"] for c in samplers if "sampler" in c["note"])
    assert all(v == 1 for v in per_host.values()) and len(per_host) == 6


def test_points_in_influxdb_equal_the_run_record(completed_run, rack):
    out, record, _ = completed_run
    from controller.telemetry.spool import iter_points
    from tests.support.influx import query_counts
    spooled = list(iter_points(record / "metrics.jsonl"))
    assert len(spooled) > 1000
    expected = Counter()
    for p in spooled:
        for f, v in p.fields.items():
            if v is not None and not (isinstance(v, float) and v != v):
                expected[(p.measurement, p.tags["host"], f)] += 1
    got = query_counts(rack, run=out["run_id"])
    assert got == expected
    tags = {k for p in spooled for k in p.tags}
    assert {"run", "scenario", "host"} <= tags


def test_bridges_and_endpoints_back_at_baseline(completed_run, rack):
    for b in ("br1", "br2"):
        for dev in ("pa", "pb"):
            assert [q["kind"] for q in rack.qdiscs(b, dev)] == ["noqueue"]
    assert rack.pipes_at_default()
    assert rack.netns("b1", "ip", "mptcp", "endpoint", "show").strip() == ""
    assert "subflows 2" in rack.netns("a1", "ip", "mptcp", "limits", "show")
    assert "add_addr_accepted 0" in rack.netns("a1", "ip", "mptcp", "limits", "show")


def test_every_sender_and_receiver_has_its_counters(completed_run):
    """nstat -asz before and after traffic on all four hosts of the flows, not only the MPTCP
    ones; the summary gives each sender's slow-start and loss counters (whole run)."""
    out, record, _ = completed_run
    for h in ("a1", "a2", "b1", "b2"):
        for when in ("before", "after"):
            assert "TcpExtTCPHystartTrainDetect" in (record / "raw" / h / f"nstat-{when}.txt").read_text(), (h, when)
    counters = out["summary"]["sender_counters"]
    assert set(counters) == {"a1", "a2"} and all(c["recorded"] for c in counters.values())
    # Two Cubic flows filling a 50-slot drop-tail queue on each path for 12 s lose packets.
    assert counters["a2"]["counters"]["TcpRetransSegs"] > 0
    assert "sender counters (nstat, whole run): a1 HyStart" in scenarios.get("distinct-bottleneck").render(out["summary"])


def test_runs_show_recomputes_the_summary_and_windows_it(completed_run, rack):
    """`ctl runs show`: over the whole traffic exactly the summary.json the run wrote; over two
    windows, each with its window and numbers whose time-weighted mean is the whole run's."""
    out, record, _ = completed_run
    p = rack.ctl("runs", "show", out["run_id"], "--json")
    assert p.returncode == 0, p.stderr
    saved = json.loads((record / "summary.json").read_text())
    assert json.loads(p.stdout)["data"] == saved
    m = load_manifest(record)
    # a copied summary.json says which run it is, when (ISO 8601 UTC), with which ctl and rack
    prov = saved["provenance"]
    assert prov["run_id"] == out["run_id"] == m["run_id"] and prov["status"] == "completed"
    assert prov["ctl"] == {"version": m["controller"]["ctl_version"], "commit": m["controller"]["commit"]}
    assert prov["inventory"]["name"] == m["inventory"]["name"] and prov["parameters"]["given"]["link2"] == "20M"
    assert all(prov[k].endswith("Z") for k in ("started", "finished"))
    assert prov["traffic"]["start"].endswith("Z") and prov["traffic"]["duration_s"] > 12
    assert saved["units"]["receiver_mbps"] == "Mbit/s" and saved["units"]["jain_index"] == "1"
    traffic = m["traffic_window"]["end"] - m["traffic_window"]["start"]
    halves = []
    for w in (":6s", "6s:"):
        p = rack.ctl("runs", "show", str(record), "--window", w, "--json")
        assert p.returncode == 0, p.stderr
        halves.append(json.loads(p.stdout)["data"])
    first, second = halves
    assert first["window"] == {"start_s": 0.0, "end_s": 6.0, "traffic_s": round(traffic, 3), "of": "traffic"}
    assert second["window"]["start_s"] == 6.0 and second["window"]["end_s"] == round(traffic, 3)
    whole = out["summary"]
    for s in halves:
        # The receivers' sockets are sampled on the rack: every flow has a receiver rate in each window.
        assert all(f["receiver_mbps"] and f["receiver_mbps"] > 0.5 for f in s["flows"]), s["flows"]
        assert s["jain_index"] is not None
        assert "every number is over seconds" in s["definitions"]["window"]
    # Counters read at 10 Hz: the two windows' time-weighted rates give the whole run's, to the
    # bytes of a sampling interval or two at the cut.
    t1, t2 = 6.0, traffic - 6.0
    for link in ("path1", "path2"):
        fwd = [s["links"][link]["bridge_forward_mbps"] for s in (first, second)]
        assert (fwd[0] * t1 + fwd[1] * t2) / traffic == pytest.approx(whole["links"][link]["bridge_forward_mbps"],
                                                                        rel=0.05)
    sub_bytes = [{x["link"]: x["bytes"] for x in s["subflows"]} for s in (first, second, whole)]
    for link in ("path1", "path2"):
        assert sub_bytes[0][link] + sub_bytes[1][link] == pytest.approx(sub_bytes[2][link], rel=0.05)
    p = rack.ctl("runs", "show", out["run_id"], "--window", "6s:")
    assert p.returncode == 0, p.stderr
    w = second["window"]
    assert f"window: 6 s to {w['end_s']:g} s of {w['traffic_s']:.1f} s of traffic" in p.stdout
    assert "Jain's fairness index over mptcp, tcp-path1, tcp-path2:" in p.stdout
    assert f"record: {record}" in p.stdout


def test_delay_is_added_on_both_links_and_the_hosts_restored(rack):
    """--delay (issue 22, Table 1's path-delay hypothesis): the forwarders hold the rate, the queue and
    the delay in both directions during the run; each flow's RTT grows by twice the delay; the socket
    buffers raised on the four hosts are back at their own values after the run, the pipes at default."""
    before = {h: rack.netns(h, "sysctl", "-n", "net.ipv4.tcp_rmem").split() for h in ("a1", "a2", "b1", "b2")}
    p = rack.ctl("run", "distinct-bottleneck", "--link2", "20M", "--delay", "40ms", "--duration", "6", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)["data"]
    s, record = out["summary"], Path(out["record"])
    assert out["status"] == "completed" and s["valid"] is True, s["invalid_reasons"]
    assert s["parameters"]["delay_ms"] == 40.0
    m = json.loads((record / "manifest.json").read_text())
    for b, link, bw in (("br1", "path1", 100_000_000), ("br2", "path2", 20_000_000)):
        for d in ("forward", "reverse"):
            applied = m["shapers"][b]["after"]["pipes"][f"{link}.{d}"]
            assert (applied["bw_bps"], applied["delay_us"]) == (bw, 40_000), applied
    # every sender's smoothed RTT (ss, 10 Hz) is at least the 80 ms the two delays add
    from controller.telemetry.spool import iter_points
    rtts = [pt.fields.get("rtt_ms") for pt in iter_points(record / "metrics.jsonl")
            if pt.measurement == "subflow" and pt.tags.get("host") in ("a1", "a2") and pt.fields.get("rtt_ms")]
    assert rtts and min(rtts) >= 80.0, min(rtts or [0])
    assert [c["what"] for c in m["conversions"]] == ["socket buffers of a1, a2, b1, b2"]
    after = {h: rack.netns(h, "sysctl", "-n", "net.ipv4.tcp_rmem").split() for h in ("a1", "a2", "b1", "b2")}
    assert after == before
    assert rack.pipes_at_default()
