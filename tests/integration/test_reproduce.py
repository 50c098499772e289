"""`ctl reproduce --smoke` on the virtual rack: the quick reproduction in its reduced form (one or two
short runs per paper, about two minutes), run unattended in the foreground through the campaign
machinery, the rack back at its baseline afterwards, and its report checked in headless Chromium:
every paper's section with its table and its claims' verdicts, every figure loaded."""
from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path

import pytest

from controller.reproduce.verdicts import CLAIMS, STATUSES
from tests.integration.test_campaign_crash import CHROMIUM, DevTools, baseline

pytestmark = pytest.mark.integration

PAPER_TITLES = ("MCubic", "BBRv3", "parallel socket", "BitTorrent-based", "WiBro")

# Per section of the report: its title, how many tables, its claims with their verdict badges,
# and every image with whether it loaded.
SECTIONS_JS = """
Array.from(document.querySelectorAll('section')).map(s => ({
  title: s.querySelector('h2').textContent,
  tables: s.querySelectorAll('table').length,
  claims: Array.from(s.querySelectorAll('div.claim')).map(c => ({
    id: c.id, verdict: (c.querySelector('span.v') || {}).textContent})),
  images: Array.from(s.querySelectorAll('img')).map(i => ({complete: i.complete, width: i.naturalWidth}))
}))
"""


def test_smoke_reproduction_runs_unattended_and_its_report_renders(rack, tmp_path):
    before = baseline(rack)
    p = rack.ctl("reproduce", "--smoke", "--json", timeout=900)
    assert p.returncode == 0, p.stderr[-4000:]
    d = json.loads(p.stdout)["data"]
    assert [c["key"] for c in d["campaigns"]] == ["mcubic-table1", "mcubic-table2", "mcubic-table3", "bbrv3",
                                                  "parallel", "mptcp-bt"]
    assert {v["claim"] for v in d["verdicts"]} == {c.id for c in CLAIMS}
    assert {v["status"] for v in d["verdicts"]} <= set(STATUSES)
    verdict = {v["claim"]: v for v in d["verdicts"]}
    assert verdict["field-table1"]["status"] == "not runnable here"        # no field runs on this rack
    # the smoke design measured something for every queued paper (one run each: never an interval)
    cells = json.loads(Path(d["json"]).read_text())["cells"]
    assert {c["paper"] for c in cells} == {"mcubic", "bbrv3", "parallel", "mptcp-bt"}
    assert all(c["ci95"] is None for c in cells if c["n"] < 2)
    assert baseline(rack) == before

    st = rack.ctl("reproduce", "status", d["id"], "--json")
    assert st.returncode == 0, st.stderr
    s = json.loads(st.stdout)["data"]
    assert (s["done"], s["failed"], s["runs"]) == (d["runs"], 0, d["runs"])
    assert {c["state"] for c in s["campaigns"]} == {"done"}

    cmp = rack.ctl("reproduce", "compare", d["id"], str(Path(d["html"]).parent))
    # a reproduction against its own report: nothing differs (Welch + Holm; one-run cells are not tested)
    assert cmp.returncode == 0 and re.search(r"\b0 of \d+ cells tested differ", cmp.stdout), cmp.stdout

    sections, errors = _in_chromium(Path(d["html"]), tmp_path)
    assert errors == [], errors
    assert len(sections) == 5
    for title, sec in zip(PAPER_TITLES, sections, strict=True):
        assert title in sec["title"]
        assert sec["tables"] >= 1, sec
        assert sec["claims"] and all(c["verdict"] in STATUSES for c in sec["claims"]), sec
        assert all(i["complete"] and i["width"] > 300 for i in sec["images"]), sec["images"]
    assert sum(len(s["claims"]) for s in sections) == len(CLAIMS)
    assert sum(len(s["images"]) for s in sections) >= 6     # Tables 1-3, heatmap, Fig. 8, Fig. 2-3 (step 2 local)


def _in_chromium(page: Path, tmp_path: Path) -> tuple[list[dict], list[str]]:
    assert Path(CHROMIUM).exists(), "chromium missing: scripts/setup.sh installs it"
    profile = Path(tempfile.mkdtemp(prefix="chromium-profile-", dir=tmp_path))
    dt = DevTools(profile)
    try:
        session, errors, _imgs = dt.open(page.as_uri())
        got = dt.call("Runtime.evaluate", {"returnByValue": True, "expression": SECTIONS_JS}, session=session)
        return got["result"]["value"], errors
    finally:
        dt.close()
        shutil.rmtree(profile, ignore_errors=True)
