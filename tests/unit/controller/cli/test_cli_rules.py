"""ctl keeps its own rules (issue 26): help on every argument and subcommand, no argparse
internals in usage lines, `ctl run SCENARIO --help` with the scenario's parameters, options
before or after the scenario's name, "did you mean", one name per concept (--loss; --plr kept as
a deprecated alias), -i, -q and -v alike before and after the command, a closed pipe is a quiet
exit (141), one exit-code rule for "nothing found", shipped files found by name, list commands
without side effects, service units for the rack they drive.

Commands run as a user runs them (`python -m controller` as a process of its own, outside the
checkout, with an empty state and runs directory of their own), unless the test is of a pure
function. The processes are forked from a server that imported ctl once (tests/support/ctl_fork.py:
the same process for what is checked here, without ~0.7 s of start-up CPU each); a sample of the
commands also runs in a fresh interpreter and must give the same outcome
(test_a_fresh_interpreter_gives_the_same_outcome)."""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from controller import scenarios
from controller.cli import HIDDEN, build_parser
from controller.cli.reproduce import verdict_lines
from controller.cli.run import _scenario_index
from controller.settings import find_shipped, shipped_files
from tests.support.ctl_fork import ForkServer
from tests.support.shipped import ROOT

LAB = "lab-rack.example.yaml"          # by name: the shipped example
_SERVER: list[ForkServer] = []         # the module's fork server (_fork_server)


@pytest.fixture(scope="module", autouse=True)
def _fork_server(tmp_path_factory):
    base = tmp_path_factory.mktemp("cli-rules-fork")
    (base / "server").mkdir()
    (base / "cwd").mkdir()              # outside the checkout, as every call's working directory
    server = ForkServer(base / "server", _env(), cwd=base / "cwd").start()
    _SERVER.append(server)
    try:
        yield server
    finally:
        _SERVER.remove(server)
        server.stop()


def _env(tmp_path: Path | None = None, env: dict | None = None) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("CTL_")}
    if tmp_path is not None:
        base.update({"CTL_STATE_DIR": str(tmp_path / "state"), "CTL_RUNS_DIR": str(tmp_path / "runs")})
    return {**base, **(env or {})}


def ctl(tmp_path: Path, *argv: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return _SERVER[0].run(list(argv), _env(tmp_path, env), tmp_path, timeout=timeout, text=True)


def ctl_fresh(tmp_path: Path, *argv: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "controller", *argv], capture_output=True, text=True, cwd=tmp_path,
                          env=_env(tmp_path, env), timeout=timeout)


@pytest.mark.parametrize("argv", [("campaign", "status"), ("metrics", "push", "no-such-run"),
                                  ("run", "distinct-bottleneck", "--help"),
                                  ("campaign", "plan", "rtt-loss-sweap.yaml"), ("inventory", "check", LAB),
                                  ("config", "show", "--json"), ("cc", "list", "--json")], ids=" ".join)
def test_a_fresh_interpreter_gives_the_same_outcome(tmp_path, argv):
    """The forked process is the fresh one for what these tests check: exit status, stdout, stderr
    (but for the call's own directory's name, of as many letters, and the --json envelope's time)
    and what it wrote in its directory."""
    got = {}
    for how, call in (("zz_fk", ctl), ("zz_fr", ctl_fresh)):      # names of as many letters, nowhere else
        d = tmp_path / how
        d.mkdir()
        p = call(d, *argv)
        written = sorted(str(f.relative_to(d)) for f in d.rglob("*"))
        out, err = (re.sub(r'^  "time": "[^"]*",$', "TIME", t.replace(how, "CALL"), flags=re.M)     # help wraps paths
                    for t in (p.stdout, p.stderr))
        if "--json" in argv:            # as a value: a mapping's order may follow string hashing (ctl_fork.py)
            out = json.loads(out.replace("TIME", '"time": null,'))
        got[how] = (p.returncode, out, err, written)
    assert got["zz_fk"] == got["zz_fr"]
    assert _SERVER[0].written_by_server() == []


def one_error(p: subprocess.CompletedProcess) -> str:
    lines = p.stderr.splitlines()
    assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith("ctl: error: "), p.stderr
    return lines[0]


# ---- the parser: help everywhere, no internals -----------------------------------------------------

def _walk(p: argparse.ArgumentParser, words: tuple[str, ...] = ()):
    for a in p._actions:
        if isinstance(a, argparse._HelpAction):
            continue
        if isinstance(a, argparse._SubParsersAction):
            helps = {c.dest: c.help for c in a._choices_actions}
            for name, sp in a.choices.items():
                yield "command", words + (name,), helps.get(name), sp
                yield from _walk(sp, words + (name,))
            continue
        yield "argument", words, a.help, a


def test_every_argument_and_subcommand_has_help():
    missing = []
    count = 0
    for kind, words, helptext, action in _walk(build_parser("*")):
        count += 1
        if kind == "command":
            if not helptext or not action.description:
                missing.append("subcommand ctl " + " ".join(words))
            continue
        name = action.option_strings[0] if action.option_strings else action.dest
        hidden = {(" ".join(words), name), ("*", name)} & HIDDEN
        if helptext == argparse.SUPPRESS:
            assert hidden, f"ctl {' '.join(words)} {name}: hidden without a reason (controller.cli.HIDDEN)"
        elif not helptext:
            missing.append(f"ctl {' '.join(words)} {name}")
    assert count > 300
    assert missing == [], f"{len(missing)} without a help text: {missing}"


def test_usage_lines_show_no_argparse_internals():
    """Every value's placeholder is an upper-case word (FILE, TIME, DURATION) or upper-case words
    joined by `/` for a value of several parts (`--red W_Q/MIN_TH/MAX_TH/MAX_P`, as ipfw writes
    it), never a dest with a trailing underscore (`--from FROM_`) or a lower-case name (`a b`)."""
    bad = []
    for kind, words, _h, a in _walk(build_parser("*")):
        if kind != "argument" or a.nargs == 0 or a.help == argparse.SUPPRESS:
            continue
        shown = a.metavar if isinstance(a.metavar, str) else None
        if shown is None and a.option_strings:
            shown = a.dest.upper()
        if shown is None and a.choices:
            continue                            # {up,down,...}
        if shown is None or not re.fullmatch(r"[A-Z][A-Z0-9_:.=@\[\]-]*(/[A-Z][A-Z0-9_]*)*", shown) or shown.endswith("_"):
            bad.append(f"ctl {' '.join(words)} {'/'.join(a.option_strings) or a.dest}: {shown!r}")
    assert bad == []
    usage = build_parser("rack")._subparsers._group_actions[0].choices["rack"]._subparsers._group_actions[0] \
        .choices["reserve"].format_usage()
    assert "--from TIME" in usage and "--for DURATION" in usage and "_" not in usage


def test_one_name_per_concept_across_commands():
    """A scenario's loss is --loss: `ctl link set` takes the same name (--plr stays, deprecated)."""
    link_set = build_parser("link")._subparsers._group_actions[0].choices["link"]._subparsers._group_actions[0] \
        .choices["set"]
    assert link_set._option_string_actions["--loss"].dest == link_set._option_string_actions["--plr"].dest
    flags = {p.flag for name in scenarios.available() for p in scenarios.get(name).all_params()}
    assert {"--bw", "--delay", "--loss", "--queue"} <= flags
    assert {"--bw", "--delay", "--loss", "--queue"} <= set(link_set._option_string_actions)


def test_the_deprecated_name_still_works_and_says_so(tmp_path):
    """--plr reaches the same check as --loss (a bare 0.01 refused before anything is touched),
    with one warning line naming the new flag first."""
    p = ctl(tmp_path, "link", "set", "path1", "--plr", "0.01", "-i", LAB)
    warning, error = p.stderr.splitlines()
    assert p.returncode == 2 and p.stdout == ""
    assert warning == "ctl: warning: --plr is deprecated: it is --loss now (the same values); --plr will be removed"
    assert error.startswith("ctl: error: --loss: 0.01 is ambiguous")


# ---- ctl run: the scenario's name anywhere, its parameters in its help ----------------------------

@pytest.mark.parametrize("rest, index", [
    (["distinct-bottleneck", "--link2", "20M"], 0),
    (["--duration", "10s", "distinct-bottleneck"], 2),
    (["--duration=10s", "distinct-bottleneck"], 1),
    (["--dry-run", "-i", "x.yaml", "--link2", "20M", "shared-bottleneck", "--delay", "1s"], 5),
    (["--wait", "distinct-bottleneck"], 1),          # --wait's value is optional: a scenario name is not it
    (["--wait", "10m", "distinct-bottleneck"], 2),
    (["-q", "--", "distinct-bottleneck"], 2),
    (["--duration", "10s"], None),
])
def test_where_the_scenario_name_is(rest, index):
    run_p = build_parser("run")._subparsers._group_actions[0].choices["run"]
    assert _scenario_index(rest, run_p, scenarios.available()) == index


def test_options_before_the_scenario_name(tmp_path):
    """Issue 26: `ctl run --duration 10s distinct-bottleneck` said "unknown scenario '10s'"."""
    p = ctl(tmp_path, "run", "--duration", "10s", "--link2", "30M", "distinct-bottleneck", "--dry-run", "--json",
            "-i", LAB)
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)["data"]
    assert d["parameters"]["duration"] == 10.0 and d["parameters"]["link2"] == 30_000_000


def test_run_scenario_help_lists_its_parameters_with_units(tmp_path):
    p = ctl(tmp_path, "run", "distinct-bottleneck", "--help")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "parameters of distinct-bottleneck" in out
    for flag in ("--link2 RATE", "--duration DURATION", "--link1 RATE", "--queue QUEUE", "--dry-run", "--json"):
        assert flag in out, flag
    assert "default 20 Mbit/s" in " ".join(out.split()) and "default 100 Mbit/s" in " ".join(out.split())
    assert "--rtt" not in out                 # another scenario's parameter (rtt-loss-sweep)
    p = ctl(tmp_path, "run", "--help")
    assert p.returncode == 0 and all(name in p.stdout for name in scenarios.available())
    p = ctl(tmp_path, "run", "--link2", "5M", "shared-bottleneck", "-h")
    assert p.returncode == 0 and "--delay2 DELAY" in p.stdout and "--link2" not in p.stdout.split("parameters")[1]


def test_a_link_parameter_is_labelled_link_and_a_host_parameter_host(tmp_path, invs):
    """`--link LINK  (link, default path1)`, not `--link HOST (host, ...)`: every role parameter of
    every scenario is labelled by what its default names in the shipped virtual rack."""
    inv = invs["virtual"]
    for name in scenarios.available():
        for prm in scenarios.get(name).all_params():
            if prm.type in ("host", "link"):
                kind = "link" if prm.default in inv.links else "host" if prm.default in inv.hosts else None
                assert prm.type == kind, (name, prm.name, prm.default, prm.type)
    p = ctl(tmp_path, "run", "rtt-loss-sweep", "--help")
    assert p.returncode == 0, p.stderr
    out = " ".join(p.stdout.split())
    assert "--link LINK inventory link used as the dumbbell's bottleneck (link, default path1)" in out
    assert "--client HOST sender (host, default a1)" in out and "HOST (host, default path1)" not in out
    p = ctl(tmp_path, "scenarios", "show", "distinct-bottleneck")
    assert re.search(r"--path2 +link +default path2 ", p.stdout) and re.search(r"--mptcp-client +host ", p.stdout)


def test_help_defaults_are_this_machines_settings(tmp_path):
    """`ctl run --help` names where records go here (flag > environment > file > default), not the
    checkout's runs/; the manual page and the reference pages name the rule instead."""
    where = tmp_path / "my-runs"
    p = ctl(tmp_path, "run", "--help", env={"CTL_RUNS_DIR": str(where), "COLUMNS": "1000"})
    text = " ".join(p.stdout.split())
    assert f"default here: {where}, environment (CTL_RUNS_DIR)" in text
    generic = " ".join(build_parser("run")._subparsers._group_actions[0].choices["run"].format_help().split())
    assert str(ROOT) not in generic and "$CTL_RUNS_DIR" in generic


# ---- did you mean ------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, fragment", [
    (["rn", "x"], "invalid choice: 'rn' (did you mean 'run' or 'runs'?)"),
    (["link", "sett", "path1"], "invalid choice: 'sett' (did you mean 'set' or 'reset'?)"),
    (["link", "show", "--jsn"], "link show: unrecognized arguments: --jsn (did you mean --json?)"),
    (["--verbos", "scenarios"], "unrecognized arguments: --verbos (did you mean --verbose"),
    (["run", "distinct-botleneck"], "unknown scenario 'distinct-botleneck' (did you mean 'distinct-bottleneck'"),
    (["scenarios", "show", "shared-botleneck"], "unknown scenario 'shared-botleneck' (did you mean "
                                                "'shared-bottleneck'"),
    (["run", "distinct-bottleneck", "--duraton", "5s"], "unrecognized arguments: --duraton (did you mean "
                                                        "--duration?)"),
    (["field", "start", "--host", "m1", "--workload", "iperf"], "invalid choice: 'iperf' (did you mean 'iperf3'?)"),
    (["run", "--duration", "5s"], "run: which scenario?"),
    (["run", "distinct-botleneck", "--help"], "(did you mean 'distinct-bottleneck'"),
])
def test_did_you_mean(tmp_path, argv, fragment):
    p = ctl(tmp_path, *argv)
    assert fragment in one_error(p)
    assert not (tmp_path / "state").exists() and not (tmp_path / "runs").exists()


# ---- global options mean one thing wherever they stand -------------------------------------------

def test_inventory_flag_is_honoured_by_every_command(tmp_path):
    """`ctl -i FILE config show` ignored the flag; now before or after the command, by path or by
    the name of a shipped file, and config show says it came from the command line."""
    lab = find_shipped("inventory", LAB)
    for argv in (("-i", LAB, "config", "show", "--json"), ("config", "show", "--json", "--inventory", str(lab))):
        p = ctl(tmp_path, *argv)
        assert p.returncode == 0, p.stderr
        inv = json.loads(p.stdout)["data"]["settings"]["inventory"]
        assert inv["value"] == str(lab) and inv["source"].startswith("command-line flag"), inv
    p = ctl(tmp_path, "-i", "no-such-rack.yaml", "config", "show", "--json")
    assert json.loads(p.stdout)["data"]["settings"]["inventory"]["value"] == "no-such-rack.yaml"
    p = ctl(tmp_path, "run", "distinct-bottleneck", "--dry-run", "-i", "no-such-rack.yaml")
    assert "no-such-rack.yaml" in one_error(p)


def test_quiet_means_one_thing_before_and_after_the_command(tmp_path):
    """-q before the command (it was: log errors only) and after it (it was: no progress lines) is
    now the same: no progress lines, no log below errors; the conversion warnings stay."""
    def stderr(*argv: str) -> list[str]:
        p = ctl(tmp_path, *argv)
        assert p.returncode == 0, p.stderr
        return p.stderr.splitlines()
    run = ("run", "rtt-loss-sweep", "--loss", "0.0046%", "--dry-run", "-i", LAB)
    loud = stderr(*run)
    before = stderr("-q", *run)
    after = stderr(*run, "-q")
    assert any(line.startswith("[") for line in loud)            # progress lines
    assert before == after and not any(line.startswith("[") for line in after)
    assert [line for line in loud if line.startswith("warning:")] == after and after


def test_a_closed_pipe_is_a_quiet_exit(tmp_path):
    """`ctl ... | head`: exit 141 (128 + SIGPIPE, as git's), nothing on stderr."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTL_")}
    p = subprocess.Popen([sys.executable, "-m", "controller", "scenarios", "show", "distinct-bottleneck"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path, env=env)
    p.stdout.close()                          # the reader is gone before ctl writes anything
    err = p.stderr.read().decode()
    assert p.wait(timeout=60) == 141 and err == ""


# ---- nothing found: one rule ------------------------------------------------------------------------

def test_nothing_found_exit_codes(tmp_path):
    """A list or status that finds nothing: 0 (and says so); a run named, or the latest one a
    command acts on, that does not exist: 2 (bad input), as `ctl --help` says."""
    assert ctl(tmp_path, "campaign", "status").returncode == 0
    assert ctl(tmp_path, "reproduce", "status").returncode == 0
    assert ctl(tmp_path, "runs", "list").returncode == 0
    p = ctl(tmp_path, "metrics", "push", "--all", "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["data"] == []
    for argv in (("metrics", "push", "no-such-run"), ("metrics", "push"), ("field", "report"),
                 ("campaign", "status", "7"), ("reproduce", "report"), ("runs", "show", "no-such-run")):
        assert ctl(tmp_path, *argv).returncode == 2, argv
    text = " ".join(ctl(tmp_path, "--help").stdout.split())
    assert "a list or status that finds nothing is a success too" in text and "141" in text


# ---- the reproduction report's table wraps at words -------------------------------------------------

def test_claims_wrap_at_words_never_inside_one():
    claim = ("MPTCP with MCubic takes a fair share at each of two distinct bottlenecks, Jain's index above 0.95 "
             "for every capacity of link 2 from 10 to 50 Mbit/s (Table 1)")
    lines = verdict_lines([("mcubic", claim, "reproduced (strong)"), ("bbrv3", "short claim", "not reproduced")],
                          width=40)
    assert lines[0].startswith("mcubic    ") and lines[0].endswith("  reproduced (strong)")
    words = " ".join(line[10:].replace("reproduced (strong)", "").replace("not reproduced", "")
                     for line in lines).split()
    assert words == claim.split() + ["short", "claim"]       # every word whole, in order
    assert all(len(line[10:50].rstrip()) <= 40 for line in lines)
    assert lines[-1].startswith("bbrv3     short claim") and lines[-1].endswith("not reproduced")


# ---- shipped files by name; list commands change nothing ------------------------------------------

def test_shipped_files_are_found_by_name_and_listed(tmp_path):
    assert "rtt-loss-sweep.yaml" in shipped_files("campaigns") and LAB in shipped_files("inventory")
    assert find_shipped("campaigns", "rtt-loss-sweep") == find_shipped("campaigns", "rtt-loss-sweep.yaml")
    for bad in ("../inventory/virtual.yaml", "/etc/passwd", "", "deviations/../../x.yaml"):
        assert find_shipped("campaigns", bad) is None, bad
    p = ctl(tmp_path, "campaign", "plan", "rtt-loss-sweep.yaml", "--json", "-i", LAB)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["data"]
    assert "no-such-campaign.yaml" in one_error(ctl(tmp_path, "campaign", "plan", "no-such-campaign.yaml"))
    shown = ctl(tmp_path, "config", "show")
    assert "shipped campaign files" in shown.stdout and "rtt-loss-sweep.yaml" in shown.stdout
    assert not (tmp_path / "state").exists()


@pytest.mark.parametrize("argv, said", [
    (["campaign", "plan", "rtt-loss-sweap.yaml"], "rtt-loss-sweap.yaml: no such file, nor a shipped campaign file of "
     "that name (did you mean 'rtt-loss-sweep.yaml' or 'rtt-loss-sweep-short.yaml'? `ctl config show` lists the "
     "shipped ones)"),
    (["campaign", "submit", "mcubic-tabel1"], "(did you mean 'mcubic-table1.yaml' or"),
    (["campaign", "plan", "dev-balia-flor.yaml"], "(did you mean 'deviations/dev-balia-floor.yaml'?"),
    (["-i", "lab-rack.exmaple.yaml", "link", "show"], "lab-rack.exmaple.yaml: no such file, nor a shipped inventory "
     "of that name (did you mean 'lab-rack.example.yaml'?"),
    (["inventory", "check", "virtual.yml"], "(did you mean 'virtual.yaml'?"),
    # nothing close, or a path: the reader's own words, no guess
    (["campaign", "plan", "no-such-campaign.yaml"], "no-such-campaign.yaml: cannot read: No such file or directory"),
    (["campaign", "plan", "/nonexistent/rtt-loss-sweap.yaml"], "/nonexistent/rtt-loss-sweap.yaml: cannot read:"),
])
def test_a_misspelt_shipped_file_name_gets_the_close_shipped_names(tmp_path, argv, said):
    p = ctl(tmp_path, *argv)
    assert p.returncode == 2 and said in one_error(p), p.stderr
    assert not (tmp_path / "state").exists() and not (tmp_path / "runs").exists()


def test_inventory_check_finds_a_shipped_inventory_by_name(tmp_path):
    p = ctl(tmp_path, "inventory", "check", LAB)
    assert p.returncode == 0, p.stderr


def test_cc_list_builds_nothing(tmp_path):
    """`ctl cc list` compiled the BPF programs (a list with a side effect); now it checks the
    toolchain only, and says they build on first use."""
    p = ctl(tmp_path, "cc", "list", "--json")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)["data"]["algorithms"]
    bpf = [r for r in rows if r["kind"] == "bpf"]
    assert bpf and all(r["built_on_first_use"] for r in bpf)
    assert not (tmp_path / "state").exists()          # no build dir, nothing at all
    assert "build on first use" in ctl(tmp_path, "cc", "list").stdout


# ---- service units -----------------------------------------------------------------------------------

def test_service_units_document_an_installed_page_and_fit_the_rack(tmp_path):
    """No `Documentation=` naming a README that is not installed: the manual page, by name where
    man(1) finds it alone, else by the path of the page that is there. A virtual rack needs root."""
    p = ctl(tmp_path, "service", "install", "--dry-run", "--ctl", "/usr/bin/true")
    assert p.returncode == 0, p.stderr
    assert "User=root" in p.stdout and "README" not in p.stdout
    docs = set(re.findall(r"^Documentation=(.*)$", p.stdout, re.M))
    assert len(docs) == 1
    (doc,) = docs
    assert doc == "man:ctl(1)" or (doc.startswith("file:///") and Path(doc[len("file://"):]).is_file()), doc
    line = one_error(ctl(tmp_path, "service", "install", "--dry-run", "--user", "ctl", "--ctl", "/usr/bin/true"))
    assert "virtual rack, which needs root" in line and "--user root" in line
    p = ctl(tmp_path, "service", "install", "--dry-run", "--nightly", "--ctl", "/usr/bin/true", "-i", LAB)
    assert p.returncode == 0 and "User=ctl" in p.stdout
    assert p.stdout.count(f"Documentation={doc}") == 3


def test_documentation_uri_names_an_installed_page(tmp_path):
    from controller.service import CHECKOUT_PAGE, documentation_uri
    page = tmp_path / "share" / "man" / "man1" / "ctl.1"
    page.parent.mkdir(parents=True)
    page.write_text(".TH CTL 1\n")
    assert documentation_uri(tmp_path) == f"file://{page}"          # a virtual environment's page
    assert documentation_uri(tmp_path / "empty") == f"file://{CHECKOUT_PAGE}"   # none installed: the checkout's
