"""Deviation experiments from run summaries to the report's words: cells per window and condition,
hypotheses judged, and what the report prints under a claim."""
from __future__ import annotations

from controller.reproduce import deviation_report as dev
from controller.reproduce.cells import build_cells
from controller.reproduce.evidence import judge_all
from controller.reproduce.hypotheses import EXPERIMENTS
from controller.reproduce.measure import extract_deviation


def _acc_run_length():
    acc: dict = {}
    e = EXPERIMENTS["dev-mcubic-run-length"]
    for cc, early, late in (("mcubic", (0.5, 0.6, 0.7), (1.2, 1.3, 1.1)), ("lia", (0.2, 0.25, 0.3), (0.2, 0.22, 0.3)),
                            ("cubic", (1.3, 1.2, 1.4), (1.3, 1.3, 1.2))):
        for i in range(3):
            windowed = {"0s:45s": {"ratio": early[i]}, "45s:600s": {"ratio": late[i]},
                        "300s:600s": {"ratio": late[i] + 0.05}}
            extract_deviation(acc, e, {"cc": cc}, {"ratio": 9.9, "valid": True}, f"run-{cc}-{i}", windowed)
    return acc


def test_windows_become_paired_cells_and_the_whole_run_value_is_not_used():
    cells = build_cells(_acc_run_length())
    c = cells.get("mcubic", "dev-mcubic-run-length", "mcubic", "window 0s:45s", "ratio")
    assert c is not None and c.values == (0.5, 0.6, 0.7)
    assert c.facts["run"] == ["run-mcubic-0", "run-mcubic-1", "run-mcubic-2"]
    assert not [x for x in cells if 9.9 in x.values]


def test_an_invalid_run_adds_nothing():
    acc: dict = {}
    e = EXPERIMENTS["dev-mcubic-queue"]
    extract_deviation(acc, e, {"cc": "mcubic", "queue": "500"}, {"ratio": 1.0, "valid": False}, "r")
    assert acc == {}


def test_the_report_words_for_a_hypothesis():
    cells = build_cells(_acc_run_length())
    hyps, cals = judge_all(cells, ["mcubic"])
    rl = next(h for h in hyps if h.hypothesis.id == "mcubic-run-length")
    md = "\n".join(dev.hypothesis_lines(rl))
    assert "experiment: dev-mcubic-run-length" in md and "campaigns/deviations/dev-mcubic-run-length.yaml" in md
    assert "MCubic paper, section 4.2.2" in md                       # its basis is quoted
    assert "paired" in md and "95 % CI" in md
    tables = dev.experiment_tables(cells, "mcubic")
    assert ("h3", "dev-mcubic-run-length: " + EXPERIMENTS["dev-mcubic-run-length"].design.title) in tables
    others = [h for h in hyps if h.hypothesis.id != "mcubic-run-length"]
    assert {h.status for h in others if h.hypothesis.paper == "mcubic"} == {"not measured"}
    assert {c.status for c in cals} == {"not measured"}


def test_a_claim_without_a_tested_hypothesis_says_so():
    hyps, _ = judge_all(build_cells({}), ["mcubic"])
    # every MCubic claim has a tested hypothesis since dev-mcubic-competitor-t2-delays / -t3: take
    # them away from one claim that also has an untested cause listed
    claim = "coupled-below-1-at-long-delays"
    assert dev.no_hypothesis_note(claim, hyps) is None
    note = dev.no_hypothesis_note(claim, [h for h in hyps if claim not in h.hypothesis.claims])
    assert note is not None and "untested hypotheses" in note[1]
    assert dev.no_hypothesis_note("mcubic-ratio-at-least-1", hyps) is None
    assert dev.no_hypothesis_note("mcubic-fairest", hyps) is None       # Table 1's: tested since dev-mcubic-t1


def test_untested_causes_are_listed_under_a_claim_that_did_not_reproduce(tmp_path):
    """Table 3's claims: every candidate cause no experiment tests in the claim's set-up (the
    competitor's Cubic version, run only at Table 2's 100 ms and in Table 1's set-up) is shown as
    untested, with its basis and the experiments that test it only elsewhere; none reads as a finding."""
    from controller.reproduce import report as rep
    from controller.reproduce.hypotheses import untested_for
    blocks = [("untested", u) for u in untested_for("mcubic-best-coupled-hetero")]
    content = {"title": "t", "intro": [("p", "intro")], "sections": [("MCubic", [("h3", "Claims"), *blocks])]}
    page, md = rep.render_html(content, tmp_path), rep.render_md(content, tmp_path)
    for text in (page, md):
        for u in untested_for("mcubic-best-coupled-hetero"):
            assert u.id in text
        assert "untested: " in text and "Linux 3.14.17" in text
    assert "hv-untested" in page
    # a cause tested only in another configuration names that experiment, whose data are not reused
    from dataclasses import replace
    u = replace(next(u for u in untested_for("mcubic-best-coupled-hetero")
                     if u.id == "mcubic-competitor-version-other-delays"),
                elsewhere=("dev-mcubic-run-length",))
    b = dev.untested_block(u)
    assert b["status"] == "untested" and any("not reused" in x and "dev-mcubic-run-length" in x for x in b["lines"])


def test_the_rendered_report_shows_a_hypothesis_in_html_and_markdown(tmp_path):
    from controller.reproduce import report as rep
    cells = build_cells(_acc_run_length())
    hyps, _ = judge_all(cells, ["mcubic"])
    rl = next(h for h in hyps if h.hypothesis.id == "mcubic-run-length")
    content = {"title": "t", "intro": [("p", "intro")],
               "sections": [("MCubic", [("h3", "Claims"), ("hypothesis", rl), ("p", dev.RULE)])]}
    page = rep.render_html(content, tmp_path)
    md = rep.render_md(content, tmp_path)
    for text in (page, md):
        assert "mcubic-run-length" in text and rl.status in text
        assert "experiment: dev-mcubic-run-length" in text and "MCubic paper, section 4.2.2" in text
    assert 'hv-' in page


def test_experiment_tables_follow_the_campaign_files_order_not_the_runs():
    """The runs come in a random order; the table's rows and columns come in the order the
    experiment's campaign file lists its cases (Table 3's delays 300, 400, 500 ms)."""
    from controller.reproduce.deviation_report import design_order
    from controller.reproduce.hypotheses import EXPERIMENTS
    e = EXPERIMENTS["dev-mcubic-eq10-t3"]
    rows, cols = design_order(e, ["mcubic_wrap", "mcubic", "mcubic_stretch", "mcubic"],
                              ["delay2 500ms", "delay2 300ms", "delay2 400ms", "something else"])
    assert rows == ["mcubic", "mcubic_wrap", "mcubic_stretch"]
    assert cols == ["delay2 300ms", "delay2 400ms", "delay2 500ms", "something else"]
    e = EXPERIMENTS["dev-mcubic-run-length"]
    _, cols = design_order(e, [], ["window 300s:600s", "window 0s:45s", "window 45s:600s"])
    assert cols == ["window 0s:45s", "window 45s:600s", "window 300s:600s"]


def test_table1_experiment_prints_a_table_per_entity_set():
    """dev-mcubic-t1's runs are read four ways (ctl's index and three other entity sets): the report
    gives each its own table, saying what it is over, and judges the Table 1 hypotheses on them."""
    e = EXPERIMENTS["dev-mcubic-t1"]
    acc: dict = {}
    for cc, (sub1, tcp1, sub2, tcp2) in (("mcubic", (9.0, 86.0, 2.6, 16.4)), ("lia", (19.4, 75.8, 3.8, 15.3)),
                                         ("cubic", (25.4, 69.7, 6.4, 12.6))):
        for i in range(3):
            s = {"valid": True, "jain_index": 0.55 + 0.01 * i,
                 "links": {"path1": {"mptcp_subflow_mbps": sub1 + i, "tcp_mbps": tcp1},
                           "path2": {"mptcp_subflow_mbps": sub2, "tcp_mbps": tcp2 - i}}}
            extract_deviation(acc, e, {"cc": cc, "delay": "0", "queue": "50"}, s, f"{cc}-{i}")
    cells = build_cells(acc)
    tables = dev.experiment_tables(cells, "mcubic")
    assert tables[0] == ("h3", "dev-mcubic-t1: " + e.design.title)
    paras = [b[1] for b in tables if b[0] == "p"]
    assert [p.split(" ", 1)[0] for p in paras] == ["jain_index", "jain_link1", "jain_link2", "jain_four"]
    assert "Jain's index over link 2's two users" in paras[2]
    heads = [b[1] for b in tables if b[0] == "table"]
    assert all(h == ["cc \\ condition", "delay 0, queue 50"] for h in heads)
    hyps, _ = judge_all(cells, ["mcubic"])
    ent = next(h for h in hyps if h.hypothesis.id == "mcubic-t1-jain-entities")
    assert ent.status not in ("not measured",) and "15 of 15 comparisons measured" in ent.reason
    delay = next(h for h in hyps if h.hypothesis.id == "mcubic-t1-path-delay")
    assert delay.status == "not measured"          # no run with the delay: never judged on the baseline alone
