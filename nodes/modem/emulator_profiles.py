"""Who the emulated modem says it is, per vendor family -- part of the AT modem emulator, a TEST DOUBLE for
hardware we do not have (nodes/modem/emulator.py). Stdlib only.

A `Profile` holds what differs between vendors in the standard commands (identification strings and their
layout, the lists a test command `AT+XXX=?` returns, the character sets, the boot URCs) plus the SIM the
emulated modem holds. The standard commands themselves are answered in emulator_3gpp.py; vendor commands
(+QENG, !GSTATUS, ^HCSQ, ...) in emulator.py.

Sources of each layout -- what was read, and what is ASSUMED (and from where):
* ITU-T V.250 (ATI, +GMI/+GMM/+GMR/+GSN, +GCAP) and 3GPP TS 27.007 (+CGMI/+CGMM/+CGMR/+CGSN, +CIMI, +CNUM,
  +CLCK, +CSCS, +WS46, +CESQ, +CGDCONT, +CUSD) define the commands and the shape of each reply; what a
  vendor puts into them:
* Quectel: the emulated model is an RM530N-GL (its model and firmware strings are the recorded ones: 02a
  SAMPLE A/C). Its own manual -- Quectel's "RG520N & RG52xF & RG530F & RM520N & RM530N Series AT Commands
  Manual", named as a reference by public code -- was NOT found through the search tool: no RM530N-GL reply
  layout here comes from it. The layouts are those of Quectel's LTE modules, ASSUMED to hold for the
  RM530N-GL: the "EC25 & EC21 AT Commands Manual" V1.3 (2018-09-20, LTE Module Series; the manual exists
  under that title and version, its pages were cited by the first version of this file and not re-read
  for this note): ATI prints three lines, "Quectel", the model, "Revision: <firmware>" ("ATI Display MT
  Identification Information"; the same three lines in public transcripts, e.g.
  "Quectel\r\nEC25\r\nRevision: EC25EFAR06A03M4G"); +CGMI "Quectel", +CGMM the model, +CGMR the firmware
  without a label, +CGSN the IMEI alone; +CNMI=? "(0-2),(0-3),(0,2),(0-2),(0,1)" (the EC25 manual's test
  response -- the same string is the "+CNMI=?" Telit's GM862-QUAD-PY AT Commands Reference Guide,
  80000ST10025a Rev. 5, prints "for compatibility with previous versions": a common answer, not Quectel's
  own). +CTZU=? "(0,1,3)" is what ModemManager 1.20.4 expects of Quectel firmware
  (plugins/quectel/mm-modem-helpers-quectel.c, `mm_quectel_parse_ctzu_test_response`, lists "(0,1)" and
  "(0,1,3)"). Boot URCs "RDY", "+CPIN: READY", "+QUSIM: 1", "+QIND: SMS DONE" as in the recorded samples
  (tests/fixtures/recorded/02c_*).
* Sierra Wireless (EM7455): no Sierra manual was read. Its manual is Sierra's "AirPrime EM74xx/MC74xx AT
  Command Reference" (document 4117727), named by public notes but not seen here. The ATI lines
  "Manufacturer: Sierra Wireless, Incorporated", "Model:", "Revision:", "MEID:", "IMEI:", "IMEI SV:",
  "FSN:", "+GCAP: +CGSM" are copied from public EM7455 transcripts (e.g. a user's notes of 2019-05-13
  printing these eight lines with "Revision: SWI9X30C_02.24.05.06 r7040 CARMD-EV-FRMWR2 2017/05/19
  06:23:09"; the code search does not name its repository); +CGMI "Sierra Wireless, Incorporated" is the
  same string.
* Huawei (ME906s): ATI prints "Manufacturer:", "Model:", "Revision:", "IMEI:", "+GCAP:" -- the fields of
  the "HUAWEI MG323 GSM M2M Module AT Command Interface Specification" Issue 02 (2010-11-23), 6.1 "ATI -
  Command for Querying the Product Information": vendor (+CGMI), model (+CGMM), software version (+CGMR),
  ESN/IMEI (+CGSN) and capability list (+GCAP). That table spells the labels "Manufacture:" and "GCAP:";
  the emulator's "Manufacturer:" and "+GCAP:" are ASSUMED (the LTE module's own "HUAWEI ME909s Series LTE
  Module AT Command Interface Specification" V100R001 Issue 03, 2019-03-13, exists but its ATI page was not
  read). +CGMI "Huawei Technologies Co., Ltd.". The model is the ME906 of recorded SAMPLE H1.
* generic: a modem that follows 27.007 and V.250 and says nothing else (manufacturer "Generic").
* Every Profile field a vendor row below does not set is the class default, ASSUMED for that vendor -- no
  Sierra or Huawei manual was read for any of them: +CNMI=? is the EC25 string above; +CTZU=? "(0,1)" the
  other of the two Quectel shapes ModemManager lists; the +WS46 list, the +CPMS memories, the +CLCK
  facilities, the character sets and +CGDCONT's last cid (16) came with the first version of this file
  without a source: they are 27.007-shaped answers, not any vendor's.

The identity values (IMEI, IMSI, ICCID, MSISDN, SMS service centre, revisions) are the emulator's own:
INVENTED, except the Quectel IMEI and model/revision, which are those of the recorded RM530N-GL (02a SAMPLE
C). The MSISDN and the service centre are in Ofcom's range for drama (07700 900xxx), which no real
subscriber has.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Sim:
    imsi: str                       # MCC + MNC + MSIN
    mnc_digits: int                 # EF_AD byte 4: how many digits of the IMSI after the MCC are the MNC
    iccid: str                      # 19 or 20 digits (printed on the card)
    msisdn: str                     # international format, for +CNUM
    spn: str                        # EF_SPN service provider name
    smsc: str = "+447700900999"     # EF_SMSP's service centre address, for +CSCA (INVENTED, drama range)
    pin_retries: int = 3
    puk_retries: int = 10


@dataclass(frozen=True)
class Profile:
    vendor: str
    manufacturer: str               # +CGMI / +GMI
    model: str                      # +CGMM / +GMM
    revision: str                   # +CGMR / +GMR
    imei: str                       # +CGSN / +GSN
    ati: tuple[str, ...]            # ATI information lines
    gcap: str                       # +GCAP information line
    sim: Sim
    charsets: tuple[str, ...] = ("IRA", "GSM", "UCS2")
    default_charset: str = "IRA"
    ws46: str = "(12,22,25,28,29,30,31)"
    cnmi_test: str = "(0-2),(0-3),(0,2),(0-2),(0,1)"   # EC25 manual's; ASSUMED for the others (docstring)
    cpms_mems: tuple[str, ...] = ("SM", "ME", "MT")
    clck_facilities: tuple[str, ...] = ("SC", "AO", "OI", "OX", "AI", "IR", "AB", "AG", "AC", "PS", "FD")
    ctzu_test: str = "(0,1)"
    cgdcont_max_cid: int = 16
    apn: str = "internet"           # context 1, as a SIM profile provisions it (INVENTED)
    short_operator: dict[str, str] = field(default_factory=dict)   # long name -> short name (+COPS format 1)
    boot_urcs: tuple[str, ...] = ()


VODAFONE_UK = Sim(imsi="234150123456789", mnc_digits=2, iccid="8944100012345678903", msisdn="+447700900123",
                  spn="vodafone UK")

PROFILES: dict[str, Profile] = {
    "quectel": Profile(
        "quectel", "Quectel", "RM530N-GL", "RM530NGLAAR05A01M4G", "867978050021665",
        ati=("Quectel", "RM530N-GL", "Revision: RM530NGLAAR05A01M4G"), gcap="+GCAP: +CGSM",
        sim=VODAFONE_UK, charsets=("GSM", "IRA", "UCS2"), default_charset="GSM", ctzu_test="(0,1,3)",
        cgdcont_max_cid=24, short_operator={"vodafone UK": "voda UK"},
        boot_urcs=("RDY", "+CPIN: READY", "+QUSIM: 1", "+QIND: SMS DONE")),
    "sierra": Profile(
        "sierra", "Sierra Wireless, Incorporated", "EM7455", "SWI9X30C_02.24.05.06 r7040 CARMD-EV-FRMWR2 2017/05/19 "
        "06:23:09", "359072060123458",
        ati=("Manufacturer: Sierra Wireless, Incorporated", "Model: EM7455",
             "Revision: SWI9X30C_02.24.05.06 r7040 CARMD-EV-FRMWR2 2017/05/19 06:23:09", "MEID: 35907206012345",
             "IMEI: 359072060123458", "IMEI SV: 12", "FSN: LF000000000000", "+GCAP: +CGSM"),
        gcap="+GCAP: +CGSM", sim=VODAFONE_UK, short_operator={"vodafone UK": "voda UK"}),
    "huawei": Profile(
        "huawei", "Huawei Technologies Co., Ltd.", "ME906s-158", "11.617.01.00.00", "863781030123450",
        ati=("Manufacturer: Huawei Technologies Co., Ltd.", "Model: ME906s-158", "Revision: 11.617.01.00.00",
             "IMEI: 863781030123450", "+GCAP: +CGSM,+DS,+ES"),
        gcap="+GCAP: +CGSM,+DS,+ES", sim=VODAFONE_UK, short_operator={"vodafone UK": "voda UK"}),
    "generic": Profile(
        "generic", "Generic", "LTE modem", "1.0.0", "352099001761481",
        ati=("Generic", "LTE modem", "Revision: 1.0.0"), gcap="+GCAP: +CGSM", sim=VODAFONE_UK),
}


def luhn_ok(digits: str) -> bool:
    """ISO/IEC 7812 check digit (IMEI, ICCID): the emulator's invented numbers are still well formed."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0
