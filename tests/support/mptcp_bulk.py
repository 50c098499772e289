"""A bulk MPTCP transfer that ends cleanly, for tests that must see every connection closed.

iperf3 ends a test by closing the receiving socket while the sender still has data in flight;
over MPTCP the receiver's orphaned connection then advertises a zero window and the sender's
subflows probe it until MPTCP's close timeout (about a minute): they stay alive, and so does
their connection's entry in a coupling map, long after the transfer. Here the sender sends for
a while, shuts its side down, and the receiver reads to the end before it closes: every
subflow finishes with FIN handshakes, within a few round trips.

Run as a script in a network namespace (standard library only, Linux >= 5.16 for
TCP_CONGESTION on an MPTCP socket):

    python3 mptcp_bulk.py recv PORT                    # one connection, read to EOF, print bytes
    python3 mptcp_bulk.py recv-tcp PORT                # the same, a server without MPTCP
    python3 mptcp_bulk.py send ADDR PORT CC SECONDS    # print bytes sent
    python3 mptcp_bulk.py send-tcp ADDR PORT CC SECONDS   # the same over plain TCP
"""
from __future__ import annotations

import socket
import sys
import time

IPPROTO_MPTCP = getattr(socket, "IPPROTO_MPTCP", 262)
CHUNK = b"\0" * 65536


def recv(port: int, proto: int = IPPROTO_MPTCP) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM, proto) as ls:
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("0.0.0.0", port))
        ls.listen(1)
        print("listening", flush=True)
        conn, _ = ls.accept()
        total = 0
        with conn:
            while True:
                data = conn.recv(1 << 20)
                if not data:
                    break
                total += len(data)
        return total


def send(addr: str, port: int, cc: str, seconds: float, proto: int = IPPROTO_MPTCP) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM, proto) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
        s.connect((addr, port))
        total, end = 0, time.monotonic() + seconds
        while time.monotonic() < end:
            total += s.send(CHUNK)
        s.shutdown(socket.SHUT_WR)
        while s.recv(65536):
            pass
        return total


if __name__ == "__main__":
    verb, *args = sys.argv[1:]
    if verb in ("send", "send-tcp"):
        n = send(args[0], int(args[1]), args[2], float(args[3]), IPPROTO_MPTCP if verb == "send" else 0)
    else:
        n = recv(int(args[0]), IPPROTO_MPTCP if verb == "recv" else 0)
    print(n, flush=True)
