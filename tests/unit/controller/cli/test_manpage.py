"""ctl(1) is generated from the parser: every command and subcommand is in it, the exit status
table is `ctl --help`'s, and groff formats it without a warning."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

from controller.cli import EXIT_CODES
from controller.cli.commands import COMMANDS
from controller.cli.manpage import render


def test_every_command_and_exit_status_is_documented():
    page = render()
    assert page.startswith(".TH CTL 1 ")
    for name in COMMANDS.names():
        assert f".SS ctl {name}\n" in page, name
    for sub in ("ctl campaign status", "ctl link reset", "ctl service install", "ctl config show", "ctl cc list"):
        assert f".SS {sub}\n" in page, sub
    for code, _what in EXIT_CODES:
        assert f".TP\n.B {code}\n" in page
    assert "\\-\\-watch" in page and "CTL_STATE_DIR" in page


def test_groff_formats_it_without_warnings(tmp_path):
    assert shutil.which("groff"), "groff missing (scripts/setup.sh installs groff-base)"
    page = tmp_path / "ctl.1"
    page.write_text(subprocess.run([sys.executable, "-m", "controller.cli.manpage"], capture_output=True, text=True,
                                   check=True).stdout)
    p = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-P-cbou", str(page)], capture_output=True, text=True)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert "EXIT STATUS" in p.stdout and "campaign" in p.stdout


def test_the_committed_page_is_up_to_date_and_man_reads_it(tmp_path):
    """man/man1/ctl.1 is what a wheel installs as share/man/man1/ctl.1 (setup.py): it must be what
    the parser gives now, the same on every machine (no date, no path of this one), and man(1)
    must read it, by file and by name from man/ as a manual directory."""
    from controller.cli.manpage import PAGE
    from tests.support.shipped import ROOT
    p = subprocess.run([sys.executable, "-m", "controller.cli.manpage", "--check"], capture_output=True, text=True,
                       cwd=tmp_path, env={k: v for k, v in os.environ.items() if not k.startswith("CTL_")})
    assert p.returncode == 0, p.stderr + "\nregenerate: python -m controller.cli.manpage --write"
    text = PAGE.read_text()
    assert str(ROOT) not in text and "/root" not in text
    assert shutil.which("man"), "man missing (scripts/setup.sh installs man-db)"
    shown = subprocess.run(["man", "-l", "-P", "cat", str(PAGE)], capture_output=True, text=True,
                           env={"PATH": "/usr/bin:/bin", "MANWIDTH": "100"})
    assert shown.returncode == 0 and "EXIT STATUS" in shown.stdout and "ctl run" in shown.stdout, shown.stderr
    found = subprocess.run(["man", "-w", "ctl"], capture_output=True, text=True,
                           env={"PATH": "/usr/bin:/bin", "MANPATH": str(PAGE.parent.parent)})
    assert found.returncode == 0 and found.stdout.strip() == str(PAGE), found.stderr
