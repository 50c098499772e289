"""Every figure kind as PDF (and PNG, SVG) from every command that writes figures, with the same
--format/--dpi choice as `runs plot`; heatmaps that read for a person (captions and titles in
words with units; a flat grid's colour bar in plain numbers); field figures in the palette's
colours, legends outside the axes, the run and its first sample in the title.

Data: the recorded rtt-loss-sweep run of tests/fixtures/generated/runs (its summary, copied with
other cases as `ctl report rtt-loss` input), and the field report's points built from the REAL
qmicli/Quectel samples (tests/unit/controller/field/test_report.py's `_records`).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from matplotlib.colors import to_hex

from controller import palette, plots, scenarios
from controller.cli import main as ctl_main
from controller.field.figures import figures as field_figures
from controller.field.stats import report_data
from controller.results.figures import CaseData, colour_range, heatmap_figures
from tests.support.shipped import RECORDED_RUNS, summarized
from tests.unit.controller.field.test_report import _points, _records

RUN = RECORDED_RUNS / "rtt-loss-sweep" / "rtt-40ms_loss-0.01pct_bbr"
IDENTIFIER = re.compile(r"\b[a-z]+_[a-z_]+\b")         # share_pct, throughput_mbps, ...
ISO_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


@pytest.fixture(scope="module")
def summary():
    return summarized(scenarios.get("rtt-loss-sweep"), RUN)[1]


def _runs(root: Path, base: dict, cases: list[tuple[str, str, str, float]]) -> None:
    for i, (cc, rtt, loss, thr) in enumerate(cases):
        d = root / f"run{i}"
        d.mkdir(parents=True)
        (d / "summary.json").write_text(json.dumps({**base, "case": {"rtt": rtt, "loss": loss, "cc": cc},
                                                    "throughput_mbps": thr, "share_pct": thr / 10}))


class Seen:
    def __init__(self):
        self.figs: dict[str, object] = {}

    def __call__(self, fig, path: Path) -> None:
        fig.canvas.draw()
        bars = [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]
        legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
        self.figs[path.name] = {
            "title": fig._suptitle.get_text() if fig._suptitle else "",
            "overlaps": plots.legend_overlaps(fig),
            "bar": [(ax.get_ylim(), [t.get_text() for t in ax.get_yticklabels()],
                     ax.yaxis.get_offset_text().get_text()) for ax in bars],
            "legend_texts": [t.get_text() for lg in legends for t in lg.get_texts()],
            "colours": {ln.get_label(): to_hex(ln.get_color()) for ax in fig.axes for ln in ax.get_lines()
                        if not ln.get_label().startswith("_")},
        }


# ---- ctl report rtt-loss ----------------------------------------------------------------------------

def test_report_rtt_loss_writes_the_formats_and_resolution_asked_for(summary, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CTL_STATE_DIR", str(tmp_path / "state"))
    _runs(tmp_path / "runs", summary, [("bbr", "2ms", "0%", 950.0), ("cubic", "100ms", "0.1%", 40.0)])
    out = tmp_path / "rep"
    assert ctl_main(["report", "rtt-loss", str(tmp_path / "runs"), "-o", str(out), "--format", "pdf",
                     "--format", "svg", "--dpi", "80", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)["data"]
    assert d["figures"] == [str(out / "heatmap.pdf"), str(out / "heatmap.svg")] and d["dpi"] == 80
    assert (out / "heatmap.pdf").read_bytes().startswith(b"%PDF") and not (out / "heatmap.png").exists()
    assert "<svg" in (out / "heatmap.svg").read_text()
    # without --format: PNG and PDF, as the campaign and reproduction reports
    assert ctl_main(["report", "rtt-loss", str(tmp_path / "runs"), "-o", str(tmp_path / "rep2")]) == 0
    text = capsys.readouterr().out
    assert f"figure: {tmp_path / 'rep2' / 'heatmap.png'}, {tmp_path / 'rep2' / 'heatmap.pdf'}" in text
    assert (tmp_path / "rep2" / "heatmap.pdf").read_bytes().startswith(b"%PDF")


@pytest.mark.parametrize("argv, message", [
    (["--dpi", "10"], "10 dpi: from 50 to 1200"),
    (["--dpi", "many"], "'many' is not a whole number of dots per inch"),
    (["--format", "jpg"], "invalid choice: 'jpg'"),
])
def test_report_rtt_loss_refuses_a_bad_format_or_resolution(summary, tmp_path, capsys, argv, message):
    _runs(tmp_path / "runs", summary, [("bbr", "2ms", "0%", 950.0)])
    rc = ctl_main(["report", "rtt-loss", str(tmp_path / "runs"), "-o", str(tmp_path / "rep"), *argv])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and len(err.splitlines()) == 1 and not (tmp_path / "rep").exists()


# ---- heatmaps that read ------------------------------------------------------------------------------

def test_a_single_cell_heatmap_has_a_colour_bar_in_plain_numbers(tmp_path):
    """One cell (or every cell equal): was a colour bar labelled "1e-10+9.14968e2" with ticks
    -0.001 ... 9.999; now a scale of +-5 % around the value, in plain numbers, said in the caption."""
    seen = Seen()
    cases = [CaseData(0, {"loss": "0.01%", "rtt": "40ms", "cc": "bbr"}, [], {"throughput_mbps": [914.968]}, [])]
    (path, caption), = heatmap_figures(cases, "throughput_mbps", ("loss", "rtt", "cc"), tmp_path, "t",
                                       plots.Output(("png", "pdf"), 60, check=seen))
    (ylim, ticks, offset), = seen.figs["heatmap.png"]["bar"]
    assert ylim == pytest.approx((914.968 * 0.95, 914.968 * 1.05))
    assert offset == "" and ticks and all(re.fullmatch(r"\d{3}(\.\d+)?", t) for t in ticks), ticks
    assert len([t for t in ticks if ylim[0] <= float(t) <= ylim[1]]) >= 3, ticks
    assert "every cell 915: the colour scale spans \u00b15 % around it" in caption
    assert path.with_suffix(".pdf").read_bytes().startswith(b"%PDF")
    assert colour_range([0.0, 0.0]) == (-1.0, 1.0) and colour_range([1.0, 3.0]) == (1.0, 3.0)


def test_heatmap_caption_and_rtt_loss_title_are_words_with_units(summary, tmp_path):
    from controller.scenarios.rtt_loss_sweep import write_heatmap
    seen = Seen()
    base = dict(summary)
    sums = [{**base, "case": {"rtt": r, "loss": l, "cc": cc}, "throughput_mbps": v, "share_pct": v / 10}
            for cc, r, l, v in [("bbr", "2ms", "0%", 950.0), ("cubic", "100ms", "0.1%", 40.0)]]
    write_heatmap(sums, tmp_path, "share_pct", title="RTT x loss sweep", output=plots.Output(("png",), 60, check=seen))
    title = seen.figs["heatmap.png"]["title"]
    assert title == "RTT x loss sweep: mean share of the bottleneck (%)" and not IDENTIFIER.search(title)
    cases = [CaseData(i, {"loss": l, "rtt": r, "cc": cc}, [], {"throughput_mbps": [v, v + 1]}, [])
             for i, (cc, r, l, v) in enumerate([("bbr", "2ms", "0%", 950.0), ("cubic", "100ms", "0.1%", 40.0)])]
    (_p, caption), = heatmap_figures(cases, "throughput_mbps", ("loss", "rtt", "cc"), tmp_path, "t")
    assert caption.startswith("receiver goodput (Mbit/s), mean over repetitions, by RTT (rows) and random loss "
                              "(columns), one panel per congestion control")
    assert not IDENTIFIER.search(caption.split(". ")[0]), caption


# ---- field figures -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def field_points():
    pts = _points(_records("m1") + _records("m2", 60))
    return pts, {**report_data(pts), "run_id": "field-R1"}


def test_field_figures_as_pdf_svg_and_png_with_palette_legends_outside_and_the_run_in_the_title(field_points,
                                                                                             tmp_path):
    pts, summary = field_points
    seen = Seen()
    names = field_figures(summary, pts, tmp_path, plots.Output(("pdf", "png", "svg"), 70, "field-R1", seen))
    assert names == ["fig4_timeline.pdf", "download_cdf.pdf"]
    for n in ("fig4_timeline", "download_cdf"):
        assert (tmp_path / f"{n}.pdf").read_bytes().startswith(b"%PDF")
        assert (tmp_path / f"{n}.png").read_bytes()[:4] == b"\x89PNG" and "<svg" in (tmp_path / f"{n}.svg").read_text()
        f = seen.figs[f"{n}.png"]            # Output.check sees the figure once, by its base name
        assert f["overlaps"] == [], f["overlaps"]                       # legends outside the axes
        assert "run field-R1" in f["title"] and ISO_UTC.search(f["title"]), f["title"]
    timeline, cdf = seen.figs["fig4_timeline.png"], seen.figs["download_cdf.png"]
    # the measured series and the marks in the palette's colours, no matplotlib default (tab:) colour
    assert timeline["colours"]["SINR"] == palette.FIELD["quality"].color.lower()
    assert timeline["colours"]["active peers"] == palette.FIELD["peers"].color.lower()
    assert "handover" in timeline["legend_texts"]      # the marks named in a legend, not in a long title
    hosts = palette.host_styles(["m1", "m2"])
    assert cdf["colours"] == {"m1": hosts["m1"].color.lower(), "m2": hosts["m2"].color.lower()}
    tab = {to_hex(f"tab:{c}") for c in ("blue", "green", "purple", "orange", "red")}
    assert not tab & (set(timeline["colours"].values()) | set(cdf["colours"].values()))


def test_hosts_drawn_together_never_share_a_colour():
    # bus2 and static2 fall on the same reserved colour by their names' checksums
    assert palette.role_style("bus2").color == palette.role_style("static2").color
    st = palette.host_styles(["static2", "bus2", "m1"])
    assert len({s.color for s in st.values()}) == 3
    assert st["bus2"].color == palette.role_style("bus2").color          # the first by name keeps its own
    assert palette.host_styles(["m1", "m2"]) == {h: palette.role_style(h) for h in ("m1", "m2")}


def test_field_report_writes_the_formats_asked_for(tmp_path, capsys, monkeypatch):
    """`ctl field report --no-fetch --format pdf --dpi 80` on a field record: its figures as PDF."""
    from controller.results.records import RunRecord
    from nodes.fieldlog import points as P
    monkeypatch.setenv("CTL_STATE_DIR", str(tmp_path / "state"))
    runs = tmp_path / "runs"
    rec = RunRecord(runs, "FR1")
    rec.manifest = {"format_version": 1, "run_id": "FR1", "scenario": "field", "status": "stopped", "errors": [],
                    "phases": [], "parameters": {"hosts": ["m1"]}}
    rec.save()
    (rec.dir / "metrics.jsonl").write_text("".join(P.dumps(r) + "\n" for r in _records()))
    rc = ctl_main(["field", "report", "FR1", "--no-fetch", "--runs-dir", str(runs), "--format", "pdf",
                   "--dpi", "80", "--json"])
    assert rc == 0, capsys.readouterr().err
    manifest = json.loads((rec.dir / "manifest.json").read_text())
    assert manifest["figures"] == ["fig4_timeline.pdf", "download_cdf.pdf"]
    assert (rec.dir / "fig4_timeline.pdf").read_bytes().startswith(b"%PDF")
    assert not (rec.dir / "fig4_timeline.png").exists()


# ---- reports ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("asked, written", [
    (None, ("png", "pdf")), (["pdf"], ("png", "pdf")), (["svg", "pdf"], ("svg", "pdf")),
    (["pdf", "png", "svg"], ("png", "pdf", "svg")), (["png", "png"], ("png",)),
])
def test_a_report_always_has_a_figure_to_show_inline(asked, written):
    out = plots.report_output(asked, 90)
    assert out.formats == written and out.dpi == 90


def test_report_commands_offer_format_and_dpi_with_help():
    from controller.cli import build_parser
    parser = build_parser()
    for argv in (["report", "rtt-loss"], ["campaign", "report"], ["reproduce", "report"], ["reproduce", "rerun"],
                 ["field", "report"], ["reproduce"]):
        p = parser
        for word in argv:
            p = next(a for a in p._actions if a.__class__.__name__ == "_SubParsersAction").choices[word]
        opts = {o: a for a in p._actions for o in a.option_strings}
        assert "--format" in opts and "--dpi" in opts, argv
        assert "pdf" in opts["--format"].help and "dots per inch" in opts["--dpi"].help, argv


def test_campaign_report_with_svg_and_pdf_at_a_chosen_resolution(tmp_path, monkeypatch, capsys):
    """`ctl campaign report ID --format svg --format pdf --dpi 72`: the report shows the SVG
    inline and links the PDF; no PNG is written."""
    from controller.campaign.store import campaign_dir
    from tests.unit.controller.campaign.test_report import PROJECT, _campaign
    store, c = _campaign(tmp_path, monkeypatch, PROJECT / "campaigns" / "rtt-loss-sweep-short.yaml",
                         lambda r: {"throughput_mbps": 900.0 + r.seq, "valid": True})
    store.close()
    assert ctl_main(["campaign", "report", str(c.num), "--format", "svg", "--format", "pdf", "--dpi", "72",
                     "--json"]) == 0
    d = json.loads(capsys.readouterr().out)["data"]
    assert d["figure_formats"] == ["svg", "pdf"] and d["dpi"] == 72
    out = campaign_dir(c.id) / "report"
    html = (out / "report.html").read_text()
    assert "data:image/svg+xml;base64," in html and 'href="heatmap.pdf"' in html
    assert (out / "heatmap.svg").is_file() and (out / "boxplot.pdf").read_bytes().startswith(b"%PDF")
    assert not list(out.glob("*.png"))
