"""ctl as an installed tool: a wheel built from this checkout, installed into a fresh virtual
environment outside it, works without the checkout (issue 18's "done when"): --version names
the commit it was built from, the scenarios are listed, a dry run on the shipped lab-rack
example and a plan of a shipped campaign file succeed, and its settings follow XDG.

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


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("install")
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp / "dist"),
                        str(PROJECT)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
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
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp / "home")}
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
