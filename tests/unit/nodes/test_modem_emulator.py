"""The AT modem emulator (a TEST DOUBLE: we have no modem hardware) on a real pty, read by serial_poll.

Replays `field_test_trace()` -- two identity changes (cell A -> B, LTE -> EN-DC), two SINR dips (one
alone, one just before the cell change) and a modem reset -- through the real reader, the family's
parsers and merge, and handover detection; everything must equal the trace's ground truth. Time is a
ManualClock the test advances, so nothing sleeps; the only waits are the reader's timeouts while the
emulated modem is silent during its reset (3 rounds x TIMEOUT).
"""
from __future__ import annotations

import time

import pytest

from nodes.modem import at
from nodes.modem.emulator import (
    CELL_A, CELL_B, AtModemEmulator, DriveState, DriveTrace, ManualClock, field_test_trace, mmcli_outputs,
)
from nodes.modem.families import FAMILIES
from nodes.modem.handover import detect_handovers
from nodes.modem.serial_poll import AtPoller, AtPort

TIMEOUT = 0.2     # reader timeout: only spent while the emulated modem is resetting

# Fields each family reads from its commands (the rest of the truth is outside what it polls).
QUECTEL_FIELDS = ("technology", "rsrp_dbm", "rsrq_db", "rssi_dbm", "sinr_db", "cell_id_int", "enb_id",
                  "local_cell_id", "pci", "tac", "band", "arfcn", "bandwidth_mhz", "mcc", "mnc", "operator_name")
LEG_FIELDS = ("technology", "pci", "rsrp_dbm", "rsrq_db", "sinr_db", "arfcn", "band", "bandwidth_mhz")
SIERRA_FIELDS = ("technology", "rsrp_dbm", "rsrq_db", "rssi_dbm", "sinr_db", "cell_id_int", "tac", "band", "arfcn",
                 "bandwidth_mhz", "operator_name")
HUAWEI_FIELDS = ("technology", "rsrp_dbm", "rsrq_db", "rssi_dbm", "sinr_db", "cell_id_int", "tac", "operator_name")
GENERIC_FIELDS = ("technology", "rsrp_dbm", "rsrq_db", "cell_id_int", "tac", "operator_name")


def run_trace(family: str, trace: DriveTrace):
    """Poll every second of the trace through the pty; returns (series, raw outputs, urcs per t, seconds)."""
    fam = FAMILIES[family]
    vendor = family.removeprefix("at-")
    clock = ManualClock()
    series, raws, urcs = [], {}, {}
    started = time.monotonic()
    with AtModemEmulator(trace, clock, vendor=vendor) as emu:
        poller = AtPoller(emu.path, 115200, setup=[c.template[0] for c in fam.setup],
                          commands={c.name: c.template[0] for c in fam.poll}, timeout_s=TIMEOUT)
        try:
            for t in trace.times():
                clock.set(t)
                out = poller.poll_once()
                raws[t] = out
                urcs[t] = poller.last_urcs
                series.append((t, fam.merge(out)))
        finally:
            poller.close()
    return series, raws, urcs, time.monotonic() - started


def assert_matches_truth(series, trace: DriveTrace, fields, *, nr_visible: bool, snr_as_sinr: bool = False):
    for t, got in series:
        want = trace.truth_at(t, nr_visible=nr_visible)
        if want is None:
            assert got is None, f"t={t}: modem resetting must be a gap, got {got}"
            continue
        assert got is not None, f"t={t}: no sample"
        for f in fields:
            w = getattr(want, f)
            g = got.snr_db if (f == "sinr_db" and snr_as_sinr) else getattr(got, f)
            assert g == w, f"t={t} {f}: got {g!r}, want {w!r}"
        if nr_visible:
            assert len(got.secondary) == len(want.secondary), f"t={t}: NR leg"
            for gl, wl in zip(got.secondary, want.secondary):
                for f in LEG_FIELDS:
                    g = gl.snr_db if (f == "sinr_db" and snr_as_sinr) else getattr(gl, f)
                    if f in ("arfcn", "band", "bandwidth_mhz", "pci") and snr_as_sinr:
                        continue                          # mmcli --signal-get has no NR identity fields
                    assert g == getattr(wl, f), f"t={t} NR {f}"


def assert_handovers(series, trace: DriveTrace, *, nr_visible: bool, quality_visible: bool = True):
    got = [(e.time, e.kind, _int(e.before_cell_id), _int(e.after_cell_id)) for e in detect_handovers(series)]
    want = [(e.time, e.kind, e.before_cell_int, e.after_cell_int)
            for e in trace.expected_handovers(nr_visible=nr_visible, quality_visible=quality_visible)]
    assert got == want


def _int(printed: str | None) -> int | None:
    return None if printed is None else int(printed, 16)


@pytest.fixture(scope="module")
def quectel_run():
    trace = field_test_trace()
    return trace, *run_trace("at-quectel", trace)


def test_quectel_replay_equals_ground_truth(quectel_run):
    trace, series, raws, urcs, seconds = quectel_run
    assert_matches_truth(series, trace, QUECTEL_FIELDS, nr_visible=True)
    assert seconds < 3.0


def test_quectel_handovers_equal_ground_truth(quectel_run):
    trace, series, *_ = quectel_run
    assert_handovers(series, trace, nr_visible=True)
    dip, change, tech = detect_handovers(series)
    assert (dip.dip_start, dip.dip_end, dip.dip_duration_s, dip.dip_min_db) == (10.0, 13.0, 3.0, -18.0)
    assert (change.dip_start, change.dip_duration_s, change.dip_min_db) == (18.0, 2.0, -20.0)   # WiBro-style
    assert (change.before_pci, change.after_pci) == (CELL_A.pci, CELL_B.pci)
    assert (tech.before_technology, tech.after_technology) == ("lte", "nr5g-nsa")


def test_modem_reset_is_missing_samples_not_zeros(quectel_run):
    trace, series, raws, urcs, _ = quectel_run
    silent = [t for t, s in series if s is None]
    assert silent == [30.0, 31.0, 32.0]
    for t in silent:
        assert all(v is None for v in raws[t].values())          # no reply text at all
    assert series[33][1].rsrp_dbm == -98.0                       # back with the same values, not reset to 0
    # the modem announced its reboot; those lines never reach a reply text
    assert {"RDY", "+CPIN: READY"} <= set(urcs[33.0])
    assert all("RDY" not in (v or "") for v in raws[33.0].values())


def test_urc_between_echo_and_reply_is_separated(quectel_run):
    trace, series, raws, urcs, _ = quectel_run
    assert '+QIND: "csq",17,99' in urcs[10.0]
    assert all("+QIND" not in (v or "") for v in raws[10.0].values())
    assert raws[10.0]["csq"] == "+CSQ: 17,99\nOK"


def test_echo_on_after_power_up_and_after_reset():
    trace = DriveTrace((DriveState(0, CELL_A, -93, -11, -63, 8), DriveState(5, CELL_A, -93, -11, -63, 8, responding=False),
                        DriveState(6, CELL_A, -93, -11, -63, 8)), 10.0)
    clock = ManualClock()
    with AtModemEmulator(trace, clock, vendor="quectel") as emu, AtPort(emu.path, timeout_s=TIMEOUT) as port:
        r = port.command("AT+CSQ")
        assert r.echoed and r.lines == ("+CSQ: 25,99",) and r.ok
        r = port.command("ATE0")
        assert r.echoed and r.ok                                      # ATE0 itself is still echoed
        r = port.command("AT+CSQ")
        assert not r.echoed and r.lines == ("+CSQ: 25,99",)
        clock.set(5)
        with pytest.raises(TimeoutError):
            port.command("AT+CSQ")
        clock.set(6)
        r = port.command("AT+CSQ")
        assert r.echoed and r.lines == ("+CSQ: 25,99",)             # reset restored echo
        assert "RDY" in r.urcs and emu.resets == 1                    # boot URCs precede the reply


def test_error_and_cme_error_framing_through_the_reader():
    trace = DriveTrace((DriveState(0, CELL_A, -93, -11, -63, 8),), 1.0)
    with AtModemEmulator(trace, ManualClock(), vendor="quectel",
                         overrides={"AT+CGSN": ([], "+CME ERROR: 10")}) as emu, AtPort(emu.path, timeout_s=1.0) as port:
        r = port.command("AT+CGSN")
        assert r.final == "+CME ERROR: 10" and not r.ok
        (rec,) = at.to_json(r.text)["responses"]
        assert rec["type"] == "error" and rec["fields"]["code"] == 10
        r = port.command("AT!GSTATUS?")                        # a Sierra command on a Quectel: ERROR
        assert r.final == "ERROR" and r.lines == ()
        r = port.command('AT+QENG="servingcell"')
        assert r.lines[0].startswith('+QENG: "servingcell","CONNECT","LTE","FDD",234,15,386B26,177,2850,7,')


@pytest.mark.parametrize("family,fields", [
    ("at-sierra", SIERRA_FIELDS), ("at-huawei", HUAWEI_FIELDS), ("at-generic", GENERIC_FIELDS),
])
def test_other_vendors_replay_equals_ground_truth(family, fields):
    # LTE-only readers: the NR leg is invisible, so the LTE->EN-DC change is not theirs to see.
    trace = field_test_trace().without_resets()
    series, raws, urcs, seconds = run_trace(family, trace)
    assert_matches_truth(series, trace, fields, nr_visible=False)
    # +CESQ has no SINR: a generic reader sees the cell change but not a dip on the same cell.
    assert_handovers(series, trace, nr_visible=False, quality_visible=family != "at-generic")
    assert seconds < 2.0
    if family == "at-generic":
        # +CSQ is the only RSSI source there: 2 dB steps, -113 + 2v
        assert all(s.rssi_dbm == trace.truth_at(t).rssi_dbm for t, s in series)


def test_sierra_reply_is_shaped_like_the_recorded_sample():
    trace = DriveTrace((DriveState(0, CELL_A, -93, -11, -63, 8),), 1.0)
    with AtModemEmulator(trace, ManualClock(), vendor="sierra") as emu, AtPort(emu.path, timeout_s=1.0) as port:
        r = port.command("AT!GSTATUS?")
    assert r.lines[0] == "!GSTATUS: "                                  # trailing space, as in SAMPLE S1
    assert "LTE band:      B7     \t\tLTE bw:      20 MHz  " in r.lines
    assert "" in r.lines                                               # blank line inside the reply kept
    assert r.lines[-1].startswith("SINR (dB):")


def test_mmcli_json_source_replay_equals_ground_truth():
    trace = field_test_trace()
    fam = FAMILIES["mmcli"]
    series = [(t, fam.merge(mmcli_outputs(trace, t))) for t in trace.times()]
    # mmcli reports the modem's SINR as "snr"; it has no PCI/EARFCN/band
    fields = ("technology", "rsrp_dbm", "rsrq_db", "rssi_dbm", "sinr_db", "cell_id_int", "enb_id", "tac", "mcc",
              "mnc", "operator_name")
    assert_matches_truth(series, trace, fields, nr_visible=True, snr_as_sinr=True)
    got = [(e.time, e.kind, _int(e.before_cell_id), _int(e.after_cell_id)) for e in detect_handovers(series)]
    want = [(e.time, e.kind, e.before_cell_int, e.after_cell_int) for e in trace.expected_handovers()]
    assert got == want
    assert mmcli_outputs(trace, 31.0) == {"modem": None, "signal": None, "location": None}


def test_serial_poll_cli_one_round(capsys):
    # What families.serial_poll_argv runs on the modem host, here against the emulator's pty.
    import json
    from nodes.modem import serial_poll
    trace = DriveTrace((DriveState(0, CELL_A, -93, -11, -63, 8),), 1.0)
    with AtModemEmulator(trace, ManualClock(), vendor="quectel") as emu:
        rc = serial_poll.main(["--device", emu.path, "--timeout", "1", "--setup", "ATE0",
                               "--command", 'qeng=AT+QENG="servingcell"', "--command", "csq=AT+CSQ"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["replies"]["csq"] == "+CSQ: 25,99\nOK"
    s = FAMILIES["at-quectel"].merge(out["replies"])
    assert s.cell_id_int == CELL_A.eci and s.sinr_db == 8.0
