"""The AT emulator's PDP contexts (+CGDCONT, 3GPP TS 27.007 10.1.1): a context the TE defines is what
the read command lists afterwards; `+CGDCONT=<cid>` alone undefines it; a cid outside the range the
test command gives, or a PDP type it does not list, is an error; a power-up (and AT&F) brings back the
SIM profile's context 1. (Issue 27's audit: the emulator answered OK to a definition and kept listing
the old context.)"""
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
