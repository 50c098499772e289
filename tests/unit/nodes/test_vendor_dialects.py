"""Vendor AT dialects (nodes/modem/vendors.py). Cinterion/Thales ^SMONI: every line of
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
