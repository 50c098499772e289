"""A run rebuilt from its record: the `RunData` a scenario's summary saw, so a summary can be
recomputed, re-rendered or tested on recorded runs."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from controller import scenarios
from controller.inventory import Inventory
from controller.scenarios.base import RunData
from controller.telemetry.spool import iter_points
from controller.traffic.bittorrent import BtDownload
from controller.traffic.iperf3 import FlowRun, FlowSpec


def load_run(record_dir: Any) -> Any:
    """A RunData rebuilt from a run record (manifest, metrics.jsonl, raw/): what the scenario's
    summarize/render/figures saw, so a summary can be recomputed or tested on recorded runs.

    Parameters are re-parsed from the values given on the command line and the plan is made
    again from the recorded inventory (both pure), so they are exactly the run's own."""
    d = Path(record_dir)
    m = json.loads((d / "manifest.json").read_text())
    inv = Inventory.model_validate(m["inventory"])
    scenario = scenarios.get(m["scenario"])
    argv: list[str] = []
    for name, raw in (m["parameters"].get("given") or {}).items():
        argv += ["--" + name.replace("_", "-"), str(raw)]
    params, _ = scenario.parse_args(argv)
    plan = scenario.plan(params, inv)

    def raw(host: str, name: str) -> str:
        p = d / "raw" / host / name
        return p.read_text() if p.exists() else ""
    flows: list[Any] = []
    for f in m.get("flows") or []:
        if "leecher_lines" in f:
            flows.append(BtDownload.from_json(f))
            continue
        spec = FlowSpec(**f["spec"])
        r = FlowRun(spec, tuple(f.get("client_argv") or ()), tuple(f.get("server_argv") or ()),
                    client_started=f.get("client_started"), client_status=f.get("client_status"),
                    server_status=f.get("server_status"), error=f.get("error"))
        r.client_json = raw(spec.client, f"iperf3-{spec.name}.client.json")
        r.server_json = raw(spec.server, f"iperf3-{spec.name}.server.json")
        flows.append(r)
    points = list(iter_points(d / "metrics.jsonl")) if (d / "metrics.jsonl").exists() else []
    nst = {}
    mon = {}
    for h in plan.mptcp_hosts:
        before, after = raw(h, "nstat-before.txt"), raw(h, "nstat-after.txt")
        if before and after:
            nst[h] = (before, after)
        text = raw(h, "mptcp-monitor.txt")
        if text:
            mon[h] = text.rstrip("\n")
    tw = m.get("traffic_window") or {}
    host_sysctls = {h: dict(((e.get("before") or {}).get("sysctls") or {}))
                    for h, e in (m.get("endpoints") or {}).items()}
    return RunData(inv, params, plan, flows, points, nst, mon, (tw.get("start", 0.0), tw.get("end", 0.0)), d,
                   host_sysctls)
