"""ctl(1), generated from the parser itself, so the manual never drifts from `ctl --help`:

    python -m controller.cli.manpage > ctl.1 && man -l ctl.1
    python -m controller.cli.manpage --write     # (re)write man/man1/ctl.1, the page a wheel installs
    python -m controller.cli.manpage --check     # exit 1 when man/man1/ctl.1 is out of date

The page is the same on every machine (no date, no path of this one: help texts name the rule of
a setting's default, not this machine's value), so man/man1/ctl.1 is committed and installed as
share/man/man1/ctl.1 (setup.py's data_files: a wheel's build environment has not ctl's
dependencies, so it cannot build the parser); tests/unit/controller/cli/test_manpage.py checks
that it is up to date.

Sections: NAME, SYNOPSIS, DESCRIPTION, COMMANDS (every command and subcommand with its
options and their help), EXIT STATUS (the table `ctl --help` prints), ENVIRONMENT, FILES.
Plain man(7) macros only (.TH .SH .SS .TP .B .I .PP .RS .RE). The lib argparse-manpage does
this for a flat parser; ctl's commands are built lazily from a registry and its scenario
parameters live in each scenario, which is why this walks the parser itself (70 lines).
"""
from __future__ import annotations

import argparse
import sys

from controller.cli import EXIT_CODES, build_parser
from controller.settings import ENV, PROJECT_ROOT
from controller.version import version

PAGE = PROJECT_ROOT / "man" / "man1" / "ctl.1"     # man/ is a manual directory: MANPATH=man man ctl

ENVIRONMENT = {
    **{v: f"the {k.replace('_', ' ')} (flag > environment > config file > default; `ctl config show`)"
       for k, v in ENV.items()},
    "CTL_CONFIG": "the config file (default ~/.config/ctl/config.yaml, then /etc/ctl/config.yaml)",
    "CTL_LOCK_DIR": "where the machine-wide rack locks live (default /run/lock/ctl)",
    "CTL_INFLUX_TOKEN": "the InfluxDB token an inventory may refer to (never written to records)",
}


def _esc(text: str) -> str:
    out = (text or "").replace("\\", "\\e").replace("-", "\\-")
    return "\n".join(("\\&" + line) if line.startswith((".", "'")) else line for line in out.splitlines())


def _options(p: argparse.ArgumentParser) -> list[str]:
    out = []
    for a in p._actions:
        if a.help == argparse.SUPPRESS or isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        if getattr(a, "everywhere", False):     # -i, -q after a command: said once, with the global options
            continue
        names = ", ".join(a.option_strings) if a.option_strings else (a.metavar or a.dest)
        if a.option_strings and a.nargs != 0:
            names += f" {a.metavar or a.dest.upper()}"
        out += [".TP", f".B {_esc(names)}", _esc(a.help or "")]
    return out


def _commands(p: argparse.ArgumentParser, prefix: str) -> list[str]:
    out = []
    for a in p._actions:
        if not isinstance(a, argparse._SubParsersAction):
            continue
        helps = {c.dest: c.help for c in a._choices_actions}
        for name, sp in a.choices.items():
            out += [f".SS {_esc(prefix + ' ' + name)}", _esc(helps.get(name) or sp.description or "")]
            opts = _options(sp)
            if opts:
                out += [".RS"] + opts + [".RE"]
            out += _commands(sp, prefix + " " + name)
    return out


def render() -> str:
    p = build_parser("*")
    lines = [f'.TH CTL 1 "" "ctl {version()}" "User Commands"',
             ".SH NAME", "ctl \\- controller of a hardware\\-in\\-the\\-loop network testbed",
             ".SH SYNOPSIS", ".B ctl", "[\\fIOPTIONS\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR]",
             ".SH DESCRIPTION", _esc(p.description or ""), ".PP",
             "Global options (\\-i, \\-q and \\-v mean the same before or after the command):"]
    lines += _options(p)
    lines += [".SH COMMANDS"] + _commands(p, "ctl")
    lines += [".SH EXIT STATUS"]
    for code, what in EXIT_CODES:
        lines += [".TP", f".B {code}", _esc(what)]
    lines += [".SH ENVIRONMENT"]
    for name, what in ENVIRONMENT.items():
        lines += [".TP", f".B {name}", _esc(what)]
    lines += [".SH FILES", ".TP", ".B ~/.config/ctl/config.yaml, /etc/ctl/config.yaml",
              "settings (state_dir, runs_dir, inventory, database_url)", ".TP",
              ".B ~/.local/state/ctl, /var/lib/ctl", "state: campaign store, locks, builds (a checkout: .state/)",
              ".TP", ".B ~/.local/share/ctl/runs, /var/lib/ctl/runs",
              "run records (a checkout: runs/)", ".TP", ".B controller/shipped/inventory, controller/shipped/campaigns",
              _esc("the inventories and campaign files ctl ships, inside the installed package (a checkout: "
                   "inventory/ and campaigns/); wherever a file is asked for, the name of one of them is enough; "
                   "`ctl config show` lists them"),
              ".SH SEE ALSO",
              _esc("ctl's documentation site, built from docs/ in its source repository (mkdocs build); "
                   "ipfw(8), dnctl(8), ip-mptcp(8), iperf3(1), systemd.service(5).")]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if argv == ["--write"]:
        PAGE.parent.mkdir(parents=True, exist_ok=True)
        PAGE.write_text(text)
        print(f"wrote {PAGE}")
        return 0
    if argv == ["--check"]:
        if not PAGE.exists() or PAGE.read_text() != text:
            print(f"{PAGE} is out of date: regenerate it with `python -m controller.cli.manpage --write`",
                  file=sys.stderr)
            return 1
        return 0
    if argv:
        print("usage: python -m controller.cli.manpage [--write | --check]", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
