"""The issue's acceptance test for a lab shared by many people and racks, on this machine: a
real PostgreSQL (started by the `pg_server` fixture), two virtual racks with different names
and prefixes (`rack`, `rack_b`), one campaign of 12 short runs across both, one
`ctl campaign daemon` per rack, and the daemon of rack A killed -9 in the middle of a run.

Afterwards: every run is done exactly once, the run the dead daemon was running was taken back
(its claim ran out) and done again, rack A was restored by the next daemon that drove it, and
the report lists both racks with the rack as a factor. Meanwhile a second controller (another
machine: its own lock dir, so only the lease stands between them) is refused with the holder
named, and waits with --wait.

Without a lab database, the lease lives on the rack's first host: a holder killed -9 releases it
(its SSH connection closes and with it the remote lock); a reservation refuses an ad-hoc run.

Rack B is reached as many labs reach theirs (so the campaign above runs through it too): two of
its hosts log in as an account that is not root and run ctl's commands with `sudo -n`, one only
through a bastion. The tests at the end show each way in (and the user's OpenSSH config and an
ssh-agent instead of the key file), and that an account that cannot run what ctl needs is
refused with the host and the commands named before anything on the rack changes.
"""
from __future__ import annotations

import json
import os
import pwd
import re
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from tests.integration.test_campaign_crash import PROJECT, baseline, wait_for

pytestmark = pytest.mark.integration

CAMPAIGN = """
version: 1
name: two-racks
scenario: distinct-bottleneck
fixed: {{duration: 3s, link1: 20M}}
sweep:
  link2: [10M, 20M, 30M]
  cc: [cubic, reno]
repetitions: 2
order: random
seed: 4242
overhead: 10s
health: {{max_clock_spread: 20ms}}
report: {{metric: jain_index}}
racks: [{a}, {b}]
"""
LEASE = "8s"


def other_machine(rack, tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a second controller on 'another machine': same rack, its own state dir
    and lock dir, so the machine-wide lock does not see the first one; only the lease does."""
    d = tmp_path / "other-controller"
    (d / "locks").mkdir(parents=True, exist_ok=True)
    (d / "state").mkdir(exist_ok=True)
    if not (d / "state" / "bin").exists():
        (d / "state" / "bin").symlink_to(rack.state_dir / "bin")
    env = rack.env(CTL_LOCK_DIR=str(d / "locks"), **extra)
    return env


def ctl(env: dict[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "controller", *args], cwd=PROJECT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def daemon(env: dict[str, str], log: Path) -> subprocess.Popen:
    with open(log, "w") as fh:
        return subprocess.Popen([sys.executable, "-m", "controller", "campaign", "daemon", "--exit-when-idle",
                                 "--lease", LEASE], cwd=PROJECT, env=env, stdout=fh, stderr=subprocess.STDOUT)


def status(env: dict[str, str], num: int) -> dict:
    p = ctl(env, "campaign", "status", str(num), "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["data"]


def test_one_campaign_on_two_racks_survives_a_killed_daemon(rack, rack_b, pg_url, tmp_path):
    env_a = rack.env(CTL_DATABASE_URL=pg_url)
    env_b = rack_b.env(CTL_DATABASE_URL=pg_url)
    before_a, before_b = baseline(rack), baseline(rack_b)
    f = tmp_path / "two-racks.yaml"
    f.write_text(CAMPAIGN.format(a=rack.inventory_path, b=rack_b.inventory_path))
    p = ctl(env_a, "campaign", "submit", str(f), "--json")
    assert p.returncode == 0, p.stderr
    num = json.loads(p.stdout)["data"]["num"]
    procs: list[subprocess.Popen] = []
    t0 = time.monotonic()
    try:
        log_a, log_b = tmp_path / "daemon-a.log", tmp_path / "daemon-b.log"
        da = daemon(env_a, log_a)
        procs.append(da)
        # ---- rack A's daemon killed -9 while its run's traffic flows ----------------------------
        wait_for(log_a, r"\] traffic: 3 flows", da, timeout=180)
        time.sleep(1.0)
        da.send_signal(signal.SIGKILL)
        da.wait(10)
        # Rack B's daemon starts now, with 11 runs to do: it holds rack B's lease while the second
        # controller below asks for the rack. (Started with A's, it could finish every run it could
        # claim while A's first run was still starting on a loaded machine, and hold nothing then.)
        db = daemon(env_b, log_b)
        procs.append(db)
        wait_for(log_b, r"\] traffic: 3 flows", db, timeout=180)
        st = status(env_a, num)
        (killed,) = [r for r in st["runs"] if r["state"] == "running" and r["claim_rack"] == "vtest"]
        killed_record = Path(killed["attempts"][-1]["record"])
        assert json.loads((killed_record / "manifest.json").read_text())["status"] == "running"

        # ---- a second controller on 'another machine' finds rack B leased: refused, holder named --
        other = other_machine(rack_b, tmp_path, CTL_DATABASE_URL=pg_url)
        p = ctl(other, "run", "distinct-bottleneck", "--duration", "3s")
        assert p.returncode == 3, p.stdout + p.stderr
        err = p.stderr.strip().splitlines()
        assert len(err) == 1 and re.search(r"rack vtestb is leased by \S+ on \S+ \(pid \d+, ctl campaign #\d+ ", err[0]), \
            p.stderr
        assert f"pid {db.pid}," in err[0] and "since " in err[0] and "lab database" in err[0]
        p = ctl(other, "run", "distinct-bottleneck", "--duration", "3s", "--wait", "3s")
        assert p.returncode == 3 and "waiting for the rack: rack vtestb is leased by" in p.stderr, p.stderr
        p = ctl(other, "rack", "status", "--json")
        assert p.returncode == 0, p.stderr
        held = json.loads(p.stdout)["data"]
        assert held["lease"]["pid"] == db.pid and held["lease"]["purpose"].startswith(f"ctl campaign #{num}")

        # ---- rack B's daemon takes the dead daemon's run back once its claim has run out ---------
        wait_for(log_b, rf"took back run {killed['seq']} from \S+ on rack vtest \(its claim ran out\): "
                        r"aborted -> requeue", db, timeout=120)
        # ---- the next daemon of rack A restores rack A from the killed run's record -------------
        da2 = daemon(env_a, tmp_path / "daemon-a2.log")
        procs.append(da2)
        wait_for(tmp_path / "daemon-a2.log", "recovered the rack from interrupted run " + re.escape(killed_record.name),
                 da2, timeout=120)
        assert da2.wait(600) == 0, (tmp_path / "daemon-a2.log").read_text()[-3000:]
        assert db.wait(600) == 0, log_b.read_text()[-3000:]
    finally:
        for p_ in procs:
            if p_.poll() is None:
                p_.kill()
                p_.wait(10)
    wall = time.monotonic() - t0

    # ---- every run done exactly once, on both racks; the killed one re-done ----------------------
    st = status(env_b, num)
    assert st["state"] == "done" and st["progress"]["done"] == 12 and st["racks"] == ["vtest", "vtestb"], (
        # said in full: a pause under load (2026-11-27's clean clone) left only "paused" to read
        {k: st.get(k) for k in ("state", "reason", "progress", "racks")},
        [f"{n}: ...{(tmp_path / n).read_text()[-1500:]}" for n in ("daemon-a.log", "daemon-b.log", "daemon-a2.log")
         if (tmp_path / n).exists()])
    racks_used = set()
    for r in st["runs"]:
        done = [a for a in r["attempts"] if a["status"] == "completed"]
        assert r["state"] == "done" and len(done) == 1, r
        racks_used.add(done[0]["rack"])
    assert racks_used == {"vtest", "vtestb"}
    (again,) = [r for r in st["runs"] if r["seq"] == killed["seq"]]
    first = again["attempts"][0]
    assert (first["status"], first["class"], first["action"], first["rack"]) == \
        ("aborted", "interrupted", "requeue", "vtest")
    assert "claim ran out" in first["error"]
    assert again["attempts"][-1]["status"] == "completed"
    # the killed run's record: restored by recovery on rack A, kept as aborted
    m = json.loads((killed_record / "manifest.json").read_text())
    assert m["status"] == "aborted" and m["recovery"]["problems"] == []
    assert baseline(rack) == before_a and baseline(rack_b) == before_b
    assert rack.pipes_at_default() and rack_b.pipes_at_default()

    # ---- the report, from the database: both racks, the rack as a factor -------------------------
    p = ctl(env_b, "campaign", "report", str(num), "--json")
    assert p.returncode == 0, p.stderr
    html = Path(json.loads(p.stdout)["data"]["html"]).read_text()
    assert "Rack as a factor" in html and "vtest: n, mean" in html and "vtestb: n, mean" in html
    assert "12 of 12 done, 0 failed" in html
    out = tmp_path / "exported"
    p = ctl(env_b, "campaign", "export", str(num), "--out", str(out))
    assert p.returncode == 0, p.stderr
    summaries = sorted(out.glob("*/summary.json"))
    assert len(summaries) == 12 and all("jain_index" in json.loads(s.read_text()) for s in summaries)
    # rack B's records say how each host was reached: a1 as the account ctl with sudo, b2 via the bastion
    m = json.loads(next(rack_b.runs_dir.glob("*/manifest.json")).read_text())
    a1, b2 = m["hosts"]["a1"]["access"], m["hosts"]["b2"]["access"]
    assert a1["sudo"] is True and a1["route"][0].startswith("ctl@") and len(b2["route"]) == 2, m["hosts"]
    print(f"\ntwo-rack campaign of 12 runs with one daemon killed: {wall:.1f} s wall-clock")


HOLDER = textwrap.dedent("""
    import sys, time
    from controller.inventory import load_inventory
    from controller.rack.lease import hold_rack
    inv = load_inventory(sys.argv[1])
    with hold_rack(inv, "test holder"):
        print("held", flush=True)
        time.sleep(3600)
""")


def test_without_a_database_the_lease_lives_on_the_rack_and_dies_with_its_holder(rack, tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(rack.inventory_path)], cwd=PROJECT, env=rack.env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held", holder.stderr.read()
        other = other_machine(rack, tmp_path)
        p = ctl(other, "rack", "status")
        assert p.returncode == 0 and "HELD by" in p.stdout and f"(pid {holder.pid})" in p.stdout, p.stdout + p.stderr
        assert "on host a1" in p.stdout
        p = ctl(other, "link", "measure", "path1", "--pings", "3", "--tcp-seconds", "1", "--udp-seconds", "1")
        assert p.returncode == 3 and "rack vtest is leased by" in p.stderr and f"pid {holder.pid}," in p.stderr
        assert "test holder" in p.stderr and "on host a1" in p.stderr
        # a waiting controller gets the rack once the holder is killed -9: nobody releases it by hand
        waiter = subprocess.Popen([sys.executable, "-m", "controller", "link", "measure", "path1", "--pings", "3",
                                   "--tcp-seconds", "1", "--udp-seconds", "1", "--json", "--wait", "120s"],
                                  cwd=PROJECT, env=other, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # the holder is killed once the waiter says it waits for it (not after a fixed time: on a
        # loaded machine the waiter may not have reached the lease yet, and would then never wait)
        lines: list[str] = []
        waiting = threading.Event()

        def read_stderr() -> None:
            for line in waiter.stderr:
                lines.append(line)
                if "waiting for the rack: rack vtest is leased by" in line:
                    waiting.set()

        reader = threading.Thread(target=read_stderr, daemon=True)
        reader.start()
        assert waiting.wait(120), "".join(lines)
        assert waiter.poll() is None
        t_kill = time.monotonic()
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
        waiter.wait(180)               # its JSON on stdout is a few hundred bytes: the pipe never fills
        out = waiter.stdout.read()
        reader.join(10)
        err = "".join(lines)
        assert waiter.returncode == 0, err
        assert json.loads(out)["data"]["link"] == "path1"
        print(f"\nlease freed and taken {time.monotonic() - t_kill:.1f} s after the holder's kill -9 (measure included)")
        p = ctl(other, "rack", "status", "--json")
        assert json.loads(p.stdout)["data"]["lease"] is None
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(10)


def test_a_reservation_refuses_somebody_elses_ad_hoc_run(rack, tmp_path):
    # Without a database an owner is an account (by uid, not $USER) on a machine: "bob" is root on
    # another controller (this machine under another host name: test_lab_trust_locks.ctl).
    from tests.integration.test_lab_trust_locks import OTHER_HOST, ctl as ctl_on
    alice = rack.env(USER="alice", LOGNAME="alice")
    owner = f"{pwd.getpwuid(os.geteuid()).pw_name}@{socket.gethostname()}"
    p = ctl(alice, "rack", "reserve", "vtest", "--for", "1h", "--note", "calibration", "--json")
    assert p.returncode == 0, p.stderr
    rid = json.loads(p.stdout)["data"]["id"]
    try:
        p = ctl(alice, "rack", "reserve", "vtest", "--from", "now", "--for", "10min")
        assert p.returncode == 3 and "overlaps reservation" in p.stderr
        bob = rack.env(USER="bob", LOGNAME="bob")
        before = baseline(rack)
        p = ctl_on(bob, "run", "distinct-bottleneck", "--duration", "3s", "--quiet", host=OTHER_HOST)
        assert p.returncode == 3, p.stdout + p.stderr
        err = p.stderr.strip().splitlines()
        assert len(err) == 1 and f"rack vtest is reserved by {owner}" in err[0] and "until " in err[0] \
            and "(calibration)" in err[0], p.stderr
        assert baseline(rack) == before
        p = ctl(bob, "rack", "reservations", "--json")
        assert [r["id"] for r in json.loads(p.stdout)["data"]] == [rid]
        p = ctl_on(bob, "rack", "cancel", str(rid), host=OTHER_HOST)
        assert p.returncode == 2 and f"is {owner}'s" in p.stderr
    finally:
        p = ctl(alice, "rack", "cancel", str(rid))
        assert p.returncode == 0, p.stderr
    # a reservation starting in 10 minutes: a 15-minute run would run into it
    p = ctl(alice, "rack", "reserve", "vtest", "--from", time.strftime("%Y-%m-%dT%H:%M:%S",
                                                                      time.localtime(time.time() + 600)),
            "--for", "30min", "--json")
    assert p.returncode == 0, p.stderr
    rid = json.loads(p.stdout)["data"]["id"]
    try:
        p = ctl_on(rack.env(), "run", "distinct-bottleneck", "--duration", "15min", host=OTHER_HOST)
        assert p.returncode == 3 and f"would run into {owner}" in p.stderr, p.stderr
    finally:
        assert ctl(alice, "rack", "cancel", str(rid)).returncode == 0


# ---- reaching a rack as a lab does: rack B has a bastion and a sudo account ------------------------

PROBE = textwrap.dedent("""
    import asyncio, json, sys
    from controller.commands import Command
    from controller.inventory import load_inventory
    from controller.ssh import CommandLog, SSHSession, targets
    inv = load_inventory(sys.argv[1])
    async def main():
        out = {}
        for t in targets(inv, sys.argv[2].split(",")):
            s = SSHSession(t, CommandLog(None))
            try:
                r = await s.run(Command(("sh", "-c", 'echo "$(id -un) ${SUDO_USER:-} ${SSH_AUTH_SOCK:-}|'
                                                     '${SSH_CONNECTION:-}"')))
                out[t.name] = {"route": s.route, "said": r.stdout.strip(), "exit": r.exit_status}
            except Exception as exc:
                out[t.name] = {"error": str(exc)}
            finally:
                await s.close()
        print(json.dumps(out))
    asyncio.run(main())
""")


def probe(rack, inventory: Path, hosts: str, **env: str) -> dict:
    p = subprocess.run([sys.executable, "-c", PROBE, str(inventory), hosts], cwd=PROJECT,
                       env=rack.env(**env), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def variant(rack, tmp_path: Path, name: str, *replacements: tuple[str, str]) -> Path:
    text = rack.inventory_path.read_text()
    for old, new in replacements:
        assert old in text, old
        text = text.replace(old, new, 1)
    p = tmp_path / name
    p.write_text(text)
    return p


def test_rack_b_is_reached_through_its_bastion_and_as_a_sudo_account(rack_b, tmp_path):
    import socket
    octet = rack_b.inventory.virtual.bastion.split(".")[1]
    bastion, b2 = f"10.{octet}.0.2", rack_b.inventory.hosts["b2"].mgmt.address
    seen = probe(rack_b, rack_b.inventory_path, "a1,br2,b1,b2")
    for h in ("a1", "br2"):            # the account ctl, its commands run as root through sudo -n
        assert seen[h]["said"].split("|")[0].split() == ["root", "ctl"], seen[h]
        assert seen[h]["route"] == [f"ctl@{rack_b.inventory.hosts[h].mgmt.address}:22"]
    assert seen["b1"]["said"].split("|")[0].split() == ["root"]
    # b2 saw the connection come from the bastion; the controller's own address is refused there
    assert seen["b2"]["route"] == [f"root@{bastion}:22", f"root@{b2}:22"]
    assert seen["b2"]["said"].split("|")[1].split()[0] == bastion
    with pytest.raises(OSError):
        socket.create_connection((b2, 22), timeout=5).recv(4)

    # the user's OpenSSH config instead: its ProxyJump, User and IdentityFile are taken
    key = rack_b.inventory.ssh.key_file
    cfg = tmp_path / "ssh_config"
    cfg.write_text(f"Host {b2}\n    ProxyJump root@{bastion}\n    ForwardAgent yes\n"
                   f"Host *\n    User root\n    IdentityFile {key}\n    StrictHostKeyChecking no\n")
    inv = variant(rack_b, tmp_path, "config.yaml", (f"  key_file: {key}\n", f"  config_file: {cfg}\n"),
                  (f"      proxy_jump: root@{bastion}\n", f"      config_file: {cfg}\n"))
    seen = probe(rack_b, inv, "b1,b2")
    assert seen["b2"]["route"] == [f"root@{bastion}:22", f"root@{b2}:22"], seen
    assert seen["b1"]["said"].split("|")[0].split() == ["root"]

    # ssh-agent keys on opt-in (no key file at all), never forwarded even when the config asks
    sock = tmp_path / "agent.sock"
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        subprocess.run(["ssh-add", "-q", str(key)], env={"SSH_AUTH_SOCK": str(sock)}, check=True)
        inv = variant(rack_b, tmp_path, "agent.yaml", (f"  key_file: {key}\n", "  agent: true\n"))
        seen = probe(rack_b, inv, "b1,b2,a1", SSH_AUTH_SOCK=str(sock))
        assert all("error" not in v for v in seen.values()), seen
        assert seen["b1"]["said"].split("|")[0].split() == ["root"]      # no SSH_AUTH_SOCK on the host
        seen = probe(rack_b, inv, "b1", SSH_AUTH_SOCK=str(tmp_path / "no-agent"))
        assert "ssh-agent" in seen["b1"]["error"], seen
    finally:
        agent.kill()
        agent.wait(10)


def test_an_account_that_cannot_run_as_root_is_refused_before_anything_changes(rack_b, tmp_path):
    before = baseline(rack_b)
    nosudo = variant(rack_b, tmp_path, "nosudo.yaml", ("sudo: true", "sudo: false"))
    p = rack_b.ctl("run", "distinct-bottleneck", "--duration", "3s", "--inventory", str(nosudo))
    err = p.stderr.strip().splitlines()
    assert p.returncode == 1 and len(err) == 1, p.stdout + p.stderr
    assert "a1: ctl@" in err[0] and "not root, and `sudo` is off" in err[0] and "ip mptcp" in err[0]
    assert baseline(rack_b) == before

    # sudo on, but the host's sudoers has no rule for the account: sudo -n's own words, one line
    sudoers = Path(f"/run/ctl/{rack_b.prefix}/hosts/a1/account/sudoers")
    saved = sudoers.read_text()
    try:
        sudoers.write_text("".join(l for l in saved.splitlines(True) if "NOPASSWD" not in l))
        p = rack_b.ctl("run", "distinct-bottleneck", "--duration", "3s")
        err = p.stderr.strip().splitlines()
        assert p.returncode == 1 and len(err) == 1, p.stdout + p.stderr
        assert "`sudo -n` cannot run ip mptcp" in err[0] and "a password is required" in err[0]
    finally:
        sudoers.write_text(saved)
    assert baseline(rack_b) == before

    # a key protected by a passphrase: one line, never a prompt or a traceback
    enc = tmp_path / "enc_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "pass phrase", "-f", str(enc)], check=True)
    inv = variant(rack_b, tmp_path, "enc.yaml", (f"  key_file: {rack_b.inventory.ssh.key_file}\n",
                                                 f"  key_file: {enc}\n"))
    p = rack_b.ctl("run", "distinct-bottleneck", "--duration", "3s", "--inventory", str(inv))
    err = p.stderr.strip().splitlines()
    assert p.returncode == 1 and len(err) == 1 and "is protected by a passphrase" in err[0], p.stderr
    assert baseline(rack_b) == before
