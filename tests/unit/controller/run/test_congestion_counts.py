"""What a run records of the counts hostctl reports when it unloads the coupled programs
(controller.run.congestion.record_counts, pure): conns_left, coupling_refused, subflows_reaped.

Contract: only coupled programs' counts are kept (bbr3 has no coupling map); they go under the
host's entry by their key; a warning line per non-zero count when the kind warns, appended to the
record's warnings; nothing at all, not even an empty warnings list, when no coupled program was
unloaded here or none warns.
"""
from __future__ import annotations

from controller.run.congestion import record_counts


def fresh() -> dict:
    return {"hosts": {"a1": {}}}


def test_counts_of_coupled_programs_with_a_warning_per_non_zero_count():
    cong = fresh()
    kept, new = record_counts(cong, "a1", "coupling_refused", {"lia": 2, "olia": 0, "bbr3": 5, "balia": None},
                              lambda name, n: f"a1: {name}: {n} refused")
    assert kept == {"lia": 2, "olia": 0, "balia": None}
    assert cong["hosts"]["a1"]["coupling_refused"] == kept
    assert new == ["a1: lia: 2 refused"] and cong["warnings"] == new


def test_a_count_that_does_not_warn_and_one_with_nothing_to_say_leave_no_warnings_key():
    cong = fresh()
    record_counts(cong, "a1", "subflows_reaped", {"mcubic": 3})
    record_counts(cong, "a1", "conns_left", {"lia": 0}, lambda name, n: "never")
    assert cong["hosts"]["a1"] == {"subflows_reaped": {"mcubic": 3}, "conns_left": {"lia": 0}}
    assert "warnings" not in cong


def test_nothing_recorded_when_no_coupled_program_was_unloaded_here():
    cong = fresh()
    assert record_counts(cong, "a1", "conns_left", {"bbr3": 1}, lambda name, n: "x") == ({}, [])
    assert record_counts(cong, "a1", "conns_left", {}) == ({}, [])
    assert cong == fresh()


def test_warnings_add_to_those_already_recorded():
    cong = {"hosts": {"a1": {}}, "warnings": ["earlier"]}
    record_counts(cong, "a1", "conns_left", {"lia": 1}, lambda name, n: f"{name} {n}")
    assert cong["warnings"] == ["earlier", "lia 1"]
