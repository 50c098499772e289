"""`ctl run` opens the connection to the rack's lease host while it imports the scenario and makes
the plan (issue 28: start-up); when it then refuses its input, HostLease.abandon() gives the
connection up without waiting for the host: here a host that accepts TCP and never says a word of
SSH (the connection would wait up to its connect timeout, 600 s), on this machine's loopback."""
from __future__ import annotations

import socket
import threading
from dataclasses import replace

import asyncssh

from controller.inventory import SSH
from controller.rack.lease import HostLease
from controller.ssh import HostTarget


def _lease_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("lease-") and t.is_alive()]


def test_a_connection_still_opening_is_given_up_and_closed(invs, tmp_path):
    silent = socket.create_server(("127.0.0.1", 0))
    silent.settimeout(60)
    key = tmp_path / "id_ed25519"
    asyncssh.generate_private_key("ssh-ed25519").write_private_key(str(key))
    (tmp_path / "known_hosts").write_text("")
    lease = HostLease(invs["virtual"], "abandon test")
    target = HostTarget("lease", "127.0.0.1", SSH(user="root", port=silent.getsockname()[1], key_file=key,
                                                  known_hosts=tmp_path / "known_hosts", connect_timeout=600))
    lease.place = replace(lease.place, target=target)
    before = _lease_threads()
    try:
        lease.preconnect()
        conn, _ = silent.accept()           # the connection is open and waits for the banner
        conn.settimeout(60)
        done = threading.Thread(target=lease.abandon, daemon=True)
        done.start()
        done.join(60)                       # a guard against a hang, not a speed limit
        assert not done.is_alive(), "abandon() waited for the host"
        assert lease._loop is None and lease._early is None
        assert _lease_threads() == before
        while conn.recv(4096):              # our version banner, then the end: our side closed it
            pass
    finally:
        silent.close()


def test_abandon_without_an_early_connection_is_release(invs):
    lease = HostLease(invs["virtual"], "abandon test")
    lease.abandon()                         # nothing started: nothing to do
    assert lease._loop is None and lease._early is None
