"""Why a host could not be reached, in words (issue 26: `not reached: cannot connect to host
192.0.2.11:22:` ended at the colon, the empty text of asyncio's timeout).

Contract (controller/ssh.py `_reason`): every SSH error names what happened -- "timed out after
N s", "connection refused", a resolver's answer, an SSH error's reason or kind -- never an empty
text. The connection cases are real: a real TCP listener on the loopback that never speaks SSH
(the timeout), a port nobody listens on (refused), asyncssh's own errors.
"""
from __future__ import annotations

import asyncio
import errno
import socket
from pathlib import Path

import asyncssh
import pytest

from controller.errors import SSHError
from controller.inventory import SSH
from controller.ssh import CommandLog, HostTarget, SSHSession, _reason


def _session(tmp_path: Path, port: int, timeout: float) -> SSHSession:
    key = tmp_path / "id"
    asyncssh.generate_private_key("ssh-ed25519").write_private_key(str(key))
    known = tmp_path / "known_hosts"
    known.write_text("")
    ssh = SSH(user="root", port=port, key_file=key, known_hosts=known, connect_timeout=timeout,
              explicit=frozenset({"user", "port", "key_file", "connect_timeout"}))
    return SSHSession(HostTarget("h1", "127.0.0.1", ssh), CommandLog(None))


def _connect_error(session: SSHSession) -> str:
    with pytest.raises(SSHError) as exc:
        asyncio.run(session.connect())
    return exc.value.one_line()


def test_a_host_that_never_answers_says_it_timed_out_and_after_how_long(tmp_path):
    # a real listener whose kernel completes the TCP handshake but which never sends an SSH banner
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        port = listener.getsockname()[1]
        said = _connect_error(_session(tmp_path, port, 0.5))
    assert said.endswith(f"cannot connect to host 127.0.0.1:{port}: timed out after 0.5 s"), said


def test_a_port_nobody_listens_on_says_connection_refused(tmp_path):
    with socket.socket() as s:          # a port that was free a moment ago, closed again
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    said = _connect_error(_session(tmp_path, port, 5))
    assert said.endswith(f"cannot connect to host 127.0.0.1:{port}: connection refused"), said


async def _refused() -> BaseException:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    try:
        await asyncio.open_connection("127.0.0.1", port)
    except OSError as exc:
        return exc
    raise AssertionError("connected")


async def _timeout() -> BaseException:
    try:
        await asyncio.wait_for(asyncio.sleep(1), 0.01)
    except asyncio.TimeoutError as exc:
        return exc
    raise AssertionError("no timeout")


def test_every_kind_of_error_has_words():
    timeout = asyncio.run(_timeout())
    assert str(timeout) == ""                                # what made the message end at its colon
    assert _reason(timeout, 10) == "timed out after 10 s" and _reason(timeout) == "timed out"
    refused = asyncio.run(_refused())
    assert "Connect call failed" in str(refused)             # asyncio's text, not the errno's meaning
    assert _reason(refused) == "connection refused"
    assert _reason(OSError(errno.EHOSTUNREACH, "x")) == "no route to host"
    assert _reason(OSError(errno.ENETUNREACH, "x")) == "network is unreachable"
    assert _reason(TimeoutError(errno.ETIMEDOUT, "Connection timed out")) == "connection timed out"
    assert _reason(socket.gaierror(socket.EAI_NONAME, "Name or service not known")) == \
        "cannot resolve the address: Name or service not known"
    assert _reason(asyncssh.ConnectionLost("Connection lost")) == "Connection lost"
    assert _reason(asyncssh.ProtocolError("")) == f"SSH ProtocolError (code {asyncssh.DISC_PROTOCOL_ERROR})"
    assert _reason(RuntimeError()) == "RuntimeError"
    for exc in (timeout, refused, OSError(), asyncssh.ConnectionLost(""), ValueError("")):
        assert _reason(exc).strip(), exc


def test_a_lost_connection_says_why(tmp_path):
    """The reason a session keeps when its connection goes (the run and the campaign print it)."""
    s = _session(tmp_path, 22, 1)
    s.mark_lost(asyncio.TimeoutError())
    assert s.lost == "timed out"
    s.mark_lost(ConnectionResetError(errno.ECONNRESET, "Connection reset by peer"))
    assert s.lost == "connection reset by peer"
    s.mark_lost(asyncssh.ConnectionLost(""))
    assert s.lost == f"SSH ConnectionLost (code {asyncssh.DISC_CONNECTION_LOST})"
