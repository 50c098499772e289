"""The morning report of a campaign: one self-contained HTML page and a Markdown file.

Progress, failures (class, action, error), health checks, a table per case with the mean
and the 95 % confidence interval over repetitions, the figures (a heatmap of the headline
metric over two swept parameters per value of the others, e.g. RTT x loss per congestion
control; box plots over repetitions with the mean and its CI), and a link to every run
record by relative path. Both files come from one content model through the templates of
controller.reportdoc, so they say the same; the HTML inlines its images as data: URIs and has no
scripts, so it can be mailed or copied anywhere; the Markdown refers to the same PNGs next to it,
and each figure also has a PDF beside it. Times are ISO 8601 in UTC.

Numbers come from each completed run's `summary.json`; nothing is recomputed from raw data.
A record this controller cannot read (another controller ran it, on another rack) is read
from the copy its scheduler uploaded to the lab database; it is named, not linked.

A campaign on several racks also gets the rack as a factor: every run names its rack, and a
table gives the headline metric per case and rack (mean and 95 % CI over the repetitions each
rack ran), so a difference between racks shows within a case, not mixed with the sweep.
"""
from __future__ import annotations

import json
import math
import os
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from controller import palette, plots
from controller.campaign.boundary import local_record_dir
from controller.campaign.progress import progress_of
from controller.campaign.timing import format_span
from controller.errors import RecordError
from controller.reportdoc import Document, Section, render_html, render_md
from controller.reportdoc import rel_path as _rel
from controller.results.figures import CaseData, box_figure, heatmap_figures, varied_values
from controller.results.records import encode_manifest, load_manifest
from controller.results.stats import mean_ci
from controller.safefs import open_dir, replace_file_at, sub_dir
from controller.textsafe import shown_lines

# Headline metric per scenario (a key of its summary; dotted paths reach into nested ones).
PRIMARY_METRIC = {"distinct-bottleneck": "jain_index", "rtt-loss-sweep": "throughput_mbps"}
# Default heatmap axes per scenario: (x, y, panels).
DEFAULT_HEATMAP = {"rtt-loss-sweep": ("loss", "rtt", "cc")}


def metrics_of(summary: Mapping[str, Any]) -> dict[str, float]:
    """The numbers a summary offers for tables: top-level numbers, each flow's receiver
    goodput (`<flow>_mbps`) and their sum (`total_mbps`)."""
    out: dict[str, float] = {}
    for k, v in summary.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            out[k] = float(v)
    flows = summary.get("flows")
    if isinstance(flows, list):
        total, seen = 0.0, False
        for f in flows:
            if isinstance(f, dict) and isinstance(f.get("receiver_mbps"), (int, float)) and f.get("name"):
                out[f"{f['name']}_mbps"] = float(f["receiver_mbps"])
                total += float(f["receiver_mbps"])
                seen = True
        if seen and "total_mbps" not in out:
            out["total_mbps"] = round(total, 3)
    return out


def lookup(summary: Mapping[str, Any], path: str) -> float | None:
    """A metric by name (see `metrics_of`) or by dotted path into the summary."""
    m = metrics_of(summary)
    if path in m:
        return m[path]
    cur: Any = summary
    for part in path.split("."):
        if isinstance(cur, Mapping) and part in cur:
            cur = cur[part]
        else:
            return None
    return float(cur) if isinstance(cur, (int, float)) and not isinstance(cur, bool) else None


def primary_metric(scenario: str, configured: str | None, available: Sequence[str]) -> str | None:
    if configured:
        return configured
    want = PRIMARY_METRIC.get(scenario)
    if want and want in available:
        return want
    if "total_mbps" in available:
        return "total_mbps"
    return available[0] if available else None


def heatmap_axes(scenario: str, configured: Any, varied_values: Mapping[str, Sequence[str]]
                 ) -> tuple[str, str, str | None] | None:
    """(x, y, panels) for the heatmap, or None when fewer than two parameters vary."""
    if configured is not None:
        def norm(n: str | None) -> str | None:
            return None if n is None else n.lstrip("-").replace("-", "_")
        x, y = norm(configured.x), norm(configured.y)
        assert x is not None and y is not None
        return x, y, norm(configured.panels)
    multi = [k for k, vs in varied_values.items() if len(vs) >= 2]
    default = DEFAULT_HEATMAP.get(scenario)
    if default and all(a is None or a in varied_values for a in default):
        return default
    if len(multi) < 2:
        return None
    return multi[1], multi[0], (multi[2] if len(multi) > 2 else None)


# ---- gathering ---------------------------------------------------------------------------------


def _load_summary(record_dir: Path | None) -> dict | None:
    if record_dir is None:
        return None
    try:
        s = json.loads((record_dir / "summary.json").read_text())
    except (OSError, ValueError):
        return None
    return s if isinstance(s, dict) else None


def gather(store: Any, c: Any) -> dict:
    runs = store.runs(c.num)
    attempts = store.attempts(c.num)
    by_seq: dict[int, list[Any]] = {}
    for a in attempts:
        by_seq.setdefault(a.seq, []).append(a)
    cases: dict[int, CaseData] = {}
    rack_values: dict[tuple[int, str], dict[str, list[float]]] = {}
    run_rack: dict[int, str] = {}
    configured = c.spec().report.metric
    for r in runs:
        cd = cases.setdefault(r.case_index, CaseData(r.case_index, r.varied, [], {}, []))
        cd.runs.append(r)
        if r.state != "done":
            continue
        ok = [a for a in by_seq.get(r.seq, []) if a.status == "completed"]
        if not ok:
            continue
        a = ok[-1]
        rack = a.rack or c.inventory_name
        run_rack[r.seq] = rack
        s = _load_summary(local_record_dir(a.record_dir, shared=_shared(store)))
        if s is None:
            uploaded = store.record(a.run_id)
            s = uploaded.get("summary") if uploaded else None
        cd.records.append((r.repetition, a.record_dir))
        if s is None:
            continue
        metrics = metrics_of(s)
        if configured and configured not in metrics:
            extra = lookup(s, configured)  # a dotted path into the summary
            if extra is not None:
                metrics[configured] = extra
        for k, v in metrics.items():
            cd.values.setdefault(k, []).append(v)
            rack_values.setdefault((r.case_index, rack), {}).setdefault(k, []).append(v)
    racks = sorted(set(run_rack.values()) | {a.rack for a in attempts if a.rack})
    return {"runs": runs, "attempts": attempts, "by_seq": by_seq,
            "cases": [cases[k] for k in sorted(cases)], "health": store.health_checks(c.num),
            "events": store.events(c.num), "rack_values": rack_values, "run_rack": run_rack,
            "racks": racks or [c.inventory_name]}


def _shared(store: Any) -> bool:
    return bool(getattr(store, "shared", False))


def _link(record_dir: str, base: Path, controller: str | None = None, shared: bool = False) -> tuple[str | None, str]:
    """(relative link, or None when the record is not on this machine; a note naming where it
    is). From a shared store, only a record under this controller's runs dir is linked."""
    local = local_record_dir(record_dir, shared=shared)
    if local is not None and local.exists():
        return _rel(local, base), ""
    host = (controller or "").split("@")[-1].split(":")[0]
    return None, f" (on {host})" if host else " (not on this controller)"


def rack_table(cases: list[CaseData], racks: list[str], rack_values: dict, metric: str | None
               ) -> tuple[list[str], list[list[tuple[str, str | None]]]]:
    """The rack as a factor: per case, the headline metric's mean ± CI over the repetitions each
    rack ran, and the same over all runs of each rack (that row mixes the cases each rack got)."""
    keys = list(varied_values(cases))
    head = ["case"] + keys + [f"{rk}: n, mean ± 95% CI" for rk in racks]
    rows: list[list[tuple[str, str | None]]] = []
    if metric is None:
        return head, rows
    every: dict[str, list[float]] = {rk: [] for rk in racks}
    for cd in cases:
        row: list[tuple[str, str | None]] = [(str(cd.index + 1), None)] + [(cd.varied.get(k, ""), None) for k in keys]
        for rk in racks:
            vals = rack_values.get((cd.index, rk), {}).get(metric, [])
            every[rk] += vals
            st = mean_ci(vals)
            row.append((f"{st.n}: {_fmt(st.mean)}" + (f" ± {_fmt(st.ci95, 3)}" if st.ci95 is not None else ""), None))
        rows.append(row)
    last: list[tuple[str, str | None]] = [("all", None)] + [("", None) for _k in keys]
    for rk in racks:
        st = mean_ci(every[rk])
        last.append((f"{st.n}: {_fmt(st.mean)}" + (f" ± {_fmt(st.ci95, 3)}" if st.ci95 is not None else ""), None))
    rows.append(last)
    return head, rows


@dataclass(frozen=True)
class Export:
    """What `export_records` did: records written (uploaded to the store, or copied from this
    controller's own record directory), and the completed runs whose record is in neither."""

    written: int
    completed: int                                   # runs of the campaign that are done
    copied_local: int                                # of `written`, read from this controller's runs dir
    missing: list[tuple[int, str, str]] = field(default_factory=list)   # (seq, run id, where it is)


def export_records(store: Any, c: Any, out: Path) -> Export:
    """Write each completed run's manifest and summary as `out/<run id>/` (what `ctl report`
    and other record readers need): the copy its scheduler uploaded to the lab database, else
    the record itself when it is on this controller (a local store uploads nothing).

    Every row is checked before anything is written (a run id is one safe file name, see
    `controller.campaign.boundary`), and the files are written relative to `out` without
    following a link (`controller.safefs`): a symlink or FIFO in `out` is refused, never written
    through."""
    uploaded = [r for r in store.records(c.num) if r["status"] == "completed"]
    by_id = {r["run_id"]: r for r in uploaded}
    done = [r for r in store.runs(c.num) if r.state == "done"]
    completed = {a.seq: a for a in store.attempts(c.num) if a.status == "completed"}
    local: list[tuple[str, dict, dict | None]] = []
    missing: list[tuple[int, str, str]] = []
    for r in done:
        a = completed.get(r.seq)
        if a is None or a.run_id in by_id:
            continue
        d = local_record_dir(a.record_dir, shared=_shared(store))
        manifest = None
        if d is not None:
            try:
                manifest = load_manifest(d)
            except RecordError:
                manifest = None
        if manifest is None:
            host = (a.controller or "").split("@")[-1].split(":")[0].split("/")[0]
            missing.append((r.seq, a.run_id, f"{a.record_dir}" + (f" on {host}" if host else "")))
            continue
        local.append((a.run_id, manifest, _load_summary(d)))
    items = [(r["run_id"], r["manifest"], r["summary"]) for r in uploaded] + local
    out_fd = open_dir(out, "export directory")
    try:
        for run_id, manifest, summary in items:
            shown = f"{out}/{run_id}"
            d_fd = sub_dir(out_fd, run_id, "record directory", shown)
            try:
                replace_file_at(d_fd, "manifest.json", json.dumps(encode_manifest(manifest), indent=1, default=str),
                                "record file", f"{shown}/manifest.json")
                if summary is not None:
                    replace_file_at(d_fd, "summary.json", json.dumps(summary, indent=1), "record file",
                                    f"{shown}/summary.json")
            finally:
                os.close(d_fd)
    finally:
        os.close(out_fd)
    return Export(len(items), len(done), len(local), missing)


# ---- rendering -----------------------------------------------------------------------------------

def _fmt(v: float | None, digits: int = 4) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    return f"{v:.{digits}g}"


iso = plots.iso_utc


def write_report(store: Any, c: Any, out: Path, output: plots.Output = plots.REPORT) -> tuple[Path, Path]:
    """report.html and report.md (and the figures, PNG with a PDF beside) in `out`, both from one
    content model (controller.reportdoc); text from the store is escaped (HTML) and its control
    characters shown as escapes (`controller.textsafe`) in both."""
    out_fd = open_dir(out, "report directory")
    os.close(out_fd)
    shared = _shared(store)
    spec = c.spec()
    g = gather(store, c)
    cases: list[CaseData] = g["cases"]
    p = progress_of(store, c)
    metric_names: list[str] = []
    for cd in cases:
        for k in cd.values:
            if k not in metric_names:
                metric_names.append(k)
    metric = primary_metric(c.scenario, spec.report.metric, metric_names)
    shown = ([metric] if metric else []) + [m for m in metric_names if m != metric][:5]
    written = iso(time.time())
    figures: list[tuple[Path, str]] = []
    if metric:
        what = f"campaign {c.name} (#{c.num} {c.id})"
        axes = heatmap_axes(c.scenario, spec.report.heatmap, varied_values(cases))
        if axes is not None:
            figures += heatmap_figures(cases, metric, axes, out, f"{what}: mean {palette.label(metric)}\n"
                                       f"report of {written}", output)
        figures += box_figure(cases, metric, out, f"{what}: {palette.label(metric)} over repetitions\n"
                              f"report of {written}", output)
    attempts = g["attempts"]
    failures = [a for a in attempts if a.klass and a.klass != "ok"]
    rack_s = sum((a.finished or a.started) - a.started for a in attempts)
    runs_by_seq = {r.seq: r for r in g["runs"]}
    health = g["health"]
    spreads = [h.details.get("clock_spread_s") for h in health if h.details.get("clock_spread_s") is not None]

    # ---- the content, once; rendered to HTML and Markdown by the templates ----
    overview = [
        ("campaign", f"#{c.num} {c.id}"), ("scenario", c.scenario),
        ("state", c.state + (f": {c.reason}" if c.reason else "")),
        ("runs", f"{p.done} of {p.total} done, {p.failed} failed, {p.pending} pending, {p.running} running"
                 + (f", {p.cancelled} cancelled" if p.cancelled else "")),
        ("attempts", f"{len(attempts)} ({len(failures)} not completed)"),
        ("order", spec.order + (f", seed {c.seed}" if c.seed is not None else "")),
        ("repetitions", str(spec.repetitions)), ("pause", spec.pause), ("window", spec.window or "any time"),
        ("submitted", iso(c.submitted)), ("started", iso(c.started)), ("finished", iso(c.finished)),
        ("rack time", format_span(rack_s)),
        ("racks" if len(g["racks"]) > 1 else "rack", ", ".join(g["racks"])
         + (f" (rack group {c.rack_group})" if c.rack_group else "")), ("campaign file", c.file_path),
        ("file sha256", c.file_sha256), ("report written", written),
    ]
    keys = list(varied_values(cases))
    case_head = ["case"] + keys + ["n"] + [f"{m} mean ± 95% CI" for m in shown] + ["records"]
    case_rows: list[list[Any]] = []
    for cd in cases:
        row: list[Any] = [str(cd.index + 1)] + [cd.varied.get(k, "") for k in keys] + [str(len(cd.records))]
        for m in shown:
            st = mean_ci(cd.values.get(m, []))
            # No interval from one repetition (Student's t needs n >= 2): the mean alone, said so.
            row.append(f"{_fmt(st.mean)} ± {_fmt(st.ci95, 3)}" if st.ci95 is not None else
                       f"{_fmt(st.mean)} (n = 1, no CI)" if st.n == 1 else _fmt(st.mean))
        links = []
        for rep, d in sorted(cd.records):
            link, where = _link(d, out, shared=shared)
            links.append((f"rep {rep}{where}", link))
        row.append(links or "-")
        case_rows.append(row)
    fail_rows = []
    for a in failures:
        r = runs_by_seq.get(a.seq)
        fail_rows.append([str(a.seq), " ".join(f"{k}={v}" for k, v in (r.varied if r else {}).items()),
                          str(r.repetition if r else ""), str(a.attempt), a.klass or "", a.action or "",
                          (a.error or "")[:400], (a.run_id + _link(a.record_dir, out, a.controller, shared)[1],
                                                  _link(a.record_dir, out, shared=shared)[0])])
    run_rows = []
    for r in g["runs"]:
        links = []
        for a in g["by_seq"].get(r.seq, []):
            link, where = _link(a.record_dir, out, a.controller, shared)
            links.append((f"#{a.attempt} {a.status}" + (f" on {a.rack}" if a.rack else "") + where, link))
        run_rows.append([str(r.seq), str(r.case_index + 1), " ".join(f"{k}={v}" for k, v in r.varied.items()),
                         str(r.repetition), r.state, g["run_rack"].get(r.seq, ""), links or "-"])
    health_lines = [f"{len(health)} checks, {sum(1 for h in health if not h.ok)} failed"]
    if spreads:
        health_lines.append(f"clock spread between hosts: median {statistics.median(spreads) * 1e3:.3f} ms, "
                            f"max {max(spreads) * 1e3:.3f} ms (bound {spec.health.max_clock_spread})")
    for h in health:
        if not h.ok:
            health_lines.append(f"{iso(h.t)} FAILED: " + "; ".join(h.reasons))
    events = [f"{iso(e['t'])} {e['kind']}: {e['message']}" for e in g["events"]]
    racks = g["racks"] if len(g["racks"]) > 1 else []
    rack_head, rack_rows = rack_table(cases, racks, g["rack_values"], metric) if racks else ([], [])

    doc = Document(f"Campaign {c.name} (#{c.num})", CSS + f".state-{c.state}{{font-weight:bold}}",
                   [("progress", p.done, p.failed, p.total)])
    doc.sections.append(Section("progress", "Progress", [("kv", overview)]))
    doc.sections.append(Section("figures", "Figures", [("figure", path, caption) for path, caption in figures]
                                or [("p", "No completed runs with a summary yet.")]))
    doc.sections.append(Section("cases", "Per case", [
        ("p", "Mean over completed repetitions ± half-width of the 95 % confidence interval (Student's t); "
              f"headline metric: {metric or '-'}" + (f" ({palette.label(metric)})" if metric else "")
              + ". Values from each run's summary.json."),
        ("table", case_head, case_rows)]))
    if rack_rows:
        doc.sections.append(Section("racks", "Rack as a factor", [
            ("p", f"Headline metric {metric or '-'} per case and rack: n, mean ± half-width of the 95 % confidence "
                  "interval over the repetitions each rack ran (each run ran on the rack whose scheduler claimed "
                  "it first). The last row mixes the cases each rack happened to get."),
            ("table", rack_head, rack_rows)]))
    doc.sections.append(Section("failures", f"Attempts not completed ({len(fail_rows)})", [
        ("table", ["run", "case", "rep", "attempt", "class", "action", "error", "record"], fail_rows)
        if fail_rows else ("p", "None.")]))
    doc.sections.append(Section("health", "Health checks", [("list", health_lines)]))
    doc.sections.append(Section("runs", "Runs", [
        ("table", ["seq", "case", "parameters", "rep", "state", "rack", "attempts (records)"], run_rows)]))
    doc.sections.append(Section("events", "Events", [("pre", "\n".join(events) or "(none)")]))
    doc.sections.append(Section("campaign-file", "Campaign file", [("pre", c.file_text)]))
    html_text, md_text = render_html(doc, out), render_md(doc, out)
    out_fd = open_dir(out, "report directory", create=False)
    try:
        for name, text in (("report.html", html_text), ("report.md", md_text)):
            replace_file_at(out_fd, name, shown_lines(text), "report file", str(out / name))
    finally:
        os.close(out_fd)
    return out / "report.html", out / "report.md"


CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;max-width:1200px;
padding:0 1em;color:#222}
h1{font-size:1.5em} h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}
td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left;vertical-align:top}
th{background:#f3f3f3} td.num{text-align:right;font-variant-numeric:tabular-nums}
.bar{background:#eee;height:1.1em;width:100%;max-width:600px;display:flex;border-radius:3px;overflow:hidden}
.done{background:#3a7} .failed{background:#d44}
img{max-width:100%;border:1px solid #ddd;margin:.5em 0}
pre{background:#f7f7f7;padding:.5em;overflow-x:auto;font-size:.8em}
"""
