"""ctl as an installed tool: a wheel built from this checkout, installed into a fresh virtual
environment outside it, works without the checkout (issue 18's "done when"): --version names
the commit it was built from, the scenarios are listed, a dry run on the shipped lab-rack
example and a plan of a shipped campaign file succeed, and its settings follow XDG.

Issue 26's: the build writes nothing into the checkout (no build/, no ctl.egg-info); shipped
campaigns and inventories are found by name and listed by `ctl config show`; help texts name
the installed tool's own defaults; `man ctl` reads the page the wheel installed into the
environment's share/man; the service units document that page; the wheel names its licence and
carries the README as its long description.

The wheel is built as pip builds it (isolated build environment from the package index);
ctl's dependencies are taken from this checkout's .venv (a .pth file), so the test does not
download them again; ctl itself comes only from the wheel (cwd is outside the checkout)."""
from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
PROJECT = Path(__file__).resolve().parents[2]


# What a setuptools build used to leave in the tree it builds from (a stale build/lib can carry
# deleted modules into the next wheel).
BUILD_LEFTOVERS = ("build", "ctl.egg-info", "controller/_build.json")


def _leftovers() -> dict[str, float | None]:
    """Each leftover's modification time in the checkout (None: absent)."""
    return {name: (PROJECT / name).stat().st_mtime if (PROJECT / name).exists() else None
            for name in BUILD_LEFTOVERS}


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("install")
    before = _leftovers()
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp / "dist"),
                        str(PROJECT)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    # The build ran out of tree (setup.py): nothing of it was written into the checkout.
    assert _leftovers() == before, f"the build wrote into the checkout: {before} -> {_leftovers()}"
    wheel = next((tmp / "dist").glob("ctl-*.whl"))
    venv = tmp / "venv"
    # the interpreter behind this .venv: its packages (added below) are built for it
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", "--without-pip", str(venv)],
                   check=True)
    p = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                        "--no-deps", str(wheel)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    purelib = subprocess.run([str(venv / "bin" / "python"), "-c",
                              "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    (Path(purelib) / "ctl-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return wheel, venv, Path(purelib), tmp


def ctl(installed, *args: str) -> subprocess.CompletedProcess:
    _wheel, venv, _lib, tmp = installed
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp / "home"), "COLUMNS": "1000"}
    return subprocess.run([str(venv / "bin" / "ctl"), *args], capture_output=True, text=True, cwd=tmp, env=env,
                          timeout=120)


def test_the_wheel_carries_what_ctl_ships(installed):
    wheel = installed[0]
    names = set(zipfile.ZipFile(wheel).namelist())
    for must in ("controller/shipped/inventory/virtual.yaml", "controller/shipped/inventory/lab-rack.example.yaml",
                 "controller/shipped/campaigns/mcubic-table1.yaml", "controller/shipped/dnpipe/Makefile",
                 "nodes/congestion/bpf/lia.bpf.c", "nodes/congestion/bpf/ctl_cc.h", "nodes/fieldlog/__init__.py",
                 "controller/telemetry/grafana/ctl-run-overview.json", "controller/systemd/ctl-campaign.service",
                 "controller/_build.json"):
        assert must in names, must
    assert not any(n.startswith("tests/") for n in names)


def test_installed_ctl_works_outside_the_checkout(installed):
    _wheel, _venv, lib, tmp = installed
    shipped = lib / "controller" / "shipped"
    v = ctl(installed, "--version")
    assert v.returncode == 0 and v.stdout.startswith("ctl ") and "commit unknown" not in v.stdout, v
    s = ctl(installed, "scenarios")
    assert s.returncode == 0 and "distinct-bottleneck" in s.stdout
    d = ctl(installed, "run", "distinct-bottleneck", "--dry-run", "--inventory",
            str(shipped / "inventory" / "lab-rack.example.yaml"))
    assert d.returncode == 0, d.stderr
    assert "dry run:" in d.stdout and "nothing was sent" in d.stdout
    c = ctl(installed, "campaign", "plan", str(shipped / "campaigns" / "mcubic-table1.yaml"), "--json")
    assert c.returncode == 0, c.stderr
    assert json.loads(c.stdout)["data"]
    cfg = json.loads(ctl(installed, "config", "show", "--json").stdout)["data"]
    assert cfg["checkout"] is False
    assert cfg["settings"]["state_dir"]["value"] == str(tmp / "home" / ".local" / "state" / "ctl")
    assert cfg["settings"]["inventory"]["value"] == str(shipped / "inventory" / "virtual.yaml")
    # nothing of the checkout leaked in: the installed package is what ran
    where = subprocess.run([str(installed[1] / "bin" / "python"), "-c", "import controller; print(controller.__file__)"],
                           capture_output=True, text=True, cwd=tmp).stdout
    assert where.startswith(str(lib))


def test_the_wheel_metadata_names_its_licence_and_carries_the_readme(installed):
    wheel = installed[0]
    z = zipfile.ZipFile(wheel)
    meta = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    head, _, body = meta.partition("\n\n")
    assert "License-Expression: MIT AND GPL-2.0-only" in head
    assert "Description-Content-Type: text/markdown" in head
    assert body.startswith("# ctl") and len(body) > 2000          # the README as the long description
    assert "ctl-0.1.0.data/data/share/man/man1/ctl.1" in z.namelist()


def test_shipped_files_by_name_outside_the_checkout(installed):
    """Issue 26: `ctl campaign plan rtt-loss-sweep.yaml` said "cannot read"; `-i lab-rack.example.yaml`
    needed the full site-packages path. Both are names of files ctl ships."""
    _wheel, _venv, lib, tmp = installed
    shipped = lib / "controller" / "shipped"
    c = ctl(installed, "campaign", "plan", "rtt-loss-sweep.yaml", "--json", "-i", "lab-rack.example.yaml")
    assert c.returncode == 0, c.stderr
    assert json.loads(c.stdout)["data"]
    d = ctl(installed, "-i", "lab-rack.example.yaml", "run", "--duration", "5s", "distinct-bottleneck", "--dry-run")
    assert d.returncode == 0 and "nothing was sent" in d.stdout, d.stderr
    cfg = json.loads(ctl(installed, "-i", "lab-rack.example.yaml", "config", "show", "--json").stdout)["data"]
    assert cfg["settings"]["inventory"]["value"] == str(shipped / "inventory" / "lab-rack.example.yaml")
    assert cfg["settings"]["inventory"]["source"].startswith("command-line flag")
    assert cfg["shipped"]["campaigns"]["dir"] == str(shipped / "campaigns")
    assert "rtt-loss-sweep.yaml" in cfg["shipped"]["campaigns"]["files"]
    assert "lab-rack.example.yaml" in cfg["shipped"]["inventory"]["files"]
    assert "shipped campaign files" in ctl(installed, "config", "show").stdout


def test_help_names_the_installed_tools_defaults(installed):
    """Help texts named the checkout's runs/; the installed tool's is XDG's."""
    _wheel, _venv, _lib, tmp = installed
    out = ctl(installed, "run", "--help").stdout
    assert f"default here: {tmp / 'home' / '.local' / 'share' / 'ctl' / 'runs'}, XDG_DATA_HOME/ctl/runs" in out
    assert "runs/" not in out.replace(".local/share/ctl/runs", "")


def test_man_ctl_reads_the_installed_page(installed):
    """The wheel installs ctl(1) into the environment's share/man; man(1) finds it from PATH
    (man-db looks beside each bin directory), and the units document it by its path."""
    _wheel, venv, _lib, tmp = installed
    page = venv / "share" / "man" / "man1" / "ctl.1"
    assert page.is_file()
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp / "home"), "MANWIDTH": "100"}
    found = subprocess.run(["man", "-w", "ctl"], capture_output=True, text=True, env=env, cwd=tmp)
    assert found.returncode == 0 and found.stdout.strip() == str(page), found.stderr
    shown = subprocess.run(["man", "-P", "cat", "ctl"], capture_output=True, text=True, env=env, cwd=tmp)
    assert shown.returncode == 0 and "EXIT STATUS" in shown.stdout and "campaign plan" in shown.stdout
    assert subprocess.run(["man", "-l", "-P", "cat", str(page)], capture_output=True, text=True,
                          env=env).returncode == 0
    units = ctl(installed, "service", "install", "--dry-run", "-i", "lab-rack.example.yaml")
    assert units.returncode == 0, units.stderr
    assert f"Documentation=file://{page}" in units.stdout and "README" not in units.stdout
