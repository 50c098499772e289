"""`ctl reproduce` as a user calls it, without a rack: bad input is one line and exit 2 with nothing
written; `--dry-run` plans every campaign on the shipped virtual inventory (the virtual rack's
endpoints are this kernel: the read-only probe runs here) and writes nothing."""
from __future__ import annotations

import json
import re

import pytest

from tests.support.shipped import ROOT

INV = str(ROOT / "inventory" / "virtual.yaml")


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CTL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("CTL_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("CTL_INVENTORY", INV)
    from controller.cli import main

    def run(*argv: str) -> tuple[int, str, str]:
        rc = main(list(argv))
        out, err = capsys.readouterr()
        return rc, out, err
    return run


@pytest.mark.parametrize("argv, message", [
    (["reproduce", "--papers", "nope"], "ctl: error: --papers: nope is not a paper (known: mcubic, bbrv3, parallel, "
                                        "mptcp-bt, field)"),
    (["reproduce", "--quick", "--full"], "ctl: error: reproduce: give one of --smoke, --quick, --full, --deviations"),
    (["reproduce", "--at", "25:99"], "ctl: error: --at: '25:99' is neither HH:MM nor an ISO date and time"),
    (["reproduce", "--window", "22:00"], "ctl: error: --window: '22:00' is not a time window (example: 22:00-07:00)"),
    (["reproduce", "status", "x"], "ctl: error: no reproductions yet (`ctl reproduce --quick` starts one)"),
    (["reproduce", "report"], "ctl: error: no reproductions yet (`ctl reproduce --quick` starts one)"),
    (["reproduce", "report", "x"], "ctl: error: no reproductions yet (`ctl reproduce --quick` starts one)"),
    (["reproduce", "compare", "a"], "ctl: error: reproduce compare: the following arguments are required: SECOND"),
])
def test_bad_input_is_one_line_and_nothing_is_written(cli, tmp_path, argv, message):
    rc, out, err = cli(*argv)
    assert (rc, out, err.splitlines()) == (2, "", [message])
    assert not (tmp_path / "state" / "reproductions").exists()
    assert not (tmp_path / "state" / "campaigns.sqlite").exists()


def test_status_with_nothing_found_is_an_answer(cli, tmp_path):
    """The one rule of `ctl --help`: a status that finds nothing exits 0 and says so (JSON: null), as
    `ctl campaign status` does; a reproduction named, or the latest one a report acts on, that
    does not exist is bad input (2, above)."""
    rc, out, err = cli("reproduce", "status")
    assert (rc, out, err.splitlines()) == (0, "", ["no reproductions yet (`ctl reproduce --quick` starts one)"])
    rc, out, _err = cli("reproduce", "status", "--json")
    assert rc == 0 and json.loads(out)["data"] is None
    rc, out, err = cli("campaign", "status")
    assert rc == 0 and "no campaigns yet" in out + err
    assert not (tmp_path / "state" / "reproductions").exists()


def test_dry_run_plans_everything_and_writes_nothing(cli, tmp_path):
    rc, out, err = cli("reproduce", "--quick", "--dry-run", "--json")
    assert rc == 0, err
    d = json.loads(out)["data"]
    assert [c["key"] for c in d["campaigns"]] == ["mcubic-table1", "mcubic-table2", "mcubic-table3", "bbrv3",
                                                  "parallel", "mptcp-bt"]
    assert d["algorithms"]["cubic"]["runnable"] and d["algorithms"]["cubic"]["kind"] == "kernel"
    assert d["runs"] == sum(c["runs"] for c in d["campaigns"]) and re.fullmatch(r"\d{4}-.*Z", d["estimated_finish"])
    assert not (tmp_path / "state" / "reproductions").exists()
    assert not (tmp_path / "state" / "campaigns.sqlite").exists()
    assert not (tmp_path / "state" / "congestion").exists()        # a dry run builds nothing
    rc, out, _ = cli("reproduce", "--papers", "field", "--dry-run")
    assert rc == 0 and "0 campaigns, 0 runs" in out and "field: nothing to queue" in out


def test_dry_run_text_says_times_with_their_zone(cli):
    """The plan's finish column and total (was `Thu 21:01`, `2026-11-26 21:01`: no zone)."""
    from tests.unit.controller.test_timefmt import naive_date_times
    rc, out, err = cli("reproduce", "--quick", "--dry-run", "--at", "23:30")
    assert rc == 0, err
    stamp = r"\d{4}-\d\d-\d\dT\d\d:\d\d[+-]\d\d:\d\d"
    total = [l for l in out.splitlines() if l.startswith("total ")]
    assert len(total) == 1 and re.search(rf"{stamp} if started at {stamp}$", total[0]), out
    assert len(re.findall(rf"  {stamp}$", out, re.M)) >= 6 and not naive_date_times(out), out


def test_the_time_left_is_when_the_last_campaign_ends_not_the_sum_of_their_etas():
    """Each campaign's ETA counts the campaigns queued before it (2026-11-26: seven queued
    campaigns ending in 43 min ... 2 h 56 min were printed as 14 h 58 min of rack time left)."""
    from controller.cli.reproduce import time_left_s
    etas = [("done", 0.0), ("running", 43 * 60.0), ("queued", 91 * 60.0), ("queued", 176 * 60.0),
            ("paused", 300 * 60.0), ("queued", None)]
    assert time_left_s(etas) == 176 * 60.0
    assert time_left_s([("done", 0.0)]) == 0.0 and time_left_s([]) == 0.0


def test_a_cancelled_campaign_is_queued_again_in_its_place(cli, tmp_path, local_cc_build):
    """`ctl reproduce rerun`: the campaign file the reproduction wrote, queued as a new campaign
    that takes the cancelled one's place in the record (the report reads it), which keeps the
    cancelled campaign's id; only a cancelled campaign, and bad input changes nothing. (The state
    dir has ctl's BPF build already, as after the rack's first run: tests/conftest.py.)"""
    local_cc_build(tmp_path / "state")
    rc, out, err = cli("reproduce", "--smoke", "--papers", "mptcp-bt", "--no-wait", "--json")
    assert rc == 0, err
    rid = json.loads(out)["data"]["id"]
    path = tmp_path / "state" / "reproductions" / rid / "reproduction.json"
    before = path.read_text()
    rc, out, err = cli("reproduce", "rerun", "--campaign", "mptcp-bt", "--no-wait")
    assert (rc, out, err.splitlines()) == (2, "", ["ctl: error: reproduce rerun: campaign #1 (mptcp-bt) is queued: "
                                                   "only a cancelled campaign is queued again"])
    rc, _, _ = cli("campaign", "cancel", "1")
    assert rc == 0
    rc, out, err = cli("reproduce", "rerun", rid, "--campaign", "mptcp-bt,nope", "--no-wait")
    assert (rc, out, err.splitlines()) == (2, "", [f"ctl: error: reproduce rerun: {rid} has no campaign 'nope' "
                                                   "(its campaigns: mptcp-bt)"])
    assert path.read_text() == before                          # nothing queued for the good key either
    rc, out, err = cli("reproduce", "rerun", "--campaign", "mptcp-bt", "--no-wait", "--json")
    assert rc == 0, err
    d = json.loads(out)["data"]
    assert [(c["key"], c["num"], c["replaces_num"], c["runs"]) for c in d["campaigns"]] == [("mptcp-bt", 2, 1, 2)]
    entries = json.loads(path.read_text())["campaigns"]
    assert [(e["key"], e["num"], [x["num"] for x in e["replaces"]]) for e in entries] == [("mptcp-bt", 2, [1])]
    rc, out, _ = cli("reproduce", "status", "--json")
    assert [(c["num"], c["state"]) for c in json.loads(out)["data"]["campaigns"]] == [(2, "queued")]
    rc, out, err = cli("campaign", "status", "--json")
    assert rc == 0, err


def test_rerun_targets_only_cancelled_campaigns():
    from controller.cli.reproduce import rerun_targets
    from controller.errors import UsageError
    from controller.reproduce.record import Reproduction, replace_campaign
    r = Reproduction("R", "deviations", ["mcubic"], 0.0, "inv.yaml", "virtual", "virtual", "/runs",
                     campaigns=[{"key": k, "id": f"c{n}", "num": n} for n, k in ((1, "a"), (2, "b"), (3, "c"))])
    states = {"c1": "done", "c2": "cancelled", "c3": "paused"}
    assert rerun_targets(r, ["b"], states) == [r.campaigns[1]]
    for keys, says in ((["a"], "is done"), (["c"], "`ctl campaign resume 3` continues it"), (["z"], "no campaign 'z'")):
        with pytest.raises(UsageError, match=re.escape(says)):
            rerun_targets(r, keys, states)
    replace_campaign(r, r.campaigns[1], {"key": "b", "id": "c4", "num": 4})
    replace_campaign(r, r.campaigns[1], {"key": "b", "id": "c5", "num": 5})
    assert [e["num"] for e in r.campaigns] == [1, 5, 3]
    assert [x["num"] for x in r.campaigns[1]["replaces"]] == [2, 4]
