"""How ctl reaches a host: bastions (proxy_jump), the user's OpenSSH config, ssh-agent, sudo,
passphrase-protected keys (controller.sshconfig, controller.ssh). Pure parts and local files only;
the virtual rack's accounts and bastion are tested end to end in tests/integration/test_shared_lab.py.
"""
from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from controller.errors import InventoryError, ParameterError, SSHError
from controller.inventory import SSH, load_inventory
from controller.ssh import _client_keys, remote_command_line, root_commands, targets
from controller.sshconfig import JumpSpec, connection_plan, load_openssh_config, parse_proxy_jump
from tests.support.shipped import LAB, VIRTUAL

pytestmark = pytest.mark.usefixtures("tmp_state_dir")


def ssh(**kw) -> SSH:
    base = dict(known_hosts=Path("/k/known_hosts"), key_file=Path("/k/id"))
    base.update(kw)
    return SSH(**base, explicit=frozenset(k for k in base if k != "known_hosts"))


# ---- ProxyJump syntax ----------------------------------------------------------------------

@pytest.mark.parametrize("text, hops", [
    ("bastion.lab", [JumpSpec("bastion.lab")]),
    ("ops@bastion.lab:2222", [JumpSpec("bastion.lab", "ops", 2222)]),
    ("a@10.0.0.1,b@[fd00::1]:22", [JumpSpec("10.0.0.1", "a"), JumpSpec("fd00::1", "b", 22)]),
    ("none", []),
])
def test_proxy_jump_forms(text, hops):
    assert parse_proxy_jump(text) == hops
    assert ",".join(map(str, hops)) == ("" if text == "none" else text)


@pytest.mark.parametrize("text, said", [
    ("ssh://bastion", "is not [user@]host[:port]"),
    ("bastion:99999", "outside 1..65535"),
    ("-oProxyCommand=x", "is not [user@]host[:port]"),
    ("a,b,c,d,e", "at most 4"),
    ("b;rm -rf /", "is not [user@]host[:port]"),
])
def test_proxy_jump_refused(text, said):
    with pytest.raises(ParameterError, match=said.replace("[", r"\[").replace("]", r"\]")):
        parse_proxy_jump(text)


# ---- the hops to a host -------------------------------------------------------------------

def test_a_plain_host_is_one_hop_with_the_inventory_settings():
    [hop] = connection_plan(ssh(user="ctl", port=2200), "10.0.0.5")
    assert (hop.host, hop.port, hop.user, hop.key_files) == ("10.0.0.5", 2200, "ctl", (Path("/k/id"),))


def test_bastions_come_first_and_take_the_inventory_user_unless_named():
    hops = connection_plan(ssh(user="ctl", proxy_jump="ops@b1.lab:2222,b2.lab"), "10.0.0.5")
    assert [str(h) for h in hops] == ["ops@b1.lab:2222", "ctl@b2.lab:22", "ctl@10.0.0.5:22"]


@pytest.fixture
def config(tmp_path: Path) -> Path:
    p = tmp_path / "config"
    p.write_text("Host dn1\n    HostName 192.168.50.31\n    User ops\n    Port 2201\n"
                 "    IdentityFile ~/.ssh/lab_key\n    ProxyJump jump@gate.lab\n"
                 "    ForwardAgent yes\n    StrictHostKeyChecking no\n"
                 "Host *\n    User someone\n    IdentityFile /k/default_key\n")
    return p


def test_the_openssh_config_supplies_what_the_inventory_leaves_open(config):
    s = SSH(known_hosts=Path("/k/kh"), config_file=config, explicit=frozenset({"config_file"}))
    hops = connection_plan(s, "dn1", load_openssh_config(config))
    assert [str(h) for h in hops] == ["jump@gate.lab:22", "ops@192.168.50.31:2201"]
    # IdentityFile accumulates over the matching blocks, as in OpenSSH
    assert hops[-1].key_files == (Path("~/.ssh/lab_key").expanduser(), Path("/k/default_key"))
    assert set(hops[-1].via_config) == {"HostName", "User", "Port", "IdentityFile", "ProxyJump"}
    assert hops[0].key_files == (Path("/k/default_key"),)      # the bastion matched `Host *`


def test_what_the_inventory_sets_wins_over_the_config(config):
    s = SSH(known_hosts=Path("/k/kh"), config_file=config, user="ctl", port=22, key_file=Path("/k/id"),
            proxy_jump="none", explicit=frozenset({"config_file", "user", "port", "key_file", "proxy_jump"}))
    [hop] = connection_plan(s, "dn1", load_openssh_config(config))
    assert str(hop) == "ctl@192.168.50.31:22" and hop.key_files == (Path("/k/id"),)


def test_proxycommand_is_refused_even_for_another_host(config):
    """A ProxyCommand anywhere in the file refuses the file (tests/unit/controller/test_sshconfig.py
    has every directive that runs a command, in every place)."""
    with open(config, "a") as f:
        f.write("Host evil\n    ProxyCommand nc %h %p\n")
    s = SSH(known_hosts=Path("/k/kh"), config_file=config, explicit=frozenset({"config_file"}))
    with pytest.raises(ParameterError, match=r"config, line 13: ProxyCommand is refused"):
        connection_plan(s, "dn1", load_openssh_config(config))


def test_no_key_anywhere_is_an_error_naming_the_hop():
    s = SSH(known_hosts=Path("/k/kh"), proxy_jump="gate", explicit=frozenset({"proxy_jump"}))
    with pytest.raises(ParameterError, match=r"ssh to root@gate:22: no key"):
        connection_plan(s, "10.0.0.5")
    assert [str(h) for h in connection_plan(s.model_copy(update={"agent": True}), "10.0.0.5")] == \
        ["root@gate:22", "root@10.0.0.5:22"]


def test_a_missing_config_file_is_an_error(tmp_path):
    with pytest.raises(ParameterError, match="does not exist"):
        load_openssh_config(tmp_path / "nope")


# ---- sudo ------------------------------------------------------------------------------------

def test_sudo_is_outermost_so_the_locale_and_the_deadline_hold_under_it():
    line = remote_command_line(("ip", "mptcp", "endpoint", "show"), 10, sudo=True)
    assert shlex.split(line)[:7] == ["sudo", "-n", "--", "env", "LC_ALL=C", "LANG=C", "timeout"]
    assert not remote_command_line(("true",), 10).startswith("sudo")


def test_what_runs_as_root_is_named_per_role():
    inv = load_inventory(LAB)
    assert "ip mptcp" in root_commands(inv, "a1") and "ipfw" in root_commands(inv, "dn1")
    assert all(t.root_commands == root_commands(inv, t.name) for t in targets(inv))


def test_inventory_sudo_per_host_and_explicit_fields(tmp_path):
    text = VIRTUAL.read_text().replace("    mgmt: {address: 10.250.0.11}\n",
                                       "    mgmt: {address: 10.250.0.11}\n    ssh: {user: ctl, sudo: true}\n", 1)
    p = tmp_path / "v.yaml"
    p.write_text(text)
    inv = load_inventory(p)
    a1, b1 = inv.ssh_for("a1"), inv.ssh_for("b1")
    assert (a1.user, a1.sudo, b1.user, b1.sudo) == ("ctl", True, "root", False)
    assert {"user", "sudo", "key_file"} <= a1.explicit and "sudo" not in b1.explicit


@pytest.mark.parametrize("old, new, said", [
    ("  user: root\n", "  user: root\n  proxy_jump: 'ssh://gate'\n", "proxy_jump"),
    ("  runtime_dir: /run/ctl/ctlv\n", "  runtime_dir: /run/ctl/ctlv\n  bastion: 10.9.9.9\n",
     "not another address of the management network"),
])
def test_inventory_refuses_bad_access_settings(tmp_path, old, new, said):
    text = VIRTUAL.read_text()
    assert old in text
    p = tmp_path / "v.yaml"
    p.write_text(text.replace(old, new, 1))
    with pytest.raises(InventoryError, match=said):
        load_inventory(p)


# ---- keys --------------------------------------------------------------------------------------

@pytest.fixture
def encrypted_key(tmp_path: Path) -> Path:
    key = tmp_path / "enc_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "s3cret-phrase", "-f", str(key)], check=True)
    return key


def test_a_passphrase_protected_key_is_a_one_line_error(encrypted_key):
    s = ssh(key_file=encrypted_key)
    [hop] = connection_plan(s, "10.0.0.5")
    with pytest.raises(SSHError) as err:
        _client_keys(s, hop, "a1")
    msg = str(err.value)
    assert "protected by a passphrase" in msg and "agent: true" in msg and "\n" not in msg


def test_key_passphrase_opens_it_and_a_wrong_one_is_said(encrypted_key, monkeypatch):
    from controller.inventory import SecretRef
    s = ssh(key_file=encrypted_key, key_passphrase=SecretRef(env="CTL_TEST_PASSPHRASE"))
    [hop] = connection_plan(s, "10.0.0.5")
    monkeypatch.setenv("CTL_TEST_PASSPHRASE", "s3cret-phrase")
    [key] = _client_keys(s, hop, "a1")
    assert key.get_algorithm() == "ssh-ed25519"
    monkeypatch.setenv("CTL_TEST_PASSPHRASE", "wrong")
    with pytest.raises(SSHError, match="the key_passphrase given does not open it") as err:
        _client_keys(s, hop, "a1")
    assert "wrong" not in str(err.value)


def test_a_missing_key_file_is_skipped_only_when_the_agent_is_on(tmp_path):
    s = ssh(key_file=tmp_path / "absent")
    [hop] = connection_plan(s, "10.0.0.5")
    with pytest.raises(SSHError, match="does not exist"):
        _client_keys(s, hop, "a1")
    assert _client_keys(s.model_copy(update={"agent": True}), hop, "a1") is None


def test_a_bastion_connection_acknowledges_every_read_at_once():
    """TCP_QUICKACK is set before each read is handled (the timing is bench/ssh_access_bench.py's)."""
    import socket
    from controller.ssh import _ack_at_once
    server = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(server.getsockname())
    peer, _ = server.accept()
    got = []

    class Conn:
        def get_extra_info(self, name):
            return client if name == "socket" else None

        def data_received(self, data, datatype=None):
            got.append((data, datatype, client.getsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK)))
    conn = Conn()
    try:
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 0)
        _ack_at_once(conn)
        conn.data_received(b"x", 1)
        assert got == [(b"x", 1, 1)]
    finally:
        for s in (client, peer, server):
            s.close()
