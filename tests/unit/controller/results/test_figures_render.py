"""Every figure kind of a run, drawn from the recorded runs of tests/fixtures/generated/runs as PDF
and PNG (and one as SVG), each figure inspected before it is written (plots.Output.check):

- no legend covers the data of any axes (legends sit outside);
- no address or port number in a legend or a tick label;
- the title names the run and its traffic start (ISO 8601, UTC);
- rates over time have a capacity line; shares stay within 0..100 %;
- a cell of one value is never drawn with an error bar or a box.

No distinct-bottleneck run is recorded among the fixtures: its figure is the same
`series.throughput` as rtt-loss-sweep's and shared-bottleneck's (drawn here), with its own title.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from controller import palette, plots, scenarios
from controller.results.figures import CaseData, box_figure, heatmap_figures
from controller.results.series import flow_algorithms
from controller.telemetry.points import Point
from controller.traffic.iperf3 import FlowSpec
from tests.support.shipped import RECORDED_RUNS, summarized

RUNS = sorted(p.parent for p in RECORDED_RUNS.glob("*/*/manifest.json"))
EXPECTED = {"delay-800ms": ["throughput.png", "ratio.png"], "rtt-40ms_loss-0.01pct_bbr": ["throughput.png"],
            "sc64-sc16": ["parallel-streams.png"], "iperf3": ["boxplot.png"],
            "bittorrent-local": ["bittorrent.png"], "bittorrent-global": ["bittorrent.png"]}
ADDRESS = re.compile(r"\d{1,3}(\.\d{1,3}){3}|:\d{2,5}\b|\[[0-9a-f:]+\]")
ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


class Inspected:
    """What Output.check saw of each figure, by file name."""

    def __init__(self):
        self.figs: dict[str, dict] = {}

    def __call__(self, fig, path: Path) -> None:
        texts = []
        for ax in fig.axes:
            lg = ax.get_legend()
            texts += [t.get_text() for t in lg.get_texts()] if lg else []
            texts += [t.get_text() for t in ax.get_xticklabels() + ax.get_yticklabels()]
        lines = [(ax, ln) for ax in fig.axes for ln in ax.get_lines()]
        self.figs[path.name] = {
            "overlaps": plots.legend_overlaps(fig), "texts": texts,
            "title": fig._suptitle.get_text() if fig._suptitle else "",
            "labels": [ln.get_label() for _, ln in lines],
            "errorbars": sum(1 for ax in fig.axes for c in ax.containers if type(c).__name__ == "ErrorbarContainer"),
            "ylabels": [ax.get_ylabel() for ax in fig.axes], "xlabels": [ax.get_xlabel() for ax in fig.axes],
            "axtitles": [ax.get_title() for ax in fig.axes],
            "boxes": sum(1 for ax in fig.axes for p in ax.patches if type(p).__name__ == "PathPatch"),
            "lines": [(ax.get_ylabel(), ln.get_label(), list(ln.get_ydata())) for ax, ln in lines]}


def manifest(d: Path) -> dict:
    return json.loads((d / "manifest.json").read_text())


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    out = tmp_path_factory.mktemp("figs")
    figs, names = {}, {}
    for d in RUNS:
        m = manifest(d)
        sc = scenarios.get(m["scenario"])
        data, s = summarized(sc, d)
        seen = Inspected()
        names[d.name] = sc.figures(data, s, out / d.name, plots.Output(("png", "pdf"), 100, m["run_id"], seen))
        figs.update({f"{d.name}/{k}": v for k, v in seen.figs.items()})
    return out, names, figs


def test_every_run_figure_is_written_as_pdf_and_png(drawn):
    out, names, _ = drawn
    assert names == EXPECTED
    for run, files in names.items():
        for f in files:
            png, pdf = out / run / f, (out / run / f).with_suffix(".pdf")
            assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and pdf.read_bytes()[:5] == b"%PDF-"


@pytest.mark.parametrize("run", RUNS, ids=[d.name for d in RUNS])
def test_each_figure_reads_without_covered_data_ports_or_missing_provenance(drawn, run):
    _, names, figs = drawn
    m = manifest(run)
    for f in names[run.name]:
        fig = figs[f"{run.name}/{f}"]
        assert fig["overlaps"] == [], fig["overlaps"]
        assert not [t for t in fig["texts"] if ADDRESS.search(t)], fig["texts"]
        assert f"run {m['run_id']}" in fig["title"] and ISO.search(fig["title"])
        assert all(y for y in fig["ylabels"] if y is not None)


def test_rates_over_time_have_their_capacities(drawn):
    _, _, figs = drawn
    for name in ("delay-800ms/throughput.png", "rtt-40ms_loss-0.01pct_bbr/throughput.png"):
        labels = figs[name]["labels"]
        assert any("bottleneck capacity" in x for x in labels) and any(x.startswith("link ") and "capacity" in x
                                                                       for x in labels)
        # the window averages over at least two round trips, and the title says so and over what
        assert "each point: mean over" in figs[name]["title"] and "flows: bytes acked at the sender (ss)" \
            in figs[name]["title"]
    # 800 ms one way: a 0.5 s window would alias; the window is a multiple of 0.5 s covering 2 RTTs
    t = figs["delay-800ms/throughput.png"]["title"]
    window = float(re.search(r"mean over ([\d.]+) s", t).group(1))
    rtt_ms = float(re.search(r"RTT the senders' ss saw, (\d+) ms", t).group(1))
    assert window >= 2 * rtt_ms / 1000 and window % 0.5 == 0 and rtt_ms >= 1600
    assert "MPTCP (Cubic)" in figs["delay-800ms/throughput.png"]["labels"]
    assert "MPTCP subflow via sbd1" in figs["delay-800ms/throughput.png"]["labels"]


def test_parallel_streams_shares_are_bounded_and_predictions_are_marks(drawn):
    _, _, figs = drawn
    fig = figs["sc64-sc16/parallel-streams.png"]
    shares = [ys for ylabel, label, ys in fig["lines"] if label.endswith("measured")]
    assert len(shares) == 2 and all(0 <= y <= 100 for ys in shares for y in ys)
    model = [(label, ys) for _ylabel, label, ys in fig["lines"] if label.startswith("model")]
    (label, ys), = model
    assert len(ys) == 2            # one mark per host, and no line between them (linestyle "None")


def test_one_value_is_a_mark_not_a_box(drawn):
    _, _, figs = drawn
    # the recorded step-1 run made one test per path and protocol: six values, six marks, no box
    fig = figs["iperf3/boxplot.png"]
    assert fig["errorbars"] == 0 and fig["boxes"] == 0
    assert "6 with one test: its value alone, no box" in fig["axtitles"][0]
    bt = figs["bittorrent-local/bittorrent.png"]
    assert "TCP: each download (one: no mean drawn)" in bt["texts"] and bt["errorbars"] == 0


def test_svg_is_text_and_the_same_figure_gives_the_same_vector_file(tmp_path):
    d = RECORDED_RUNS / "rtt-loss-sweep" / "rtt-40ms_loss-0.01pct_bbr"
    sc = scenarios.get("rtt-loss-sweep")
    data, s = summarized(sc, d)
    a = sc.figures(data, s, tmp_path / "a", plots.Output(("svg", "pdf"), run_id="r"))
    b = sc.figures(data, s, tmp_path / "b", plots.Output(("svg", "pdf"), run_id="r"))
    svg = (tmp_path / "a" / a[0]).with_suffix(".svg").read_text()
    assert svg.startswith("<?xml") and "RTT 40ms" in svg                       # text stays text
    for suffix in (".svg", ".pdf"):
        assert (tmp_path / "a" / a[0]).with_suffix(suffix).read_bytes() == \
            (tmp_path / "b" / b[0]).with_suffix(suffix).read_bytes()


def test_campaign_figures_from_recorded_summaries(tmp_path):
    # the two recorded rtt-loss and shared-bottleneck summaries as cases of a campaign: a heatmap
    # needs two swept parameters, so the cases vary cc and rtt; one run each: n = 1 everywhere
    seen = Inspected()
    d = RECORDED_RUNS / "rtt-loss-sweep" / "rtt-40ms_loss-0.01pct_bbr"
    _, s = summarized(scenarios.get("rtt-loss-sweep"), d)
    cases = [CaseData(i, {"cc": cc, "rtt": rtt}, [], {"share_pct": [s["share_pct"] - i]}, [])
             for i, (cc, rtt) in enumerate([("bbr", "40ms"), ("cubic", "40ms"), ("bbr", "80ms"), ("cubic", "80ms")])]
    out = plots.Output(("pdf", "png"), 100, check=seen)
    (hm, cap), = heatmap_figures(cases, "share_pct", ("cc", "rtt", None), tmp_path, "t", out)
    assert "4 cells from one run (marked n=1)" in cap and hm.with_suffix(".pdf").exists()
    (bx, cap), = box_figure(cases, "share_pct", tmp_path, "t", out)
    assert "4 cases with one repetition: mean only, no CI" in cap and bx.with_suffix(".pdf").exists()
    box, heat = seen.figs["boxplot.png"], seen.figs["heatmap.png"]
    assert box["errorbars"] == 0 and box["overlaps"] == [] and heat["overlaps"] == []
    assert "share of the bottleneck (%)" in heat["ylabels"] and box["xlabels"][0] == "share of the bottleneck (%)"
    assert heat["xlabels"][0] == "congestion control" and heat["ylabels"][0] == "RTT"
    assert "congestion control: BBR (kernel), RTT: 40ms" in box["texts"]


def test_output_refuses_what_it_cannot_write():
    with pytest.raises(Exception, match="not one of png, pdf, svg"):
        plots.Output(("jpg",))
    with pytest.raises(Exception, match="from 50 to 1200"):
        plots.Output(("png",), 10)
    assert palette.label("share_pct") == "share of the bottleneck (%)"


def test_a_flow_is_named_by_the_algorithm_of_the_sockets_that_carried_it():
    # iperf3's control connection runs the host's default (here bbr) and carries nothing; the data
    # connection runs what -C asked for: the flow is that algorithm, however many samples each has
    def sample(sub: str, cc: str, acked: float, t: int) -> Point:
        return Point("subflow", {"host": "a1", "flow": "tcp", "subflow": sub, "link": "path1", "role": "client"},
                     {"cc": cc, "acked_bps": acked}, t)
    pts = [sample("control", "bbr", 0.0, t) for t in range(30)] + \
        [sample("data", "cubic", 9e7, t) for t in range(20)]
    spec = FlowSpec("tcp", "tcp", "a1", "b1", "10.0.0.2", 5201)
    assert flow_algorithms(pts, [spec]) == {"tcp": "cubic"}
    assert flow_algorithms([], [FlowSpec("tcp", "tcp", "a1", "b1", "10.0.0.2", 5201, cc="lia")]) == {"tcp": "lia"}
