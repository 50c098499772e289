"""Sockets that run one congestion control until told to let go (tests/integration/test_hostctl_unload.py).

    python3 cc_sockets.py CC N closing|open

Opens N TCP connections over this namespace's loopback whose senders run CC. `closing`: each
sender fills its send buffer towards a reader that does not read and closes, so it stays in
FIN-WAIT-1 with data queued (a finished run's sender still draining); `open`: they stay
established. Prints `ready` once they are, then waits for a line on stdin; then the readers
read everything and close, every socket is closed, and it prints `closed` and exits. Standard
library only; run inside a namespace (ip netns exec) by the test.
"""
from __future__ import annotations

import socket
import sys


def main(cc: str, n: int, mode: str) -> None:
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)     # inherited: a small window fills fast
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    pairs = []
    for _ in range(n):
        c = socket.socket()
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
        c.connect(srv.getsockname())
        a, _ = srv.accept()
        pairs.append((c, a))
    if mode == "closing":
        for c, _ in pairs:
            c.setblocking(False)
            try:
                while True:
                    c.send(b"x" * 65536)
            except BlockingIOError:
                pass
            c.close()
    print("ready", flush=True)
    sys.stdin.readline()
    for c, _ in pairs:
        c.close()
    for _, a in pairs:       # read to the sender's FIN, so nothing is left queued
        a.settimeout(30)
        try:
            while a.recv(1 << 20):
                pass
        except OSError:
            pass
        a.close()
    srv.close()
    print("closed", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
