"""Pointers to the README and to the docs pages in ctl's own texts resolve (issue 26).

The README became a short front door and its sections moved to docs/; texts that said "see the
README's non-root accounts" (an error message, the inventory skeleton written into users' files,
the shipped example inventory) pointed at nothing. Contract, over every text file in controller/
and inventory/ (messages, comments written into files, docstrings that `--help` prints):

- every mention of a README names either a section that exists in README.md (`README, "Heading"`)
  or a README file that exists (`bridges/dnpipe/README.md`); anything else fails, with file:line;
- every `docs/....md` it names exists, and a section named after it (`docs/howto/x.md, "Heading"`)
  is a heading of that page.
"""
from __future__ import annotations

import re
from pathlib import Path

from tests.support.shipped import ROOT

SCANNED = ("controller", "inventory")
SUFFIXES = {".py", ".yaml", ".yml", ".json", ".md", ".txt", ".toml", ".cfg", ".service", ".j2", ".sh"}
# `README, "Heading"` / `README "Heading"` / `README: "Heading"` / `README's "Heading"`; quotes may be
# escaped inside a Python string
SECTION = re.compile(r"README(?:\.md)?(?:'s)?[ \t]*[,:]?[ \t]*\\?\"([^\"\\\n]+)\\?\"")
FILE = re.compile(r"(?<![\w.-])((?:[\w.-]+/)+)README(\.md)?\b")
DOCS_REF = re.compile(r"(?<![\w/.-])(docs/[\w/.-]+\.md)(?:[ \t]*[,:]?[ \t]*\\?\"([^\"\\\n]+)\\?\")?")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)


def _norm(text: str) -> str:
    return " ".join(text.replace("`", "").split()).casefold()


def headings(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.M | re.S)     # not a code block's "# ..."
    return {_norm(h) for h in HEADING.findall(text)}


def texts() -> list[tuple[Path, str]]:
    out = []
    for top in SCANNED:
        for p in sorted((ROOT / top).rglob("*")):
            if p.is_file() and p.suffix in SUFFIXES and "__pycache__" not in p.parts:
                out.append((p, p.read_text(errors="replace")))
    return out


def _where(path: Path, text: str, pos: int) -> str:
    name = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    return f"{name}:{text.count(chr(10), 0, pos) + 1}"


def readme_problems(path: Path, text: str, readme_headings: set[str]) -> list[str]:
    bad = []
    for m in re.finditer(r"readme", text, re.I):
        section = SECTION.match(text, m.start())
        if section is not None and m.group(0) == "README":
            if _norm(section.group(1)) not in readme_headings:
                bad.append(f"{_where(path, text, m.start())}: README has no section \"{section.group(1)}\"")
            continue
        file_ref = next((f for f in FILE.finditer(text, max(0, m.start() - 200), m.end() + 3)
                         if f.start(0) <= m.start() < f.end(0)), None)
        if file_ref is not None:
            target = ROOT / (file_ref.group(1) + "README" + (file_ref.group(2) or ""))
            if not target.is_file():
                bad.append(f"{_where(path, text, m.start())}: {target.relative_to(ROOT)} does not exist")
            continue
        line = text[text.rfind("\n", 0, m.start()) + 1:text.find("\n", m.start())].strip()
        bad.append(f"{_where(path, text, m.start())}: a README pointer naming no section: {line[:100]}")
    return bad


def docs_problems(path: Path, text: str) -> list[str]:
    bad = []
    for m in DOCS_REF.finditer(text):
        page = ROOT / m.group(1)
        if not page.is_file():
            bad.append(f"{_where(path, text, m.start())}: {m.group(1)} does not exist")
        elif m.group(2) and _norm(m.group(2)) not in headings(page):
            bad.append(f"{_where(path, text, m.start())}: {m.group(1)} has no section \"{m.group(2)}\"")
    return bad


def test_every_readme_pointer_names_a_section_or_file_that_exists():
    readme = headings(ROOT / "README.md")
    bad = [b for p, t in texts() for b in readme_problems(p, t, readme)]
    assert not bad, "\n".join(bad)


def test_every_docs_page_and_section_named_exists():
    bad = [b for p, t in texts() for b in docs_problems(p, t)]
    assert not bad, "\n".join(bad)


def test_the_checks_catch_what_they_are_for(tmp_path):
    """The two checks on texts that break them: a README pointer to a section that is gone, one
    naming no section, a README file and a docs page or section that do not exist."""
    readme = headings(ROOT / "README.md")
    f = tmp_path / "x.py"
    text = ('"(see the README\'s non-root accounts)"\n"README, \\"No such section\\""\n'
            '"see nowhere/README.md"\n"docs/howto/nothing.md"\n"docs/howto/physical-rack.md, \\"Gone\\""\n')
    f.write_text(text)
    problems = [b.split(": ", 1)[1] for b in readme_problems(f, text, readme)]
    assert problems[0].startswith("a README pointer naming no section")
    assert problems[1:] == ['README has no section "No such section"', "nowhere/README.md does not exist"]
    assert [b.split(": ", 1)[1] for b in docs_problems(f, text)] == [
        "docs/howto/nothing.md does not exist", 'docs/howto/physical-rack.md has no section "Gone"']
    # and what passes: an existing README section, a README file, a docs page's section
    good = ('"README, \\"What a run guarantees\\""\nbridges/dnpipe/README.md\n'
            'docs/howto/physical-rack.md, "Reaching the rack as the lab does"\n')
    assert readme_problems(f, good, readme) == [] and docs_problems(f, good) == []
