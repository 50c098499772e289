"""A run rebuilt from its record: the `RunData` a scenario's summary saw, so a summary can be
recomputed, re-rendered or tested on recorded runs -- over the whole traffic window, or over
a window of it (`summarize_record(DIR, "45s:600s")`, `ctl runs show RUN --window 45s:600s`).
Nothing here writes into the record."""
from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, Sequence

from controller import scenarios
from controller.errors import UsageError
from controller.inventory import Inventory
from controller.results.hystart import attach_own_hystart
from controller.results.records import load_manifest
from controller.results.window import TrafficWindow, parse_window, window_of
from controller.run.neighbours import counter_hosts
from controller.scenarios.base import RunData, Scenario
from controller.telemetry.spool import iter_points
from controller.traffic.bittorrent import BtDownload
from controller.traffic.iperf3 import FlowRun, FlowSpec

# A run whose summary is the scenario's own (a run cut short has a partial one, kept as it was).
SUMMARIZED_STATUSES = ("completed", "invalid")
# What a window may be given as: `START:END` text, (start_s, end_s) seconds (None: the
# traffic's start or end), or a TrafficWindow already parsed.
WindowArg = str | tuple[float | None, float | None] | TrafficWindow | None


def load_run(record_dir: Any) -> Any:
    """A RunData rebuilt from a run record (manifest, metrics.jsonl, raw/): what the scenario's
    summarize/render/figures saw, so a summary can be recomputed or tested on recorded runs.

    Parameters are re-parsed from the values given on the command line and the plan is made
    again from the recorded inventory (both pure), so they are exactly the run's own."""
    d = Path(record_dir)
    m = load_manifest(d)
    inv = Inventory.model_validate(m["inventory"])
    scenario = scenarios.get(m["scenario"])
    argv: list[str] = []
    kinds = {p.name: p.type for p in scenario.all_params()}
    for name, raw in (m["parameters"].get("given") or {}).items():
        argv += ["--" + name.replace("_", "-"), recorded_value(kinds.get(name.replace("-", "_")), raw)]
    params, _ = scenario.parse_args(argv, inv)
    plan = scenario.plan(params, inv)

    def raw(host: str, name: str) -> str:
        p = d / "raw" / host / name
        return p.read_text() if p.is_file() else ""
    flows: list[Any] = []
    for f in m.get("flows") or []:
        if "leecher_lines" in f:
            flows.append(BtDownload.from_json(f))
            continue
        spec = FlowSpec(**f["spec"])
        r = FlowRun(spec, tuple(f.get("client_argv") or ()), tuple(f.get("server_argv") or ()),
                    client_spawned=f.get("client_spawned"), client_started=f.get("client_started"),
                    client_exited=f.get("client_exited"), client_status=f.get("client_status"),
                    server_status=f.get("server_status"), error=f.get("error"))
        r.client_json = raw(spec.client, f"iperf3-{spec.name}.client.json")
        r.server_json = raw(spec.server, f"iperf3-{spec.name}.server.json")
        flows.append(r)
    points = list(iter_points(d / "metrics.jsonl")) if (d / "metrics.jsonl").exists() else []
    # Counters of every host that has both readings: the MPTCP hosts, and since ctl reads them on
    # every host of the flows, the senders and receivers too (older records: MPTCP hosts only).
    nst = {}
    for h in sorted(set(plan.mptcp_hosts) | counter_hosts(plan)):
        before, after = raw(h, "nstat-before.txt"), raw(h, "nstat-after.txt")
        if before and after:
            nst[h] = (before, after)
    mon = {}
    for h in plan.mptcp_hosts:
        text = raw(h, "mptcp-monitor.txt")
        if text:
            mon[h] = text.rstrip("\n")
    tw = m.get("traffic_window") or {}
    host_sysctls = {h: dict(((e.get("before") or {}).get("sysctls") or {}))
                    for h, e in (m.get("endpoints") or {}).items()}
    return RunData(inv, params, plan, flows, points, nst, mon, (tw.get("start", 0.0), tw.get("end", 0.0)), d,
                   host_sysctls)


def recorded_value(kind: str | None, raw: Any) -> str:
    """A parameter as a record gave it, for the parser of this ctl. A loss written as a bare number
    (`--loss 0.05`) was a fraction before issue 22 made it ambiguous and refused: a record made
    then is read as it ran, the number written as the fraction it meant (5e-2)."""
    text = str(raw).strip()
    if kind == "probability" and text and not text.endswith("%"):
        try:
            value = float(text)
        except ValueError:
            return text
        if value != 0 and "e" not in text.lower():
            return f"{text}e0"          # the same digits, as the fraction they meant
    return text


def windowable(scenario: Scenario) -> bool:
    """Whether the scenario's summary can be computed over a window of the traffic: its
    `summarize` takes a `window` (controller.results.window.TrafficWindow)."""
    try:
        return "window" in inspect.signature(scenario.summarize).parameters
    except (TypeError, ValueError):
        return False


def traffic_seconds(data: Any) -> float:
    lo, hi = data.window
    return max(0.0, hi - lo) if lo else 0.0


def resolve_window(window: WindowArg, traffic_s: float) -> TrafficWindow | None:
    """A window argument of summarize_run/summarize_record, checked against the run's traffic."""
    if window is None or isinstance(window, TrafficWindow):
        if isinstance(window, TrafficWindow) and abs(window.traffic_s - traffic_s) > 1e-6:
            raise UsageError(f"--window: made for {window.traffic_s:.3f} s of traffic, the run's lasted "
                             f"{traffic_s:.3f} s")
        return window
    if isinstance(window, str):
        return parse_window(window, traffic_s)
    return window_of(window, traffic_s)


def summarize_run(scenario: Scenario, data: Any, window: WindowArg = None) -> dict:
    """The scenario's summary of a loaded run (load_run), over its traffic window or over
    `window` of it. A scenario whose summary is not defined over a window refuses one
    (UsageError, exit 2), naming those that are."""
    w = resolve_window(window, traffic_seconds(data))
    if w is None:
        return scenario.summarize(data)
    if not windowable(scenario):
        able = [n for n in scenarios.available() if windowable(scenarios.get(n))]
        raise UsageError(f"--window: the {scenario.name} summary is not defined over a part of the traffic "
                         f"(scenarios that are: {', '.join(able)})")
    return scenario.summarize(data, window=w)


def summarize_record(record_dir: Any, window: WindowArg = None) -> dict:
    """The summary of the run recorded in `record_dir`, recomputed from the record by this ctl,
    over the whole traffic window (window=None: the numbers of the run's own summary) or over
    `window`: `"45s:600s"`, `":45s"`, `"300s:"`, or (start_s, end_s) seconds from the traffic's
    start (None for its start or end). The summary then carries `window: {start_s, end_s,
    traffic_s, of: "traffic"}`, and its definitions say which numbers are over the window.

    Reads the record, never writes it. UsageError (exit 2) for a bad window or a run whose
    traffic did not complete; RecordError for a directory that is not a readable record."""
    d = Path(record_dir)
    m = load_manifest(d)
    status = m.get("status")
    if status not in SUMMARIZED_STATUSES:
        raise UsageError(f"run {m.get('run_id') or d.name} ended {status!r}: only a run whose traffic completed "
                         f"is summarized again (its own summary.json says what was measured)")
    data = load_run(d)
    return attach_own_hystart(summarize_run(scenarios.get(m["scenario"]), data, window), m.get("congestion"))


def summarize_record_windows(record_dir: Any, windows: Sequence[WindowArg]) -> list[dict]:
    """summarize_record for several windows of one run, its record read once (a 600 s run's
    metrics are about 100 MB): one summary per window, in order. Errors as summarize_record."""
    d = Path(record_dir)
    m = load_manifest(d)
    if m.get("status") not in SUMMARIZED_STATUSES:
        raise UsageError(f"run {m.get('run_id') or d.name} ended {m.get('status')!r}: only a run whose traffic "
                         f"completed is summarized again (its own summary.json says what was measured)")
    data = load_run(d)
    scenario = scenarios.get(m["scenario"])
    return [attach_own_hystart(summarize_run(scenario, data, w), m.get("congestion")) for w in windows]
