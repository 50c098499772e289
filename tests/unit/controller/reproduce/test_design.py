"""What a reproduction queues in each mode (pure), and every generated campaign checked exactly as
`ctl campaign plan` checks a file: through each scenario's own parser and planner, on both
shipped inventories."""
from __future__ import annotations

import pytest

from controller.campaign.spec import load_campaign
from controller.errors import UsageError
from controller.reproduce.campaign_design import traffic_estimate
from controller.reproduce.design import campaign_document, design, parse_papers
from controller.reproduce.queue import finish_times, prepare
from tests.unit.controller.reproduce.conftest import statuses

PAPER_CCS = ["lia", "olia", "wvegas", "mcubic", "cubic"]


def test_papers_option():
    assert parse_papers(None) == ["mcubic", "bbrv3", "parallel", "mptcp-bt", "field"]
    assert parse_papers("parallel, mcubic") == ["mcubic", "parallel"]      # the report's order
    with pytest.raises(UsageError, match=r"--papers: bbr3 is not a paper \(known: mcubic, bbrv3"):
        parse_papers("bbr3,mcubic")
    with pytest.raises(UsageError):
        parse_papers(",")


def _runs(d) -> dict[str, int]:
    return {c.key: c.run_count() for c in d.campaigns}


def test_quick_design(all_runnable):
    d = design("quick", parse_papers(None), all_runnable)
    assert _runs(d) == {"mcubic-table1": 20, "mcubic-table2": 10, "mcubic-table3": 10, "bbrv3": 24, "parallel": 8,
                        "mptcp-bt": 3}
    t1 = d.campaigns[0]
    assert t1.sweep == {"link2": ["10M", "50M"], "cc": PAPER_CCS}      # the paper's rows only in --quick
    assert d.not_runnable == [] and "field" not in d.notes
    assert any("one repetition of 20 s" in n for n in d.notes["mcubic"])


def test_full_design_is_the_papers_own(all_runnable):
    d = design("full", parse_papers(None), all_runnable)
    runs = _runs(d)
    assert runs["bbrv3"] == 900                                          # 6 RTTs x 5 losses x 3 ccs x 10
    bbr = next(c for c in d.campaigns if c.key == "bbrv3")
    assert bbr.fixed == {"duration": "60s"} and bbr.repetitions == 10
    assert bbr.sweep["cc"] == ["cubic", "bbr3", "bbr"]                  # BBRv3 = bbr3 here, v1 a reference row
    t1 = d.campaigns[0]
    assert t1.sweep["link2"] == ["10M", "20M", "40M", "50M"]
    assert t1.sweep["cc"] == PAPER_CCS + ["balia", "bbr", "bbr3", "reno"]   # and every other algorithm the rack runs
    assert next(c for c in d.campaigns if c.key == "mcubic-table3").sweep["delay2"] == ["300ms", "400ms", "500ms"]
    assert runs["parallel"] == 40


def test_smoke_is_a_few_short_runs(all_runnable):
    d = design("smoke", parse_papers(None), all_runnable)
    assert _runs(d) == {"mcubic-table1": 1, "mcubic-table2": 1, "mcubic-table3": 1, "bbrv3": 3, "parallel": 1,
                        "mptcp-bt": 2}
    assert all(c.repetitions == 1 for c in d.campaigns)


def test_rows_the_rack_cannot_run_are_listed_with_the_reason():
    st = statuses(runnable=("reno", "cubic", "bbr", "olia", "mcubic"),
                  missing=(("lia", "ctl's BPF program cannot load: a1: the kernel has no BTF"),))
    d = design("quick", ["mcubic", "bbrv3"], st)
    assert d.campaigns[0].sweep["cc"] == ["olia", "mcubic", "cubic"]
    what = {n.what: n.reason for n in d.not_runnable}
    assert what["row LIA (lia) of Tables 1-3"].endswith("a1: the kernel has no BTF")
    assert what["row wVegas (wvegas) of Tables 1-3"] == "neither in the kernel nor one of ctl's BPF programs"
    # without bbr3 and bbr the BBRv3 campaign runs Cubic alone and says why
    d2 = design("quick", ["bbrv3"], statuses(runnable=("cubic",)))
    assert d2.campaigns[0].sweep["cc"] == ["cubic"]
    assert [n.what for n in d2.not_runnable] == ["bbr3 (Fig. 2: BBRv3 after draft-ietf-ccwg-bbr-06)",
                                                 "bbr (Fig. 2 reference row: the kernel's bbr)"]


def test_nothing_runnable_queues_nothing_for_the_paper():
    d = design("quick", ["mcubic"], {})
    assert d.campaigns == [] and len(d.not_runnable) == 5


def test_campaign_document(all_runnable):
    d = design("quick", ["mptcp-bt"], all_runnable)
    doc = campaign_document("quick", d.campaigns[0])
    assert doc["name"] == "repro-quick-mptcp-bt" and doc["scenario"] == "mptcp-bittorrent"
    assert doc["cases"][0] == {"step": "iperf3", "initial": "all", "repetitions": "3", "duration": "5s"}
    assert doc["retry"] == {"refused": {"attempts": 1, "then": "skip"}} and doc["pause"] == "1s"


def test_traffic_estimates():
    assert traffic_estimate("distinct-bottleneck", {"duration": "10s"}) == 10.0
    # step 1: 3 paths x 2 protocols x 3 tests x (5 s + 3 s between tests)
    assert traffic_estimate("mptcp-bittorrent", {"step": "iperf3", "initial": "all", "repetitions": "3",
                                                 "duration": "5s"}) == 144.0
    # step 2: 2 protocols x 2 downloads x (20 MiB at 80 % of 5 Mbit/s + 8 s)
    g = traffic_estimate("mptcp-bittorrent", {"step": "bittorrent", "tracker": "global", "size": "20MiB",
                                             "repetitions": "2"})
    assert g == pytest.approx(4 * (20 * 2**20 * 8 / 4e6 + 8))


@pytest.mark.parametrize("mode", ["smoke", "quick", "full"])
@pytest.mark.parametrize("inventory", ["virtual", "lab-rack"])
def test_every_campaign_passes_the_campaign_checks(mode, inventory, invs, all_runnable, tmp_state_dir, tmp_path):
    d = design(mode, parse_papers(None), all_runnable)
    planned = prepare(d, invs[inventory], tmp_path / "campaigns")
    assert [p.design.key for p in planned] == [c.key for c in d.campaigns]
    for p in planned:
        assert p.runs == p.design.run_count()
        spec, _lines, _text = load_campaign(p.path)          # the file on disk is an ordinary campaign file
        assert spec.name == f"repro-{mode}-{p.design.key}"
    f = finish_times(planned, 1000.0, None)
    assert f == sorted(f) and f[-1] - 1000.0 == pytest.approx(sum(p.rack_s for p in planned))
    if mode == "quick":     # about half an hour of rack time (first estimate, before overheads are learned)
        assert 25 * 60 < f[-1] - 1000.0 < 40 * 60
