"""The logger as a process on its host (no rack, no SSH): the shipped zip, detached start, kill -9 and
resume into the same run, stop by PID. Real fork/setsid/flock; the modem is absent (idle workload,
ping to 127.0.0.1), so this takes a few seconds.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import zipfile
from pathlib import Path

import pytest

from controller.field.ship import build_zipapp
from controller.telemetry.spool import read_points

NS = 1_000_000_000


@pytest.fixture(scope="module")
def pyz(tmp_path_factory) -> Path:
    data, sha = build_zipapp()
    p = tmp_path_factory.mktemp("pyz") / f"fieldlog-{sha[:12]}.pyz"
    p.write_bytes(data)
    return p


def run(pyz: Path, *args: str, stdin: str | None = None) -> dict:
    # The host's python3 with nothing but the zip: not the venv, not the project on sys.path.
    p = subprocess.run(["/usr/bin/python3", "-I", str(pyz), *args], input=stdin, capture_output=True, text=True,
                       timeout=60, cwd="/")
    assert p.stdout.strip(), p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_zipapp_is_deterministic_and_ships_no_test_double():
    (a, sha_a), (b, sha_b) = build_zipapp(), build_zipapp()
    assert a == b and sha_a == sha_b
    import io
    names = zipfile.ZipFile(io.BytesIO(a)).namelist()
    assert "__main__.py" in names and "nodes/fieldlog/logger.py" in names and "nodes/modem/families.py" in names
    assert "nodes/modem/emulator.py" not in names and "nodes/fieldlog/modem_double.py" not in names
    assert not any(n.startswith("controller/") for n in names)        # stdlib only on the host


def test_version_runs_on_bare_python(pyz):
    assert run(pyz, "version")["version"] >= 1


def config(run_id: str, duration_s: float | None = None) -> str:
    return json.dumps({"run_id": run_id, "host": "h1", "interval_s": 1.0, "duration_s": duration_s,
                       "workload": {"kind": "idle"}, "tags": {"run": run_id, "scenario": "field", "host": "h1"},
                       "uplink": "lo", "ping": {"target": "127.0.0.1", "interval_s": 0.2}})


def wait_for(pred, timeout: float = 10.0) -> None:
    t_end = time.monotonic() + timeout
    while time.monotonic() < t_end:
        if pred():
            return
        time.sleep(0.1)
    raise AssertionError("condition not met in time")


def test_detached_start_kill_resume_stop(pyz, tmp_path):
    root = str(tmp_path / "root")
    out = run(pyz, "start", "--root", root, "--config", config("r1"), "--token-stdin", stdin="tok\n")
    assert out["action"] == "started" and out["run_id"] == "r1"
    pid = out["pid"]
    try:
        # detached: its own session, not a child of the command that started it
        assert os.getsid(pid) != os.getsid(os.getpid())
        assert (Path(root) / "influx.token.json").stat().st_mode & 0o777 == 0o600
        st = run(pyz, "status", "--root", root)
        assert st["state"] == "logging" and st["pid"] == pid
        again = run(pyz, "start", "--root", root, "--config", config("r2"))
        assert again["action"] == "already-running" and again["run_id"] == "r1"
        spool = Path(root) / "runs" / "r1" / "metrics.jsonl"
        state_file = Path(root) / "runs" / "r1" / "state.json"
        wait_for(lambda: spool.exists() and spool.read_text().count('"m":"field"') >= 3)
        ping = json.loads(state_file.read_text())["children"]["ping"]   # recorded with its start time
        os.kill(pid, signal.SIGKILL)                                    # the logger dies hard
        wait_for(lambda: run(pyz, "status", "--root", root)["state"] == "unfinished")
        time.sleep(1.5)
        res = run(pyz, "start", "--root", root)                         # no config: resume only (boot hook)
        assert res["action"] == "resumed" and res["run_id"] == "r1" and res["gap"] is not None
        pid = res["pid"]
        from nodes.fieldlog.procs import alive
        assert not alive(ping["pid"], ping["start_time"])              # the dead logger's ping is gone
        wait_for(lambda: spool.read_text().count('"m":"field"') >= 6)
        refused = run(pyz, "stop", "--root", root, "--pid", str(pid + 100000))
        assert refused["action"] == "refused"
        stopped = run(pyz, "stop", "--root", root, "--pid", str(pid))
        assert stopped["action"] == "stopped" and stopped["state"]["status"] == "stopped"
        pid = None
    finally:
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
    pts = read_points(spool)[0]
    seqs = [p.fields["seq"] for p in pts if p.measurement == "field"]
    assert seqs == sorted(set(seqs))                                    # no duplicate seconds
    gap = [p for p in pts if p.measurement == "field_event" and p.tags["event"] == "gap"]
    assert len(gap) == 1 and set(range(gap[0].fields["from_seq"], gap[0].fields["to_seq"] + 1)).isdisjoint(seqs)
    assert seqs == sorted(set(range(seqs[0], seqs[-1] + 1)) - set(range(gap[0].fields["from_seq"],
                                                                        gap[0].fields["to_seq"] + 1)))
    state = json.loads(state_file.read_text())
    assert state["children"] == {} and len(state["starts"]) == 2
    # a chunk of the spool, exact
    chunk = run(pyz, "cat", "--root", root, "--run", "r1", "--file", "metrics.jsonl")
    import base64
    assert base64.b64decode(chunk["data"]) == spool.read_bytes()
    assert run(pyz, "cat", "--root", root, "--run", "r1", "--file", "../../influx.token.json")["action"] == "error"


def test_start_refuses_a_bad_config_before_forking(pyz, tmp_path):
    bad = json.loads(config("r1"))
    bad["workload"] = {"kind": "iperf3"}
    out = run(pyz, "start", "--root", str(tmp_path), "--config", json.dumps(bad))
    assert out["action"] == "error" and "server" in out["error"]


def test_duration_over_while_down_completes_the_run_instead_of_resuming(pyz, tmp_path):
    root = str(tmp_path / "root")
    out = run(pyz, "start", "--root", root, "--config", config("r1", duration_s=2))
    assert out["action"] == "started"
    wait_for(lambda: run(pyz, "status", "--root", root)["state"] == "completed")
    st = run(pyz, "status", "--root", root)
    assert st["spool_points"] >= 2 and st["last"]["seq"] == 1
    assert run(pyz, "start", "--root", root)["action"] == "nothing-to-resume"

