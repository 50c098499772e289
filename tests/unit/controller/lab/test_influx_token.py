"""The managed InfluxDB's token file (controller/lab/influxd.py), on a real influxd (the one setup.sh
builds into the state dir, started here in a temporary directory): the token is only ever created,
never written over a file (issue 23 audit: write_private truncated whatever was at the inventory's
`token.file`, the auditor's sshd_config replaced by a token). An existing token line is the token;
anything else is refused with one line naming the file, the file left byte for byte and the server
not onboarded."""
from __future__ import annotations

import os
import signal
import socket
import stat

import pytest

from controller.errors import LabError, UnsafePath
from controller.lab.influxd import InfluxServer, influxd_binary

SSHD_CONFIG = (b"\n# This is the sshd server system-wide configuration file.  See\n"
               b"# sshd_config(5) for more information.\n\nInclude /etc/ssh/sshd_config.d/*.conf\n")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(tmp_path):
    assert influxd_binary().exists(), f"{influxd_binary()} missing: scripts/setup.sh builds it"
    secrets = tmp_path / "secrets"
    secrets.mkdir(mode=0o700)
    srv = InfluxServer(f"http://127.0.0.1:{_free_port()}", "ctl", "telemetry", tmp_path / "data", secrets / "token")
    proc = srv.start()
    try:
        yield srv
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def _snapshot(path):
    st = os.lstat(path)
    return path.read_bytes(), st.st_ino, st.st_mtime_ns, stat.S_IMODE(st.st_mode)


def test_token_file_created_once_and_reused(server):
    token = server.setup()
    st = os.lstat(server.token_file)
    assert server.token_file.read_text() == token + "\n" and stat.S_IMODE(st.st_mode) == 0o600
    assert server.setup() == token                      # already set up: the file's token, which works
    assert server._request("GET", "/api/v2/setup")["allowed"] is False


def test_a_file_that_is_not_a_token_is_never_replaced(server):
    f = server.token_file
    f.write_bytes(SSHD_CONFIG)
    f.chmod(0o600)
    before = _snapshot(f)
    with pytest.raises(LabError) as exc:
        server.setup()
    msg = str(exc.value)
    assert str(f) in msg and "is not a token" in msg and "\n" not in msg
    assert _snapshot(f) == before                        # byte for byte, same inode, same time
    assert server._request("GET", "/api/v2/setup")["allowed"] is True   # the server was not onboarded


def test_an_existing_token_line_is_the_token(server):
    server.token_file.write_text("my-own-token_0123456789\n")
    server.token_file.chmod(0o600)
    assert server.setup() == "my-own-token_0123456789"
    server.ensure_bucket("my-own-token_0123456789")      # the server knows it: onboarded with it
    assert server.token_file.read_text() == "my-own-token_0123456789\n"


def test_a_symlink_at_the_token_path_is_not_followed(server, tmp_path):
    target = tmp_path / "sshd_config"
    target.write_bytes(SSHD_CONFIG)
    server.token_file.symlink_to(target)
    with pytest.raises((LabError, UnsafePath)):
        server.setup()
    assert target.read_bytes() == SSHD_CONFIG and server.token_file.is_symlink()
