"""The documentation site and the project's licence, changelog and citation file (issue 26).

- `mkdocs build --strict` passes: no broken link or anchor, every page of docs/ in the navigation
  (mkdocs.yml makes an omitted page a warning, and --strict makes a warning an error);
- the built site loads nothing from outside itself (no web font, no CDN script or style);
- the generated reference pages (docs/reference/, controller/cli/docgen.py) are what the generator
  writes from the code now, so a parser or model changed without regenerating them fails here,
  saying how to regenerate;
- every reference to the experiments' specification in ctl's texts points at docs/experiments.md
  and at a section that exists there;
- CITATION.cff is valid CFF 1.2.0 with the version of pyproject.toml; LICENSE, the BPF sources'
  SPDX lines and the wheel's licence expression agree; CHANGELOG.md states the format versions the
  code writes.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
import typing
from pathlib import Path

import yaml

from tests.support.shipped import ROOT, paper_seeds

DOCS = ROOT / "docs"


class _MkdocsLoader(yaml.SafeLoader):
    """mkdocs.yml as data: its `!relative` and `!ENV` tags read as plain values."""


_MkdocsLoader.add_multi_constructor("!", lambda loader, suffix, node: None)


def _mkdocs_config() -> dict:
    return yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=_MkdocsLoader)


def _nav_pages(nav) -> list[str]:
    out: list[str] = []
    for item in nav:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        out += _nav_pages(value) if isinstance(value, list) else [value]
    return out


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTL_")}
    env["NO_MKDOCS_2_WARNING"] = "1"
    return env


def test_mkdocs_build_strict(tmp_path):
    site = tmp_path / "site"
    p = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                        "-d", str(site)], cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=600)
    problems = [line for line in p.stderr.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert p.returncode == 0 and not problems, f"mkdocs build --strict failed:\n{p.stderr[-4000:]}"
    assert (site / "index.html").is_file() and (site / "reference" / "cli.html").is_file()

    # nothing loaded from outside the site: no web fonts, no CDN script, style, image or frame
    asset = re.compile(r"<(?:script|link|img|iframe|source|audio|video)\b[^>]*\b(?:src|href|srcset)="
                       r"[\"'](?:https?:)?//", re.I)
    external_css = re.compile(r"url\(\s*[\"']?(?:https?:)?//|@import\s+[\"']?(?:url\()?\s*[\"']?(?:https?:)?//", re.I)
    offenders = []
    for f in sorted(site.rglob("*")):
        if f.suffix == ".html" and asset.search(f.read_text(errors="replace")):
            offenders.append(str(f.relative_to(site)))
        elif f.suffix == ".css" and external_css.search(f.read_text(errors="replace")):
            offenders.append(str(f.relative_to(site)))
    assert not offenders, f"pages that load something from outside the site: {offenders}"
    assert "fonts.googleapis" not in (site / "index.html").read_text()


def test_every_page_is_in_the_navigation():
    nav = set(_nav_pages(_mkdocs_config()["nav"]))
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert pages - nav == set(), f"pages of docs/ missing from mkdocs.yml's nav: {sorted(pages - nav)}"
    assert nav - pages == set(), f"nav entries without a page: {sorted(nav - pages)}"


def test_generated_reference_pages_are_up_to_date():
    from controller.cli import docgen
    nav = set(_nav_pages(_mkdocs_config()["nav"]))
    assert {f"reference/{name}" for name in docgen.PAGES} <= nav
    # In a process of its own with no CTL_* setting, as `python -m controller.cli.docgen` runs.
    p = subprocess.run([sys.executable, "-m", "controller.cli.docgen", "--check"], cwd=ROOT, env=_env(),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, (p.stderr.strip() or p.stdout.strip()) + \
        "\nThe parser, a model or a scenario changed: regenerate with `python -m controller.cli.docgen` and commit " \
        "docs/reference/."


def test_generated_pages_escape_and_normalize():
    from controller.cli.docgen import _clean, code, md
    from controller.settings import PROJECT_ROOT
    assert md("a * b | c <d> [e]", table=True) == "a \\* b \\| c &lt;d&gt; \\[e]"
    assert md("keep `a|b*<c>` as code") == "keep `a|b*<c>` as code"
    assert code("x`y") == "``x`y``"
    assert _clean(f"default {PROJECT_ROOT}/runs or {Path.home()}/.local") == "default runs or ~/.local"


def test_experiments_references_resolve():
    """'experiments.md section N' in ctl's texts names docs/experiments.md and a section it has."""
    text = (DOCS / "experiments.md").read_text()
    sections = set(re.findall(r"^## (\d+)\. ", text, re.M))
    assert sections == {"1", "2", "3", "4", "5", "6"}
    files = [p for d in ("controller", "campaigns", "inventory", "nodes", "bridges") for p in (ROOT / d).rglob("*")
             if p.suffix in (".py", ".yaml", ".md", ".j2", ".c", ".h") and "__pycache__" not in p.parts]
    bad, cited = [], 0
    for f in files:
        for m in re.finditer(r"(\S*)experiments\.md,? sections? (\d+)(?:-(\d+))?", f.read_text(errors="replace")):
            cited += 1
            if m.group(1) not in ("docs/", "(docs/", '"docs/', "'docs/"):
                bad.append(f"{f.relative_to(ROOT)}: {m.group(0)!r} does not name docs/experiments.md")
            for n in filter(None, (m.group(2), m.group(3))):
                if n not in sections:
                    bad.append(f"{f.relative_to(ROOT)}: {m.group(0)!r}: no section {n} in docs/experiments.md")
        if "shared/experiments.md" in f.read_text(errors="replace"):
            bad.append(f"{f.relative_to(ROOT)}: names the development note shared/experiments.md")
    assert cited >= 10 and not bad, "\n".join(bad)


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_citation_cff():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    for key in ("cff-version", "message", "title", "authors", "version", "date-released", "license"):
        assert cff.get(key), f"CITATION.cff: no {key}"
    assert cff["cff-version"] == "1.2.0"
    assert all(isinstance(a, dict) and (a.get("name") or a.get("family-names")) for a in cff["authors"])
    assert cff["version"] == _pyproject()["project"]["version"]
    assert isinstance(cff["date-released"], str) and re.fullmatch(r"\d{4}-\d\d-\d\d", cff["date-released"])
    licences = cff["license"] if isinstance(cff["license"], list) else [cff["license"]]
    assert set(licences) == set(_pyproject()["project"]["license"].split(" AND "))


def test_licence_files_agree():
    project = _pyproject()["project"]
    assert project["license"] == "MIT AND GPL-2.0-only"
    for pattern in project["license-files"]:
        assert list(ROOT.glob(pattern)), f"license-files: nothing matches {pattern}"
    licence = (ROOT / "LICENSE").read_text()
    assert "nodes/congestion/bpf/" in licence and "GPL-2.0-only" in licence and "MIT License" in licence
    assert "GNU GENERAL PUBLIC LICENSE" in (ROOT / "LICENSES" / "GPL-2.0-only.txt").read_text()
    for src in sorted((ROOT / "nodes" / "congestion" / "bpf").glob("*.[ch]")):
        first = src.read_text().splitlines()[0]
        assert re.search(r"SPDX-License-Identifier: GPL-2\.0(-only)?\b", first), f"{src.name}: {first!r}"
    assert project["readme"] == "README.md"


def test_changelog_states_the_format_versions():
    from controller.campaign.spec import CampaignSpec
    from controller.campaign.sqlite_store import SCHEMA_VERSION as SQLITE_VERSION
    from controller.cli.common import ENVELOPE_FORMAT
    from controller.inventory import FORMAT_VERSION as INVENTORY_FORMAT
    from controller.labdb.migrations import MIGRATIONS
    from controller.results.records import FORMAT_VERSION, SUMMARY_FORMAT
    text = (ROOT / "CHANGELOG.md").read_text()
    rows = dict(re.findall(r"^\| ([^|]+?) \| (\d+) \|", text, re.M))
    expected = {"run record (`runs/<id>/manifest.json`)": FORMAT_VERSION,
                "summary.json provenance and units": SUMMARY_FORMAT, "inventory file": INVENTORY_FORMAT,
                "`--json` output envelope": ENVELOPE_FORMAT, "local campaign store (SQLite)": SQLITE_VERSION,
                "lab database (PostgreSQL)": max(m.version for m in MIGRATIONS),
                "campaign file": typing.get_args(CampaignSpec.model_fields["version"].annotation)[0]}
    for what, version in expected.items():
        assert rows.get(what) == str(version), f"CHANGELOG.md: {what} should say {version}, says {rows.get(what)}"
    assert f"## {_pyproject()['project']['version']}" in text or _pyproject()["project"]["version"] in text




def test_every_quote_of_a_paper_in_the_experiments_page_is_verbatim():
    """docs/experiments.md quotes the papers in «...»: each piece between '...' is in a paper's text."""
    quotes = re.findall(r"«(.+?)»", (DOCS / "experiments.md").read_text(), re.S)
    assert len(quotes) >= 15
    papers = [" ".join(p.read_text().split()) for p in paper_seeds()]
    missing = []
    for q in quotes:
        for piece in (" ".join(p.split()) for p in q.split("...")):
            if piece and not any(piece in text for text in papers):
                missing.append(piece)
    assert not missing, f"not verbatim in any paper: {missing}"
