"""Campaign control on the virtual rack: a failing health check pauses the campaign with the
reason (and no run touches the rack); SIGTERM stops the daemon cleanly (the run is restored
by the runner and queued again); `cancel` stops the current run and ends the campaign."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.test_campaign_crash import PROJECT, baseline, status, wait_for

pytestmark = pytest.mark.integration


def campaign(tmp_path: Path, name: str, body: str) -> Path:
    f = tmp_path / f"{name}.yaml"
    f.write_text(f"version: 1\nname: {name}\nscenario: distinct-bottleneck\norder: sequential\n{body}")
    return f


def submit(rack, f: Path) -> tuple[int, str]:
    d = rack.submit(f)
    return d["num"], d["id"]


def records_of(rack, cid: str) -> dict[str, dict]:
    out = {}
    for d in rack.runs_dir.iterdir():
        mf = d / "manifest.json"
        if mf.exists():
            m = json.loads(mf.read_text())
            if m.get("campaign") == cid:
                out[d.name] = m
    return out


def test_a_failing_health_check_pauses_with_the_reason(rack, tmp_path):
    num, cid = submit(rack, campaign(tmp_path, "health", "fixed: {duration: 3s, link2: 20M}\n"))
    # Someone left link 1 shaped to 5 Mbit/s on br1: the rack is not at its baseline.
    rack.set_pipe("path1", "--dir", "forward", "--bw", "5000000")
    try:
        p = rack.ctl("campaign", "daemon", "--exit-when-idle")
        assert p.returncode == 0, p.stderr
        st = status(rack, num)
        assert st["state"] == "paused", st
        assert st["reason"].startswith("health check failed before run 1/1 (fixed parameters, rep 1): ")
        assert "br1" in st["reason"] and "path1" in st["reason"]
        assert "PAUSED: health check failed" in p.stderr
        # nothing ran: no attempt, no record; the check itself is recorded with every host's clock
        assert st["runs"][0]["attempts"] == [] and records_of(rack, cid) == {}
        assert st["health"]["checks"] == 1 and st["health"]["failed"] == 1
        from controller.campaign.sqlite_store import SQLiteStore
        store = SQLiteStore(rack.state_dir / "campaigns.sqlite")
        try:
            (h,) = store.health_checks(num)
        finally:
            store.close()
        assert set(h.details["clock"]) == {"a1", "a2", "b1", "b2", "br1", "br2"}
        assert all(v == "ok" for v in h.details["hosts"].values())
    finally:
        rack.set_pipe("path1", "--dir", "forward", "--bw", "0")
    # back at baseline: resume runs it
    p = rack.ctl("campaign", "resume", str(num))
    assert p.returncode == 0, p.stderr
    st = status(rack, num)
    assert st["state"] == "done" and st["health"] == {**st["health"], "checks": 2, "failed": 1}
    assert [a["status"] for a in st["runs"][0]["attempts"]] == ["completed"]


def test_sigterm_stops_the_daemon_cleanly_and_cancel_ends_the_campaign(rack, tmp_path):
    before = baseline(rack)
    num, cid = submit(rack, campaign(tmp_path, "stop", "fixed: {duration: 20s}\ncases: [{link2: 10M}, {link2: 20M}]\n"))
    procs: list[subprocess.Popen] = []

    def daemon(log: Path) -> subprocess.Popen:
        with open(log, "w") as fh:
            p = subprocess.Popen([sys.executable, "-m", "controller", "campaign", "daemon", "--exit-when-idle"],
                                 cwd=PROJECT, env=rack.env(), stdout=fh, stderr=subprocess.STDOUT)
        procs.append(p)
        return p
    try:
        # ---- SIGTERM (systemctl stop): the runner restores the rack, the daemon exits 0 ----
        log1 = tmp_path / "d1.log"
        d1 = daemon(log1)
        wait_for(log1, r"\] traffic: 2 flows|\] traffic: 3 flows", d1)
        time.sleep(1.0)
        d1.send_signal(signal.SIGTERM)
        assert d1.wait(60) == 0, log1.read_text()
        assert "stopped by SIGTERM" in log1.read_text()
        assert baseline(rack) == before
        st = status(rack, num)
        assert st["state"] == "running"   # the campaign goes on when a controller comes back
        (a,) = st["runs"][0]["attempts"]
        assert (a["status"], a["class"], a["action"], a["exit_code"]) == ("aborted", "interrupted", "requeue", 143)
        assert st["runs"][0]["state"] == "pending"
        m = json.loads((Path(a["record"]) / "manifest.json").read_text())
        assert m["status"] == "aborted" and "recovery" not in m and m["restore_problems"] == []

        # ---- cancel while a run is in progress: stopped, restored, campaign over ----
        log2 = tmp_path / "d2.log"
        d2 = daemon(log2)
        wait_for(log2, r"\] traffic: 3 flows", d2)
        p = rack.ctl("campaign", "cancel", str(num))
        assert p.returncode == 0 and "the scheduler stops the current run" in p.stdout, p.stdout + p.stderr
        assert d2.wait(60) == 0, log2.read_text()
    finally:
        for p_ in procs:
            if p_.poll() is None:
                p_.kill()
                p_.wait(10)
    assert baseline(rack) == before
    st = status(rack, num)
    assert st["state"] == "cancelled" and {r["state"] for r in st["runs"]} == {"cancelled"}
    last = st["runs"][0]["attempts"][-1]
    assert (last["class"], last["action"]) == ("interrupted", "cancel")
    assert last["error"].startswith("stopped by `ctl campaign cancel`")
    assert {m["status"] for m in records_of(rack, cid).values()} == {"aborted"}


def test_a_refused_run_is_classified_from_the_real_outcome_and_pauses(rack, tmp_path):
    """A congestion control the kernel lacks is refused on the hosts, before any change (exit 2):
    class `refused`, and the default policy pauses the campaign with the runner's reason."""
    before = baseline(rack)
    num, cid = submit(rack, campaign(tmp_path, "refused", "fixed: {duration: 3s}\ncases: [{cc: nosuchcc}]\n"))
    try:
        p = rack.ctl("campaign", "daemon", "--exit-when-idle")
        assert p.returncode == 0, p.stderr
        st = status(rack, num)
        assert st["state"] == "paused", st
        assert "refused (1 of 1 attempts)" in st["reason"] and "nosuchcc" in st["reason"]
        (a,) = st["runs"][0]["attempts"]
        assert (a["status"], a["exit_code"], a["class"], a["action"]) == ("failed", 2, "refused", "pause")
        assert st["runs"][0]["state"] == "pending"   # kept: resume (after fixing the kernel) runs it
        assert st["failures_by_class"] == {"refused": 1}
        assert {m["status"] for m in records_of(rack, cid).values()} == {"failed"}
        assert baseline(rack) == before
    finally:
        rack.ctl("campaign", "cancel", str(num))
