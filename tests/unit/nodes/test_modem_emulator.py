"""The AT modem emulator (a TEST DOUBLE: we have no modem hardware) on a real pty, read by serial_poll.

Replays `field_test_trace()` -- two identity changes (cell A -> B, LTE -> EN-DC), two SINR dips (one
alone, one just before the cell change) and a modem reset -- through the real reader, the family's
parsers and merge, and handover detection; everything must equal the trace's ground truth. Time is a
ManualClock the test advances, so nothing sleeps; the only waits are the reader's timeouts while the
emulated modem is silent during its reset (3 rounds x TIMEOUT).
"""
from __future__ import annotations

import json
import re
import time

import pytest

from nodes.modem import at
from nodes.modem.emulator import (
    CELL_A, CELL_B, AtModemEmulator, DriveState, DriveTrace, ManualClock, field_test_trace, mmcli_list,
    mmcli_outputs,
)
from nodes.modem.families import FAMILIES
from nodes.modem.handover import detect_handovers
from nodes.modem.serial_poll import AtPoller, AtPort
from tests.support.shipped import ROOT

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
    # What ModemManager 1.20.4 makes of an AT modem: LTE rsrp/rsrq (+CESQ), cell and area (+CEREG), MCC/MNC
    # (numeric +COPS), the operator name; no RSSI, SINR, PCI, EARFCN, band, and "lte" also with the NR leg.
    fields = ("technology", "rsrp_dbm", "rsrq_db", "cell_id_int", "enb_id", "tac", "mcc", "mnc", "operator_name")
    assert_matches_truth(series, trace, fields, nr_visible=False)
    got = [(e.time, e.kind, _int(e.before_cell_id), _int(e.after_cell_id)) for e in detect_handovers(series)]
    want = [(e.time, e.kind, e.before_cell_int, e.after_cell_int)
            for e in trace.expected_handovers(nr_visible=False, quality_visible=False)]
    assert got == want and [k for _t, k, _b, _a in got] == ["cell-change"]
    assert mmcli_outputs(trace, 31.0) == {"modem": None, "signal": None, "location": None}


MM_CAPTURES = ROOT / "tests" / "fixtures" / "generated" / "modemmanager"


@pytest.mark.parametrize("t,index,state,files", [
    (6.0, 1, "registered", ("modem_lte_cell_a.json", "signal_lte_cell_a.json", "location_lte_cell_a.json")),
    (24.0, 1, "registered", (None, "signal_lte_cell_b.json", "location_lte_cell_b.json")),
    (41.0, 2, "disabled", ("modem_after_reset_disabled.json", "signal_after_reset_disabled.json", None)),
])
def test_mmcli_double_prints_what_the_real_daemon_printed(t, index, state, files):
    """The ModemManager-shaped double is the real 1.20.4 output, key for key and value for value, at the same
    positions of the trace (captured from the daemon on the emulator: tests/fixtures/generated/modemmanager)."""
    out = mmcli_outputs(field_test_trace(), t, index=index, state=state)
    for name, f in zip(("modem", "signal", "location"), files):
        if f is None:
            continue
        assert json.loads(out[name]) == json.loads((MM_CAPTURES / f).read_text()), (name, f)
    if state == "disabled":
        assert out["location"] is None                 # "error: modem not enabled yet"
        assert (MM_CAPTURES / "location_after_reset_disabled.json.stderr").read_text() == \
            "error: modem not enabled yet\n"
        assert FAMILIES["mmcli"].merge(out) is None    # a disabled modem is a gap, not a sample of zeros


def test_mmcli_list_double_is_the_real_list_shape():
    assert json.loads(mmcli_list([1])) == json.loads((MM_CAPTURES / "list.json").read_text())
    assert json.loads(mmcli_list([2])) == json.loads((MM_CAPTURES / "list_after_reset.json").read_text())


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


# ---- what ModemManager's probing and initialisation ask (TS 27.007 / V.250 / TS 27.005 replies) ------------

def _emu(vendor: str = "quectel", t: float = 5.0) -> tuple[AtModemEmulator, ManualClock]:
    clock = ManualClock(t)
    return AtModemEmulator(field_test_trace(), clock, vendor=vendor), clock


@pytest.mark.parametrize("vendor,cgmi,ati0", [
    ("quectel", "Quectel", "Quectel"),
    ("sierra", "Sierra Wireless, Incorporated", "Manufacturer: Sierra Wireless, Incorporated"),
    ("huawei", "Huawei Technologies Co., Ltd.", "Manufacturer: Huawei Technologies Co., Ltd."),
    ("generic", "Generic", "Generic"),
])
def test_identification_per_vendor(vendor, cgmi, ati0):
    emu, _ = _emu(vendor)
    try:
        assert emu.reply("AT+CGMI") == ([cgmi], "OK") and emu.reply("AT+GMI") == ([cgmi], "OK")
        lines, final = emu.reply("ATI")
        assert final == "OK" and lines[0] == ati0
        imei = emu.reply("AT+CGSN")[0][0]
        assert imei.isdigit() and len(imei) == 15 and emu.reply("AT+GSN")[0] == [imei]
        assert emu.reply("AT+CGMM")[0] == [emu.profile.model] and emu.reply("AT+CGMR")[0] == [emu.profile.revision]
        assert emu.reply("AT+GCAP")[0][0].startswith("+GCAP: +CGSM")
        assert emu.reply("AT+CIMI") == (["234150123456789"], "OK")
        from nodes.modem.emulator_profiles import luhn_ok
        assert luhn_ok(imei) and luhn_ok(emu.profile.sim.iccid)          # invented, but well formed
    finally:
        emu.close()


def test_operator_in_every_cops_format_and_the_numeric_one_for_mcc_mnc():
    emu, _ = _emu()
    try:
        assert emu.reply("AT+COPS?") == (['+COPS: 0,0,"vodafone UK",7'], "OK")
        assert emu.reply("AT+COPS=3,2") == ([], "OK")
        assert emu.reply("AT+COPS?") == (['+COPS: 0,2,"23415",7'], "OK")
        assert emu.reply("AT+COPS=3,1;+COPS?") == (['+COPS: 0,1,"voda UK",7'], "OK")   # one command line
        assert emu.reply("AT+COPS=3,0;+COPS?") == (['+COPS: 0,0,"vodafone UK",7'], "OK")
        assert emu.reply('AT+CSCS="UCS2"') == ([], "OK")                 # strings in hex UCS2 from now on
        assert emu.reply("AT+COPS?") == (['+COPS: 0,0,"0076006F006400610066006F006E006500200055004B",7'], "OK")
        assert emu.reply("AT+CSCS=?") == (['+CSCS: ("GSM","IRA","UCS2")'], "OK")
    finally:
        emu.close()


def test_registration_in_every_mode_and_the_read_commands():
    emu, _ = _emu()
    try:
        assert emu.reply("AT+CEREG?") == (["+CEREG: 0,1"], "OK")
        assert emu.reply("AT+CEREG=2") == ([], "OK")
        assert emu.reply("AT+CEREG?") == ([f'+CEREG: 2,1,"{CELL_A.tac:04X}","{CELL_A.eci:07X}",7'], "OK")
        assert emu.reply("AT+CEREG=1;+CEREG?") == (["+CEREG: 1,1"], "OK")
        # 27.007 modes 3 (cause), 4 (PSM timers), 5 (both): nothing rejected, no PSM -- the fields of mode 2
        for n in (3, 4, 5):
            assert emu.reply(f"AT+CEREG={n}") == ([], "OK")
            assert emu.reply("AT+CEREG?") == ([f'+CEREG: {n},1,"{CELL_A.tac:04X}","{CELL_A.eci:07X}",7'], "OK")
        assert emu.reply("AT+CEREG=6")[1] == "ERROR" and emu.reply("AT+CEREG=?") == (["+CEREG: (0-5)"], "OK")
        for cmd, top in (("AT+CREG", 3), ("AT+CGREG", 5)):               # E-UTRAN only: CS/GERAN-UTRAN not registered
            for n in range(top + 1):
                assert emu.reply(f"{cmd}={n}") == ([], "OK")
                assert emu.reply(cmd + "?") == ([f"{cmd[2:]}: {n},0"], "OK")
            assert emu.reply(f"{cmd}={top + 1}")[1] == "ERROR"
            assert emu.reply(cmd + "=?") == ([f"{cmd[2:]}: (0-{top})"], "OK")
        assert emu.reply("AT+CGATT?") == (["+CGATT: 1"], "OK")
    finally:
        emu.close()


def test_cell_change_sends_the_cereg_urc_at_once():
    trace = field_test_trace()
    clock = ManualClock(19.0)
    with AtModemEmulator(trace, clock) as emu:
        with AtPort(emu.path, timeout_s=1.0) as port:
            assert port.command("ATE0").ok and port.command("AT+CEREG=2").ok
            clock.set(21.0)                                              # cell A -> B
            deadline = time.monotonic() + 2
            urcs: list[str] = []
            while not urcs and time.monotonic() < deadline:
                urcs = port.drain()
                time.sleep(0.01)
    assert urcs == [f'+CEREG: 1,"{CELL_B.tac:04X}","{CELL_B.eci:07X}",7']   # URC form: no <n>


@pytest.mark.parametrize("n,want", [(1, []), (3, ["cell"]), (4, ["cell"]), (5, ["cell"])])
def test_cell_change_urc_in_the_other_modes(n, want):
    """n=1 reports <stat> changes only (the cell change keeps <stat> 1: no URC); 3-5 the cell as n=2 does."""
    trace = field_test_trace()
    clock = ManualClock(19.0)
    with AtModemEmulator(trace, clock) as emu:
        with AtPort(emu.path, timeout_s=1.0) as port:
            assert port.command("ATE0").ok and port.command(f"AT+CEREG={n}").ok
            clock.set(21.0)
            deadline = time.monotonic() + (0.5 if not want else 2)
            urcs: list[str] = []
            while time.monotonic() < deadline and not urcs:
                urcs = port.drain()
                time.sleep(0.01)
    cell = f'+CEREG: 1,"{CELL_B.tac:04X}","{CELL_B.eci:07X}",7'
    assert urcs == [cell for _ in want]


def test_sim_access_iccid_spn_and_retries():
    emu, _ = _emu()
    try:
        (line,), final = emu.reply("AT+CRSM=176,12258,0,0,10")           # EF_ICCID, as ModemManager reads it
        m = re.fullmatch(r'\+CRSM: 144,0,"([0-9A-F]{20})"', line)
        assert final == "OK" and m
        swapped = "".join(m.group(1)[i + 1] + m.group(1)[i] for i in range(0, 20, 2))
        assert swapped.rstrip("F") == emu.profile.sim.iccid
        assert emu.reply("AT+CRSM=176,28589,0,0,4") == (['+CRSM: 144,0,"00FFFF02"'], "OK")   # EF_AD: 2-digit MNC
        spn = emu.reply("AT+CRSM=176,28486,0,0,17")[0][0]
        assert bytes.fromhex(spn.split('"')[1][2:]).rstrip(b"\xff") == b"vodafone UK"
        assert emu.reply("AT+CRSM=176,28478,0,0,0") == (["+CRSM: 106,130"], "OK")          # GID1: file not found
        assert emu.reply('AT+CSIM=10,"0020000100"') == (['+CSIM: 4,"63C3"'], "OK")         # PIN1: 3 retries
        assert emu.reply('AT+CSIM=10,"002C000100"') == (['+CSIM: 4,"63CA"'], "OK")         # PUK1: 10
        assert emu.reply("AT+CPIN?") == (["+CPIN: READY"], "OK")
        assert emu.reply("AT+CNUM") == (['+CNUM: ,"+447700900123",145'], "OK")
    finally:
        emu.close()


def test_lists_sms_clock_and_functionality():
    emu, _ = _emu()
    try:
        assert emu.reply("AT+CESQ=?") == (["+CESQ: (0-63,99),(0-7,99),(0-96,255),(0-49,255),(0-34,255),(0-97,255)"],
                                          "OK")
        assert emu.reply("AT+CESQ") == (["+CESQ: 99,99,255,255,18,48"], "OK")       # RSRQ -11 dB, RSRP -93 dBm
        assert emu.reply("AT+WS46=?")[0][0].startswith("+WS46: (")
        assert emu.reply("AT+CGDCONT=?")[0][0] == '+CGDCONT: (1-24),"IP",,,(0-2),(0-4),(0,1),(0,1)'
        assert emu.reply("AT+CGDCONT?")[0][0].startswith('+CGDCONT: 1,"IPV4V6","internet"')
        assert emu.reply("AT+CPMS=?") == (['+CPMS: ("SM","ME","MT"),("SM","ME","MT"),("SM","ME","MT")'], "OK")
        assert emu.reply("AT+CNMI=?") == (["+CNMI: (0-2),(0-3),(0,2),(0-2),(0,1)"], "OK")
        assert re.fullmatch(r'\+CCLK: "\d\d/\d\d/\d\d,\d\d:\d\d:\d\d\+00"', emu.reply("AT+CCLK?")[0][0])
        assert emu.reply("AT+CFUN?") == (["+CFUN: 1"], "OK")
        assert emu.reply("AT+CFUN=4") == ([], "OK")                                  # radio off:
        assert emu.reply("AT+CEREG?") == (["+CEREG: 0,0"], "OK")                     # not registered
        assert emu.reply("AT+COPS?") == (["+COPS: 0"], "OK") and emu.reply("AT+CSQ") == (["+CSQ: 99,99"], "OK")
        assert emu.reply("AT+CFUN=1;+CFUN?") == (["+CFUN: 1"], "OK")
    finally:
        emu.close()


def test_errors_follow_cmee_and_a_failing_command_ends_the_line():
    emu, _ = _emu()
    try:
        assert emu.reply("AT+CFUN=9") == ([], "ERROR")
        assert emu.reply("AT+CMEE=1") == ([], "OK")
        assert emu.reply("AT+CFUN=9") == ([], "+CME ERROR: 50")
        assert emu.reply("AT+CMEE=2;+CFUN=9") == ([], "+CME ERROR: incorrect parameters")
        assert emu.reply("AT+CLCC=?") == ([], "ERROR")                   # a data module: no call commands
        assert emu.reply("AT+CGMI;+XYZ;+CGMM") == (["Quectel"], "ERROR")   # V.250: the line stops at the error
        assert emu.reply("ATE0V1X4&C1") == ([], "OK") and not emu.echo
        emu_h, _ = _emu("huawei")
        try:
            assert emu_h.reply("AT+CESQ") == ([], "ERROR")               # the emulated Huawei has ^HCSQ instead
        finally:
            emu_h.close()
    finally:
        emu.close()


def test_a_reset_restores_power_up_settings():
    trace = field_test_trace()
    clock = ManualClock(28.0)
    with AtModemEmulator(trace, clock) as emu:
        with AtPort(emu.path, timeout_s=0.5) as port:
            for cmd in ("ATE0", "AT+CMEE=1", "AT+CEREG=2", "AT+COPS=3,2"):
                assert port.command(cmd).ok
            clock.set(31.0)
            time.sleep(0.05)
            clock.set(34.0)                                              # back: boot URCs, defaults
            r = port.command("AT+COPS?")
    assert r.echoed and "RDY" in r.urcs and "+QUSIM: 1" in r.urcs
    assert r.lines == ('+COPS: 0,0,"vodafone UK",7',)                     # format back to long alphanumeric
    assert emu.settings.cmee == 0 and emu.settings.cereg == 0
