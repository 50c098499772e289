"""Settings resolve as flag > environment > config file > default, with defaults that follow
where ctl runs (checkout, XDG for a user, systemd's directories for the service), and every
value says where it came from."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from controller import settings
from controller.errors import UsageError

PROJECT = Path(__file__).resolve().parents[3]


@pytest.fixture
def clean(monkeypatch, tmp_path):
    for v in (*settings.ENV.values(), "CTL_CONFIG", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME",
              "STATE_DIRECTORY", "CONFIGURATION_DIRECTORY"):
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setattr(settings, "_EXPORTED", {})
    return tmp_path


def test_a_checkout_keeps_its_own_directories(clean):
    assert settings.in_checkout()
    assert settings.state_dir() == PROJECT / ".state"
    assert settings.runs_dir() == PROJECT / "runs"
    assert settings.resolve("inventory").value == str(PROJECT / "inventory" / "virtual.yaml")
    assert settings.resolve("state_dir").source == "default: the checkout's .state"


def test_installed_for_a_user_follows_xdg(clean, monkeypatch):
    monkeypatch.setattr(settings, "in_checkout", lambda: False)
    home = clean / "home"
    assert settings.state_dir() == home / ".local" / "state" / "ctl"
    assert settings.runs_dir() == home / ".local" / "share" / "ctl" / "runs"
    monkeypatch.setenv("XDG_STATE_HOME", str(clean / "xs"))
    monkeypatch.setenv("XDG_DATA_HOME", str(clean / "xd"))
    assert settings.state_dir() == clean / "xs" / "ctl" and settings.runs_dir() == clean / "xd" / "ctl" / "runs"


def test_the_service_uses_systemds_directories(clean, monkeypatch):
    monkeypatch.setattr(settings, "in_checkout", lambda: False)
    monkeypatch.setenv("STATE_DIRECTORY", "/var/lib/ctl")
    assert settings.state_dir() == Path("/var/lib/ctl") and settings.runs_dir() == Path("/var/lib/ctl/runs")
    assert "StateDirectory" in settings.resolve("state_dir").source


def test_flag_beats_environment_beats_config_beats_default(clean, monkeypatch):
    cfg = clean / "config.yaml"
    cfg.write_text("runs_dir: ~/from-config\ninventory: /etc/ctl/lab.yaml\n")
    monkeypatch.setenv("CTL_CONFIG", str(cfg))
    assert settings.runs_dir() == clean / "home" / "from-config"
    assert settings.resolve("runs_dir").source == f"config file ({cfg})"
    monkeypatch.setenv("CTL_RUNS_DIR", "/from/env")
    assert settings.runs_dir() == Path("/from/env") and settings.resolve("runs_dir").source == \
        "environment (CTL_RUNS_DIR)"
    assert settings.runs_dir("/from/flag") == Path("/from/flag")
    assert settings.resolve("inventory").value == "/etc/ctl/lab.yaml"


def test_exported_values_keep_their_origin(clean, monkeypatch):
    cfg = clean / "config.yaml"
    cfg.write_text(f"state_dir: {clean / 'st'}\n")
    monkeypatch.setenv("CTL_CONFIG", str(cfg))
    settings.export_state_dir()
    import os
    assert os.environ["CTL_STATE_DIR"] == str(clean / "st")
    assert settings.resolve("state_dir").source == f"config file ({cfg})"


@pytest.mark.parametrize("text, message", [
    ("bogus: 1\n", "unknown setting 'bogus'"),
    ("- a\n- b\n", "must be a mapping"),
    ("database_url: postgresql://u:secret@db/ctl\n", "holds a password"),
])
def test_a_bad_config_file_is_one_line_exit_2(clean, monkeypatch, text, message):
    cfg = clean / "config.yaml"
    cfg.write_text(text)
    monkeypatch.setenv("CTL_CONFIG", str(cfg))
    with pytest.raises(UsageError, match=message):
        settings.state_dir()
    p = subprocess.run([sys.executable, "-m", "controller", "config", "show"], capture_output=True, text=True,
                       env={"CTL_CONFIG": str(cfg), "PATH": "/usr/bin:/bin", "HOME": str(clean)})
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and message in p.stderr
    assert "secret" not in p.stderr


def test_config_show_names_every_source(clean, monkeypatch):
    cfg = clean / "config.yaml"
    cfg.write_text("runs_dir: /srv/runs\n")
    import json
    p = subprocess.run([sys.executable, "-m", "controller", "config", "show", "--json"], capture_output=True,
                       text=True, env={"CTL_CONFIG": str(cfg), "PATH": "/usr/bin:/bin", "HOME": str(clean),
                                       "CTL_INVENTORY": "/x/inv.yaml"})
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)["data"]
    s = doc["settings"]
    assert doc["config_file"] == str(cfg)
    assert s["runs_dir"] == {"value": "/srv/runs", "source": f"config file ({cfg})"}
    assert s["inventory"] == {"value": "/x/inv.yaml", "source": "environment (CTL_INVENTORY)"}
    assert s["state_dir"]["source"] == "default: the checkout's .state"
