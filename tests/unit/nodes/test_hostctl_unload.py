"""The pure parts of hostctl's unload when sockets still run a program (nodes/congestion/hostctl.py):
the line naming what still runs it, the optional wait argument, and the driver and run stage that
carry its answer into the run record. The kernel paths are tests/integration/test_hostctl_unload.py."""
from __future__ import annotations

import json

import pytest

from controller.commands import CommandResult
from controller.run.congestion import record_unload_waits
from nodes.congestion import hostctl
from nodes.congestion.driver import CongestionDriver, hostctl_command

HOLDER = "run:virtual/0123456789ab/20261127T081010Z_shared-bottleneck_cc-mcubic"


def test_the_warning_names_each_namespace_its_sockets_by_state_and_a_default():
    users = {"netns c7lab-sb1": {"FIN-WAIT-1": 2, "ESTAB": 1}, "netns c7lab-sa1": {"default": 1},
             "this namespace": {"LAST-ACK": 1}}
    assert hostctl.users_text("mcubic", users) == (
        "mcubic is still run by 4 sockets and 1 namespace default: netns c7lab-sa1: default congestion control; "
        "netns c7lab-sb1: ESTAB 1, FIN-WAIT-1 2; this namespace: LAST-ACK 1")
    assert hostctl.users_text("lia", {"netns a": {"ESTAB": 1}}) == "lia is still run by 1 socket: netns a: ESTAB 1"
    assert hostctl.users_text("lia", {"netns a": {"default": 1}, "netns b": {"default": 1}}) == (
        "lia is still run by 2 namespace defaults: netns a: default congestion control; "
        "netns b: default congestion control")


def test_the_wait_argument_is_seconds_up_to_600(capsys):
    assert hostctl.wait_arg(None) == hostctl.USERS_WAIT_S
    assert hostctl.wait_arg("0") == 0.0 and hostctl.wait_arg("2.5") == 2.5 and hostctl.wait_arg("600") == 600.0
    for bad in ("-1", "601", "1e3", "nan", "", "5 ", "1.2345", "0x10"):
        with pytest.raises(SystemExit) as exc:
            hostctl.wait_arg(bad)
        assert exc.value.code == 2
        doc = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert doc["ok"] is False and "WAIT_S must be seconds between 0 and 600" in doc["error"], doc


def test_unload_takes_an_optional_wait_and_nothing_more(capsys):
    with pytest.raises(SystemExit) as exc:
        hostctl.main(["unload", "lia", HOLDER, "5", "extra"])
    assert exc.value.code == 2
    assert "unload NAME HOLDER [WAIT_S]" in json.loads(capsys.readouterr().out)["error"]


def _result(args: tuple[str, ...], doc: dict) -> CommandResult:
    return CommandResult("sa1", ("python3", "-c", "SRC", *args), 0, json.dumps(doc) + "\n", "")


ANSWERS = [
    _result(("unload", "mcubic", HOLDER), {
        "ok": True, "action": "unregistered", "name": "mcubic", "id": 230, "conns_left": 0, "waited_s": 30.4,
        "in_use": {"netns c7lab-sb1": {"FIN-WAIT-1": 2}}, "lingering": True,
        "warning": "mcubic is still run by 2 sockets: netns c7lab-sb1: FIN-WAIT-1 2 after 30.4 s: unregistered "
                   "anyway (no new socket can select it)"}),
    _result(("unload", "lia", HOLDER), {"ok": True, "action": "unregistered", "name": "lia", "id": 231,
                                        "conns_left": 0, "waited_s": 1.1, "in_use": {}, "lingering": False}),
    _result(("unload", "olia", HOLDER), {"ok": True, "action": "left", "name": "olia", "holders": ["run:x"]}),
    _result(("unload", "wvegas", HOLDER), {"ok": True, "action": "unregistered", "name": "wvegas", "id": 9,
                                           "conns_left": 0}),      # an older hostctl: no wait reported
]


def test_the_driver_reads_the_wait_of_each_program_this_run_unregistered():
    assert CongestionDriver("sa1", HOLDER).unload_waits(ANSWERS) == {
        "mcubic": {"waited_s": 30.4, "in_use": {"netns c7lab-sb1": {"FIN-WAIT-1": 2}}, "lingering": True,
                   "warning": json.loads(ANSWERS[0].stdout)["warning"]},
        "lia": {"waited_s": 1.1, "in_use": {}, "lingering": False}}


def test_the_run_records_the_wait_and_makes_its_warning_the_runs():
    cong = {"hosts": {"sa1": {}}}
    new = record_unload_waits(cong, "sa1", CongestionDriver("sa1", HOLDER).unload_waits(ANSWERS))
    assert set(cong["hosts"]["sa1"]["unload"]) == {"mcubic", "lia"}
    assert new == cong["warnings"] == ["sa1: mcubic: " + json.loads(ANSWERS[0].stdout)["warning"]]
    assert record_unload_waits(cong, "sa2", {}) == [] and "sa2" not in cong["hosts"]


def test_every_wait_after_the_sockets_ends_by_the_unloads_deadline():
    import time
    now = time.monotonic()
    assert hostctl._left(now + 1000, hostctl.CONNS_WAIT_S) == hostctl.CONNS_WAIT_S
    assert hostctl._left(now - 1, hostctl.FREE_WAIT_S) == 0.0
    assert 0 < hostctl._left(now + 5, hostctl.CONNS_WAIT_S) <= 5
    # by default the sockets' wait and the two after it fit in the driver's command timeout
    assert hostctl.USERS_WAIT_S + hostctl.EXTRA_WAIT_S < hostctl_command("unload", "lia", HOLDER, note="").timeout
