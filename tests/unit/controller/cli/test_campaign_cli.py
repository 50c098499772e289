"""`ctl campaign ...` as a user runs it, without a rack.

`plan` runs as `python -m controller` under an audit hook (sys.addaudithook) that lists
socket activity and file opens for writing: it contacts nothing and writes nothing. The
queue commands (submit, status, pause, resume --no-wait, cancel) run in-process through
`controller.cli.main`, on a fresh state dir; none of them touches a rack.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.shipped import ROOT
from tests.unit.controller.test_timefmt import naive_date_times

INV = str(ROOT / "inventory" / "virtual.yaml")

AUDITED_MAIN = textwrap.dedent("""
    import atexit, json, os, sys
    events = []
    def hook(event, args):
        if event in ("socket.connect", "socket.getaddrinfo", "socket.sendto"):
            events.append([event, repr(args)[:200]])
        elif event == "open" and isinstance(args[0], str):
            path, mode, flags = args
            writes = (mode and any(m in str(mode) for m in "wax+")) or \
                (isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))
            if writes:
                events.append([event, path])
        elif event == "sqlite3.connect":
            events.append([event, repr(args)[:200]])
    sys.addaudithook(hook)
    atexit.register(lambda: print("AUDIT " + json.dumps(events), file=sys.stderr))
    import runpy
    runpy.run_module("controller", run_name="__main__", alter_sys=True)
""")

CAMPAIGN = """
version: 1
name: cli-unit
scenario: distinct-bottleneck
fixed: {duration: 5s}
sweep:
  link2: [10M, 20M]
  cc: [cubic, reno]
repetitions: 3
order: random
seed: 4242
pause: 10s
overhead: 20s
window: "22:00-07:00"
"""


def audited(argv: list[str], state: Path, **extra_env: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("CTL_INVENTORY", "CTL_INFLUX_TOKEN")}
    env.update(CTL_STATE_DIR=str(state), CTL_RUNS_DIR=str(state / "runs"), **extra_env)
    return subprocess.run([sys.executable, "-c", AUDITED_MAIN, *argv], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)


def audit_of(p: subprocess.CompletedProcess) -> list:
    line = [l for l in p.stderr.splitlines() if l.startswith("AUDIT ")][-1]
    return json.loads(line[len("AUDIT "):])


def test_plan_prints_runs_rack_time_and_finish_and_changes_nothing(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(CAMPAIGN)
    state = tmp_path / "state"
    # a zone east of UTC by 5 h 30 min (POSIX TZ): every time printed carries its offset
    p = audited(["campaign", "plan", str(f), "--inventory", INV, "--at", "21:00"], state, TZ="XST-5:30")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "scenario distinct-bottleneck, 4 cases x 3 repetitions = 12 runs" in out
    assert "order: random (seed 4242)" in out
    assert len([l for l in out.splitlines() if l.strip()[:1].isdigit()]) == 12
    # 12 x (5 s + 20 s) + 11 x 10 s = 410 s; starts at 21:00, the window opens at 22:00
    assert "estimated rack time: 6m 50s" in out
    assert re.search(r"^estimated finish: +\d{4}-\d\d-\d\dT22:06\+05:30 if started at \d{4}-\d\d-\d\dT21:00\+05:30, "
                     r"only inside the window 22:00-07:00$", out, re.M), out
    assert not naive_date_times(out), out
    assert "nothing was submitted or changed" in out
    # nothing contacted; nothing written in the state dir, the project or next to the file
    # (libraries open /dev/null and probe the temp dir; those are not ctl's state)
    events = audit_of(p)
    assert not [e for e in events if e[0] != "open"], events
    ours = (str(tmp_path), str(ROOT))
    assert not [e for e in events if e[1].startswith(ours)], events
    assert not state.exists() or not any(state.rglob("*"))


def test_plan_json_is_the_same_plan(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(CAMPAIGN)
    p = audited(["campaign", "plan", str(f), "--inventory", INV, "--json"], tmp_path / "state")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)["data"]
    assert d["seed"] == 4242 and len(d["runs"]) == 12 and d["estimated_rack_s"] == 410.0
    assert d["runs"][0]["argv"][:2] == ["--duration", "5s"]
    assert sorted((r["case"], r["repetition"]) for r in d["runs"]) == [(c, r) for c in (1, 2, 3, 4) for r in (1, 2, 3)]


def test_a_bad_campaign_file_is_one_line_and_exit_2(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text(CAMPAIGN.replace("repetitions: 3", "repetitons: 3"))
    p = audited(["campaign", "plan", str(f), "--inventory", INV], tmp_path / "state")
    errors = [l for l in p.stderr.splitlines() if not l.startswith("AUDIT ")]
    assert p.returncode == 2 and errors == [f"ctl: error: {f}:9: repetitons: unknown field (typo?)"]


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


def test_queue_commands(cli, tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(CAMPAIGN)
    rc, out, _ = cli("campaign", "submit", str(f), "--at", "23:30", "--json")
    assert rc == 0
    sub = json.loads(out)["data"]
    assert sub["num"] == 1 and sub["runs"] == 12 and sub["seed"] == 4242 and sub["scheduler"] is None
    state = tmp_path / "state"
    assert (state / "campaigns" / sub["id"] / "campaign.yaml").read_text() == CAMPAIGN
    rc, out, _ = cli("campaign", "status", "1", "--json")
    st = json.loads(out)["data"]
    assert (st["state"], st["progress"]["total"], st["progress"]["pending"]) == ("queued", 12, 12)
    assert st["not_before"] is not None and st["window"] == "22:00-07:00" and st["seed"] == 4242
    assert st["progress"]["eta_s"] > 0 and len(st["runs"]) == 12 and st["runs_root"] == str(tmp_path / "runs")
    rc, out, _ = cli("campaign", "status")
    assert rc == 0 and "#1 cli-unit [" in out and "0/12 done" in out
    rc, out, _ = cli("campaign", "pause", "1", "--reason", "rack needed for a demo")
    assert rc == 0
    rc, out, _ = cli("campaign", "status", "1")
    assert "state    paused: rack needed for a demo" in out
    rc, out, err = cli("campaign", "resume", "1", "--no-wait")
    assert rc == 0 and "resumed" in err
    assert json.loads(cli("campaign", "status", "1", "--json")[1])["data"]["state"] == "queued"
    rc, out, _ = cli("campaign", "cancel", "1")
    assert rc == 0 and "cancelled" in out
    st = json.loads(cli("campaign", "status", "1", "--json")[1])["data"]
    assert st["state"] == "cancelled" and st["progress"]["cancelled"] == 12
    rc, out, err = cli("campaign", "resume", "1")
    assert rc == 2 and "is cancelled: nothing to resume" in err
    rc, out, err = cli("campaign", "status", "7")
    assert rc == 2 and "no campaign '7'" in err


def test_submit_and_status_text_say_times_with_their_zone(cli, tmp_path):
    """`campaign submit` and `status` (was `finish 2026-11-26 21:01`, `ETA Thu 21:01`: no zone)."""
    f = tmp_path / "c.yaml"
    f.write_text(CAMPAIGN)
    rc, out, _ = cli("campaign", "submit", str(f), "--at", "23:30")
    assert rc == 0 and re.search(r", finish \d{4}-\d\d-\d\dT\d\d:\d\d[+-]\d\d:\d\d$", out.splitlines()[0]), out
    texts = [out]
    for argv in (("campaign", "status"), ("campaign", "status", "1")):
        rc, out, _ = cli(*argv)
        assert rc == 0
        assert re.search(r"ETA +\d{4}-\d\d-\d\dT\d\d:\d\d[+-]\d\d:\d\d \(in ", out), out
        texts.append(out)
    assert not [t for t in texts if naive_date_times(t)], texts
