"""Files ctl creates where other local users can write: the rack lock under a world-writable
lock directory, and the same rules (controller.safefs) for every file ctl keeps there.

The attacker is simulated with a real unprivileged uid (nobody, 65534): the suite runs as
root, as CI does, so os.chown gives the attacker's files their real owner."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from controller.errors import UnsafePath
from controller.lock import RackLock
from controller.safefs import open_private, private_dir, write_private
from tests.support.shipped import ROOT, VIRTUAL

NOBODY = 65534


@pytest.fixture
def sticky(tmp_path):
    """A world-writable sticky directory, like /run/lock."""
    d = tmp_path / "lock"
    d.mkdir()
    os.chmod(d, 0o1777)
    return d


@pytest.fixture
def victim(tmp_path):
    v = tmp_path / "victim"
    v.write_text("precious\n")
    return v


def test_a_lock_directory_precreated_by_another_user_is_refused(sticky, victim, monkeypatch):
    ctl_dir = sticky / "ctl"
    ctl_dir.mkdir()
    os.symlink(victim, ctl_dir / "rack.lock")   # what the attacker would plant
    os.chown(ctl_dir / "rack.lock", NOBODY, NOBODY, follow_symlinks=False)
    os.chown(ctl_dir, NOBODY, NOBODY)
    monkeypatch.setenv("CTL_LOCK_DIR", str(ctl_dir))
    with pytest.raises(UnsafePath, match=r"refusing lock directory .*owned by uid 65534"):
        RackLock("rack", "test").acquire()
    assert victim.read_text() == "precious\n"


def test_a_symlinked_lock_directory_is_refused(sticky, tmp_path, monkeypatch):
    target = tmp_path / "elsewhere"
    target.mkdir()
    os.symlink(target, sticky / "ctl")
    monkeypatch.setenv("CTL_LOCK_DIR", str(sticky / "ctl"))
    with pytest.raises(UnsafePath, match="not a real directory"):
        RackLock("rack", "test").acquire()
    assert list(target.iterdir()) == []


def test_a_group_writable_lock_directory_is_refused(tmp_path, monkeypatch):
    d = tmp_path / "ctl"
    d.mkdir()
    os.chmod(d, 0o775)
    monkeypatch.setenv("CTL_LOCK_DIR", str(d))
    with pytest.raises(UnsafePath, match="writable by group or others"):
        RackLock("rack", "test").acquire()


def test_a_symlink_in_place_of_the_lock_file_is_never_followed(tmp_path, victim, monkeypatch):
    d = private_dir(tmp_path / "ctl", "lock directory")
    os.symlink(victim, d / "rack.lock")
    monkeypatch.setenv("CTL_LOCK_DIR", str(d))
    with pytest.raises(UnsafePath, match="is a symlink"):
        RackLock("rack", "test").acquire()
    assert victim.read_text() == "precious\n"
    with pytest.raises(UnsafePath, match="is a symlink"):  # reading the record does not follow it either
        RackLock("rack", "status").owner()


def test_a_hard_link_in_place_of_a_file_is_not_truncated(tmp_path, victim):
    d = private_dir(tmp_path / "ctl", "state directory")
    os.link(victim, d / "token")
    with pytest.raises(UnsafePath, match="2 hard links"):
        write_private(d / "token", "x", "token file")
    assert victim.read_text() == "precious\n"


def test_a_fresh_lock_directory_is_created_private_and_works(tmp_path, monkeypatch):
    monkeypatch.setenv("CTL_LOCK_DIR", str(tmp_path / "run" / "ctl"))
    with RackLock("rack", "test") as lock:
        assert lock.path.exists() and RackLock("rack", "status").owner()["purpose"] == "test"
    st = os.stat(tmp_path / "run" / "ctl")
    assert st.st_uid == os.geteuid() and not st.st_mode & 0o022


def test_open_private_refuses_another_users_file(tmp_path):
    d = private_dir(tmp_path / "ctl", "state directory")
    f = d / "f"
    f.write_text("x")
    os.chown(f, NOBODY, NOBODY)
    with pytest.raises(UnsafePath, match="owned by uid 65534"):
        open_private(f, os.O_RDWR, "state file")


def test_the_cli_refuses_the_attack_with_one_line_and_touches_nothing(sticky, victim, tmp_path):
    ctl_dir = sticky / "ctl"
    ctl_dir.mkdir()
    os.symlink(victim, ctl_dir / "virtual.lock")
    os.chown(ctl_dir / "virtual.lock", NOBODY, NOBODY, follow_symlinks=False)
    os.chown(ctl_dir, NOBODY, NOBODY)
    env = {"PATH": "/usr/bin:/bin", "CTL_LOCK_DIR": str(ctl_dir), "CTL_STATE_DIR": str(tmp_path / "state"),
           "HOME": str(tmp_path)}
    p = subprocess.run([sys.executable, "-m", "controller", "link", "set", "path2", "--bw", "20M",
                        "--inventory", str(VIRTUAL)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "refusing lock directory" in lines[0] and "Traceback" not in p.stderr
    assert victim.read_text() == "precious\n"
    assert not (tmp_path / "state").exists()       # nothing built, nothing written


# ---- openat-style trees: open_dir, sub_dir, replace_file_at (export, service install) ---------------

def test_files_are_written_relative_to_the_directory_and_never_through_a_link(tmp_path, victim):
    from controller.safefs import open_dir, replace_file_at, sub_dir
    out = tmp_path / "out"
    fd = open_dir(out, "export directory")
    try:
        d = sub_dir(fd, "20260101T000000Z_run", "record directory", "out/run")
        replace_file_at(d, "manifest.json", "{}", "record file", "out/run/manifest.json")
        replace_file_at(d, "manifest.json", '{"again": 1}', "record file", "out/run/manifest.json")   # replaced
        assert (out / "20260101T000000Z_run" / "manifest.json").read_text() == '{"again": 1}'
        # a symlink, a FIFO, a directory where a file goes: refused, left as they are
        os.symlink(victim, os.path.join(out, "20260101T000000Z_run", "summary.json"))
        with pytest.raises(UnsafePath, match="not a regular file \\(a symlink"):
            replace_file_at(d, "summary.json", "{}", "record file", "out/run/summary.json")
        os.mkfifo(out / "20260101T000000Z_run" / "fifo")
        with pytest.raises(UnsafePath, match="not a regular file \\(a FIFO"):
            replace_file_at(d, "fifo", "{}", "record file", "out/run/fifo")
        # a link planted at the temporary name is removed, not followed
        os.symlink(victim, out / "20260101T000000Z_run" / ".plain.ctl-new")
        replace_file_at(d, "plain", "x", "record file", "out/run/plain")
        assert (out / "20260101T000000Z_run" / "plain").read_text() == "x"
        os.close(d)
        # a sub-directory that is a symlink, or another user's directory, is refused
        os.symlink(tmp_path, out / "20260101T000000Z_link")
        with pytest.raises(UnsafePath, match="not a real directory \\(a symlink"):
            sub_dir(fd, "20260101T000000Z_link", "record directory", "out/link")
        (out / "theirs").mkdir()
        os.chown(out / "theirs", NOBODY, NOBODY)
        with pytest.raises(UnsafePath, match="owned by uid 65534"):
            sub_dir(fd, "theirs", "record directory", "out/theirs")
        for bad in ("..", "../x", "/abs", ".", ""):
            with pytest.raises(UnsafePath, match="not a single file name"):
                sub_dir(fd, bad, "record directory", bad)
    finally:
        os.close(fd)
    assert victim.read_text() == "precious\n"
    link = tmp_path / "outlink"
    link.symlink_to(out)
    with pytest.raises(UnsafePath, match="not a real directory"):
        open_dir(link, "report directory")


def test_open_private_refuses_a_fifo_instead_of_waiting_for_a_writer(tmp_path):
    """A FIFO planted where ctl reads or writes a file of its own: before, open() blocked until
    someone opened the other end; now one line, at once."""
    fifo = tmp_path / "state.json"
    os.mkfifo(fifo)
    for flags in (os.O_RDONLY, os.O_WRONLY, os.O_RDWR | os.O_CREAT):
        with pytest.raises(UnsafePath, match="not a regular file"):
            open_private(fifo, flags, "state file")
