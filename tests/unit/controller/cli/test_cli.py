"""`ctl` end to end as a user runs it: `python -m controller ...` in a subprocess.

Contract (README, cli.py): bad input is ONE line on stderr starting `ctl: error:` and exit
status 2, before anything on the rack is touched; `ctl scenarios [show NAME]` documents
scenarios; `ctl parse KIND FILE` prints JSON; `ctl run ... --dry-run` prints every command
for every host and changes nothing -- it works on an unreachable physical rack (the
lab-rack example's 192.168.50.x hosts do not exist here).

Every invocation gets its own empty CTL_STATE_DIR and CTL_RUNS_DIR. They are started
together by one module fixture and collected afterwards, so the module costs about one
start-up, not one per case. The dry run runs under a Python audit hook (sys.addaudithook,
a public interpreter API) that lists every socket connect/name lookup, to show that
nothing was contacted.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.shipped import ROOT

IPERF3_JSON = ROOT / "tests" / "fixtures" / "recorded" / "generated" / "iperf3_mptcp.client.json"
LAB = "inventory/lab-rack.example.yaml"

# `python -m controller` with an audit hook recording network activity to $CTL_TEST_AUDIT.
AUDITED_MAIN = textwrap.dedent("""
    import atexit, json, os, sys
    events = []
    def hook(event, args):
        if event in ("socket.connect", "socket.getaddrinfo", "socket.gethostbyname", "socket.sendto"):
            events.append([event, repr(args)[:300]])
        elif event == "subprocess.Popen" and os.path.basename(str(args[0])) in ("ssh", "scp", "sftp"):
            events.append([event, repr(args)[:300]])
    sys.addaudithook(hook)
    atexit.register(lambda: open(os.environ["CTL_TEST_AUDIT"], "w").write(json.dumps(events)))
    import runpy
    runpy.run_module("controller", run_name="__main__", alter_sys=True)
""")

CASES: dict[str, list[str]] = {
    "negative_rate": ["run", "distinct-bottleneck", "--link2", "-5M"],
    "huge_rate": ["run", "distinct-bottleneck", "--link2", "1e400"],
    "unknown_scenario": ["run", "no-such-scenario"],
    "unknown_run_option": ["run", "distinct-bottleneck", "--bogus", "1"],
    "unknown_global_option": ["--bogus", "scenarios"],
    "scenarios": ["scenarios"],
    "scenarios_show": ["scenarios", "show", "distinct-bottleneck"],
    "parse_iperf3": ["parse", "iperf3", str(IPERF3_JSON)],
    "dry_run": ["run", "distinct-bottleneck", "--link2", "20M", "--inventory", LAB, "--dry-run"],
}


@dataclass
class Result:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    state: Path
    runs: Path
    audit: list | None


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, Result]:
    base = tmp_path_factory.mktemp("cli")
    procs = {}
    for name, argv in CASES.items():
        state, runs = base / name / "state", base / name / "runs"
        state.mkdir(parents=True)
        runs.mkdir()
        env = {k: v for k, v in os.environ.items() if k not in ("CTL_INVENTORY", "CTL_INFLUX_TOKEN")}
        env.update(CTL_STATE_DIR=str(state), CTL_RUNS_DIR=str(runs),
                   CTL_TEST_AUDIT=str(base / name / "audit.json"))
        cmd = [sys.executable, "-c", AUDITED_MAIN, *argv] if name == "dry_run" else \
            [sys.executable, "-m", "controller", *argv]
        procs[name] = (argv, state, runs, subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                                            stderr=subprocess.PIPE, text=True))
    out = {}
    for name, (argv, state, runs, p) in procs.items():
        try:
            stdout, stderr = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            stdout, stderr = p.communicate()
        audit_file = base / name / "audit.json"
        audit = json.loads(audit_file.read_text()) if audit_file.exists() else None
        out[name] = Result(argv, p.returncode, stdout, stderr, state, runs, audit)
    return out


def one_error_line(r: Result) -> str:
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("ctl: error: "), lines[0]
    return lines[0]


def nothing_written(r: Result) -> None:
    assert list(r.runs.rglob("*")) == [], "a run record was written"
    assert list(r.state.rglob("*")) == [], "state was written"


# ---- bad input: one line, exit 2 --------------------------------------------------------------


def test_negative_rate(results):
    r = results["negative_rate"]
    assert r.returncode == 2
    assert one_error_line(r) == "ctl: error: --link2: '-5M' must be a positive rate"
    assert r.stdout == ""
    nothing_written(r)


def test_huge_rate_is_bad_input_not_a_crash(results):
    r = results["huge_rate"]
    assert r.returncode == 2, r.stderr[-500:]
    assert "--link2" in one_error_line(r)
    nothing_written(r)


def test_unknown_scenario(results):
    r = results["unknown_scenario"]
    assert r.returncode == 2
    line = one_error_line(r)
    assert "unknown scenario 'no-such-scenario'" in line and "distinct-bottleneck" in line
    nothing_written(r)


def test_unknown_option(results):
    r = results["unknown_run_option"]
    assert r.returncode == 2
    assert "unrecognized arguments: --bogus 1" in one_error_line(r)
    r = results["unknown_global_option"]
    assert r.returncode == 2
    assert "unrecognized arguments: --bogus" in one_error_line(r)


# ---- scenarios and parse ------------------------------------------------------------------------


def test_scenarios_list(results):
    r = results["scenarios"]
    assert (r.returncode, r.stderr) == (0, "")
    rows = dict(l.split(None, 1) for l in r.stdout.splitlines())
    assert rows["distinct-bottleneck"].startswith("MPTCP vs one TCP flow per path")


def test_scenarios_show(results):
    r = results["scenarios_show"]
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout.startswith("distinct-bottleneck: ")
    for flag in ("--link1", "--link2", "--queue", "--cc", "--duration"):
        assert re.search(rf"^\s+{flag}\s", r.stdout, re.M), flag
    assert re.search(r"--link2\s+rate\s+default 20 Mbit/s ", r.stdout)          # with its unit


def test_parse_iperf3_prints_json(results):
    r = results["parse_iperf3"]
    assert (r.returncode, r.stderr) == (0, "")
    doc = json.loads(r.stdout)
    assert doc["command"] == "parse iperf3"
    doc = doc["data"]
    assert doc["version"] == "iperf 3.12"
    assert doc["end"]["sum_received"]["bits_per_second"] == pytest.approx(24610881.683190767)
    assert [c["local_port"] for c in doc["connected"]] == [34488]


# ---- dry run on the (unreachable) lab rack ----------------------------------------------------------


def sections(stdout: str) -> dict[str, list[str]]:
    """host -> its printed commands (argv text without the number and the note)."""
    out: dict[str, list[str]] = {}
    host = None
    for line in stdout.splitlines():
        m = re.match(r"^== (\S+) \((\d+) commands\)$", line)
        if m:
            host = m.group(1)
            out[host] = []
            continue
        m = re.match(r"^\s*(\d+)  (.*?)(    # .*)?$", line)
        if m and host is not None:
            assert int(m.group(1)) == len(out[host]) + 1, line      # numbered in order
            out[host].append(m.group(2))
    return out


def test_dry_run_exits_0_and_prints_every_host(results):
    r = results["dry_run"]
    assert r.returncode == 0, r.stderr[-1000:]
    assert r.stdout.startswith("dry run: ")
    secs = sections(r.stdout)
    assert set(secs) == {"dn1", "dn2", "a1", "a2", "b1", "b2"}
    for host, cmds in secs.items():
        m = re.search(rf"^== {host} \((\d+) commands\)$", r.stdout, re.M)
        assert int(m.group(1)) == len(cmds) > 0


def test_dry_run_pipe_config_and_rules(results):
    secs = sections(results["dry_run"].stdout)
    dn1, dn2 = secs["dn1"], secs["dn2"]
    # dn1 runs FreeBSD 14.1 (dnctl configures pipes), dn2 13.3 (ipfw does); link 1 100M, link 2 20M
    assert "dnctl pipe 10101 config bw 100Mbit/s delay 0ms plr 0 queue 50" in dn1
    assert "dnctl pipe 10102 config bw 100Mbit/s delay 0ms plr 0 queue 50" in dn1
    assert "ipfw pipe 10201 config bw 20Mbit/s delay 0ms plr 0 queue 50" in dn2
    assert "ipfw pipe 10202 config bw 20Mbit/s delay 0ms plr 0 queue 50" in dn2
    # forward (a -> b): frames received on em0 (a side) leaving on em1; reverse the other way
    assert ("ipfw add 10000 set 0 pipe 10101 ip from any to any layer2 out recv em0 xmit em1 "
            "// ctl:path1:forward") in dn1
    assert ("ipfw add 10001 set 0 pipe 10102 ip from any to any layer2 out recv em1 xmit em0 "
            "// ctl:path1:reverse") in dn1
    assert ("ipfw add 10000 set 0 pipe 10201 ip from any to any layer2 out recv em0 xmit em1 "
            "// ctl:path2:forward") in dn2
    # pipes are configured before the rules that send traffic into them
    assert dn1.index("dnctl pipe 10101 config bw 100Mbit/s delay 0ms plr 0 queue 50") < \
        next(i for i, c in enumerate(dn1) if c.startswith("ipfw add 10000"))


def test_dry_run_endpoint_and_traffic_commands(results):
    secs = sections(results["dry_run"].stdout)
    assert "ip mptcp endpoint add 10.2.0.21 dev enp3s0f1 signal" in secs["b1"]
    assert not any(c.startswith("ip mptcp endpoint add") for c in secs["a1"])
    client = [c for c in secs["a1"] if "iperf3 -c" in c]
    assert client == ["mptcpize run iperf3 -c 10.1.0.21 -p 5201 -J -i 0.5 --connect-timeout 5000 "
                      "-B 10.1.0.11 -t 30 -C cubic"]
    assert "iperf3 -s -1 -p 5202 -J -i 0.5" in secs["b2"]


def test_dry_run_changes_nothing_and_contacts_nobody(results):
    r = results["dry_run"]
    nothing_written(r)
    assert r.audit is not None, "the audit hook did not report"
    assert r.audit == [], r.audit
    assert "nothing was sent" in r.stdout.splitlines()[0]


def test_dry_run_shows_the_restore_commands(results):
    # README: --dry-run prints EVERY command for every host in order. A real run ends by
    # restoring what it changed: ctl's rules deleted on the bridges, the server's endpoint
    # flushed, the limits set back (the dry run assumes `add_addr_accepted 0 subflows 2`).
    secs = sections(results["dry_run"].stdout)
    dn1 = secs["dn1"]
    add = next(i for i, c in enumerate(dn1) if c.startswith("ipfw add 10000"))
    assert any(re.match(r"ipfw (-q )?delete .*\b10000\b", c) for c in dn1[add:]), dn1[add:]
    b1 = secs["b1"]
    add_ep = b1.index("ip mptcp endpoint add 10.2.0.21 dev enp3s0f1 signal")
    assert "ip mptcp endpoint flush" in b1[add_ep:]
    assert "ip mptcp limits set subflows 2 add_addr_accepted 0" in secs["a1"]
