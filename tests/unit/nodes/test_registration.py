"""The 27.007 registration family (+CREG, +CGREG, +CEREG, +C5GREG) in every <n> form, each
<stat> value, read responses and URCs told apart by shape, and +COPS with several lines.

Forms are written from 3GPP TS 27.007 (sections 7.2, 10.1.20, 10.1.22, 10.1.36); the lines
marked MM are ModemManager's own unit-test strings (src/tests/test-modem-helpers.c), with the
values its tests expect."""
from __future__ import annotations

import pytest

from nodes.modem import at
from nodes.modem.registration import STAT, parse_line


def reply(text: str):
    records, urcs, unparsed = at.parse_records(text)
    assert unparsed == [] and urcs == [], (urcs, unparsed)
    return records


@pytest.mark.parametrize("prefix, payload, want", [
    # +CREG, n = 0/1 read, n = 2 read and URC, n = 3 with the reject cause (TS 27.007 7.2)
    ("+CREG", "0,1", dict(form="read", n=0, stat=1, registration="home")),
    ("+CREG", "1", dict(form="unsolicited", n=None, stat=1)),
    ("+CREG", '2,5,"00C3","0010A2B3",2', dict(form="read", n=2, stat=5, lac="00C3", lac_int=0xC3,
                                             ci="0010A2B3", ci_int=0x10A2B3, act=2, registration="roaming")),
    ("+CREG", '5,"00C3","0010A2B3",2', dict(form="unsolicited", stat=5, lac_int=0xC3, act=2)),
    ("+CREG", '3,3,"00C3","A2B3",0,0,15', dict(form="read", n=3, stat=3, registration="denied", cause_type="0",
                                              reject_cause="15")),
    # +CGREG with <rac> and the n = 4 PSM timers (10.1.20); MM: Thuraya, quoted, read and URC
    ("+CGREG", '4,1,"1A2B","01C3D4E5",2,"7F",,,"00100100","01000111","00000001"',
     dict(form="read", n=4, stat=1, lac_int=0x1A2B, ci_int=0x1C3D4E5, act=2, rac="7F", active_time="00100100",
          periodic_rau="01000111", gprs_ready_timer="00000001")),
    ("+CGREG", '2, 1, "0426", "F00F"', dict(form="read", n=2, stat=1, lac_int=0x0426, ci_int=0xF00F)),   # MM
    ("+CGREG", '1, "0426", "F00F"', dict(form="unsolicited", stat=1, lac_int=0x0426, ci_int=0xF00F)),    # MM
    # +CEREG (10.1.22): MM's unquoted forms, the multi-digit <stat>, and the extra RAC field
    ("+CEREG", "1,3", dict(form="read", n=1, stat=3, registration="denied")),                            # MM
    ("+CEREG", "3", dict(form="unsolicited", stat=3)),                                                   # MM
    ("+CEREG", "2,1, 1F00, 79D903 ,7", dict(form="read", stat=1, tac_int=0x1F00, ci_int=0x79D903, act=7)),  # MM
    ("+CEREG", "1, 1F00, 79D903 ,7", dict(form="unsolicited", stat=1, tac_int=0x1F00, ci_int=0x79D903)),  # MM
    ("+CEREG", '2,10,"8d83","671f98a",7', dict(form="read", stat=10, tac_int=0x8D83, ci_int=0x671F98A,   # MM
                                              registration="roaming")),
    ("+CEREG", "2,10, 2CA8, 20 ,B5583D ,7", dict(form="read", stat=10, tac_int=0x2CA8, rac="20",        # MM
                                                ci_int=0xB5583D, act=7)),
    ("+CEREG", "11, 78FE, 20 ,14419E ,7", dict(form="unsolicited", stat=11, tac_int=0x78FE,            # MM
                                              ci_int=0x14419E, registration="limited")),
    ("+CEREG", "1, 2, 0001, 00000100, 7", dict(form="read", n=1, stat=2, tac_int=1, ci_int=0x100)),     # MM Altair
    ("+CEREG", "2, 0001, 00000100, 7", dict(form="unsolicited", stat=2, tac_int=1, ci_int=0x100)),      # MM Altair
    ("+CEREG", "2,1, 1F00, 20 ,79D903 ,7", dict(form="read", stat=1, rac="20", ci_int=0x79D903)),       # MM Novatel
    ("+CEREG", '4,1,"0B2C","0A1B2C3D",7,,,"00100100","01000111"',
     dict(form="read", n=4, stat=1, tac_int=0x0B2C, active_time="00100100", periodic_tau="01000111")),
    # +C5GREG (10.1.36): MM's forms, a quoted 36-bit NR cell id
    ("+C5GREG", "1,3", dict(form="read", n=1, stat=3)),                                                  # MM
    ("+C5GREG", "1, 10", dict(form="read", n=1, stat=10)),                                               # MM
    ("+C5GREG", "3", dict(form="unsolicited", stat=3)),                                                  # MM
    ("+C5GREG", "2,1,1F00,79D903,11,6,ABCDEF", dict(form="read", stat=1, tac_int=0x1F00, ci_int=0x79D903,  # MM
                                                   act=11, allowed_nssai_length="6", allowed_nssai="ABCDEF")),
    ("+C5GREG", "1,1F00,79D903,11,6,ABCDEF", dict(form="unsolicited", stat=1, tac_int=0x1F00, act=11)),  # MM
    ("+C5GREG", '2,1,"00A1B2","0123456789",11', dict(form="read", tac_int=0xA1B2, ci_int=0x123456789)),
])
def test_every_form(prefix, payload, want):
    got = parse_line(prefix, payload)
    for k, v in want.items():
        assert got[k] == v, (k, got)


def test_every_stat_value_has_a_meaning_and_a_normalized_registration():
    assert sorted(STAT) == list(range(12))
    for stat, (text, norm) in STAT.items():
        line = parse_line("+CEREG", f"2,{stat}")
        assert line["stat_text"] == text and line["registration"] == norm
    assert parse_line("+CEREG", "2,6")["registration"] == "home"          # SMS only, home
    assert parse_line("+CEREG", "2,8")["registration"] == "limited"       # emergency bearer only


def test_creg_and_cgreg_replies_keep_lac_cell_and_registration():
    recs = reply('AT+CREG?\r\n+CREG: 2,1,"00C3","0010A2B3",2\r\n\r\nOK\r\n'
                 'AT+CGREG?\r\n+CGREG: 2,5,"00C4","0010A2B4",6,"7F"\r\n\r\nOK\r\n')
    creg, cgreg = recs
    assert creg.type == "creg" and creg.sample.registration == "home" and creg.sample.lac == 0xC3
    assert creg.sample.cell_id_int == 0x10A2B3 and creg.sample.technology == "umts"
    assert cgreg.type == "cgreg" and cgreg.sample.registration == "roaming" and cgreg.fields["rac"] == "7F"
    assert cgreg.sample.technology == "umts"


def test_cereg_area_code_is_never_read_as_the_cell():
    (r,) = reply("AT+CEREG?\r\n+CEREG: 2,1, 1F00, 20 ,79D903 ,7\r\n\r\nOK\r\n")
    assert r.sample.tac == 0x1F00 and r.sample.cell_id_int == 0x79D903 and r.fields["rac"] == "20"
    assert r.sample.enb_id == 0x79D903 >> 8 and r.sample.technology == "lte"


def test_two_cops_lines_keep_the_name_and_the_plmn():
    text = ('AT+COPS=3,0;+COPS?;+COPS=3,2;+COPS?\r\n+COPS: 0,0,"3 UK Things Mobile",7\r\n'
            '+COPS: 0,2,"23420",7\r\n\r\nOK\r\n')
    (r,) = reply(text)
    s = r.sample
    assert (s.operator_name, s.mcc, s.mnc, s.technology) == ("3 UK Things Mobile", "234", "20", "lte")
    assert [e["format"] for e in r.fields["lines"]] == [0, 2]


def test_a_urc_inside_another_reply_is_still_a_registration_record():
    recs = reply('AT+CSQ\r\n+CSQ: 20,99\r\n+CEREG: 5,"0B2C","0A1B2C3D",7\r\n\r\nOK\r\n')
    assert [r.type for r in recs] == ["csq", "cereg"]
    assert recs[1].fields["form"] == "unsolicited" and recs[1].sample.registration == "roaming"
    # a poll that asked for +CSQ only takes the +CSQ record
    assert at.sample_of("csq")('AT+CSQ\r\n+CSQ: 20,99\r\n+CEREG: 5,"0B2C","0A1B2C3D",7\r\n\r\nOK\r\n').registration \
        is None
