"""Lock files are read and taken only in directories of ours that nobody else can write to, and
never opened if they are not regular files: a FIFO planted in a foreign lock directory hung
`ctl rack status` (open(O_RDONLY) on a FIFO waits for a writer); now it is refused at once.
Which host keeps a rack's lease (without a database) does not depend on the inventory's order.

Run as root (as the suite is): a directory "not ours" belongs to the `nobody` account."""
from __future__ import annotations

import os
import pwd
import subprocess
import sys
import textwrap

import pytest
import yaml

from controller.errors import UnsafePath
from controller.inventory import load_inventory
from controller.lock import FileLock
from controller.rack.lease import lease_place
from tests.support.shipped import ROOT, VIRTUAL, no_state_dir

READ_OWNER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from controller.errors import CtlError
    from controller.lock import FileLock
    try:
        print("owner", FileLock("lab-a", "status", Path(sys.argv[1])).owner(), flush=True)
    except CtlError as exc:
        print("refused", exc.one_line(), flush=True)
""")


def _owner_in_subprocess(directory) -> str:
    p = subprocess.run([sys.executable, "-c", READ_OWNER, str(directory)], cwd=ROOT, capture_output=True, text=True,
                       timeout=20)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


@pytest.fixture
def nobody() -> int:
    return pwd.getpwnam("nobody").pw_uid


def test_a_fifo_in_a_foreign_lock_dir_is_refused_not_waited_on(tmp_path, nobody):
    d = tmp_path / "locks"
    d.mkdir()
    os.mkfifo(d / "lab-a.lock")
    os.chown(d, nobody, nobody)
    os.chmod(d, 0o777)
    try:
        out = _owner_in_subprocess(d)
    except subprocess.TimeoutExpired:
        pytest.fail("reading the lock's owner hung on a FIFO")
    assert out.startswith("refused") and "lock directory" in out and f"owned by uid {nobody}" in out, out


def test_a_fifo_in_our_own_lock_dir_is_not_opened_for_long(tmp_path):
    d = tmp_path / "locks"
    d.mkdir(mode=0o755)
    os.mkfifo(d / "lab-a.lock")
    out = _owner_in_subprocess(d)
    assert out.startswith("refused") and "not a regular file" in out, out
    lock = FileLock("lab-a", "run", d)
    with pytest.raises(UnsafePath, match="not a regular file"):
        lock.try_acquire()


def test_a_lock_dir_others_can_write_is_refused_for_reading_too(tmp_path):
    d = tmp_path / "locks"
    d.mkdir()
    FileLock("lab-a", "run", d).try_acquire()
    os.chmod(d, 0o1777)                      # sticky or not: another user could plant a file
    with pytest.raises(UnsafePath, match="writable by group or others"):
        FileLock("lab-a", "status", d).owner()
    with pytest.raises(UnsafePath, match="writable by group or others"):
        FileLock("lab-a", "run", d).try_acquire()


def test_no_lock_dir_yet_means_nobody_holds_it(tmp_path):
    assert FileLock("lab-a", "status", tmp_path / "missing").owner() is None
    d = tmp_path / "locks"
    d.mkdir()
    assert FileLock("lab-a", "status", d).owner() is None


def test_the_lease_host_does_not_depend_on_inventory_order(tmp_path):
    data = yaml.safe_load(VIRTUAL.read_text())
    data["hosts"] = dict(reversed(list(data["hosts"].items())))
    p = tmp_path / "reordered.yaml"
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    with no_state_dir():
        a, b = load_inventory(VIRTUAL), load_inventory(p)
    assert list(a.hosts) != list(b.hosts)
    assert lease_place(a).target.name == lease_place(b).target.name == "a1"
