"""The operator's view while things run (issue 16, "While it runs"), on the virtual rack:

- (the live block of `ctl run` on a terminal: test_live_view.py, lane A: it asserts a cadence)
- an interrupted BitTorrent step summarizes the downloads that completed, marked partial
  with the count, and says why it ended on stderr;
- `ctl campaign status` after a kill -9 of the scheduler says interrupted with its pid and
  the command that continues it, with no ETA;
- `ctl link reset LINK|--all` returns links to the inventory's baseline; `ctl link measure`
  numbers its steps.
"""
from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.integration

PROJECT = Path(__file__).resolve().parents[2]
ESC = "\x1b"


def test_an_interrupted_bittorrent_step_summarizes_what_completed(rack):
    # 4 downloads of 4 MiB with a local tracker; SIGTERM while the third one runs
    proc = rack.popen("run", "mptcp-bittorrent", "--step", "bittorrent", "--tracker", "local", "--size", "4MiB",
                      "--repetitions", "2", "--timeout", "120s")
    seen = []
    deadline = time.monotonic() + 300
    assert proc.stderr is not None
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        seen.append(line)
        if "BitTorrent download 3/4 (tcp-2): starting its seeder" in line:
            break
        assert line or proc.poll() is None, "".join(seen)
    else:
        raise AssertionError("".join(seen))
    text = "".join(seen)
    # what the step really does, and how far along it is, on stderr (a pipe: lines, no block)
    assert "] traffic: 4 BitTorrent downloads of 4MiB (TCP and MPTCP alternating), each up to 2m00s" in text
    assert re.search(r"BitTorrent download 1/4 \(tcp-1\) complete in [\d.]+ s \([\d.]+ Mbit/s\); 1 complete so far",
                     text), text
    assert "BitTorrent download 2/4 (mptcp-1) complete in" in text
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err[-2000:]
    rec = Path(out.split("record: ")[1].split()[0])
    s = json.loads((rec / "summary.json").read_text())
    p = s["partial_run"]
    assert s["partial"] is True and s["status"] == "aborted" and s["valid"] is False
    assert (p["planned"], p["completed"], p["completed_names"]) == (4, 2, ["tcp-1", "mptcp-1"])
    assert p["not_ended"] == ["tcp-2", "mptcp-2"] and p["units_valid"] is True
    assert [d["name"] for d in s["downloads"]] == ["tcp-1", "mptcp-1"] and all(d["complete"] for d in s["downloads"])
    assert s["protocols"]["tcp"]["throughput_mbps"]["n"] == 1 and s["protocols"]["mptcp"]["throughput_mbps"]["n"] == 1
    assert (rec / "bittorrent.png").exists()
    # stdout: the scenario's table of those two and the PARTIAL line; stderr: why, in one line
    assert "tcp-1" in out and "PARTIAL (aborted: interrupted by SIGTERM): 2 of 4 BitTorrent downloads completed" in out
    last = err.strip().splitlines()[-1]
    assert last.startswith("ctl: run ") and "aborted: interrupted by SIGTERM (partial summary: 2 of 4 BitTorrent " \
                                                "downloads completed); record: " in last, last
    m = json.loads((rec / "manifest.json").read_text())
    assert m["status"] == "aborted" and m["restore_problems"] == []


CAMPAIGN = """
version: 1
name: kill-status
scenario: distinct-bottleneck
fixed: {duration: 4s}
sweep:
  link2: [10M, 20M]
repetitions: 1
order: sequential
pause: 0s
overhead: 10s
"""


def _wait_for(log: Path, pattern: str, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if re.search(pattern, log.read_text()):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    raise AssertionError(f"{pattern!r} not seen:\n{log.read_text()[-3000:]}")


def test_campaign_status_after_the_scheduler_is_killed(rack, tmp_path):
    f = tmp_path / "kill-status.yaml"
    f.write_text(CAMPAIGN)
    num = rack.submit(f)["num"]
    log = tmp_path / "daemon.log"
    with open(log, "w") as fh:
        d = subprocess.Popen([sys.executable, "-m", "controller", "campaign", "daemon"], cwd=PROJECT, env=rack.env(),
                             stdout=fh, stderr=subprocess.STDOUT, text=True)
    try:
        _wait_for(log, r"\] traffic: 3 flows", d)
        running = json.loads(rack.ctl("campaign", "status", str(num), "--json").stdout)["data"]
        assert running["interrupted"] is None and running["progress"]["eta_s"] > 0
        d.send_signal(signal.SIGKILL)
        d.wait(10)
        st = rack.ctl("campaign", "status", str(num), "--json")
        assert st.returncode == 0, st.stderr
        j = json.loads(st.stdout)["data"]
        want = f"interrupted, scheduler pid {d.pid} gone, `ctl campaign resume {num}`"
        assert j["state"] == "running" and j["scheduler"] is None
        assert j["interrupted"] == {"message": want, "scheduler_pid": d.pid}
        assert j["progress"]["eta_s"] is None and j["progress"]["finish_at"] is None
        text = rack.ctl("campaign", "status", str(num)).stdout
        assert f"  state    {want}" in text and "ETA" not in text and "1 interrupted" in text, text
        listing = rack.ctl("campaign", "status").stdout
        line = next(l for l in listing.splitlines() if l.startswith(f"#{num} "))
        assert want in line and "ETA" not in line
    finally:
        if d.poll() is None:
            d.kill()
            d.wait(10)
        # leave the rack as found: the cancel restores it from the interrupted run's record
        c = rack.ctl("campaign", "cancel", str(num))
        assert c.returncode == 0, c.stderr
    assert rack.pipes_at_default()


def test_link_reset_to_the_inventory_baseline(rack, tmp_path):
    try:
        for link in ("path1", "path2"):
            p = rack.ctl("link", "set", link, "--bw", "20M", "--delay", "10ms")
            assert p.returncode == 0, p.stderr
        p = rack.ctl("link", "reset", "path2", "--json")
        assert p.returncode == 0, p.stderr
        (entry,) = json.loads(p.stdout)["data"]
        assert entry["action"] == "reset" and entry["bridge"] == "br2" and entry["link"] == "path2"
        assert entry["before"]["path2.forward"]["bw_bps"] == 20_000_000
        assert rack.pipes_at_default(("path2",)) and not rack.pipes_at_default(("path1",))
        # a baseline in the inventory: reset goes to it, not to unshaped
        data = yaml.safe_load(rack.inventory_path.read_text())
        data["links"]["path2"]["baseline"] = {"bw": "50M", "delay": "5ms"}
        with_base = tmp_path / "with-baseline.yaml"
        with_base.write_text(yaml.safe_dump(data, sort_keys=False))
        p = rack.ctl("link", "reset", "--all", "--inventory", str(with_base))
        assert p.returncode == 0, p.stderr
        assert "path2.forward    br2     bw 50 Mbit/s, delay 5ms, loss 0%, queue 50 slots (unchanged)" not in p.stdout
        assert "path2.forward    br2     bw 50 Mbit/s, delay 5ms, loss 0%, queue 50 slots (was " in p.stdout, p.stdout
        cfg = rack.pipe("path2")
        assert cfg["forward"]["bw_bps"] == cfg["reverse"]["bw_bps"] == 50_000_000
        assert cfg["forward"]["delay_us"] == 5000 and rack.pipes_at_default(("path1",))
        # logged like `set`: the two sets, the reset of path2, then one entry per bridge for --all
        changes = [json.loads(l) for l in (rack.state_dir / "link-changes.jsonl").read_text().splitlines()]
        last_set = max(i for i, c in enumerate(changes) if c["action"] == "set")
        resets = changes[last_set + 1:]
        assert [c["action"] for c in resets] == ["reset"] * len(resets) and len(resets) >= 2
        covered = {l for c in resets[1:] for l in c.get("links", [c.get("link")])}
        assert covered == set(rack.inventory.links)
    finally:
        p = rack.ctl("link", "reset", "--all")
        assert p.returncode == 0, p.stderr
    assert rack.pipes_at_default()
    # a measurement numbers its steps on stderr, each with the time it should take
    m = rack.ctl("link", "measure", "path1", "--pings", "5", "--tcp-seconds", "3", "--udp-seconds", "2")
    assert m.returncode == 0, m.stderr
    steps = re.findall(r"\] (\[\d/3\] [^\n]+)", m.stderr)
    assert [s[:5] for s in steps] == ["[1/3]", "[2/3]", "[3/3]"], m.stderr
    assert steps[0].endswith("(about 1 s)") and "throughput: 4 TCP streams a1 -> b1 for 3 s" in steps[1]
