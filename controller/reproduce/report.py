"""The reproduction's morning report: one self-contained HTML page (images inlined, no scripts) and
a Markdown file beside the same PNGs, plus `measured.json` (cells and verdicts, what `ctl
reproduce compare` reads).

Per paper: the design run here against the paper's, the paper's table next to the measured one
(mean ± 95 % CI half-width and n; never an interval from one value), the figures, every claim
with its verdict, the rule, the numbers that decided it, and under it every hypothesis about a
deviation with the experiment that tested it and what the numbers say (deviation_report); what the
paper's own text establishes is quoted, never paraphrased into a cause. Each campaign's own report (controller.campaign.report) is written alongside
and linked. The content is built once as blocks and rendered twice (HTML, Markdown) through the
templates of controller.reportdoc; it names ctl's version and commit, the kernels, the rack and
its times (ISO 8601, UTC). Figures are PNG (embedded) with a PDF beside each, every algorithm in
its controller.palette colour throughout.
"""
from __future__ import annotations

import json
import platform
import time
from pathlib import Path
from typing import Any, Sequence

from controller import plots
from controller import version as ctl_version
from controller.campaign.report import CSS, write_report
from controller.reportdoc import Document, Section
from controller.reportdoc import rel_path as rel_path
from controller.reportdoc import render_html as doc_html
from controller.reportdoc import render_md as doc_md
from controller.reproduce import deviation_report as dev
from controller.reproduce import figures as figs
from controller.reproduce.algorithms import AlgorithmStatus
from controller.reproduce.cells import Cell, Cells
from controller.reproduce.evidence import judge_all
from controller.reproduce.hypotheses import UNTESTED, untested_for
from controller.reproduce.measure import Measured, collect, record_window
from controller.reproduce.papers import FIELD_TABLE1, MCUBIC_TABLES, PAPERS
from controller.reproduce.record import Reproduction
from controller.reproduce.verdicts import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    NOT_RUNNABLE,
    REPRODUCED,
    Claim,
    Context,
    Verdict,
    bbr_kernel_is_v3,
    bbr_label,
    bbrv3_row,
    judge,
    unavailable_rows,
)
from controller.scenarios.rtt_loss_sweep import FORWARDER_BUSY_PCT
from controller.textsafe import shown_lines
from controller.units import parse_delay_us, parse_rate

Block = tuple  # ("h2"|"h3"|"p"|"list"|"table"|"figure"|"verdict"|"pre", ...)
Row = list[tuple[str, str | None]]

_EXTRA_CSS = """
.v{display:inline-block;padding:.05em .5em;border-radius:3px;font-weight:bold;font-size:.85em}
.v-reproduced{background:#d6f5d6;color:#145214} .v-not-reproduced{background:#fbd5d5;color:#7a1010}
.v-not-runnable-here{background:#e4e4e4;color:#333} .v-inconclusive{background:#fff0c2;color:#6b4d00}
.claim{border-left:4px solid #ccc;padding:.3em .8em;margin:.8em 0} .claim p{margin:.3em 0}
.muted{color:#666;font-size:.9em}
"""


def _cls(status: str) -> str:
    return "v-" + status.replace(" ", "-")


def _cell_text(c: Cell | None, with_paper: bool = True) -> str:
    if c is None:
        return "-"
    t = c.text()
    if with_paper and c.paper_value is not None:
        t += f" | paper {c.paper_value:g}"
    if c.model_value is not None:
        t += f" | model {c.model_value:g}"
    return t


def _rate_key(s: str) -> float:
    try:
        return float(parse_rate(s))
    except Exception:      # noqa: BLE001 - an odd label sorts last
        return float("inf")


def _delay_key(s: str) -> float:
    try:
        return float(parse_delay_us(s.split(":")[-1]))
    except Exception:      # noqa: BLE001
        return float("inf")


def _grid(cells: Cells, paper: str, table: str, metric: str, rows: Sequence[str], cols: Sequence[str],
          label: str) -> Block:
    head = [label] + list(cols)
    body: list[Row] = []
    for r in rows:
        body.append([(r, None)] + [(_cell_text(cells.get(paper, table, r, c, metric)), None) for c in cols])
    return ("table", head, body)


# ---- per paper -----------------------------------------------------------------------------------

def _mcubic(m: Measured) -> list[Block]:
    out: list[Block] = []
    for table, metric, what, key in (("Table 1", "jain_index", "Jain's fairness index over the MPTCP connection and the "
                                      "two TCP flows; columns: link 2's rate", _rate_key),
                                     ("Table 2", "ratio", "MPTCP / TCP throughput at the sender, both paths at the "
                                      "same one-way delay", _delay_key),
                                     ("Table 3", "ratio", "MPTCP / TCP throughput at the sender, path 1 at 100 ms, "
                                      "path 2 slower", _delay_key)):
        ref = MCUBIC_TABLES[table]
        measured_rows = m.cells.rows("mcubic", table, metric)
        rows = list(dict.fromkeys(list(ref["rows"]) + measured_rows))
        cols = sorted(set(ref["columns"]) | set(m.cells.columns("mcubic", table, metric)), key=key)
        out.append(("h3", f"{table}: {what}"))
        out.append(("p", "Each cell: measured mean ± 95 % CI half-width (n runs) | the paper's value. Rows not "
                         "measured here show the paper's value only."))
        body: list[Row] = []
        for r in rows:
            line: Row = [(r, None)]
            for c in cols:
                cell = m.cells.get("mcubic", table, r, c, metric)
                pv = ref["rows"].get(r, [None] * len(ref["columns"]))[ref["columns"].index(c)] \
                    if r in ref["rows"] and c in ref["columns"] else None
                txt = _cell_text(cell, with_paper=False) if cell else "not measured"
                line.append((txt + (f" | paper {pv:g}" if pv is not None else ""), None))
            body.append(line)
        out.append(("table", [table] + cols, body))
    return out


def _bbrv3(m: Measured) -> list[Block]:
    out: list[Block] = [("h3", "Fig. 1-2: throughput as % of the bottleneck, mean over repetitions"),
                        ("p", "The paper gives these as heatmaps without numbers; its claims are below. Each cell: "
                              "mean ± 95 % CI half-width (n runs); the bridge's forwarded rate is in each run's "
                              "summary.")]
    sel = m.cells.select("bbrv3", "Fig. 1-2", metric="share_pct")
    if not sel:
        return out + [("p", "No completed runs.")]
    cols = list(dict.fromkeys(c.column for c in sel))
    losses = sorted({c.split(", loss ")[1] for c in cols}, key=lambda s: float(s.rstrip("%") or 0))
    rtts = sorted({c.removeprefix("RTT ").split(",")[0] for c in cols}, key=_delay_key)
    body: list[Row] = []
    ctx = Context(m.cells)
    for cc in sorted({c.row for c in sel}):
        for rtt in rtts:
            body.append([(f"{bbr_label(cc, ctx)}, RTT {rtt}", None)] + [(_cell_text(m.cells.get("bbrv3", "Fig. 1-2", cc,
                                                                                f"RTT {rtt}, loss {l}",
                                                                                "share_pct")), None)
                                                          for l in losses])
    out.append(("table", ["algorithm, RTT \\ loss"] + losses, body))
    bps = sorted({float(b) for c in sel for b in (c.facts.get("bottleneck_mbps") or []) if b is not None})
    if bps:
        out.append(("p", f"bottleneck rate: {', '.join(f'{b:g}' for b in bps)} Mbit/s, buffer 1 BDP"))
    out += _forwarder_limit(sel, ctx)
    return out


def _forwarder_limit(sel: list, ctx: Context) -> list[Block]:
    """For the BBR rows at 1 Gbit/s and above: whether the dnpipe forwarder was the limit, from each
    run's record: frames the kernel dropped before it read them (it was), or its process busy
    FORWARDER_BUSY_PCT % of a core or more over the traffic window (it may have been)."""
    out: list[Block] = []
    for row in ("bbr3", "bbr"):
        cs = [c for c in sel if c.row == row and any((b or 0) >= 1000 for b in c.facts.get("bottleneck_mbps") or [])]
        if not cs:
            continue
        drops = [d for c in cs for d in c.facts.get("forwarder_kernel_drops") or []]
        cpus = [x for c in cs for x in c.facts.get("forwarder_cpu_pct") or []]
        known = [d for d in drops if d is not None]
        limited = [d for d in known if d > 0]
        cpu_known = [float(x) for x in cpus if x is not None]
        busy = [x for x in cpu_known if x >= FORWARDER_BUSY_PCT]
        if not known and not cpu_known:     # "the limit in 0 of 0 runs" said nothing and read as a finding
            out.append(("p", f"{bbr_label(row, ctx)} at 1 Gbit/s: none of its {_runs(len(drops))} recorded the "
                             "forwarder's drops or CPU (records from before ctl kept them, or links not shaped by "
                             "ctl's dnpipe forwarder): whether the forwarder was the limit is not known."))
            continue
        text = (f"{bbr_label(row, ctx)} at 1 Gbit/s: the forwarder was the limit in {len(limited)} of {len(known)} "
                "runs that recorded its drops (frames the kernel dropped before dnpipe read them)"
                + (f"; {_runs(len(drops) - len(known))} did not record them" if len(drops) > len(known) else ""))
        if cpu_known:
            text += (f"; it was busy {FORWARDER_BUSY_PCT:g} % of a core or more, so it may have been the limit, in "
                     f"{len(busy)} of {len(cpu_known)} runs that recorded its CPU (over the traffic window: "
                     f"{min(cpu_known):.0f}-{max(cpu_known):.0f} % of a core)")
        if len(cpus) > len(cpu_known):
            text += f"; {_runs(len(cpus) - len(cpu_known))} did not record its CPU"
        text += (". Where it was or may have been the limit, compare at 100 Mbit/s "
                 "(docs/howto/bpf-congestion-control.md)." if limited or busy or not cpu_known else ".")
        out.append(("p", text))
    return out


def _runs(n: int) -> str:
    return f"{n} run" if n == 1 else f"{n} runs"


def _parallel(m: Measured) -> list[Block]:
    out: list[Block] = [("h3", "Fig. 8: each host's share of the bottleneck while both send (%)")]
    cols = sorted(m.cells.columns("parallel", "Fig. 8", "share_pct"), key=lambda s: int(s.split("+SC")[-1] or 0))
    body: list[Row] = []
    for col in cols:
        x1 = m.cells.get("parallel", "Fig. 8", "x1", col, "share_pct")
        m0 = m.cells.get("parallel", "Fig. 8", "m0", col, "share_pct")
        facts = (m0.facts if m0 else {}) or {}
        xf = (x1.facts if x1 else {}) or {}

        def avg(xs: Any) -> str:
            vals = [float(v) for v in (xs or []) if v is not None]
            return f"{sum(vals) / len(vals):.3g}" if vals else "-"
        body.append([(col, None), (x1.text() if x1 else "-", None),
                     (f"{x1.model_value:g}" if x1 and x1.model_value is not None else "-", None),
                     (f"{x1.paper_value:g}" if x1 and x1.paper_value is not None else "-", None),
                     (m0.text() if m0 else "-", None),
                     (f"{m0.model_value:g}" if m0 and m0.model_value is not None else "-", None),
                     (f"{m0.paper_value:g}" if m0 and m0.paper_value is not None else "-", None),
                     (avg(facts.get("alive_model_pct")), None),
                     (avg(facts.get("setup_s")), None), (f"{avg(xf.get('starved'))} / {avg(facts.get('starved'))}", None),
                     (avg(facts.get("packets_per_connection")), None), (avg(facts.get("drop_pct")), None)])
    out.append(("table", ["case", "x1 measured", "x1 model (IB)", "x1 paper", "m0 measured", "m0 model (BNA)",
                          "m0 paper", "m0 model, connections alive", "m0 set-up s", "starved x1 / m0",
                          "packets per connection", "drops %"], body))
    out.append(("p", "Diagnostics (means over runs): the model over the connections that did not starve, m0's "
                     "set-up time (first data after its client started), connections that carried under 10 % of "
                     "their host's mean, the packets the path holds per connection ((queue + BDP) / connections), "
                     "and the bottleneck's drop rate while both send."))
    return out


def _mptcp_bt(m: Measured) -> list[Block]:
    out: list[Block] = [("h3", "Fig. 2 (step 1): iperf3 throughput per initial path, Mbit/s")]
    cols = m.cells.columns("mptcp-bt", "Fig. 2", "mbps")
    out.append(("table", ["initial path", "TCP", "MPTCP"],
                [[(c, None), (_cell_text(m.cells.get("mptcp-bt", "Fig. 2", "TCP", c, "mbps")), None),
                  (_cell_text(m.cells.get("mptcp-bt", "Fig. 2", "MPTCP", c, "mbps")), None)] for c in cols]))
    out.append(("h3", "Fig. 3 (step 2): webtorrent download throughput, Mbit/s"))
    rows: list[Row] = []
    for c in m.cells.columns("mptcp-bt", "Fig. 3", "mbps"):
        line: Row = [(c, None)]
        for proto in ("TCP", "MPTCP"):
            cell = m.cells.get("mptcp-bt", "Fig. 3", proto, c, "mbps")
            first = sorted({p for ps in ((cell.facts.get("first_path") if cell else None) or []) for p in ps})
            line.append((_cell_text(cell) + (f"; first connection via {', '.join(first)}" if first else ""), None))
        rows.append(line)
    out.append(("table", ["tracker", "TCP", "MPTCP"], rows))
    out.append(("p", "The paper reports these as box plots (no numbers); the claims below are its statements."))
    return out


def _field(m: Measured) -> list[Block]:
    out: list[Block] = [("h3", "Table 1 of the paper")]
    out.append(("table", ["scenario", "download kbit/s", "RTT ms", "jitter ms", "CINR dB (sd)"],
                [[(r["scenario"], None), (f"{r['download_kbps']:g}", None), (f"{r['rtt_ms']:g}", None),
                  (f"{r['jitter_ms']:g}", None), (f"{r['cinr_db']:g} ({r['cinr_sd_db']:g})", None)]
                 for r in FIELD_TABLE1]))
    for run in m.field_runs:
        out.append(("h3", f"Latest field run {run['run']} ({run.get('status')})"))
        body: list[Row] = []
        for h in run["table1"]:
            q = h.get("quality_metric") or "-"
            body.append([(str(h.get("host")), None), (str(h.get("download_kbps")), None), (str(h.get("rtt_ms")), None),
                         (str(h.get("jitter_ms")), None),
                         (f"{q} {h.get('quality_mean_db')} ({h.get('quality_sd_db')})", None),
                         (str(h.get("handovers")), None), (str(h.get("seconds_logged")), None)])
        out.append(("table", ["host", "download kbit/s", "RTT ms", "jitter ms", "quality dB (sd)", "handovers",
                              "seconds"], body))
    if not m.field_runs:
        out.append(("p", "No field run with a report under the runs directory."))
    return out


TABLES = {"mcubic": _mcubic, "bbrv3": _bbrv3, "parallel": _parallel, "mptcp-bt": _mptcp_bt, "field": _field}


def _figures(m: Measured, paper: str, out: Path, stamp: str = "",
             output: plots.Output = plots.REPORT) -> list[tuple[Path, str]]:
    """Each paper's figures (PNG for the page, PDF beside), every row in its palette colour; `stamp`
    (the reproduction and the date) under each title."""
    d = out / paper
    c = m.cells
    sub = f"\n{stamp}" if stamp else ""

    def table(paper_: str, table_: str, metric: str, name: str, title: str, ylabel: str, caption: str,
              key: Any = None, reference: float | None = None) -> tuple[Path | None, str]:
        return (figs.table_figure(c, paper_, table_, metric, d, name, title + sub, ylabel, key, reference, output),
                caption + figs.single_note(c, paper_, table_, metric))
    if paper == "mcubic":
        return figs.paths([
            table("mcubic", "Table 1", "jain_index", "table1.png",
                  "MCubic Table 1 on this rack: Jain's index (bars) vs the paper (dashes)", "Jain's fairness index",
                  "Table 1: Jain's index per link-2 rate and algorithm", _rate_key),
            table("mcubic", "Table 2", "ratio", "table2.png", "MCubic Table 2 on this rack: MPTCP / TCP, equal delays",
                  "MPTCP / TCP throughput at the sender", "Table 2: MPTCP / TCP ratio per one-way delay", _delay_key,
                  1.0),
            table("mcubic", "Table 3", "ratio", "table3.png",
                  "MCubic Table 3 on this rack: MPTCP / TCP, path 1 at 100 ms", "MPTCP / TCP throughput at the sender",
                  "Table 3: MPTCP / TCP ratio per path-2 delay", _delay_key, 1.0)])
    if paper == "bbrv3":
        ctx = Context(c)
        return figs.bbr_heatmaps(c, d, output=output, stamp=stamp,
                                 row_labels={row: bbr_label(row, ctx) for row in ("bbr", "bbr3")})
    if paper == "parallel":
        return figs.paths([table(
            "parallel", "Fig. 8", "share_pct", "fig8.png",
            "Parallel sockets Fig. 8 on this rack: shares (bars), BNA/IB (diamonds), paper (dashes)",
            "share of the bottleneck (%)", "Fig. 8: measured shares vs the model and the paper",
            lambda s: int(s.split("+SC")[-1] or 0))])
    if paper == "mptcp-bt":
        return figs.paths([
            table("mptcp-bt", "Fig. 2", "mbps", "fig2.png",
                  "MPTCP + BitTorrent Fig. 2 on this rack: iperf3 per initial path", "iperf3 throughput (Mbit/s)",
                  "Fig. 2: TCP vs MPTCP per initial path (dots: each test)"),
            table("mptcp-bt", "Fig. 3", "mbps", "fig3.png", "MPTCP + BitTorrent Fig. 3 on this rack: webtorrent "
                  "downloads", "download throughput (Mbit/s)",
                  "Fig. 3: download throughput, tracker local and global (dots: each download)")])
    return []


def _differences(paper: str, m: Measured, r: Reproduction) -> list[str]:
    """Facts of this rack that differ from the paper's setting (data, not judgement)."""
    out = []
    if m.kernels and paper in ("mcubic", "bbrv3", "parallel", "mptcp-bt"):
        out.append("endpoint kernel(s): " + ", ".join(f"{k} ({len(v)} runs)" for k, v in sorted(m.kernels.items())))
    if paper == "mcubic" and m.bpf:
        out.append("ctl's BPF congestion controls that ran: " + ", ".join(
            f"{n} ({e['source']}, object {', '.join(s[:12] for s in e['object_sha256'])}, {e['runs']} runs)"
            for n, e in sorted(m.bpf.items())))
    if paper == "bbrv3":
        ctx = Context(m.cells)
        out.append(f"the paper ran BBRv3 (6.4.0+v3 kernel, Mininet with tbf + netem); its BBRv3 rows here are "
                   f"{bbr_label(bbrv3_row(ctx), ctx)}; `bbr` is the kernel's own BBR, "
                   f"{'BBRv3 on this kernel' if bbr_kernel_is_v3(ctx) else 'BBRv1 here (upstream Linux ships v1)'}: "
                   "a reference row unless the kernel reports BBRv3")
        if "bbr3" in m.bpf:
            e = m.bpf["bbr3"]
            out.append(f"bbr3: ctl's BPF program ({e['source']}, object {', '.join(x[:12] for x in e['object_sha256'])}, "
                       f"{e['runs']} runs), BBRv3 after draft-ietf-ccwg-bbr-06 with this kernel's differences from the "
                       "draft listed by `ctl cc list` and in each run's record")
    if paper in ("mcubic", "bbrv3", "parallel", "mptcp-bt") and r.rack_kind == "virtual":
        out.append("virtual rack: every host is a network namespace of one kernel; links are shaped by the dnpipe "
                   "forwarder (dummynet's semantics in user space), which shares the machine's CPUs with the traffic")
    for nr in r.not_runnable:
        if nr["paper"] == paper:
            out.append(f"not runnable here: {nr['what']}: {nr['reason']}")
    return out


# ---- assembling -----------------------------------------------------------------------------------

def build(store: Any, r: Reproduction, out: Path, *, campaign_reports: bool = True,
          window_summary: Any = record_window, output: plots.Output = plots.REPORT) -> dict:
    """Everything the report shows, as blocks, plus the verdicts (written to measured.json)."""
    m = collect(store, r, window_summary)
    statuses = {n: AlgorithmStatus.from_json(d) for n, d in r.algorithms.items()}
    ctx = Context(m.cells, unavailable_rows(statuses) if statuses else {}, m.field_runs, r.rack_kind, r.papers)
    judged = judge(ctx)
    hyps, cals = judge_all(m.cells, r.papers)
    camp_links: dict[str, str] = {}
    if campaign_reports:
        for cd in m.campaigns:
            html_path, _md = write_report(store, cd.row, out / "campaigns" / cd.row.name, output)
            camp_links[cd.key] = rel_path(html_path, out)
    counts = {s: sum(1 for _, v in judged if v.status == s) for s in (REPRODUCED, NOT_REPRODUCED, NOT_RUNNABLE,
                                                                      INCONCLUSIVE)}
    total_runs = sum(cd.progress.total for cd in m.campaigns)
    done_runs = sum(cd.progress.done for cd in m.campaigns)
    blocks: list[Block] = [
        ("p", f"Mode --{r.mode} on rack {r.inventory_name} ({r.rack_kind}); {len(r.campaigns)} campaigns, "
              f"{done_runs} of {total_runs} runs completed; created {_when(r.created)}, report written "
              f"{_when(time.time())}."),
        ("kv", provenance(r, m)),
        ("table", ["paper", "claim", "verdict", "strength"],
         [[(PAPERS[c.paper].title, None), (c.text, None), (v.status, None), (v.strength or "-", None)]
          for c, v in judged]),
        ("p", ", ".join(f"{n} {s}" for s, n in counts.items() if n) + ". Verdict rules and the numbers behind each "
              "are in the paper's section; 'firm' = the comparison holds beyond the 95 % confidence intervals, "
              "'weak' = on the means only, 'no CI' = a deciding cell has one value."),
    ]
    sections: list[tuple[str, list[Block]]] = []
    for key in r.papers:
        p = PAPERS[key]
        b: list[Block] = [("p", f"{p.reference}. Regenerates {p.regenerates}.")]
        mine = [cd for cd in m.campaigns if cd.paper == key]
        if mine:
            b.append(("table", ["campaign", "runs", "state", "failed attempts", "report"],
                      [[(cd.title + "".join(f" (queued again in place of cancelled campaign #{x['num']})"
                                            for x in cd.replaces), None), (f"{cd.progress.done} of {cd.progress.total} done, {cd.progress.failed} "
                                           f"failed", None), (cd.row.state, None), (str(len(cd.failures)), None),
                        ("campaign report", camp_links.get(cd.key))] for cd in mine]))
        notes = r.notes.get(key) or []
        if notes:
            b.append(("p", "Design here vs the paper's:"))
            b.append(("list", notes))
        b += TABLES[key](m)
        figures = _figures(m, key, out, f"reproduction {r.id}, report of {_when(time.time())}", output)
        for path, caption in figures:
            b.append(("figure", path, caption))
        b.append(("h3", "Claims"))
        for c, v in judged:
            if c.paper == key:
                b.append(("verdict", c, v))
                mine_h = [h for h in hyps if c.id in h.hypothesis.claims]
                for h in mine_h:
                    b.append(("hypothesis", h))
                note = dev.no_hypothesis_note(c.id, hyps) if v.status == NOT_REPRODUCED else None
                if note:
                    b.append(note)
                if v.status == NOT_REPRODUCED:
                    b += [("untested", u) for u in untested_for(c.id)]
        b += dev.citations_blocks(key)
        others = [h for h in hyps if h.hypothesis.paper == key and not h.hypothesis.claims]
        tables = dev.experiment_tables(m.cells, key)
        paper_cals = [c for c in cals if c.calibration.paper == key]
        if tables or others or paper_cals:
            b.append(("h3", "Deviation experiments"))
            b.append(("p", dev.RULE))
            b += tables
            b += dev.calibration_blocks(paper_cals)
            for h in others:
                b.append(("hypothesis", h))
        diffs = _differences(key, m, r)
        if diffs:
            b.append(("h3", "Differences between this rack and the paper's"))
            b.append(("list", diffs))
        sections.append((f"{p.title}", b))
    doc = {"reproduction": r.to_json(), "cells": m.cells.to_json(),
           "verdicts": [{**v.to_json(), "paper": c.paper, "text": c.text} for c, v in judged],
           "hypotheses": [h.to_json() for h in hyps], "calibrations": [c.to_json() for c in cals],
           "untested_hypotheses": [u.to_json() for u in UNTESTED if u.paper in r.papers],
           "kernels": m.kernels, "bpf": m.bpf, "field_runs": [f["run"] for f in m.field_runs]}
    return {"title": f"Reproduction {r.id}", "intro": blocks, "sections": sections, "doc": doc, "judged": judged,
            "hypotheses": hyps}


def write(store: Any, r: Reproduction, out: Path | None = None, *, campaign_reports: bool = True,
          window_summary: Any = record_window, output: plots.Output = plots.REPORT) -> dict:
    """The report in `out`; its figures (and its campaigns' reports') written as `output` says
    (`ctl reproduce report --format/--dpi`; default PNG shown inline, PDF beside, 150 dpi)."""
    out = out or (r.dir / "report")
    out.mkdir(parents=True, exist_ok=True)
    content = build(store, r, out, campaign_reports=campaign_reports, window_summary=window_summary,
                    output=output)
    (out / "measured.json").write_text(json.dumps(content["doc"], indent=1, default=str))
    html_path = out / "report.html"
    html_path.write_text(render_html(content, out))
    md_path = out / "report.md"
    md_path.write_text(render_md(content, out))
    return {"html": html_path, "markdown": md_path, "json": out / "measured.json", "judged": content["judged"],
            "hypotheses": content["hypotheses"]}


def _when(t: float | None) -> str:
    """ISO 8601 in UTC (`2026-11-22T04:18:20Z`)."""
    return plots.iso_utc(t)


def provenance(r: Reproduction, m: Measured) -> list[tuple[str, str]]:
    """What produced the report: ctl (version, commit), the kernels, the rack, the times (UTC)."""
    commit = ctl_version.commit()
    return [("ctl", f"{ctl_version.version()}, commit {commit or 'unknown (not a git checkout, no build record)'}"),
            ("controller kernel", f"{platform.system()} {platform.release()} ({platform.machine()})"),
            ("ctl that ran the runs", ", ".join(f"commit {c} ({len(v)} runs)" for c, v in sorted(m.commits.items()))
             or "none recorded"),
            ("endpoint kernels", ", ".join(f"{k} ({len(v)} runs)" for k, v in sorted(m.kernels.items()))
             or "none recorded"),
            ("rack", f"{r.inventory_name} ({r.rack_kind}), inventory {r.inventory_path}"),
            ("reproduction created", _when(r.created)), ("report written", _when(time.time()))]


# ---- rendering ------------------------------------------------------------------------------------
# The content above, once, through controller.reportdoc's templates: the HTML and the Markdown
# cannot drift (same blocks, same words). Verdicts and hypotheses become the template's plain
# blocks here, in deviation_report's words (hypothesis_lines).

def _verdict_block(c: Claim, v: Verdict) -> tuple:
    return ("verdict", {"id": c.id, "status": v.status, "strength": v.strength, "text": c.text, "source": c.source,
                        "reason": v.reason, "rule": c.rule, "evidence": list(v.evidence)})


def _hypothesis_block(h: Any) -> tuple:
    return ("hypothesis", {"id": h.hypothesis.id, "status": h.status, "statement": h.hypothesis.statement,
                           "reason": h.reason, "lines": dev.hypothesis_lines(h)})


def _plain(blocks: Sequence[Block]) -> list[tuple]:
    out: list[tuple] = []
    for b in blocks:
        if b[0] == "verdict":
            out.append(_verdict_block(b[1], b[2]))
        elif b[0] == "hypothesis":
            out.append(_hypothesis_block(b[1]))
        elif b[0] == "untested":
            out.append(("hypothesis", dev.untested_block(b[1])))
        else:
            out.append(b)
    return out


def document(content: dict) -> Document:
    sections = [Section(f"paper-{i}", title, _plain(blocks)) for i, (title, blocks) in enumerate(content["sections"])]
    return Document(content["title"], CSS + _EXTRA_CSS + dev.CSS, _plain(content["intro"]), sections)


def render_html(content: dict, out: Path | None = None) -> str:
    return shown_lines(doc_html(document(content), out or Path(".")))


def render_md(content: dict, out: Path) -> str:
    return shown_lines(doc_md(document(content), out))
