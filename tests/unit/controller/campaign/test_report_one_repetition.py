"""The campaign report of a campaign with one repetition per case: means, no confidence
interval anywhere (the table says "n = 1, no CI"; the box plot draws no error bar)."""
from __future__ import annotations

import re

from tests.unit.controller.campaign.test_report import _campaign


def test_no_ci_from_one_repetition(tmp_path, monkeypatch):
    f = tmp_path / "one.yaml"
    f.write_text("version: 1\nscenario: distinct-bottleneck\nfixed: {duration: 5s}\n"
                 "sweep: {link2: [10M, 20M]}\nrepetitions: 1\n")
    store, c = _campaign(tmp_path, monkeypatch, f, lambda r: {"jain_index": 0.6 + 0.1 * r.case_index})
    from controller.campaign.report import write_report
    html_path, md_path = write_report(store, c, tmp_path / "r")
    html, md = html_path.read_text(), md_path.read_text()
    assert "0.6 (n = 1, no CI)" in html and "0.7 (n = 1, no CI)" in html and not re.search(r"\d ± \d", html)
    assert "2 cases with one repetition: mean only, no CI" in html
    assert "0.6 (n = 1, no CI)" in md
    store.close()
