#!/usr/bin/env python3
"""Benchmark: what a BBR expert checks of bbr3 (BBRv3 after draft-ietf-ccwg-bbr-06, ctl's BPF
program), beside the kernel's bbr (BBRv1 on this kernel) and Cubic, measured with ctl's own runs
on a virtual rack of this benchmark's own (inventory `bbr3bench`, namespace prefix bbrhNN).

Cases (figures printed as Markdown and written as JSON; nothing is asserted):
  single   rtt-loss-sweep, one flow, 100 Mbit/s x 40 ms, 1-BDP buffer: share of the link at loss 0,
           0.1 %, 3 % and 5 % for bbr3 and bbr (v1), at 0 and 0.1 % for Cubic; the queue the flow
           kept (mean and 95th percentile of the sender's RTT above the path's 40 ms, in BDPs)
  deep     the same at loss 0 with a 4-BDP buffer: does the flow keep its queue near one BDP?
  pair     two flows of one algorithm through one bottleneck (parallel-streams, one connection
           each, the second 5 s after the first): Jain's index over the 30 s together, and when
           it first reached 0.9 over a 2 s step (bbr3 and bbr)
  vs-cubic one bbr3 (bbr) connection against one plain-TCP Cubic flow through one shared 100 Mbit/s
           bottleneck, 40 ms, a deep (4 BDP) and a shallow (0.25 BDP) buffer: each one's rate. The
           bbr3 (bbr) side is a single-subflow MPTCP connection, not plain TCP: it is
           shared-bottleneck --subflows 1, because no scenario of ctl runs two plain-TCP flows of
           different algorithms through one bottleneck (parallel-streams gives all its connections
           one --cc). Each MPTCP subflow runs the algorithm itself (bbr3 is not coupled); with
           Cubic on it, a one-subflow MPTCP connection took what a TCP Cubic flow takes in the
           reproduction's calibration (ratio 1.10 +- 0.21, docs/validation.md), but that was not
           measured with bbr3 or bbr
  1g       rtt-loss-sweep at 1 Gbit/s x 40 ms, loss 0 and 0.1 %, bbr3 and bbr, with whether the
           dnpipe forwarder was the limit: its CPU during the traffic (read here from /proc, one
           core = 100 %), the frames the kernel dropped before it (rx_kernel_drops), its mean
           lateness, and what it forwarded against the configured rate

Each run is `ctl run ... --json`; the record names the congestion control every data subflow ran
(checked here) and after the benchmark nothing may stay registered. Every RTT in the table is the
one `ss` reported for the sender's socket (10 Hz samples over the traffic window).

Usage (root, after scripts/setup.sh; about 25 minutes with the defaults):
    .venv/bin/python bench/bbr3_bench.py [--duration 30s] [--reps 1] [--cases single,deep,pair,vs-cubic,1g]
                                         [--out FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

RTT_MS = 40
BDP_100M = 100_000_000 * RTT_MS // 1000 // 8            # bytes: 500 kB
AVAILABLE = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")


class Rack:
    """A virtual rack of the benchmark's own (tests/support/rack.py builds it as the tests do)."""

    def __init__(self, base: Path):
        from controller.inventory import load_inventory
        from controller.lab.ops import lab_up_cli
        from tests.support.rack import free_mgmt_octet, make_state_dir, write_test_inventory
        self.base = base
        self.state = make_state_dir(base / "state")
        os.environ["CTL_STATE_DIR"] = str(self.state)
        self.prefix = f"bbrh{os.getpid() % 100:02d}"
        octet = free_mgmt_octet()
        self.inv_path = write_test_inventory(base / "bbr3bench.yaml", prefix=self.prefix, mgmt_octet=octet,
                                             influx_port=18000 + octet, name="bbr3bench")
        self.inv = load_inventory(self.inv_path)
        self.runs = base / "runs"
        self.runs.mkdir()
        lab_up_cli(self.inv)
        self.env = {k: v for k, v in os.environ.items() if k != "CTL_INFLUX_TOKEN"}
        self.env.update(CTL_STATE_DIR=str(self.state), CTL_INVENTORY=str(self.inv_path), CTL_RUNS_DIR=str(self.runs),
                        CTL_LOCK_DIR=str(base / "locks"), PYTHONUNBUFFERED="1")

    def ctl(self, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "controller", *args], cwd=PROJECT, env=self.env,
                              capture_output=True, text=True, timeout=timeout)

    def dnpipe_pid(self, link: str) -> int | None:
        lab = json.loads((Path(self.inv.virtual.runtime_dir) / "lab.json").read_text())
        for d in lab.get("processes", []):
            if d.get("name") == f"dnpipe-{link}":
                return int(d["pid"])
        return None

    def close(self) -> None:
        from controller.lab.rack import lab_down
        from tests.support.rack import release_cc_holds
        release_cc_holds(self.runs)
        lab_down(self.inv)
        shutil.rmtree(self.inv.virtual.runtime_dir, ignore_errors=True)


def cpu_seconds(pid: int | None) -> float | None:
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def points(record: Path):
    with open(record / "metrics.jsonl") as f:
        for line in f:
            try:
                yield json.loads(line)
            except ValueError:
                continue


def sender_rtts(record: Path, flow: str, window: dict | None) -> list[float]:
    """rtt_ms of the flow's sender socket (the client's data subflow) inside the traffic window."""
    lo = int(window["start"] * 1e9) if window else None
    hi = int(window["end"] * 1e9) if window else None
    out = []
    for p in points(record):
        tags = p.get("tags", {})
        if p.get("m") != "subflow" or tags.get("flow") != flow or tags.get("role") != "client":
            continue
        f, t = p.get("f", {}), p.get("t")
        if lo is not None and isinstance(t, int) and not (lo <= t <= hi):
            continue
        if f.get("rtt_ms") and int(f.get("bytes_acked") or 0) > 100_000:
            out.append(float(f["rtt_ms"]))
    return out


def pipe_counters(record: Path, link: str, direction: str) -> dict:
    """The forwarder's counters of one pipe: last sample minus first (what happened during the run)."""
    first = last = None
    for p in points(record):
        tags = p.get("tags", {})
        if p.get("m") == "pipe" and tags.get("link") == link and tags.get("direction") == direction:
            first = first or p.get("f", {})
            last = p.get("f", {})
    if not first or not last:
        return {}
    keys = ("tx_pkts", "tx_bytes", "drop_queue_pkts", "drop_plr_pkts", "rx_kernel_drops", "tx_late_ns_sum")
    out = {k: (last.get(k) or 0) - (first.get(k) or 0) for k in keys}
    out["tx_late_ns_max"] = last.get("tx_late_ns_max")
    out["queue_peak_pkts"] = last.get("queue_peak_pkts")
    return out


def run(rack: Rack, argv: list[str], *, flows_cc: dict[str, str], link: str | None = None) -> dict:
    pid = rack.dnpipe_pid(link) if link else None
    c0, t0 = cpu_seconds(pid), time.monotonic()
    p = rack.ctl("run", *argv, "--json", "--quiet")
    took = time.monotonic() - t0
    c1 = cpu_seconds(pid)
    try:
        out = json.loads(p.stdout)["data"]
    except ValueError:
        return {"argv": argv, "ok": False, "error": (p.stderr or p.stdout).strip()[-400:], "took_s": took}
    record = Path(out["record"])
    from controller.results.records import load_manifest
    m = load_manifest(record)
    s = out.get("summary") or {}
    observed = ((m.get("congestion") or {}).get("subflows") or {}).get("observed") or {}
    ran = {flow: sorted({n for names in subs.values() for n in names}) for flow, subs in observed.items()}
    row = {"argv": argv, "ok": out.get("status") == "completed" and bool(s.get("valid")), "status": out.get("status"),
           "record": str(record), "took_s": round(took, 1), "summary": s, "ran": ran,
           "ran_as_asked": all(ran.get(f) == [cc] for f, cc in flows_cc.items()),
              "kernel_bbr": (m.get("congestion") or {}).get("kernel_bbr"), "window": m.get("traffic_window")}
    w = m.get("traffic_window") or {}
    busy = (w.get("end") or 0) - (w.get("start") or 0)
    if pid is not None and c0 is not None and c1 is not None and busy > 0:
        # the forwarder idles outside the traffic: its CPU over the run is its CPU over the traffic
        row["forwarder_cpu_pct"] = round(100 * (c1 - c0) / busy, 1)
    return row


def jain(xs: list[float]) -> float | None:
    s2 = sum(x * x for x in xs)
    return round(sum(xs) ** 2 / (len(xs) * s2), 3) if s2 else None


def single(rack: Rack, dur: str, reps: int) -> list[dict]:
    rows = []
    cases = [(cc, loss) for loss in ("0%", "0.1%", "3%", "5%") for cc in ("bbr3", "bbr")]
    cases += [("cubic", "0%"), ("cubic", "0.1%")]
    for rep in range(reps):
        for cc, loss in cases:
            rows.append(_sweep(rack, cc, "100M", loss, dur, None, "single", rep))
    return rows


def deep(rack: Rack, dur: str, reps: int) -> list[dict]:
    return [_sweep(rack, cc, "100M", "0%", dur, f"{4 * BDP_100M}B", "deep", rep)
            for rep in range(reps) for cc in ("bbr3", "bbr", "cubic")]


def _sweep(rack: Rack, cc: str, bw: str, loss: str, dur: str, queue: str | None, case: str, rep: int) -> dict:
    argv = ["rtt-loss-sweep", "--cc", cc, "--bw", bw, "--rtt", f"{RTT_MS}ms", "--loss", loss, "--duration", dur]
    if queue:
        argv += ["--queue", queue]
    r = run(rack, argv, flows_cc={"tcp": cc}, link="path1")
    r.update(case=case, cc=cc, bw=bw, loss=loss, queue=queue or "1 BDP", rep=rep)
    if r.get("record"):
        s = r["summary"]
        r["share_pct"] = s.get("share_pct")
        r["retransmits"] = s.get("retransmits")
        rtts = sender_rtts(Path(r["record"]), "tcp", r.get("window"))
        if rtts:
            q = sorted((x - RTT_MS) / RTT_MS for x in rtts)
            r["queue_bdp_mean"] = round(statistics.fmean(q), 3)
            r["queue_bdp_p95"] = round(q[int(0.95 * (len(q) - 1))], 3)
            r["rtt_samples"] = len(rtts)
        ctr = pipe_counters(Path(r["record"]), "path1", "forward")
        r["pipe"] = ctr
    return r


def pair(rack: Rack, dur: str, reps: int) -> list[dict]:
    rows = []
    for rep in range(reps):
        for cc in ("bbr3", "bbr"):
            argv = ["parallel-streams", "--base-streams", "1", "--streams", "1", "--cc", cc, "--bw", "100M",
                    "--delay", f"{RTT_MS // 2}ms", "--queue", f"{BDP_100M}B", "--start-after", "5s",
                    "--duration", "40s"]
            r = run(rack, argv, flows_cc={"x1": cc, "m0": cc}, link="path1")
            r.update(case="pair", cc=cc, rep=rep)
            s = r.get("summary") or {}
            shares = [s.get("x1_share_pct"), s.get("m0_share_pct")]
            if all(isinstance(x, (int, float)) for x in shares):
                r["shares_pct"] = shares
                r["jain"] = jain(shares)
            r["first_fair_step_s"] = None
            for st in ((s.get("diagnostics") or {}).get("share_timeline") or []):
                x, m0 = st.get("x1_pct"), st.get("m0_pct")
                if x and m0 and jain([x, m0]) >= 0.9:
                    r["first_fair_step_s"] = st.get("t_s")
                    break
            rows.append(r)
    return rows


def vs_cubic(rack: Rack, dur: str, reps: int) -> list[dict]:
    rows = []
    for rep in range(reps):
        for qname, queue in (("deep", f"{4 * BDP_100M}B"), ("shallow", f"{BDP_100M // 4}B")):
            for cc in ("bbr3", "bbr"):
                argv = ["shared-bottleneck", "--subflows", "1", "--cc", cc, "--tcp-cc", "cubic", "--bw", "100M",
                        "--delay", f"{RTT_MS // 2}ms", "--queue", queue, "--duration", dur]
                r = run(rack, argv, flows_cc={"mptcp": cc, "tcp": "cubic"})
                s = r.get("summary") or {}
                r.update(case="vs-cubic", buffer=qname, queue=queue, cc=cc, rep=rep,
                         cc_mbps=s.get("mptcp_mbps"), cubic_mbps=s.get("tcp_mbps"))
                rows.append(r)
    return rows


def one_g(rack: Rack, dur: str, reps: int) -> list[dict]:
    rows = []
    for rep in range(reps):
        for loss in ("0%", "0.1%"):
            for cc in ("bbr3", "bbr"):
                r = _sweep(rack, cc, "1G", loss, dur, None, "1g", rep)
                ctr = r.get("pipe") or {}
                secs = float(dur.rstrip("s"))
                fwd = (ctr.get("tx_bytes") or 0) * 8 / secs / 1e6 if ctr else None
                late = (ctr["tx_late_ns_sum"] / ctr["tx_pkts"] / 1000) if ctr.get("tx_pkts") else None
                r["forwarded_mbps"] = round(fwd, 1) if fwd else None
                r["late_mean_us"] = round(late, 1) if late is not None else None
                cpu = r.get("forwarder_cpu_pct")
                # the forwarder was the limit when it ran out of CPU or the kernel dropped frames before it
                r["forwarder_limit"] = bool((cpu is not None and cpu >= 90) or (ctr.get("rx_kernel_drops") or 0) > 0)
                rows.append(r)
    return rows


CASES = {"single": single, "deep": deep, "pair": pair, "vs-cubic": vs_cubic, "1g": one_g}


def label(cc: str, kernel_bbr: dict | None) -> str:
    if cc == "bbr":
        v = {(e or {}).get("label") for e in (kernel_bbr or {}).values()} - {None}
        return next(iter(v)) if len(v) == 1 else "bbr (kernel: v1 here)"
    return cc


def render(rows: list[dict]) -> str:
    out = []
    by = {c: [r for r in rows if r.get("case") == c] for c in CASES}
    if by["single"] or by["deep"]:
        out += ["| case | cc | buffer | loss | % of link | queue (BDP) mean / p95 | retrans | ran as asked |",
                "|---|---|---|---|---|---|---|---|"]
        for r in by["single"] + by["deep"]:
            out.append(f"| {r['case']} | {label(r['cc'], r.get('kernel_bbr'))} | {r['queue']} | {r['loss']} | "
                       f"{r.get('share_pct')} | {r.get('queue_bdp_mean')} / {r.get('queue_bdp_p95')} | "
                       f"{r.get('retransmits')} | {r.get('ran_as_asked')} |")
    if by["pair"]:
        out += ["", "| two flows | shares % | Jain | first 2 s step with Jain >= 0.9 (s after the second started) |",
                "|---|---|---|---|"]
        for r in by["pair"]:
            out.append(f"| {label(r['cc'], r.get('kernel_bbr'))} x 2 | {r.get('shares_pct')} | {r.get('jain')} | "
                       f"{r.get('first_fair_step_s')} |")
    if by["vs-cubic"]:
        out += ["", "| against a Cubic TCP flow (as one-subflow MPTCP) | buffer | its Mbit/s | Cubic Mbit/s |",
                "|---|---|---|---|"]
        for r in by["vs-cubic"]:
            out.append(f"| {label(r['cc'], r.get('kernel_bbr'))} | {r['buffer']} ({r['queue']}) | {r.get('cc_mbps')} | "
                       f"{r.get('cubic_mbps')} |")
    if by["1g"]:
        out += ["", "| 1 Gbit/s | loss | % of link | forwarded Mbit/s | forwarder CPU % | kernel drops before it | "
                "mean lateness us | forwarder the limit? |", "|---|---|---|---|---|---|---|---|"]
        for r in by["1g"]:
            p = r.get("pipe") or {}
            out.append(f"| {label(r['cc'], r.get('kernel_bbr'))} | {r['loss']} | {r.get('share_pct')} | "
                       f"{r.get('forwarded_mbps')} | {r.get('forwarder_cpu_pct')} | {p.get('rx_kernel_drops')} | "
                       f"{r.get('late_mean_us')} | {'yes' if r.get('forwarder_limit') else 'no'} |")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", default="30s", help="length of each single-flow and against-Cubic run (default 30s)")
    ap.add_argument("--reps", type=int, default=1, help="repetitions of every case (default 1)")
    ap.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of: {', '.join(CASES)}")
    ap.add_argument("--out", type=Path, help="also write every row as JSON here")
    args = ap.parse_args()
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    bad = [c for c in cases if c not in CASES]
    if bad:
        print(f"bbr3_bench: unknown case {', '.join(bad)} (known: {', '.join(CASES)})", file=sys.stderr)
        return 2
    before = set(AVAILABLE.read_text().split())
    base = Path(tempfile.mkdtemp(prefix="ctl-bbr3-bench-"))
    rack = Rack(base)
    rows: list[dict] = []
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    try:
        for c in cases:
            got = CASES[c](rack, args.duration, args.reps)
            rows += got
            for r in got:
                state = "ok" if r.get("ok") else f"FAILED: {r.get('status')} {r.get('error') or ''}"
                print(f"{c:8s} {' '.join(r['argv'])}: {state} ({r.get('took_s')} s)", flush=True)
    finally:
        rack.close()
        shutil.rmtree(base, ignore_errors=True)
    left = set(AVAILABLE.read_text().split()) - before
    print(f"\nbbr3 benchmark, started {started}, {args.reps} repetition(s), runs of {args.duration} "
          f"(kernel {os.uname().release}; bbr is the kernel's own, BBRv1 here)\n")
    print(render(rows))
    print(f"\nregistered after the benchmark that were not before: {sorted(left) or 'nothing'}")
    if args.out:
        args.out.write_text(json.dumps({"started": started, "duration": args.duration, "reps": args.reps,
                                        "rows": rows, "left_registered": sorted(left)}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
