"""`ctl runs show RUN [--window START:END] [--json]` on recorded runs (controller/cli/runs.py);
`ctl runs list` and `ctl runs export`: tests/unit/controller/cli/test_runs_list_export.py.

Contract: RUN is a record directory or a run id under the runs directory; the text is what
ran (scenario, parameters, status, times in ISO 8601 with their zone), where the record is,
and the scenario's rendered summary as `ctl run` prints it, over the window when one is
given; `--json` prints the summary; bad input is one line on stderr and exit 2; the record
is never written.
"""
from __future__ import annotations

import json
import re
import shutil

import pytest

from controller import scenarios
from controller.cli import build_parser, main
from controller.run.replay import load_run
from tests.support.shipped import RECORDED_RUNS, no_state_dir

RUN = RECORDED_RUNS / "shared-bottleneck" / "delay-800ms"
RUN_ID = "20261122T041817Z_shared-bottleneck_delay-800ms"


@pytest.fixture()
def ctl(capsys):
    def call(*argv: str) -> tuple[int, str, str]:
        with no_state_dir():
            code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err
    return call


@pytest.fixture()
def runs_dir(tmp_path):
    shutil.copytree(RUN, tmp_path / RUN_ID)
    return tmp_path


def test_show_by_run_id_prints_what_ran_and_the_summary(ctl, runs_dir):
    code, out, err = ctl("runs", "show", RUN_ID, "--runs-dir", str(runs_dir))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"run {RUN_ID}: shared-bottleneck, invalid"
    assert lines[1] == "parameters given: --delay 800ms --duration 20s (the others at their defaults)"
    assert lines[2] == "started -, finished -"    # extract.py keeps no creation time
    assert re.fullmatch(r"traffic 2026-11-2[12]T\d\d:\d\d:\d\d[+-]\d\d:\d\d to 2026-11-2[12]T\d\d:\d\d:\d\d[+-]\d\d:\d\d "
                        r"\(31\.3 s\)", lines[3]), lines[3]
    assert lines[4] == f"record: {runs_dir / RUN_ID}"
    with no_state_dir():
        sc = scenarios.get("shared-bottleneck")
        expected = sc.render(sc.summarize(load_run(RUN)))
    assert out.endswith(expected + "\n")
    assert "sender counters (nstat, whole run): sa1 HyStart train 0, delay 0" in out


def test_show_a_window_as_json(ctl):
    code, out, err = ctl("runs", "show", str(RUN), "--window", "10s:25s", "--json")
    assert (code, err) == (0, "")
    s = json.loads(out)["data"]
    assert s["window"] == {"start_s": 10.0, "end_s": 25.0, "traffic_s": 31.3, "of": "traffic"}
    assert s["scenario"] == "shared-bottleneck" and s["ratio"] is not None
    # the same provenance and units summary.json carries, times ISO 8601 UTC
    assert s["provenance"]["run_id"] == RUN_ID and s["provenance"]["traffic"]["start"] == "2026-11-22T04:18:20.381966Z"
    assert s["units"]["sender_mbps"] == "Mbit/s" and s["units"]["bottleneck_share_pct"] == "%"


def test_show_a_window_as_text(ctl):
    code, out, _ = ctl("runs", "show", str(RUN), "--window", ":15s")
    assert code == 0
    assert "window: 0 s to 15 s of 31.3 s of traffic (every number below is over it unless its definition says " \
           "whole run; --json shows them)" in out
    assert "window 0-15 s of 31.3 s of traffic" in out


@pytest.mark.parametrize("argv, message", [
    (["--window", "20s:10s"], "ctl: error: --window: END 10 s is not after START 20 s (the run's traffic lasted "
                              "31.300 s)"),
    (["--window", "0:1h"], "ctl: error: --window: END 3600 s is beyond the run's traffic (the run's traffic lasted "
                           "31.300 s; `0:` runs to its end)"),
    (["--window", "later:"], "ctl: error: --window START: 'later' is not a duration (examples: 50ms, 30s, 2h) (the "
                             "run's traffic lasted 31.300 s)"),
])
def test_bad_windows_are_one_line_and_exit_2(ctl, argv, message):
    code, out, err = ctl("runs", "show", str(RUN), *argv)
    assert (code, out, err) == (2, "", message + "\n")


def test_an_unknown_run_is_exit_2(ctl, tmp_path):
    code, out, err = ctl("runs", "show", "no-such-run", "--runs-dir", str(tmp_path))
    assert (code, out) == (2, "")
    assert err == f"ctl: error: runs: no run record 'no-such-run': neither a record directory nor a run id " \
                  f"under {tmp_path}\n"
    # A run id never climbs out of the runs directory.
    code, _, err = ctl("runs", "show", "../" + RUN.name, "--runs-dir", str(RUN.parent / "x"))
    assert code == 2 and "no run record" in err


def test_a_run_cut_short_shows_its_own_summary_and_refuses_a_window(ctl, tmp_path):
    rec = tmp_path / "cut"
    shutil.copytree(RUN, rec)
    m = json.loads((rec / "manifest.json").read_text())
    (rec / "manifest.json").write_text(json.dumps({**m, "status": "aborted"}))
    summary = {"partial": True, "status": "aborted", "points": 3,
               "partial_run": {"status": "aborted", "reason": "SIGTERM", "unit": "flows", "planned": 2, "ended": 0,
                               "completed": 0, "summarized": "generic"}}
    (rec / "summary.json").write_text(json.dumps(summary))
    code, out, err = ctl("runs", "show", str(rec))
    assert (code, err) == (0, "")
    assert "PARTIAL (aborted: SIGTERM): 0 of 2 flows completed; concurrent flows cut short are not summarized" in out
    assert "(the run's own summary.json)" in out
    code, out, err = ctl("runs", "show", str(rec), "--window", "0:5s")
    assert code == 2 and err == "ctl: error: runs show: run cut ended 'aborted': --window needs a run whose traffic " \
                                "completed\n"


def test_every_argument_has_help():
    runs = build_parser("runs")._subparsers._group_actions[0].choices["runs"]
    show = runs._subparsers._group_actions[0].choices["show"]
    for action in show._actions:
        assert action.help, action.dest


def test_show_lists_the_warnings_the_run_recorded(ctl, tmp_path):
    """A researcher reading a run later sees what `ctl run` warned about while it ran: a value changed
    on its way to the rack, a congestion control's warning, a stalled controller. The record is
    untrusted input: an entry that is not text is left out, never printed raw."""
    rec = tmp_path / "warned"
    shutil.copytree(RUN, rec)
    m = json.loads((rec / "manifest.json").read_text())
    m["conversions"] = [{"what": "bottleneck queue of path1", "asked": "1 BDP = 5,000,000 B",
                         "applied": "1000 slots", "reason": "the bridge's limit"},
                        {"what": 3, "asked": None}]
    m["congestion"] = {**(m.get("congestion") or {}), "warnings": ["sa1: lia's coupling map kept 1 entry", {"x": 1}]}
    m["controller_loop"] = {"warning": "the controller's event loop stalled 1 time(s) during the traffic, up to 0.34 s"}
    (rec / "manifest.json").write_text(json.dumps(m))
    code, out, err = ctl("runs", "show", str(rec))
    assert (code, err) == (0, "")
    warned = [l for l in out.splitlines() if l.startswith("warning (recorded): ")]
    assert warned == ["warning (recorded): bottleneck queue of path1: 1 BDP = 5,000,000 B -> 1000 slots: the bridge's limit",
                      "warning (recorded): sa1: lia's coupling map kept 1 entry",
                      "warning (recorded): the controller's event loop stalled 1 time(s) during the traffic, up to 0.34 s"]
    assert out.splitlines().index(warned[-1]) + 1 == out.splitlines().index(f"record: {rec}")
