"""A connection left from before a run that outlasts the start-up's wait (controller/run/drain.py) is
judged by the summary (controller/results/foreign.py).

On the virtual rack: a sender on a1 (the run's client, on its data address) connects to the port
the run's iperf3 server will use on b1, fills its send buffer and exits, as a previous run's iperf3
client does, towards a reader that reads about 4 KB/s (a slow long path), so the kernel keeps
sending for longer than the wait's limit (60 s) and the run's traffic. The run waits the whole
limit, says that it goes on with the connection still there, records it (`leftover_wait`), and its
summary marks the connection as foreign traffic (first sampled before the run's traffic): its
bytes, whether they are above the run's limit (invalid) or below (a warning), and what the check
could not see.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

PORT = 5301         # the run's iperf3 port (--port-base): the leftover is on it, so a1's sampler reports it
READER = f"""
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
s.bind(("10.1.0.21", {PORT})); s.listen(1); print("listening", flush=True)
c, _ = s.accept()
s.close()           # the run's iperf3 server binds the port next
print("accepted", flush=True)
while c.recv(400):
    time.sleep(0.1)
c.close()
"""
SENDER = f"""
import socket
c = socket.socket(); c.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
c.bind(("10.1.0.11", 0)); c.connect(("10.1.0.21", {PORT})); c.setblocking(False)
n = 0
try:
    while True:
        n += c.send(b"x" * 65536)
except BlockingIOError:
    pass
print(c.getsockname()[1], n, flush=True)
c.close()
"""


def test_a_leftover_still_there_at_the_waits_limit_is_marked_foreign_in_the_summary(rack):
    reader = subprocess.Popen(["ip", "netns", "exec", rack.ns("b1"), sys.executable, "-c", READER],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert reader.stdout.readline().strip() == "listening"
        sent = subprocess.run(["ip", "netns", "exec", rack.ns("a1"), sys.executable, "-c", SENDER],
                              capture_output=True, text=True, timeout=30, check=True)
        port, queued = (int(x) for x in sent.stdout.split())
        assert reader.stdout.readline().strip() == "accepted"
        assert queued > 300_000, queued          # at ~4 KB/s: more than the wait's 60 s and the run
        p = rack.ctl("run", "rtt-loss-sweep", "--rtt", "20ms", "--loss", "0%", "--cc", "cubic", "--duration", "5s",
                     "--port-base", str(PORT), timeout=300)
        out = p.stdout + p.stderr
        assert "record: " in p.stdout, out[-3000:]
        record = Path(p.stdout.rsplit("record: ", 1)[1].strip().splitlines()[0])
        m = json.loads((record / "manifest.json").read_text())
        w = m["leftover_wait"]
        # the run says it went on with the connection still there
        assert w["outcome"].startswith("still there at the limit"), w
        assert w["waited_s"] >= w["limit_s"] == 60.0, w
        mine = [c for c in w["left"].get("a1", []) if c["local"] == f"10.1.0.11:{port}"]
        assert mine and mine[0]["peer"] == f"10.1.0.21:{PORT}" and mine[0]["state"] == "FIN-WAIT-1", w["left"]
        assert "still a1: 10.1.0.11" in out and "going on, the summary judges their traffic" in out, out[-3000:]
        # its summary marks the foreign traffic
        s = json.loads((record / "summary.json").read_text())
        ft = s["foreign_traffic"]
        [c] = [c for c in ft["connections"] if c["connection"].startswith(f"10.1.0.11:{port}-")]
        assert c["host"] == "a1" and c["why"] == "began before the run's traffic" and c["first_seen_s"] < 0, c
        assert ft["bytes"] >= c["bytes"] > 0 and ft["own_bytes"] > 0 and ft["limit_bytes"] > 0, ft
        assert ft["invalid"] == (ft["bytes"] > ft["limit_bytes"]), ft
        if ft["invalid"]:
            assert not s["valid"] and any(r.startswith("foreign traffic: ") for r in s["invalid_reasons"]), s
        else:
            assert s["valid"] and ft["warning"].startswith("foreign traffic: ") and "stays valid" in ft["warning"]
        assert any("UDP" in u for u in ft["unseen"]) and not any(u.startswith("a1:") for u in ft["unseen"]), ft
        assert p.returncode == (0 if s["valid"] else 4), (p.returncode, out[-2000:])      # 4: completed, invalid
    finally:
        if reader.poll() is None:
            reader.kill()
        reader.wait()
