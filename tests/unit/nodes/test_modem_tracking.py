"""The field logger finds its modem by identity, not by where it was (nodes/modem/identity.py,
nodes/fieldlog/modemtrack.py): ModemManager's re-created Modem/N+1 after a reset, a qmicli device path and an
AT port that moved. ModemManager is a fake printing the real 1.20.4 shapes (tests/support/fake_modemmanager.py);
the AT modem is the emulator (a TEST DOUBLE) on a real pty.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from nodes.fieldlog.modemtrack import MmcliTracker, QmiTracker, SerialTracker
from nodes.fieldlog.sources import ModemSettings
from nodes.modem import identity as I
from nodes.modem.emulator import CELL_A, AtModemEmulator, ManualClock, field_test_trace
from nodes.modem.families import FAMILIES
from nodes.modem.serial_poll import AtPoller
from tests.support.fake_modemmanager import FakeModemManager
from tests.support.shipped import ROOT

CAPTURES = ROOT / "tests" / "fixtures" / "generated" / "modemmanager"
IMEI = "867978050021665"
MM = "/org/freedesktop/ModemManager1/Modem/"


# ---- identity (pure) ----------------------------------------------------------------------------------

def test_identity_from_the_real_captures():
    ident = I.mmcli_identity((CAPTURES / "modem_lte_cell_a.json").read_text())
    assert ident == I.ModemIdentity(MM + "1", IMEI, "3486248a65421b0208a27638064ca3f79e0e0237",
                                    "ctl-virtual-modem-m1", "registered")
    human = I.mmcli_identity((CAPTURES / "modem_lte_cell_a.txt").read_text())
    assert human == ident                                           # the human layout says the same
    after = I.mmcli_identity((CAPTURES / "modem_after_reset_disabled.json").read_text())
    assert after.location == MM + "2" and after.state == "disabled" and I.same_modem(after, ident)
    assert I.mmcli_modem_paths((CAPTURES / "list.json").read_text()) == [MM + "1"]
    assert I.mmcli_modem_paths((CAPTURES / "list.txt").read_text()) == [MM + "1"]
    assert I.mmcli_modem_paths((CAPTURES / "list_during_reprobe.txt").read_text()) == []
    assert I.mmcli_identity((CAPTURES / "modem_gone.json").read_text()) is None     # empty stdout
    odd = '{"modem-list":["/org/freedesktop/ModemManager1/Modem/3 --x","-e",7,"/org/freedesktop/ModemManager1/Modem/4"]}'
    assert I.mmcli_modem_paths(odd) == [MM + "4"]                  # only a modem's path becomes an argument


@pytest.mark.parametrize("selector,kind", [
    ("", "any"), ("any", "any"), ("0", "index"), ("12", "index"), (MM + "3", "path"), (IMEI, "equipment"),
    ("A1000012345678", "equipment"), ("3486248a65421b0208a27638064ca3f79e0e0237", "device-id"),
    ("/sys/devices/pci0000:00/0000:00:14.0/usb1/1-2", "device"), ("ctl-virtual-modem-m1", "device"),
])
def test_selector_kinds(selector, kind):
    assert I.selector_kind(selector)[0] == kind


def test_choose_prefers_the_pinned_modem_over_the_selector():
    a = I.ModemIdentity(MM + "0", "111111111111111", "a" * 40)
    b = I.ModemIdentity(MM + "1", IMEI, "b" * 40)
    assert I.choose("0", [a, b], None) is a                          # first time: the selector
    assert I.choose("0", [a, b], b.at(MM + "7")) is b                # then: the same hardware, wherever it is
    assert I.choose(IMEI, [a, b], None) is b
    assert I.choose(IMEI, [a], None) is None


def test_other_tools_identity_lines():
    qmi = "[/dev/cdc-wdm0] Device IDs retrieved:\n\tESN: '0'\n\tIMEI: '867034040025018'\n\tMEID: 'unknown'\n"
    assert I.qmicli_equipment_id(qmi) == "867034040025018"
    assert I.at_equipment_id("867978050021665\nOK") == "867978050021665"
    assert I.at_equipment_id('+CGSN: "867978050021665"\nOK') == "867978050021665"
    assert I.at_equipment_id("ERROR") is None
    assert I.candidates_like("/dev/ttyUSB2", ["/dev/ttyUSB10", "/dev/ttyUSB2", "/dev/ttyUSB6", "/dev/ttyACM0",
                                              "/dev/ttyUSBx"]) == ["/dev/ttyUSB2", "/dev/ttyUSB6", "/dev/ttyUSB10"]


# ---- ModemManager: the modem comes back as Modem/N+1, disabled ------------------------------------------------

def _tracker(selector: str, mm: FakeModemManager):
    events: list[tuple[str, dict]] = []
    t = MmcliTracker(FAMILIES["mmcli"], ModemSettings("mmcli", selector), mm.run,
                     event=lambda k, f: events.append((k, f)))
    return t, events


def _sample(out):
    return FAMILIES["mmcli"].merge(out)


@pytest.mark.parametrize("selector", [IMEI, "0", "any", "3486248a65421b0208a27638064ca3f79e0e0237"])
def test_a_reset_does_not_lose_the_modem(selector):
    pos = [5.0]
    mm = FakeModemManager(lambda: pos[0])
    t, events = _tracker(selector, mm)
    out, _ = t.round()                                               # found disabled: enabled, set up, polled
    s = _sample(out)
    assert s is not None and s.rsrp_dbm == -93.0 and s.cell_id_int == CELL_A.eci and s.mcc == "234"
    assert [k for k, _ in events] == ["modem-found", "modem-enabled"]
    assert ("-m", MM + "0", "--signal-setup=1") in mm.calls and ("-m", MM + "0", "--location-enable-3gpp") in mm.calls
    mm.reset()                                                       # the daemon drops Modem/0
    pos[0] = 31.0
    out, _ = t.round()
    assert out == {"modem": None, "signal": None, "location": None}  # a gap, nothing invented
    assert ("-m", MM + "0", "-J") in mm.calls and mm.calls[-1] == ("-L", "-J")
    mm.reappear()                                                    # ... and re-creates it as Modem/1, disabled
    pos[0] = 37.0
    events.clear()
    mm.calls.clear()
    out, _ = t.round()
    assert [k for k, _ in events] == ["modem-moved", "modem-enabled"]
    assert events[0][1]["from_path"] == MM + "0" and events[0][1]["path"] == MM + "1"
    assert "again after a reset" in events[1][1]["detail"]
    assert ("-m", MM + "1", "-e") in mm.calls and ("-m", MM + "1", "--signal-setup=1") in mm.calls
    s = _sample(out)
    assert s is not None and s.rsrp_dbm == -98.0 and s.tac == CELL_A.tac          # cell B by now
    events.clear()
    out, _ = t.round()                                               # and on: same path, no more setup
    assert events == [] and _sample(out) is not None
    assert [c for c in mm.calls if "-e" in c or "--signal-setup=1" in c] == [("-m", MM + "1", "-e"),
                                                                            ("-m", MM + "1", "--signal-setup=1")]


def test_a_modem_someone_else_enabled_is_not_enabled_after_its_reset():
    pos = [5.0]
    mm = FakeModemManager(lambda: pos[0], enabled=True)              # NetworkManager enabled it
    t, events = _tracker(IMEI, mm)
    assert _sample(t.round()[0]) is not None
    assert [k for k, _ in events] == ["modem-found"] and not any("-e" in c for c in mm.calls)
    mm.reset()
    mm.reappear()
    pos[0] = 38.0
    for _ in range(3):
        out, _ = t.round()
        assert _sample(out) is None                                  # disabled: no radio values, no zeros
    assert [k for k, _ in events] == ["modem-found", "modem-moved", "modem-not-enabled"]   # said once
    assert not any("-e" in c for c in mm.calls)


# ModemManager's states (mmcli "state"): who enables the modem is decided by the first one that says it
UNDECIDED = ("failed", "unknown", "initializing", "locked")
MANAGED = ("enabling", "disabling", "enabled", "searching", "registered", "disconnecting", "connecting", "connected")


@pytest.mark.parametrize("first", UNDECIDED + ("disabled",) + MANAGED)
def test_who_enables_the_modem_is_decided_by_the_first_state_that_says_it(first):
    """The modem is met in `first`, then turns `disabled` (a SIM unlocked by hand, a probe finished, its
    manager turned it off): the field test enables it only if nobody had enabled it."""
    pos = [5.0]
    mm = FakeModemManager(lambda: pos[0])
    shown = {"state": first}

    def run(argv, timeout):
        st, out = mm.run(argv, timeout)
        if shown["state"] and argv[3:] == ("-m", mm.path, "-J") and st == 0:
            out = out.replace('"state":"disabled"', '"state":"%s"' % shown["state"])
        return st, out
    events: list[tuple[str, dict]] = []
    t = MmcliTracker(FAMILIES["mmcli"], ModemSettings("mmcli", IMEI), run,
                     event=lambda k, f: events.append((k, f)), run_all=lambda jobs: [run(a, s) for a, s in jobs])
    out, _ = t.round()
    if first in UNDECIDED:
        assert _sample(out) is None and t.met_enabled is None           # not measuring, nothing decided
    shown["state"] = None                                               # now as the daemon says: disabled
    for _ in range(3):
        out, _ = t.round()
    kinds = [k for k, _ in events]
    if first in MANAGED:
        assert not mm.enabled and not any("-e" in c for c in mm.calls)
        assert kinds == ["modem-found", "modem-not-enabled"] and _sample(out) is None
        assert "someone else" in events[1][1]["detail"]
    else:
        assert mm.enabled and kinds == ["modem-found", "modem-enabled"]
        s = _sample(out)
        assert s is not None and s.rsrp_dbm == -93.0
        mm.reset()                                                      # ... and after a reset: enabled again
        mm.reappear()
        events.clear()
        assert _sample(t.round()[0]) is not None and [k for k, _ in events] == ["modem-moved", "modem-enabled"]


def test_a_modem_not_there_yet_is_looked_for_every_round():
    mm = FakeModemManager(lambda: 5.0)
    mm.reset()
    t, events = _tracker(IMEI, mm)
    assert t.round()[0] == {"modem": None, "signal": None, "location": None} and events == []
    mm.reappear()
    assert _sample(t.round()[0]) is not None and [k for k, _ in events] == ["modem-found", "modem-enabled"]


# ---- qmicli: the device path moved ---------------------------------------------------------------------------

def test_qmicli_device_path_that_moved_is_found_by_its_imei():
    devices = {"/dev/cdc-wdm0"}
    imei_of = {"/dev/cdc-wdm0": "867034040025018"}
    calls = []

    def run(argv, timeout):
        calls.append(argv)
        dev = argv[argv.index("-d") + 1]
        if dev not in devices:
            return 1, ""
        if "--dms-get-ids" in argv:
            return 0, f"[{dev}] Device IDs retrieved:\n\t ESN: '0'\n\tIMEI: '{imei_of[dev]}'\n\tMEID: 'unknown'\n"
        return 0, "[%s] Successfully got signal info\nLTE:\n\tRSSI: '-63 dBm'\n\tRSRQ: '-11 dB'\n\tRSRP: '-93 dBm'\n\tSNR: '8.0 dB'\n" % dev
    events = []
    t = QmiTracker(FAMILIES["qmicli"], ModemSettings("qmicli", "/dev/cdc-wdm0"), run,
                   event=lambda k, f: events.append((k, f)), present=lambda pattern: sorted(devices),
                   exists=lambda p: p in devices)
    out, _ = t.round()
    assert out["signal-info"] and t.imei == "867034040025018" and [k for k, _ in events] == ["modem-found"]
    devices.clear()
    assert not any(t.round()[0].values())                            # gone: a gap
    devices.update({"/dev/cdc-wdm1", "/dev/cdc-wdm2"})               # back with new numbers: wdm2 is ours
    imei_of.update({"/dev/cdc-wdm1": "356000000000009", "/dev/cdc-wdm2": "867034040025018"})
    out, _ = t.round()
    assert out["signal-info"] and t.where == "/dev/cdc-wdm2"
    assert events[-1][0] == "modem-moved" and events[-1][1]["from_path"] == "/dev/cdc-wdm0"
    assert ("qmicli", "-d", "/dev/cdc-wdm2", "-p", "--nas-get-signal-info") in calls


class _Qmi:
    """qmicli as the tracker runs it, on a set of device paths each holding a modem (IMEI) or nothing."""

    def __init__(self, at: dict):
        self.at = at                      # path -> IMEI (None: the modem there does not answer)
        self.calls: list[tuple] = []

    def run(self, argv, timeout):
        self.calls.append(tuple(argv))
        dev = argv[argv.index("-d") + 1]
        if dev not in self.at or self.at[dev] is None:
            return 1, ""
        if "--dms-get-ids" in argv:
            return 0, f"[{dev}] Device IDs retrieved:\n\tESN: '0'\n\tIMEI: '{self.at[dev]}'\n\tMEID: 'unknown'\n"
        return 0, "[%s] Successfully got signal info\nLTE:\n\tRSSI: '-63 dBm'\n\tRSRQ: '-11 dB'\n\tRSRP: '-93 dBm'\n" % dev

    def ids_asked(self) -> int:
        return sum("--dms-get-ids" in c for c in self.calls)


OURS, OTHER = "867034040025018", "359072060123458"


def _qmi_tracker(q: _Qmi, **kw):
    events: list[tuple[str, dict]] = []
    t = QmiTracker(FAMILIES["qmicli"], ModemSettings("qmicli", "/dev/cdc-wdm0"), q.run,
                   event=lambda k, f: events.append((k, f)), present=lambda pattern: sorted(q.at),
                   exists=lambda path: path in q.at, **kw)
    return t, events


def test_qmicli_another_modem_at_the_same_path_after_a_gap_is_not_polled_as_ours():
    q = _Qmi({"/dev/cdc-wdm0": OURS})
    t, events = _qmi_tracker(q)
    assert t.round()[0]["signal-info"] and t.imei == OURS
    q.at["/dev/cdc-wdm0"] = None                                     # silent (re-enumerating) ...
    assert not any(t.round()[0].values())
    q.at["/dev/cdc-wdm0"] = OTHER                                    # ... and another modem answers there
    for _ in range(3):
        out, _ = t.round()
        assert not any(out.values())                                 # a gap: its values are not ours
    assert [k for k, _ in events] == ["modem-found", "modem-changed"]  # said once
    assert OTHER in events[1][1]["detail"] and events[1][1]["path"] == "/dev/cdc-wdm0"
    q.at["/dev/cdc-wdm0"] = OURS                                     # ours is back at its path
    assert t.round()[0]["signal-info"] and t.where == "/dev/cdc-wdm0"


def test_qmicli_identity_is_checked_on_a_schedule_and_follows_ours_to_its_new_path():
    q = _Qmi({"/dev/cdc-wdm0": OURS})
    t, events = _qmi_tracker(q, check_every=5)
    t.round()
    assert q.ids_asked() == 1
    for _ in range(4):
        assert t.round()[0]["signal-info"]
    assert q.ids_asked() == 1                                        # no error, not due yet: not asked
    q.at.update({"/dev/cdc-wdm0": OTHER, "/dev/cdc-wdm1": OURS})     # swapped without a gap between rounds
    out, _ = t.round()                                               # the 5th round after the check: due
    assert not any(out.values())
    assert [k for k, _ in events] == ["modem-found", "modem-changed", "modem-moved"]
    assert events[2][1]["path"] == "/dev/cdc-wdm1" and t.where == "/dev/cdc-wdm1"
    assert t.round()[0]["signal-info"] and ("qmicli", "-d", "/dev/cdc-wdm1", "-p", "--nas-get-signal-info") in q.calls


def test_qmicli_a_round_whose_identity_cannot_be_read_is_not_used():
    q = _Qmi({"/dev/cdc-wdm0": OURS})
    t, events = _qmi_tracker(q)
    t.round()
    real = q.run

    def no_ids(argv, timeout):
        if "--dms-get-ids" in argv:
            return 1, ""
        return real(argv, timeout)
    t.run = no_ids
    t.check.suspect = True                                           # e.g. after a failed round
    assert not any(t.round()[0].values()) and t.check.suspect
    t.run = real
    assert t.round()[0]["signal-info"] and not t.check.suspect and [k for k, _ in events] == ["modem-found"]


# ---- AT port that moved (the emulator on a real pty, reached through a link that moves) ---------------------------

def test_at_port_that_moved_is_found_by_the_imei_of_cgsn(tmp_path: Path):
    trace = field_test_trace()
    with AtModemEmulator(trace, ManualClock(5.0)) as emu, AtModemEmulator(trace, ManualClock(5.0),
                                                                          vendor="sierra") as other:
        port2, port5, port9 = tmp_path / "ttyUSB2", tmp_path / "ttyUSB5", tmp_path / "ttyUSB9"
        os.symlink(emu.path, port2)
        fam = FAMILIES["at-quectel"]
        poller = AtPoller(str(port2), setup=[c.template[0] for c in fam.setup],
                          commands={c.name: c.template[0] for c in fam.poll}, timeout_s=0.5)
        events = []
        t = SerialTracker(poller, event=lambda k, f: events.append((k, f)),
                          present=lambda pattern: [str(p) for p in tmp_path.iterdir()])
        try:
            out, _ = t.round()
            assert fam.merge(out).pci == CELL_A.pci and t.imei == emu.profile.imei
            # re-enumeration: the port goes away, comes back as ttyUSB9; another modem's port is ttyUSB5
            os.unlink(port2)
            poller.close()
            assert not any(v for v in t.round()[0].values())
            os.symlink(other.path, port5)
            os.symlink(emu.path, port9)
            out, _ = t.round()
            assert fam.merge(out).pci == CELL_A.pci and poller.path == str(port9)
            assert [k for k, _ in events] == ["modem-found", "modem-moved"]
            assert events[1][1]["path"] == str(port9)
        finally:
            poller.close()
    assert any(c.upper() == "AT+CGSN" for c in other.commands_seen)       # the other port was asked, and left


def test_a_slow_answer_is_not_a_lost_modem():
    mm = FakeModemManager(lambda: 5.0)
    t, events = _tracker(IMEI, mm)
    assert _sample(t.round()[0]) is not None
    slow = {"on": True}

    def run(argv, timeout):
        if slow["on"] and argv[3:] == ("-m", MM + "0", "-J"):
            mm.calls.append(argv[3:])
            return None, ""                                          # ran past its timeout
        return mm.run(argv, timeout)
    t.run = run
    t.run_all = lambda jobs: [run(a, s) for a, s in jobs]
    mm.calls.clear()
    out, _ = t.round()
    assert out["modem"] is None and out["signal"] and out["location"]   # the rest of the round is kept
    assert t.where == MM + "0" and t.ready and ("-L", "-J") not in mm.calls and events[-1][0] == "modem-enabled"
    slow["on"] = False
    mm.calls.clear()
    assert _sample(t.round()[0]) is not None
    assert not any("--signal-setup=1" in c for c in mm.calls)           # still set up: nothing redone


def test_at_another_modem_at_the_same_port_is_not_polled_as_ours(tmp_path: Path):
    trace = field_test_trace()
    with AtModemEmulator(trace, ManualClock(5.0)) as emu, AtModemEmulator(trace, ManualClock(5.0),
                                                                          vendor="sierra") as other:
        port = tmp_path / "ttyUSB2"
        os.symlink(emu.path, port)
        fam = FAMILIES["at-quectel"]
        poller = AtPoller(str(port), setup=[c.template[0] for c in fam.setup],
                          commands={c.name: c.template[0] for c in fam.poll}, timeout_s=0.5)
        events = []
        t = SerialTracker(poller, event=lambda k, f: events.append((k, f)),
                          present=lambda pattern: [str(p) for p in tmp_path.iterdir()], check_every=3)
        try:
            assert fam.merge(t.round()[0]) is not None and t.imei == emu.profile.imei
            # the port is closed (an I/O error) and another modem is behind the same name when it reopens
            poller.close()
            os.unlink(port)
            os.symlink(other.path, port)
            for _ in range(2):
                out, _ = t.round()
                assert not any(v for v in out.values())              # its values are not ours
            assert [k for k, _ in events] == ["modem-found", "modem-changed"]
            assert other.profile.imei in events[1][1]["detail"]
            # ours is back behind the name (the port reopened: checked first), then checked every 3 rounds
            poller.close()
            os.unlink(port)
            os.symlink(emu.path, port)
            assert fam.merge(t.round()[0]) is not None and not t.check.suspect
            asked = sum(c.upper() == "AT+CGSN" for c in emu.commands_seen)
            for _ in range(3):
                assert fam.merge(t.round()[0]) is not None
            assert sum(c.upper() == "AT+CGSN" for c in emu.commands_seen) == asked + 1   # once in 3 rounds
        finally:
            poller.close()
