"""controller.lab.access and its part of the virtual rack's plan: non-root accounts (files
bind-mounted in the host's sshd namespace, never the machine's user database) and a bastion
namespace (pure; built and used end to end in tests/integration/test_shared_lab.py)."""
from __future__ import annotations

from pathlib import Path

import pytest

from controller.inventory import load_inventory
from controller.lab.access import ACCOUNT_BOOT, account_files, accounts, behind_bastion
from controller.lab.plan import plan_lab, render_sshd_config
from tests.support.rack import write_test_inventory

pytestmark = pytest.mark.usefixtures("tmp_state_dir")

ETC = {
    "passwd": "root:x:0:0:root:/root:/bin/bash\nctl:x:1000:1000::/home/ctl:/bin/tcsh\nsshd:x:64990:65534::/run/sshd:/usr/sbin/nologin\n",
    "group": "root:x:0:\nctl:x:1000:\n",
    "shadow": "root:*:19000:0:99999:7:::\nctl:$y$secret:19000:0:99999:7:::\n",
    "hosts": "127.0.0.1\tlocalhost\n",
}


def test_an_account_replaces_a_same_named_user_and_takes_a_free_id():
    f = account_files("a1", "ctl", True, ETC, with_sudoers=True)
    users = [line.split(":") for line in f["passwd"].splitlines()]
    [ctl] = [u for u in users if u[0] == "ctl"]
    assert ctl[2] == ctl[3] == "64989" and ctl[5:] == ["/home/ctl", "/bin/sh"]   # 64990 is taken
    assert "$y$secret" not in f["shadow"] and "ctl:*:" in f["shadow"]
    assert f["group"].splitlines()[-1] == "ctl:x:64989:"
    assert f["hosts"].endswith("127.0.1.1\ta1\n") and f["hosts"].startswith("127.0.0.1\tlocalhost\n")
    assert "ctl\tALL=(root) NOPASSWD: ALL" in f["sudoers"] and "use_pty" in f["sudoers"]


def test_without_sudo_the_account_gets_no_rule_and_without_sudo_installed_no_sudoers():
    assert "NOPASSWD" not in account_files("a1", "ctl", False, ETC, with_sudoers=True)["sudoers"]
    assert "sudoers" not in account_files("a1", "ctl", True, ETC, with_sudoers=False)


@pytest.fixture
def access_inv(tmp_path: Path):
    return load_inventory(write_test_inventory(tmp_path / "acc.yaml", prefix="q1234", mgmt_octet=240,
                                               name="vacc", access=True))


def test_the_plan_builds_the_bastion_and_the_accounts(access_inv):
    plan = plan_lab(access_inv)
    assert plan.accounts == {"a1": ("ctl", True), "br2": ("ctl", True)}
    assert plan.ssh_hosts["bastion"] == "10.240.0.2" and "q1234-bastion" in plan.namespaces
    assert ("ip", "-n", "q1234-bastion", "addr", "add", "10.240.0.2/24", "dev", "mgmt0") in plan.commands
    assert "q1234mb" in plan.root_links
    sshd = {d.host: d.argv for d in plan.daemons if d.name == "sshd"}
    assert ACCOUNT_BOOT in sshd["a1"] and ACCOUNT_BOOT not in sshd["b1"] and "bastion" in sshd
    i = sshd["a1"].index(ACCOUNT_BOOT)
    assert sshd["a1"][i + 1:i + 4] == ("ctl-account", "/run/ctl/q1234/hosts/a1/account", "ctl")
    # only b2 names a proxy_jump: only b2 refuses SSH from the controller's own address
    assert behind_bastion(access_inv) == ["b2"]
    assert {a[3] for a in plan.after_start} == {"q1234-b2"}
    assert plan.after_start[-1][-9:-3] == ("saddr", "10.240.0.1", "tcp", "dport", "22", "reject")


def test_an_account_logs_in_with_the_key_in_its_home(access_inv):
    assert "AuthorizedKeysFile .ssh/authorized_keys" in render_sshd_config(access_inv, "a1", "10.240.0.11", True)
    assert "AuthorizedKeysFile /run/ctl/q1234/authorized_keys" in render_sshd_config(access_inv, "b1", "10.240.0.21")


def test_a_host_named_like_the_bastion_is_refused(tmp_path):
    p = write_test_inventory(tmp_path / "acc.yaml", prefix="q1234", mgmt_octet=240, name="vacc", access=True)
    p.write_text(p.read_text().replace("\n  a2:\n", "\n  bastion:\n", 1))
    from controller.errors import LabError
    with pytest.raises(LabError, match="taken by the virtual rack's bastion"):
        plan_lab(load_inventory(p))


def test_the_shipped_virtual_rack_has_no_accounts_and_no_bastion(tmp_path):
    inv = load_inventory(write_test_inventory(tmp_path / "v.yaml"))
    plan = plan_lab(inv)
    assert accounts(inv) == {} and plan.after_start == [] and "bastion" not in plan.ssh_hosts
