"""The campaign report from a store and real run-record directories (no rack): statistics,
figures (rtt x loss heatmap per algorithm, box plots), self-contained HTML, relative links."""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from controller.campaign.plan import expand_cases, order_runs
from controller.campaign.policy import Decision
from controller.campaign.spec import load_campaign
from controller.campaign.sqlite_store import SQLiteStore
from controller.campaign.report import heatmap_axes, lookup, metrics_of, primary_metric, write_report
from controller.results.stats import mean_ci, t95
from controller.results.records import RunRecord
from tests.support.shipped import ROOT as PROJECT



def test_mean_and_confidence_interval():
    s = mean_ci([1.0, 2.0, 3.0])
    assert (s.n, s.mean, s.sd, s.min, s.max) == (3, 2.0, 1.0, 1.0, 3.0)
    assert s.ci95 == pytest.approx(4.303 / math.sqrt(3))
    one = mean_ci([5.0])
    assert (one.n, one.mean, one.ci95) == (1, 5.0, None)
    assert mean_ci([]).mean is None
    assert t95(1) == 12.706 and t95(30) == 2.042 and t95(1000) == 1.980 and math.isnan(t95(0))


def test_metrics_from_a_summary():
    s = {"jain_index": 0.73, "valid": True, "flows": [{"name": "mptcp", "receiver_mbps": 30.0},
                                                      {"name": "tcp-path1", "receiver_mbps": 60.5}],
         "links": {"path1": {"flows_total_mbps": 91.0}}}
    assert metrics_of(s) == {"jain_index": 0.73, "mptcp_mbps": 30.0, "tcp-path1_mbps": 60.5, "total_mbps": 90.5}
    assert lookup(s, "links.path1.flows_total_mbps") == 91.0 and lookup(s, "nope.x") is None
    assert primary_metric("distinct-bottleneck", None, ["total_mbps", "jain_index"]) == "jain_index"
    assert primary_metric("rtt-loss-sweep", None, ["total_mbps"]) == "total_mbps"
    assert primary_metric("x", "links.path1.flows_total_mbps", []) == "links.path1.flows_total_mbps"


def test_heatmap_axes():
    vv = {"rtt": ["20ms", "80ms"], "loss": ["0%", "0.1%"], "cc": ["bbr", "cubic"]}
    assert heatmap_axes("rtt-loss-sweep", None, vv) == ("loss", "rtt", "cc")
    assert heatmap_axes("distinct-bottleneck", None, {"link2": ["10M", "20M"], "cc": ["a", "b"]}) == \
        ("cc", "link2", None)
    assert heatmap_axes("distinct-bottleneck", None, {"link2": ["10M", "20M"], "cc": ["a"]}) is None


def _campaign(tmp_path: Path, monkeypatch, file: Path, summaries) -> tuple[SQLiteStore, object]:
    """Submit `file` to a fresh store and complete every run with a real record and summary."""
    monkeypatch.setenv("CTL_STATE_DIR", str(tmp_path / "state"))
    spec, _l, text = load_campaign(file)
    cases = expand_cases(spec)
    planned = order_runs(len(cases), spec.repetitions, spec.order, 5)
    store = SQLiteStore()
    c = store.submit(spec=spec, file_path=file, file_text=text, inventory_path=tmp_path / "i.yaml",
                     inventory_name="vunit", runs_root=tmp_path / "runs", seed=5, not_before=None, cases=cases,
                     planned=planned, durations={x.index: 5.0 for x in cases})
    for r in store.runs(c.num):
        rec = RunRecord(tmp_path / "runs", f"20260101T000000Z_rec-{r.seq}")
        rec.start(scenario=spec.scenario, parameters={}, inventory={"name": "vunit"}, inventory_file="",
                  campaign=c.id)
        summary = summaries(r)
        if summary is None:  # this one failed for good
            rec.finish("failed", "mptcp: iperf3: unable to connect")
            store.start_attempt(c.num, r.seq, rec.id, rec.dir, None)
            store.finish_attempt(c.num, r.seq, 1, status="failed", exit_code=1,
                                 error="mptcp: iperf3: unable to connect", klass="traffic-error",
                                 decision=Decision("failed", "skip", counts_failure=True))
            continue
        rec.write_json("summary.json", summary)
        rec.finish("completed")
        store.start_attempt(c.num, r.seq, rec.id, rec.dir, None)
        store.finish_attempt(c.num, r.seq, 1, status="completed", exit_code=0, error=None, klass="ok",
                             decision=Decision("done", "done"))
    store.finish_campaign(c.num)
    return store, store.campaign(c.num)


def test_rtt_loss_report_has_the_heatmap_per_algorithm_and_links_every_record(tmp_path, monkeypatch):
    # throughput falls with rtt x loss for cubic, not for bbr (the paper's shape); repetitions differ a little
    def summary(r):
        v = r.varied
        loss = float(v["loss"].rstrip("%"))
        rtt = float(v["rtt"].rstrip("ms"))
        base = 900.0 if v["cc"] == "bbr" else 900.0 / (1 + 50 * loss * rtt / 20)
        return {"throughput_mbps": round(base + r.repetition, 1), "valid": True}
    store, c = _campaign(tmp_path, monkeypatch, PROJECT / "campaigns" / "rtt-loss-sweep-short.yaml", summary)
    out = tmp_path / "report"
    html_path, md_path = write_report(store, c, out)
    html = html_path.read_text()
    # self-contained: every image inline, no script, no external resource
    srcs = re.findall(r'src="([^"]*)"', html)
    assert len(srcs) == 2 and all(s.startswith("data:image/png;base64,") for s in srcs)
    assert "<script" not in html and "http://" not in html and "https://" not in html
    assert 'alt="receiver goodput (Mbit/s), mean over repetitions, by RTT (rows) and random loss (columns), ' \
           'one panel per congestion control' in html
    # every run record linked by a relative path that resolves
    hrefs = re.findall(r'href="([^"]*)"', html)
    recs = {h for h in hrefs if "rec-" in h}
    assert len(recs) == 16 and all(not h.startswith("/") and (out / h).is_dir() for h in recs)
    # per case: mean and 95 % CI over the two repetitions (values base+1, base+2 -> mean base+1.5,
    # sd 0.7071, CI 12.706 * 0.7071 / sqrt(2) = 6.353)
    assert "901.5 ± 6.35" in html
    md = md_path.read_text()
    assert re.search(r"!\[receiver goodput \(Mbit/s\), mean over repetitions, by RTT \(rows\) [^]]*\]\(heatmap.png\)", md)
    assert (out / "heatmap.png").exists() and (out / "heatmap.pdf").read_bytes().startswith(b"%PDF")
    assert "| case | rtt | loss | cc | n |" in md
    store.close()


def test_failures_are_listed_with_class_action_and_record(tmp_path, monkeypatch):
    f = tmp_path / "db.yaml"
    f.write_text("version: 1\nscenario: distinct-bottleneck\nfixed: {duration: 5s}\n"
                 "sweep: {link2: [10M, 20M], cc: [cubic, reno]}\nrepetitions: 2\n")

    def summary(r):
        if r.seq == 3:
            return None
        return {"jain_index": 0.6 + 0.1 * r.case_index, "flows": [{"name": "mptcp", "receiver_mbps": 10.0}]}
    store, c = _campaign(tmp_path, monkeypatch, f, summary)
    html_path, _md = write_report(store, c, tmp_path / "r")
    html = html_path.read_text()
    assert "Attempts not completed (1)" in html and "traffic-error" in html and "mptcp: iperf3: unable to connect" in html
    assert "7 of 8 done, 1 failed" in html
    assert 'id="heatmap"' in html and 'id="boxplot"' in html
    assert json.loads(json.dumps(c.spec().model_dump()))["scenario"] == "distinct-bottleneck"
    store.close()
