"""Leases, locks and reservations a lab member cannot subvert, on the virtual rack (real sshd,
real flock on the lease host, a real PostgreSQL from the `pg_server` fixture).

- A controller using the lab database also takes the rack's host lease, so a controller
  without the database (not configured, or misconfigured) is refused while the first drives
  the rack -- and the other way round -- with the holder named.
- A lease directory that others can write to is refused (one line), and `ctl rack status`
  answers (not hangs) when the machine's lock directory is someone else's with a FIFO in it.
- Without a database the owner of a reservation is the local account by uid on the booking
  machine: $USER says nothing, and root on another controller is bound by root's booking here.
  "Another controller" is this machine seen through a UTS namespace with another host name
  (unshare --uts): the same network and SSH keys, a different machine name.
- A book entry with an end at Infinity (or any malformed one) is shown as MALFORMED and blocks
  nothing; ctl keeps it in the file.
- The campaign scheduler starts no run while the rack's reservations cannot be read, says why,
  and goes on by itself once they can.
"""
from __future__ import annotations

import json
import os
import pwd
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.integration.test_campaign_crash import PROJECT, baseline, wait_for

pytestmark = pytest.mark.integration

OTHER_HOST = "ctl-other-controller"
HOLDER = textwrap.dedent("""
    import sys, time
    from controller.inventory import load_inventory
    from controller.rack.lease import hold_rack
    inv = load_inventory(sys.argv[1])
    t0 = time.perf_counter()
    with hold_rack(inv, sys.argv[2]):
        print("held", flush=True)
        print(f"{time.perf_counter() - t0:.3f}", flush=True)
        time.sleep(3600)
""")
MEASURE = ("link", "measure", "path1", "--pings", "3", "--tcp-seconds", "1", "--udp-seconds", "1")


def other_machine(rack, tmp_path: Path, **extra: str) -> dict[str, str]:
    """A second controller's environment: its own state and lock dirs (the machine-wide lock of
    this one does not see it: only the leases stand between them)."""
    d = tmp_path / "other-controller"
    (d / "locks").mkdir(parents=True, exist_ok=True)
    (d / "state").mkdir(exist_ok=True)
    if not (d / "state" / "bin").exists():
        (d / "state" / "bin").symlink_to(rack.state_dir / "bin")
    return rack.env(CTL_LOCK_DIR=str(d / "locks"), **extra)


def ctl(env: dict[str, str], *args: str, host: str | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """ctl as a command line; with `host`, on 'another machine' of that name (a UTS namespace)."""
    argv = [sys.executable, "-m", "controller", *args]
    if host is not None:
        argv = ["unshare", "--uts", "sh", "-c", 'hostname "$1" && shift && exec "$@"', "ctl-host", host, *argv]
    return subprocess.run(argv, cwd=PROJECT, env=env, capture_output=True, text=True, timeout=timeout)


def out(p: subprocess.CompletedProcess) -> dict:
    """A `--json` answer's data (inside the output envelope, when ctl prints one)."""
    d = json.loads(p.stdout)
    return d["data"] if isinstance(d, dict) and "format" in d and "data" in d else d


def hold(env: dict[str, str], inventory: Path, purpose: str) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", HOLDER, str(inventory), purpose], cwd=PROJECT, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline().strip()
    assert line == "held", p.stderr.read() if p.poll() is not None else line
    p.took_s = float(p.stdout.readline())      # type: ignore[attr-defined]   (hold_rack, leases included)
    return p


def end(p: subprocess.Popen) -> None:
    if p.poll() is None:
        p.send_signal(signal.SIGKILL)
        p.wait(10)


def lease_dir(rack) -> Path:
    return rack.inventory.virtual.runtime_dir / "lease"


def book_file(rack) -> Path:
    return lease_dir(rack) / f"{rack.inventory.name}.reservations.json"


def wait_lease_free(env: dict[str, str], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        p = ctl(env, "rack", "status", "--json")
        if p.returncode == 0 and all(e["holder"] is None for e in out(p)["leases"]):
            return
        time.sleep(0.5)
    raise AssertionError("the rack's leases were not released")


def test_a_database_controller_and_one_without_meet_at_the_host_lease(rack, pg_url, tmp_path):
    with_db = rack.env(CTL_DATABASE_URL=pg_url)
    without = other_machine(rack, tmp_path)
    before = baseline(rack)
    a = hold(with_db, rack.inventory_path, "db holder")
    try:
        p = ctl(without, *MEASURE)
        assert p.returncode == 3, p.stdout + p.stderr
        err = p.stderr.strip().splitlines()
        assert len(err) == 1 and "rack vtest is leased by" in err[0] and f"pid {a.pid}," in err[0], p.stderr
        assert "db holder" in err[0] and "on host a1" in err[0]
        assert baseline(rack) == before
        st = out(ctl(with_db, "rack", "status", "--json"))
        assert [e["holder"]["pid"] for e in st["leases"]] == [a.pid, a.pid]
        assert "lab database" in st["leases"][0]["where"] and "on host a1" in st["leases"][1]["where"]
    finally:
        end(a)
    wait_lease_free(with_db)
    b = hold(without, rack.inventory_path, "no-db holder")
    print(f"\nhold_rack took {a.took_s:.2f} s with the database (its lease and the host lease), "
          f"{b.took_s:.2f} s without (the host lease)")
    try:
        p = ctl(other_machine(rack, tmp_path / "third", CTL_DATABASE_URL=pg_url), *MEASURE)
        assert p.returncode == 3, p.stdout + p.stderr
        err = p.stderr.strip().splitlines()
        assert len(err) == 1 and f"pid {b.pid}," in err[0] and "no-db holder" in err[0] and "on host a1" in err[0]
        # the database lease it took while finding the host lease held was let go
        st = out(ctl(with_db, "rack", "status", "--json"))
        assert st["leases"][0]["holder"] is None and st["leases"][1]["holder"]["pid"] == b.pid
    finally:
        end(b)
    assert baseline(rack) == before


def test_a_lease_directory_others_can_write_is_refused(rack, tmp_path):
    env = rack.env()
    d = lease_dir(rack)
    d.mkdir(mode=0o700, exist_ok=True)
    mode = os.stat(d).st_mode & 0o7777
    os.chmod(d, 0o777)
    try:
        p = ctl(env, *MEASURE)
        assert p.returncode == 1, p.stdout + p.stderr
        err = p.stderr.strip().splitlines()
        assert len(err) == 1 and f"lease directory {d} is writable by group or others" in err[0], p.stderr
        p = ctl(env, "rack", "status")
        assert p.returncode == 0 and "lease      unknown: " in p.stdout and "writable by group or others" in p.stdout
    finally:
        os.chmod(d, mode)
    assert ctl(env, *MEASURE).returncode == 0


def test_rack_status_answers_when_the_lock_dir_is_foreign_and_holds_a_fifo(rack, tmp_path):
    nobody = pwd.getpwnam("nobody").pw_uid
    locks = tmp_path / "foreign-locks"
    locks.mkdir()
    os.mkfifo(locks / f"{rack.inventory.name}.lock")
    os.chown(locks, nobody, nobody)
    os.chmod(locks, 0o777)
    t0 = time.monotonic()
    p = ctl(rack.env(CTL_LOCK_DIR=str(locks)), "rack", "status", timeout=120)
    assert p.returncode == 0, p.stderr
    assert "this machine's rack lock: unknown: refusing lock directory" in p.stdout and f"uid {nobody}" in p.stdout
    print(f"\nrack status with a FIFO in a foreign lock dir: {time.monotonic() - t0:.1f} s")


def test_without_a_database_owners_are_accounts_on_machines_not_environment(rack, tmp_path):
    here = socket.gethostname()
    me = pwd.getpwuid(os.geteuid()).pw_name
    p = ctl(rack.env(USER="alice", LOGNAME="alice"), "rack", "reserve", "vtest", "--for", "1h", "--note",
            "calibration", "--json")
    assert p.returncode == 0, p.stderr
    r = out(p)
    assert r["user"] == me != "alice"
    assert (r["host"], r["owner"]) == (here, f"{me}@{here}")
    try:
        other = other_machine(rack, tmp_path, USER=me, LOGNAME=me)
        before = baseline(rack)
        p = ctl(other, *MEASURE, host=OTHER_HOST)
        assert p.returncode == 3, p.stdout + p.stderr
        err = p.stderr.strip().splitlines()
        assert len(err) == 1 and f"rack vtest is reserved by {me}@{here} until " in err[0] and "(calibration)" in err[0]
        assert baseline(rack) == before
        p = ctl(other, "rack", "cancel", str(r["id"]), host=OTHER_HOST)
        assert p.returncode == 2 and f"is {me}@{here}'s" in p.stderr, p.stderr
        assert ctl(rack.env(), *MEASURE).returncode == 0            # the owner's own run goes
    finally:
        p = ctl(rack.env(), "rack", "cancel", str(r["id"]))
        assert p.returncode == 0, p.stderr


def test_malformed_book_entries_block_nothing_and_are_kept(rack, tmp_path):
    now = time.time()
    d = lease_dir(rack)
    d.mkdir(mode=0o700, exist_ok=True)
    entries = [{"id": 1, "rack": "vtest", "user": "mallory", "host": "m", "start": now - 60, "end": float("inf"),
                "note": "forever", "created": now},
               {"id": 2, "rack": "vtest", "user": "mallory", "host": "m", "start": "soon", "end": now + 60,
                "note": "\x1b]0;pwned\x07", "created": now},
               "not an entry"]
    book_file(rack).write_text(json.dumps({"format": 1, "rack": "vtest", "last_id": 2, "reservations": entries}))
    env = rack.env()
    try:
        p = ctl(env, "rack", "reservations")
        assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
        assert p.stdout.count("MALFORMED") == 3 and "\x1b" not in p.stdout and "\\x1b]0;pwned\\x07" in p.stdout
        assert "end is not a finite number" in p.stdout
        assert ctl(other_machine(rack, tmp_path), *MEASURE, host=OTHER_HOST).returncode == 0   # blocks nothing
        p = ctl(env, "rack", "reserve", "vtest", "--for", "10min", "--json")
        assert p.returncode == 0, p.stderr
        assert out(p)["id"] == 3
        assert ctl(env, "rack", "cancel", "3").returncode == 0
        kept = json.loads(book_file(rack).read_text(), parse_constant=str)["reservations"]
        assert kept[-3:] == [dict(entries[0], end="Infinity"), entries[1], entries[2]]
    finally:
        book_file(rack).unlink(missing_ok=True)


CAMPAIGN = """
version: 1
name: book-unreadable
scenario: distinct-bottleneck
fixed: {duration: 3s, link1: 20M, link2: 10M}
repetitions: 1
order: sequential
"""


def test_the_scheduler_starts_nothing_while_the_book_cannot_be_read(rack, tmp_path):
    d = lease_dir(rack)
    d.mkdir(mode=0o700, exist_ok=True)
    book_file(rack).write_text('{"format": 1, "reservations": [')        # cut off mid-write: not a book
    env = rack.env()
    f = tmp_path / "c.yaml"
    f.write_text(CAMPAIGN)
    p = ctl(env, "campaign", "submit", str(f), "--json")
    assert p.returncode == 0, p.stderr
    num = out(p)["num"]
    log = tmp_path / "daemon.log"
    with open(log, "w") as fh:
        daemon = subprocess.Popen([sys.executable, "-m", "controller", "campaign", "daemon", "--exit-when-idle"],
                                  cwd=PROJECT, env=env, stdout=fh, stderr=subprocess.STDOUT)
    try:
        wait_for(log, r"reservations of rack vtest cannot be read \(.*damaged", daemon, timeout=60)
        time.sleep(5)
        st = out(ctl(env, "campaign", "status", str(num), "--json"))
        assert [r["state"] for r in st["runs"]] == ["pending"] and not st["runs"][0]["attempts"], st["runs"]
        assert "cannot be read" in st["activity"] and "no run starts" in st["activity"], st["activity"]
        assert daemon.poll() is None
        t_fixed = time.monotonic()
        book_file(rack).unlink()
        assert daemon.wait(180) == 0, log.read_text()[-3000:]
        print(f"\nthe daemon went on {time.monotonic() - t_fixed:.1f} s after the book was fixed (run included)")
        st = out(ctl(env, "campaign", "status", str(num), "--json"))
        assert [r["state"] for r in st["runs"]] == ["done"], st["runs"]
    finally:
        if daemon.poll() is None:
            daemon.send_signal(signal.SIGINT)
            daemon.wait(60)
        book_file(rack).unlink(missing_ok=True)
