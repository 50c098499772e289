"""The reproduction report end to end without a rack: a quick reproduction planned on the shipped
virtual inventory and submitted to a real store, every run completed with a real record whose
summary has the scenario's shape, then the report (HTML, Markdown, measured.json) and `compare`."""
from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from controller.campaign.policy import Decision
from controller.campaign.sqlite_store import SQLiteStore
from controller.reproduce import record
from controller.reproduce import report as rep
from controller.reproduce.cells import Cells
from controller.reproduce.compare import FEW, FLAG, compare
from controller.reproduce.design import design, parse_papers
from controller.reproduce.queue import prepare, submit
from controller.reproduce.verdicts import CLAIMS, STATUSES
from controller.results.records import RunRecord
from controller.units import parse_delay_us, parse_probability

JAIN = {"lia": 0.72, "olia": 0.71, "wvegas": 0.70, "mcubic": 0.74, "cubic": 0.64}


def summary(key: str, v: dict, rep_: int, shift: float) -> dict:
    """A summary of the scenario's shape, with values a rack could give (deterministic per run)."""
    wiggle = 0.004 * rep_ + shift
    if key == "mcubic-table1":
        return {"valid": True, "jain_index": JAIN[v["cc"]] + wiggle + (0.05 if v["link2"] == "50M" else 0)}
    if key in ("mcubic-table2", "mcubic-table3"):
        r = {"mcubic": 1.05, "cubic": 1.9}.get(v["cc"], 0.8) - (0.1 if key.endswith("3") else 0)
        return {"valid": True, "ratio": r + wiggle, "parameters": {"delay1": "100ms"}}
    if key == "bbrv3":
        rtt, loss = parse_delay_us(v["rtt"]), parse_probability(v["loss"])
        share = 92.0 if v["cc"] in ("bbr", "bbr3") else (95.0 if loss == 0 or rtt <= 2000 else 12.0)
        return {"valid": True, "case": {"rtt": v["rtt"], "loss": v["loss"], "cc": v["cc"]},
                "parameters": {"rtt_ms": rtt / 1000, "loss_pct": loss * 100, "bottleneck_mbps": 1000.0},
                "share_pct": share + 10 * wiggle, "throughput_mbps": 10 * share}
    if key == "parallel":
        n = int(v["streams"])
        m0 = 100 * n / (64 + n) + 100 * wiggle
        return {"valid": True, "case": f"SC64+SC{n}", "parameters": {"base_streams": 64, "streams": n},
                "diagnostics": {"packets_per_connection": 1.4, "bottleneck": {"drop_pct": 12.0}},
                "hosts": [{"host": "x1", "measured_share_pct": 100 - m0, "predicted_share_pct": 100 * 64 / (64 + n),
                           "setup_s": 0.7, "per_connection": {"starved": 2, "connections": 64}},
                          {"host": "m0", "measured_share_pct": m0, "predicted_share_pct": 100 * n / (64 + n),
                           "setup_s": 1.5, "per_connection": {"starved": 0, "connections": n}}]}
    assert key == "mptcp-bt"
    if v["step"] == "iperf3":
        return {"valid": True, "step": "iperf3", "tests": [
            {"protocol": p, "initial": path, "receiver_mbps": (30.0 if p == "mptcp" else 15.0) + i + wiggle}
            for path in ("lp1", "lp2", "global") for p in ("tcp", "mptcp") for i in range(3)]}
    t = v["tracker"]
    return {"valid": True, "step": "bittorrent", "parameters": {"tracker": t}, "downloads": [
        {"protocol": p, "complete": True, "throughput_mbps": (20.0 if p == "mptcp" else 10.0) / (4 if t == "global"
                                                                                              else 1) + i,
         "first_path": ["global" if t == "global" else "lp1"], "subflows_per_link": {}}
        for p in ("tcp", "mptcp") for i in range(2)]}


def reproduction(invs, tmp_path: Path, shift: float = 0.0) -> record.Reproduction:
    inv = invs["virtual"]
    from tests.unit.controller.reproduce.conftest import statuses
    st = statuses()
    papers = parse_papers(None)
    rd = design("quick", papers, st)
    r = record.Reproduction(record.new_id("quick"), "quick", papers, time.time(), "inventory/virtual.yaml", inv.name,
                            inv.kind, str(tmp_path / "runs"), algorithms={n: s.to_json() for n, s in st.items()},
                            notes=rd.notes)
    planned = prepare(rd, inv, r.dir / "campaigns")
    submit(r, planned, inventory_path=Path("inventory/virtual.yaml"), inv=inv, runs_root=tmp_path / "runs",
           not_before=None)
    record.save(r)
    store = SQLiteStore()
    try:
        for c in r.campaigns:
            for run in store.runs(c["num"]):
                rec = RunRecord(tmp_path / "runs", f"20260101T000000Z_{c['key']}-{run.seq}-{shift}")
                rec.start(scenario="x", parameters={}, inventory={"name": inv.name}, inventory_file="",
                          campaign=c["id"])
                rec.write_json("summary.json", summary(c["key"], run.varied, run.repetition, shift))
                rec.finish("completed")
                store.start_attempt(c["num"], run.seq, rec.id, rec.dir, None)
                store.finish_attempt(c["num"], run.seq, 1, status="completed", exit_code=0, error=None, klass="ok",
                                     decision=Decision("done", "done"))
            store.finish_campaign(c["num"])
    finally:
        store.close()
    return r


@pytest.fixture(scope="module")
def written(invs, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("repro")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CTL_STATE_DIR", str(tmp / "state"))
        r = reproduction(invs, tmp)
        store = SQLiteStore()
        try:
            res = rep.write(store, r)
        finally:
            store.close()
        yield r, res


def test_the_report_has_every_paper_table_figure_and_verdict(written):
    r, res = written
    page = res["html"].read_text()
    assert "<script" not in page and "src=\"http" not in page
    assert len(re.findall(r'<section id="paper-\d">', page)) == 5
    for c in CLAIMS:
        assert f'id="claim-{c.id}"' in page
    verdicts = re.findall(r'<span class="v v-([a-z-]+)">', page)
    assert len(verdicts) == len(CLAIMS) and {v.replace("-", " ") for v in verdicts} <= set(STATUSES)
    # figures inlined: Tables 1-3, the heatmap, Fig. 8, Fig. 2 and 3
    assert page.count("data:image/png;base64,") == 7
    assert "<td>0.746 ± 0.025 (n=2) | paper 0.66</td>" in page   # MCubic at 10M next to the paper's value
    assert "not measured | paper 0.7" in page                    # Table 1's 20M column: the paper's only
    # the BBRv3 rows name their algorithm, and say at 1 Gbit/s what the record knows of the forwarder
    assert "<td>bbr3 (BBRv3 after draft-ietf-ccwg-bbr-06, BPF), RTT 2ms</td>" in page
    assert "<td>bbr (kernel: v1 here), RTT 2ms</td>" in page
    # (these summaries have no forwarder counters: the report says it cannot tell, not "0 of 0 runs")
    assert re.search(r"bbr3 \(BBRv3 after draft-ietf-ccwg-bbr-06, BPF\) at 1 Gbit/s: none of its \d+ runs recorded "
                     r"the forwarder(&#39;|')s drops or CPU", page) and "0 of 0" not in page
    # each campaign's own report is linked and exists
    links = re.findall(r'href="(campaigns/[^"]+/report.html)"', page)
    assert len(links) == 6 and all((res["html"].parent / l).exists() for l in links)


def test_verdicts_follow_the_numbers(written):
    _r, res = written
    got = {c.id: v for c, v in res["judged"]}
    assert got["mcubic-coupled-fairer"].status == "reproduced"
    assert got["bbr-keeps-70"].status == "reproduced" and got["cubic-collapses"].status == "reproduced"
    assert got["shares-follow-model"].status == "reproduced"
    assert got["mptcp-beats-tcp-every-path"].status == "reproduced"
    assert got["bt-global-both-slow"].status == "reproduced"
    assert got["field-table1"].status == "not runnable here"
    # Table 2 and 3 of --quick have one repetition: decided, but never with an interval
    assert got["mcubic-ratio-at-least-1"].strength == "no CI"
    assert "(n=1, no CI)" in " ".join(got["mcubic-ratio-at-least-1"].evidence)


def test_markdown_and_json(written):
    r, res = written
    md = res["markdown"].read_text()
    assert md.startswith(f"# Reproduction {r.id}")
    for png in re.findall(r"\]\(([^)]+\.png)\)", md):
        assert (res["markdown"].parent / png).exists()
    d = json.loads(res["json"].read_text())
    assert d["reproduction"]["id"] == r.id and len(d["verdicts"]) == len(CLAIMS)
    assert Cells.from_json(d["cells"]).get("mcubic", "Table 1", "MCubic", "10M", "jain_index").stat.n == 2


def test_compare_two_reproductions(invs, tmp_state_dir, tmp_path):
    a = reproduction(invs, tmp_path / "a")
    time.sleep(1.1)                 # ids carry the second
    b = reproduction(invs, tmp_path / "b", shift=0.2)
    store = SQLiteStore()
    try:
        from controller.reproduce.measure import collect
        ca, cb = collect(store, a).cells, collect(store, b).cells
    finally:
        store.close()
    pairs = {p.key: p for p in compare(ca, cb)}
    assert pairs[("mcubic", "Table 1", "MCubic", "10M", "jain_index")].status == FLAG
    assert pairs[("mcubic", "Table 2", "MCubic", "100ms", "ratio")].status == FEW      # one run a side: not tested
    assert record.find(None).id == b.id and record.find(a.id[:16]).id in (a.id, b.id)


def test_the_forwarder_paragraph_says_when_its_cpu_may_have_been_the_limit():
    """At 1 Gbit/s the report judges the forwarder from each run's drops and from its CPU over the
    traffic window: busy FORWARDER_BUSY_PCT % of a core or more = it may have been the limit."""
    from controller.reproduce.cells import Cell, Cells
    from controller.reproduce.report import _forwarder_limit
    from controller.reproduce.verdicts import Context

    def cell(row, mbps, drops, cpus):
        return Cell("bbrv3", "Fig. 1-2", row, "RTT 2ms, loss 0%", "share_pct", (90.0,) * len(drops),
                    facts={"bottleneck_mbps": [mbps] * len(drops), "forwarder_kernel_drops": drops,
                           "forwarder_cpu_pct": cpus})
    sel = [cell("bbr3", 1000, [0, 0, 3], [97.5, 40.2, None]), cell("bbr", 100, [0], [12.0]),
           cell("bbr", 1000, [0, 0], [55.0, 61.0])]
    (b3, b1) = [text for _, text in _forwarder_limit(sel, Context(Cells(sel)))]
    assert b3.startswith("bbr3 (BBRv3 after draft-ietf-ccwg-bbr-06, BPF) at 1 Gbit/s: the forwarder was the "
                         "limit in 1 of 3 runs that recorded its drops")
    assert "busy 90 % of a core or more, so it may have been the limit, in 1 of 2 runs that recorded its CPU " \
           "(over the traffic window: 40-98 % of a core); 1 run did not record its CPU" in b3
    assert b3.endswith("compare at 100 Mbit/s (docs/howto/bpf-congestion-control.md).")
    assert b1.startswith("bbr (kernel: v1 here) at 1 Gbit/s: the forwarder was the limit in 0 of 2")
    assert "in 0 of 2 runs that recorded its CPU (over the traffic window: 55-61 % of a core)." in b1
    assert "compare at 100" not in b1


def test_the_forwarder_paragraph_says_it_cannot_tell_when_no_run_recorded_the_forwarder():
    """Records without the forwarder's counters (older ones, or links dnpipe does not shape) printed
    'the forwarder was the limit in 0 of 0 runs ... compare at 100 Mbit/s'."""
    from controller.reproduce.cells import Cell, Cells
    from controller.reproduce.report import _forwarder_limit
    from controller.reproduce.verdicts import Context

    sel = [Cell("bbrv3", "Fig. 1-2", "bbr3", "RTT 2ms, loss 0%", "share_pct", (90.0, 91.0, 89.0),
                facts={"bottleneck_mbps": [1000] * 3, "forwarder_kernel_drops": [None] * 3,
                       "forwarder_cpu_pct": [None] * 3})]
    (text,) = [t for _, t in _forwarder_limit(sel, Context(Cells(sel)))]
    assert text == ("bbr3 (BBRv3 after draft-ietf-ccwg-bbr-06, BPF) at 1 Gbit/s: none of its 3 runs recorded the "
                    "forwarder's drops or CPU (records from before ctl kept them, or links not shaped by ctl's "
                    "dnpipe forwarder): whether the forwarder was the limit is not known.")
