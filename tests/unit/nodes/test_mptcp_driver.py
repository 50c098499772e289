"""nodes.mptcp: the Linux MPTCP endpoint driver (read, check, plan, verify, restore).

Endpoint and limits outputs are the REAL captures in tests/fixtures/recorded/generated/
(ip_mptcp_config.txt, ip_mptcp_endpoint_variants.txt; 04_linux_mptcp.md explains them:
iproute2 6.1 prints JSON for `ip -j mptcp endpoint show` but TEXT for limits even with -j).
No `sysctl` output was recorded for these keys, so it is written here in sysctl's own
`key = value` form (the values are Debian 12 defaults plus bbr, which the recorded host ran).

Contract (module doc): read the host's state; plan the commands that reach the desired
state (pure, only what differs); verify field by field; restore exactly what was there:
limits, the endpoint list with ids and flags, every sysctl it changed.
"""
from __future__ import annotations

import pytest

from controller.commands import CommandResult
from controller.errors import ParameterError
from tests.support.fixture_blocks import RECORDED_GENERATED, command_output
from nodes.mptcp import EndpointConfig, MptcpEndpoint, MptcpEndpointDriver, parse_endpoints, parse_limits

CONFIG = (RECORDED_GENERATED / "ip_mptcp_config.txt").read_text()
VARIANTS = (RECORDED_GENERATED / "ip_mptcp_endpoint_variants.txt").read_text()

CLIENT_EPS_JSON = command_output(CONFIG, "ip -n fxr_c -j mptcp endpoint show")   # 10.2.2.1 id 1 subflow dev c2
SERVER_EPS_TEXT = command_output(CONFIG, "ip -n fxr_s mptcp endpoint show")      # 10.2.2.2 id 1 signal dev s2
LIMITS_2_2 = command_output(CONFIG, "ip -n fxr_c -j mptcp limits show")          # text, even with -j
VARIANT_EPS_JSON = command_output(VARIANTS, "ip -j mptcp endpoint show")          # ids 1, 7, 8
VARIANT_EPS_TEXT = command_output(VARIANTS, "ip mptcp endpoint show", 0)
FRESH_LIMITS = command_output(VARIANTS, "ip mptcp limits show", 0)               # a fresh netns: 0 / 2
LIMITS_8_8 = command_output(VARIANTS, "ip mptcp limits show", 1)
EMPTY_EPS = ""                                                                  # after `endpoint flush`

CC_AVAILABLE = "reno cubic bbr"


def sysctl_text(enabled: str = "1", allowed: str = "reno cubic", cc: str = "cubic", **extra: str) -> str:
    lines = [f"net.mptcp.enabled = {enabled}",
             f"net.ipv4.tcp_available_congestion_control = {CC_AVAILABLE}",
             f"net.ipv4.tcp_allowed_congestion_control = {allowed}",
             f"net.ipv4.tcp_congestion_control = {cc}"]
    lines += [f"{k.replace('__', '.')} = {v}" for k, v in extra.items()]
    return "\n".join(lines) + "\n"


def state(drv: MptcpEndpointDriver, eps: str, limits: str, sysctls: str):
    outs = [eps, limits, sysctls]
    return drv.parse_state([CommandResult(drv.host, c.argv, 0, o, "") for c, o in zip(drv.read_commands(), outs,
                                                                                         strict=True)])


@pytest.fixture
def drv():
    return MptcpEndpointDriver("b1")


def argvs(cmds):
    return [c.argv for c in cmds]


# ---- parsing ------------------------------------------------------------------------------


def test_fixture_extraction_sanity():
    assert CLIENT_EPS_JSON.strip() == '[{"address":"10.2.2.1","id":1,"subflow":true,"dev":"c2"}]'
    assert FRESH_LIMITS.strip() == "add_addr_accepted 0 subflows 2"
    assert LIMITS_8_8.strip() == "add_addr_accepted 8 subflows 8"


def test_parse_endpoints_json_and_text_agree():
    expected = [MptcpEndpoint("192.0.2.10", "xa", ("signal",), 1),
                MptcpEndpoint("198.51.100.10", "xb", ("subflow", "backup"), 7),
                MptcpEndpoint("2001:db8::10", "xa", ("subflow", "fullmesh"), 8)]
    assert parse_endpoints(VARIANT_EPS_JSON) == expected
    assert parse_endpoints(VARIANT_EPS_TEXT) == expected
    assert parse_endpoints(SERVER_EPS_TEXT) == [MptcpEndpoint("10.2.2.2", "s2", ("signal",), 1)]
    assert parse_endpoints(EMPTY_EPS) == []


def test_parse_limits_text_even_with_j():
    assert parse_limits(LIMITS_2_2) == (2, 2)
    assert parse_limits(FRESH_LIMITS) == (2, 0)       # (subflows, add_addr_accepted)


def test_parse_state(drv):
    st = state(drv, CLIENT_EPS_JSON, LIMITS_2_2, sysctl_text())
    assert st.mptcp_enabled is True
    assert (st.subflows, st.add_addr_accepted) == (2, 2)
    assert st.endpoints == [MptcpEndpoint("10.2.2.1", "c2", ("subflow",), 1)]
    assert st.cc_available == ["reno", "cubic", "bbr"]
    assert st.cc_allowed == ["reno", "cubic"]
    assert st.sysctls["net.ipv4.tcp_congestion_control"] == "cubic"
    assert st.raw["ip -j mptcp endpoint show"] == CLIENT_EPS_JSON
    assert state(drv, EMPTY_EPS, FRESH_LIMITS, sysctl_text(enabled="0")).mptcp_enabled is False


def test_read_commands_are_read_only(drv):
    cmds = drv.read_commands()
    assert [c.argv[:4] for c in cmds] == [("ip", "-j", "mptcp", "endpoint"), ("ip", "mptcp", "limits", "show"),
                                           ("sysctl", "net.mptcp.enabled", "net.ipv4.tcp_available_congestion_control",
                                            "net.ipv4.tcp_allowed_congestion_control")]
    assert not any(c.mutates for c in cmds)
    extra = MptcpEndpointDriver("b1", ["net.ipv4.tcp_rmem", "net.mptcp.enabled"]).read_commands()[2].argv
    assert extra.count("net.mptcp.enabled") == 1 and extra[-1] == "net.ipv4.tcp_rmem"


# ---- check --------------------------------------------------------------------------------


def test_congestion_controls_are_the_congestion_drivers_to_check(drv):
    """nodes.congestion.driver checks and loads them; this driver leaves them alone."""
    st = state(drv, EMPTY_EPS, FRESH_LIMITS, sysctl_text())
    drv.check(EndpointConfig(congestion_controls=frozenset({"mcubic", "no-such-cc"})), st)

def test_check_refuses_unknown_sysctl_and_limits_above_8(drv):
    st = state(drv, EMPTY_EPS, FRESH_LIMITS, sysctl_text())
    with pytest.raises(ParameterError, match="sysctl net.ipv4.tcp_nonexistent does not exist"):
        drv.check(EndpointConfig(sysctls={"net.ipv4.tcp_nonexistent": "1"}), st)
    with pytest.raises(ParameterError, match="above the kernel maximum of 8"):
        drv.check(EndpointConfig(subflows=9), st)
    drv.check(EndpointConfig(subflows=8, add_addr_accepted=8), st)


# ---- plan -------------------------------------------------------------------------------


SERVER_WANT = EndpointConfig(subflows=2, add_addr_accepted=2,
                             endpoints=(MptcpEndpoint("10.2.0.21", "p2", ("signal",)),))


def test_plan_from_a_fresh_host(drv):
    st = state(drv, EMPTY_EPS, FRESH_LIMITS, sysctl_text(enabled="0"))
    assert argvs(drv.plan(SERVER_WANT, st)) == [
        ("sysctl", "-w", "net.mptcp.enabled=1"),
        ("ip", "mptcp", "limits", "set", "subflows", "2", "add_addr_accepted", "2"),
        ("ip", "mptcp", "endpoint", "add", "10.2.0.21", "dev", "p2", "signal")]   # nothing to flush
    assert all(c.mutates for c in drv.plan(SERVER_WANT, st))


def test_plan_flushes_then_adds_when_endpoints_differ(drv):
    st = state(drv, VARIANT_EPS_JSON, LIMITS_2_2, sysctl_text())
    assert argvs(drv.plan(SERVER_WANT, st)) == [
        ("ip", "mptcp", "endpoint", "flush"),
        ("ip", "mptcp", "endpoint", "add", "10.2.0.21", "dev", "p2", "signal")]


def test_plan_nothing_when_already_there(drv):
    # same endpoint, other kernel-assigned id: not a difference
    st = state(drv, '[{"address":"10.2.0.21","id":5,"signal":true,"dev":"p2"}]', LIMITS_2_2, sysctl_text())
    assert drv.plan(SERVER_WANT, st) == []


def test_plan_sets_limits_only_when_they_differ(drv):
    st = state(drv, EMPTY_EPS, LIMITS_8_8, sysctl_text())
    assert argvs(drv.plan(EndpointConfig(subflows=2, add_addr_accepted=2), st)) == [
        ("ip", "mptcp", "limits", "set", "subflows", "2", "add_addr_accepted", "2")]
    st = state(drv, EMPTY_EPS, LIMITS_2_2, sysctl_text())
    assert drv.plan(EndpointConfig(subflows=2, add_addr_accepted=2), st) == []


def test_plan_removes_endpoints_the_config_does_not_want(drv):
    st = state(drv, CLIENT_EPS_JSON, LIMITS_2_2, sysctl_text())
    assert argvs(drv.plan(EndpointConfig(), st)) == [("ip", "mptcp", "endpoint", "flush")]


def test_plan_writes_only_differing_sysctls(drv):
    st = state(drv, EMPTY_EPS, LIMITS_2_2, sysctl_text(allowed="reno cubic", cc="cubic"))
    want = EndpointConfig(sysctls={"net.ipv4.tcp_congestion_control": "cubic",
                                   "net.ipv4.tcp_allowed_congestion_control": "reno cubic bbr"})
    assert argvs(drv.plan(want, st)) == [
        ("sysctl", "-w", "net.ipv4.tcp_allowed_congestion_control=reno cubic bbr")]


def test_plan_for_a_plain_tcp_host_leaves_mptcp_alone(drv):
    st = state(drv, VARIANT_EPS_JSON, LIMITS_8_8, sysctl_text(enabled="0"))
    assert drv.plan(EndpointConfig(mptcp=False), st) == []
    cmds = drv.plan(EndpointConfig(mptcp=False, sysctls={"net.ipv4.tcp_congestion_control": "bbr"}), st)
    assert argvs(cmds) == [("sysctl", "-w", "net.ipv4.tcp_congestion_control=bbr")]


# ---- verify ---------------------------------------------------------------------------------


def test_verify_equal(drv):
    st = state(drv, '[{"address":"10.2.0.21","id":1,"signal":true,"dev":"p2"}]', LIMITS_2_2, sysctl_text())
    assert drv.verify(SERVER_WANT, st) == []


def test_verify_reports_each_difference(drv):
    st = state(drv, CLIENT_EPS_JSON, FRESH_LIMITS, sysctl_text(enabled="0"))
    diffs = drv.verify(SERVER_WANT, st)
    assert len(diffs) == 3
    assert diffs[0] == "sysctl net.mptcp.enabled expected 1, found 0"
    assert diffs[1] == "limits expected subflows 2 add_addr_accepted 2, found 2 / 0"
    assert diffs[2].startswith("endpoints expected") and "10.2.0.21" in diffs[2] and "10.2.2.1" in diffs[2]


def test_verify_plain_tcp_host_ignores_mptcp(drv):
    st = state(drv, VARIANT_EPS_JSON, FRESH_LIMITS, sysctl_text(enabled="0"))
    assert drv.verify(EndpointConfig(mptcp=False), st) == []


# ---- restore ------------------------------------------------------------------------------


def test_plan_restore_brings_back_endpoints_with_ids_and_flags_limits_and_sysctls(drv):
    before = state(drv, VARIANT_EPS_JSON, FRESH_LIMITS, sysctl_text(enabled="0", allowed="reno cubic"))
    now = state(drv, '[{"address":"10.2.0.21","id":1,"signal":true,"dev":"p2"}]', LIMITS_2_2,
                sysctl_text(enabled="1", allowed="reno cubic bbr"))
    assert argvs(drv.plan_restore(before, now)) == [
        ("ip", "mptcp", "endpoint", "flush"),
        ("ip", "mptcp", "endpoint", "add", "192.0.2.10", "dev", "xa", "id", "1", "signal"),
        ("ip", "mptcp", "endpoint", "add", "198.51.100.10", "dev", "xb", "id", "7", "backup", "subflow"),
        ("ip", "mptcp", "endpoint", "add", "2001:db8::10", "dev", "xa", "id", "8", "fullmesh", "subflow"),
        ("ip", "mptcp", "limits", "set", "subflows", "2", "add_addr_accepted", "0"),
        # the allowed congestion controls are not this driver's (nodes.congestion.driver owns what it adds)
        ("sysctl", "-w", "net.mptcp.enabled=0")]
    assert all(c.mutates for c in drv.plan_restore(before, now))


def test_plan_restore_to_no_endpoints(drv):
    before = state(drv, EMPTY_EPS, LIMITS_2_2, sysctl_text())
    now = state(drv, SERVER_EPS_TEXT, LIMITS_2_2, sysctl_text())
    assert argvs(drv.plan_restore(before, now)) == [("ip", "mptcp", "endpoint", "flush")]


def test_plan_restore_nothing_when_unchanged(drv):
    before = state(drv, VARIANT_EPS_JSON, LIMITS_2_2, sysctl_text())
    now = state(drv, VARIANT_EPS_TEXT, LIMITS_2_2, sysctl_text())
    assert drv.plan_restore(before, now) == []


def test_plan_restore_never_writes_the_read_only_available_list(drv):
    before = state(drv, EMPTY_EPS, LIMITS_2_2, sysctl_text())
    now_text = sysctl_text().replace(CC_AVAILABLE, "reno cubic bbr mcubic")
    now = state(drv, EMPTY_EPS, LIMITS_2_2, now_text)
    assert drv.plan_restore(before, now) == []


def test_plan_restore_includes_extra_sysctls():
    drv = MptcpEndpointDriver("a1", ["net.ipv4.tcp_rmem"])
    before = state(drv, EMPTY_EPS, LIMITS_2_2, sysctl_text(net__ipv4__tcp_rmem="4096\t131072\t6291456"))
    now = state(drv, EMPTY_EPS, LIMITS_2_2, sysctl_text(net__ipv4__tcp_rmem="4096 87380 33554432"))
    assert before.sysctls["net.ipv4.tcp_rmem"] == "4096 131072 6291456"     # inner spacing normalised
    assert argvs(drv.plan_restore(before, now)) == [("sysctl", "-w", "net.ipv4.tcp_rmem=4096 131072 6291456")]


def test_restored_equal(drv):
    before = state(drv, VARIANT_EPS_JSON, FRESH_LIMITS, sysctl_text(enabled="0"))
    assert drv.restored_equal(before, state(drv, VARIANT_EPS_TEXT, FRESH_LIMITS, sysctl_text(enabled="0"))) == []
    bad = state(drv, CLIENT_EPS_JSON, LIMITS_2_2, sysctl_text(enabled="1"))
    diffs = drv.restored_equal(before, bad)
    assert "endpoints not restored" in diffs
    assert "limits not restored" in diffs
    assert "sysctl net.mptcp.enabled not restored (0 -> 1)" in diffs


def test_restored_equal_checks_endpoint_ids(drv):
    # The module promises the endpoint list comes back "with ids and flags"; the proof must
    # notice a restore that kept addresses and flags but not the ids.
    before = state(drv, VARIANT_EPS_JSON, FRESH_LIMITS, sysctl_text())
    renumbered = VARIANT_EPS_JSON.replace('"id":7', '"id":2').replace('"id":8', '"id":3')
    after = state(drv, renumbered, FRESH_LIMITS, sysctl_text())
    assert drv.restored_equal(before, after) != []


def test_state_from_record_round_trip(drv):
    st = state(drv, VARIANT_EPS_JSON, FRESH_LIMITS, sysctl_text())
    again = drv.state_from_record({"raw": st.raw})
    assert again.endpoints == st.endpoints and again.sysctls == st.sysctls
    assert (again.subflows, again.add_addr_accepted) == (2, 0)
    with pytest.raises(ValueError, match="no output of `ip -j mptcp endpoint show`"):
        drv.state_from_record({"raw": {}})


def test_optional_sysctls_are_skipped_where_the_kernel_lacks_them(drv):
    from nodes.mptcp import EndpointConfig
    want = EndpointConfig(sysctls={"net.mptcp.blackhole_timeout": "0"},
                          optional_sysctls=frozenset({"net.mptcp.blackhole_timeout"}))
    st = state(drv, CLIENT_EPS_JSON, LIMITS_2_2, sysctl_text(enabled="1"))  # an older kernel: no such key
    drv.check(want, st)                                                     # not an error
    assert not any("blackhole" in " ".join(c.argv) for c in drv.plan(want, st))
    assert not any("sysctl" in d for d in drv.verify(want, st))
    required = EndpointConfig(sysctls={"net.mptcp.blackhole_timeout": "0"})
    with pytest.raises(ParameterError, match="net.mptcp.blackhole_timeout does not exist"):
        drv.check(required, st)
