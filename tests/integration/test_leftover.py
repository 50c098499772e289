"""A connection left from before a run is waited for before the run's traffic (controller/run/drain.py).

On the virtual rack: a bulk sender on a1 (the run's client, on its data address) fills its send
buffer towards a reader on b1 that reads slowly (about 20 KB/s) and exits, as a previous run's
iperf3 client does; the kernel keeps sending its buffer (FIN-WAIT-1 with data queued) for
up to ~20 s. A 5 s rtt-loss-sweep run from a1 to b1 started meanwhile waits until that connection is
gone, says so, and records the wait (`leftover_wait`); its summary then has no foreign traffic.
The slow reader stands in for a slow long path (the run reshapes the path itself before the wait).
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

PORT = 5999
TOTAL = 400_000     # bytes the sender leaves queued: ~20 s at the reader's ~20 KB/s
READER = f"""
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
s.bind(("10.1.0.21", {PORT})); s.listen(1); print("listening", flush=True)
c, _ = s.accept()
while c.recv(2048):
    time.sleep(0.1)
c.close()
"""
SENDER = f"""
import socket
c = socket.socket(); c.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
c.bind(("10.1.0.11", 0)); c.connect(("10.1.0.21", {PORT})); c.setblocking(False)
n = 0
try:
    while n < {TOTAL}:
        n += c.send(b"x" * min(65536, {TOTAL} - n))
except BlockingIOError:
    pass
print(c.getsockname()[1], n, flush=True)
c.close()
"""


def test_a_run_waits_for_a_previous_connection_still_sending(rack):
    reader = subprocess.Popen(["ip", "netns", "exec", rack.ns("b1"), sys.executable, "-c", READER],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert reader.stdout.readline().strip() == "listening"
        sent = subprocess.run(["ip", "netns", "exec", rack.ns("a1"), sys.executable, "-c", SENDER],
                              capture_output=True, text=True, timeout=30, check=True)
        port, queued = (int(x) for x in sent.stdout.split())
        assert queued > 200_000
        left = rack.netns("a1", "ss", "-Htn", "state", "fin-wait-1", "sport", "=", f":{port}")
        assert left.strip(), "the sender's connection should still be sending"
        t = time.monotonic()
        p = rack.ctl("run", "rtt-loss-sweep", "--rtt", "20ms", "--loss", "0%", "--cc", "cubic", "--duration", "5s",
                     timeout=200)
        took = time.monotonic() - t
        assert p.returncode == 0, (p.stdout[-3000:], p.stderr[-3000:])
        record = Path(p.stdout.rsplit("record: ", 1)[1].strip())
        m = json.loads((record / "manifest.json").read_text())
        w = m["leftover_wait"]
        assert w["outcome"] == "drained" and w["left"] == {} and w["errors"] == {}, w
        assert w["limit_s"] == 60.0 and 1.0 <= w["waited_s"] < 60 and w["polls"] >= 2
        mine = [c for c in w["first"]["a1"] if c["local"] == f"10.1.0.11:{port}"]
        assert mine and mine[0]["peer"] == f"10.1.0.21:{PORT}" and mine[0]["send_q_bytes"] > 0, w["first"]
        assert "connections left from before the run" in p.stderr + p.stdout
        assert took >= w["waited_s"]
        # The first look rode in the counters' round trip (ss, then nstat, one batch); after the wait
        # a1's counters before traffic were read again, after its last look.
        a1 = [c for c in map(json.loads, (record / "commands.jsonl").read_text().splitlines())
              if c["host"] == "a1" and c["argv"][:1] in (["ss"], ["nstat"])]
        looks = [c for c in a1 if c["argv"][0] == "ss"]
        counters = [c for c in a1 if c["argv"][0] == "nstat" and c["note"].startswith("counters before traffic")]
        assert looks[0]["note"].endswith("[batch 1/2]") and counters[0]["note"].endswith("[batch 2/2]"), a1
        assert len(looks) == w["polls"] and len(counters) == 2 and counters[-1]["started"] > looks[-1]["started"]
        s = json.loads((record / "summary.json").read_text())
        assert s["valid"] and s["foreign_traffic"]["bytes"] == 0 and s["foreign_traffic"]["own_bytes"] > 0
        reader.wait(timeout=30)
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.wait()
