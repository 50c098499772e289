"""The issue's acceptance test: a shortened sweep on the virtual rack survives two SIGKILLs of
its controller and ends with exactly the planned runs, each completed once, plus the two
aborted partial records, the bridges at baseline; the morning report renders in headless
Chromium with no console errors and its images loaded.

Sweep: distinct-bottleneck, link2 {10M, 20M} x cc {cubic, reno} x 2 repetitions, 3 s runs
(the rtt-loss-sweep scenario is not built yet; the campaign code does not care which).
Both kills land while traffic flows (kill 2 in the re-run of the run kill 1 interrupted).
"""
from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

PROJECT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"

CAMPAIGN = """
version: 1
name: crash-test
scenario: distinct-bottleneck
fixed: {duration: 3s}
sweep:
  link2: [10M, 20M]
  cc: [cubic, reno]
repetitions: 2
order: random
seed: 20261122
pause: 0s
overhead: 10s
health: {max_clock_spread: 20ms}
report:
  metric: jain_index
"""


def baseline(rack) -> dict:
    return {
        "qdiscs": {f"{b}.{d}": [q["kind"] for q in rack.qdiscs(b, d)] for b in ("br1", "br2") for d in ("pa", "pb")},
        "pipes": {l: rack.pipe(l) for l in ("path1", "path2")},
        "endpoints": {h: rack.netns(h, "ip", "-j", "mptcp", "endpoint", "show") for h in ("a1", "b1")},
        "limits": {h: rack.netns(h, "ip", "mptcp", "limits", "show") for h in ("a1", "b1", "a2")},
    }


def start_daemon(rack, log: Path) -> subprocess.Popen:
    fh = open(log, "w")
    try:
        return subprocess.Popen([sys.executable, "-m", "controller", "campaign", "daemon"], cwd=PROJECT,
                                env=rack.env(), stdout=fh, stderr=subprocess.STDOUT, text=True)
    finally:
        fh.close()


def daemon_until_idle(rack, log: Path) -> None:
    """A campaign daemon with --exit-when-idle, its output in `log`; it must end with status 0."""
    fh = open(log, "w")
    try:
        d = subprocess.run([sys.executable, "-m", "controller", "campaign", "daemon", "--exit-when-idle"],
                           cwd=PROJECT, env=rack.env(), stdout=fh, stderr=subprocess.STDOUT, text=True, timeout=300)
    finally:
        fh.close()
    assert d.returncode == 0, log.read_text()[-3000:]


def wait_for(log: Path, pattern: str, proc: subprocess.Popen, timeout: float = 90, after: int = 0) -> int:
    """Wait until `pattern` appears in the log after offset `after`; returns the offset past it."""
    deadline = time.monotonic() + timeout
    rx = re.compile(pattern)
    while time.monotonic() < deadline:
        text = log.read_text()
        m = rx.search(text, after)
        if m:
            return m.end()
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    raise AssertionError(f"{pattern!r} not seen (exit {proc.poll()}):\n{log.read_text()[-3000:]}")


def status(rack, num: int) -> dict:
    p = rack.ctl("campaign", "status", str(num), "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["data"]


def read_pty(fd: int, sink: list[bytes]) -> None:
    while True:
        try:
            r, _, _ = select.select([fd], [], [], 1.0)
            if r:
                data = os.read(fd, 65536)
                if not data:
                    return
                sink.append(data)
        except OSError:  # EIO: the other side closed
            return


def run_on_tty(rack, *args: str, stream: str) -> tuple[subprocess.Popen, list[bytes], threading.Thread]:
    """`ctl ARGS` with stdout or stderr on a pseudo terminal (what a researcher sees)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))  # a 160-column terminal
    kw = {"stdout": slave, "stderr": subprocess.PIPE} if stream == "stdout" else \
        {"stdout": subprocess.PIPE, "stderr": slave}
    p = subprocess.Popen([sys.executable, "-m", "controller", *args], cwd=PROJECT, env=rack.env(),
                         stdin=subprocess.DEVNULL, **kw)
    os.close(slave)
    sink: list[bytes] = []
    t = threading.Thread(target=read_pty, args=(master, sink), daemon=True)
    t.start()
    return p, sink, t


def test_sweep_survives_two_sigkills_and_reports(rack, tmp_path):
    before = baseline(rack)
    f = tmp_path / "crash-test.yaml"
    f.write_text(CAMPAIGN)
    sub = rack.submit(f)
    num, cid = sub["num"], sub["id"]
    assert sub["runs"] == 8 and sub["seed"] == 20261122
    daemons: list[subprocess.Popen] = []
    try:
        # ---- kill 1: while traffic flows --------------------------------------------------------
        log1 = tmp_path / "daemon1.log"
        d1 = start_daemon(rack, log1)
        daemons.append(d1)
        wait_for(log1, r"\] traffic: 3 flows", d1)
        time.sleep(1.0)
        shaped = rack.pipe("path2")
        d1.send_signal(signal.SIGKILL)
        d1.wait(10)
        st = status(rack, num)
        running = [r for r in st["runs"] if r["state"] == "running"]
        assert len(running) == 1 and st["state"] == "running" and st["scheduler"] is None, st
        killed1 = Path(running[0]["attempts"][-1]["record"])
        assert json.loads((killed1 / "manifest.json").read_text())["status"] == "running"
        assert shaped["forward"]["bw_bps"] > 0  # the rack really was mid-run: link 2 shaped

        # ---- kill 2: the next controller recovers, re-runs the interrupted run, is killed in it --
        log2 = tmp_path / "daemon2.log"
        d2 = start_daemon(rack, log2)
        daemons.append(d2)
        off = wait_for(log2, r"recovered the rack from interrupted run " + re.escape(killed1.name), d2)
        off = wait_for(log2, r"\] traffic: 3 flows", d2, after=off)
        time.sleep(0.5)
        d2.send_signal(signal.SIGKILL)
        d2.wait(10)
        log2_text = log2.read_text()
        assert f"took over the rack lock of a dead controller (pid {d1.pid})" in log2_text
        st = status(rack, num)
        running = [r for r in st["runs"] if r["state"] == "running"]
        assert len(running) == 1, st
        killed2 = Path(running[0]["attempts"][-1]["record"])

        # ---- resume in a terminal: recovery, then the rest; a second terminal watches -----------
        watch, watch_out, watch_t = run_on_tty(rack, "campaign", "status", str(num), "--watch", stream="stdout")
        resume, resume_out, resume_t = run_on_tty(rack, "campaign", "resume", str(num), stream="stderr")
        rc = resume.wait(300)
        resume_t.join(5)
        tty = b"".join(resume_out).decode(errors="replace")
        assert rc == 0, tty + resume.stdout.read().decode()
        assert watch.wait(30) == 0
        watch_t.join(5)
        watched = b"".join(watch_out).decode(errors="replace")
        assert f"recovered the rack from interrupted run {killed2.name}" in tty
        assert f"took over the rack lock of a dead controller (pid {d2.pid})" in tty
        # the live progress bar (redrawn in place) with its ETA, on the controller's and the watcher's terminal
        assert re.search(r"\r\x1b\[K#\d+ crash-test \[[#x.]{30}\] \d/8 done\s+running\s+ETA \d{4}-\d\d-\d\dT\d\d:\d\d(Z|[+-]\d\d:\d\d) \(in ", tty)
        assert re.search(r"\r\x1b\[K#\d+ crash-test \[[#x.]{30}\] \d/8 done", watched)
        assert f"campaign #{num} is done" in watched
    finally:
        for d in daemons:
            if d.poll() is None:
                d.kill()
                d.wait(10)

    # ---- the campaign: exactly the planned runs, each completed once -----------------------------
    st = status(rack, num)
    assert st["state"] == "done" and st["progress"]["done"] == 8 and st["progress"]["total"] == 8
    cases = {(r["case"], r["repetition"]) for r in st["runs"]}
    assert cases == {(c, k) for c in (1, 2, 3, 4) for k in (1, 2)}
    interrupted = []
    completed_records = set()
    for r in st["runs"]:
        done = [a for a in r["attempts"] if a["status"] == "completed"]
        assert len(done) == 1 and r["state"] == "done", r
        completed_records.add(done[0]["record"])
        interrupted += [a for a in r["attempts"] if a["class"] == "interrupted"]
    assert sorted(Path(a["record"]).name for a in interrupted) == sorted([killed1.name, killed2.name])
    assert all(a["action"] == "requeue" and a["status"] == "aborted" for a in interrupted)

    # ---- the records on disk: the 8 completed ones plus the 2 aborted partial ones, nothing else ---
    ours = {}
    for d in rack.runs_dir.iterdir():
        mf = d / "manifest.json"
        if mf.exists():
            m = json.loads(mf.read_text())
            if m.get("campaign") == cid:
                ours[str(d)] = m
    in_store = {a["record"] for r in st["runs"] for a in r["attempts"]}
    assert set(ours) == in_store
    by_status = {}
    for d, m in ours.items():
        by_status.setdefault(m["status"], set()).add(d)
    assert by_status == {"completed": completed_records, "aborted": {str(killed1), str(killed2)}}
    for k in (killed1, killed2):
        m = ours[str(k)]
        assert "died before restoring; rack restored by recovery" in m["errors"][-1]["error"]
        assert m["recovery"]["problems"] == []
        assert all("restored" in sh for sh in m["shapers"].values())
    # what the first killed run measured before it died is kept
    assert sum(1 for _ in open(killed1 / "metrics.jsonl")) > 50
    # no process of the killed runs is left on any host (recovery ended them by PID)
    for k in (killed1, killed2):
        for proc in ours[str(k)]["processes"]:
            cmd = Path(f"/proc/{proc['pid']}/cmdline")
            assert not cmd.exists() or proc["argv0"].encode() not in cmd.read_bytes()

    # ---- the rack is back at its baseline ----------------------------------------------------------
    assert baseline(rack) == before
    assert [q["kind"] for q in rack.qdiscs("br1", "pb")] == before["qdiscs"]["br1.pb"]
    assert rack.pipes_at_default()

    # ---- health checks before every run, clock offsets recorded ------------------------------------
    assert st["health"]["failed"] == 0 and st["health"]["checks"] >= 9
    assert st["health"]["last"]["clock_spread_s"] < 0.02

    # ---- progress in InfluxDB: campaign points and the campaign tag on the runs' points ------------
    from tests.support.influx import client, query_values
    done_values = [v for _t, v in query_values(rack, "campaign", "runs_done", campaign=cid)]
    assert done_values and max(done_values) == 8
    q = (f'from(bucket: "{rack.inventory.influxdb.bucket}") |> range(start: 0) |> filter(fn: (r) => '
         f'r["campaign"] == "{cid}" and r["_measurement"] == "iface") |> count()')
    with client(rack) as c:
        iface_points = sum(rec.get_value() for table in c.query_api().query(q) for rec in table.records)
    assert iface_points > 100

    # ---- the morning report -----------------------------------------------------------------------
    p = rack.ctl("campaign", "report", str(num), "--json")
    assert p.returncode == 0, p.stderr
    html_path = Path(json.loads(p.stdout)["data"]["html"])
    html = html_path.read_text()
    for rec in list(ours):
        rel = os.path.relpath(rec, html_path.parent)
        assert f'href="{rel}"' in html and (html_path.parent / rel).is_dir()
    assert "8 of 8 done, 0 failed" in html and "interrupted" in html
    console, images = load_in_chromium(html_path, tmp_path)
    assert console == [], console
    assert {i["id"] for i in images} == {"heatmap", "boxplot"}
    assert all(i["complete"] and i["naturalWidth"] > 300 for i in images), images



FIGURES_CAMPAIGN = """
version: 1
name: figures-kill
scenario: distinct-bottleneck
fixed: {duration: 2s, link2: 20M}
repetitions: 3
order: sequential
pause: 0s
overhead: 10s
"""


def test_a_kill_9_while_a_done_runs_figures_go_in_loses_only_the_figures(rack, tmp_path):
    """Issue 28: a campaign calls a run done (its attempt closed) once its record is finished
    (restored, verified, summarized), and puts the run's figures into the record while the next
    run starts. Killed -9 in that moment: the done run's record is complete and says
    `figures_drawn: null`, its attempt stays completed (never repeated, never recovered); a new
    daemon finishes the campaign (re-running the next run if it had begun) and `ctl runs plot`
    draws the missing figures from the record."""
    before = baseline(rack)
    f = tmp_path / "figures-kill.yaml"
    f.write_text(FIGURES_CAMPAIGN)
    num = rack.submit(f)["num"]
    log = tmp_path / "daemon1.log"
    d1 = start_daemon(rack, log)
    killed = None
    try:
        deadline = time.monotonic() + 120
        seen_done: set[str] = set()
        while killed is None and time.monotonic() < deadline and d1.poll() is None:
            text = log.read_text()
            ids = dict(re.findall(r"run (\d+)/3 \([^)]*\), attempt \d+: (\S+)", text))
            for seq in re.findall(r"run (\d+)/3 \([^)]*\): completed", text):
                if seq in seen_done or seq not in ids:
                    continue
                seen_done.add(seq)
                m = json.loads((rack.runs_dir / ids[seq] / "manifest.json").read_text())
                if m["status"] == "completed" and m.get("figures_drawn", 0) is None:
                    d1.send_signal(signal.SIGKILL)
                    d1.wait(10)
                    killed = rack.runs_dir / ids[seq]
                    break
            time.sleep(0.002)
    finally:
        if d1.poll() is None:
            d1.kill()
            d1.wait(10)
    assert killed is not None, "the moment never came (every run's figures were in before it was seen done):\n" + \
        log.read_text()[-2000:]
    m = json.loads((killed / "manifest.json").read_text())
    assert m["status"] == "completed" and m["restore_problems"] == [] and m["figures_drawn"] is None
    assert "figures" not in m
    assert json.loads((killed / "summary.json").read_text())["provenance"]["status"] == "completed"
    st = status(rack, num)
    mine = next(r for r in st["runs"] if any(a["record"] == str(killed) for a in r["attempts"]))
    assert mine["state"] == "done" and [a["status"] for a in mine["attempts"]] == ["completed"], mine

    log2 = tmp_path / "daemon2.log"
    daemon_until_idle(rack, log2)
    st = status(rack, num)
    assert st["state"] == "done" and st["progress"]["done"] == 3, st
    for r in st["runs"]:
        done = [a for a in r["attempts"] if a["status"] == "completed"]
        assert len(done) == 1 and all(a["status"] in ("completed", "aborted") for a in r["attempts"]), r
    m2 = json.loads((killed / "manifest.json").read_text())
    assert m2["status"] == "completed" and m2["figures_drawn"] is None and "recovery" not in m2
    assert f"interrupted run {killed.name}" not in log2.read_text()
    # the runs the second daemon did have their figures in
    for r in st["runs"]:
        for a in r["attempts"]:
            if a["status"] == "completed" and a["record"] != str(killed):
                ma = json.loads((Path(a["record"]) / "manifest.json").read_text())
                assert ma["figures"] and ma["figures_drawn"] >= ma["finished"], a["record"]
    out = tmp_path / "figures"
    p = rack.ctl("runs", "plot", killed.name, "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert list(out.glob("*.png"))
    assert baseline(rack) == before

WORKER_CAMPAIGN = """
version: 1
name: worker-kill
scenario: distinct-bottleneck
fixed: {duration: 2s, link2: 20M}
repetitions: 1
order: sequential
pause: 0s
overhead: 10s
"""


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (from /proc)."""
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if int((p / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(p.name))
            except (OSError, ValueError, IndexError):
                continue
    return out


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def gone(pid: int) -> bool:
    """Exited (a zombie nobody reaped counts as exited)."""
    try:
        return (Path(f"/proc/{pid}") / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_a_kill_9_while_the_figure_worker_draws_leaves_no_orphan_and_loses_only_the_figures(rack, tmp_path):
    """Issue 28: a campaign daemon has a done run's figures drawn from its record by a worker
    process (controller/run/figworker.py). The daemon killed -9 while that worker draws: the
    worker ends with the daemon (no orphan drawing into the record), the record is complete and
    says `figures_drawn: null`, the attempt stays completed, and `ctl runs plot` draws the figures."""
    before = baseline(rack)
    f = tmp_path / "worker-kill.yaml"
    f.write_text(WORKER_CAMPAIGN)
    num = rack.submit(f)["num"]
    log = tmp_path / "daemon.log"
    d = start_daemon(rack, log)      # not --exit-when-idle: once the run is done it idles while its figures are drawn
    worker = record = None
    try:
        deadline = time.monotonic() + 120
        while worker is None and time.monotonic() < deadline and d.poll() is None:
            ids = re.findall(r"run 1/1 \([^)]*\), attempt \d+: (\S+)", log.read_text())
            if ids:
                try:
                    m = json.loads((rack.runs_dir / ids[0] / "manifest.json").read_text())
                except (OSError, ValueError):
                    m = {}
                drawing = [c for c in children(d.pid) if b"controller.run.figworker" in cmdline(c)] \
                    if m.get("status") == "completed" else []
                if drawing and m.get("figures_drawn", 0) is None:
                    worker, record = drawing[0], rack.runs_dir / ids[0]
                    d.send_signal(signal.SIGKILL)
                    d.wait(10)
                    break
            time.sleep(0.005)
    finally:
        if d.poll() is None:
            d.kill()
            d.wait(10)
    assert worker is not None, "the worker was never seen drawing a done run's figures:\n" + log.read_text()[-2000:]
    deadline = time.monotonic() + 30
    while not gone(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(worker), f"figure worker {worker} outlived the daemon killed -9"
    m = json.loads((record / "manifest.json").read_text())
    assert m["status"] == "completed" and m["restore_problems"] == [] and m["figures_drawn"] is None
    assert "figures" not in m
    st = status(rack, num)
    assert st["state"] == "done" and [a["status"] for r in st["runs"] for a in r["attempts"]] == ["completed"], st
    out = tmp_path / "figures"
    p = rack.ctl("runs", "plot", record.name, "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert [x.name for x in out.glob("*.png")] == ["throughput.png"]
    assert baseline(rack) == before


HELD_CAMPAIGN = """
version: 1
name: held-kill
scenario: distinct-bottleneck
fixed: {duration: 2s, link2: 20M}
repetitions: 2
order: sequential
pause: 0s
overhead: 10s
"""


def clients_started(record: Path) -> bool:
    """Whether the run's process journal names an iperf3 client (written the moment its PID is known)."""
    try:
        text = (record / "processes.jsonl").read_text()
    except OSError:
        return False
    return "iperf3 client" in text


def test_a_kill_9_while_a_done_runs_figures_wait_for_the_next_traffic_loses_only_the_figures(rack, tmp_path):
    """Issue 28: a campaign hands a done run's figures to its worker only once the next run's
    clients have started, so they never compete with the next run's health check and set-up.
    While the next run sets up, the figures are held: no worker draws (none exists yet), the
    done run's record is complete with `figures_drawn: null`. Killed -9 then: that record stays
    complete and its attempt completed (never repeated, never recovered), the next run's record
    is recovered and the run done again by a new daemon, and `ctl runs plot` draws the figures."""
    before = baseline(rack)
    f = tmp_path / "held-kill.yaml"
    f.write_text(HELD_CAMPAIGN)
    num = rack.submit(f)["num"]
    log = tmp_path / "daemon1.log"
    d1 = start_daemon(rack, log)
    killed = first = None
    try:
        deadline = time.monotonic() + 120
        while killed is None and time.monotonic() < deadline and d1.poll() is None:
            ids = dict(re.findall(r"run (\d+)/2 \([^)]*\), attempt \d+: (\S+)", log.read_text()))
            if "2" in ids:
                rec1, rec2 = rack.runs_dir / ids["1"], rack.runs_dir / ids["2"]
                workers = [c for c in children(d1.pid) if b"controller.run.figworker" in cmdline(c)]
                if not clients_started(rec2):
                    # (the worker was looked for first: no client was running then either)
                    assert workers == [], "a worker draws while the next run sets up"
                    try:
                        m1 = json.loads((rec1 / "manifest.json").read_text())
                    except (OSError, ValueError):
                        m1 = {}
                    if (rec2 / "manifest.json").exists() and m1.get("status") == "completed" \
                            and m1.get("figures_drawn", 0) is None:
                        d1.send_signal(signal.SIGKILL)
                        d1.wait(10)
                        killed, first = rec2, rec1
                        break
            time.sleep(0.003)
    finally:
        if d1.poll() is None:
            d1.kill()
            d1.wait(10)
    assert killed is not None, "the next run's set-up was never seen:\n" + log.read_text()[-2000:]
    m = json.loads((first / "manifest.json").read_text())
    assert m["status"] == "completed" and m["restore_problems"] == [] and m["figures_drawn"] is None
    assert "figures" not in m
    st = status(rack, num)
    mine = next(r for r in st["runs"] if any(a["record"] == str(first) for a in r["attempts"]))
    assert mine["state"] == "done" and [a["status"] for a in mine["attempts"]] == ["completed"], mine

    log2 = tmp_path / "daemon2.log"
    daemon_until_idle(rack, log2)
    st = status(rack, num)
    assert st["state"] == "done" and st["progress"]["done"] == 2, st
    for r in st["runs"]:
        assert [a["status"] for a in r["attempts"] if a["status"] == "completed"] == ["completed"], r
    m2 = json.loads((first / "manifest.json").read_text())
    assert m2["status"] == "completed" and m2["figures_drawn"] is None and "recovery" not in m2
    assert f"interrupted run {first.name}" not in log2.read_text()
    assert json.loads((killed / "manifest.json").read_text())["status"] != "running"    # recovered
    out = tmp_path / "figures"
    p = rack.ctl("runs", "plot", first.name, "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert [x.name for x in out.glob("*.png")] == ["throughput.png"]
    assert baseline(rack) == before


# ---- headless Chromium over the DevTools protocol (pipe transport) -------------------------------

class DevTools:
    """Chromium with --remote-debugging-pipe: protocol messages are NUL-terminated JSON on the
    browser's fds 3 (in) and 4 (out). No websocket, no extra package."""

    def __init__(self, profile: Path):
        cmd_r, self._w = os.pipe()
        self._r, out_w = os.pipe()
        # Park the child's ends above 10, then put them on 3 and 4 in the child.
        hi_r = fcntl.fcntl(cmd_r, fcntl.F_DUPFD, 10)
        hi_w = fcntl.fcntl(out_w, fcntl.F_DUPFD, 10)
        os.close(cmd_r)
        os.close(out_w)

        def onto_3_and_4() -> None:
            os.dup2(hi_r, 3)
            os.dup2(hi_w, 4)
        argv = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"]
        self.stderr = open(profile.parent / "chromium.stderr", "w")
        self.proc = subprocess.Popen(argv, pass_fds=(3, 4, hi_r, hi_w), preexec_fn=onto_3_and_4,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.stderr)
        os.close(hi_r)
        os.close(hi_w)
        self._buf = b""
        self._id = 0
        self.events: list[dict] = []

    def _recv(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            r, _, _ = select.select([self._r], [], [], max(0.0, deadline - time.monotonic()))
            if not r:
                raise TimeoutError("no answer from Chromium")
            chunk = os.read(self._r, 1 << 20)
            if not chunk:
                raise EOFError("Chromium closed the pipe: " + (self.stderr.name))
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 30) -> dict:
        self._id += 1
        msg: dict = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            m = self._recv(deadline)
            if m.get("id") == self._id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method: str, session: str, timeout: float = 30) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            for e in self.events:
                if e.get("method") == method and e.get("sessionId") == session:
                    self.events.remove(e)
                    return e
            self.events.append(self._recv(deadline))

    def open(self, url: str) -> tuple[str, list[str], list[dict]]:
        """Load `url` in a new tab; returns (session, console errors, images)."""
        tab = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        s = self.call("Target.attachToTarget", {"targetId": tab, "flatten": True})["sessionId"]
        for domain in ("Runtime.enable", "Log.enable", "Page.enable"):
            self.call(domain, session=s)
        self.events.clear()
        self.call("Page.navigate", {"url": url}, session=s)
        self.wait_event("Page.loadEventFired", s)
        imgs = self.call("Runtime.evaluate", {"returnByValue": True, "expression":
                         "Array.from(document.images).map(i => ({id: i.id, complete: i.complete, "
                         "naturalWidth: i.naturalWidth}))"}, session=s)["result"]["value"]
        errors = []
        for e in self.events:
            if e.get("sessionId") != s:
                continue
            meth, par = e.get("method"), e.get("params", {})
            if meth == "Runtime.consoleAPICalled" and par.get("type") in ("error", "assert"):
                errors.append(" ".join(str(a.get("value", a.get("description"))) for a in par.get("args", [])))
            elif meth == "Runtime.exceptionThrown":
                errors.append(str(par.get("exceptionDetails", {}).get("text")))
            elif meth == "Log.entryAdded" and par.get("entry", {}).get("level") == "error":
                errors.append(par["entry"].get("text", ""))
        return s, errors, imgs

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=10)
        except (OSError, EOFError, TimeoutError, RuntimeError):
            pass
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()  # the browser we started, by its PID
            self.proc.wait(10)
        os.close(self._w)
        os.close(self._r)
        self.stderr.close()


def load_in_chromium(page: Path, tmp_path: Path) -> tuple[list[str], list[dict]]:
    assert Path(CHROMIUM).exists(), "chromium missing: apt-get install -y chromium"
    profile = Path(tempfile.mkdtemp(prefix="chromium-profile-", dir=tmp_path))
    dt = DevTools(profile)
    try:
        # The detector itself works: a page that logs an error and has a broken image is caught.
        probe = tmp_path / "probe.html"
        probe.write_text('<!DOCTYPE html><img id="x" src="missing.png"><script>console.error("probe")</script>')
        _s, errors, imgs = dt.open(probe.as_uri())
        assert "probe" in errors and imgs == [{"id": "x", "complete": True, "naturalWidth": 0}], (errors, imgs)
        _s, errors, imgs = dt.open(page.as_uri())
        return errors, imgs
    finally:
        dt.close()
        shutil.rmtree(profile, ignore_errors=True)
