"""Read what a reproduction's campaigns measured: every completed run's `summary.json`, turned into
the cells of the papers' tables (cells.Cell), plus the facts the report explains deviations
with (kernels, the BPF objects that ran, per-campaign progress, the latest field runs).

Numbers come from the summaries exactly as the scenarios wrote them; nothing is recomputed from
raw data here. `extract` (pure) maps one summary to its cells' values.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from controller.campaign.boundary import local_record_dir, record_roots
from controller.campaign.progress import progress_of
from controller.errors import CtlError, RecordError
from controller.reproduce.cells import Cells, add_value, build_cells
from controller.reproduce.hypotheses import EXPERIMENTS, Experiment, deviation_column
from controller.reproduce.papers import PARALLEL_SHARES, paper_value, row_label
from controller.reproduce.record import Reproduction
from controller.results.records import load_manifest
from controller.run.replay import summarize_record_windows
from controller.safefs import private_dir, write_private
from nodes.congestion.catalog import bbr_version_label

# A run's summaries over windows of its traffic (START:END each), or None for a window that cannot
# be computed.
WindowSummary = Callable[[Path, list[str]], "dict[str, dict | None]"]

Acc = dict[tuple, dict[str, Any]]


# ---- one summary -> cell values (pure) -----------------------------------------------------------

def _mcubic_t1(acc: Acc, varied: Mapping[str, str], s: Mapping[str, Any]) -> None:
    row, col = row_label(varied["cc"]), varied["link2"]
    add_value(acc, ("mcubic", "Table 1", row, col, "jain_index"), s.get("jain_index"),
              paper_value=paper_value("Table 1", row, col))


def _mcubic_t2(acc: Acc, varied: Mapping[str, str], s: Mapping[str, Any]) -> None:
    row, col = row_label(varied["cc"]), varied["delay"]
    add_value(acc, ("mcubic", "Table 2", row, col, "ratio"), s.get("ratio"), paper_value=paper_value("Table 2", row, col))


def _mcubic_t3(acc: Acc, varied: Mapping[str, str], s: Mapping[str, Any]) -> None:
    d1 = str((s.get("parameters") or {}).get("delay1", "100ms")).removesuffix("ms")
    row, col = row_label(varied["cc"]), f"{d1}:{varied['delay2']}"
    add_value(acc, ("mcubic", "Table 3", row, col, "ratio"), s.get("ratio"), paper_value=paper_value("Table 3", row, col))


def _bbrv3(acc: Acc, varied: Mapping[str, str], s: Mapping[str, Any]) -> None:
    case, par = s.get("case") or {}, s.get("parameters") or {}
    col = f"RTT {case.get('rtt')}, loss {case.get('loss')}"
    facts = {"rtt_us": round(float(par.get("rtt_ms", 0)) * 1000), "loss": float(par.get("loss_pct", 0)) / 100,
             "bottleneck_mbps": par.get("bottleneck_mbps"), "bridge_forward_mbps": s.get("bridge_forward_mbps"),
             "retransmits": s.get("retransmits"), "kernel_bbr": s.get("kernel_bbr"),
             "forwarder_kernel_drops": (s.get("forwarder") or {}).get("kernel_drops"),
             "forwarder_cpu_pct": (s.get("forwarder") or {}).get("cpu_pct")}
    add_value(acc, ("bbrv3", "Fig. 1-2", str(case.get("cc")), col, "share_pct"), s.get("share_pct"), unit="%",
              facts=facts)
    add_value(acc, ("bbrv3", "Fig. 1-2", str(case.get("cc")), col, "throughput_mbps"), s.get("throughput_mbps"),
              unit="Mbit/s", facts=facts)


def _parallel(acc: Acc, varied: Mapping[str, str], s: Mapping[str, Any]) -> None:
    par = s.get("parameters") or {}
    paper = PARALLEL_SHARES.get(int(par.get("streams", 0))) if par.get("base_streams") == 64 else None
    diag = s.get("diagnostics") or {}
    bn = diag.get("bottleneck") or {}
    for i, h in enumerate(s.get("hosts") or []):
        pc = h.get("per_connection") or {}
        add_value(acc, ("parallel", "Fig. 8", h["host"], s["case"], "share_pct"), h.get("measured_share_pct"),
                  paper_value=paper[i] if paper else None, model_value=h.get("predicted_share_pct"), unit="%",
                  facts={"setup_s": h.get("setup_s"), "starved": pc.get("starved"),
                         "connections": pc.get("connections"), "jain_connections": pc.get("jain"),
                         "packets_per_connection": diag.get("packets_per_connection"),
                         "drop_pct": bn.get("drop_pct"),
                         "alive_model_pct": (diag.get("alive_model_share_pct") or {}).get(h["host"])})


def _mptcp_bt(acc: Acc, varied: Mapping[str, str], s: Mapping[str, Any]) -> None:
    if s.get("step") == "iperf3":
        for t in s.get("tests") or []:
            add_value(acc, ("mptcp-bt", "Fig. 2", t["protocol"].upper(), t["initial"], "mbps"), t.get("receiver_mbps"),
                      unit="Mbit/s", facts={"subflows_per_link": t.get("subflows_per_link")})
        return
    tracker = (s.get("parameters") or {}).get("tracker", varied.get("tracker", "?"))
    for d in s.get("downloads") or []:
        add_value(acc, ("mptcp-bt", "Fig. 3", d["protocol"].upper(), f"tracker {tracker}", "mbps"),
                  d.get("throughput_mbps") if d.get("complete") else None, unit="Mbit/s",
                  facts={"first_path": d.get("first_path") or [], "subflows_per_link": d.get("subflows_per_link"),
                         "complete": d.get("complete")})


EXTRACTORS: dict[str, Callable[[Acc, Mapping[str, str], Mapping[str, Any]], None]] = {
    "mcubic-table1": _mcubic_t1, "mcubic-table2": _mcubic_t2, "mcubic-table3": _mcubic_t3, "bbrv3": _bbrv3,
    "parallel": _parallel, "mptcp-bt": _mptcp_bt}


def extract(acc: Acc, key: str, varied: Mapping[str, str], summary: Mapping[str, Any]) -> None:
    """Add one completed run's numbers to the cells it fills (pure)."""
    fn = EXTRACTORS.get(key)
    if fn is not None and summary.get("valid", True):
        fn(acc, varied, summary)


# What a deviation cell keeps of each run besides its value: the run it came from (paired effects
# match windows of one run) and the senders' slow-start and loss counters where the summary has them.
_DEVIATION_FACTS = ("sender_counters",)


def extract_deviation(acc: Acc, e: Experiment, varied: Mapping[str, str], summary: Mapping[str, Any], run: str,
                      windowed: Mapping[str, Mapping[str, Any] | None] | None = None) -> None:
    """Add one completed run of a deviation experiment to its cells (pure): one value per window
    (`windowed`: window -> that window's summary), or the whole run's."""
    if not summary.get("valid", True):
        return
    row = e.row_labels.get(varied.get(e.row, ""), varied.get(e.row, ""))
    sources: list[tuple[str | None, Mapping[str, Any] | None]] = (
        [(w, (windowed or {}).get(w)) for w in e.windows] if e.windows else [(None, summary)])
    readers = [(e.metric, e.value_of or (lambda s: s.get(e.metric))), *e.extra_metrics.items()]
    for w, s in sources:
        for metric, read in readers:
            value = read(s or {})
            if value is None:
                continue
            facts: dict[str, Any] = {"run": run}
            for k in _DEVIATION_FACTS:
                if k in (s or {}):
                    facts[k] = s[k]      # type: ignore[index]
            add_value(acc, (e.design.paper, e.key, row, deviation_column(e, varied, w), metric), value, facts=facts)


# ---- the store and the records (I/O) -------------------------------------------------------------

@dataclass
class CampaignData:
    key: str
    paper: str
    title: str
    row: Any                                   # CampaignRow
    progress: Any                              # campaign.progress.Progress
    runs: list[tuple[dict[str, str], str, dict]] = field(default_factory=list)   # (varied, record dir, summary)
    failures: list[Any] = field(default_factory=list)                            # attempts not completed
    replaces: list[dict] = field(default_factory=list)    # cancelled campaigns this one was queued again for


@dataclass
class Measured:
    cells: Cells
    campaigns: list[CampaignData]
    kernels: dict[str, list[str]]              # kernel release -> run ids
    bpf: dict[str, dict]                       # algorithm -> {object_sha256, source, runs}
    field_runs: list[dict]
    commits: dict[str, list[str]] = field(default_factory=dict)   # ctl commit that ran them -> run ids


def _load_json(path: Path) -> dict | None:
    try:
        d = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return d if isinstance(d, dict) else None


def _load_manifest(record: Path) -> dict | None:
    try:
        return load_manifest(record)
    except RecordError:
        return None


def completed_runs(store: Any, c: Any, roots: list[Path] | None = None) -> Iterator[tuple[dict[str, str], str, dict]]:
    """(varied parameters, record dir, summary) of every run of a campaign that completed. A record
    dir comes from a store row: it is read only where this controller keeps records (`roots`,
    default its runs dirs; campaign.boundary), never where a row of the lab database points."""
    attempts: dict[int, list[Any]] = {}
    for a in store.attempts(c.num):
        attempts.setdefault(a.seq, []).append(a)
    for r in store.runs(c.num):
        if r.state != "done":
            continue
        ok = [a for a in attempts.get(r.seq, []) if a.status == "completed"]
        if not ok:
            continue
        d = local_record_dir(ok[-1].record_dir, shared=bool(getattr(store, "shared", False)), roots=roots)
        s = _load_json(d / "summary.json") if d is not None else None
        if s is not None:
            yield r.varied, str(d), s


def with_kernel_bbr(summary: Mapping[str, Any], manifest: Mapping[str, Any]) -> dict:
    """The summary with which BBR the sender's kernel calls `bbr` ("v1", "v3"), as its run recorded
    (nodes.congestion.catalog: /sys/module/tcp_bbr/version); unchanged for a run that did not use it."""
    kb = (manifest.get("congestion") or {}).get("kernel_bbr") or {}
    versions = sorted({bbr_version_label(e.get("version")) for e in kb.values() if isinstance(e, dict)})
    return {**summary, "kernel_bbr": "/".join(versions)} if versions else dict(summary)


def _kernel_of(manifest: Mapping[str, Any]) -> str | None:
    for h in (manifest.get("hosts") or {}).values():
        if h.get("role") == "endpoint":
            out = ((h.get("metadata") or {}).get("uname -a") or {}).get("stdout") or ""
            parts = out.split()
            if len(parts) >= 3:
                return parts[2]
    return None


def latest_field_runs(runs_root: Path, limit: int = 1) -> list[dict]:
    """The latest field run records with a report (`ctl field report` wrote summary.json)."""
    if not runs_root.is_dir():
        return []
    found = []
    for d in sorted(runs_root.iterdir(), reverse=True):
        m = _load_manifest(d) if d.is_dir() else None
        if not m or m.get("scenario") != "field":
            continue
        s = _load_json(d / "summary.json")
        if s and s.get("table1"):
            found.append({"run": d.name, "record": str(d), "status": m.get("status"), "table1": s["table1"]})
            if len(found) >= limit:
                break
    return found


def record_window(record: Path, windows: list[str]) -> dict[str, dict | None]:
    """A run's summaries over `windows` of its traffic, recomputed from its record, read once (None
    for all when the record cannot give them: the report then shows the windows as not measured
    for that run)."""
    try:
        return dict(zip(windows, summarize_record_windows(record, windows), strict=True))
    except (CtlError, OSError, ValueError):
        return {w: None for w in windows}


def windows_of(r: Reproduction, record: Path, e: Experiment, window_summary: WindowSummary | None
               ) -> dict[str, dict | None]:
    """Each window's summary of one run, cached beside the reproduction's record (a 600 s run's samples
    are read once, not at every report)."""
    cache = r.dir / "windows"
    paths = {w: cache / f"{record.name}.{w.replace(':', '-')}.json" for w in e.windows}
    out: dict[str, dict | None] = {w: _load_json(p) for w, p in paths.items()}
    missing = [w for w, got in out.items() if got is None]
    if missing and window_summary is not None:
        for w, got in window_summary(record, missing).items():
            out[w] = got
            if got is not None:
                private_dir(cache, "reproduction window cache")
                write_private(paths[w], json.dumps(got), "window summary", mode=0o644)
    return out


def collect(store: Any, r: Reproduction, window_summary: WindowSummary | None = record_window) -> Measured:
    acc: Acc = {}
    camps: list[CampaignData] = []
    kernels: dict[str, list[str]] = {}
    commits: dict[str, list[str]] = {}
    bpf: dict[str, dict] = {}
    for entry in r.campaigns:
        c = store.find(entry["id"])
        cd = CampaignData(entry["key"], entry["paper"], entry["title"], c, progress_of(store, c),
                          replaces=list(entry.get("replaces") or []))
        cd.failures = [a for a in store.attempts(c.num) if a.klass and a.klass != "ok"]
        exp = EXPERIMENTS.get(entry["key"])
        for varied, record, s in completed_runs(store, c, record_roots([Path(r.runs_root)])):
            cd.runs.append((varied, record, s))
            if exp is not None:
                windowed = windows_of(r, Path(record), exp, window_summary) if exp.windows else None
                extract_deviation(acc, exp, varied, s, Path(record).name, windowed)
            m = _load_manifest(Path(record)) or {}
            if exp is None:
                extract(acc, entry["key"], varied, with_kernel_bbr(s, m) if entry["key"] == "bbrv3" else s)
            commits.setdefault(str((m.get("controller") or {}).get("commit") or "unknown"),
                               []).append(Path(record).name)
            k = _kernel_of(m)
            if k:
                kernels.setdefault(k, []).append(Path(record).name)
            for name, a in ((m.get("congestion") or {}).get("algorithms") or {}).items():
                e = bpf.setdefault(name, {"object_sha256": set(), "source": a.get("source"), "runs": 0})
                e["object_sha256"].add(a.get("object_sha256"))
                e["runs"] += 1
        camps.append(cd)
    for e in bpf.values():
        e["object_sha256"] = sorted(x for x in e["object_sha256"] if x)
    return Measured(build_cells(acc), camps, kernels, bpf, latest_field_runs(Path(r.runs_root)), commits)
