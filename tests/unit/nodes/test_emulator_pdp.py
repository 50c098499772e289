"""The AT emulator's PDP contexts (+CGDCONT, 3GPP TS 27.007 10.1.1): a context the TE defines is what
the read command lists afterwards; `+CGDCONT=<cid>` alone undefines it; a cid outside the range the
test command gives, or a PDP type it does not list, is an error; a power-up (and AT&F) brings back the
SIM profile's context 1. (Issue 27's audit: the emulator answered OK to a definition and kept listing
the old context.) Then the packet domain's state around them: +CGATT (10.1.9) attaches and detaches (a
detach deactivates every context and, on E-UTRAN, deregisters), +CGACT (10.1.10) activates contexts
(attaching first), +CGPADDR (10.1.14) shows the addresses of the active ones; +CPIN=? (8.3) and the SMS
service centre +CSCA (TS 27.005 3.3.1). A malformed or impossible form is +CME ERROR and changes nothing."""
from __future__ import annotations

import pytest

from nodes.modem.emulator import field_test_trace
from nodes.modem.emulator_3gpp import Settings, answer
from nodes.modem.emulator_profiles import PROFILES

P = PROFILES["quectel"]
S = field_test_trace().state_at(5.0)
V6_ZEROS = "0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0"


def at(st: Settings, cmd: str):
    return answer(cmd, st, P, S)


def test_power_up_lists_the_sim_profiles_context():
    st = Settings.power_up(P)
    assert at(st, "+CGDCONT?") == ([f'+CGDCONT: 1,"IPV4V6","internet","{V6_ZEROS}",0,0,0,0'], "OK")


def test_a_defined_context_is_listed_and_undefined_again():
    st = Settings.power_up(P)
    assert at(st, '+CGDCONT=1,"IP","Mobile.Example"') == ([], "OK")
    assert at(st, '+cgdcont=3,"ipv6"') == ([], "OK")                  # APN omitted: the subscribed one
    assert at(st, "+CGDCONT?") == (['+CGDCONT: 1,"IP","Mobile.Example","0.0.0.0",0,0,0,0',
                                    f'+CGDCONT: 3,"IPV6","","{V6_ZEROS}",0,0,0,0'], "OK")
    assert at(st, '+CGDCONT=2,"IP","apn2","",0,0') == ([], "OK")        # with address and compressions
    assert at(st, "+CGDCONT=2") == ([], "OK")
    assert at(st, "+CGDCONT=1") == ([], "OK")
    assert at(st, "+CGDCONT?") == ([f'+CGDCONT: 3,"IPV6","","{V6_ZEROS}",0,0,0,0'], "OK")
    assert at(st, "&F") == ([], "OK")                                   # defaults: the profile's context 1
    assert at(st, "+CGDCONT?")[0] == [f'+CGDCONT: 1,"IPV4V6","internet","{V6_ZEROS}",0,0,0,0']


@pytest.mark.parametrize("cmd", ['+CGDCONT=0,"IP","x"', f'+CGDCONT={P.cgdcont_max_cid + 1},"IP","x"',
                                 '+CGDCONT=1,"X25","x"', "+CGDCONT=1,IP", "+CGDCONT=", '+CGDCONT=1,"IP","x',
                                 '+CGDCONT=1,"IP","x",junk'])
def test_bad_definitions_are_errors_and_change_nothing(cmd):
    st = Settings.power_up(P)
    st.cmee = 1
    assert at(st, cmd) == ([], "+CME ERROR: 50")
    assert st.contexts == {1: ("IPV4V6", "internet")}


# ---- attach, activation, addresses (27.007 10.1.9, 10.1.10, 10.1.14), +CPIN=?, +CSCA (27.005 3.3.1) -----------
# (Issue 27's audit: the emulator answered ERROR to +CGPADDR, +CGACT=, +CGATT=, +CPIN=? and +CSCA?.)
V4, V6 = "100.64.1.10", "32.1.13.184.0.0.0.1.0.0.0.0.0.0.0.16"       # the emulator's (RFC 6598, RFC 3849)


def test_the_test_forms():
    st = Settings.power_up(P)
    assert at(st, "+CGATT=?") == (["+CGATT: (0,1)"], "OK")
    assert at(st, "+CGACT=?") == (["+CGACT: (0,1)"], "OK")
    assert at(st, "+CPIN=?") == ([], "OK")
    assert at(st, "+CSCA=?") == ([], "OK")
    at(st, '+CGDCONT=5,"IP","x"')
    assert at(st, "+CGPADDR=?") == (["+CGPADDR: (1,5)"], "OK")


def test_activation_gives_addresses_and_deactivation_takes_them():
    st = Settings.power_up(P)
    assert at(st, "+CGACT?") == (["+CGACT: 1,0"], "OK") and at(st, "+CGPADDR") == (["+CGPADDR: 1"], "OK")
    at(st, '+CGDCONT=2,"IP","b"')
    at(st, '+CGDCONT=3,"IPV6","c"')
    assert at(st, "+CGACT=1,1,3") == ([], "OK")
    assert at(st, "+CGACT?") == (["+CGACT: 1,1", "+CGACT: 2,0", "+CGACT: 3,1"], "OK")
    assert at(st, "+CGPADDR") == ([f'+CGPADDR: 1,"{V4}","{V6}"', "+CGPADDR: 2",
                                   '+CGPADDR: 3,"32.1.13.184.0.0.0.3.0.0.0.0.0.0.0.16"'], "OK")
    assert at(st, "+CGPADDR=3,1") == (['+CGPADDR: 3,"32.1.13.184.0.0.0.3.0.0.0.0.0.0.0.16"',
                                       f'+CGPADDR: 1,"{V4}","{V6}"'], "OK")
    assert at(st, "+CGACT=1,1") == ([], "OK")                          # already active: unchanged, OK
    assert at(st, "+CGACT=1") == ([], "OK")                            # no cid: every defined context
    assert at(st, "+CGPADDR=2") == (['+CGPADDR: 2,"100.64.2.10"'], "OK")
    assert at(st, "+CGACT=0,2") == ([], "OK")
    assert at(st, "+CGACT?") == (["+CGACT: 1,1", "+CGACT: 2,0", "+CGACT: 3,1"], "OK")
    assert at(st, "+CGDCONT=3") == ([], "OK")                          # undefined: no longer active either
    assert at(st, "+CGACT?") == (["+CGACT: 1,1", "+CGACT: 2,0"], "OK")
    assert at(st, "+CGACT=0") == ([], "OK")                            # no cid: every active context
    assert at(st, "+CGACT?") == (["+CGACT: 1,0", "+CGACT: 2,0"], "OK")
    assert at(st, "+CGPADDR") == (["+CGPADDR: 1", "+CGPADDR: 2"], "OK")


def test_detach_deactivates_and_deregisters_and_activation_attaches_again():
    st = Settings.power_up(P)
    at(st, "+CGACT=1,1")
    at(st, "+CEREG=2")
    assert at(st, "+CGATT=1") == ([], "OK")                            # already attached: ignored, OK
    assert at(st, "+CGATT=0") == ([], "OK")
    assert at(st, "+CGATT?") == (["+CGATT: 0"], "OK")
    assert at(st, "+CGACT?") == (["+CGACT: 1,0"], "OK") and at(st, "+CGPADDR=1") == (["+CGPADDR: 1"], "OK")
    assert at(st, "+CEREG?") == (["+CEREG: 2,0"], "OK")                # E-UTRAN: detached is not registered
    assert at(st, "+COPS?") == (["+COPS: 0"], "OK")
    assert at(st, "+CGATT=0") == ([], "OK")
    assert at(st, "+CGACT=1,1") == ([], "OK")                          # activation attaches first
    assert at(st, "+CGATT?") == (["+CGATT: 1"], "OK") and at(st, "+CGACT?") == (["+CGACT: 1,1"], "OK")
    assert at(st, "+CEREG?") == ([f'+CEREG: 2,1,"{S.cell.tac:04X}","{S.cell.eci:07X}",7'], "OK")
    assert at(st, "+CGATT=0") == ([], "OK") and at(st, "+CGATT=1") == ([], "OK")
    assert at(st, "+CGATT?") == (["+CGATT: 1"], "OK") and at(st, "+CGACT?") == (["+CGACT: 1,0"], "OK")


def test_no_attach_with_the_radio_off_and_radio_off_ends_the_connections():
    st = Settings.power_up(P)
    st.cmee = 1
    at(st, "+CGACT=1,1")
    assert at(st, "+CFUN=4") == ([], "OK")
    assert at(st, "+CGATT?") == (["+CGATT: 0"], "OK") and at(st, "+CGACT?") == (["+CGACT: 1,0"], "OK")
    at(st, "+CGATT=0")
    before = repr(st)
    assert at(st, "+CGATT=1") == ([], "+CME ERROR: 30")               # no network service: nothing changes
    assert at(st, "+CGACT=1,1") == ([], "+CME ERROR: 30")
    assert repr(st) == before
    assert at(st, "+CFUN=1") == ([], "OK") and at(st, "+CGATT?") == (["+CGATT: 0"], "OK")  # still detached
    assert at(st, "+CGATT=1") == ([], "OK") and at(st, "+CGATT?") == (["+CGATT: 1"], "OK")


def test_the_service_centre_address():
    st = Settings.power_up(P)
    assert at(st, "+CSCA?") == (['+CSCA: "+447700900999",145'], "OK")     # the SIM's (EF_SMSP), international
    assert at(st, '+CSCA="+447700900111"') == ([], "OK")
    assert at(st, "+CSCA?") == (['+CSCA: "+447700900111",145'], "OK")
    assert at(st, '+CSCA="07700900111",129') == ([], "OK")
    assert at(st, "+CSCA?") == (['+CSCA: "07700900111",129'], "OK")
    assert at(st, '+CSCS="UCS2"') == ([], "OK")                         # strings in +CSCS's character set
    assert at(st, "+CSCA?") == (['+CSCA: "00300037003700300030003900300030003100310031",129'], "OK")
    assert at(st, '+CSCA="002B0034",145') == ([], "OK") and st.csca == ("+4", 145)
    assert at(st, "&F") == ([], "OK") and st.csca == ("+447700900999", 145)    # not saved (+CSAS): the SIM's again


@pytest.mark.parametrize("cmd", ["+CGATT=", "+CGATT=2", "+CGATT=1,1", "+CGATT=a", "+CGACT=", "+CGACT=2",
                                 "+CGACT=1,", "+CGACT=1,7", "+CGACT=1,1,", "+CGACT=1,x", "+CGACT=0,1,2",
                                 "+CGPADDR=7", "+CGPADDR=1,", "+CGPADDR=x", '+CSCA=', "+CSCA=447700900111",
                                 '+CSCA="+44 770"', '+CSCA="+447700900111",12', '+CSCA="+447700900111",',
                                 '+CSCA="+447700900111",999', '+CSCA=""', '+CSCA="abc"'])
def test_malformed_forms_are_errors_and_change_nothing(cmd):
    st = Settings.power_up(P)
    st.cmee = 1
    at(st, "+CGACT=1,1")
    before = repr(st)
    assert at(st, cmd) == ([], "+CME ERROR: 50")
    assert repr(st) == before
