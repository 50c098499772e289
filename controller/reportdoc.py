"""One content model for ctl's reports, rendered to HTML and to Markdown by Jinja2 templates
(controller/templates/report.html.j2 and report.md.j2), so the two cannot say different things.

A report is a `Document`: a title, blocks before the first section, and sections (an id, a
title, blocks). A block is a tuple whose first item names its kind:

    ("p", text)                      a paragraph
    ("h3", text)                     a heading inside a section
    ("list", [text, ...])            a bulleted list
    ("table", head, rows)            rows of cells; a cell is text, (text, link) or a list of them
    ("kv", [(key, value), ...])      a two-column description (a table in HTML, a list in Markdown)
    ("figure", path, caption)        an image (PNG or SVG) with the vector files written beside it
    ("pre", text)                    preformatted text
    ("progress", done, failed, total) a progress bar (HTML); the numbers are in the text too
    ("verdict", {id, status, strength, text, source, reason, rule, evidence})
                                     a claim of a paper with its verdict (controller.reproduce.report)
    ("hypothesis", {id, status, statement, reason, lines})
                                     a tested hypothesis (controller.reproduce.deviation_report's words)

Tables are checked here: every row has exactly as many cells as the head has names and no head
cell is empty (a cell holding several links is one cell). Text is escaped for HTML by the template
engine (autoescape), `|` and line breaks in Markdown table cells by the `md_cell` filter.
"""
from __future__ import annotations

import base64
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import jinja2

TEMPLATES = Path(__file__).resolve().parent / "templates"
VECTOR_FORMATS = ("pdf", "svg")
_MIME = {".png": "image/png", ".svg": "image/svg+xml"}


@dataclass
class Section:
    id: str
    title: str
    blocks: list[tuple] = field(default_factory=list)


@dataclass
class Document:
    title: str
    css: str = ""
    intro: list[tuple] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)


class ContentError(ValueError):
    """A block the renderers cannot show the same way in both formats (a bug in the caller)."""


def rel_path(target: str | Path, base: Path) -> str:
    return os.path.relpath(Path(target).resolve(), Path(base).resolve()).replace(os.sep, "/")


def _parts(cell: Any) -> list[dict]:
    """A cell as a list of {text, href} parts."""
    if cell is None:
        return [{"text": "", "href": None}]
    if isinstance(cell, str):
        return [{"text": cell, "href": None}]
    if isinstance(cell, tuple) and len(cell) == 2 and isinstance(cell[0], str) \
            and (cell[1] is None or isinstance(cell[1], str)):
        return [{"text": cell[0], "href": cell[1]}]
    if isinstance(cell, list):
        out = [p for c in cell for p in _parts(c)]
        return out or [{"text": "", "href": None}]
    return [{"text": str(cell), "href": None}]


def table(head: Sequence[str], rows: Sequence[Sequence[Any]]) -> dict:
    head = [str(h) for h in head]
    if any(not h.strip() for h in head):
        raise ContentError(f"table head {head!r}: an empty head cell")
    out_rows = []
    for r in rows:
        if len(r) != len(head):
            raise ContentError(f"table row of {len(r)} cells under a head of {len(head)}: {head!r}")
        out_rows.append([_parts(c) for c in r])
    return {"kind": "table", "head": head, "rows": out_rows}


def _figure(path: Path, caption: str, base: Path, embed: bool) -> dict:
    path = Path(path)
    src = None
    if embed:
        data = base64.b64encode(path.read_bytes()).decode()
        src = f"data:{_MIME.get(path.suffix, 'image/png')};base64,{data}"
    vectors = [{"format": f.upper(), "href": rel_path(path.with_suffix("." + f), base)}
               for f in VECTOR_FORMATS if path.with_suffix("." + f).is_file() and path.suffix != "." + f]
    return {"kind": "figure", "src": src, "href": rel_path(path, base), "caption": caption, "id": path.stem,
            "vectors": vectors}


def _verdict(d: dict) -> dict:
    keys = ("id", "status", "strength", "text", "source", "reason", "rule", "evidence")
    return {"kind": "verdict", "cls": "v-" + d["status"].replace(" ", "-"), **{k: d[k] for k in keys}}


def _hypothesis(d: dict) -> dict:
    keys = ("id", "status", "statement", "reason", "lines")
    return {"kind": "hypothesis", "cls": "hv-" + d["status"].replace(" ", "-"), **{k: d[k] for k in keys}}


def block(b: tuple, base: Path, embed: bool) -> dict:
    kind = b[0]
    if kind in ("p", "h2", "h3", "pre"):
        return {"kind": kind, "text": str(b[1])}
    if kind == "list":
        return {"kind": "list", "items": [str(x) for x in b[1]]}
    if kind == "table":
        return table(b[1], b[2])
    if kind == "kv":
        return {"kind": "kv", "rows": [(str(k), str(v)) for k, v in b[1]]}
    if kind == "figure":
        return _figure(b[1], b[2], base, embed)
    if kind == "progress":
        done, failed, total = b[1], b[2], b[3]
        return {"kind": "progress", "done": done, "failed": failed, "total": total,
                "done_pct": 100.0 * done / total if total else 0.0,
                "failed_pct": 100.0 * failed / total if total else 0.0}
    if kind == "verdict":
        return _verdict(b[1])
    if kind == "hypothesis":
        return _hypothesis(b[1])
    raise ContentError(f"unknown block kind {kind!r}")


def normalized(doc: Document, base: Path, embed: bool) -> dict:
    return {"title": doc.title, "css": doc.css, "intro": [block(b, base, embed) for b in doc.intro],
            "sections": [{"id": s.id, "title": s.title, "blocks": [block(b, base, embed) for b in s.blocks]}
                         for s in doc.sections]}


def _md_cell(parts: list[dict]) -> str:
    out = []
    for p in parts:
        t = p["text"].replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")
        out.append(f"[{t}]({p['href']})" if p["href"] else t)
    return ", ".join(out)


def _md_inline(text: str) -> str:
    """Text on one Markdown line (a list item, a caption): line breaks become spaces."""
    return " ".join(str(text).splitlines())


def _md_fence(text: str) -> str:
    """A code fence longer than any run of backticks in `text` (so the text cannot close it)."""
    longest = run = 0
    for ch in str(text):
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    return "`" * max(3, longest + 1)


def _env(autoescape: bool) -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=autoescape,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True)
    env.filters["md_cell"] = _md_cell
    env.filters["md_cell_text"] = lambda t: _md_cell([{"text": t, "href": None}])
    env.filters["md_inline"] = _md_inline
    env.filters["md_fence"] = _md_fence
    return env


_HTML = _env(True)
_MD = _env(False)


def render_html(doc: Document, base: Path) -> str:
    """One self-contained page: images inlined as data: URIs, no script, links relative to `base`."""
    return _HTML.get_template("report.html.j2").render(doc=normalized(doc, base, embed=True))


def render_md(doc: Document, base: Path) -> str:
    """Markdown beside the images (relative to `base`, where the file is written)."""
    return _MD.get_template("report.md.j2").render(doc=normalized(doc, base, embed=False))
