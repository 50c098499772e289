"""The battery of bad input: every class refused the same way, through the real command.

Each case runs `python -m controller ...` as a user would and must: exit 2, print exactly one
line on stderr and nothing on stdout, show no traceback, write nothing (no state dir, no
runs dir, no other file next to its inputs) and touch no host (the virtual rack named by the
inventory is not up, and nothing tries to bring it up: that would write the state dir).

The cases run concurrently once per session (they are independent processes); each
parametrized test then checks one case's outcome. One test per class of input.

Each case's process is forked from a server that has imported ctl once (tests/support/ctl_fork.py:
the same process a fresh `python -m controller` is, for what is checked here, without ~0.7 s of
start-up CPU per case); a sample of cases (SAMPLE: every command word and input class) also runs
as a fresh interpreter, and both must give the same outcome.
"""
from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.ctl_fork import ForkServer
from tests.support.shipped import LAB, ROOT, VIRTUAL

SCEN = ("run", "distinct-bottleneck")


@dataclass
class Case:
    id: str
    argv: list[str]                                     # {dir} is the case's own directory
    files: dict[str, bytes | str] = field(default_factory=dict)
    stdin: bytes | None = None
    expect: str = ""                                    # a fragment the one stderr line must hold


def _inv(old: str, new: str, base: Path = VIRTUAL) -> str:
    text = base.read_text()
    assert text.count(old) >= 1, old
    return text.replace(old, new, 1)


def _campaign(body: str) -> str:
    return "version: 1\nscenario: distinct-bottleneck\n" + body


# ---- the classes -----------------------------------------------------------------------------

SCENARIO_PARAMETERS = [
    Case("abbreviation", [*SCEN, "--dur", "5s"], expect="unrecognized arguments: --dur"),
    Case("repeated-flag", [*SCEN, "--link2", "10M", "--link2", "20M"], expect="--link2 given twice"),
    Case("unknown-flag", [*SCEN, "--link3", "10M"], expect="unrecognized arguments: --link3"),
    Case("missing-value", [*SCEN, "--link2"], expect="expected one argument"),
    Case("bad-unit", [*SCEN, "--link2", "20Q"], expect="unknown unit"),
    Case("negative-rate", [*SCEN, "--link2", "-5M"], expect="--link2"),
    Case("huge-rate", [*SCEN, "--link2", "900T"], expect="above the maximum"),
    Case("nan", [*SCEN, "--link2", "nanM"], expect="--link2"),
    Case("zero-duration", [*SCEN, "--duration", "0"], expect="must be positive"),
    Case("cc-newline", [*SCEN, "--cc", "bbr\n"], expect="is not a valid name"),
    Case("cc-leading-dash", [*SCEN, "--cc", "-x"], expect="--cc"),
    Case("cc-shell", [*SCEN, "--cc", "cubic;reboot"], expect="is not a valid name"),
    Case("queue-zero", [*SCEN, "--queue", "0"], expect="must be a positive number of slots"),
    Case("port-range", [*SCEN, "--port-base", "80"], expect="below the minimum 1024"),
    Case("port-text", [*SCEN, "--port-base", "5201x"], expect="is not a whole number"),
    Case("same-path", [*SCEN, "--path2", "path1"], expect="--path1 and --path2 are both 'path1'"),
    Case("same-host", [*SCEN, "--mptcp-server", "a1"], expect="--mptcp-client and --mptcp-server are both 'a1'"),
    Case("host-not-in-inventory", [*SCEN, "--tcp-client", "zz9"], expect="not in inventory"),
    Case("link-not-in-inventory", [*SCEN, "--path1", "nope"], expect="not in inventory"),
    Case("unknown-scenario", ["run", "no-such-scenario"], expect="unknown scenario"),
    Case("unknown-command", ["frobnicate"], expect="invalid choice"),
    Case("shared-three-links", ["run", "shared-bottleneck", "--bottleneck", "sbd1"], expect="are both 'sbd1'"),
    Case("parallel-same-sender", ["run", "parallel-streams", "--m0", "a1"], expect="--x1 and --m0 are both"),
    Case("rtt-same-host", ["run", "rtt-loss-sweep", "--server", "a1"], expect="--client and --server are both"),
    Case("bt-same-host", ["run", "mptcp-bittorrent", "--leecher", "ns1"], expect="--seeder and --leecher"),
    Case("bt-relative-path", ["run", "mptcp-bittorrent", "--bt-tools", "rel/path"], expect="not an absolute path"),
    Case("link-set-bad-bw", ["link", "set", "path2", "--bw", "banana"], expect="'banana' is not a rate"),
    Case("link-set-bad-loss", ["link", "set", "path2", "--loss", "200%"], expect="--loss"),
    Case("link-set-unknown", ["link", "set", "nolink", "--bw", "10M"], expect="nolink"),
    Case("field-dash-server", ["field", "start", "--host", "m1", "--workload", "iperf3", "--server=-oX"],
         expect="--server: '-oX' starts with '-'"),
    Case("field-dash-server-separate", ["field", "start", "--host", "m1", "--workload", "iperf3", "--server", "-oX"],
         expect="--server: expected one argument"),
]

ESC = "\x1b[31m"
BILLION = ('version: 1\na: &a ["x","x","x","x","x","x","x","x","x"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n'
           'c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n'
           'e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n'
           'g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n')


def _yaml_attacks(prefix: list[str], name: str) -> list[Case]:
    """The same structural attacks on any ctl YAML file (inventory or campaign)."""
    p = "{dir}/" + name
    return [
        Case("billion-laughs", prefix + [p], {name: BILLION}, expect="YAML anchors (&a) are not allowed"),
        Case("alias-only", prefix + [p], {name: "version: 1\nx: *a\n"}, expect="YAML aliases (*a) are not allowed"),
        Case("recursive-alias", prefix + [p], {name: "version: 1\na: &a [*a]\n"}, expect="ali"),
        Case("anchor", prefix + [p], {name: "version: 1\nx: &anchor 1\n"}, expect="anchors"),
        Case("complex-key", prefix + [p], {name: "version: 1\n? [a, b]\n: 1\n"}, expect="mapping key"),
        Case("deep-nesting", prefix + [p], {name: "a: " + "[" * 5000 + "]" * 5000 + "\n"}, expect="nested"),
        Case("too-big", prefix + [p], {name: b"# " + b"x" * (50 << 20) + b"\n"}, expect="larger than"),
        Case("nul-byte", prefix + [p], {name: "version: 1\x00\n"}, expect="control character"),
        Case("esc-byte", prefix + [p], {name: f"version: 1\nname: {ESC}x\n"}, expect="control character"),
        Case("not-utf8", prefix + [p], {name: b"version: 1\nname: \xff\xfe\n"}, expect="not UTF-8"),
        Case("binary", prefix + [p], {name: bytes(range(256)) * 4}, expect=""),
        Case("empty", prefix + [p], {name: ""}, expect="empty"),
        Case("not-a-mapping", prefix + [p], {name: "- 1\n- 2\n"}, expect="mapping"),
        Case("duplicate-key", prefix + [p], {name: "version: 1\nversion: 1\n"}, expect="duplicate key"),
        Case("yaml-syntax", prefix + [p], {name: "version: [1\n"}, expect="YAML error"),
        Case("directory", prefix + ["{dir}"], expect="directory"),
        Case("missing-file", prefix + ["{dir}/nope.yaml"], expect="cannot read"),
        Case("dev-zero", prefix + ["/dev/zero"], expect="larger than"),
    ]


INVENTORY_CONTENT = [
    Case("port-to-itself", [*SCEN, "--inventory", "{dir}/i.yaml"],
         {"i.yaml": _inv("    a_port: pa\n    b_port: pb\n", "    a_port: pa\n    b_port: pa\n")},
         expect="a_port and b_port are both 'pa'"),
    Case("two-links-one-port", [*SCEN, "--inventory", "{dir}/i.yaml"],
         {"i.yaml": _inv("    bridge: br2\n    a_port: pa\n", "    bridge: br1\n    a_port: pa\n")},
         expect="already a port of link"),
    Case("same-mgmt-address", [*SCEN, "--inventory", "{dir}/i.yaml"],
         {"i.yaml": _inv("mgmt: {address: 10.250.0.12}", "mgmt: {address: 10.250.0.11}")},
         expect="management address 10.250.0.11"),
    Case("same-data-address", [*SCEN, "--inventory", "{dir}/i.yaml"],
         {"i.yaml": _inv("address: 10.1.0.12/24", "address: 10.1.0.11/24")}, expect="address 10.1.0.11"),
    Case("baseline-banana", [*SCEN, "--inventory", "{dir}/i.yaml"],
         {"i.yaml": _inv("    capacity: 1G\n    switch: sw1\n", "    capacity: 1G\n    switch: sw1\n"
                                                                   "    baseline: {bw: banana}\n")},
         expect="baseline.bw"),
    Case("baseline-plr-200", [*SCEN, "--inventory", "{dir}/i.yaml"],
         {"i.yaml": _inv("    capacity: 1G\n    switch: sw1\n", "    capacity: 1G\n    switch: sw1\n"
                                                                   "    baseline: {plr: 200%}\n")},
         expect="baseline.plr"),
    Case("secret-in-path", [*SCEN, "--inventory", "{dir}/i.yaml"],
         {"i.yaml": _inv('"${CTL_STATE_DIR}/influxdb/virtual/token"', '"/x/${CTL_INFLUX_TOKEN}"')},
         expect="only ${CTL_STATE_DIR}"),
    Case("url-credentials", [*SCEN, "--inventory", "{dir}/i.yaml"],
         {"i.yaml": _inv("url: http://", "url: http://ctl:hunter2@")}, expect="credentials in the URL"),
    Case("iface-leading-dash", [*SCEN, "--inventory", "{dir}/i.yaml"],
         {"i.yaml": _inv("{name: p1, address: 10.1.0.11/24", "{name: -p1, address: 10.1.0.11/24")},
         expect="name"),
    Case("unknown-field", [*SCEN, "--inventory", "{dir}/i.yaml"],
         {"i.yaml": _inv("  a1:\n    role: endpoint\n", "  a1:\n    role: endpoint\n    rloe: x\n")},
         expect="unknown field"),
    Case("bad-role", [*SCEN, "--inventory", "{dir}/i.yaml"],
         {"i.yaml": _inv("  a1:\n    role: endpoint\n", "  a1:\n    role: wizard\n")}, expect="role"),
    Case("lab-modem-dash-device", [*SCEN, "--inventory", "{dir}/i.yaml"],
         {"i.yaml": _inv("device: /dev/cdc-wdm0", "device: -oProxyCommand", LAB)}, expect="device"),
]

CAMPAIGN_CONTENT = [
    Case("ten-million-runs", ["campaign", "plan", "{dir}/c.yaml"],
         {"c.yaml": _campaign("sweep:\n  link2: [" + ", ".join(f"{i}M" for i in range(1, 1001)) + "]\n"
                              "  queue: [" + ", ".join(str(i) for i in range(10, 1010)) + "]\nrepetitions: 10\n")},
         expect="at most 100000 runs"),
    Case("decades", ["campaign", "submit", "{dir}/c.yaml"],
         {"c.yaml": _campaign("fixed: {duration: 20s}\nsweep:\n  link2: [" + ", ".join(f"{i}M" for i in range(1, 21))
                              + "]\nrepetitions: 1000\nwindow: \"22:00-22:30\"\n")}, expect="--force"),
    Case("unknown-parameter", ["campaign", "plan", "{dir}/c.yaml"],
         {"c.yaml": _campaign("fixed: {link9: 5M}\n")}, expect="has no parameter 'link9'"),
    Case("bad-value", ["campaign", "plan", "{dir}/c.yaml"],
         {"c.yaml": _campaign("sweep:\n  link2: [10M, banana]\n")}, expect="case 2"),
    Case("boolean-value", ["campaign", "plan", "{dir}/c.yaml"],
         {"c.yaml": _campaign("fixed: {cc: yes}\n")}, expect="not a parameter value"),
    Case("repetitions-zero", ["campaign", "plan", "{dir}/c.yaml"],
         {"c.yaml": _campaign("repetitions: 0\n")}, expect="repetitions"),
    Case("window-garbage", ["campaign", "plan", "{dir}/c.yaml"],
         {"c.yaml": _campaign("window: \"25:00-07:00\"\n")}, expect="window"),
    Case("same-path-in-sweep", ["campaign", "plan", "{dir}/c.yaml"],
         {"c.yaml": _campaign("sweep:\n  path2: [path1]\n")}, expect="are both 'path1'"),
]

PARSE_INPUT = [
    Case("dev-zero", ["parse", "ipfw-pipe-show", "/dev/zero"], expect="larger than"),
    Case("binary", ["parse", "iperf3", "{dir}/b"], {"b": bytes(range(256))}, expect="binary"),
    Case("not-utf8", ["parse", "ss", "{dir}/b"], {"b": b"State Recv-Q\n\xff\xfe\n"}, expect="not UTF-8"),
    Case("empty", ["parse", "snmpwalk", "{dir}/e"], {"e": ""}, expect="empty"),
    Case("whitespace", ["parse", "at", "{dir}/e"], {"e": "\n\n  \n"}, expect="empty"),
    Case("stdin-empty", ["parse", "webtorrent", "-"], stdin=b"", expect="empty"),
    Case("directory", ["parse", "nstat", "{dir}"], expect="directory"),
    Case("missing", ["parse", "ping", "{dir}/nope"], expect="cannot read"),
    Case("unknown-kind", ["parse", "tcpdump", "{dir}/x"], {"x": "x\n"}, expect="invalid choice"),
] + [Case(f"garbage-{kind}", ["parse", kind, "{dir}/g"], {"g": "hello world\nfoo = bar\n"}, expect="")
     for kind in ("at", "gpsd", "ip-mptcp", "iperf3", "ipfw-pipe-show", "ipfw-queue-show", "ipfw-sched-show",
                  "mmcli", "nstat", "ping", "qmicli", "snmpwalk", "ss", "tc-qdisc", "webtorrent", "wimax")]

CLASSES = {
    "scenario-parameters": SCENARIO_PARAMETERS,
    "inventory-structure": _yaml_attacks([*SCEN, "--inventory"], "i.yaml"),
    "inventory-content": INVENTORY_CONTENT,
    "campaign-structure": _yaml_attacks(["campaign", "plan"], "c.yaml"),
    "campaign-content": CAMPAIGN_CONTENT,
    "parse-input": PARSE_INPUT,
}


# Cases that also run as a fresh `python -m controller`: one of each class, each command word
# (run, link, field, campaign plan and submit, parse, an unknown one), stdin, a file argument.
SAMPLE = {("scenario-parameters", "huge-rate"), ("scenario-parameters", "unknown-command"),
          ("scenario-parameters", "link-set-bad-bw"), ("scenario-parameters", "field-dash-server"),
          ("inventory-structure", "billion-laughs"), ("inventory-content", "url-credentials"),
          ("campaign-structure", "deep-nesting"), ("campaign-content", "decades"), ("parse-input", "stdin-empty"),
          ("parse-input", "garbage-iperf3")}
PATH = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"


@dataclass
class Outcome:
    returncode: int
    stdout: str
    stderr: str
    written: list[str]


def _env(case: Case, base: Path, home: Path) -> dict[str, str]:
    return {"PATH": PATH, "HOME": str(home), "CTL_STATE_DIR": str(base / f"{case.id}.state"),
            "CTL_RUNS_DIR": str(base / f"{case.id}.runs"), "CTL_LOCK_DIR": str(base / f"{case.id}.locks"),
            "CTL_INVENTORY": str(VIRTUAL)}


def _run(case: Case, base: Path, home: Path, fork: ForkServer | None) -> Outcome:
    """The case in its own directory under `base`: forked from `fork`, or a fresh interpreter (None)."""
    d = base / case.id
    d.mkdir(parents=True)
    for name, content in case.files.items():
        (d / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    before = sorted(p.name for p in d.iterdir())
    env = _env(case, base, home)
    state, runs = Path(env["CTL_STATE_DIR"]), Path(env["CTL_RUNS_DIR"])
    argv = [a.replace("{dir}", str(d)) for a in case.argv]
    if fork is None:
        p = subprocess.run([sys.executable, "-m", "controller", *argv], cwd=ROOT, env=env, input=case.stdin or b"",
                           capture_output=True, timeout=120)
    else:
        p = fork.run(argv, env, ROOT, case.stdin or b"", timeout=120)
    written = [p_.name for p_ in d.iterdir() if p_.name not in before]
    written += [x.name for x in (state, runs) if x.exists()]
    locks = base / f"{case.id}.locks"
    if locks.exists():
        written += [f"locks/{x.name}" for x in locks.iterdir()]
    return Outcome(p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace"), written)


@pytest.fixture(scope="session")
def home(tmp_path_factory) -> Path:
    """Every case's HOME (and the fork server's): empty, and it stays empty."""
    return tmp_path_factory.mktemp("bad-input-home")


@pytest.fixture(scope="session")
def fork_server(tmp_path_factory, home):
    server = ForkServer(tmp_path_factory.mktemp("bad-input-fork"),
                        {"PATH": PATH, "HOME": str(home), "CTL_INVENTORY": str(VIRTUAL)})
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def both_outcomes(tmp_path_factory, home, fork_server) -> tuple[dict, dict, Path]:
    """Every case forked from the server (under `forked/`), the SAMPLE also as fresh processes
    (under `fresh/`, the same layout)."""
    base = tmp_path_factory.mktemp("bad-input")
    cases = [(cls, c, "forked") for cls, cs in CLASSES.items() for c in cs]
    cases += [(cls, c, "fresh") for cls, cs in CLASSES.items() for c in cs if (cls, c.id) in SAMPLE]
    os.chmod(base, 0o755)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = pool.map(lambda cc: _run(cc[1], base / cc[2] / cc[0], home,
                                           fork_server if cc[2] == "forked" else None), cases)
        got = {(how, cls, c.id): r for (cls, c, how), r in zip(cases, results, strict=True)}
    forked = {(cls, cid): r for (how, cls, cid), r in got.items() if how == "forked"}
    fresh = {(cls, cid): r for (how, cls, cid), r in got.items() if how == "fresh"}
    return forked, fresh, base


@pytest.fixture(scope="session")
def outcomes(both_outcomes) -> dict[tuple[str, str], Outcome]:
    return both_outcomes[0]


def _check(outcome: Outcome, case: Case) -> None:
    lines = outcome.stderr.strip().splitlines()
    assert outcome.returncode == 2, (outcome.returncode, outcome.stderr[-2000:])
    assert "Traceback" not in outcome.stderr, outcome.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("ctl: error: "), outcome.stderr
    assert case.expect in lines[0], (case.expect, lines[0])
    assert outcome.stdout == ""
    assert outcome.written == [], f"written: {outcome.written}"


def _ids(cls: str) -> list[str]:
    return [c.id for c in CLASSES[cls]]


@pytest.mark.parametrize("case", CLASSES["scenario-parameters"], ids=_ids("scenario-parameters"))
def test_scenario_parameters(outcomes, case):
    _check(outcomes["scenario-parameters", case.id], case)


@pytest.mark.parametrize("case", CLASSES["inventory-structure"], ids=_ids("inventory-structure"))
def test_inventory_structure(outcomes, case):
    _check(outcomes["inventory-structure", case.id], case)


@pytest.mark.parametrize("case", CLASSES["inventory-content"], ids=_ids("inventory-content"))
def test_inventory_content(outcomes, case):
    _check(outcomes["inventory-content", case.id], case)


@pytest.mark.parametrize("case", CLASSES["campaign-structure"], ids=_ids("campaign-structure"))
def test_campaign_structure(outcomes, case):
    _check(outcomes["campaign-structure", case.id], case)


@pytest.mark.parametrize("case", CLASSES["campaign-content"], ids=_ids("campaign-content"))
def test_campaign_content(outcomes, case):
    _check(outcomes["campaign-content", case.id], case)


@pytest.mark.parametrize("case", CLASSES["parse-input"], ids=_ids("parse-input"))
def test_parse_input(outcomes, case):
    _check(outcomes["parse-input", case.id], case)


@pytest.mark.parametrize("key", sorted(SAMPLE), ids=["/".join(k) for k in sorted(SAMPLE)])
def test_a_fresh_interpreter_gives_the_same_outcome_as_the_forked_one(both_outcomes, key):
    """The fork server's process is the fresh one for every property above: the same exit status,
    stdout, stderr (but for the case's own directory in it) and nothing written by either."""
    forked, fresh, base = both_outcomes
    a, b = forked[key], fresh[key]
    _check(b, next(c for c in CLASSES[key[0]] if c.id == key[1]))
    where = (str(base / "forked"), str(base / "fresh"))
    assert (a.returncode, a.stdout, a.stderr.replace(*where), a.written) == \
        (b.returncode, b.stdout, b.stderr, b.written)


def test_the_fork_servers_imports_read_nothing_a_case_sets_and_nothing_was_written(both_outcomes, fork_server,
                                                                                   home):
    """What the server imported before any case's environment was set read no name whose value
    differs between the server and a case (HOME, PATH and CTL_INVENTORY are the same; the
    interpreter's own names are unset in both), and wrote nothing into its own state, runs and
    lock directories; no case (forked or fresh) wrote into HOME."""
    base = both_outcomes[2]
    for cls, cs in CLASSES.items():
        for c in cs:
            env = _env(c, base / "forked" / cls, home)
            differ = {k for k in fork_server.import_env_reads if env.get(k) != fork_server.env.get(k)}
            assert not differ, (c.id, differ)
    assert {"CTL_STATE_DIR", "CTL_RUNS_DIR", "CTL_LOCK_DIR"} <= set(fork_server.env)
    assert fork_server.written_by_server() == []
    assert list(home.iterdir()) == []
