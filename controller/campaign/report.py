"""The morning report of a campaign: one self-contained HTML page and a Markdown file.

Progress, failures (class, action, error), health checks, a table per case with the mean
and the 95 % confidence interval over repetitions, the figures (a heatmap of the headline
metric over two swept parameters per value of the others, e.g. RTT x loss per congestion
control; box plots over repetitions with the mean and its CI), and a link to every run
record by relative path. The HTML inlines its images as data: URIs and has no scripts, so
it can be mailed or copied anywhere; the Markdown refers to the same PNGs next to it.

Numbers come from each completed run's `summary.json`; nothing is recomputed from raw data.
A record this controller cannot read (another controller ran it, on another rack) is read
from the copy its scheduler uploaded to the lab database; it is named, not linked.

A campaign on several racks also gets the rack as a factor: every run names its rack, and a
table gives the headline metric per case and rack (mean and 95 % CI over the repetitions each
rack ran), so a difference between racks shows within a case, not mixed with the sweep.
"""
from __future__ import annotations

import base64
import html
import json
import math
import os
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from controller.campaign.boundary import local_record_dir
from controller.campaign.progress import progress_of
from controller.campaign.timing import format_span
from controller.errors import RecordError
from controller.results.figures import CaseData, box_figure, heatmap_figures, varied_values
from controller.results.records import load_manifest
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
                replace_file_at(d_fd, "manifest.json", json.dumps(manifest, indent=1, default=str), "record file",
                                f"{shown}/manifest.json")
                if summary is not None:
                    replace_file_at(d_fd, "summary.json", json.dumps(summary, indent=1), "record file",
                                    f"{shown}/summary.json")
            finally:
                os.close(d_fd)
    finally:
        os.close(out_fd)
    return Export(len(items), len(done), len(local), missing)


# ---- figures -----------------------------------------------------------------------------------


# ---- rendering -----------------------------------------------------------------------------------

def _fmt(v: float | None, digits: int = 4) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    return f"{v:.{digits}g}"


def _when(t: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) if t else "-"


def _rel(target: str | Path, base: Path) -> str:
    return os.path.relpath(Path(target).resolve(), base.resolve()).replace(os.sep, "/")


def write_report(store: Any, c: Any, out: Path) -> tuple[Path, Path]:
    """report.html and report.md (and the figures) in `out`; text from the store is escaped
    (HTML) and its control characters shown as escapes (`controller.textsafe`) in both."""
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
    figures: list[tuple[Path, str]] = []
    if metric:
        axes = heatmap_axes(c.scenario, spec.report.heatmap, varied_values(cases))
        if axes is not None:
            figures += heatmap_figures(cases, metric, axes, out, f"{c.name}: mean {metric}")
        figures += box_figure(cases, metric, out, f"{c.name}: {metric} over repetitions")
    attempts = g["attempts"]
    failures = [a for a in attempts if a.klass and a.klass != "ok"]
    rack_s = sum((a.finished or a.started) - a.started for a in attempts)
    runs_by_seq = {r.seq: r for r in g["runs"]}
    health = g["health"]
    spreads = [h.details.get("clock_spread_s") for h in health if h.details.get("clock_spread_s") is not None]

    # ---- the content, once, as rows; rendered to HTML and Markdown below ----
    overview = [
        ("campaign", f"#{c.num} {c.id}"), ("scenario", c.scenario),
        ("state", c.state + (f": {c.reason}" if c.reason else "")),
        ("runs", f"{p.done} of {p.total} done, {p.failed} failed, {p.pending} pending, {p.running} running"
                 + (f", {p.cancelled} cancelled" if p.cancelled else "")),
        ("attempts", f"{len(attempts)} ({len(failures)} not completed)"),
        ("order", spec.order + (f", seed {c.seed}" if c.seed is not None else "")),
        ("repetitions", str(spec.repetitions)), ("pause", spec.pause), ("window", spec.window or "any time"),
        ("submitted", _when(c.submitted)), ("started", _when(c.started)), ("finished", _when(c.finished)),
        ("rack time", format_span(rack_s)),
        ("racks" if len(g["racks"]) > 1 else "rack", ", ".join(g["racks"])
         + (f" (rack group {c.rack_group})" if c.rack_group else "")), ("campaign file", c.file_path),
        ("file sha256", c.file_sha256), ("report written", _when(time.time())),
    ]
    case_head = ["case"] + list(varied_values(cases)) + ["n"] + [f"{m} mean ± 95% CI" for m in shown] + ["records"]
    case_rows: list[list[tuple[str, str | None]]] = []  # (text, link)
    for cd in cases:
        row: list[tuple[str, str | None]] = [(str(cd.index + 1), None)]
        row += [(cd.varied.get(k, ""), None) for k in varied_values(cases)]
        row.append((str(len(cd.records)), None))
        for m in shown:
            st = mean_ci(cd.values.get(m, []))
            # No interval from one repetition (Student's t needs n >= 2): the mean alone, said so.
            row.append((f"{_fmt(st.mean)} ± {_fmt(st.ci95, 3)}" if st.ci95 is not None else
                        f"{_fmt(st.mean)} (n = 1, no CI)" if st.n == 1 else _fmt(st.mean), None))
        for rep, d in sorted(cd.records):
            link, where = _link(d, out, shared=shared)
            row.append((f"rep {rep}{where}", link))
        case_rows.append(row)
    fail_rows = []
    for a in failures:
        r = runs_by_seq.get(a.seq)
        fail_rows.append([(str(a.seq), None), (" ".join(f"{k}={v}" for k, v in (r.varied if r else {}).items()), None),
                          (str(r.repetition if r else ""), None), (str(a.attempt), None), (a.klass or "", None),
                          (a.action or "", None), ((a.error or "")[:400], None),
                          (a.run_id + _link(a.record_dir, out, a.controller, shared)[1],
                           _link(a.record_dir, out, shared=shared)[0])])
    run_rows = []
    for r in g["runs"]:
        links = []
        for a in g["by_seq"].get(r.seq, []):
            link, where = _link(a.record_dir, out, a.controller, shared)
            links.append((f"#{a.attempt} {a.status}" + (f" on {a.rack}" if a.rack else "") + where, link))
        run_rows.append([(str(r.seq), None), (str(r.case_index + 1), None),
                         (" ".join(f"{k}={v}" for k, v in r.varied.items()), None), (str(r.repetition), None),
                         (r.state, None), (g["run_rack"].get(r.seq, ""), None)] + links)
    health_lines = [f"{len(health)} checks, {sum(1 for h in health if not h.ok)} failed"]
    if spreads:
        health_lines.append(f"clock spread between hosts: median {statistics.median(spreads) * 1e3:.3f} ms, "
                            f"max {max(spreads) * 1e3:.3f} ms (bound {spec.health.max_clock_spread})")
    for h in health:
        if not h.ok:
            health_lines.append(f"{_when(h.t)} FAILED: " + "; ".join(h.reasons))
    events = [f"{_when(e['t'])} {e['kind']}: {e['message']}" for e in g["events"]]
    racks = g["racks"] if len(g["racks"]) > 1 else []
    rack_head, rack_rows = rack_table(cases, racks, g["rack_values"], metric) if racks else ([], [])

    html_text = _html(c, overview, figures, case_head, case_rows, fail_rows, run_rows, health_lines, events,
                      metric, p, rack_head, rack_rows)
    md_text = _markdown(c, overview, figures, case_head, case_rows, fail_rows, run_rows, health_lines, events,
                        metric, out, rack_head, rack_rows)
    out_fd = open_dir(out, "report directory", create=False)
    try:
        for name, text in (("report.html", html_text), ("report.md", md_text)):
            replace_file_at(out_fd, name, shown_lines(text), "report file", str(out / name))
    finally:
        os.close(out_fd)
    return out / "report.html", out / "report.md"


_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;max-width:1200px;
padding:0 1em;color:#222}
h1{font-size:1.5em} h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}
td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left;vertical-align:top}
th{background:#f3f3f3} td.num{text-align:right;font-variant-numeric:tabular-nums}
.bar{background:#eee;height:1.1em;width:100%;max-width:600px;display:flex;border-radius:3px;overflow:hidden}
.done{background:#3a7} .failed{background:#d44} .state-paused,.state-cancelled{color:#b50;font-weight:bold}
img{max-width:100%;border:1px solid #ddd;margin:.5em 0}
pre{background:#f7f7f7;padding:.5em;overflow-x:auto;font-size:.8em}
"""


def _cell(text: str, link: str | None) -> str:
    t = html.escape(text)
    return f'<a href="{html.escape(link)}">{t}</a>' if link else t


def _table_html(head: list[str], rows: list[list[tuple[str, str | None]]]) -> str:
    width = max([len(head)] + [len(r) for r in rows])
    out = ["<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head)
           + ("<th></th>" * (width - len(head))) + "</tr>"]
    for r in rows:
        out.append("<tr>" + "".join(f"<td>{_cell(t, l)}</td>" for t, l in r) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def _html(c: Any, overview: list, figures: list, case_head: list, case_rows: list, fail_rows: list, run_rows: list,
          health_lines: list, events: list, metric: str | None, p: Any, rack_head: list, rack_rows: list) -> str:
    done_pct = 100.0 * p.done / p.total if p.total else 0.0
    fail_pct = 100.0 * p.failed / p.total if p.total else 0.0
    parts = [f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Campaign {html.escape(c.id)}"
             f"</title><style>{_CSS}</style></head><body>",
             f"<h1>Campaign {html.escape(c.name)} <small>#{c.num}</small></h1>",
             f"<div class=\"bar\" title=\"{p.done} done, {p.failed} failed of {p.total}\">"
             f"<div class=\"done\" style=\"width:{done_pct:.2f}%\"></div>"
             f"<div class=\"failed\" style=\"width:{fail_pct:.2f}%\"></div></div>",
             "<h2>Progress</h2><table>"]
    for k, v in overview:
        cls = f' class="state-{html.escape(c.state)}"' if k == "state" else ""
        parts.append(f"<tr><th>{html.escape(k)}</th><td{cls}>{html.escape(str(v))}</td></tr>")
    parts.append("</table>")
    parts.append("<h2>Figures</h2>")
    if not figures:
        parts.append("<p>No completed runs with a summary yet.</p>")
    for path, caption in figures:
        data = base64.b64encode(path.read_bytes()).decode()
        parts.append(f"<figure><img src=\"data:image/png;base64,{data}\" alt=\"{html.escape(caption)}\" "
                     f"id=\"{html.escape(path.stem)}\"><figcaption>{html.escape(caption)}</figcaption></figure>")
    parts.append(f"<h2>Per case</h2><p>Mean over completed repetitions ± half-width of the 95 % confidence "
                 f"interval (Student's t); headline metric: <b>{html.escape(metric or '-')}</b>. "
                 f"Values from each run's <code>summary.json</code>.</p>")
    parts.append(_table_html(case_head, case_rows))
    if rack_rows:
        parts.append(f"<h2>Rack as a factor</h2><p>Headline metric <b>{html.escape(metric or '-')}</b> per case and "
                     "rack: n, mean ± half-width of the 95 % confidence interval over the repetitions each rack ran "
                     "(each run ran on the rack whose scheduler claimed it first). The last row mixes the cases each "
                     "rack happened to get.</p>")
        parts.append(_table_html(rack_head, rack_rows))
    parts.append(f"<h2>Attempts not completed ({len(fail_rows)})</h2>")
    parts.append(_table_html(["run", "case", "rep", "attempt", "class", "action", "error", "record"], fail_rows)
                 if fail_rows else "<p>None.</p>")
    parts.append("<h2>Health checks</h2><ul>" + "".join(f"<li>{html.escape(l)}</li>" for l in health_lines) + "</ul>")
    parts.append("<h2>Runs</h2>")
    parts.append(_table_html(["seq", "case", "parameters", "rep", "state", "rack", "attempts (records)"], run_rows))
    parts.append("<h2>Events</h2><pre>" + html.escape("\n".join(events)) + "</pre>")
    parts.append("<h2>Campaign file</h2><pre>" + html.escape(c.file_text) + "</pre>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _md_cell(text: str, link: str | None) -> str:
    t = text.replace("|", "\\|").replace("\n", " ")
    return f"[{t}]({link})" if link else t


def _table_md(head: list[str], rows: list[list[tuple[str, str | None]]]) -> str:
    width = max([len(head)] + [len(r) for r in rows])
    h = head + [""] * (width - len(head))
    out = ["| " + " | ".join(h) + " |", "|" + "---|" * width]
    for r in rows:
        cells = [_md_cell(t, l) for t, l in r] + [""] * (width - len(r))
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def _markdown(c: Any, overview: list, figures: list, case_head: list, case_rows: list, fail_rows: list,
              run_rows: list, health_lines: list, events: list, metric: str | None, out: Path, rack_head: list,
              rack_rows: list) -> str:
    parts = [f"# Campaign {c.name} (#{c.num})", "", "## Progress", ""]
    parts += [f"- **{k}**: {v}" for k, v in overview]
    parts += ["", "## Figures", ""]
    for path, caption in figures:
        parts += [f"![{caption}]({_rel(path, out)})", "", f"*{caption}*", ""]
    parts += ["## Per case", "", f"Mean ± 95 % CI half-width over completed repetitions; headline metric "
              f"`{metric or '-'}`.", "", _table_md(case_head, case_rows), ""]
    if rack_rows:
        parts += ["## Rack as a factor", "", f"`{metric or '-'}` per case and rack (n: mean ± 95 % CI); the last row "
                  "mixes the cases each rack got.", "", _table_md(rack_head, rack_rows), ""]
    parts += [f"## Attempts not completed ({len(fail_rows)})", ""]
    parts += [_table_md(["run", "case", "rep", "attempt", "class", "action", "error", "record"], fail_rows)
              if fail_rows else "None.", ""]
    parts += ["## Health checks", ""] + [f"- {l}" for l in health_lines] + [""]
    parts += ["## Runs", "", _table_md(["seq", "case", "parameters", "rep", "state", "rack", "attempts (records)"],
                                       run_rows),
              ""]
    parts += ["## Events", "", "```", *events, "```", ""]
    return "\n".join(parts)


# Public names for other reports built on this page's look (controller.reproduce.report).
CSS = _CSS
table_html = _table_html
table_md = _table_md
rel_path = _rel
