"""The virtual rack's generated secrets (controller/lab/rack.py, controller.safefs.create_private):
a secret file is only ever created, never written over (issue 23, item 8: the old code took a
file whose first line is blank -- Debian's sshd_config starts with one -- for "no secret yet"
and replaced it with a token); an existing file is the secret only if it is one token line,
else a one-line error naming it, with the file left byte for byte; no symlink is followed."""
from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from controller.errors import ParameterError, UnsafePath
from controller.inventory import SecretRef
from controller.lab.rack import _secret_for
from controller.safefs import create_private
from tests.support.rack import write_test_inventory
from tests.support.shipped import ROOT

# The first 18 lines of Debian 12's /etc/ssh/sshd_config (openssh-server 1:9.2p1-2+deb12u10), verbatim.
DEBIAN_SSHD_CONFIG = b"""
# This is the sshd server system-wide configuration file.  See
# sshd_config(5) for more information.

# This sshd was compiled with PATH=/usr/local/bin:/usr/bin:/bin:/usr/games

# The strategy used for options in the default sshd_config shipped with
# OpenSSH is to specify options with their default value where
# possible, but leave them commented.  Uncommented options override the
# default value.

Include /etc/ssh/sshd_config.d/*.conf

#Port 22
#AddressFamily any
#ListenAddress 0.0.0.0
#ListenAddress ::

"""


@pytest.fixture
def secrets_dir(tmp_path):
    d = tmp_path / "secrets"
    d.mkdir(mode=0o700)
    return d


def snapshot(path):
    st = os.lstat(path)
    return path.read_bytes(), st.st_ino, st.st_mtime_ns, stat.S_IMODE(st.st_mode)


def test_a_missing_secret_is_created_once_as_one_token_line(secrets_dir, monkeypatch):
    monkeypatch.delenv("CTL_TEST_BTFH_SECRET", raising=False)
    f = secrets_dir / "snmp-auth-key"
    ref = SecretRef(env="CTL_TEST_BTFH_SECRET", file=f)
    value = _secret_for(ref, "a1 SNMP auth key")
    assert len(value) >= 24 and f.read_text() == value + "\n"
    assert stat.S_IMODE(f.stat().st_mode) == 0o600
    before = snapshot(f)
    assert _secret_for(ref, "b1 SNMP auth key") == value        # the next host shares it
    assert snapshot(f) == before
    assert sorted(p.name for p in secrets_dir.iterdir()) == ["snmp-auth-key"]   # no temporary left


def test_a_file_with_a_blank_first_line_is_left_byte_for_byte_and_named(secrets_dir):
    f = secrets_dir / "sshd_config"
    f.write_bytes(DEBIAN_SSHD_CONFIG)
    before = snapshot(f)
    with pytest.raises(ParameterError) as ei:
        _secret_for(SecretRef(file=f), "a1 SNMP auth key")
    msg = ei.value.one_line()
    assert msg == str(ei.value)                                      # one line as raised
    assert msg.startswith(f"a1 SNMP auth key: {f} exists and is not a secret") and "left as it is" in msg
    assert "sshd" not in msg.replace(str(f), "")                     # nothing of its contents
    assert snapshot(f) == before


@pytest.mark.parametrize("content", [b"", b"\n", b"two words\n", b"token\nsecond line\n", b"\xff\xfe\n",
                                     b"x" * 300 + b"\n"])
def test_anything_but_one_token_line_is_refused_and_kept(secrets_dir, content):
    f = secrets_dir / "key"
    f.write_bytes(content)
    before = snapshot(f)
    with pytest.raises(ParameterError, match="exists and is not a secret"):
        _secret_for(SecretRef(file=f), "sw1 SNMP priv key")
    assert snapshot(f) == before


@pytest.mark.parametrize("content", [b"hunter2-secret\n", b"s3cr3t/with+symbols=", b"!#$%&'()*+,-./:;<=>?@[]^_`{|}~"])
def test_a_secret_someone_wrote_as_one_token_is_used(secrets_dir, content):
    f = secrets_dir / "key"
    f.write_bytes(content)
    assert _secret_for(SecretRef(file=f), "a1 SNMP auth key") == content.decode().strip()
    assert f.read_bytes() == content


def test_a_symlink_at_the_secrets_path_is_never_followed(secrets_dir, tmp_path):
    victim = tmp_path / "victim"
    victim.write_bytes(DEBIAN_SSHD_CONFIG)
    before = snapshot(victim)
    link = secrets_dir / "snmp-auth-key"
    os.symlink(victim, link)
    with pytest.raises(UnsafePath, match="is a symlink"):
        _secret_for(SecretRef(file=link), "a1 SNMP auth key")
    assert snapshot(victim) == before and os.readlink(link) == str(victim)
    dangling = secrets_dir / "snmp-priv-key"
    os.symlink(tmp_path / "created-through-the-link", dangling)
    with pytest.raises(UnsafePath, match="is a symlink"):
        _secret_for(SecretRef(file=dangling), "a1 SNMP priv key")
    assert not (tmp_path / "created-through-the-link").exists()


def test_a_value_in_the_environment_wins_and_no_file_is_made(secrets_dir, monkeypatch):
    monkeypatch.setenv("CTL_TEST_BTFH_SECRET", "from-env")
    f = secrets_dir / "key"
    assert _secret_for(SecretRef(env="CTL_TEST_BTFH_SECRET", file=f), "x") == "from-env"
    assert not f.exists()


def test_create_private_never_touches_what_is_there(secrets_dir):
    f = secrets_dir / "f"
    assert create_private(f, "one\n", "test file") is True
    before = snapshot(f)
    assert create_private(f, "two\n", "test file") is False
    assert snapshot(f) == before
    os.mkdir(secrets_dir / "d")
    assert create_private(secrets_dir / "d", "x", "test file") is False
    assert sorted(p.name for p in secrets_dir.iterdir()) == ["d", "f"]


@pytest.mark.skipif(os.geteuid() != 0, reason="`ctl lab up` needs root (it checks before reading secrets)")
def test_lab_up_refuses_with_one_line_before_the_rack_is_touched(tmp_path):
    """The whole command: an inventory whose SNMP key file is a copy of sshd_config. Exit 2,
    one line on stderr, the file intact, no namespace, no runtime dir, no other secret made."""
    prefix = "btfh"
    inv = write_test_inventory(tmp_path / "inv.yaml", prefix=prefix, mgmt_octet=243, influx_port=18243,
                               name="btfh", shaper="tc")
    conf = tmp_path / "sshd_config"
    conf.write_bytes(DEBIAN_SSHD_CONFIG)
    before = snapshot(conf)
    inv.write_text(inv.read_text().replace(f"/run/ctl/{prefix}/snmp-auth-key", str(conf))
                   .replace(f"/run/ctl/{prefix}/snmp-priv-key", str(tmp_path / "priv-key")))
    env = {"PATH": os.environ["PATH"], "CTL_LOCK_DIR": str(tmp_path / "lock"), "HOME": str(tmp_path),
           "CTL_STATE_DIR": str(tmp_path / "state")}
    p = subprocess.run([sys.executable, "-m", "controller", "lab", "up", "--inventory", str(inv)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{conf} exists and is not a secret" in lines[0] and "Traceback" not in p.stderr
    assert snapshot(conf) == before
    assert not os.path.lexists(f"/run/ctl/{prefix}") and not (tmp_path / "priv-key").exists()
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not any(line.startswith(prefix + "-") for line in netns.splitlines())


def test_a_fifo_at_the_secrets_path_is_refused_without_waiting(secrets_dir):
    f = secrets_dir / "key"
    os.mkfifo(f)
    with pytest.raises(UnsafePath, match="not a regular file"):
        _secret_for(SecretRef(file=f), "a1 SNMP auth key")
