"""The integration tests' check of what a test left registered in the kernel (tests/support/kernel_cc.py),
on snapshots written here: another rack's registration while the test ran is not the test's; the
test's own hold, or a name nobody holds, is. (On the real kernel: tests/integration/test_bpf_cc.py,
test_a_leaked_hold_fails_the_restore_check_and_another_racks_hold_does_not.)"""
from __future__ import annotations

import json

import pytest

from tests.support.kernel_cc import Snapshot, held_by_others, left_behind, run_holders

BASE = frozenset({"reno", "cubic", "bbr"})
OURS = {"run:t1/s/r1"}


def snap(extra: set[str] = frozenset(), holders: dict | None = None, allowed: set[str] | None = None) -> Snapshot:
    return Snapshot(BASE | extra, frozenset(allowed if allowed is not None else {"reno", "bbr"} | extra),
                    holders or {})


def entry(*holders: str) -> dict:
    return {"id": 7, "sha256": "0" * 64, "holders": list(holders), "holders_seen": list(holders)}


def test_nothing_changed_is_nothing_left():
    assert left_behind(snap(), snap(), OURS) == []


def test_another_racks_registration_meanwhile_is_not_ours():
    before = snap()
    after = snap({"mcubic", "lia"}, {"mcubic": entry("run:campaign/x/1"), "lia": entry("run:campaign/x/2")})
    assert not after.available <= before.available           # the old check failed here
    assert left_behind(before, after, OURS) == []


def test_another_racks_program_that_went_meanwhile_is_not_ours():
    before = snap({"cubic314"}, {"cubic314": entry("run:campaign/x/3")})
    assert left_behind(before, snap(), OURS) == []


def test_our_hold_left_behind_fails_even_when_another_rack_shares_the_program():
    before = snap()
    after = snap({"olia"}, {"olia": entry("run:other/y/1", "run:t1/s/r1")})
    assert left_behind(before, after, OURS) == ["olia is still held by run:t1/s/r1"]


def test_our_program_left_registered_without_a_hold_fails_naming_both_lists():
    problems = left_behind(snap(), snap({"balia"}), OURS)
    assert problems == ["balia appeared in tcp_available_congestion_control and no other holder holds it",
                        "balia appeared in tcp_allowed_congestion_control and no other holder holds it"]


def test_a_name_that_went_and_no_other_holder_explains_fails():
    problems = left_behind(snap({"lia"}), snap(), OURS)
    assert problems and all(p.startswith("lia went from") for p in problems)


def test_a_hold_that_is_only_ours_does_not_explain_a_change():
    after = snap({"olia"}, {"olia": entry("run:t1/s/r1")})
    assert held_by_others(after, OURS) == set()
    assert "olia is still held by run:t1/s/r1" in left_behind(snap(), after, OURS)
    assert len(left_behind(snap(), after, OURS)) == 3


@pytest.mark.parametrize("doc", [{"congestion": {"holder": "run:rack/state/r1"}}, {"congestion": None}, "not json"])
def test_run_holders_reads_each_records_holder_and_the_old_form(tmp_path, doc):
    run = tmp_path / "r1"
    run.mkdir()
    (run / "manifest.json").write_text(doc if isinstance(doc, str) else json.dumps(doc))
    want = {"run:r1"} | ({"run:rack/state/r1"} if isinstance(doc, dict) and doc["congestion"] else set())
    assert run_holders(tmp_path) == want
    assert run_holders(tmp_path / "missing") == set()
