"""The reproduction report as a reader gets it: one algorithm has one colour in every figure of the
report (its palette colour, whatever its row's position), the HTML and the Markdown say the same
(same headings, tables, figure captions and paragraphs; no empty head cell), the report names
ctl's commit, the kernels, the rack and its times with their zone, and every figure has a PDF."""
from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from matplotlib.colors import to_hex

from controller import palette, plots
from controller.campaign.report import write_report
from controller.campaign.sqlite_store import SQLiteStore
from controller.reportdoc import ContentError, Document, Section, render_html, render_md
from controller.reproduce import report as rep
from controller.reproduce.measure import collect
from controller.reproduce.papers import MCUBIC_ROWS
from tests.unit.controller.reproduce.test_report import reproduction

ISO = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"


@pytest.fixture(scope="module")
def made(invs, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("repro-render")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CTL_STATE_DIR", str(tmp / "state"))
        r = reproduction(invs, tmp)
        store = SQLiteStore()
        try:
            res = rep.write(store, r)
            m = collect(store, r)
            colours = Colours()
            out = plots.Output(("png",), 60, check=colours)
            figs = {p: rep._figures(m, p, tmp / "figs", "stamp", out) for p in r.papers}
            # the campaigns' own reports are part of the reproduction's: their box plots too
            for cd in m.campaigns:
                write_report(store, cd.row, tmp / "camp" / cd.row.name, out)
        finally:
            store.close()
        yield r, res, figs, colours


class Colours:
    """Output.check: the colour of every series a figure names (legend entries; box-plot dots by
    the congestion control their case's tick label names), per figure."""

    def __init__(self):
        self.seen: list[tuple[str, str, str]] = []          # (figure, series, colour)

    def __call__(self, fig, path: Path) -> None:
        name = f"{path.parent.name}/{path.name}"
        for ax in fig.axes:
            handles, labels = ax.get_legend_handles_labels()
            for h, label in zip(handles, labels):
                row = label.removesuffix(" (one run: no CI)")
                if row in ("paper's value", "model's prediction") or row.startswith("mean"):
                    continue
                colour = h.get_facecolor() if hasattr(h, "get_facecolor") and not hasattr(h, "get_color") \
                    else h.get_color() if hasattr(h, "get_color") else h.patches[0].get_facecolor()
                self.seen.append((name, row, to_hex(colour)))
            # box plots: each repetition's dot is on its case's row, named by the row's tick label
            ticks = {round(t.get_position()[1]): t.get_text() for t in ax.get_yticklabels()}
            for ln in ax.get_lines():
                ys = set(ln.get_ydata())
                if ln.get_label().startswith("_child") and ln.get_marker() not in ("D", "None", None, "", ".") \
                        and len(ys) == 1:
                    m = re.search(r"congestion control: ([^,]+)", ticks.get(round(ys.pop()), ""))
                    if m:
                        self.seen.append((name, m.group(1), to_hex(ln.get_color())))


def test_one_algorithm_one_colour_across_the_whole_report(made):
    _r, _res, figs, colours = made
    by_alg: dict[str, set[str]] = {}
    where: dict[str, set[str]] = {}
    for fig, series, colour in colours.seen:
        key = palette.algorithm_key(series)
        by_alg.setdefault(key, set()).add(colour)
        where.setdefault(key, set()).add(fig)
    assert {k: v for k, v in by_alg.items() if len(v) != 1} == {}
    # the case: LIA and Cubic in Tables 1, 2 and 3 (and MCubic), each its palette colour
    for row in ("LIA", "Cubic", "MCubic", "OLIA", "wVegas"):
        key = MCUBIC_ROWS[row]
        assert by_alg[key] == {palette.algorithm_style(key).color.lower()}
        assert {"mcubic/table1.png", "mcubic/table2.png", "mcubic/table3.png"} <= where[key]
    # the same colour in the campaigns' box plots, where the dots name their congestion control
    assert any(f.endswith("boxplot.png") for f in where["lia"])
    # protocols and hosts keep theirs too
    assert by_alg["tcp"] == {palette.role_style("tcp").color.lower()}
    assert by_alg["x1"] == {palette.role_style("x1").color.lower()}
    # every algorithm and role of the palette differs from every other
    colors = [palette.algorithm_style(a).color for a in palette.known_algorithms()] + \
        [palette.role_style(r).color for r in palette.known_roles()]
    assert len(set(c.lower() for c in colors)) == len(colors)


class Text(HTMLParser):
    """Headings, paragraphs, list items, tables (head and rows) and figure captions of a page."""

    def __init__(self):
        super().__init__()
        self.headings, self.paragraphs, self.items, self.captions, self.tables, self.kv = [], [], [], [], [], []
        self._buf: list[str] | None = None
        self._tag = None
        self._row: list[str] | None = None
        self._in_th = False

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self._row = []
        if tag in ("h1", "h2", "h3", "p", "li", "figcaption", "td", "th"):
            self._buf, self._tag = [], tag

    def handle_endtag(self, tag):
        if tag == self._tag and self._buf is not None:
            text = " ".join("".join(self._buf).split())
            if tag in ("td", "th"):
                self._row.append((tag, text))
            else:
                {"h1": self.headings, "h2": self.headings, "h3": self.headings, "p": self.paragraphs,
                 "li": self.items, "figcaption": self.captions}[tag].append(text)
            self._buf = None
        if tag == "tr" and self._row is not None:
            if [t for t, _ in self._row] == ["th", "td"]:
                self.kv.append((self._row[0][1], self._row[1][1]))
            else:
                self.tables[-1].append([x for _, x in self._row])
            self._row = None

    def handle_data(self, data):
        if self._buf is not None:
            self._buf.append(data)


def outside_code(md: str) -> list[str]:
    """The lines of a Markdown text that are not inside a fenced code block."""
    out, fence = [], None
    for line in md.splitlines():
        m = re.match(r"(`{3,})", line)
        if fence is None and m:
            fence = m.group(1)
        elif fence is not None and line == fence:
            fence = None
        elif fence is None:
            out.append(line)
    return out


def md_tables(md: str) -> list[list[list[str]]]:
    tables, cur = [], None
    for line in outside_code(md):
        if line.startswith("|"):
            if re.fullmatch(r"\|(---\|)+", line):
                continue
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            cells = [re.sub(r"\[([^]]*)\]\([^)]*\)", r"\1", c).replace("\\|", "|").replace("\\\\", "\\")
                     for c in cells]
            if cur is None:
                cur = []
                tables.append(cur)
            cur.append(cells)
        else:
            cur = None
    return tables


def same_content(html: str, md: str) -> None:
    page = Text()
    page.feed(html)
    html_tables = [t for t in page.tables if t]
    assert html_tables == md_tables(md)
    for t in html_tables:
        assert all(h.strip() for h in t[0]), t[0]                          # no empty head cell
    headings = [re.sub(r"^#+ ", "", line) for line in outside_code(md) if re.match(r"#{1,3} ", line)]
    assert page.headings == headings
    captions = []
    for m in re.finditer(r"^\*(.*)\*( \((.*)\))?$", md, re.M):
        captions.append(m.group(1) + (" (" + re.sub(r"\[([^]]*)\]\([^)]*\)", r"\1", m.group(3)) + ")"
                                      if m.group(2) else ""))
    assert page.captions == captions
    for k, v in page.kv:
        assert f"- **{k}**: {v}" in md
    plain = " ".join(md.replace("**", "").replace("`", "").split())
    for p in page.paragraphs + page.items:
        assert " ".join(p.replace("`", "").split()) in plain, p


def test_html_and_markdown_say_the_same(made):
    _r, res, _figs, _colours = made
    html, md = res["html"].read_text(), res["markdown"].read_text()
    same_content(html, md)
    assert md.count("![") == html.count("<img ") == 7
    # every figure has its PDF beside it, linked from both
    for png in re.findall(r"\]\(([^)]+\.png)\)", md):
        assert (res["markdown"].parent / png).with_suffix(".pdf").read_bytes()[:5] == b"%PDF-"
        assert f'href="{Path(png).with_suffix(".pdf")}"' in html


def test_the_campaign_reports_say_the_same_in_both_formats(made):
    _r, res, _figs, _colours = made
    pages = sorted((res["html"].parent / "campaigns").glob("*/report.html"))
    assert len(pages) == 6
    for page in pages:
        same_content(page.read_text(), page.with_suffix(".md").read_text())


def test_the_report_names_what_produced_it(made):
    r, res, _figs, _colours = made
    for text in (res["html"].read_text(), res["markdown"].read_text()):
        assert re.search(r"ctl(</th><td>|\*\*: )\d+\.\d+\.\d+, commit ([0-9a-f]{40}(\+dirty)?|unknown)", text)
        assert "controller kernel" in text and "endpoint kernels" in text
        assert f"{r.inventory_name} ({r.rack_kind}), inventory {r.inventory_path}" in text
        kv = r"(</th><td>|\*\*: )"
        assert re.search(rf"reproduction created{kv}{ISO}", text) and re.search(rf"report written{kv}{ISO}", text)
        assert not re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d(?!:\d\dZ)", text)     # no time without its zone


def test_tables_are_checked_and_text_escaped(tmp_path):
    ok = Document("t", "", [("table", ["a", "b"], [["x | y", ("link", "r/1")], ["<b>", ["p", ("q", "r/2")]]])],
                  [Section("s", "S", [("pre", "has ``` inside"), ("list", ["two\nlines"])])])
    html, md = render_html(ok, tmp_path), render_md(ok, tmp_path)
    assert "<td>&lt;b&gt;</td>" in html and '<td>p, <a href="r/2">q</a></td>' in html
    assert "| x \\| y | [link](r/1) |" in md and "| <b> | p, [q](r/2) |" in md
    assert "````\nhas ``` inside\n````" in md and "- two lines" in md
    same_content(html, md)
    with pytest.raises(ContentError, match="empty head cell"):
        render_md(Document("t", "", [("table", ["a", ""], [["1", "2"]])]), tmp_path)
    with pytest.raises(ContentError, match="row of 3 cells under a head of 2"):
        render_html(Document("t", "", [("table", ["a", "b"], [["1", "2", "3"]])]), tmp_path)

