"""nstat / /proc/net/netstat counter parser and the MPTCP summary, on the recorded output."""
from __future__ import annotations

import json

import pytest

from controller.errors import ParseError, ResultInvalid
from controller.parsers import nstat
from controller.parsers import parse as registry_parse
from tests.support.fixture_blocks import command_output, fenced_blocks, read_recorded

MD = "04_linux_mptcp.md"
CLIENT_TXT = command_output(read_recorded("generated/nstat_mptcp.client.txt"), "nstat")
SERVER_TXT = command_output(read_recorded("generated/nstat_mptcp.server.txt"), "nstat")
PROC_TXT = command_output(read_recorded("generated/proc_net_mptcp.client.txt"), "grep MPTcpExt")


def test_nstat_client_counters():
    c = nstat.parse(CLIENT_TXT)
    assert c.source == "nstat"
    assert len(c.values) == 76          # 6.18 (the .md's prose says 77; the capture has 76 lines)
    assert list(c.values)[:3] == ["MPTcpExtMPCapableSYNRX", "MPTcpExtMPCapableSYNTX", "MPTcpExtMPCapableSYNACKRX"]
    nonzero = {k: v for k, v in c.values.items() if v}
    assert nonzero == {
        "MPTcpExtMPCapableSYNTX": 2, "MPTcpExtMPCapableSYNACKRX": 2, "MPTcpExtMPTCPRetrans": 3,
        "MPTcpExtMPJoinSynAckRx": 4, "MPTcpExtMPJoinSynTx": 4, "MPTcpExtAddAddr": 2, "MPTcpExtEchoAddTx": 2,
        "MPTcpExtSndWndShared": 11,
    }
    assert set(c.rates.values()) == {0.0}          # -s: rates are not computed
    assert c.get("MPTcpExtWinProbe") == 0 and c.get("NoSuchCounter", -1) == -1
    assert c.group("MPTcpExt")["MPJoinSynTx"] == 4


def test_nstat_server_counters():
    s = nstat.parse(SERVER_TXT)
    nonzero = {k.removeprefix("MPTcpExt"): v for k, v in s.values.items() if v}
    assert nonzero == {
        "MPCapableSYNRX": 2, "MPCapableACKRX": 2, "MPJoinSynRx": 4, "MPJoinAckRx": 4, "OFOQueueTail": 8151,
        "OFOQueue": 13565, "OFOMerge": 12521, "NoDSSInWindow": 19, "DuplicateData": 28, "AddAddrTx": 2,
        "EchoAdd": 2, "RcvWndShared": 9411,
    }


def test_md_block_and_proc_form_agree_with_the_capture():
    md_nstat, md_proc = fenced_blocks(MD, "nstat -asz | grep -i mptcp")
    assert nstat.parse(command_output(md_nstat, "nstat")) == nstat.parse(CLIENT_TXT)
    proc = nstat.parse(PROC_TXT)
    assert proc.source == "proc" and proc.rates == {}
    # the raw /proc form names counters exactly as nstat does, so the two compare one to one
    assert proc.values == nstat.parse(CLIENT_TXT).values
    assert list(proc.values) == list(nstat.parse(CLIENT_TXT).values)
    assert nstat.parse(command_output(md_proc, "grep MPTcpExt")) == proc


def test_kernel_header_line_is_skipped():
    assert nstat.parse("#kernel\n" + CLIENT_TXT) == nstat.parse(CLIENT_TXT)


def test_delta():
    before = nstat.parse(CLIENT_TXT)
    after_values = dict(before.values, MPTcpExtMPJoinSynTx=10, MPTcpExtMPCapableSYNTX=3)
    d = nstat.delta(before, after_values)
    assert {k: v for k, v in d.items() if v} == {"MPTcpExtMPJoinSynTx": 6, "MPTcpExtMPCapableSYNTX": 1}
    assert nstat.delta(before, before) == dict.fromkeys(before.values, 0)
    # nstat without -z omits zero counters: a counter absent on one side is 0
    without_zeros = "\n".join(l for l in CLIENT_TXT.splitlines() if l.split()[1] != "0")
    assert nstat.delta(nstat.parse(without_zeros), before) == dict.fromkeys(before.values, 0)
    zero = {k: 0 for k in before.values}
    assert nstat.delta(zero, before) == before.values
    with pytest.raises(ResultInvalid, match="MPTcpExtMPCapableSYNTX 3 -> 2; MPTcpExtMPJoinSynTx 10 -> 4"):
        nstat.delta(after_values, before)


def test_mptcp_summary_client_active_side():
    s = nstat.mptcp_summary(nstat.parse(CLIENT_TXT))
    assert s.negotiated == {"MPCapableSYNTX": 2, "MPCapableSYNACKRX": 2, "MPCapableSYNRX": 0, "MPCapableACKRX": 0}
    assert s.mptcp_negotiated and not s.fell_back
    assert set(s.fallbacks) == {"MPCapableFallbackACK", "MPCapableFallbackSYNACK", "MPFallbackTokenInit",
                                "DSSCorruptionFallback", "MPCapableDataFallback", "MD5SigFallback", "DssFallback",
                                "SimultConnectFallback", "FallbackFailed"}
    assert (s.joins["MPJoinSynTx"], s.joins["MPJoinSynAckRx"], s.joins["MPJoinRejected"]) == (4, 4, 0)
    assert s.joins_completed == 4
    assert (s.addresses["AddAddr"], s.addresses["EchoAddTx"], s.addresses["RmAddr"]) == (2, 2, 0)
    assert {"MPJoinRejected", "DataCsumErr", "MPRstRx", "MPFailTx", "AddAddrDrop", "DSSNotMatching"} <= set(s.errors)
    assert s.nonzero_errors == {}
    assert s.other["MPTCPRetrans"] == 3 and s.other["SndWndShared"] == 11
    # every MPTcpExt counter is in at least one group
    grouped = set(s.negotiated) | set(s.fallbacks) | set(s.joins) | set(s.addresses) | set(s.errors) | set(s.other)
    assert len(grouped) == 76


def test_mptcp_summary_server_passive_side_and_a_fallback():
    s = nstat.mptcp_summary(nstat.parse(SERVER_TXT))
    assert s.negotiated["MPCapableSYNRX"] == 2 and s.negotiated["MPCapableACKRX"] == 2
    assert s.mptcp_negotiated and s.joins_completed == 4 and s.joins["MPJoinSynRx"] == 4
    fell_back = dict(nstat.parse(SERVER_TXT).values, MPTcpExtMPCapableFallbackACK=1, MPTcpExtMPJoinRejected=2)
    f = nstat.mptcp_summary(fell_back)
    assert f.fell_back and f.fallbacks["MPCapableFallbackACK"] == 1
    assert f.nonzero_errors == {"MPJoinRejected": 2} and f.joins["MPJoinRejected"] == 2
    none = nstat.mptcp_summary({"TcpExtTCPTimeouts": 5})
    assert not none.mptcp_negotiated and none.other == {} and set(none.negotiated.values()) == {0}


def test_json_snmp6_long_names_and_other_proc_tables():
    values = nstat.parse(CLIENT_TXT).values
    j = nstat.parse(json.dumps({"kernel": values}))
    assert j.source == "nstat-json" and j.values == values
    snmp6 = nstat.parse("Ip6InReceives                   \t1\nIcmp6OutType133                 \t0\n")
    assert snmp6.values == {"Ip6InReceives": 1, "Icmp6OutType133": 0}
    # nstat prints "%-32s%-16llu%6.1f": a name of 32+ characters touches its value
    glued = nstat.parse("%-32s%-16d%6.1f\n" % ("MPTcpExtAVeryLongHypotheticalCounterName", 7, 0.0))
    assert glued.values == {"MPTcpExtAVeryLongHypotheticalCounterName": 7}
    snmp = nstat.parse("Tcp: RtoAlgorithm RtoMin MaxConn ActiveOpens\nTcp: 1 200 -1 12\n"
                       "TcpExt: SyncookiesSent\nTcpExt: 0\n")
    assert snmp.values == {"TcpRtoAlgorithm": 1, "TcpRtoMin": 200, "TcpMaxConn": -1, "TcpActiveOpens": 12,
                           "TcpExtSyncookiesSent": 0}


@pytest.mark.parametrize("text", [
    "",
    "#kernel\n",
    "$ nstat -asz | grep -i mptcp   (client netns)\n",
    "MPTcpExtMPCapableSYNRX          zero               0.0\n",
    "MPTcpExtMPCapableSYNRX          0                  fast\n",
    "MPTcpExtMPCapableSYNRX          0                  0.0\nMPTcpExtMPCapableSYNRX 1 0.0\n",
    "MPTcpExt: A B C\nMPTcpExt: 1 2\n",
    "MPTcpExt: A B\nTcpExt: 1 2\n",
    "MPTcpExt: A B\n",
    '{"kernel": {"A": "1"}}',
    '{"nope": {}}',
    "{not json",
])
def test_malformed_input_raises_parse_error(text):
    with pytest.raises(ParseError):
        nstat.parse(text)


def test_registry_round_trip():
    out = json.loads(json.dumps(registry_parse("nstat", CLIENT_TXT)))
    assert out["source"] == "nstat"
    assert out["counters"]["MPTcpExtMPJoinSynTx"] == 4
    assert out["mptcp_summary"]["mptcp_negotiated"] is True
    assert out["mptcp_summary"]["joins_completed"] == 4
    proc = registry_parse("nstat", PROC_TXT)
    assert proc["counters"] == out["counters"] and "rates" not in proc
    with pytest.raises(ParseError):
        registry_parse("nstat", "garbage here\n")
