"""Vendor AT dialects (nodes/modem/vendors*.py). Cinterion/Thales ^SMONI: every line of
ModemManager's own unit test (src/plugins/cinterion/tests/test-modem-helpers-cinterion.c,
smoni_response_tests) with the values that test expects, plus the fields it skips."""
from __future__ import annotations

import pytest

from nodes.modem import at

# (line, technology or None when searching, rssi, ecn0, rscp, rsrp, rsrq) as ModemManager's test expects
MM_SMONI = [
    ("^SMONI: 2G,71,-61,262,02,0143,83BA,33,33,3,6,G,NOCONN", "gsm", -61.0, None, None, None, None),
    ("^SMONI: 2G,SEARCH,SEARCH", None, None, None, None, None, None),
    ("^SMONI: 2G,673,-89,262,07,4EED,A500,16,16,7,4,G,5,-107,LIMSRV", "gsm", -89.0, None, None, None, None),
    ("^SMONI: 2G,673,-80,262,07,4EED,A500,35,35,7,4,G,643,4,0,-80,0,S_FR", "gsm", -80.0, None, None, None, None),
    ("^SMONI: 3G,10564,296,-7.5,-79,262,02,0143,00228FF,-92,-78,NOCONN", "umts", None, -7.5, -79.0, None, None),
    ("^SMONI: 3G,SEARCH,SEARCH", None, None, None, None, None, None),
    ("^SMONI: 3G,10564,96,-6.5,-77,262,02,0143,00228FF,-92,-78,LIMSRV", "umts", None, -6.5, -77.0, None, None),
    ("^SMONI: 3G,10737,131,-5,-93,260,01,7D3D,C80BC9A,--,--,----,---,-,-5,-93,0,01,06", "umts", None, -5.0, -93.0,
     None, None),
    ("^SMONI: 4G,6300,20,10,10,FDD,262,02,BF75,0345103,350,33,-94,-7,NOCONN", "lte", None, None, None, -94.0, -7.0),
    ("^SMONI: 4G,SEARCH", None, None, None, None, None, None),
    ("^SMONI: 4G,6300,20,10,10,FDD,262,02,BF75,0345103,350,33,-90,-6,LIMSRV", "lte", None, None, None, -90.0, -6.0),
    ("^SMONI: 4G,6300,20,10,10,FDD,262,02,BF75,0345103,350,90,-101,-7,CONN", "lte", None, None, None, -101.0, -7.0),
    ("^SMONI: 4G,2850,7,20,20,FDD,262,02,C096,027430F,275,11,-114,-9,NOCONN", "lte", None, None, None, -114.0, -9.0),
    ("^SMONI: 4G,2850,7,20,20,FDD,262,02,C096,027430F,275,-,-113,-8,CONN", "lte", None, None, None, -113.0, -8.0),
]


@pytest.mark.parametrize("line, tech, rssi, ecn0, rscp, rsrp, rsrq", MM_SMONI)
def test_smoni_as_modemmanager_reads_it(line, tech, rssi, ecn0, rscp, rsrp, rsrq):
    (r,) = at.parse_records(f"AT^SMONI\r\n{line}\r\n\r\nOK\r\n")[0]
    s = r.sample
    assert r.type == "smoni"
    if tech is None:
        assert r.fields["searching"] and s.registration == "searching"
        return
    assert (s.technology, s.rssi_dbm, s.ecio_db, s.rscp_dbm, s.rsrp_dbm, s.rsrq_db) == (tech, rssi, ecn0, rscp, rsrp,
                                                                                        rsrq)


def test_smoni_lte_serving_cell_fields():
    (r,) = at.parse_records("^SMONI: 4G,6300,20,10,10,FDD,262,02,BF75,0345103,350,90,-101,-7,CONN\r\nOK\r\n")[0]
    s = r.sample
    assert (s.arfcn, s.band, s.bandwidth_mhz, s.mcc, s.mnc, s.tac, s.pci) == (6300, "B20", 10.0, "262", "02", 0xBF75,
                                                                             350)
    assert s.cell_id_int == 0x0345103 and s.enb_id == 0x0345103 >> 8 and s.connection == "connected"
    (r,) = at.parse_records("^SMONI: 2G,673,-89,262,07,4EED,A500,16,16,7,4,G,5,-107,LIMSRV\r\nOK\r\n")[0]
    assert r.sample.registration == "limited" and r.sample.lac == 0x4EED and r.fields["more"] == ["5", "-107", "LIMSRV"]


# ------------------------------------------------------------------------------------------------
# Huawei ^HCSQ (nodes/modem/vendors_huawei.py). GSM/WCDMA/LTE lines: ModemManager's own test strings
# (src/plugins/huawei/tests/test-modem-helpers-huawei.c, hcsq_tests, @9a2d5863) with the values its
# plugin's conversions give. NR: the MT5700M layout "NR",<rsrp>,<sinr>,<rsrq> on the LTE scales
# (LianXia233/luci-app-mt5700m root/usr/sbin/mt5700m-at @123951ee); the index values are ours.

@pytest.mark.parametrize("line, tech, rssi, rsrp, sinr, rsrq, ecio", [
    ('^HCSQ:"LTE",30,19,66,0', "lte", -91.0, -122.0, -7.0, -20.0, None),
    ('^HCSQ: "WCDMA",30,30,58', "umts", -91.0, None, None, None, -3.5),
    ('^HCSQ: "GSM",36,255', "gsm", -85.0, None, None, None, None),
    ("^HCSQ: LTE,33,40,135,11", "lte", -88.0, -101.0, 6.8, -14.5, None),
    ('^HCSQ: "NR",76,241,31', "nr5g", None, -65.0, 28.0, -4.5, None),
    ('^HCSQ: "NR",58,165,22', "nr5g", None, -83.0, 12.8, -9.0, None),
    ('^HCSQ: "NR",51,151,255', "nr5g", None, -90.0, 10.0, None, None),   # 255 = not known
])
def test_hcsq_per_sysmode(line, tech, rssi, rsrp, sinr, rsrq, ecio):
    (r,) = at.parse_records(f"AT^HCSQ?\r\n{line}\r\n\r\nOK\r\n")[0]
    s = r.sample
    assert r.type == "hcsq"
    assert (s.technology, s.rssi_dbm, s.rsrp_dbm, s.sinr_db, s.rsrq_db, s.ecio_db) == (tech, rssi, rsrp, sinr, rsrq,
                                                                                       ecio)


def test_hcsq_nr_keeps_raw_indices_and_refuses_out_of_scale_values():
    (r,) = at.parse_records('^HCSQ: "NR",120,241,31\r\nOK\r\n')[0]
    assert r.fields["values"] == [120, 241, 31] and (r.fields["rsrp"], r.fields["sinr"], r.fields["rsrq"]) == (120,
                                                                                                             241, 31)
    assert r.sample.rsrp_dbm is None and r.sample.sinr_db == 28.0      # 120 is outside the 0..97 RSRP scale


def test_hcsq_lte_and_nr_lines_in_one_reply_are_en_dc():
    (r,) = at.parse_records('AT^HCSQ?\r\n^HCSQ: "LTE",59,55,105,20\r\n^HCSQ: "NR",76,241,31\r\n\r\nOK\r\n')[0]
    s = r.sample
    assert s.technology == "nr5g-nsa" and (s.rssi_dbm, s.rsrp_dbm, s.sinr_db, s.rsrq_db) == (-62.0, -86.0, 0.8, -10.0)
    nr = s.leg("nr5g")
    assert (nr.rsrp_dbm, nr.sinr_db, nr.rsrq_db) == (-65.0, 28.0, -4.5)
    assert [x["sysmode"] for x in r.fields["lines"]] == ["LTE", "NR"]
    # same in the other order
    (r,) = at.parse_records('^HCSQ: "NR",76,241,31\r\n^HCSQ: "LTE",59,55,105,20\r\nOK\r\n')[0]
    assert r.sample.technology == "nr5g-nsa" and r.sample.rsrp_dbm == -86.0


def test_hcsq_unknown_sysmode_kept_raw_noservice_not_registered():
    (r,) = at.parse_records('^HCSQ: "LTE+NR",1,2,3\r\nOK\r\n')[0]
    assert r.sample is None and r.fields == {"sysmode": "LTE+NR", "values": [1, 2, 3]}
    (r,) = at.parse_records('^HCSQ: "NOSERVICE"\r\nOK\r\n')[0]
    assert r.sample.registration == "not-registered"


# ------------------------------------------------------------------------------------------------
# Telit #RFSTS, SIMCom +CPSI, Fibocom +GTCCINFO, u-blox +UCGED (nodes/modem/vendors.py): real lines
# from public sources, each with its source; the expected values read off by hand with the formulas
# the module cites.

RFSTS_TMO = ('#RFSTS: "310 260",66786,-101,-68,-13,2D18,255,,640,1,0,3089F02,"000000000000000","T-Mobile",3,66')
# ^ a recorded LE910C1 transcript in a public test suite (find_string index; the IMSI zeroed by its author)
RFSTS_TURKCELL = '#RFSTS: "286 01",1795,-101,-67,-15,2242,,128,3,1,0B5D121,"286016339612498","Turkcell",3,3,108'
# ^ a comment in a public Telit LE910 driver (two real lines, Turkcell band 3), TXPWR absent, SINR present
RFSTS_GSM = '#RFSTS: "204 04",1001,-80,00DE,01,5,19,10,2,9878,"204007930002270","vodafone NL",1,2'
# ^ pmoerenhout/atcommander, module/telit ReadNetworkStatusResponse.java comment (GSM, vodafone NL)


def _one(text: str):
    (r,) = at.parse_records(text)[0]
    return r


def test_rfsts_lte_with_empty_txpwr():
    r = _one(f"AT#RFSTS\r\n{RFSTS_TMO}\r\n\r\nOK\r\n")
    s = r.sample
    assert r.type == "rfsts" and r.fields["rat"] == "lte" and r.fields["drx"] == "640"
    assert (s.mcc, s.mnc, s.arfcn, s.rsrp_dbm, s.rssi_dbm, s.rsrq_db, s.tac, s.band) == (
        "310", "260", 66786, -101.0, -68.0, -13.0, 0x2D18, "B66")
    assert s.cell_id_int == 0x3089F02 and s.sinr_db is None


def test_rfsts_lte_without_txpwr_but_with_sinr():
    s = _one(f"{RFSTS_TURKCELL}\r\nOK\r\n").sample
    assert (s.tac, s.cell_id, s.band, s.sinr_db) == (0x2242, "0B5D121", "B3", 1.6)     # 108/5 - 20


def test_rfsts_gsm_by_shape():
    r = _one(f"{RFSTS_GSM}\r\nOK\r\n")
    assert r.fields["rat"] == "gsm" and r.fields["cid"] == "9878"
    assert (r.sample.technology, r.sample.rssi_dbm, r.sample.lac, r.sample.cell_id_int) == ("gsm", -80.0, 0xDE, 0x9878)


def test_rfsts_wcdma_by_shape_source_layout():
    # WCDMA layout from the reference guide (values ours): PSC a plain number in field 3
    line = '#RFSTS: "262 01",10788,317,-3.5,-82,-78,7D3D,C1,-1,64,19,0,0,0.0,1234567,"262011234567890","T-Mobile D",3,1'
    s = _one(f"{line}\r\nOK\r\n").sample
    assert (s.technology, s.arfcn, s.ecio_db, s.rscp_dbm, s.rssi_dbm, s.lac, s.cell_id) == (
        "umts", 10788, -3.5, -82.0, -78.0, 0x7D3D, "1234567")


CPSI_ENDC = ("+CPSI: LTE,Online,460-01,0x7496,251941991,203,EUTRAN-BAND8,3740,3,3,-92,-672,-418,14")
# ^ a comment in a public SIMCom 5G OpenWrt script (find_string index), EN-DC LTE anchor line
CPSI_MANUAL = "+CPSI: LTE,Online,505-01,0x5A1E,187214780,257,EUTRAN-BAND3,1850,5,5,-94,-850,-545,15"
# ^ the SIM7600 manual's example as a public emulator test uses it


def test_cpsi_lte_tenths_and_rssnr():
    s = _one(f"AT+CPSI?\r\n{CPSI_ENDC}\r\n\r\nOK\r\n").sample
    assert (s.technology, s.mcc, s.mnc, s.tac, s.cell_id_int, s.pci, s.band, s.arfcn) == (
        "lte", "460", "01", 0x7496, 251941991, 203, "B8", 3740)
    assert (s.rsrq_db, s.rsrp_dbm, s.rssi_dbm, s.sinr_db, s.bandwidth_mhz) == (-9.2, -67.2, -41.8, 8.0, 10.0)
    s = _one(f"{CPSI_MANUAL}\r\nOK\r\n").sample
    assert (s.rsrq_db, s.rsrp_dbm, s.rssi_dbm, s.sinr_db, s.bandwidth_mhz) == (-9.4, -85.0, -54.5, 10.0, 20.0)


def test_cpsi_units_by_magnitude_and_indices_not_levels():
    s = _one("+CPSI: LTE,Online,460-11,0x774B,126375687,303,EUTRAN-BAND1,100,5,0,-9,-85,-60,5\r\nOK\r\n").sample
    assert (s.rsrq_db, s.rsrp_dbm, s.rssi_dbm) == (-9.0, -85.0, -60.0)           # whole units as printed
    # the SIM7600 manual's own example prints positive numbers: not levels, kept raw only
    r = _one("+CPSI: LTE,Online,460-11,0x774B,126375687,303,EUTRAN-BAND1,100,5,0,12,36,42,5\r\nOK\r\n")
    assert r.sample.rsrp_dbm is None and r.fields["rsrp"] == "36"


def test_cpsi_nr_sa_and_endc():
    s = _one("+CPSI: NR5G_SA,Online,460-00,0x1B28C0,4840693847,397,NR5G_BAND41,504990,-833,-110,172\r\nOK\r\n").sample
    assert (s.technology, s.band, s.arfcn, s.rsrp_dbm, s.rsrq_db, s.sinr_db, s.tac) == (
        "nr5g-sa", "n41", 504990, -83.3, -11.0, 17.2, 0x1B28C0)
    r = _one(f"{CPSI_ENDC}\r\n+CPSI: NR5G_NSA,644,NR5G_BAND78,627264,-960,-120,95\r\nOK\r\n")
    nr = r.sample.leg("nr5g")
    assert r.sample.technology == "nr5g-nsa" and r.sample.rsrp_dbm == -67.2
    assert (nr.pci, nr.band, nr.arfcn, nr.rsrp_dbm, nr.rsrq_db, nr.sinr_db) == (644, "n78", 627264, -96.0, -12.0, 9.5)


GTCCINFO = ("AT+GTCCINFO?\r\n+GTCCINFO:\r\nLTE service cell:\r\n1,4,262,02,BFD3,2D4201,189C,30,120,50,16,42,42,26\r\n"
            "LTE neighbor cell:\r\n2,4,,,,,189C,190,,24,24,2\r\n2,4,,,,,189C,DB,,34,34,10\r\n\r\nOK\r\n")
# ^ a Fibocom modem on Vodafone DE, 4IceG/luci-app-3ginfo-lite pull request #32 (HansBorjes, 2023-01-29)


def test_gtccinfo_lte_serving_cell():
    r = _one(GTCCINFO)
    s = r.sample
    assert r.type == "gtccinfo" and len(r.fields["cells"]) == 3
    assert (s.mcc, s.mnc, s.tac, s.cell_id, s.arfcn, s.pci, s.band, s.bandwidth_mhz) == (
        "262", "02", 0xBFD3, "2D4201", 6300, 0x30, "B20", 10.0)
    assert (s.rsrp_dbm, s.rsrq_db, s.sinr_db) == (-99.0, -7.0, 8.0)


def test_gtccinfo_nr_scales():
    text = "+GTCCINFO:\r\nNR service cell:\r\n1,9,505,01,E0A1,1F2C3D4E5,A1C20,1F5,5078,100,87,255,70,60\r\nOK\r\n"
    s = _one(text).sample
    assert (s.technology, s.band, s.arfcn, s.pci, s.bandwidth_mhz) == ("nr5g-sa", "n78", 0xA1C20, 0x1F5, 100.0)
    assert (s.rsrp_dbm, s.rsrq_db, s.sinr_db) == (-87.0, -13.0, 20.0)      # -157+70, 60/2-43, (87-47)/2


UCGED_R5 = "AT+UCGED?\r\n+UCGED: 2\r\n6,4,001,01\r\n" \
           "2525,5,50,50,e8fe,1a2d001,1,d60814d1,8001,01,28,31,13.75,3,1,10,28,-50,-6,0,255,255,0\r\n\r\nOK\r\n"
UCGED_R422 = "AT+UCGED?\r\n+UCGED: 2\r\n6,310,410\r\n5110,12,10,10,830e,162,-86,-14,131,-1,3,255,128,\"FB306E02\"\r\nOK\r\n"
# ^ both from u-blox/ubxlib cell/src/u_cell_info.c @07980f4d (the examples in its comments)


def test_ucged_sara_r5_indices():
    r = _one(UCGED_R5)
    s = r.sample
    assert r.fields["layout"] == "sara-r5" and r.fields["rsrp"] == "28"
    assert (s.technology, s.arfcn, s.band, s.tac, s.cell_id, s.pci) == ("lte", 2525, "B5", 0xE8FE, "1a2d001", 1)
    assert (s.rsrp_dbm, s.rsrq_db, s.sinr_db, s.mcc, s.mnc) == (-113.0, -4.5, 13.75, "001", "01")


def test_ucged_sara_r422_plain_levels():
    r = _one(UCGED_R422)
    s = r.sample
    assert r.fields["layout"] == "sara-r422"
    assert (s.arfcn, s.band, s.tac, s.pci, s.rsrp_dbm, s.rsrq_db, s.mcc, s.mnc) == (
        5110, "B12", 0x830E, 162, -86.0, -14.0, "310", "410")


def test_ucged_not_registered_placeholders_give_nothing():
    text = "+UCGED: 2\r\n6,2,fff,fff\r\n65535,255,255,255,ffff,0000000,65535,00000000,ffff,ff,255,255,255,1,255,255," \
           "255,255,255,0,255,255,0\r\nOK\r\n"
    s = _one(text).sample
    assert (s.mcc, s.arfcn, s.tac, s.cell_id, s.pci, s.rsrp_dbm, s.rsrq_db) == (None,) * 7
