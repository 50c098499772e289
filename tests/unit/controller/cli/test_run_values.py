"""No silent change of what the researcher asked for (issue 22, item 6), as a user sees it:
`python -m controller run ...` in a subprocess, on both shipped inventories.

- a bare loss value is refused (one line, exit 2, nothing written) naming the accepted forms;
  `--loss 0.01%` applies 0.01 % (the dry run's pipe command says plr 0.0001);
- every value changed on its way to the rack is a warning line on stderr and an entry of the
  plan (the dry-run listing, `--dry-run --json`);
- no placeholder in a printed command: a dry run of every scenario on both inventories prints
  what a real run would, or says plainly that a value is read at run time.

The invocations run side by side (one module fixture), each with its own empty state and runs
directory, each a process forked from a server that imported ctl once (tests/support/ctl_fork.py;
tests/unit/test_bad_input.py and test_cli_rules.py check on samples that such a process gives what a
fresh `python -m controller` gives; test_the_first_case_is_the_same_in_a_fresh_interpreter here).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from controller import scenarios
from nodes.mptcp import DRY_RUN_NOTE, DRY_RUN_SYSCTLS, DRY_RUN_UNKNOWN
from tests.support.ctl_fork import ForkServer
from tests.support.shipped import ROOT

INVENTORIES = {"virtual": "inventory/virtual.yaml", "lab": "inventory/lab-rack.example.yaml"}

CASES: dict[str, list[str]] = {
    "bare_loss": ["run", "rtt-loss-sweep", "--loss", "0.01", "--dry-run"],
    "bare_loss_lab": ["run", "rtt-loss-sweep", "--loss", "0.01", "--dry-run", "-i", INVENTORIES["lab"]],
    "bare_plr": ["link", "set", "path1", "--loss", "0.01", "-i", INVENTORIES["lab"]],
    "loss_pct_lab": ["run", "rtt-loss-sweep", "--loss", "0.01%", "--dry-run", "-i", INVENTORIES["lab"]],
    "loss_pct_lab_json": ["run", "rtt-loss-sweep", "--loss", "0.01%", "--dry-run", "--json", "-i",
                          INVENTORIES["lab"]],
    "loss_sci_virtual": ["run", "rtt-loss-sweep", "--loss", "1e-4", "--dry-run"],
    **{f"all_{name}_{inv}": ["run", name, "--dry-run", "--json", "-i", path]
       for name in scenarios.available() for inv, path in INVENTORIES.items()},
}


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str
    state: Path
    runs: Path


def _env(state: Path | None = None, runs: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CTL_INVENTORY", "CTL_INFLUX_TOKEN")}
    if state is not None and runs is not None:
        env.update(CTL_STATE_DIR=str(state), CTL_RUNS_DIR=str(runs))
    return env


def _dirs(base: Path) -> tuple[Path, Path]:
    state, runs = base / "state", base / "runs"
    state.mkdir(parents=True)
    runs.mkdir()
    return state, runs


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, Result]:
    base = tmp_path_factory.mktemp("values")
    (base / "server").mkdir()
    server = ForkServer(base / "server", _env()).start()

    def one(name: str) -> Result:
        state, runs = _dirs(base / name)
        p = server.run(CASES[name], _env(state, runs), ROOT, timeout=120, text=True)
        return Result(p.returncode, p.stdout, p.stderr, state, runs)
    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            out = dict(zip(CASES, pool.map(one, CASES), strict=True))
        assert server.written_by_server() == []
    finally:
        server.stop()
    return out


# what differs between any two calls: times (in run ids too), the holder id's digest of the state dir
TIMES = r"\d{8}T\d{6}Z|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)|(?<=run:lab-rack/)[0-9a-f]{12}"


def test_the_first_case_is_the_same_in_a_fresh_interpreter(results, tmp_path):
    """One case of each kind (refused, dry run of both inventories) as a fresh `python -m controller`:
    the same exit status, stdout and stderr as the forked process gave (but for TIMES)."""
    for name in ("bare_loss", "loss_pct_lab_json", "all_distinct-bottleneck_virtual"):
        state, runs = _dirs(tmp_path / name)
        p = subprocess.run([sys.executable, "-m", "controller", *CASES[name]], cwd=ROOT, env=_env(state, runs),
                           capture_output=True, text=True, timeout=120)
        forked = results[name]
        same = [tuple(_parsed(re.sub(TIMES, "TIME", t.replace(str(d), "DIR"))) for t, d in ((out, st), (err, st)))
                for out, err, st in ((p.stdout, p.stderr, state.parent), (forked.stdout, forked.stderr,
                                                                          forked.state.parent))]
        assert (p.returncode, *same[0]) == (forked.returncode, *same[1]), name


def _parsed(text: str):
    """--json output as its value (a mapping's order follows string hashing, which a process draws at
    its start: tests/support/ctl_fork.py), any other text as it is."""
    try:
        return json.loads(text)
    except ValueError:
        return text


# ---- a bare loss is refused ------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["bare_loss", "bare_loss_lab"])
def test_a_bare_loss_is_refused_naming_both_accepted_forms(results, case):
    r = results[case]
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.splitlines() == ["ctl: error: --loss: 0.01 is ambiguous: write 0.01% or 1e-4 for 0.01 percent, "
                                     "1% or 1e-2 for a fraction of 0.01"]
    assert list(r.runs.rglob("*")) == [] and list(r.state.rglob("*")) == []


def test_link_set_refuses_a_bare_plr_before_touching_the_rack(results):
    r = results["bare_plr"]
    assert r.returncode == 2 and r.stdout == ""
    (line,) = r.stderr.splitlines()
    assert line.startswith("ctl: error: ") and "--loss: 0.01 is ambiguous: write 0.01% or 1e-4" in line
    assert list(r.runs.rglob("*")) == []


def test_a_percentage_is_applied_as_written(results):
    r = results["loss_pct_lab"]
    assert r.returncode == 0, r.stderr[-2000:]
    # dn1 runs FreeBSD 14.1: dnctl configures the data direction's pipe with the fraction 0.0001
    assert re.search(r"^\s+\d+  dnctl pipe 10101 config bw 1000Mbit/s delay 20ms plr 0\.0001 queue 1000 ",
                     r.stdout, re.M)
    assert re.search(r"^\s+\d+  dnctl pipe 10102 config bw 1000Mbit/s delay 20ms plr 0 queue 1000 ", r.stdout, re.M)
    r = results["loss_sci_virtual"]
    assert r.returncode == 0, r.stderr[-2000:]
    assert re.search(r"set --dir forward --bw 1000000000 --delay-us 20000 --plr 0\.0001 ", r.stdout)


# ---- every conversion: a warning on stderr, an entry in the listing and the JSON -------------------------


def test_every_conversion_is_a_warning_and_an_entry(results):
    r = results["loss_pct_lab"]
    warnings = [l for l in r.stderr.splitlines() if l.startswith("warning: ")]
    assert warnings == [
        "warning: bottleneck queue of path1 (both directions): 1 BDP (1 Gbit/s x 40 ms) = 5,000,000 B (4.77 MiB) "
        "-> 1000 slots = 1,500,000 B (1.43 MiB) in 1500-byte packets: capped: dn1 (dummynet) holds at most 1 MiB "
        "(1,048,576 B) by net.inet.ip.dummynet.pipe_byte_limit (inventory facts, else FreeBSD's default) or 1000 slots by "
        "net.inet.ip.dummynet.pipe_slot_limit (inventory facts, else FreeBSD's default); the queue is 30 % of the BDP asked for",
        "warning: socket buffers of a1, b1: the hosts' own net.ipv4.tcp_rmem / tcp_wmem maxima -> 32 MiB "
        "(33,554,432 B) for the run (restored after it): so autotuning can reach a window of BDP + bottleneck "
        "queue = 6,500,000 B (6.2 MiB); Linux gives about half of a buffer to the window, and ctl never sets less "
        "than 32 MiB",
        "warning: loss of path1 forward on dn1 (dummynet pipe 10101): 0.01 % -> 0.00999998302 %: dummynet holds "
        "plr as a 31-bit integer, (int)(p x 0x7fffffff), truncated",
    ]
    # the listing names them before the commands
    head = r.stdout.split("\n== ", 1)[0]
    assert "values changed on their way to the rack (asked -> applied):" in head
    assert ("  bottleneck queue of path1 (both directions): 1 BDP (1 Gbit/s x 40 ms) = 5,000,000 B (4.77 MiB) -> "
            "1000 slots = 1,500,000 B (1.43 MiB) in 1500-byte packets") in head.splitlines()
    j = json.loads(results["loss_pct_lab_json"].stdout)["data"]
    assert [c["what"] for c in j["conversions"]] == ["bottleneck queue of path1 (both directions)",
                                                     "socket buffers of a1, b1",
                                                     "loss of path1 forward on dn1 (dummynet pipe 10101)"]
    assert set(j["conversions"][0]) == {"what", "asked", "applied", "reason"}
    assert j["plan"]["conversions"] == j["conversions"] and j["dry_run"] is True
    assert any(c["argv"][:4] == ["dnctl", "pipe", "10101", "config"] and "0.0001" in c["argv"]
               for c in j["commands"])


# ---- no placeholder in a printed command ------------------------------------------------------------


PLACEHOLDERS = [
    re.compile(r"DRYRUN"),                 # a made-up mktemp name
    re.compile(r"btih:0{40}"),             # a made-up info hash
]


def _restore_problems(cmd: dict) -> list[str]:
    """A restore step built from what the dry run assumed says so, and shows only Linux's
    defaults or the plain placeholder for a value read at run time."""
    argv, note = cmd["argv"], cmd["note"]
    out = []
    if argv[:2] == ["sysctl", "-w"] and note.startswith("restore"):
        for kv in argv[2:]:
            k, v = kv.split("=", 1)
            if v not in (DRY_RUN_SYSCTLS.get(k), DRY_RUN_UNKNOWN):
                out.append(f"{cmd['host']}: {kv} is neither Linux's default nor {DRY_RUN_UNKNOWN}")
        if any(kv.split("=", 1)[1] != DRY_RUN_UNKNOWN for kv in argv[2:]) and not note.endswith(DRY_RUN_NOTE):
            out.append(f"{cmd['host']}: {' '.join(argv)} does not say its values are assumed ({note!r})")
    if argv[:4] == ["ip", "mptcp", "limits", "set"] and note.startswith("restore") \
            and not note.endswith(DRY_RUN_NOTE):
        out.append(f"{cmd['host']}: {' '.join(argv)} does not say its values are assumed ({note!r})")
    return out


@pytest.mark.parametrize("case", [c for c in CASES if c.startswith("all_")])
def test_dry_run_listing_has_no_placeholder(results, case):
    r = results[case]
    assert r.returncode == 0, r.stderr[-2000:]
    j = json.loads(r.stdout)["data"]
    assert j["commands"], case
    problems = []
    for cmd in j["commands"]:
        text = " ".join(cmd["argv"])
        problems += [f"{cmd['host']}: {text[:200]}" for p in PLACEHOLDERS if p.search(text)]
        problems += _restore_problems(cmd)
        # the old placeholder: a sysctl restored to "1" (tcp_rmem=1 reads like a destructive command)
        problems += [f"{cmd['host']}: {kv}" for kv in cmd["argv"][2:] if cmd["argv"][:2] == ["sysctl", "-w"]
                     and kv.split("=", 1)[1] == "1" and kv.split("=", 1)[0] not in DRY_RUN_SYSCTLS]
    assert problems == []
    # every warning on stderr is one of the plan's entries, and the other way round
    warnings = [l for l in r.stderr.splitlines() if l.startswith("warning: ")]
    assert warnings == [f"warning: {c['what']}: {c['asked']} -> {c['applied']}: {c['reason']}"
                        for c in j["conversions"]]


def test_the_restore_of_assumed_sysctls_says_so(results):
    j = json.loads(results["all_rtt-loss-sweep_virtual"].stdout)["data"]
    restore = [c for c in j["commands"] if c["argv"][:2] == ["sysctl", "-w"] and c["note"].startswith("restore")]
    assert [c["argv"] for c in restore] == [["sysctl", "-w", "net.ipv4.tcp_rmem=4096 131072 6291456",
                                             "net.ipv4.tcp_wmem=4096 16384 4194304"]] * 2
    assert all(c["note"] == "restore sysctls" + DRY_RUN_NOTE for c in restore)


# ---- files: an inventory's baseline plr and a campaign's loss values ----------------------------------


@pytest.mark.parametrize("value, accepted", [("0.01", False), ("1.0e-4", False), ("1", False), ("0", True),
                                             ('"0.01%"', True), ("1e-4", True), ("0.01%", True)])
def test_an_inventory_baseline_plr_that_is_a_yaml_number_is_refused_with_its_line(tmp_path, monkeypatch, value,
                                                                                   accepted):
    """`plr: 0.01` is a YAML number (fraction or percent?): refused naming file and line, like
    `--plr 0.01`; `1e-4` without a dot is text to YAML, a fraction in scientific notation to ctl."""
    from controller.errors import InventoryError
    from controller.inventory import load_inventory
    monkeypatch.setenv("CTL_STATE_DIR", str(tmp_path / "state"))
    text = (ROOT / "inventory" / "virtual.yaml").read_text()
    text = text.replace("    capacity: 1G\n    switch: sw1\n  path2:",
                        f"    capacity: 1G\n    switch: sw1\n    baseline: {{plr: {value}}}\n  path2:", 1)
    (tmp_path / "i.yaml").write_text(text)
    line = text[:text.index("baseline: {plr:")].count("\n") + 1
    if accepted:
        load_inventory(tmp_path / "i.yaml")
        return
    with pytest.raises(InventoryError) as ei:
        load_inventory(tmp_path / "i.yaml")
    msg = str(ei.value)
    assert f"i.yaml:{line}: links.path1.baseline.plr" in msg and "is ambiguous: write" in msg, msg


def test_a_campaign_loss_that_is_a_yaml_number_is_refused_with_its_line(tmp_path, monkeypatch):
    """A campaign's sweep value goes to the scenario's parser as text: `0.01` (a YAML number) is
    refused naming the file, the line and the case; `"0.01%"` and `1e-4` are accepted."""
    from controller.campaign.plan import validate_cases
    from controller.campaign.spec import CampaignFileError, load_campaign
    from controller.inventory import load_inventory
    text = (ROOT / "campaigns" / "rtt-loss-sweep-short.yaml").read_text()
    monkeypatch.setenv("CTL_STATE_DIR", str(tmp_path / "state"))
    inv = load_inventory(ROOT / "inventory" / "virtual.yaml")
    for loss, ok in (('["0%", 1e-4, "0.0046%"]', True), ("[0, 0.01]", False)):
        f = tmp_path / "c.yaml"
        f.write_text(text.replace('loss: ["0%", "0.1%"]', f"loss: {loss}"))
        spec, lines, _ = load_campaign(f)
        if ok:
            cases = validate_cases(spec, f, lines, inv)
            assert sorted({c.params["loss"] for c in cases}) == [0.0, 0.000046, 0.0001]
            continue
        with pytest.raises(CampaignFileError) as ei:
            validate_cases(spec, f, lines, inv)
        assert re.match(rf"{re.escape(str(f))}:\d+: case \d+ \(rtt=\d+ms loss=0\.01 cc=\w+\): --loss: 0\.01 is "
                        r"ambiguous: write 0\.01% or 1e-4", str(ei.value)), str(ei.value)
