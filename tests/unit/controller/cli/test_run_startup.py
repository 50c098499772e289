"""What `ctl run`'s start-up does earlier or later than it used to (issue 28) without changing what
it says. The `ctl` program pauses the garbage collector while a command starts
(controller.cli.gcpause) and turns it on again before the command's handler runs (`ctl run`: once
its imports are done, before it waits for the rack), with the start-up's objects frozen; the
inventory's models are built when an inventory is first read (defer_build); `ctl run` reads the
inventory before it imports the scenario (the lease host's connection opens meanwhile), and its
errors keep their order: a misspelt scenario or parameter before a bad inventory, bad values and
a bad inventory with its file and line, all before anything is created."""
from __future__ import annotations

import gc
import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import asyncssh
import pytest

from controller.cli import gcpause

ROOT = Path(__file__).resolve().parents[4]


@pytest.fixture
def collector():
    """The test process's collector as it was, afterwards (enabled, nothing left frozen)."""
    was_on, frozen = gc.isenabled(), gc.get_freeze_count()
    yield
    gcpause._paused = False
    if frozen == 0:
        gc.unfreeze()
    (gc.enable if was_on else gc.disable)()


def test_pause_then_resume_freezes_and_collects_again(collector):
    gc.enable()
    gcpause.pause()
    assert not gc.isenabled() and gcpause.paused()
    gcpause.resume()
    assert gc.isenabled() and not gcpause.paused()
    assert gc.get_freeze_count() > 0
    gcpause.resume()                    # every end of a start-up calls it: a second time is nothing
    assert gc.isenabled()


def test_a_collector_the_caller_turned_off_stays_off(collector):
    gc.disable()
    gcpause.pause()
    assert not gcpause.paused()
    gcpause.resume()
    assert not gc.isenabled()


def _ctl(code: str, tmp_path: Path, *argv: str) -> subprocess.CompletedProcess:
    """`code` then `ctl ARGV` through entry() (the program, which pauses the collector), in a
    fresh interpreter, with this checkout and a state directory of its own."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), CTL_STATE_DIR=str(tmp_path / "state"),
               CTL_RUNS_DIR=str(tmp_path / "runs"))
    env.pop("CTL_INVENTORY", None)
    script = code + "\nimport sys\nfrom controller.cli import entry\nsys.argv = ['ctl', *sys.argv[1:]]\nentry()\n"
    return subprocess.run([sys.executable, "-c", script, *argv], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)


PROBE = textwrap.dedent("""
    import gc, json
    from controller.cli import gcpause
    from controller.cli.commands import COMMANDS

    def register(sub):
        p = sub.add_parser("gc-probe", help="what the collector is doing when a handler runs")
        p.set_defaults(func=lambda args: print(json.dumps(
            {"enabled": gc.isenabled(), "paused": gcpause.paused(), "frozen": gc.get_freeze_count()})) or 0)

    COMMANDS.add("gc-probe", register, "test probe")
""")


def test_a_handler_runs_with_the_collector_on_and_the_start_ups_objects_frozen(tmp_path):
    p = _ctl(PROBE, tmp_path, "gc-probe")
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    assert got["enabled"] is True and got["paused"] is False
    assert got["frozen"] > 1000         # the modules, classes and functions imported to get here


def test_run_refuses_a_bad_value_before_the_rack_with_the_collector_paused(tmp_path):
    p = _ctl("", tmp_path, "run", "distinct-bottleneck", "--link2", "20 parsecs")
    assert p.returncode == 2
    assert p.stderr.startswith("ctl: error: ") and len(p.stderr.strip().splitlines()) == 1
    assert "--link2" in p.stderr
    assert not (tmp_path / "runs").exists()


def test_a_bad_inventory_is_refused_with_its_file_and_line_when_its_models_are_built_late(tmp_path):
    shipped = (ROOT / "inventory" / "virtual.yaml").read_text()
    assert "\nssh:\n  user: root\n" in shipped
    bad = tmp_path / "inventory.yaml"
    bad.write_text(shipped.replace("\nssh:\n  user: root\n", "\nssh:\n  user: root\n  usre: root\n", 1))
    line = bad.read_text().splitlines().index("  usre: root") + 1
    p = _ctl("", tmp_path, "run", "distinct-bottleneck", "-i", str(bad), "--duration", "1")
    assert p.returncode == 2, p.stderr
    assert p.stderr.startswith(f"ctl: error: {bad}:{line}: ssh.usre")
    assert not (tmp_path / "runs").exists()


def _broken_inventory(tmp_path: Path) -> Path:
    shipped = (ROOT / "inventory" / "virtual.yaml").read_text()
    bad = tmp_path / "broken.yaml"
    bad.write_text(shipped.replace("\nssh:\n  user: root\n", "\nssh:\n  user: root\n  usre: root\n", 1))
    return bad


def test_a_misspelt_parameter_is_said_before_a_bad_inventory(tmp_path):
    p = _ctl("", tmp_path, "run", "distinct-bottleneck", "-i", str(_broken_inventory(tmp_path)), "--durration", "1")
    assert p.returncode == 2, p.stderr
    assert p.stderr.startswith("ctl: error: run distinct-bottleneck: unrecognized arguments: --durration")
    assert "did you mean --duration?" in p.stderr and "usre" not in p.stderr


def test_a_misspelt_scenario_is_said_before_a_bad_inventory(tmp_path):
    p = _ctl("", tmp_path, "run", "distinct-botleneck", "-i", str(_broken_inventory(tmp_path)))
    assert p.returncode == 2, p.stderr
    assert "distinct-botleneck" in p.stderr and "distinct-bottleneck" in p.stderr and "usre" not in p.stderr


def test_a_bad_value_with_a_bad_inventory_is_the_inventorys_error_as_before(tmp_path):
    bad = _broken_inventory(tmp_path)
    p = _ctl("", tmp_path, "run", "distinct-bottleneck", "-i", str(bad), "--link2", "20 parsecs")
    assert p.returncode == 2, p.stderr
    assert p.stderr.startswith(f"ctl: error: {bad}:") and "ssh.usre" in p.stderr


def test_a_bad_value_is_refused_at_once_while_the_lease_host_never_answers(tmp_path):
    """The lease host's connection is already opening when the parameters are checked, to a host
    that accepts TCP and never says a word of SSH (connect timeout 600 s): the refusal is the one
    error line and exit 2, the connection given up on the way out (HostLease.abandon, which does
    not wait for the host: tests/unit/controller/rack/test_lease_abandon.py)."""
    silent = socket.create_server(("127.0.0.1", 0))
    try:
        key, known = tmp_path / "id_ed25519", tmp_path / "known_hosts"
        asyncssh.generate_private_key("ssh-ed25519").write_private_key(str(key))
        known.write_text("")
        text = (ROOT / "inventory" / "lab-rack.example.yaml").read_text()
        a1 = "  a1:\n    role: endpoint\n    mgmt: {address: 192.168.50.11}\n"
        for old in ("key_file: ~/.ssh/ctl_lab_ed25519", "known_hosts: ~/.ssh/ctl_lab_known_hosts", a1):
            assert old in text
        text = text.replace("key_file: ~/.ssh/ctl_lab_ed25519", f"key_file: {key}")
        text = text.replace("known_hosts: ~/.ssh/ctl_lab_known_hosts", f"known_hosts: {known}")
        text = text.replace(a1, "  a1:\n    role: endpoint\n    mgmt: {address: 127.0.0.1}\n"
                                f"    ssh: {{port: {silent.getsockname()[1]}, connect_timeout: 600}}\n")
        inv = tmp_path / "rack.yaml"
        inv.write_text(text)
        p = _ctl("", tmp_path, "run", "distinct-bottleneck", "-i", str(inv), "--link2", "20 parsecs")
    finally:
        silent.close()
    assert p.returncode == 2, p.stderr
    assert p.stderr.splitlines() == ["ctl: error: --link2: unknown unit 'parsecs' in '20 parsecs' "
                                     "(use bit/s, bps, B/s with k, M, G)"]
