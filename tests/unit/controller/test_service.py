"""The campaign daemon's systemd units: filled in for a rack, written safely, and accepted by
systemd itself (`systemd-analyze verify`, the Debian systemd package's own checker)."""
from __future__ import annotations

import os
import re
import shutil
import stat
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


# ---- --dest planted with links and FIFOs (issue 23): one line, exit 2, nothing written through --------

def install_cli(dest, timeout: float = 60) -> subprocess.CompletedProcess:
    """`ctl service install --dest DEST` as a user runs it; a hang (a FIFO opened for writing
    waits for a reader forever) fails the test through the timeout."""
    return subprocess.run([*CTL, "service", "install", "--dest", str(dest), "--user", "root", "--ctl", settings().ctl,
                           "--inventory", settings().inventory], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "CTL_INVENTORY": settings().inventory})


def one_line_refusal(p: subprocess.CompletedProcess) -> str:
    err = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(err) == 1 and "Traceback" not in p.stderr, p.stdout + p.stderr
    return err[0]


@pytest.mark.parametrize("kind", ["symlink", "fifo", "directory"])
def test_a_unit_name_that_is_not_a_regular_file_is_refused_and_left_alone(tmp_path, kind):
    dest = tmp_path / "units"
    dest.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    unit = dest / "ctl-campaign.service"
    if kind == "symlink":
        unit.symlink_to(victim)
    elif kind == "fifo":
        os.mkfifo(unit)
    else:
        unit.mkdir()
    line = one_line_refusal(install_cli(dest))
    assert str(unit) in line and "not a regular file" in line
    assert victim.read_text() == "precious\n"
    assert (unit.is_symlink() if kind == "symlink" else
            stat.S_ISFIFO(os.lstat(unit).st_mode) if kind == "fifo" else unit.is_dir())
    assert sorted(p.name for p in dest.iterdir()) == ["ctl-campaign.service"]   # no temporary left


@pytest.mark.parametrize("kind", ["symlink", "fifo"])
def test_a_link_or_fifo_planted_at_the_temporary_name_is_never_written_through(tmp_path, kind):
    """The old writer opened `.NAME.ctl-new` with O_NOFOLLOW (a planted symlink: a traceback)
    and without O_NONBLOCK (a planted FIFO: a hang). Now the name is removed, never opened."""
    dest = tmp_path / "units"
    dest.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    tmp = dest / ".ctl-campaign.service.ctl-new"
    if kind == "symlink":
        tmp.symlink_to(victim)
    else:
        os.mkfifo(tmp)
    p = install_cli(dest)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    unit = dest / "ctl-campaign.service"
    assert stat.S_ISREG(os.lstat(unit).st_mode) and "ExecStart=" in unit.read_text()
    assert victim.read_text() == "precious\n" and not os.path.lexists(tmp)


def test_a_dest_that_is_a_symlink_or_writable_by_others_is_refused(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    line = one_line_refusal(install_cli(link))
    assert str(link) in line and "symlink" in line and list(real.iterdir()) == []
    os.chmod(real, 0o777)
    line = one_line_refusal(install_cli(real))
    assert "writable by group or others" in line and list(real.iterdir()) == []
    line = one_line_refusal(install_cli(tmp_path / "missing"))
    assert "does not exist" in line
