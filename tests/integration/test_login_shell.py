"""ctl refuses, at connect and with one line, an account whose login shell is not a POSIX shell
(a FreeBSD account with tcsh would mis-read ctl's quoted command lines).

We have no tcsh account: the remote host is a TEST DOUBLE, a real SSH server (asyncssh) on
loopback whose "login shell" runs each command line with `python3 -c`, the way a non-POSIX
shell would receive it. A second server runs them with /bin/sh and is accepted."""
from __future__ import annotations

import asyncio
import subprocess

import asyncssh
import pytest

from controller.commands import Command
from controller.errors import SSHError
from controller.inventory import SSH
from controller.ssh import CommandLog, HostTarget, SSHSession

pytestmark = pytest.mark.integration


class _Server(asyncssh.SSHServer):
    def begin_auth(self, username: str) -> bool:
        return True


def _handler(shell: list[str]):
    async def handle(process: asyncssh.SSHServerProcess) -> None:
        r = await asyncio.to_thread(subprocess.run, [*shell, process.command or ""], capture_output=True, text=True)
        process.stdout.write(r.stdout)
        process.stderr.write(r.stderr)
        process.exit(r.returncode)
    return handle


async def _connect_through(shell: list[str], tmp_path) -> SSHSession:
    host_key = asyncssh.generate_private_key("ssh-ed25519")
    client_key = asyncssh.generate_private_key("ssh-ed25519")
    (tmp_path / "id").write_bytes(client_key.export_private_key())
    (tmp_path / "id").chmod(0o600)
    (tmp_path / "authorized").write_bytes(client_key.export_public_key())
    server = await asyncssh.create_server(_Server, "127.0.0.1", 0, server_host_keys=[host_key],
                                          authorized_client_keys=str(tmp_path / "authorized"),
                                          process_factory=_handler(shell))
    port = server.sockets[0].getsockname()[1]
    (tmp_path / "known_hosts").write_text(f"[127.0.0.1]:{port} " + host_key.export_public_key().decode())
    ssh = SSH(user="ctl", port=port, key_file=tmp_path / "id", known_hosts=tmp_path / "known_hosts",
              connect_timeout=5)
    session = SSHSession(HostTarget("dn9", "127.0.0.1", ssh), CommandLog(None))
    session._test_server = server  # kept alive for the test
    return session


def test_a_non_posix_login_shell_is_refused_at_connect(tmp_path):
    async def go():
        s = await _connect_through(["/usr/bin/python3", "-c"], tmp_path)
        try:
            with pytest.raises(SSHError) as ei:
                await s.connect()
            return ei.value
        finally:
            s._test_server.close()
    err = asyncio.run(go())
    text = err.one_line()
    assert text.startswith("dn9: ctl's login shell on 127.0.0.1 is not a POSIX shell") and "\n" not in text


def test_a_posix_shell_is_accepted_and_commands_run(tmp_path):
    async def go():
        s = await _connect_through(["/bin/sh", "-c"], tmp_path)
        try:
            await s.connect()
            r = await s.run(Command(("printf", "%s", "a b\n'c'")))
            await s.close()
            return r
        finally:
            s._test_server.close()
    r = asyncio.run(go())
    assert r.ok and r.stdout == "a b\n'c'"
