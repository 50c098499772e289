"""The verdict rules (pure): each claim reproduced, not reproduced, not runnable here or
inconclusive from synthetic cells, with the evidence that decided it and its strength."""
from __future__ import annotations

import pytest

from controller.reproduce.cells import Cell, Cells
from controller.reproduce.verdicts import (
    CLAIMS,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    NOT_RUNNABLE,
    REPRODUCED,
    Context,
    judge,
    unavailable_rows,
)
from tests.unit.controller.reproduce.conftest import statuses

BY_ID = {c.id: c for c in CLAIMS}


def C(paper, table, row, col, metric, *values, model=None, **facts):
    return Cell(paper, table, row, col, metric, tuple(values), None, model, "", {k: v for k, v in facts.items()})


def decide(claim, cells, unavailable=None, **kw):
    return BY_ID[claim].decide(Context(Cells(cells), unavailable or {}, **kw))


def t1(row, col, *v):
    return C("mcubic", "Table 1", row, col, "jain_index", *v)


def test_every_claim_has_a_rule_and_a_paper():
    assert len({c.id for c in CLAIMS}) == len(CLAIMS)
    assert {c.paper for c in CLAIMS} == {"mcubic", "bbrv3", "parallel", "mptcp-bt", "field"}
    assert all(c.rule and c.text and c.source for c in CLAIMS)


# ---- MCubic ------------------------------------------------------------------------------------

def test_coupled_fairer_firm_weak_and_failed():
    cells = [t1("Cubic", "10M", 0.60, 0.61, 0.62), t1("LIA", "10M", 0.70, 0.71, 0.72), t1("MCubic", "10M", 0.70, 0.72)]
    v = decide("mcubic-coupled-fairer", cells)
    # two values: t = 12.7, MCubic's interval (0.58..0.84) reaches Cubic's: holds on the means only
    assert v.status == REPRODUCED and v.strength == "weak"
    cells[2] = t1("MCubic", "10M", 0.70, 0.71, 0.72)
    v = decide("mcubic-coupled-fairer", cells)
    assert v.status == REPRODUCED and v.strength == "firm"
    assert v.evidence[0] == "link2 10M: LIA 0.71 ± 0.025 (n=3) > Cubic 0.61 ± 0.025 (n=3)"
    cells.append(t1("OLIA", "10M", 0.55, 0.70))      # mean 0.625 > 0.61, but its interval reaches below
    v = decide("mcubic-coupled-fairer", cells)
    assert v.status == REPRODUCED and v.strength == "weak"
    cells.append(t1("wVegas", "10M", 0.58))
    v = decide("mcubic-coupled-fairer", cells)
    assert v.status == NOT_REPRODUCED and v.strength == "no CI"
    assert "link2 10M: wVegas 0.58 (n=1, no CI) <= Cubic 0.61 ± 0.025 (n=3)" in v.evidence


def test_not_runnable_rows_decide_or_are_listed():
    cells = [t1("Cubic", "10M", 0.60, 0.61), t1("MCubic", "10M", 0.70, 0.72)]
    v = decide("mcubic-coupled-fairer", cells, {"LIA": "ctl's BPF program cannot load: a1: no BTF"})
    assert v.status == REPRODUCED and "LIA: not runnable here (ctl's BPF program cannot load: a1: no BTF)" in v.evidence
    v = decide("mcubic-coupled-fairer", cells, {"Cubic": "not in the kernel"})
    assert v.status == NOT_RUNNABLE and v.evidence == ("Cubic: not in the kernel",)
    v = decide("mcubic-fairest", cells, {"MCubic": "no BTF"})
    assert v.status == NOT_RUNNABLE and v.reason == "MCubic cannot run on this rack (the algorithm the claim is about)"
    assert decide("mcubic-coupled-fairer", []).status == INCONCLUSIVE


def test_mcubic_fairest_allows_the_papers_rounding():
    cells = [t1("MCubic", "20M", 0.700, 0.702), t1("LIA", "20M", 0.705, 0.709), t1("Cubic", "20M", 0.6, 0.61)]
    assert decide("mcubic-fairest", cells).status == REPRODUCED       # 0.701 vs 0.707: a tie at two decimals
    cells[1] = t1("LIA", "20M", 0.75, 0.76)
    assert decide("mcubic-fairest", cells).status == NOT_REPRODUCED


def ratio(table, row, col, *v):
    return C("mcubic", table, row, col, "ratio", *v)


def test_mcubic_ratio_and_the_others_below_one():
    cells = [ratio("Table 2", "MCubic", "100ms", 1.9, 2.0), ratio("Table 2", "MCubic", "200ms", 1.0, 1.1),
             ratio("Table 2", "LIA", "100ms", 1.8), ratio("Table 2", "LIA", "200ms", 0.8, 0.7)]
    assert decide("mcubic-ratio-at-least-1", cells).status == REPRODUCED
    v = decide("coupled-below-1-at-long-delays", cells)
    assert v.status == REPRODUCED and len(v.evidence) == 1 and v.evidence[0].startswith("delay 200ms: LIA 0.75")
    cells.append(ratio("Table 2", "MCubic", "500ms", 0.98))
    v = decide("mcubic-ratio-at-least-1", cells)
    assert v.status == NOT_REPRODUCED and v.strength == "no CI"
    assert decide("coupled-below-1-at-long-delays", cells[:3]).status == INCONCLUSIVE    # nothing from 200 ms


def test_hetero_ratio_falls():
    cells = [ratio("Table 3", r, c, v) for r, vals in (("MCubic", (0.74, 0.42)), ("LIA", (0.56, 0.35)))
             for c, v in zip(("100:300ms", "100:500ms"), vals)]
    assert decide("hetero-ratio-below-1-and-falling", cells).status == REPRODUCED
    assert decide("mcubic-best-coupled-hetero", cells).status == REPRODUCED
    rising = cells[:2] + [ratio("Table 3", "LIA", "100:300ms", 0.3), ratio("Table 3", "LIA", "100:500ms", 0.5)]
    v = decide("hetero-ratio-below-1-and-falling", rising)
    assert v.status == NOT_REPRODUCED and "LIA: 0.3 -> 0.5 (does not fall)" in v.evidence
    assert decide("hetero-ratio-below-1-and-falling", cells[:1]).status == INCONCLUSIVE   # one delay: no trend


# ---- BBRv3 ---------------------------------------------------------------------------------------

def share(cc, rtt_ms, loss, *v):
    return C("bbrv3", "Fig. 1-2", cc, f"RTT {rtt_ms}ms, loss {loss * 100:g}%", "share_pct", *v,
             rtt_us=[rtt_ms * 1000], loss=[loss])


def test_bbr_keeps_70():
    cells = [share("bbr", 2, 0, 95, 96, 95.5), share("bbr", 100, 0.001, 80, 84, 82)]
    v = decide("bbr-keeps-70", cells)
    assert v.status == REPRODUCED and v.strength == "firm"
    cells.append(share("bbr", 100, 0.00046, 69))
    v = decide("bbr-keeps-70", cells)
    assert v.status == NOT_REPRODUCED and v.strength == "no CI"
    assert "RTT 100ms, loss 0.046%: bbr 69 (n=1, no CI) < 70 %" in v.evidence
    assert decide("bbr-keeps-70", cells, {"bbr": "not in the kernel"}).status == NOT_RUNNABLE


def test_bbrv3_claims_are_decided_by_bbr3_with_v1_a_reference_row():
    cells = [share("bbr3", 2, 0, 95, 96), share("bbr3", 100, 0.001, 80, 84), share("bbr", 100, 0.001, 60, 61),
             share("cubic", 2, 0, 95, 96), share("cubic", 100, 0, 90, 92), share("cubic", 100, 0.001, 10, 12)]
    v = decide("bbr-keeps-70", cells)
    assert v.status == REPRODUCED and v.reason.startswith("bbr3 (BBRv3 after draft-ietf-ccwg-bbr-06, BPF) keeps")
    assert all(e.split(": ")[1].startswith("bbr3 ") for e in v.evidence)      # v1's 60 % decides nothing
    v = decide("cubic-collapses", cells)
    assert v.status == REPRODUCED and "RTT 100ms, loss 0.1%: bbr3 82" in " ".join(v.evidence)
    # only v1 measured (a reproduction from before bbr3): decided by it, and it says so
    v = decide("bbr-keeps-70", [share("bbr", 2, 0, 95, 96)], {"bbr3": "no BTF"})
    assert v.status == REPRODUCED and v.reason.startswith("bbr (kernel: v1 here) keeps")
    # a kernel that reports BBRv3 (Google's tree): its own bbr decides, named
    v3 = [C("bbrv3", "Fig. 1-2", "bbr", "RTT 2ms, loss 0%", "share_pct", 95, 96, rtt_us=[2000], loss=[0],
            kernel_bbr=["v3"]), share("bbr3", 2, 0, 50, 51)]
    v = decide("bbr-keeps-70", v3)
    assert v.status == REPRODUCED and v.reason.startswith("bbr (kernel: v3 here) keeps")


def test_cubic_collapses():
    cells = [share("cubic", 2, 0, 95, 96), share("cubic", 100, 0, 90, 92), share("cubic", 100, 0.001, 10, 12),
             share("bbr", 100, 0.001, 85, 86)]
    v = decide("cubic-collapses", cells)
    assert v.status == REPRODUCED and v.strength == "firm"
    assert decide("cubic-collapses", cells[:2]).status == INCONCLUSIVE       # no cell where it should collapse
    cells[1] = share("cubic", 100, 0, 50, 52)                                   # collapses without loss
    assert decide("cubic-collapses", cells).status == NOT_REPRODUCED


# ---- parallel streams ----------------------------------------------------------------------------

def ps(host, n, model, *v):
    return C("parallel", "Fig. 8", host, f"SC64+SC{n}", "share_pct", *v, model=model)


def test_shares_follow_the_model_within_the_papers_own_gap():
    cells = [ps("x1", 32, 66.67, 71, 70), ps("m0", 32, 33.33, 29, 30), ps("x1", 64, 50, 62, 61),
             ps("m0", 64, 50, 38, 39)]
    v = decide("shares-follow-model", cells)
    assert v.status == NOT_REPRODUCED        # the virtual rack's SC64+SC64: 12 points away
    assert "SC64+SC64: x1 61.5 ± 6.4 (n=2), model 50 %: beyond ±10" in v.evidence
    assert decide("shares-follow-model", cells[:2]).status == REPRODUCED


def test_share_grows_with_connections():
    cells = [ps("m0", n, 0, v) for n, v in ((2, 3.0), (16, 20.0), (32, 33.0), (64, 49.0))]
    assert decide("share-grows-with-connections", cells).status == REPRODUCED
    assert decide("share-grows-with-connections", cells[:1]).status == INCONCLUSIVE
    cells[3] = ps("m0", 64, 0, 30.0)
    assert decide("share-grows-with-connections", cells).status == NOT_REPRODUCED


# ---- MPTCP + BitTorrent --------------------------------------------------------------------------

def bt(fig, proto, col, *v, **facts):
    return C("mptcp-bt", fig, proto, col, "mbps", *v, **facts)


def test_bittorrent_claims():
    cells = [bt("Fig. 2", "TCP", "lp1", 12, 13), bt("Fig. 2", "MPTCP", "lp1", 37, 36),
             bt("Fig. 2", "TCP", "global", 3.9, 3.8), bt("Fig. 2", "MPTCP", "global", 3.0, 4.0)]
    v = decide("mptcp-beats-tcp-every-path", cells)
    assert v.status == NOT_REPRODUCED and v.evidence[1].startswith("initial path global: MPTCP 3.5")
    local = [bt("Fig. 3", "TCP", "tracker local", 16, 17, first_path=[["lp1"], ["lp1"]]),
             bt("Fig. 3", "MPTCP", "tracker local", 29, 30, first_path=[["lp1"], ["lp1"]])]
    glob = [bt("Fig. 3", "TCP", "tracker global", 3.8, 3.9, first_path=[["global"], ["global"]]),
            bt("Fig. 3", "MPTCP", "tracker global", 14, 15, first_path=[["global"], ["global"]],
               subflows_per_link=[{"global": 1, "lp1": 1, "lp2": 1}])]
    assert decide("bt-local-mptcp-faster", local).status == REPRODUCED
    v = decide("bt-global-both-slow", local + glob)
    assert v.status == REPRODUCED
    assert "MPTCP subflows per path (last download): global 1, lp1 1, lp2 1" in v.evidence
    glob[0] = bt("Fig. 3", "TCP", "tracker global", 3.8, 3.9, first_path=[["lp1"], ["global"]])
    assert decide("bt-global-both-slow", local + glob).reason == "the first connection did not always take the " \
                                                                  "global path"
    assert decide("bt-global-both-slow", glob).status == INCONCLUSIVE


def test_field_table():
    assert decide("field-table1", []).status == NOT_RUNNABLE
    runs = [{"run": "20261120T101010Z_field", "table1": [{"host": "m1"}]}]
    assert decide("field-table1", [], field_runs=runs, rack_kind="virtual").status == NOT_RUNNABLE
    v = decide("field-table1", [], field_runs=runs, rack_kind="physical")
    assert v.status == INCONCLUSIVE and v.evidence == ("field run 20261120T101010Z_field: 1 host(s)",)


def test_judge_and_unavailable_rows():
    un = unavailable_rows(statuses(runnable=("cubic", "bbr", "lia"), missing=(("olia", "no BTF"),)))
    assert un == {"OLIA": "no BTF", "wVegas": "neither in the kernel nor one of ctl's BPF programs",
                  "MCubic": "neither in the kernel nor one of ctl's BPF programs",
                  "bbr3": "not one of ctl's BPF programs here"}
    got = judge(Context(Cells(), un, papers=["parallel"]))
    assert [c.id for c, _ in got] == ["shares-follow-model", "share-grows-with-connections"]
    assert {v.status for _, v in got} == {INCONCLUSIVE}


@pytest.mark.parametrize("claim", [c.id for c in CLAIMS])
def test_no_data_never_claims_a_result(claim):
    v = decide(claim, [])
    assert v.status in (INCONCLUSIVE, NOT_RUNNABLE) and v.reason
