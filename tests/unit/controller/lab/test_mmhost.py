"""The virtual modem host's ModemManager services (controller/lab/mmhost.py and their part of the plan): what
runs, in which order, with which files -- and that nothing of it is machine-wide (no /run/dbus, no host udev
rules, no mount outside the daemon's own mount namespace). The services themselves run in
tests/integration/test_field_mm.py.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from controller.inventory import load_inventory
from controller.lab import mmhost
from controller.lab.plan import plan_lab, runs_modemmanager
from tests.support.shipped import LAB, VIRTUAL

pytestmark = pytest.mark.usefixtures("tmp_state_dir")


@pytest.fixture
def inv():
    return load_inventory(VIRTUAL)


def test_only_a_virtual_mmcli_modem_host_runs_modemmanager(inv):
    assert [h for h in sorted(inv.hosts) if runs_modemmanager(inv, h)] == ["m1"]
    assert not runs_modemmanager(inv, "m2") and not runs_modemmanager(inv, "bastion")
    lab = load_inventory(LAB)
    assert not any(runs_modemmanager(lab, h) for h in lab.hosts)          # a physical rack runs its own


def test_services_in_order_in_the_hosts_namespace(inv):
    plan = plan_lab(inv)
    m1 = [d for d in plan.daemons if d.host == "m1" and d.name != "sshd"]
    assert [d.name for d in m1] == ["modem-test-double", "system-bus", "polkitd", "ModemManager"]
    for d in m1:
        assert d.argv[:4] == ("ip", "netns", "exec", "ctlv-m1")
    emu, bus, polkit, mm = m1
    rt = inv.virtual.runtime_dir / "hosts" / "m1" / "mm"
    assert emu.argv[emu.argv.index("--link") + 1] == str(rt / "pty") and emu.argv[-1] == "quectel"
    assert bus.argv[4:] == ("dbus-daemon", "--nofork", "--nopidfile", f"--config-file={rt / 'system-bus.conf'}")
    address = mmhost.bus_address("ctlv-m1")
    assert address == "unix:abstract=/ctl/ctlv-m1/system_bus_socket"
    assert polkit.argv[-5:] == ("--address", address, "--", mmhost.POLKITD, "--no-debug")
    assert mm.argv[6:8] == ("controller.lab.mmhost", "modemmanager")
    assert mm.argv[mm.argv.index("--uid") + 1] == "ctl-virtual-modem-m1"
    assert plan.files[str(rt / "system-bus.conf")] == mmhost.bus_config(address)
    # nothing machine-wide: no system bus path, no udev rules, no mount done by the plan itself
    text = repr(plan.daemons) + repr(plan.commands) + repr(plan.files)
    assert "/run/dbus" not in text and "rules.d" not in text and "mount" not in repr([d.argv for d in m1])


def test_the_hosts_ssh_sessions_reach_its_bus(inv):
    plan = plan_lab(inv)
    rt = inv.virtual.runtime_dir / "hosts"
    assert "SetEnv DBUS_SYSTEM_BUS_ADDRESS=unix:abstract=/ctl/ctlv-m1/system_bus_socket" in \
        plan.files[str(rt / "m1" / "sshd_config")].splitlines()
    assert not any("SetEnv" in plan.files[str(rt / h / "sshd_config")] for h in plan.ssh_hosts if h != "m1")


def test_bus_config_is_a_system_bus_without_activation():
    text = mmhost.bus_config("unix:abstract=/ctl/x/system_bus_socket")
    assert "<type>system</type>" in text and "<listen>unix:abstract=/ctl/x/system_bus_socket</listen>" in text
    assert "servicedir" not in text and "<user>" not in text          # nothing started by the bus, runs as root
    assert '<allow own="*"/>' in text


def test_extra_rules_in_modemmanagers_rule_grammar():
    lines = [x for x in mmhost.extra_rules("tty62").splitlines() if x and not x.startswith("#")]
    props = []
    for line in lines:
        *conditions, result = [item.strip() for item in line.split(",")]
        # ModemManager's generic rules: every item but the last is a match (== / !=), the last one ENV{X}="v"
        assert conditions == ['SUBSYSTEM=="tty"', 'KERNEL=="tty62"']
        m = re.fullmatch(r'ENV\{(ID_MM_[A-Z_]+)\}="1"', result)
        assert m
        props.append(m.group(1))
    assert props == ["ID_MM_CANDIDATE", "ID_MM_DEVICE_PROCESS", "ID_MM_PORT_TYPE_AT_PRIMARY"]
    assert mmhost.EXTRA_RULES.startswith(mmhost.RULE_PREFIXES)        # a name ModemManager reads
    assert mmhost.initial_event("tty62", "ctl-virtual-modem-m1") == \
        "action=add,subsystem=tty,name=tty62,uid=ctl-virtual-modem-m1\n"


def test_choose_tty_takes_the_highest_virtual_console_present_in_both():
    sys_names = ["console", "tty", "tty0", "tty1", "tty62", "tty63", "ttyS0"]
    assert mmhost.choose_tty(sys_names, ["tty", "tty0", "tty1", "tty62"]) == "tty62"
    assert mmhost.choose_tty(["ttyS0", "pts"], ["ttyS0"]) is None
    assert mmhost.choose_tty(["tty0"], ["tty0"]) is None                 # tty0 is the current console


def test_prepare_rules_copies_modemmanagers_files_and_adds_one(tmp_path: Path):
    src = tmp_path / "rules.d.src"
    src.mkdir()
    for name in ("77-mm-quectel-port-types.rules", "80-mm-candidate.rules", "99-other.rules", "60-serial.rules"):
        (src / name).write_text(f"# {name}\n")
    work = tmp_path / "mm"
    work.mkdir()
    out = mmhost.prepare_rules(work, "tty63", rules_dir=str(src))
    assert sorted(os.listdir(out)) == ["77-mm-quectel-port-types.rules", mmhost.EXTRA_RULES, "80-mm-candidate.rules"]
    assert (out / mmhost.EXTRA_RULES).read_text() == mmhost.extra_rules("tty63")
    assert mmhost.prepare_rules(work, "tty62", rules_dir=str(src)) == out   # again: replaced, not added to
    assert "tty62" in (out / mmhost.EXTRA_RULES).read_text()


def test_prepare_rules_refuses_a_symlink_in_its_place(tmp_path: Path):
    work = tmp_path / "mm"
    work.mkdir()
    victim = tmp_path / "elsewhere"
    victim.mkdir()
    (work / "rules.d").symlink_to(victim)
    with pytest.raises(mmhost.LaunchError, match="symlink"):
        mmhost.prepare_rules(work, "tty63", rules_dir=str(tmp_path))
    assert os.listdir(victim) == []


def test_waits_are_bounded_and_say_what_did_not_come(tmp_path: Path):
    with pytest.raises(mmhost.LaunchError, match="system bus .* did not come up"):
        mmhost.wait_bus("unix:abstract=/ctl/test-nobody-listens-%d" % os.getpid(), 0.2)
    with pytest.raises(mmhost.LaunchError, match="pty link"):
        mmhost.wait_tty(str(tmp_path / "pty"), 0.2)


def test_launcher_usage(capsys):
    assert mmhost.main(["wait-bus", "--address", "unix:abstract=/ctl/none-%d" % os.getpid(), "--timeout", "0.1",
                        "--", "/bin/true"]) == 1
    assert "did not come up" in capsys.readouterr().err
