"""The standard AT commands of the AT modem emulator -- a TEST DOUBLE for hardware we do not have
(nodes/modem/emulator.py runs it on a pty). Stdlib only.

`answer(command, settings, profile, state)` answers one command of a command line the way a modem
following ITU-T V.250, 3GPP TS 27.007 and TS 27.005 does: the reply's information lines and its final
result code, from the TE's settings (echo, +CMEE, +CREG/+CGREG/+CEREG modes, +COPS format, +CSCS, +CFUN,
...), the vendor profile (emulator_profiles.py) and the radio state of the drive trace. `None`: the command
is not one of these (the caller tries vendor commands, then answers ERROR as a modem does for a command it
lacks). `registration_urcs(before, after, settings)` are the unsolicited codes a modem emits when its
registration or cell changes.

Every reply is in the syntax of its command in the standard (3GPP TS 27.007 Release 18: the tables "+XXXX
parameter command syntax" and "Defined values"; clause numbers where checked, e.g. +CSQ 8.5, +CEREG
10.1.22); what ModemManager 1.20.4 parses is the other check (src/mm-modem-helpers.c and its unit tests in
src/tests/test-modem-helpers.c, plugins/tests/gsm-port.conf: replies from real modems). Choices the
standard leaves to the modem are the vendor's (the profile) or named here:
* Registration: the emulated modem is on E-UTRAN only (an LTE data attach, EN-DC when the trace adds an NR
  leg). +CEREG (EPS, 10.1.22) reports it: <stat> 1 (registered, home network), <tac> two bytes and <ci>
  four bytes in hexadecimal, <AcT> 7 (E-UTRAN). +CREG (circuit-switched) and +CGREG (GERAN/UTRAN packet
  domain) report <stat> 0 (not registered, not searching): the modem registered in neither domain.
  While the modem resets (state.responding False) it answers nothing at all (emulator.py).
  Presentation modes: every <n> the standard defines -- REG_MODES below, with the text they follow.
* +COPS read: +COPS: <mode>,<format>,<oper>,<AcT> with <oper> in the format last set by +COPS=3,<format>
  (0 long alphanumeric, 1 short alphanumeric, 2 numeric "MCCMNC"); <AcT> 7 (E-UTRAN) or 13 (E-UTRAN-NR dual
  connectivity).
* +CESQ (8.69): "99,99,255,255,<rsrq>,<rsrp>" on E-UTRAN (<rsrq> = (RSRQ dB + 20) x 2, <rsrp> = RSRP dBm
  + 141: TS 36.133 mapping as 27.007 quotes it); +CSQ (8.5): <rssi> = (RSSI dBm + 113) / 2, <ber> 99.
* Calls: the emulated modems are data modules: the call commands (+CLCC, +CLIP, +CRC, +CCWA) and +CIND/+CMER
  indicators are not emulated (ERROR), so ModemManager neither exposes voice nor waits for +CIEV.
* Strings in <oper> follow +CSCS: "UCS2" prints each character as four
  hex digits (27.007 +CSCS "UCS2": 16-bit universal multiple-octet coded character set, hex), "GSM"/"IRA"
  print the text itself (the emulated names are plain ASCII letters, equal in both).
* SIM access: +CRSM=176 (READ BINARY) of EF_ICCID (2FE2: the ICCID in BCD, nibbles swapped, padded with
  F), EF_AD (6FAD: byte 4 = MNC length), EF_SPN (6F46: display byte then the name, padded with FF) answer
  sw1,sw2 = 144,0 ("9000") and the data in hexadecimal; other files 106,130 ("6A82", file not found) --
  status words of ETSI TS 102 221 10.2.1. +CSIM VERIFY/UNBLOCK without data (P3 = 0) answers "63Cx", x the
  retries left (TS 102 221 11.1.9 / 11.1.13).
* +CCLK: the host's UTC time, "yy/MM/dd,hh:mm:ss+00" (the zone in quarter hours).
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from nodes.modem.emulator_profiles import Profile

Reply = tuple[list[str], str]
OK: Reply = ([], "OK")

# TS 27.007 9.2.1 / 9.2.2: numeric and verbose +CME ERROR codes used here.
CME = {3: "operation not allowed", 4: "operation not supported", 10: "SIM not inserted", 21: "invalid index",
       30: "no network service", 50: "incorrect parameters"}


@dataclass
class Settings:
    """What the TE set on the modem; a power-up (and every reset) restores these defaults."""

    echo: bool = True           # V.250 E: on at power-up
    verbose: bool = True        # V.250 V1: text result codes
    quiet: bool = False         # V.250 Q0
    cmee: int = 0               # 27.007 +CMEE: plain ERROR until the TE asks for +CME ERROR
    creg: int = 0
    cgreg: int = 0
    cereg: int = 0
    cops_format: int = 0
    cfun: int = 1               # full functionality at power-up
    cscs: str = "IRA"
    cmgf: int = 0
    cnmi: str = "0,0,0,0,0"
    cpms: tuple[str, str, str] = ("SM", "SM", "SM")
    ctzu: int = 0
    cpol_format: int = 2
    cpls: int = 0
    contexts: dict[int, tuple[str, str]] = field(default_factory=dict)    # +CGDCONT: cid -> (PDP type, APN)
    ps_attached: bool = True    # +CGATT: the MT attaches by itself at power-up; +CGATT=0 detaches it
    active: set[int] = field(default_factory=set)      # +CGACT: the cids of the active contexts
    csca: tuple[str, int] = ("", 145)                   # 27.005 +CSCA: <sca>, <tosca>
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def power_up(cls, profile: Profile) -> "Settings":
        return cls(cscs=profile.default_charset, contexts={1: ("IPV4V6", profile.apn)},
                   csca=(profile.sim.smsc, 145 if profile.sim.smsc.startswith("+") else 129))


def error(settings: Settings, code: int) -> Reply:
    """An ME error as +CMEE says: ERROR (0), +CME ERROR: <n> (1) or the verbose text (2)."""
    if settings.cmee == 1:
        return [], f"+CME ERROR: {code}"
    if settings.cmee == 2:
        return [], f"+CME ERROR: {CME.get(code, 'unknown')}"
    return [], "ERROR"


def encode(settings: Settings, text: str) -> str:
    if settings.cscs == "UCS2":
        return "".join(f"{ord(c):04X}" for c in text)
    return text


def split_command_line(line: str) -> list[str]:
    """'AT+COPS=3,2;+COPS?' -> ['+COPS=3,2', '+COPS?']; 'ATE0V1' -> ['E0', 'V1'] (V.250 5.2.1: basic commands
    follow each other, extended ones are separated by ';'). Quoted text is never split."""
    body = line.strip()
    if body[:2].upper() != "AT":
        return []
    body = body[2:]
    parts: list[str] = []
    cur, quoted = "", False
    for ch in body:
        if ch == '"':
            quoted = not quoted
        if ch == ";" and not quoted:
            parts.append(cur)
            cur = ""
            continue
        cur += ch
    parts.append(cur)
    out: list[str] = []
    for p in parts:
        p = p.strip()
        if not p:
            continue
        if p[0] in "+^!$#*%":
            out.append(p)
        else:
            out.extend(_basic(p))
    return out


_BASIC = re.compile(r"(&[A-Z]\d*|S\d+(?:=\d*|\?)|[A-Z]\d*)", re.I)


def _basic(text: str) -> list[str]:
    """V.250 basic commands run together ('E0V1&C1') -> ['E0', 'V1', '&C1']; an extended one may follow."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] in "+^!$#*%":
            out.append(text[i:])
            break
        m = _BASIC.match(text, i)
        if m is None:
            out.append(text[i:])             # not a basic command: answered ERROR
            break
        out.append(m.group(1))
        i = m.end()
    return out


def csq_index(rssi_dbm: float) -> int:
    return max(0, min(31, round((rssi_dbm + 113) / 2)))


def _plmn(s: Any) -> str:
    return f"{s.cell.mcc}{s.cell.mnc}"


def registered(s: Any, st: Settings) -> bool:
    """Registered in EPS: the radio on, a cell in the trace, and not detached by the TE (+CGATT=0: on
    E-UTRAN a PS detach is an EPS detach, TS 24.301 5.5.2, so the MT is then in no domain at all)."""
    return s is not None and st.cfun == 1 and st.ps_attached


# Presentation modes <n> of the three registration commands: every one 3GPP TS 27.007 defines.
# * +CEREG (10.1.22, Release 18, Table 10.1.22-1, read at itecspec.com): "+CEREG?  when <n>=0, 1, 2 or 3 and
#   command successful: +CEREG: <n>,<stat>[,[<tac>],[<ci>],[<AcT>[,<cause_type>,<reject_cause>]]]  when <n>=4
#   or 5 and command successful: +CEREG: <n>,<stat>[,[<tac>],[<ci>],[<AcT>][,[<cause_type>],[<reject_cause>]
#   [,[<Active-Time>],[<Periodic-TAU>]]]]"; "The value <n>=3 further extends the unsolicited result code with
#   [,<cause_type>,<reject_cause>], when available, when the value of <stat> changes"; <n>=4 adds the Active
#   Time and extended periodic TAU values a UE applying PSM was given, <n>=5 both.
# * +CGREG (10.1.20, Release 18, Table 128, same source): <n> 0..5 with the same structure
#   ("+CGREG: <n>,<stat>[,[<lac>],[<ci>],[<AcT>],[<rac>][,<cause_type>,<reject_cause>]]" for 0-3, the PSM
#   timers Active-Time, Periodic-RAU, GPRS-READY-timer for 4 and 5). The same text names <n>=6 and 7 for CSG
#   cells (<csg_stat>, <csginfo>), outside the read command's syntax table: not emulated.
# * +CREG (7.2): <n> 0..3, "3 enable network registration, location information and cause value information
#   unsolicited result code +CREG: <stat>[,[<lac>],[<ci>],[<AcT>][,<cause_type>,<reject_cause>]]" -- as
#   27.007 is quoted in the comments of Android's cuttlefish modem simulator (network_service.cpp); the
#   clause itself was not found through the search tool, so this one is second-hand.
# What the emulated modem has to say in them: no registration was rejected (no <cause_type>/<reject_cause>:
# "when available") and it was given no PSM timers (it never asks for PSM, +CPSMS), so modes 3-5 print what
# mode 2 prints; +CREG/+CGREG stay <stat> 0 (not registered in those domains) and never change.
REG_MODES = {"+CREG": ("creg", 3), "+CGREG": ("cgreg", 5), "+CEREG": ("cereg", 5)}


def cereg_fields(s: Any, st: Settings, n: int) -> str:
    """<stat>[,<tac>,<ci>,<AcT>] of +CEREG (read reply or URC) for presentation mode n (location from n=2 on;
    the cause and PSM fields of n=3..5 are never available here, see REG_MODES)."""
    if not registered(s, st):
        return "0" if st.cfun != 1 or not st.ps_attached else "2"     # off or detached: not searching
    if n >= 2:
        return f'1,"{s.cell.tac:04X}","{s.cell.eci:07X}",7'
    return "1"


def registration_urcs(before: Any, after: Any, st: Settings) -> list[str]:
    """URCs a modem sends when its EPS registration or serving cell changes (27.007 +CEREG n=1: <stat>
    changes; n=2..5: also the cell, in the form of n=2: see REG_MODES). +CREG/+CGREG stay 0 (see module
    docstring): they never change."""
    if st.cereg < 1:
        return []
    old = cereg_fields(before, st, st.cereg) if before is not None else None
    new = cereg_fields(after, st, st.cereg)
    if old == new:
        return []
    return [f"+CEREG: {new}"]


def _cops(s: Any, st: Settings, p: Profile) -> str:
    if not registered(s, st):
        return "+COPS: 0"
    if st.cops_format == 2:
        oper = _plmn(s)
    elif st.cops_format == 1:
        oper = p.short_operator.get(s.operator_name, s.operator_name)
    else:
        oper = s.operator_name
    act = 13 if s.nr is not None else 7
    return f'+COPS: 0,{st.cops_format},"{encode(st, oper)}",{act}'


def _bcd_swapped(digits: str) -> str:
    """ICCID as stored in EF_ICCID: two digits per byte, low nibble first, odd length padded with F."""
    d = digits + ("F" if len(digits) % 2 else "")
    return "".join(d[i + 1] + d[i] for i in range(0, len(d), 2))


def sim_file(p: Profile, fileid: int) -> Optional[str]:
    sim = p.sim
    if fileid == 0x2FE2:                                    # EF_ICCID
        return _bcd_swapped(sim.iccid)
    if fileid == 0x6FAD:                                    # EF_AD: UE operation mode, -, -, MNC length
        return f"00FFFF{sim.mnc_digits:02X}"
    if fileid == 0x6F46:                                    # EF_SPN: display condition, then the name
        name = sim.spn.encode("ascii").hex().upper()
        return "01" + name + "FF" * (16 - len(sim.spn))
    return None


def _crsm(args: str, st: Settings, p: Profile) -> Reply:
    vals = [v.strip() for v in args.split(",")]
    try:
        cmd, fileid = int(vals[0]), int(vals[1])
    except (ValueError, IndexError):
        return error(st, 50)
    if cmd != 176:                                          # only READ BINARY is emulated
        return ["+CRSM: 109,0"], "OK"                        # 6D00: instruction not supported
    data = sim_file(p, fileid)
    if data is None:
        return ["+CRSM: 106,130"], "OK"                      # 6A82: file not found
    length = int(vals[4]) if len(vals) > 4 and vals[4].isdigit() and int(vals[4]) > 0 else len(data) // 2
    return [f'+CRSM: 144,0,"{data[:2 * length]}"'], "OK"


def _csim(args: str, st: Settings, p: Profile) -> Reply:
    m = re.fullmatch(r'\s*(\d+)\s*,\s*"([0-9A-Fa-f]+)"\s*', args)
    if m is None:
        return error(st, 50)
    apdu = m.group(2).upper()
    ins, p3 = apdu[2:4], apdu[8:10]
    if ins == "20" and p3 == "00":                          # VERIFY PIN, no data: retries left
        return [f'+CSIM: 4,"63C{p.sim.pin_retries:X}"'], "OK"
    if ins == "2C" and p3 == "00":                          # UNBLOCK PIN, no data: PUK retries left
        return [f'+CSIM: 4,"63C{p.sim.puk_retries:X}"'], "OK"
    return ['+CSIM: 4,"6D00"'], "OK"


def _set_int(st: Settings, name: str, value: str, allowed: range) -> Reply:
    try:
        v = int(value) if value != "" else 0
    except ValueError:
        return error(st, 50)
    if v not in allowed:
        return error(st, 50)
    setattr(st, name, v)
    return OK


# +CGDCONT (27.007 10.1.1): the read command lists the contexts defined, each with the PDP address it has
# (none yet: zeros in the type's form); "+CGDCONT=<cid>" alone makes context <cid> undefined; an omitted or
# empty APN asks the network for the subscribed one. Contexts the TE defined are forgotten at a reset and
# by AT&F/ATZ (power-up: context 1 of the SIM profile) -- whether a real module keeps them in non-volatile
# memory is the vendor's choice, not read in any manual here. The PDP types are those +CGDCONT=? lists.
PDP_ADDR_UNSET = {"IP": "0.0.0.0", "PPP": "0.0.0.0", "IPV6": "0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0",
                  "IPV4V6": "0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0"}
_CGDCONT = re.compile(r'\+CGDCONT=(\d{1,3})(?:,"([A-Za-z0-9]*)"(?:,"([^"]*)"(?:,(?:"[^"]*"|\d*))*)?)?',
                      re.IGNORECASE)


def _cgdcont(cmd: str, st: Settings, p: Profile) -> Reply:
    m = _CGDCONT.fullmatch(cmd)
    if m is None or not 1 <= int(m.group(1)) <= p.cgdcont_max_cid:
        return error(st, 50)
    cid, pdp_type, apn = int(m.group(1)), m.group(2), m.group(3)
    if pdp_type is None:
        st.contexts.pop(cid, None)
        st.active.discard(cid)
        return OK
    if pdp_type.upper() not in PDP_ADDR_UNSET:
        return error(st, 50)
    st.contexts[cid] = (pdp_type.upper(), apn or "")
    return OK


# Packet domain attach and PDP contexts, 3GPP TS 27.007 Release 18 (read at itecspec.com and tech-invite.com):
# * +CGATT (10.1.9): "+CGATT=<state>", <state> 0 detached, 1 attached; "If the MT is already in the requested
#   state, the command is ignored and the OK response is returned. If the requested state cannot be achieved,
#   an ERROR or +CME ERROR response is returned"; "Any active PDP contexts will be automatically deactivated
#   when the attachment state changes to detached." Read "+CGATT: <state>", test "+CGATT: (list of supported
#   <state>s)". An attach needs the radio on (+CFUN=1) and a cell: else +CME ERROR 30 (no network service,
#   9.2.1) and nothing changes. A detach shows in +CEREG (<stat> 0), +COPS, +CSQ and +CESQ as no
#   registration (registered()); like +CFUN here, the TE's own change sends no +CEREG URC.
# * +CGACT (10.1.10): "+CGACT=[<state>[,<cid>[,<cid>[,...]]]]"; "If any PDP context is already in the
#   requested state, the state for that context remains unchanged"; "If the MT is not PS attached when the
#   activation form of the command is executed, the MT first performs a PS attach"; no <cid>: the activation
#   form activates every defined context, the deactivation form deactivates every active one (27.007 V6.3.0's
#   wording of the same clause). Read: "+CGACT: <cid>,<state>" for each defined context; test "+CGACT: (list of
#   supported <state>s)". A <cid> that is not defined, or no <state>, is +CME ERROR 50 and nothing changes.
#   Not emulated: EPS's default bearer (an E-UTRAN attach brings one up; here a context is active only once
#   the TE activated it, as this emulator said before: "+CGACT: 1,0") and so the rule that the last PDN
#   connection cannot be disconnected.
# * +CGPADDR (10.1.14): "+CGPADDR[=<cid>[,<cid>[,...]]]" -> "+CGPADDR: <cid>[,<PDP_addr_1>[,<PDP_addr_2>]]" per
#   cid, every defined one when none is given; "Both <PDP_addr_1> and <PDP_addr_2> are omitted if none is
#   available", both given for IPv4v6 (IPv4 first), "dot-separated numeric (0-255)" a1.a2.a3.a4 or
#   a1...a16; test "+CGPADDR: (list of defined <cid>s)". The addresses are the emulator's (a dynamic address
#   given at activation): 100.64.<cid>.10 (RFC 6598 shared space, what carriers' NAT gives) and
#   2001:db8:0:<cid in hex>::10 (RFC 3849 documentation prefix); shown while the context is active.
_CIDS = re.compile(r"(?:\d{1,3}(?:,\d{1,3})*)?")


def _cid_list(text: str, st: Settings) -> Optional[list[int]]:
    """The cids of a comma list ("" -> []), or None when malformed or one is not defined."""
    if not _CIDS.fullmatch(text):
        return None
    cids = [int(c) for c in text.split(",")] if text else []
    return cids if all(c in st.contexts for c in cids) else None


def _pdp_addresses(cid: int, pdp_type: str) -> list[str]:
    v4 = f"100.64.{cid}.10"
    v6 = ".".join(str(b) for b in (0x20, 0x01, 0x0D, 0xB8, 0, 0, 0, cid, 0, 0, 0, 0, 0, 0, 0, 0x10))
    return {"IP": [v4], "PPP": [v4], "IPV6": [v6], "IPV4V6": [v4, v6]}.get(pdp_type, [])


def _packet_domain(u: str, st: Settings, p: Profile, s: Any) -> Optional[Reply]:
    if u == "+CGATT?":
        return [f"+CGATT: {1 if registered(s, st) else 0}"], "OK"
    if u == "+CGATT=?":
        return ["+CGATT: (0,1)"], "OK"
    if u.startswith("+CGATT="):
        m = re.fullmatch(r"\+CGATT=([01])", u)
        if m is None:
            return error(st, 50)
        if m.group(1) == "0":
            st.ps_attached = False
            st.active.clear()
            return OK
        if s is None or st.cfun != 1:
            return error(st, 30)
        st.ps_attached = True
        return OK
    if u == "+CGACT?":
        return [f"+CGACT: {cid},{1 if cid in st.active else 0}" for cid in sorted(st.contexts)], "OK"
    if u == "+CGACT=?":
        return ["+CGACT: (0,1)"], "OK"
    if u.startswith("+CGACT="):
        m = re.fullmatch(r"\+CGACT=([01])(?:,(.*))?", u)
        cids = _cid_list(m.group(2) or "", st) if m is not None else None
        if m is None or cids is None or (m.group(2) is not None and not cids):
            return error(st, 50)
        if m.group(1) == "0":
            st.active.difference_update(cids or list(st.active))
            return OK
        if not st.ps_attached or not registered(s, st):
            if s is None or st.cfun != 1:
                return error(st, 30)                        # the attach it first performs fails
            st.ps_attached = True
        st.active.update(cids or list(st.contexts))
        return OK
    if u == "+CGPADDR=?":
        return ["+CGPADDR: (" + ",".join(str(c) for c in sorted(st.contexts)) + ")"], "OK"
    if u == "+CGPADDR" or u.startswith("+CGPADDR="):       # "+CGPADDR=" alone: the older syntax's "all"
        cids = _cid_list(u[len("+CGPADDR="):], st) if u != "+CGPADDR" else []
        if cids is None:
            return error(st, 50)
        lines = []
        for cid in cids or sorted(st.contexts):
            addrs = _pdp_addresses(cid, st.contexts[cid][0]) if cid in st.active else []
            lines.append(f"+CGPADDR: {cid}" + "".join(f',"{a}"' for a in addrs))
        return lines, "OK"
    return None


# +CSCA (TS 27.005 3.3.1, service centre address; syntax and values as the Sony Ericsson GM29 manual 13.4
# reproduces them, read at manualsdump.com: 27.005 itself was not read here): "+CSCA=<sca>[,<tosca>]", read
# "+CSCA: <sca>,<tosca>", test answers OK alone; <tosca> 129 unknown type, 145 international, 128-255.
# <sca> is a string in the +CSCS character set (the dialling digits, "+" and "*#" here),
# <tosca> the TP-Type-of-Address octet as an integer, by default 145 when the number starts with "+" (an
# international number), else 129. The value is the SIM's (EF_SMSP) at power-up; a new one lasts until the
# next power-up (+CSAS would save it: not emulated).
_CSCA = re.compile(r'\+CSCA="([0-9A-F+*#]{1,80})"(?:,(\d{1,3}))?', re.IGNORECASE)


def _csca(cmd: str, u: str, st: Settings) -> Optional[Reply]:
    if u == "+CSCA?":
        return [f'+CSCA: "{encode(st, st.csca[0])}",{st.csca[1]}'], "OK"
    if u == "+CSCA=?":
        return OK
    if not u.startswith("+CSCA="):
        return None
    m = _CSCA.fullmatch(cmd)
    if m is None:
        return error(st, 50)
    sca = _decode(st, m.group(1))
    if sca is None or not re.fullmatch(r"\+?[0-9*#]{1,20}", sca):
        return error(st, 50)
    tosca = int(m.group(2)) if m.group(2) is not None else (145 if sca.startswith("+") else 129)
    if not 128 <= tosca <= 255:                             # an octet with its extension bit set (TS 24.011)
        return error(st, 50)
    st.csca = (sca, tosca)
    return OK


def _decode(st: Settings, text: str) -> Optional[str]:
    """A string parameter in +CSCS's character set back to text (UCS2: four hex digits a character)."""
    if st.cscs != "UCS2":
        return text
    if len(text) % 4 or not re.fullmatch(r"[0-9A-Fa-f]*", text):
        return None
    return "".join(chr(int(text[i:i + 4], 16)) for i in range(0, len(text), 4))


def _cclk(_st: Settings) -> Reply:
    return [time.strftime('+CCLK: "%y/%m/%d,%H:%M:%S+00"', time.gmtime())], "OK"


def answer(cmd: str, st: Settings, p: Profile, s: Any) -> Optional[Reply]:
    """One command (without 'AT', as split_command_line gives it) -> (lines, final), or None if unknown.
    `s` is the trace's current DriveState (always answering here: a resetting modem never gets this far)."""
    u = cmd.strip().upper()
    # ---- ITU-T V.250 basic commands ------------------------------------------------------------------
    m = re.fullmatch(r"E([01]?)", u)
    if m:
        st.echo = m.group(1) == "1"
        return OK
    m = re.fullmatch(r"V([01]?)", u)
    if m:
        st.verbose = m.group(1) == "1"
        return OK
    m = re.fullmatch(r"Q([01]?)", u)
    if m:
        st.quiet = m.group(1) == "1"
        return OK
    if re.fullmatch(r"X[0-4]?|&C[0-2]?|&D[0-2]?|&K[0-6]?|S\d+=\d*|H0?|L[0-3]?|M[0-2]?|&W0?", u):
        return OK
    if u == "+IFC=?":                                       # V.250 +IFC: none or RTS/CTS, each way
        return ["+IFC: (0,2),(0,2)"], "OK"
    if re.fullmatch(r"\+IFC=[02](?:,[02])?", u):
        return OK
    if re.fullmatch(r"I0?", u):
        return list(p.ati), "OK"
    if u in ("", "Z", "Z0", "&F", "&F0"):
        if u:                                               # reset to the profile's defaults
            fresh = Settings.power_up(p)
            for k, v in fresh.__dict__.items():
                if k not in ("echo", "ps_attached", "active"):     # the attach and PDN connections stay
                    setattr(st, k, v)
            st.active &= set(st.contexts)
        return OK
    # ---- identification (V.250 +GMI..., 27.007 +CGMI...) -----------------------------------------------
    ident: dict[str, Callable[[], list[str]]] = {
        "+CGMI": lambda: [p.manufacturer], "+GMI": lambda: [p.manufacturer],
        "+CGMM": lambda: [p.model], "+GMM": lambda: [p.model],
        "+CGMR": lambda: [p.revision], "+GMR": lambda: [p.revision],
        "+CGSN": lambda: [p.imei], "+GSN": lambda: [p.imei],
        "+GCAP": lambda: [p.gcap],
        "+CIMI": lambda: [p.sim.imsi],
    }
    if u in ident:
        return ident[u](), "OK"
    if u in ("+CGMI=?", "+CGMM=?", "+CGMR=?", "+CGSN=?", "+CIMI=?", "+GMI=?", "+GMM=?", "+GMR=?", "+GSN=?"):
        return OK
    if u == "+CNUM":
        return [f'+CNUM: ,"{p.sim.msisdn}",145'], "OK"        # <number> per <type> 145: not +CSCS-coded
    # ---- errors, charset, functionality -----------------------------------------------------------------
    m = re.fullmatch(r"\+CMEE=([0-2]?)", u)
    if m:
        return _set_int(st, "cmee", m.group(1), range(3))
    if u == "+CMEE?":
        return [f"+CMEE: {st.cmee}"], "OK"
    if u == "+CMEE=?":
        return ["+CMEE: (0-2)"], "OK"
    if u == "+CSCS=?":
        return ["+CSCS: (" + ",".join(f'"{c}"' for c in p.charsets) + ")"], "OK"
    if u == "+CSCS?":
        return [f'+CSCS: "{st.cscs}"'], "OK"
    m = re.fullmatch(r'\+CSCS="([A-Z0-9-]+)"', u)
    if m:
        if m.group(1) not in p.charsets:
            return error(st, 4)
        st.cscs = m.group(1)
        return OK
    if u == "+CFUN?":
        return [f"+CFUN: {st.cfun}"], "OK"
    if u == "+CFUN=?":
        return ["+CFUN: (0,1,4),(0,1)"], "OK"
    m = re.fullmatch(r"\+CFUN=([0-9]+)(?:,([01]))?", u)
    if m:
        if m.group(1) not in ("0", "1", "4"):               # minimum, full, radio off (27.007 +CFUN)
            return error(st, 50)
        st.cfun = int(m.group(1))
        if st.cfun != 1:                                    # radio off: no PDN connection survives it
            st.active.clear()
        return OK
    # ---- SIM ------------------------------------------------------------------------------------------
    if u == "+CPIN?":
        return ["+CPIN: READY"], "OK"
    if u == "+CPIN=?":          # 27.007 8.3 (V6.3.0, Table 62): "+CPIN=?" lists no response: OK alone
        return OK
    m = re.fullmatch(r"\+CRSM=(.*)", u)
    if m:
        return _crsm(m.group(1), st, p)
    m = re.fullmatch(r"\+CSIM=(.*)", cmd.strip(), re.I)
    if m:
        return _csim(m.group(1), st, p)
    if u == "+CLCK=?":
        return ["+CLCK: (" + ",".join(f'"{f}"' for f in p.clck_facilities) + ")"], "OK"
    m = re.fullmatch(r'\+CLCK="([A-Z]{2})",2(?:,.*)?', u)
    if m:
        if m.group(1) not in p.clck_facilities:
            return error(st, 4)
        return ["+CLCK: 0"], "OK"                           # no lock active (PIN check off, no barring)
    m = re.fullmatch(r"\+CPLS=([0-2]?)", u)
    if m:
        return _set_int(st, "cpls", m.group(1), range(3))
    if u == "+CPLS?":
        return [f"+CPLS: {st.cpls}"], "OK"
    m = re.fullmatch(r"\+CPOL=,([0-2])", u)
    if m:
        return _set_int(st, "cpol_format", m.group(1), range(3))
    if u == "+CPOL?":
        return OK                                           # the SIM's preferred-operator list is empty
    # ---- registration and operator ------------------------------------------------------------------------
    for name, (attr, top) in REG_MODES.items():
        if u == f"{name}=?":
            return [f"{name}: (0-{top})"], "OK"
        m = re.fullmatch(re.escape(name) + r"=([0-9]*)", u)
        if m:
            return _set_int(st, attr, m.group(1), range(top + 1))
        if u == f"{name}?":
            n = getattr(st, attr)
            if name == "+CEREG":
                return [f"+CEREG: {n},{cereg_fields(s, st, n)}"], "OK"
            return [f"{name}: {n},0"], "OK"
    if u == "+COPS?":
        return [_cops(s, st, p)], "OK"
    m = re.fullmatch(r"\+COPS=3,([0-2])", u)
    if m:
        st.cops_format = int(m.group(1))
        return OK
    if re.fullmatch(r"\+COPS=0(?:,[0-2])?", u):
        return OK
    if u == "+COPS=?":
        oper = [f'(2,"{encode(st, s.operator_name)}","{encode(st, p.short_operator.get(s.operator_name, s.operator_name))}",'
                f'"{_plmn(s)}",7)'] if registered(s, st) else []
        return ["+COPS: " + ",".join(oper + ["", "(0-4)", "(0-2)"])], "OK"
    if u == "+WS46=?":
        return [f"+WS46: {p.ws46}"], "OK"
    if u == "+WS46?":
        return ["+WS46: 25"], "OK"                          # 3GPP systems (GERAN, UTRAN and E-UTRAN)
    # ---- signal -------------------------------------------------------------------------------------------
    if u == "+CSQ":
        return ([f"+CSQ: {csq_index(s.rssi_dbm)},99"] if registered(s, st) else ["+CSQ: 99,99"]), "OK"
    if u == "+CSQ=?":
        return ["+CSQ: (0-31,99),(0-7,99)"], "OK"
    if u == "+CESQ":
        if not registered(s, st):
            return ["+CESQ: 99,99,255,255,255,255"], "OK"
        return [f"+CESQ: 99,99,255,255,{(s.rsrq_db + 20) * 2},{s.rsrp_dbm + 141}"], "OK"
    if u == "+CESQ=?":
        return ["+CESQ: (0-63,99),(0-7,99),(0-96,255),(0-49,255),(0-34,255),(0-97,255)"], "OK"
    # ---- packet domain ------------------------------------------------------------------------------------
    if u == "+CGDCONT=?":
        n = p.cgdcont_max_cid
        return [f'+CGDCONT: (1-{n}),"{t}",,,(0-2),(0-4),(0,1),(0,1)' for t in ("IP", "PPP", "IPV6", "IPV4V6")], "OK"
    if u == "+CGDCONT?":
        return [f'+CGDCONT: {cid},"{t}","{apn}","{PDP_ADDR_UNSET[t]}",0,0,0,0'
                for cid, (t, apn) in sorted(st.contexts.items())], "OK"
    if u.startswith("+CGDCONT="):
        return _cgdcont(cmd.strip(), st, p)
    packet = _packet_domain(u, st, p, s)
    if packet is not None:
        return packet
    if re.fullmatch(r"\+CGEREP=[0-2](?:,[01])?", u):
        return OK
    if u == "+CGEREP=?":
        return ["+CGEREP: (0-2),(0,1)"], "OK"
    # ---- SMS (TS 27.005) and USSD, clock -------------------------------------------------------------------
    if u == "+CPMS=?":
        mems = "(" + ",".join(f'"{x}"' for x in p.cpms_mems) + ")"
        return [f"+CPMS: {mems},{mems},{mems}"], "OK"
    if u == "+CPMS?":
        return [",".join(f'"{x}",0,50' for x in st.cpms).join(("+CPMS: ", ""))], "OK"
    m = re.fullmatch(r'\+CPMS=((?:"[A-Z]{2}",?){1,3})', u)
    if m:
        mems = re.findall(r'"([A-Z]{2})"', m.group(1))
        if any(x not in p.cpms_mems for x in mems):
            return error(st, 4)
        st.cpms = tuple((mems + list(st.cpms))[:3])  # type: ignore[assignment]
        return ["+CPMS: " + ",".join("0,50" for _ in range(3))], "OK"
    if u == "+CNMI=?":
        return [f"+CNMI: {p.cnmi_test}"], "OK"
    if u == "+CNMI?":
        return [f"+CNMI: {st.cnmi}"], "OK"
    m = re.fullmatch(r"\+CNMI=([0-9,]*)", u)
    if m:
        st.cnmi = m.group(1)
        return OK
    if u == "+CMGF=?":
        return ["+CMGF: (0,1)"], "OK"
    m = re.fullmatch(r"\+CMGF=([01]?)", u)
    if m:
        return _set_int(st, "cmgf", m.group(1), range(2))
    if u == "+CMGF?":
        return [f"+CMGF: {st.cmgf}"], "OK"
    if re.fullmatch(r'\+CMGL(?:=.*)?', u):
        return OK                                           # no message stored
    if u == "+CSMS?":
        return ["+CSMS: 0,1,1,1"], "OK"
    sca = _csca(cmd.strip(), u, st)
    if sca is not None:
        return sca
    if u == "+CUSD=?":
        return ["+CUSD: (0-2)"], "OK"
    if re.fullmatch(r"\+CUSD=[0-2]", u):
        return OK
    if u == "+CCLK?":
        return _cclk(st)
    if u == "+CTZU=?":
        return [f"+CTZU: {p.ctzu_test}"], "OK"
    m = re.fullmatch(r"\+CTZU=([0-9])", u)
    if m:
        allowed = range(0, 4) if "3" in p.ctzu_test else range(0, 2)
        return _set_int(st, "ctzu", m.group(1), allowed)
    if u == "+CTZU?":
        return [f"+CTZU: {st.ctzu}"], "OK"
    return None
