"""ip mptcp endpoint / limits / monitor parser, on the recorded iproute2 6.1 output."""
from __future__ import annotations

import json

import pytest

from controller.errors import ParseError
from controller.parsers import ip_mptcp
from controller.parsers import parse as registry_parse
from tests.support.fixture_blocks import command_output, fenced_block, fenced_blocks, read_recorded

MD = "04_linux_mptcp.md"
CONFIG = read_recorded("generated/ip_mptcp_config.txt")
VARIANTS = read_recorded("generated/ip_mptcp_endpoint_variants.txt")
MON_CLIENT = read_recorded("generated/ip_mptcp_monitor.client.txt")
MON_SERVER = read_recorded("generated/ip_mptcp_monitor.server.txt")

THREE = [
    ip_mptcp.Endpoint(address="192.0.2.10", id=1, port=None, signal=True, subflow=False, backup=False,
                      fullmesh=False, implicit=False, dev="xa", rawflags=None),
    ip_mptcp.Endpoint(address="198.51.100.10", id=7, port=None, signal=False, subflow=True, backup=True,
                      fullmesh=False, implicit=False, dev="xb", rawflags=None),
    ip_mptcp.Endpoint(address="2001:db8::10", id=8, port=None, signal=False, subflow=True, backup=False,
                      fullmesh=True, implicit=False, dev="xa", rawflags=None),
]


# ---------------------------------------------------------------------------- endpoints and limits


def test_lab_endpoints_text_and_json():
    client = ip_mptcp.parse_endpoints(command_output(CONFIG, "ip -n fxr_c mptcp endpoint show"))
    assert client == [ip_mptcp.Endpoint(address="10.2.2.1", id=1, port=None, signal=False, subflow=True,
                                        backup=False, fullmesh=False, implicit=False, dev="c2", rawflags=None)]
    server = ip_mptcp.parse_endpoints(command_output(CONFIG, "ip -n fxr_s mptcp endpoint show"))
    assert [(e.address, e.id, e.signal, e.subflow, e.dev) for e in server] == [("10.2.2.2", 1, True, False, "s2")]
    assert ip_mptcp.parse_endpoints(command_output(CONFIG, "ip -n fxr_c -j mptcp endpoint show")) == client


def test_endpoint_flag_variants_text_json_and_pretty_json_agree():
    text = ip_mptcp.parse_endpoints(command_output(VARIANTS, "ip mptcp endpoint show", 0))
    assert text == THREE
    assert ip_mptcp.parse_endpoints(command_output(VARIANTS, "ip -j mptcp endpoint show")) == THREE
    assert ip_mptcp.parse_endpoints(command_output(VARIANTS, "ip -j -p mptcp endpoint show")) == THREE
    assert ip_mptcp.parse_endpoints(command_output(VARIANTS, "ip mptcp endpoint show id 7")) == [THREE[1]]


def test_md_blocks_match_the_raw_captures():
    md_config, = fenced_blocks(MD, "`ip mptcp endpoint show` / `ip mptcp limits show`")
    md_variants = fenced_block(MD, "Endpoint flag variants")
    assert ip_mptcp.parse_endpoints(command_output(md_config, "ip -n fxr_c -j mptcp endpoint show")) == \
        ip_mptcp.parse_endpoints(command_output(CONFIG, "ip -n fxr_c mptcp endpoint show"))
    assert ip_mptcp.parse_endpoints(command_output(md_variants, "ip -j -p mptcp endpoint show")) == THREE
    assert ip_mptcp.parse_monitor(fenced_block(MD, "client netns (2 MPTCP")) == ip_mptcp.parse_monitor(MON_CLIENT)
    assert ip_mptcp.parse_monitor(fenced_block(MD, "server netns (IPv4-mapped")) == \
        ip_mptcp.parse_monitor(MON_SERVER)


def test_limits_text_and_the_6_1_json_flag_that_prints_text():
    assert ip_mptcp.parse_limits(command_output(CONFIG, "ip -n fxr_c mptcp limits show")) == \
        ip_mptcp.Limits(add_addr_accepted=2, subflows=2)
    # iproute2 6.1: `ip -j mptcp limits show` prints the same text, not JSON
    as_json_flag = command_output(CONFIG, "ip -n fxr_c -j mptcp limits show")
    assert not as_json_flag.lstrip().startswith("{")
    assert ip_mptcp.parse_limits(as_json_flag) == ip_mptcp.Limits(2, 2)
    assert ip_mptcp.parse_limits(command_output(VARIANTS, "ip mptcp limits show", 0)) == ip_mptcp.Limits(0, 2)
    assert ip_mptcp.parse_limits(command_output(VARIANTS, "ip mptcp limits show", 1)) == ip_mptcp.Limits(8, 8)
    # what a newer iproute2 prints with -j
    assert ip_mptcp.parse_limits('{"add_addr_accepted":2,"subflows":8}\n') == ip_mptcp.Limits(2, 8)


def test_endpoint_variants_not_in_the_recordings():
    (e,) = ip_mptcp.parse_endpoints("203.0.113.1 port 5555 id 3 signal implicit rawflags 40 dev xa newflag \n")
    assert (e.port, e.id, e.signal, e.implicit, e.rawflags, e.dev, e.extra) == (
        5555, 3, True, True, 0x40, "xa", {"newflag": True})
    (j,) = ip_mptcp.parse_endpoints('[{"address":"203.0.113.1","port":5555,"id":3,"signal":true,"rawflags":"40"}]')
    assert (j.port, j.rawflags, j.signal, j.subflow) == (5555, 0x40, True, False)
    assert ip_mptcp.parse_endpoints("") == [] and ip_mptcp.parse_endpoints("[]") == []


# ---------------------------------------------------------------------------- monitor


def test_monitor_client_events_typed():
    events = ip_mptcp.parse_monitor(MON_CLIENT)
    assert [e.event for e in events] == [
        "CREATED", "ESTABLISHED", "ANNOUNCED", "SF_ESTABLISHED", "SF_ESTABLISHED",
        "CREATED", "ESTABLISHED", "ANNOUNCED", "SF_ESTABLISHED", "SF_ESTABLISHED", "CLOSED", "CLOSED"]
    assert [e.event_id for e in events[:5]] == [1, 2, 6, 10, 10]
    first = events[0]
    assert (first.token, first.remid, first.locid, first.saddr, first.daddr, first.sport, first.dport) == (
        "dae409f8", 0, 0, "10.1.1.1", "10.1.1.2", 34478, 5210)
    assert first.attrs == {"token": "dae409f8", "remid": "0", "locid": "0", "saddr4": "10.1.1.1",
                           "daddr4": "10.1.1.2", "sport": "34478", "dport": "5210"}
    announced = events[2]
    assert (announced.remid, announced.saddr, announced.daddr, announced.dport) == (1, None, "10.2.2.2", 5210)
    sf = events[4]
    assert (sf.saddr, sf.daddr, sf.sport, sf.backup, sf.ifindex, sf.locid, sf.remid) == (
        "10.2.2.1", "10.1.1.2", 34453, 0, 3, 1, 0)
    assert events[-1].token == "dae409f8" and events[-1].attrs == {"token": "dae409f8"}
    assert events[0].line == 1 and events[-1].line == 12


def test_monitor_server_listener_events_and_mapped_addresses():
    events = ip_mptcp.parse_monitor(MON_SERVER)
    assert (events[0].event, events[0].printed, events[0].event_id, events[0].token) == (
        "LISTENER_CREATED", "UNKNOWN 15", 15, None)
    assert (events[-1].event, events[-1].event_id) == ("LISTENER_CLOSED", 16)
    created = events[1]
    assert (created.saddr, created.saddr_ipv4, created.daddr_ipv4, created.flags) == (
        "::ffff:10.1.1.2", "10.1.1.2", "10.1.1.1", 2)
    assert (created.saddr_norm, created.daddr_norm) == ("10.1.1.2", "10.1.1.1")


def test_count_subflows_client():
    conns = ip_mptcp.count_subflows(ip_mptcp.parse_monitor(MON_CLIENT))
    assert set(conns) == {"dae409f8", "62c3f513"}
    data = conns["62c3f513"]   # the iperf3 data connection (10.1.1.1:34488)
    assert data.initial == ip_mptcp.Subflow(saddr="10.1.1.1", daddr="10.1.1.2", sport=34488, dport=5210,
                                            locid=0, remid=0, backup=None)
    assert data.pairs == (("10.2.2.1", "10.2.2.2"), ("10.2.2.1", "10.1.1.2"))
    assert [s.sport for s in data.established] == [50661, 38911]
    assert data.total_established == 3
    assert data.closed == () and data.connection_closed
    assert data.announced == (("10.2.2.2", 5210, 1),)


def test_count_subflows_server_sees_the_same_paths_reversed():
    client = ip_mptcp.count_subflows(ip_mptcp.parse_monitor(MON_CLIENT))
    server = ip_mptcp.count_subflows(ip_mptcp.parse_monitor(MON_SERVER))
    assert set(server) == {"331426e5", "6a71e675"}     # tokens are per host
    assert server["6a71e675"].pairs == (("10.2.2.2", "10.2.2.1"), ("10.1.1.2", "10.2.2.1"))
    # matched by ports, each server pair is a client pair reversed
    c_pairs = {(s.sport, s.saddr, s.daddr) for c in client.values() for s in c.established}
    s_pairs = {(s.dport, s.daddr, s.saddr) for c in server.values() for s in c.established}
    assert c_pairs == s_pairs and len(c_pairs) == 4


def test_subflow_closed_events_and_other_printings():
    text = (
        "Timestamp: Sun Nov 22 02:22:49 2026 123456 usec\n"
        "[       CREATED] token=0abc1234 remid=0 locid=0 saddr4=10.1.1.1 daddr4=10.1.1.2 sport=1 dport=2\n"
        "[2026-11-22T02:22:50.000001] [SF_ESTABLISHED] token=0abc1234 remid=1 locid=1 saddr4=10.2.2.1 "
        "daddr4=10.2.2.2 sport=3 dport=2 backup=0\n"
        "[      SF_PRIO] token=0abc1234 remid=1 locid=1 saddr4=10.2.2.1 daddr4=10.2.2.2 sport=3 dport=2 backup=1\n"
        "[     SF_CLOSED] token=0abc1234 remid=1 locid=1 saddr4=10.2.2.1 daddr4=10.2.2.2 sport=3 dport=2 "
        "backup=1 error=111 reset_reason=1 reset_flags=0x2\n"
        "[UNKNOWN 99]\n"
    )
    events = ip_mptcp.parse_monitor(text)
    assert events[0].timestamp == "Sun Nov 22 02:22:49 2026 123456 usec"
    assert events[1].timestamp == "2026-11-22T02:22:50.000001"
    assert (events[2].event, events[2].event_id, events[2].printed) == ("SF_PRIORITY", 13, "SF_PRIO")
    assert (events[3].error, events[3].attrs["reset_flags"]) == (111, "0x2")
    assert (events[4].event, events[4].event_id) == ("UNKNOWN_99", 99)   # the number ip printed
    (conn,) = ip_mptcp.count_subflows(events).values()
    assert conn.token == "0abc1234" and len(conn.established) == 1 and len(conn.closed) == 1
    assert conn.initial.sport == 1 and not conn.connection_closed   # CREATED stands in for ESTABLISHED


# ---------------------------------------------------------------------------- detection, errors, registry


@pytest.mark.parametrize("text,kind", [
    (command_output(CONFIG, "ip -n fxr_c mptcp endpoint show"), "endpoints"),
    (command_output(CONFIG, "ip -n fxr_c -j mptcp endpoint show"), "endpoints"),
    (command_output(VARIANTS, "ip -j -p mptcp endpoint show"), "endpoints"),
    (command_output(CONFIG, "ip -n fxr_c mptcp limits show"), "limits"),
    (command_output(CONFIG, "ip -n fxr_c -j mptcp limits show"), "limits"),
    (MON_CLIENT, "monitor"),
    (MON_SERVER, "monitor"),
    ("", "endpoints"),
])
def test_detect(text, kind):
    assert ip_mptcp.detect(text) == kind
    assert ip_mptcp.to_json(text)["kind"] == kind


@pytest.mark.parametrize("text", [
    "Error: address not found.\n",
    "Error: limit greater than maximum (8).\n",
    "rc=2\n",
    "not-an-address id 1 subflow\n",
    "10.2.2.1 id one subflow\n",
    "10.2.2.1 id\n",
    '[{"id": 1}]',
    '[{"address": "10.2.2.1", "id": "1"}]',
])
def test_malformed_endpoints(text):
    with pytest.raises(ParseError):
        ip_mptcp.parse_endpoints(text)


@pytest.mark.parametrize("text", [
    "add_addr_accepted two subflows 2\n", "add_addr_accepted 2 subflows\n", "bogus 1\n",
    '{"other": 1}', '{"subflows": "2"}', "add_addr_accepted 2\nsubflows 2\n",
])
def test_malformed_limits(text):
    with pytest.raises(ParseError):
        ip_mptcp.parse_limits(text)


@pytest.mark.parametrize("text", [
    "[       CREATED] token\n",
    "[       CREATED] token=xyz\n",
    "[       CREATED] sport=http\n",
    "[       CREATED] saddr4=notanaddress\n",
    "[       CREATED] token=1\nsomething else\n",
    "[UNKNOWN]\n",
])
def test_malformed_monitor(text):
    with pytest.raises(ParseError):
        ip_mptcp.parse_monitor(text)


def test_registry_round_trip():
    out = json.loads(json.dumps(registry_parse("ip-mptcp", MON_SERVER)))
    assert out["kind"] == "monitor"
    assert out["events"][0]["event"] == "LISTENER_CREATED"
    assert out["subflows"]["331426e5"]["total_established"] == 3
    assert out["subflows"]["331426e5"]["pairs"] == [["10.2.2.2", "10.2.2.1"], ["10.1.1.2", "10.2.2.1"]]
    ends = registry_parse("ip-mptcp", command_output(VARIANTS, "ip -j mptcp endpoint show"))
    assert [e["id"] for e in ends["endpoints"]] == [1, 7, 8]
    limits = registry_parse("ip-mptcp", command_output(CONFIG, "ip -n fxr_c -j mptcp limits show"))
    assert limits == {"kind": "limits", "add_addr_accepted": 2, "subflows": 2}
    with pytest.raises(ParseError):
        registry_parse("ip-mptcp", "Error: address not found.\n")
