"""Modem / GPS parsers on every recorded sample of 02a-02e, field by field.

Test names carry the sample's confidence label from the fixture file:
  real      -- REAL output pasted from a device (or vendor doc / regression output marked REAL)
  semireal  -- marked SEMI-REAL / "REAL?" in the fixture (hand-edited or test strings)
  source    -- a string built from the tool's SOURCE format (or a project's unit-test string)
  recon     -- RECON: reconstructed from SOURCE formats, NOT real output (all WiMAX samples)
  elsewhere -- layout seen in public real output that is NOT in our fixtures (values ours)
Fixture files are never modified; where a sample must be altered to be parsable (redacted digits), the
test alters its own copy and says so.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from types import SimpleNamespace

import pytest

from controller.errors import ParseError
from controller.parsers import parse as registry_parse
from tests.support.fixture_blocks import read_recorded
from nodes.modem import at, gps, mmcli, qmicli, serial_poll, wimax
from nodes.modem.families import FAMILIES, serial_poll_argv
from nodes.modem.radio import RadioSample, merge_samples
from tests.support.shipped import ROOT as REPO

MM, QMI, AT, WMX, GPS = ("02a_modemmanager_mmcli.md", "02b_qmicli.md", "02c_at_commands_cellular.md",
                         "02d_wimax_wimaxcu_madwimax.md", "02e_gpsd_gpspipe.md")


def section(md: str, heading_contains: str) -> str:
    """Text under the one heading (any level) containing the words, up to the next heading."""
    text = read_recorded(md)
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.startswith("#") and heading_contains in line]
    assert len(starts) == 1, f"{md}: {len(starts)} headings contain {heading_contains!r}"
    body: list[str] = []
    rest = lines[starts[0] + 1:]
    while rest and re.match(r"^#{2,6} ", rest[0]):    # a heading continued on the next line
        rest = rest[1:]
    for line in rest:
        if re.match(r"^#{2,6} ", line):       # next heading ("# qmicli ..." prompts inside blocks are not)
            break
        body.append(line)
    return "".join(body)


def scissor_blocks(md: str, heading_contains: str) -> list[str]:
    """The "----8<----" delimited blocks under a heading, byte for byte."""
    return re.findall(r"----8<----\n(.*?)----8<----", section(md, heading_contains), re.S)


def sample(d: dict | None) -> RadioSample | None:
    return None if d is None else RadioSample.from_json(d)


# =========================================================================================== mmcli (02a)

def test_mmcli_human_modem_real_sample_a():
    text = scissor_blocks(MM, "SAMPLE A")[0]
    out = mmcli.to_json(text)
    (modem,) = out["outputs"]
    assert modem["type"] == "modem" and modem["format"] == "human"
    f = modem["fields"]
    assert f["model"] == "RM530N-GL" and f["manufacturer"] == "Quectel"
    assert f["access_technologies"] == ["lte", "5gnr"]
    assert f["signal_quality_pct"] == 83 and f["signal_quality_recent"] is False   # "83% (cached)"
    assert f["ports"][0] == "cdc-wdm0 (qmi)" and f["ports"][-1] == "wwu1u4i4 (net)"   # wrapped list joined
    assert f["at_ports"] == ["ttyUSB2", "ttyUSB3"]
    # "(null)" inside the supported bands list is real ModemManager output: kept, not fatal
    assert "(null)" in " ".join(f["sections"]["Bands"]["supported"])
    # multi-line array whose elements contain colons stays a list of elements
    assert f["sections"]["Modes"]["supported"][1] == "allowed: 4g; preferred: none"
    s = sample(out["sample"])
    assert s.technology == "nr5g-nsa"             # "access tech: lte, 5gnr" = EN-DC
    assert (s.mcc, s.mnc, s.operator_name, s.registration) == ("234", "15", "vodafone UK", "home")
    assert s.signal_quality_pct == 83
    assert s.rsrp_dbm is None and s.sinr_db is None and s.cell_id is None   # not in this output: None


def test_mmcli_human_bearer_real_sample_a():
    text = scissor_blocks(MM, "SAMPLE A")[1]
    out = mmcli.to_json(text)
    (b,) = out["outputs"]
    assert b["type"] == "bearer" and b["sample"] is None and out["sample"] is None
    assert b["fields"]["bearer"]["Status"]["interface"] == "wwu1u4i4"
    assert b["fields"]["bearer"]["Statistics"]["bytes rx"] == "432453378"


def test_mmcli_json_modem_real_sample_c():
    (text,) = scissor_blocks(MM, "SAMPLE C")
    out = mmcli.to_json(text)
    (m,) = out["outputs"]
    assert m["type"] == "modem" and m["format"] == "json"
    assert m["fields"]["model"] == "EG25" and m["fields"]["at_ports"] == ["ttyAMA2"]
    assert m["fields"]["signal_quality_pct"] == 60 and m["fields"]["signal_quality_recent"] is False
    s = sample(out["sample"])
    assert (s.technology, s.mcc, s.mnc, s.operator_name) == ("lte", "230", "02", "O2.CZ O2-CZ")
    assert s.registration == "home"


def test_mmcli_signal_get_real_sample_d_before_setup_all_missing():
    text = scissor_blocks(MM, "SAMPLE D")[0]
    out = mmcli.to_json(text)
    (sig,) = out["outputs"]
    assert sig["type"] == "signal"
    assert sig["fields"]["refresh_rate_s"] == 0 and sig["fields"]["signal_setup_needed"] is True
    assert sig["fields"]["lte"]["rsrp"] is None           # "--" is missing, not 0
    assert sig["sample"] is None and out["sample"] is None


def test_mmcli_signal_get_real_sample_d_locale_comma():
    text = scissor_blocks(MM, "SAMPLE D")[1]
    (sig,) = mmcli.to_json(text)["outputs"]
    assert sig["fields"]["refresh_rate_s"] == 300 and sig["fields"]["signal_setup_needed"] is False
    assert sig["fields"]["locale_comma"] is True          # "-67,00" (cs_CZ locale)
    s = sample(sig["sample"])
    assert s.technology == "gsm" and s.rssi_dbm == -67.0 and s.rsrp_dbm is None


def test_mmcli_signal_get_semireal_lte_and_5g():
    line = next(x for x in section(MM, "SAMPLE D").splitlines() if '"refresh":{"rate":"10"}' in x)
    s = mmcli.parse_sample(line)
    assert s.technology == "nr5g-nsa"
    assert (s.rsrp_dbm, s.snr_db, s.rsrq_db, s.rssi_dbm) == (-104.0, 2.0, None, None)
    nr = s.leg("nr5g")
    assert nr.rsrq_db == -14.0 and nr.rsrp_dbm is None and nr.snr_db is None


def test_mmcli_signal_human_recon_layout():
    # RECON block (derived from cli/mmcli-output.c, values invented by the fixture author)
    recon = "\n".join(x for x in section(MM, "RECON").splitlines()
                      if re.match(r"^  [A-Za-z0-9 ]{6} \|", x) or re.fullmatch(r"  -+", x))
    (sig,) = mmcli.to_json(recon)["outputs"]
    assert sig["type"] == "signal" and sig["format"] == "human"
    assert sig["fields"]["refresh_rate_s"] == 10
    s = sample(sig["sample"])
    assert (s.technology, s.rssi_dbm, s.rsrq_db, s.rsrp_dbm, s.snr_db) == ("nr5g-nsa", -67.0, -11.0, -95.0, 12.4)
    assert s.leg("nr5g").rsrp_dbm == -90.0 and s.leg("nr5g").snr_db == 14.0


def test_mmcli_messages_source_strings():
    out = mmcli.to_json("Successfully setup signal quality information polling\n")
    assert out["outputs"][0]["type"] == "signal-setup"
    err = section(MM, "SOURCE — output machinery").splitlines()
    line = next(x.strip() for x in err if x.strip().startswith("error: couldn't get cell info"))
    out = mmcli.to_json(line)     # REAL error seen on a Sierra EM7455
    assert out["outputs"][0]["type"] == "error" and out["sample"] is None


def test_mmcli_location_source_format_hex_ids():
    # Built from mmcli-modem-location.c formats: mcc/mnc "%u", lac/tac "%04lX", cid "%08lX"
    text = ('{"modem":{"location":{"3gpp":{"cid":"00386B26","lac":"0000","mcc":"234","mnc":"15","tac":"300B"},'
            '"cdma-bs":{"latitude":"--","longitude":"--"},"gps":{"altitude":"--","latitude":"--",'
            '"longitude":"--","nmea":[],"utc":"--"}}}}')
    s = mmcli.parse_sample(text)
    assert (s.cell_id, s.cell_id_int, s.enb_id, s.local_cell_id) == ("00386B26", 3697446, 14443, 38)
    assert s.tac == 0x300B and s.lac is None                         # lac 0 = unknown on LTE
    unknown = text.replace("00386B26", "00000000").replace("300B", "0000").replace('"234"', '"0"')
    assert mmcli.parse_sample(unknown) is None                        # all-zero location = no location


def test_mmcli_registry_round_trip_is_json():
    text = scissor_blocks(MM, "SAMPLE C")[0]
    out = registry_parse("mmcli", text)
    assert out == mmcli.to_json(text)
    assert json.loads(json.dumps(out)) == out


def test_mmcli_garbage_is_parse_error():
    with pytest.raises(ParseError):
        registry_parse("mmcli", "this is not mmcli output\n")


# ========================================================================================= qmicli (02b)

def test_qmicli_signal_info_real_sample_a_nsa():
    (text,) = scissor_blocks(QMI, "SAMPLE A")
    out = qmicli.to_json(text)
    (o,) = out["outputs"]
    assert o["type"] == "signal-info" and o["device"] == "/dev/cdc-wdm0"
    s = sample(out["sample"])
    assert s.technology == "nr5g-nsa"
    assert (s.rssi_dbm, s.rsrq_db, s.rsrp_dbm, s.snr_db) == (-47.0, -5.0, -70.0, 30.0)
    nr = s.leg("nr5g")
    assert (nr.rsrp_dbm, nr.snr_db, nr.rsrq_db) == (-75.0, 18.5, -11.0)


def test_qmicli_three_commands_real_sample_b():
    (text,) = scissor_blocks(QMI, "SAMPLE B")
    outs = {o["type"]: o for o in qmicli.to_json(text)["outputs"]}
    assert set(outs) == {"signal-strength", "serving-system", "cell-location-info"}

    st = sample(outs["signal-strength"]["sample"])
    assert (st.technology, st.rssi_dbm, st.rsrq_db, st.snr_db, st.rsrp_dbm) == ("lte", -62.0, -11.0, 7.2, -93.0)
    assert st.sinr_db is None and st.ecio_db is None      # "SINR (8)" / IO are HDR, ECIO-on-lte is meaningless

    ss = sample(outs["serving-system"]["sample"])
    assert (ss.technology, ss.registration, ss.mcc, ss.mnc, ss.operator_name) == ("lte", "home", "234", "15", "voda UK")
    assert (ss.cell_id, ss.cell_id_int, ss.enb_id, ss.local_cell_id) == ("3697446", 3697446, 14443, 38)
    assert ss.tac == 12299 and ss.lac is None

    cl = sample(outs["cell-location-info"]["sample"])
    assert (cl.pci, cl.arfcn, cl.band, cl.tac, cl.cell_id_int) == (177, 2850, "B7", 12299, 3697446)
    assert (cl.rsrp_dbm, cl.rsrq_db, cl.rssi_dbm) == (-92.9, -11.6, -60.9)    # unit outside the quotes
    assert cl.connection == "idle"
    raw = outs["cell-location-info"]["fields"]["Intrafrequency LTE Info"]
    assert raw["Cell [1]"]["Physical Cell ID"] == "295"
    assert raw["EUTRA Absolute RF Channel Number"]["extra"] == "(E-UTRA band 7: 2600)"
    assert outs["cell-location-info"]["fields"]["LTE Timing Advance"] == "unavailable"

    merged = qmicli.parse_sample(text)
    assert merged.cell_id_int == 3697446 and merged.pci == 177 and merged.snr_db == 7.2


def test_qmicli_wds_settings_real_sample_c_flat():
    (text,) = scissor_blocks(QMI, "SAMPLE C")
    (o,) = qmicli.to_json(text)["outputs"]
    assert o["type"] == "wds-current-settings" and o["sample"] is None
    assert o["fields"]["MTU"] == "1500" and o["fields"]["IPv4 gateway address"] == "10.65.17.49"


def test_qmicli_5g_na_sentinel_source_format():
    text = ("[/dev/cdc-wdm0] Successfully got signal info\n"
            "LTE:\n\tRSSI: '-60 dBm'\n\tRSRQ: '-9 dB'\n\tRSRP: '-88 dBm'\n\tSNR: '0.0 dB'\n"
            "5G:\n\tRSRP: 'n/a'\n\tSNR: 'n/a'\n\tRSRQ: 'n/a'\n")
    s = qmicli.parse_sample(text)
    assert s.technology == "lte" and s.secondary == ()     # an all-'n/a' 5G section is no NR leg
    assert s.snr_db == 0.0                                 # a real 0.0 dB stays 0.0


def test_qmicli_mnc_pcs_digit_source_format():
    text = ("[/dev/cdc-wdm0] Successfully got serving system:\n\tRegistration state: 'registered'\n"
            "\tRoaming status: 'on'\n\tRadio interfaces: '2'\n\t\t[0]: 'lte'\n\t\t[1]: '5gnr'\n"
            "\tCurrent PLMN:\n\t\tMCC: '310'\n\t\tMNC: '15'\n\t\tDescription: 'x'\n"
            "\tFull operator code info:\n\t\tMCC: '310'\n\t\tMNC: '15'\n\t\tMNC with PCS digit: 'yes'\n")
    s = qmicli.parse_sample(text)
    assert (s.mnc, s.registration, s.technology) == ("015", "roaming", "nr5g-nsa")


def test_qmicli_error_output_source_format():
    out = qmicli.to_json("error: couldn't get serving system: QMI protocol error (3): 'Internal'\n")
    assert out["outputs"][0]["type"] == "error" and out["sample"] is None


def test_qmicli_registry_round_trip():
    (text,) = scissor_blocks(QMI, "SAMPLE B")
    out = registry_parse("qmicli", text)
    assert out == qmicli.to_json(text) and json.loads(json.dumps(out)) == out


# ============================================================================================= AT (02c)

def test_at_quectel_q1_real_endc_via_mmcli_command():
    (text,) = scissor_blocks(AT, "SAMPLE Q1")
    out = at.to_json(text)
    (r,) = out["responses"]
    assert r["type"] == "qeng-servingcell" and r["command"] is None     # mmcli's response: '...' unwrapped
    s = sample(out["sample"])
    assert s.technology == "nr5g-nsa" and s.registration == "registered" and s.connection == "idle"
    assert (s.cell_id, s.cell_id_int, s.enb_id, s.local_cell_id) == ("1A2D001", 0x1A2D001, 0x1A2D0, 1)
    assert (s.pci, s.arfcn, s.band, s.bandwidth_mhz, s.tac) == (1, 1575, "B3", 10.0, 1)
    assert (s.rsrp_dbm, s.rsrq_db, s.rssi_dbm) == (-70.0, -9.0, -46.0)
    assert s.sinr_db == 30.0              # 2*25-20; qmicli of the same session says SNR '30.0 dB'
    assert (s.mcc, s.mnc) == ("001", "01")
    assert s.tx_power_dbm is None         # not in this layout
    lte_raw = r["fields"]["legs"][0]
    assert lte_raw["srxlev"] == "-" and lte_raw["sinr_scale"] == "2x-20"
    nr = s.leg("nr5g")
    assert (nr.pci, nr.rsrp_dbm, nr.rsrq_db) == (500, -75.0, -11.0)
    assert nr.sinr_db == 18.0             # old firmware prints 1/10 dB: 180 (qmicli: '18.5 dB')
    assert nr.arfcn is None and nr.band is None          # short old-firmware layout: absent, not 0


def test_at_q1_agrees_with_qmicli_sample_a_same_session():
    q = at.parse_sample(scissor_blocks(AT, "SAMPLE Q1")[0])
    m = qmicli.parse_sample(scissor_blocks(QMI, "SAMPLE A")[0])
    assert q.rsrp_dbm == m.rsrp_dbm == -70.0
    assert q.sinr_db == m.snr_db == 30.0
    assert q.leg("nr5g").rsrp_dbm == m.leg("nr5g").rsrp_dbm == -75.0


def test_at_quectel_q2_real_sa_with_qnwinfo_qcainfo_qspn():
    (text,) = scissor_blocks(AT, "SAMPLE Q2")
    out = at.to_json(text)
    types = [r["type"] for r in out["responses"]]
    assert types == ["qnwinfo", "qcainfo", "qeng-servingcell", "qspn"]
    qeng = sample(out["responses"][2]["sample"])
    assert qeng.technology == "nr5g-sa"
    assert (qeng.cell_id, qeng.cell_id_int) == ("14758F12F", 0x14758F12F)   # 36-bit NCI, not split
    assert qeng.enb_id is None
    assert (qeng.pci, qeng.tac, qeng.arfcn, qeng.band, qeng.bandwidth_mhz) == (271, 0x59E700, 521310, "n41", 80.0)
    assert (qeng.rsrp_dbm, qeng.rsrq_db, qeng.sinr_db) == (-89.0, -11.0, 19.0)   # SA order: RSRP,RSRQ,SINR
    assert out["responses"][2]["fields"]["legs"][0]["srxlev"] == "-"
    assert len(out["responses"][1]["fields"]["components"]) == 2
    s = sample(out["sample"])
    assert (s.operator_name, s.mcc, s.mnc) == ("T-Mobile", "310", "260")


def test_at_quectel_q4_real_partial_qnwinfo_two_lines_is_nsa():
    (text,) = scissor_blocks(AT, "SAMPLE Q4")
    s = at.parse_sample(text)
    assert (s.technology, s.band, s.arfcn, s.mcc, s.mnc) == ("nr5g-nsa", "B1", 150, "515", "03")
    assert s.leg("nr5g").band == "n41" and s.leg("nr5g").arfcn == 528030
    assert s.rsrp_dbm is None             # QCAINFO values are kept raw only


def test_at_quectel_q5_real_vendor_doc_all_modes():
    (text,) = scissor_blocks(AT, "SAMPLE Q5")
    out = at.to_json(text)
    qengs = [r for r in out["responses"] if r["type"] == "qeng-servingcell"]
    assert len(qengs) == 3 and all(r["command"] == 'AT+QENG="servingcell"' for r in qengs)
    lte, endc, sa = (sample(r["sample"]) for r in qengs)
    assert (lte.technology, lte.cell_id, lte.pci, lte.arfcn, lte.tac) == ("lte", "5F1EA15", 12, 1650, 0xDE10)
    assert (lte.rsrp_dbm, lte.rsrq_db, lte.rssi_dbm, lte.sinr_db) == (-100.0, -12.0, -68.0, 2.0)
    assert lte.tx_power_dbm is None                               # -32768 = invalid, not -3276.8
    assert qengs[0]["fields"]["legs"][0]["cqi"] == "0" and qengs[0]["fields"]["legs"][0]["srxlev"] == "27"
    assert (endc.technology, endc.tx_power_dbm, endc.sinr_db) == ("nr5g-nsa", 23.0, 2.0)
    nr = endc.leg("nr5g")
    assert (nr.pci, nr.rsrp_dbm, nr.sinr_db, nr.rsrq_db) == (747, -71.0, 33.0, -11.0)   # NSA: RSRP,SINR,RSRQ
    assert (nr.arfcn, nr.band, nr.bandwidth_mhz) == (627264, "n78", 100.0)
    assert (sa.technology, sa.cell_id, sa.pci, sa.sinr_db, sa.bandwidth_mhz) == ("nr5g-sa", "19013B004", 299, 2.0, 100.0)
    assert qengs[2]["final"] == "OK"
    neigh = next(r for r in out["responses"] if r["type"] == "qeng-neighbourcell")
    assert len(neigh["fields"]["cells"]) == 3 and neigh["sample"] is None
    # merged = the last record of each type: the SA reply, enriched by QNWINFO only where SA says nothing
    m = sample(out["sample"])
    assert m.technology == "nr5g-sa" and m.cell_id == "19013B004" and m.secondary == ()


@pytest.mark.parametrize("line,tech,sinr,srx", [
    # quoted in 02c "Field layouts" (ArduPilot EC25 comment / BG9x eMTC): short LTE-only layouts
    ('+QENG: "servingcell","NOCONN","LTE","FDD",505,02,12AED4A,445,3750,8,3,3,CBE8,-99,-14,-71,53,30', "lte", -9.4, "30"),
    ('+QENG: "servingcell","CONNECT","eMTC","FDD",505,01,804A90D,238,9410,28,5,5,2036,-114,-18,-82,6', "lte-m", -18.8, None),
])
def test_at_quectel_real_lte_only_layouts_use_fifth_db_scale(line, tech, sinr, srx):
    out = at.to_json(line)
    s = sample(out["sample"])
    assert s.technology == tech and s.sinr_db == pytest.approx(sinr)
    assert out["responses"][0]["fields"]["legs"][0].get("srxlev") == srx


def test_at_quectel_zero_sinr_stays_zero_source_format():
    s = at.parse_sample('+QENG: "servingcell","NOCONN","LTE","FDD",460,01,5F1EA15,12,1650,3,5,5,DE10,-100,-12,-68,10,0,-32768,27')
    assert s.sinr_db == 0.0 and s.sinr_db is not None      # raw 10 -> 2*10-20 = 0 dB is a measurement
    s = at.parse_sample('+QENG: "servingcell","SEARCH"')
    assert s.registration == "searching" and s.technology is None and s.rsrp_dbm is None


def test_at_quectel_empty_nr_leg_is_no_leg_source_format():
    text = ('+QENG: "servingcell","NOCONN"\r\n'
            '+QENG: "LTE","FDD",460,01,5F1EA15,12,1650,3,5,5,DE10,-99,-12,-67,11,9,230,-\r\n'
            '+QENG:"NR5G-NSA",-,-,-,-32768,-32768,-32768,-,-,-,-\r\nOK\r\n')
    s = at.parse_sample(text)
    assert s.technology == "lte" and s.secondary == ()


def test_at_sierra_gstatus_real_s1():
    (text,) = scissor_blocks(AT, "SAMPLE S1")
    out = at.to_json(text)
    (r,) = out["responses"]
    assert r["type"] == "gstatus"
    v = r["fields"]["values"]
    assert v["EMM state"] == "Registered Normal Service"          # TAB-continued value
    assert v["PCC RxM RSRP (dBm)"] == "-78" and v["PCC RxD RSRP (dBm)"] == "-94"   # per-antenna keys
    assert v["Mode"] == "ONLINE" and v["LTE CA state"] == "NOT ASSIGNED"
    s = sample(out["sample"])
    assert (s.technology, s.band, s.bandwidth_mhz, s.arfcn) == ("lte", "B25", 15.0, 8615)
    assert (s.rssi_dbm, s.rsrp_dbm) == (-48.0, -78.0)              # main antenna (RxM)
    assert (s.registration, s.connection) == ("registered", "connected")
    assert s.sinr_db is None and s.rsrq_db is None and s.cell_id is None   # cut off in the excerpt


def test_at_sierra_gstatus_full_layout_elsewhere():
    # Rows after "PCC RxD" in the layout of public EM7455 transcripts (not in our fixtures); values ours.
    text = ("!GSTATUS: \r\nSystem mode:   LTE        \tPS state:    Attached     \r\n"
            "PCC RxM RSSI:  -62\t\tPCC RxM RSRP:  -93\r\nPCC RxD RSSI:  -64\t\tPCC RxD RSRP:  -95\r\n"
            "Tx Power:      --\t\tTAC:         300b (12299)\r\n"
            "RSRQ (dB):     -11.0\t\tCell ID:     00386b26 (3697446)\r\nSINR (dB):      0.0\r\n"
            "NR5G band:       ---            NR5G bw:         ---\r\n"
            "NR5G RSRP (dBm): ---            NR5G RSRQ (dB):  ---\r\n\r\n\r\nOK\r\n")
    s = at.parse_sample(text)
    assert (s.rsrp_dbm, s.rssi_dbm, s.rsrq_db, s.sinr_db) == (-93.0, -62.0, -11.0, 0.0)
    assert s.tx_power_dbm is None                       # "--"
    assert (s.tac, s.cell_id, s.cell_id_int, s.enb_id) == (12299, "00386b26", 3697446, 14443)
    assert s.secondary == ()                            # NR5G rows all "---": no leg


def test_at_huawei_hcsq_real_h1_from_serial_log():
    log = next(x for x in section(AT, "SAMPLE H1").splitlines() if "^HCSQ" in x)
    payload = log[log.index('"^HCSQ') + 1:].rstrip()[:-1]        # the log line quotes the bytes read
    s = at.parse_sample(payload)
    assert (s.technology, s.rssi_dbm, s.rsrp_dbm, s.sinr_db, s.rsrq_db) == ("lte", -62.0, -86.0, 0.8, -10.0)


@pytest.mark.parametrize("line,expect", [
    ('^HCSQ:"LTE",30,19,66,0', dict(technology="lte", rssi_dbm=-91.0, rsrp_dbm=-122.0, sinr_db=-7.0, rsrq_db=-20.0)),
    ('^HCSQ: "WCDMA",30,30,58', dict(technology="umts", rssi_dbm=-91.0, ecio_db=-3.5)),
    ('^HCSQ: "GSM",36,255', dict(technology="gsm", rssi_dbm=-85.0)),
    ("^HCSQ: LTE,33,40,135,11", dict(technology="lte", rssi_dbm=-88.0, rsrp_dbm=-101.0, sinr_db=6.8, rsrq_db=-14.5)),
    ('^HCSQ: "NOSERVICE"', dict(technology=None, rssi_dbm=None, registration="not-registered")),
    ("^SYSINFOEX:2,4,5,1,,3,WCDMA,41,HSPA+", dict(technology="umts", registration="registered")),
    ('^SYSINFOEX: 2,4,5,1,0,3,"WCDMA",41,"HSPA+"', dict(technology="umts", registration="registered")),
])
def test_at_huawei_source_test_strings(line, expect):
    # ModemManager unit-test strings (SOURCE/test) from 02c SAMPLE H2
    assert line in section(AT, "SAMPLE H2")
    s = at.parse_sample(line)
    for k, v in expect.items():
        assert getattr(s, k) == (pytest.approx(v) if isinstance(v, float) else v), k


def test_at_huawei_prefixed_semireal_and_255_sentinel():
    s = at.parse_sample('^HCSQ: 2,0,"LTE",63,20,68,151')   # semi-real: report-config pair first
    assert (s.rssi_dbm, s.rsrp_dbm, s.sinr_db) == (-58.0, -121.0, pytest.approx(-6.6))
    assert s.rsrq_db is None                                # 151 is outside MM's valid range (<= 34)
    s = at.parse_sample('^HCSQ: "LTE",255,255,255,255')
    assert all(getattr(s, k) is None for k in ("rssi_dbm", "rsrp_dbm", "sinr_db", "rsrq_db"))
    assert at.parse_sample('^HCSQ: "LTE",59,55,101,20').sinr_db == 0.0   # -20.2 + 101/5


@pytest.mark.parametrize("line,expect", [
    ("+CSQ: 24,99", dict(rssi_dbm=-65.0)),
    ("+CSQ: 99,99", dict(rssi_dbm=None)),              # 5G modules: "99,99"
    ("+CSQ: 0,99", dict(rssi_dbm=-113.0)),
    ("+CESQ: 99,99,255,255,20,80", dict(technology="lte", rsrq_db=-10.0, rsrp_dbm=-61.0, rssi_dbm=None, rscp_dbm=None)),
    ("+CESQ: 99,99,95,40,255,255", dict(technology="umts", rscp_dbm=-26.0, ecio_db=-4.5, rsrp_dbm=None)),
    ("+CESQ: 10,6,255,255,255,255", dict(technology="gsm", rssi_dbm=-101.0, rsrq_db=None)),
    ("+CESQ:10,6,255,255,255,255", dict(technology="gsm", rssi_dbm=-101.0)),
])
def test_at_csq_cesq_source_strings(line, expect):
    s = at.parse_sample(line)
    for k, v in expect.items():
        assert getattr(s, k) == v, k


def test_at_framing_echo_ok_error_cme_source_format():
    text = ('AT+CSQ\r\r\n+CSQ: 24,99\r\n\r\nOK\r\n'
            'AT+QENG="servingcell"\r\r\n+CME ERROR: 10\r\n'
            'AT^HCSQ?\r\r\nERROR\r\n')
    out = at.to_json(text)
    csq, cme, err = out["responses"]
    assert (csq["type"], csq["command"], csq["final"]) == ("csq", "AT+CSQ", "OK")
    assert (cme["type"], cme["final"], cme["fields"]["code"]) == ("error", "+CME ERROR: 10", 10)
    assert (err["type"], err["final"], err["fields"]["code"]) == ("error", "ERROR", None)
    assert sample(out["sample"]).rssi_dbm == -65.0


def test_at_urc_lines_are_separated_source_format():
    out = at.to_json('+QIND: "csq",20,99\r\nRDY\r\n+CSQ: 20,99\r\nOK\r\n')
    assert out["urcs"] == ['+QIND: "csq",20,99', "RDY"]
    assert sample(out["sample"]).rssi_dbm == -73.0


def test_at_cops_cereg_source_format():
    s = at.parse_sample('+COPS: 0,0,"vodafone UK",7\r\n\r\nOK\r\n+CEREG: 2,1,"300B","386B26",7\r\nOK')
    assert (s.operator_name, s.technology, s.registration) == ("vodafone UK", "lte", "home")
    assert (s.tac, s.cell_id_int, s.enb_id) == (0x300B, 3697446, 14443)
    urc = at.parse_sample('+CEREG: 5,"300B","386B26",7')          # unsolicited form: no <n>
    assert urc.registration == "roaming" and urc.cell_id_int == 3697446
    assert at.parse_sample("+COPS: 0").operator_name is None


def test_at_registry_round_trip_and_garbage():
    text = scissor_blocks(AT, "SAMPLE Q5")[0]
    out = registry_parse("at", text)
    assert out == at.to_json(text) and json.loads(json.dumps(out)) == out
    with pytest.raises(ParseError):
        registry_parse("at", "hello world\nnothing here\n")


# =========================================================================== WiMAX (02d): RECON/SOURCE

def test_wimax_wimaxcu_status_link_recon():
    block = section(WMX, "RECON")
    out = wimax.to_json(block)
    assert "SOURCE/RECON" in out["confidence"]
    s = sample(out["sample"])
    assert (s.technology, s.rssi_dbm, s.cinr_db, s.tx_power_dbm, s.frequency_khz) == ("wimax", -62.0, 21.0, 5.0, 2593000)
    assert (s.cell_id, s.cell_id_int) == ("00:00:02:0A:1B:2C", 0x0000020A1B2C)


def test_wimax_not_connected_source_string():
    s = wimax.parse_sample("Link Status: Network is not connected.\n")
    assert s.registration == "not-registered"
    assert s.cinr_db is None and s.rssi_dbm is None and s.cell_id is None      # no zeros


def test_wimax_status_connect_source_format():
    text = ("Network Info: \n\tID       : 51\n\tName     : WiBro\n\tRealm    : x\n\tSignal   : <label>\n"
            "\tRSSI     : -70 dBm\n\tCINR     : 0 dB\n\tActivated: Yes\n\tNetwork Type  : Home network\n")
    (o,) = wimax.to_json(text)["outputs"]
    assert o["type"] == "wimaxcu-connect" and o["fields"]["Name"] == "WiBro"
    assert o["sample"]["cinr_db"] == 0.0 and o["sample"]["rssi_dbm"] == -70.0   # 0 dB CINR is a value


def test_wimax_madwimax_log_source_format():
    fmt = section(WMX, "SOURCE — periodic log lines")
    assert '"RSSI: %d   CINR: %f   TX Power: %d   Frequency: %d"' in fmt
    lines = ["RSSI: %d   CINR: %f   TX Power: %d   Frequency: %d" % (-71, 0.5, 10, 2350000),
             "BSID: %02x:%02x:%02x:%02x:%02x:%02x" % (0, 0, 2, 10, 27, 44),
             "State: %s   Number: %d   Response: %d" % ("NORMAL", 3, 1),
             "RSSI: %d   CINR: %f   TX Power: %d   Frequency: %d" % (-60, 18.0, 4, 2350000)]
    out = wimax.to_json("\n".join(lines))
    first, second = out["outputs"]
    assert first["fields"]["bsid"] == "00:00:02:0a:1b:2c" and first["fields"]["state"] == "NORMAL"
    assert first["sample"]["cinr_db"] == 0.5 and first["sample"]["frequency_khz"] is None   # unit unknown
    assert first["fields"]["frequency"] == 2350000
    # same base station as wimaxcu's upper-case print
    assert first["sample"]["cell_id_int"] == wimax.bsid_identity("00:00:02:0A:1B:2C")["cell_id_int"]
    assert out["sample"]["cinr_db"] == 18.0 and out["sample"]["cell_id"] is None   # last reading


# ============================================================================================ gpsd (02e)

def test_gps_real_sample_a_redacted_line_is_reported_not_fatal():
    (text,) = scissor_blocks(GPS, "SAMPLE A")
    out = gps.to_json(text)
    assert len(out["errors"]) == 1 and "45.xxx" in out["errors"][0]["text"]
    assert out["tpv"] == [] and out["fix"] is None
    assert out["version"]["release"] == "3.16" and out["devices"][0]["driver"] == "SiRF"
    assert out["other"] == {"WATCH": 1}


def test_gps_real_sample_a_with_digits_substituted_by_the_test():
    (text,) = scissor_blocks(GPS, "SAMPLE A")
    fixed = text.replace("45.xxxxxxxxx", "45.500000000").replace("-73.xxxxxxxxx", "-73.600000000")
    fix = gps.parse(fixed)["fix"]
    assert (fix.mode, fix.lat, fix.lon, fix.alt_m) == (3, 45.5, -73.6, 42.11)   # gpsd 3.16: only "alt"
    assert fix.speed_mps == 0.0 and fix.speed_mps is not None                    # standing still is a value
    assert fix.alt_hae_m is None and fix.eph_m is None                           # absent keys -> None
    assert fix.time == "2019-05-19T14:34:39.000Z" and fix.time_unix == 1558276479.0
    assert fix.device == "/dev/ttyUSB0"


def test_gps_real_sample_b_2d_and_3d_and_sky():
    (text,) = scissor_blocks(GPS, "SAMPLE B")
    p = gps.parse(text)
    two_d, first_3d, last_3d = p["fixes"]
    assert two_d.mode == 2 and two_d.position == (44.069011, -121.314246833)
    assert two_d.alt_m is None and two_d.time is None          # 2D: no altitude; no time sent
    assert first_3d.alt_m == 1147.2 and first_3d.alt_hae_m == 1125.9   # altMSL preferred
    assert first_3d.climb_mps is None and last_3d.climb_mps == -0.2
    assert p["fix"] == last_3d
    full, short = p["skies"]
    assert (full.hdop, full.pdop, full.satellites_used) == (0.91, 1.56, 12)
    assert short.pdop is None


def test_gps_no_fix_has_no_position_source_format():
    p = gps.parse('{"class":"TPV","mode":1,"time":"2019-05-19T14:34:38.000Z","lat":1.0,"lon":2.0,"speed":3.0}\n')
    (f,) = p["fixes"]
    assert f.position is None and f.lat is None and f.speed_mps is None and not f.has_fix
    assert p["fix"] is None


def test_gps_registry_round_trip_and_errors():
    (text,) = scissor_blocks(GPS, "SAMPLE B")
    out = registry_parse("gpsd", text)
    assert out == gps.to_json(text) and json.loads(json.dumps(out)) == out
    with pytest.raises(ParseError):
        registry_parse("gpsd", "gpspipe: could not connect\n")
    assert gps.gpspipe_argv("127.0.0.1:2947", 5) == ("gpspipe", "-w", "-n", "5", "127.0.0.1:2947")


# ============================================================================== families / packaging

def _modem(family: str, device: str) -> SimpleNamespace:
    return SimpleNamespace(family=family, device=device, baud=115200, interface="wwan0")


def test_families_commands_are_argv_or_at_strings():
    assert set(FAMILIES) == {"mmcli", "qmicli", "at-quectel", "at-sierra", "at-huawei", "at-generic", "wimax"}
    for name, fam in FAMILIES.items():
        cmds = fam.poll_commands(_modem(name, "/dev/ttyUSB2" if fam.transport == "serial" else "0"))
        assert cmds, name
        for v in cmds.values():
            if fam.transport == "serial":
                assert isinstance(v, str) and v.upper().startswith("AT")
            else:
                assert isinstance(v, tuple) and all(isinstance(a, str) for a in v)
    mm = FAMILIES["mmcli"].poll_commands(_modem("mmcli", "0"))
    assert mm["signal"] == ("env", "LC_ALL=C", "mmcli", "-m", "0", "--signal-get", "-J")
    assert FAMILIES["mmcli"].setup_commands(_modem("mmcli", "0"))["signal-setup"][-1] == "--signal-setup=1"
    q = FAMILIES["qmicli"].poll_commands(_modem("qmicli", "/dev/cdc-wdm0"))
    assert q["serving-system"] == ("qmicli", "-d", "/dev/cdc-wdm0", "-p", "--nas-get-serving-system")
    assert FAMILIES["at-quectel"].poll_commands(_modem("at-quectel", "/dev/ttyUSB2"))["qeng"] == 'AT+QENG="servingcell"'


def test_family_merge_priority_and_missing():
    fam = FAMILIES["qmicli"]
    assert fam.merge({"signal-info": None, "serving-system": None}) is None       # silent modem: a gap
    (b,) = scissor_blocks(QMI, "SAMPLE B")
    parts = {o: t for o, t in zip(("signal-strength", "serving-system", "cell-location"),
                                  re.split(r"\n(?=# )", b.strip()))}
    s = fam.merge(parts)
    assert s.registration == "home" and s.pci == 177 and s.snr_db == 7.2 and s.rsrp_dbm == -92.9
    # a reply of another type inside a command's output does not fill fields (+CSQ parser ignores ^HCSQ)
    s = FAMILIES["at-huawei"].merge({"csq": '^HCSQ: "LTE",59,55,105,20\r\n+CSQ: 24,99\r\nOK'})
    assert s.rssi_dbm == -65.0 and s.rsrp_dbm is None


def test_serial_poll_argv_and_urc_tables_in_sync():
    fam = FAMILIES["at-quectel"]
    argv = serial_poll_argv(fam, _modem("at-quectel", "/dev/ttyUSB2"))
    assert argv[:3] == ("/usr/bin/python3", "-m", "nodes.modem.serial_poll")
    assert "--setup" in argv and 'qeng=AT+QENG="servingcell"' in argv
    assert serial_poll.URC_PREFIXES == at.URC_PREFIXES


def test_merge_samples_earlier_wins_and_none_is_a_gap():
    a = RadioSample(rsrp_dbm=-90.0, sinr_db=0.0)
    b = RadioSample(rsrp_dbm=-80.0, sinr_db=5.0, pci=7)
    m = merge_samples([None, a, b])
    assert (m.rsrp_dbm, m.sinr_db, m.pci) == (-90.0, 0.0, 7)      # 0.0 is a value and wins
    assert merge_samples([None, None]) is None
    assert RadioSample.from_json(m.to_json()) == m


def test_nodes_modem_is_stdlib_only():
    # The modem host runs /usr/bin/python3 without our venv: -S (no site-packages) and no controller package.
    code = ("import sys; sys.modules['controller'] = None\n"
            "import nodes.modem.radio, nodes.modem.at, nodes.modem.mmcli, nodes.modem.qmicli, nodes.modem.gps,"
            " nodes.modem.wimax, nodes.modem.families, nodes.modem.handover, nodes.modem.serial_poll,"
            " nodes.modem.emulator\n"
            "from nodes.modem.radio import ParseError\n"
            "assert issubclass(ParseError, ValueError)\n"
            "bad = [m for m in sys.modules if m.split('.')[0] in ('pydantic', 'yaml', 'asyncssh')]\n"
            "assert not bad, bad\n")
    r = subprocess.run([sys.executable, "-S", "-c", code], cwd=REPO, capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr


def test_real_mmcli_1_20_daemon_recent_flag_and_the_families_provenance():
    """ModemManager's "recent" flag on the signal quality, from the real 1.20.4 captures; "no" / "cached" (after
    60 s without a new quality: SIGNAL_QUALITY_RECENT_TIMEOUT_SEC in src/mm-iface-modem.c) is this test's own
    copy of the capture with the flag turned, as mmcli-output.c prints it (JSON "no", human "(cached)")."""
    gen = REPO / "tests" / "fixtures" / "generated" / "modemmanager"
    js, human = (gen / "modem_lte_cell_a.json").read_text(), (gen / "modem_lte_cell_a.txt").read_text()
    assert mmcli.daemon_recent(js) is True and mmcli.daemon_recent(human) is True
    assert mmcli.daemon_recent(js.replace('"recent":"yes"', '"recent":"no"')) is False
    assert mmcli.daemon_recent(human.replace("80% (recent)", "80% (cached)")) is False
    assert mmcli.daemon_recent((gen / "signal_lte_cell_a.json").read_text()) is None     # the signal says nothing
    fam = FAMILIES["mmcli"]
    assert fam.provenance({"signal": (gen / "signal_lte_cell_a.json").read_text(), "modem": js}) == \
        {"read_from": "daemon", "daemon_recent": True}
    assert fam.provenance({"modem": None}) == {"read_from": "daemon"}
    daemons = ("mmcli", "wimax")                   # wimaxcu asks the WiMAX Network Service
    assert {n: f.provenance({}) for n, f in FAMILIES.items() if n not in daemons} == \
        {n: {"read_from": "modem"} for n in FAMILIES if n not in daemons}
    assert FAMILIES["wimax"].provenance({}) == {"read_from": "daemon"}
