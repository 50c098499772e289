"""snmpwalk/snmpget parser on every recorded sample (tests/fixtures/recorded, never edited)."""
from __future__ import annotations

import json
import re

import pytest

from controller.errors import ParseError

from controller.parsers import parse as registry_parse
from controller.parsers.snmpwalk import numeric_oid, parse, to_json, varbinds
from tests.support.shipped import TESTS

RECORDED = TESTS / "fixtures" / "recorded"
GEN = RECORDED / "generated"
MD = (RECORDED / "05_snmp_ifmib.md").read_text()


def md_blocks(section: str) -> list[str]:
    """Fenced code blocks of one `### x.y` section of 05_snmp_ifmib.md."""
    body = MD.split(f"### {section}", 1)[1]
    body = re.split(r"\n### |\n-{20,}", body, maxsplit=1)[0]
    return re.findall(r"```\n(.*?)```", body, flags=re.S)


def run_of(runs, needle: str):
    hits = [r for r in runs if r.command and needle in r.command]
    assert len(hits) == 1, (needle, [r.command for r in runs])
    return hits[0]


def by_oid(run) -> dict[str, object]:
    return {vb.oid: vb for vb in run.varbinds}


# ---- generated/snmpwalk_ifmib_localhost.txt ------------------------------------------------

def test_localhost_ifmib_transcript():
    runs = parse((GEN / "snmpwalk_ifmib_localhost.txt").read_text())
    assert len(runs) == 15
    names = run_of(runs, "1.3.6.1.2.1.31.1.1.1.1     # ifName")
    assert [(vb.oid, vb.type, vb.value) for vb in names.varbinds] == [
        ("1.3.6.1.2.1.31.1.1.1.1.1", "STRING", "lo"),
        ("1.3.6.1.2.1.31.1.1.1.1.2", "STRING", "c1"),
        ("1.3.6.1.2.1.31.1.1.1.1.3", "STRING", "c2"),
    ]
    assert names.varbinds[0].printed == "iso.3.6.1.2.1.31.1.1.1.1.1"
    hc_in = run_of(runs, "-v2c -c fxrtest 127.0.0.1:16161 1.3.6.1.2.1.31.1.1.1.6     # ifHCInOctets")
    assert [(vb.type, vb.value) for vb in hc_in.varbinds] == [("Counter64", 0), ("Counter64", 9564865),
                                                              ("Counter64", 546747)]
    on = run_of(runs, "snmpwalk -On -v2c")
    assert on.varbinds[1].printed == ".1.3.6.1.2.1.31.1.1.1.6.2"
    assert on.varbinds[1].oid == "1.3.6.1.2.1.31.1.1.1.6.2" and on.varbinds[1].value == 9564865
    onq = run_of(runs, "-Onq")
    assert [(vb.oid, vb.type, vb.value) for vb in onq.varbinds] == [
        ("1.3.6.1.2.1.31.1.1.1.10.1", None, 0),
        ("1.3.6.1.2.1.31.1.1.1.10.2", None, 50366179),
        ("1.3.6.1.2.1.31.1.1.1.10.3", None, 10787352),
    ]
    oqv = run_of(runs, "-Oqv")
    assert [(vb.oid, vb.value) for vb in oqv.varbinds] == [(None, "lo"), (None, "c1"), (None, "c2")]
    get = run_of(runs, "snmpget -v2c -c fxrtest 127.0.0.1:16161 1.3.6.1.2.1.31.1.1.1.1.2")
    g = by_oid(get)
    assert g["1.3.6.1.2.1.1.3.0"].type == "Timeticks"
    assert g["1.3.6.1.2.1.1.3.0"].value == 1023 and g["1.3.6.1.2.1.1.3.0"].text == "0:00:10.23"
    assert g["1.3.6.1.2.1.31.1.1.1.10.2"].value == 50366179
    nsi = run_of(runs, "1.3.6.1.2.1.31.1.1.1.6.999")
    assert nsi.exit_status == 0
    assert nsi.varbinds[0].exception == "noSuchInstance" and nsi.varbinds[0].value is None
    c32 = run_of(runs, "ifInOctets (32-bit Counter32)")
    assert [(vb.type, vb.value) for vb in c32.varbinds][1] == ("Counter32", 9564865)
    speed = run_of(runs, "# ifHighSpeed")
    assert [(vb.type, vb.value) for vb in speed.varbinds] == [("Gauge32", 10), ("Gauge32", 10000), ("Gauge32", 10000)]
    system = by_oid(run_of(runs, "# system group"))
    assert system["1.3.6.1.2.1.1.2.0"].type == "OID"
    assert system["1.3.6.1.2.1.1.2.0"].value == "1.3.6.1.4.1.8072.3.2.10"
    assert system["1.3.6.1.2.1.1.1.0"].value == "Linux vm 6.18.44-fc-v769 #1 SMP PREEMPT_DYNAMIC @0 x86_64"
    assert system["1.3.6.1.2.1.1.9.1.3.3"].value.startswith("The management information definitions")
    assert system["1.3.6.1.2.1.1.9.1.4.10"].value == 0


def test_localhost_v1_walk_of_counter64_is_empty_not_zero():
    runs = parse((GEN / "snmpwalk_ifmib_localhost.txt").read_text())
    v1 = run_of(runs, "-v1 -c fxrtest")
    assert v1.varbinds == [] and v1.errors == [] and v1.exit_status == 0


def test_localhost_error_outputs():
    runs = parse((GEN / "snmpwalk_ifmib_localhost.txt").read_text())
    to = run_of(runs, "wrongcommunity")
    assert to.exit_status == 1 and to.varbinds == []
    assert to.errors == [{"kind": "timeout", "agent": "127.0.0.1:16161",
                          "message": "Timeout: No Response from 127.0.0.1:16161."}]
    mib = run_of(runs, "-m IF-MIB")
    assert [e["kind"] for e in mib.errors] == ["mib_module_missing", "unknown_oid"]
    assert mib.errors[0]["module"] == "IF-MIB" and mib.errors[1]["name"] == "ifHCInOctets"
    assert mib.notes[0] == "Created directory: /var/lib/snmp/cert_indexes"
    assert mib.notes[1].startswith("MIB search path: ")
    assert mib.unparsed == [] and mib.exit_status == 1


# ---- generated/snmp_debian_default_view.txt ------------------------------------------------

def test_debian_default_view():
    runs = parse((GEN / "snmp_debian_default_view.txt").read_text())
    assert len(runs) == 7
    walk = run_of(runs, "snmpwalk -v2c -c public 127.0.0.1:16162 1.3.6.1.2.1.31.1.1.1.6")
    assert walk.exit_status == 0
    assert [(vb.oid, vb.exception, vb.value) for vb in walk.varbinds] == [
        ("1.3.6.1.2.1.31.1.1.1.6", "endOfMibView", None)]
    get = run_of(runs, "snmpget -v2c -c public")
    assert get.varbinds[0].exception == "noSuchObject" and get.varbinds[0].oid == "1.3.6.1.2.1.31.1.1.1.6.1"
    v1 = run_of(runs, "snmpget -v1")
    assert v1.exit_status == 2 and v1.varbinds == []
    assert v1.errors == [{"kind": "error_in_packet", "reason": "noSuchName",
                          "message": "There is no such variable name in this MIB.",
                          "failed_object": "1.3.6.1.2.1.31.1.1.1.6.1"}]
    up = run_of(runs, "snmpwalk -v2c -c public 127.0.0.1:16162 1.3.6.1.2.1.1.3")
    assert (up.varbinds[0].type, up.varbinds[0].value, up.varbinds[0].text) == ("Timeticks", 380, "0:00:03.80")
    ov = run_of(runs, "-Ov")
    assert (ov.varbinds[0].oid, ov.varbinds[0].type, ov.varbinds[0].value) == (None, "Timeticks", 380)
    ot = run_of(runs, "-Ot")
    assert (ot.varbinds[0].oid, ot.varbinds[0].type, ot.varbinds[0].value) == ("1.3.6.1.2.1.1.3.0", None, 381)
    bulk = run_of(runs, "snmpbulkwalk")
    assert len(bulk.varbinds) == 38 and bulk.unparsed == []
    b = by_oid(bulk)
    assert b["1.3.6.1.2.1.1.4.0"].value == "Me <me@example.org>"
    assert (b["1.3.6.1.2.1.1.7.0"].type, b["1.3.6.1.2.1.1.7.0"].value) == ("INTEGER", 72)
    assert b["1.3.6.1.2.1.1.9.1.2.6"].value == "1.3.6.1.2.1.49"


# ---- generated/snmp_empty_string_and_enum_cases.txt ----------------------------------------

def test_empty_string_and_enum_without_mibs():
    runs = parse((GEN / "snmp_empty_string_and_enum_cases.txt").read_text())
    assert len(runs) == 5 and all(r.exit_status == 0 and r.unparsed == [] for r in runs)
    alias = run_of(runs, "snmpwalk -v2c -c fxrtest 127.0.0.1:16161 1.3.6.1.2.1.31.1.1.1.18")
    assert [(vb.oid, vb.type, vb.value) for vb in alias.varbinds] == [("1.3.6.1.2.1.31.1.1.1.18.1", None, "")]
    aliasq = run_of(runs, "-Oq")
    assert [(vb.oid, vb.value) for vb in aliasq.varbinds] == [("1.3.6.1.2.1.31.1.1.1.18.1", "")]
    disc = run_of(runs, "1.3.6.1.2.1.31.1.1.1.19")
    assert (disc.varbinds[0].type, disc.varbinds[0].value) == ("Timeticks", 0)
    oper = run_of(runs, "1.3.6.1.2.1.2.2.1.8")
    assert (oper.varbinds[0].type, oper.varbinds[0].value, oper.varbinds[0].enum) == ("INTEGER", 1, None)
    phys = run_of(runs, "-Oe")
    assert phys.varbinds[0].value == "" and phys.varbinds[0].oid == "1.3.6.1.2.1.2.2.1.6.1"


# ---- 05_snmp_ifmib.md samples --------------------------------------------------------------

def test_md_siemens_named_walk():
    named, numeric = md_blocks("1.1")[:2]
    runs = parse(named)
    assert len(runs) == 1 and runs[0].command == "snmpwalk -v2c -c public -m ALL 192.168.0.99"
    vbs = {vb.printed: vb for vb in runs[0].varbinds}
    # the two "[... omitted ...]" markers are reported, not silently dropped
    assert runs[0].unparsed == [line for line in named.splitlines() if line.startswith("[...")]
    up = vbs["DISMAN-EXPRESSION-MIB::sysUpTimeInstance"]
    assert (up.module, up.name, up.index, up.value, up.text) == (
        "DISMAN-EXPRESSION-MIB", "sysUpTimeInstance", None, 756575, "2:06:05.75")
    obj = vbs["SNMPv2-MIB::sysObjectID.0"]
    assert obj.type == "OID" and obj.value == "1.3.6.1.4.1.4196.1.1.5.2.5"
    assert vbs["IF-MIB::ifIndex.1000"].value == 1000 and vbs["IF-MIB::ifIndex.1000"].index == "1000"
    t = vbs["IF-MIB::ifType.1"]
    assert (t.type, t.value, t.enum) == ("INTEGER", 6, "ethernetCsmacd")
    assert (vbs["IF-MIB::ifOperStatus.4"].value, vbs["IF-MIB::ifOperStatus.4"].enum) == (2, "down")
    assert vbs["IF-MIB::ifPhysAddress.1"].value == "20:87:56:ff:aa:84"
    assert vbs["IF-MIB::ifDescr.1"].value == "Siemens, SIMATIC NET, Ethernet Port, X1 P1"
    assert [vbs[f"IF-MIB::ifAlias.{i}"].value for i in (1, 2, 3, 4, 1000)] == [""] * 5
    assert vbs["IF-MIB::ifAlias.1"].type == "STRING"
    assert vbs["IF-MIB::ifHighSpeed.1"].value == 10_000_000      # the agent's bit/s bug, kept as printed
    assert vbs["IF-MIB::ifHCOutOctets.3"].value == 2274335 and vbs["IF-MIB::ifHCOutOctets.3"].type == "Counter64"
    assert vbs["IF-MIB::ifLastChange.1"].value == 616788
    assert vbs["IF-MIB::ifPromiscuousMode.1"].enum == "false"
    assert all(vb.oid is None for vb in runs[0].varbinds if vb.module == "IF-MIB"), \
        "symbolic names must not be guessed into numeric OIDs without the MIB"

    nruns = parse(numeric)
    nv = by_oid(nruns[0])
    assert nv["1.3.6.1.2.1.1.1.0"].value.startswith("Siemens, SIMATIC NET, SCALANCE X204IRT")
    assert nv["1.3.6.1.2.1.1.3.0"].value == 602966
    mac = nv["1.3.6.1.2.1.2.2.1.6.1"]
    assert (mac.type, mac.value, mac.text) == ("Hex-STRING", "208756ffaa84", "20 87 56 FF AA 84")
    assert nv["1.3.6.1.2.1.2.2.1.5.1"].value == 100000000
    assert nruns[0].unparsed == ["..."] * 2


def test_md_cisco_series_and_zabbix():
    series, zabbix = md_blocks("1.2")[:2]
    runs = parse(series)
    ins = [vb.value for vb in runs[0].varbinds if vb.name == "ifHCInOctets"]
    assert ins == [1831783500, 1831793637, 1831815957, 1831826698, 1831851051, 1831862726]
    assert len(runs[0].unparsed) == 6 and all("CST" in u for u in runs[0].unparsed)   # the `date` lines
    z = parse(zabbix)[0]
    assert [(vb.index, vb.value) for vb in z.varbinds] == [("1", 1306368016205), ("2", 343739706698), ("3", 0)]
    assert z.unparsed == ["shell# snmpwalk -v 2c -c public 192.168.1.2 1.3.6.1.2.1.31.1.1.1.6"]


def test_md_error_and_edge_outputs():
    blocks = md_blocks("1.3")
    a1 = parse(blocks[0])[0]
    assert a1.errors == [{"kind": "error_in_packet", "reason": "noSuchName",
                          "message": "There is no such variable name in this MIB.",
                          "failed_object": "UCD-SNMP-MIB::memSysAvail.0"}]
    a2 = parse(blocks[1])
    assert a2[0].errors[0]["failed_object"] == "1.3.6.1.4.1.534.6.6.7.7.1.1.4.0"
    # that shell prompt is `[pig@firewall mrtg]# `, not `$ `: the command lines are reported as unparsed
    assert a2[0].command is None
    assert [u.split("]# ")[1].split()[0] for u in a2[0].unparsed] == ["snmpget", "snmpwalk"]
    walk_vb = [vb for r in a2 for vb in r.varbinds]
    assert [(vb.oid, vb.type, vb.value) for vb in walk_vb] == [("1.3.6.1.4.1.534.6.6.7.7.1.1.4.0.1", "INTEGER", 755)]
    b = parse(blocks[2])[0]
    assert [(vb.oid, vb.exception) for vb in b.varbinds] == [("1.0.8802.1.1.2.1.4", "noSuchObject")]
    c = parse(blocks[3])[0]
    assert (c.varbinds[0].value, c.varbinds[0].text, c.varbinds[0].module) == (
        17747798, "2 days, 1:17:57.98", "DISMAN-EVENT-MIB")
    inline = parse("SNMPv2-SMI::mib-2 = No Such Object available on this agent at this OID")[0].varbinds[0]
    assert (inline.oid, inline.exception) == ("1.3.6.1.2.1", "noSuchObject")


def test_md_generated_sections_match_the_raw_files():
    """§1.4 / §1.4b / §1.5 of the .md are the same captures as generated/*.txt."""
    md14 = parse(md_blocks("1.4 ")[0])
    raw = parse((GEN / "snmpwalk_ifmib_localhost.txt").read_text())
    common = {r.command: r for r in raw}
    for r in md14:
        assert r.command in common
        assert [v.to_json() for v in r.varbinds] == [v.to_json() for v in common[r.command].varbinds]
    md14b = parse(md_blocks("1.4b")[0])
    assert [v.value for r in md14b for v in r.varbinds] == ["", "", 0, 1, ""]
    md15 = parse(md_blocks("1.5")[0])
    assert [r.exit_status for r in md15] == [0, 0, 2, 0, 0, 0]


def test_every_recorded_sample_parses_and_is_json():
    texts = [(GEN / f).read_text() for f in ("snmpwalk_ifmib_localhost.txt", "snmp_debian_default_view.txt",
                                              "snmp_empty_string_and_enum_cases.txt")]
    # The recorded page also quotes what is not snmpwalk output (a MIB definition, snmpd.conf,
    # snmp.conf): those are refused as unrecognisable, everything else parses.
    not_output = ("ifHCInOctets OBJECT-TYPE", "# minimal read-only snmpd config", "sysLocation ",
                  "# As the snmp packages come without MIB files")
    refused = []
    total = 0
    for text in texts + re.findall(r"```\n(.*?)```", MD, flags=re.S):
        try:
            out = registry_parse("snmpwalk", text)
        except ParseError as exc:
            assert "nothing recognisable" in str(exc)
            refused.append(text)
            continue
        json.dumps(out)
        total += sum(len(r["varbinds"]) for r in out["runs"])
    assert total > 300
    assert len(refused) == len(not_output) and all(t.startswith(not_output) for t in refused)


@pytest.mark.parametrize("text", ["", "hello world\n", "a = b\n", "key = value\nother = 2\n", "$$ = x\n"])
def test_what_is_not_snmpwalk_output_is_refused(text):
    """Any `a = b` used to become a varbind; now only an OID or a typed value counts."""
    with pytest.raises(ParseError, match="nothing recognisable"):
        registry_parse("snmpwalk", text)


# ---- formats documented in §3.4 (SOURCE) but not in a capture: labelled synthetic ----------

def test_synthetic_units_wrong_type_ipaddress():
    text = "\n".join([
        "HOST-RESOURCES-MIB::x.0 = INTEGER: 5 seconds",
        "EtherLike-MIB::y.1 = Counter32: 8751 frames",
        "IF-MIB::ifInOctets.1 = Wrong Type (should be Counter32): Gauge32: 17",
        "IP-MIB::ipAdEntAddr.10.0.0.1 = IpAddress: 10.0.0.1",
    ])
    vbs = varbinds(text)
    assert (vbs[0].value, vbs[0].units) == (5, "seconds")
    assert (vbs[1].type, vbs[1].value, vbs[1].units) == ("Counter32", 8751, "frames")
    assert (vbs[2].type, vbs[2].value, vbs[2].expected_type) == ("Gauge32", 17, "Counter32")
    assert (vbs[3].type, vbs[3].value, vbs[3].index) == ("IpAddress", "10.0.0.1", "10.0.0.1")


def test_synthetic_multiline_string_and_long_hex():
    text = ('iso.3.6.1.2.1.1.1.0 = STRING: "Cisco IOS Software\nTechnical Support: x"\n'
            "iso.3.6.1.2.1.2.2.1.6.2 = Hex-STRING: 00 11 22 33 44 55 66 77 88 99 AA BB CC DD EE FF \n"
            "01 02 \n"
            'iso.3.6.1.2.1.1.5.0 = STRING: "ok"\n')
    vbs = varbinds(text)
    assert vbs[0].value == "Cisco IOS Software\nTechnical Support: x"
    assert vbs[1].value == "00112233445566778899aabbccddeeff0102"
    assert vbs[2].value == "ok" and len(vbs) == 3


def test_unclosed_quote_does_not_swallow_following_lines():
    text = 'iso.3.6.1.2.1.1.1.0 = STRING: "never closed\n' + "\n".join(
        f"iso.3.6.1.2.1.2.2.1.10.{i} = Counter32: {i}" for i in range(1, 100))
    vbs = varbinds(text)
    assert len(vbs) == 100 and vbs[-1].value == 99


@pytest.mark.parametrize("printed,expected", [
    ("iso.3.6.1.2.1.1.3.0", "1.3.6.1.2.1.1.3.0"),
    (".1.3.6.1.2.1.1.3.0", "1.3.6.1.2.1.1.3.0"),
    ("SNMPv2-SMI::enterprises.4196.1", "1.3.6.1.4.1.4196.1"),
    ("IF-MIB::ifHCInOctets.2", None),
])
def test_numeric_oid(printed, expected):
    assert numeric_oid(printed) == expected


def test_to_json_shape():
    out = to_json("iso.3.6.1.2.1.1.3.0 = Timeticks: (12345) 0:02:03.45\n")
    assert out == {"runs": [{"command": None, "exit_status": None, "errors": [], "notes": [], "unparsed": [],
                             "varbinds": [{"oid": "1.3.6.1.2.1.1.3.0", "printed": "iso.3.6.1.2.1.1.3.0",
                                           "type": "Timeticks", "value": 12345, "text": "0:02:03.45"}]}],
                   "unparsed_lines": 0}


def test_short_names_of_os_output_still_parse():
    (run,) = parse("ifName.2 = STRING: eth0\nifHCInOctets.2 = Counter64: 5\n")
    assert [(v.printed, v.value) for v in run.varbinds][0] == ("ifName.2", "eth0")
    assert len(run.varbinds) == 2
