"""The campaign daemon's systemd units: filled in for a rack, written safely, and accepted by
systemd itself (`systemd-analyze verify`, the Debian systemd package's own checker)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from controller.errors import UsageError
from controller.service import ALWAYS, NIGHTLY, UnitSettings, install_units, render_units

PROJECT = Path(__file__).resolve().parents[3]
CTL = [sys.executable, "-m", "controller"]


def settings(**kw) -> UnitSettings:
    base = dict(ctl=str(Path(sys.executable).parent / "ctl"), user="root",
                inventory=str(PROJECT / "inventory" / "virtual.yaml"), rack="virtual")
    return UnitSettings(**{**base, **kw})


def test_units_are_filled_in_completely():
    units = render_units(settings(nightly=True, at="22:05", user="ctl"))
    assert set(units) == set(ALWAYS + NIGHTLY)
    for text in units.values():
        assert not re.search(r"@[A-Z_]+@", text)
    svc = units["ctl-campaign.service"]
    assert f"ExecStart={settings().ctl} campaign daemon --inventory {settings().inventory}" in svc
    assert "User=ctl" in svc and "StateDirectory=ctl" in svc and "ConfigurationDirectory=ctl" in svc
    assert "KillSignal=SIGTERM" in svc and "NoNewPrivileges=yes" in svc
    assert "--exit-when-idle" in units["ctl-campaign-nightly.service"]
    assert "OnCalendar=*-*-* 22:05:00" in units["ctl-campaign-nightly.timer"]


@pytest.mark.parametrize("bad", [dict(user="bad user"), dict(at="25:00"), dict(ctl="relative/ctl"),
                                 dict(inventory="/with space/inv.yaml"), dict(inventory="/x/%h.yaml")])
def test_bad_values_are_refused(bad):
    with pytest.raises(UsageError):
        render_units(settings(**bad))


def test_install_writes_atomically_and_refuses_a_symlink(tmp_path):
    units = render_units(settings())
    written = install_units(units, tmp_path)
    assert [p.name for p in written] == list(ALWAYS)
    assert oct(written[0].stat().st_mode & 0o777) == "0o644"
    victim = tmp_path / "victim"
    victim.write_text("keep")
    written[0].unlink()
    written[0].symlink_to(victim)
    with pytest.raises(UsageError):
        install_units(units, tmp_path)
    assert victim.read_text() == "keep"


def test_systemd_accepts_the_units(tmp_path):
    assert shutil.which("systemd-analyze"), "systemd-analyze missing (scripts/setup.sh installs systemd)"
    p = subprocess.run([*CTL, "service", "install", "--dest", str(tmp_path), "--user", "root", "--nightly",
                        "--ctl", settings().ctl, "--inventory", settings().inventory, "--json"],
                       capture_output=True, text=True, env={**os.environ, "CTL_INVENTORY": settings().inventory})
    assert p.returncode == 0, p.stderr
    files = sorted(str(f) for f in tmp_path.iterdir())
    assert len(files) == 3
    v = subprocess.run(["systemd-analyze", "verify", *files], capture_output=True, text=True)
    assert v.returncode == 0, v.stderr
    # and systemd does reject a unit whose program does not exist: the check is real
    bad = tmp_path / "bad"
    bad.mkdir()
    install_units(render_units(settings(ctl="/nonexistent/ctl")), bad)
    v = subprocess.run(["systemd-analyze", "verify", str(bad / "ctl-campaign.service")], capture_output=True, text=True)
    assert v.returncode != 0 and "/nonexistent/ctl" in v.stderr
