"""A run that does not complete says why on stderr, one line (scripts read stderr, and with
--json stdout holds only the JSON), with the partial summary's count when there is one."""
from __future__ import annotations

from pathlib import Path

from controller.cli.run import _say_why
from controller.run.runner import RunOutcome


def test_completed_says_nothing(capsys):
    _say_why(RunOutcome("r1", Path("/runs/r1"), "completed", {"valid": True}, 0))
    assert capsys.readouterr().err == ""


def test_failed_and_aborted_say_why(capsys):
    _say_why(RunOutcome("r2", Path("/runs/r2"), "failed", None, 1, "mptcp: iperf3:\n unable to connect"))
    assert capsys.readouterr().err == "ctl: run r2 failed: mptcp: iperf3: unable to connect; record: /runs/r2\n"
    partial = {"partial": True, "partial_run": {"completed": 14, "planned": 20, "unit": "BitTorrent downloads"}}
    _say_why(RunOutcome("r3", Path("/runs/r3"), "aborted", partial, 143, "interrupted by SIGTERM"))
    assert capsys.readouterr().err == ("ctl: run r3 aborted: interrupted by SIGTERM (partial summary: 14 of 20 "
                                       "BitTorrent downloads completed); record: /runs/r3\n")
    _say_why(RunOutcome("r4", Path("/runs/r4"), "invalid", {"valid": False}, 4, None))
    assert capsys.readouterr().err == "ctl: run r4 invalid: no reason recorded; record: /runs/r4\n"
