"""Many short MPTCP connections at once, both ends on one congestion control, data both ways, for
tests of a coupling map under connection churn (standard library only, run in a namespace):

    python3 mptcp_churn.py serve PORT CC CONNECTIONS            # prints "listening", then the count served
    python3 mptcp_churn.py client ADDR PORT CC CONNECTIONS PARALLEL UP_BYTES DOWN_BYTES   # prints the failures

Each connection: the client sends how many bytes it wants back, then UP_BYTES, shuts its side
down; the server reads to the end, sends DOWN_BYTES back and closes; the client reads to the end.
"""
from __future__ import annotations

import socket
import sys
import threading


IPPROTO_MPTCP = getattr(socket, "IPPROTO_MPTCP", 262)
CHUNK = b"\0" * 65536


def _drain(s: socket.socket) -> int:
    n = 0
    while data := s.recv(1 << 20):
        n += len(data)
    return n


def serve(port: int, cc: str, connections: int) -> int:
    done = []
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP) as ls:
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("0.0.0.0", port))
        ls.listen(128)
        print("listening", flush=True)

        def one(c: socket.socket) -> None:
            with c:
                try:
                    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
                    want = int.from_bytes(c.recv(8, socket.MSG_WAITALL), "little")
                    _drain(c)
                    sent = 0
                    while sent < want:
                        sent += c.send(CHUNK[: want - sent])
                    done.append(1)
                except OSError:
                    pass
        threads = []
        for _ in range(connections):
            c, _addr = ls.accept()
            threads.append(threading.Thread(target=one, args=(c,)))
            threads[-1].start()
        for t in threads:
            t.join(timeout=120)
    return len(done)


def client(addr: str, port: int, cc: str, connections: int, parallel: int, up: int, down: int) -> int:
    lock = threading.Lock()
    left, failed = [connections], [0]

    def worker() -> None:
        while True:
            with lock:
                if left[0] <= 0:
                    return
                left[0] -= 1
            try:
                with socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP) as s:
                    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
                    s.connect((addr, port))
                    s.sendall(down.to_bytes(8, "little"))
                    sent = 0
                    while sent < up:
                        sent += s.send(CHUNK[: up - sent])
                    s.shutdown(socket.SHUT_WR)
                    _drain(s)
            except OSError:
                with lock:
                    failed[0] += 1
    threads = [threading.Thread(target=worker) for _ in range(parallel)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return failed[0]


if __name__ == "__main__":
    verb, *a = sys.argv[1:]
    if verb == "serve":
        print(serve(int(a[0]), a[1], int(a[2])), flush=True)
    else:
        print(client(a[0], int(a[1]), a[2], int(a[3]), int(a[4]), int(a[5]), int(a[6])), flush=True)

