"""controller.traffic.iperf3: iperf3 command builders (pure) and the MPTCP capability check.

Contract (module doc and tests/fixtures/recorded/03_iperf3_json.md): MPTCP uses iperf3's
native `-m` from 3.19 on, `mptcpize run` before (Debian 12 ships 3.12) on both ends;
servers listen on every address (an MPTCP server must accept joins on the addresses it
announces), clients bind their path's address; commands are argv tuples.
"""
from __future__ import annotations

import pytest

from controller.traffic.iperf3 import FlowSpec, client_argv, iperf3_supports_mptcp, server_argv
from tests.support.fixture_blocks import RECORDED_GENERATED


def spec(protocol="tcp", **kw) -> FlowSpec:
    base = dict(name="f", protocol=protocol, client="a1", server="b1", server_addr="10.1.0.21", port=5201,
                client_addr="10.1.0.11", duration_s=30)
    base.update(kw)
    return FlowSpec(**base)


def opt(argv: tuple[str, ...], flag: str) -> str | None:
    """The value after `flag`, None when absent (and it must appear at most once)."""
    assert argv.count(flag) <= 1, argv
    return argv[argv.index(flag) + 1] if flag in argv else None


# ---- version detection --------------------------------------------------------------------


@pytest.mark.parametrize("text, native", [
    ("iperf 3.12 (cJSON 1.7.15)", False),          # Debian 12 (the recorded host)
    ("iperf 3.18 (cJSON 1.7.15)", False),
    ("iperf 3.19 (cJSON 1.7.15)", True),           # -m/--mptcp added in 3.19
    ("iperf 3.19.1 (cJSON 1.7.15)", True),
    ("iperf 3.21 (cJSON 1.7.15)\nLinux host 6.18.44 #1 SMP x86_64\nOptional features available: ...", True),
    ("iperf 3.9", False),
    ("iperf 4.0", True),
    ("", False),
    ("iperf3: command not found", False),
])
def test_iperf3_supports_mptcp(text, native):
    assert iperf3_supports_mptcp(text) is native


def test_recorded_iperf3_version_is_not_native():
    import json
    version = json.loads((RECORDED_GENERATED / "iperf3_mptcp.client.json").read_text())["start"]["version"]
    assert version == "iperf 3.12"
    assert iperf3_supports_mptcp(version) is False


# ---- tcp ----------------------------------------------------------------------------------


def test_tcp_client():
    argv = client_argv(spec(cc="cubic"), native_mptcp=False)
    assert argv == ("iperf3", "-c", "10.1.0.21", "-p", "5201", "-J", "-i", "0.5", "--connect-timeout", "5000",
                    "-B", "10.1.0.11", "-t", "30", "-C", "cubic")
    assert client_argv(spec(cc="cubic"), native_mptcp=True) == argv     # -m only for MPTCP flows


def test_tcp_server():
    assert server_argv(spec(), native_mptcp=False) == ("iperf3", "-s", "-1", "-p", "5201", "-J", "-i", "0.5")


def test_client_without_bind_address_and_interval():
    argv = client_argv(spec(client_addr=None, interval_s=0.1, duration_s=2.5), native_mptcp=False)
    assert "-B" not in argv
    assert opt(argv, "-i") == "0.1" and opt(argv, "-t") == "2.5"


# ---- mptcp ------------------------------------------------------------------------------


def test_mptcp_via_mptcpize_on_both_ends():
    f = spec("mptcp", cc="cubic")
    c, s = client_argv(f, native_mptcp=False), server_argv(f, native_mptcp=False)
    assert c[:3] == ("mptcpize", "run", "iperf3")
    assert s[:3] == ("mptcpize", "run", "iperf3")
    assert c[3:] == client_argv(spec("tcp", cc="cubic"), native_mptcp=False)[1:]
    assert "-m" not in c and "-m" not in s


def test_mptcp_native_m_on_both_ends():
    f = spec("mptcp", cc="cubic")
    c, s = client_argv(f, native_mptcp=True), server_argv(f, native_mptcp=True)
    assert c[:2] == ("iperf3", "-m") and s[:2] == ("iperf3", "-m")
    assert "mptcpize" not in c and "mptcpize" not in s
    assert c[2:] == client_argv(spec("tcp", cc="cubic"), native_mptcp=True)[1:]


# ---- udp and options ----------------------------------------------------------------------


def test_udp_client():
    argv = client_argv(spec("udp", udp_rate_bps=5_000_000, cc="cubic"), native_mptcp=True)
    assert argv[0] == "iperf3" and "-m" not in argv
    assert "-u" in argv and opt(argv, "-b") == "5000000"
    assert "-C" not in argv                                  # no congestion control for UDP


def test_udp_default_rate():
    assert opt(client_argv(spec("udp"), native_mptcp=False), "-b") == "1000000"


def test_parallel_streams():
    assert opt(client_argv(spec(streams=4), native_mptcp=False), "-P") == "4"
    assert "-P" not in client_argv(spec(streams=1), native_mptcp=False)


def test_bytes_instead_of_duration():
    argv = client_argv(spec(bytes=10_000_000, duration_s=30), native_mptcp=False)
    assert opt(argv, "-n") == "10000000"
    assert "-t" not in argv


def test_socket_buffer_and_omit():
    argv = client_argv(spec(socket_buffer=262144, omit_s=2), native_mptcp=False)
    assert opt(argv, "-w") == "262144" and opt(argv, "-O") == "2"
    plain = client_argv(spec(), native_mptcp=False)
    assert "-w" not in plain and "-O" not in plain
    assert opt(client_argv(spec(omit_s=0.5), native_mptcp=False), "-O") == "0.5"


def test_congestion_control():
    assert opt(client_argv(spec(cc="bbr"), native_mptcp=False), "-C") == "bbr"
    assert "-C" not in client_argv(spec(cc=None), native_mptcp=False)


# ---- servers never bind an address ---------------------------------------------------------


@pytest.mark.parametrize("protocol", ["tcp", "mptcp", "udp"])
@pytest.mark.parametrize("native", [False, True])
def test_servers_never_bind_an_address(protocol, native):
    argv = server_argv(spec(protocol, streams=3, bytes=10**6, socket_buffer=1 << 20, cc="cubic"), native)
    assert "-B" not in argv and "--bind" not in argv
    assert "10.1.0.21" not in argv and "10.1.0.11" not in argv
    assert opt(argv, "-p") == "5201" and "-1" in argv and "-J" in argv


@pytest.mark.parametrize("protocol", ["tcp", "mptcp", "udp"])
def test_argv_are_tuples_of_single_tokens(protocol):
    f = spec(protocol, cc="cubic", streams=2, socket_buffer=4096, omit_s=1, udp_rate_bps=10**6)
    for argv in (client_argv(f, False), client_argv(f, True), server_argv(f, False), server_argv(f, True)):
        assert isinstance(argv, tuple)
        assert all(isinstance(a, str) and a and not any(ch.isspace() for ch in a) for a in argv)


def test_flow_spec_to_json():
    d = spec("mptcp", cc="cubic", link=None).to_json()
    assert d["protocol"] == "mptcp" and d["server_addr"] == "10.1.0.21" and d["port"] == 5201
