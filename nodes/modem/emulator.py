"""Serial AT modem emulator and ModemManager JSON source -- TEST DOUBLES for hardware we do not have.

Nothing here talks to a real modem. `AtModemEmulator` opens a pseudo-terminal (os.openpty), exposes the
slave tty path (`.path`) for the code under test (serial_poll) to open like /dev/ttyUSB2, and answers AT
commands from a replayable `DriveTrace`: a list of timed radio states (serving cell, signal levels, NR leg,
"modem resetting" periods). Time comes from a clock the test drives (`ManualClock`), so a 50-second drive
replays in well under a second.

Byte-level behaviour copied from the recorded samples (tests/fixtures/recorded/02c_*.md, 02a_*.md):
* echo on at power-up and after every reset (ATE0 turns it off): "AT+CSQ\\r" comes back before the reply;
* replies framed "\\r\\n<line>\\r\\n...\\r\\n" then "\\r\\nOK\\r\\n" / "\\r\\nERROR\\r\\n";
* reply shapes: Quectel +QENG as in SAMPLES Q1/Q5 (single-line LTE with CQI/tx_power/srxlev; EN-DC with
  "+QENG:"NR5G-NSA"" and no space after the colon), Sierra !GSTATUS? as SAMPLE S1 (TABs and trailing
  spaces; the TAC / Cell ID / SINR rows that S1's excerpt cut off follow the EM7455 layout seen in public
  transcripts), Huawei ^HCSQ as SAMPLE H1, +CESQ in the Telit "LTE networks" shape;
* a reset: the modem stops answering (input is swallowed), then comes back with echo on, +CEREG mode back
  to 0, and boot URCs ("RDY", "+CPIN: READY", ...); URCs queued by a state are written between the echo
  and the reply of the next command -- the hardest place for a reader.
+COPS? / +CEREG? are not in the recorded fixtures: their shape follows 3GPP TS 27.007 (ASSUMPTION).

The radio values of `field_test_trace()` are taken from the REAL samples (qmicli SAMPLE B: Vodafone UK
cell 3697446 / PCI 177 / EARFCN 2850 / band 7 and its neighbour PCI 295; Quectel SAMPLE Q5: NR leg
PCI 747 on n78); what the samples do not give (the neighbour's ECI, dip depths) is marked invented.
Stdlib only.
"""
from __future__ import annotations

import json
import os
import select
import termios
import threading
import tty
from dataclasses import dataclass, replace
from typing import Callable, Mapping, Sequence

from nodes.modem.emulator_3gpp import Settings, answer, registration_urcs, split_command_line
from nodes.modem.emulator_profiles import PROFILES, Profile
from nodes.modem.radio import LTE_BW_MHZ, NR_BW_MHZ, RadioSample, lte_cell


class ManualClock:
    """A clock the test sets; the emulator reads it to know which trace state is current."""

    def __init__(self, t: float = 0.0):
        self.t = t

    def __call__(self) -> float:
        return self.t

    def set(self, t: float) -> None:
        self.t = t


@dataclass(frozen=True)
class LteCell:
    label: str
    mcc: str
    mnc: str
    eci: int            # 28-bit E-UTRAN cell identity
    pci: int
    tac: int
    earfcn: int
    band: int
    bw_index: int = 5   # Quectel LTE bandwidth index (5 = 20 MHz)


@dataclass(frozen=True)
class NrLeg:
    pci: int
    rsrp_dbm: int
    sinr_db: int
    rsrq_db: int
    arfcn: int
    band: int
    bw_index: int = 12  # 100 MHz
    scs_index: int = 1  # 30 kHz


@dataclass(frozen=True)
class DriveState:
    """Radio state from time `t` (seconds) until the next state starts.

    Values are chosen representable in every vendor's encoding (even SINR in -20..30 for Quectel's 2X-20,
    odd RSSI for +CSQ's 2 dB steps), so a perfect reader reproduces them exactly.
    """

    t: float
    cell: LteCell
    rsrp_dbm: int
    rsrq_db: int
    rssi_dbm: int
    sinr_db: int
    nr: NrLeg | None = None
    responding: bool = True          # False: modem resetting -- silent
    connected: bool = True           # RRC connected (data flowing) vs idle
    operator_name: str = "vodafone UK"
    urcs: tuple[str, ...] = ()       # unsolicited lines the modem emits when this state starts

    @property
    def technology(self) -> str:
        return "nr5g-nsa" if self.nr is not None else "lte"


@dataclass(frozen=True)
class ExpectedHandover:
    time: float
    kind: str
    before_cell_int: int | None
    after_cell_int: int | None
    nr_only: bool = False            # visible only to readers that see the NR leg
    quality_only: bool = False       # visible only to readers that get SINR/CINR (not +CESQ-only ones)


@dataclass(frozen=True)
class DriveTrace:
    states: tuple[DriveState, ...]
    duration_s: float
    expected: tuple[ExpectedHandover, ...] = ()

    def state_at(self, t: float) -> DriveState:
        current = self.states[0]
        for s in self.states:
            if s.t <= t:
                current = s
            else:
                break
        return current

    def times(self, step_s: float = 1.0) -> list[float]:
        n = int(round(self.duration_s / step_s))
        return [i * step_s for i in range(n)]

    def truth_at(self, t: float, *, nr_visible: bool = True) -> RadioSample | None:
        """What a perfect reader records at time t: None while the modem is resetting (a gap, not zeros)."""
        s = self.state_at(t)
        if not s.responding:
            return None
        enb, local = lte_cell(s.cell.eci)
        nr = s.nr if nr_visible else None
        secondary = () if nr is None else (RadioSample(
            technology="nr5g", pci=nr.pci, rsrp_dbm=float(nr.rsrp_dbm), rsrq_db=float(nr.rsrq_db),
            sinr_db=float(nr.sinr_db), arfcn=nr.arfcn, band=f"n{nr.band}", bandwidth_mhz=NR_BW_MHZ[nr.bw_index]),)
        return RadioSample(
            technology="nr5g-nsa" if nr is not None else "lte",
            rssi_dbm=float(s.rssi_dbm), rsrp_dbm=float(s.rsrp_dbm), rsrq_db=float(s.rsrq_db),
            sinr_db=float(s.sinr_db), cell_id_int=s.cell.eci, enb_id=enb, local_cell_id=local, pci=s.cell.pci,
            tac=s.cell.tac, band=f"B{s.cell.band}", arfcn=s.cell.earfcn, bandwidth_mhz=LTE_BW_MHZ[s.cell.bw_index],
            operator_name=s.operator_name, mcc=s.cell.mcc, mnc=s.cell.mnc, secondary=secondary,
        )

    def without_resets(self) -> "DriveTrace":
        return replace(self, states=tuple(s for s in self.states if s.responding))

    def expected_handovers(self, *, nr_visible: bool = True, quality_visible: bool = True) -> list[ExpectedHandover]:
        return [e for e in self.expected
                if (nr_visible or not e.nr_only) and (quality_visible or not e.quality_only)]


# Real values (see module docstring). CELL_B's ECI is invented; its PCI/RSRP/RSRQ/RSSI are the real
# neighbour "Cell [1]" of qmicli SAMPLE B (RSRP -97.8, RSRQ -15.0, RSSI -73.6), rounded.
CELL_A = LteCell("qmicli SAMPLE B serving cell (Vodafone UK, RM530N-GL)", "234", "15", 3697446, 177, 12299,
                 2850, 7)
CELL_B = LteCell("PCI 295 = SAMPLE B neighbour; ECI invented", "234", "15", (14500 << 8) | 11, 295, 12299, 2850, 7)
NR_LEG = NrLeg(pci=747, rsrp_dbm=-71, sinr_db=33, rsrq_db=-11, arfcn=627264, band=78)   # Quectel SAMPLE Q5


def field_test_trace() -> DriveTrace:
    """50 s of a bus ride: a SINR dip that recovers on the same cell (t=10..13), a WiBro-style handover
    with SINR near the floor just before it (dip t=18..20, cell A -> B at t=20), a modem reset (silent
    t=30..33), and an NR leg added (LTE -> EN-DC) at t=40."""
    a = dict(cell=CELL_A, rsrp_dbm=-93, rsrq_db=-11, rssi_dbm=-63, sinr_db=8)
    b = dict(cell=CELL_B, rsrp_dbm=-98, rsrq_db=-15, rssi_dbm=-73, sinr_db=4)
    states = (
        DriveState(0, **a),
        DriveState(10, **{**a, "sinr_db": -18, "rsrp_dbm": -110, "rsrq_db": -19, "rssi_dbm": -79},
                   urcs=('+QIND: "csq",17,99',)),                   # invented dip depth
        DriveState(13, **a),
        DriveState(18, **{**a, "sinr_db": -20, "rsrp_dbm": -112, "rsrq_db": -20, "rssi_dbm": -81}),
        DriveState(20, **b),
        DriveState(30, **b, responding=False),
        DriveState(33, **b),
        DriveState(40, **b, nr=NR_LEG),
    )
    expected = (
        ExpectedHandover(10, "signal-dip", CELL_A.eci, CELL_A.eci, quality_only=True),
        ExpectedHandover(20, "cell-change", CELL_A.eci, CELL_B.eci),
        ExpectedHandover(40, "technology-change", CELL_B.eci, CELL_B.eci, nr_only=True),
    )
    return DriveTrace(states, 50.0, expected)


# ---------------------------------------------------------------------------------------------------------
# Reply builders per vendor (data tables; a command a vendor lacks answers ERROR, as real modems do)

def _qeng(s: DriveState) -> list[str]:
    c = s.cell
    sinr_raw = (s.sinr_db + 20) // 2               # vendor doc: dB = 2X - 20
    lte = (f'"FDD",{c.mcc},{c.mnc},{c.eci:X},{c.pci},{c.earfcn},{c.band},{c.bw_index},{c.bw_index},{c.tac:X},'
           f"{s.rsrp_dbm},{s.rsrq_db},{s.rssi_dbm},{sinr_raw}")
    state = "CONNECT" if s.connected else "NOCONN"
    if s.nr is None:
        # SAMPLE Q5 first line: ...,<SINR>,<CQI>,<tx_power>,<srxlev>; tx_power -32768 when not in traffic
        tail = "9,230,27" if s.connected else "0,-32768,27"
        return [f'+QENG: "servingcell","{state}","LTE",{lte},{tail}']
    n = s.nr
    return [f'+QENG: "servingcell","{state}"',
            f'+QENG: "LTE",{lte},9,230,-',
            f'+QENG:"NR5G-NSA",{c.mcc},{c.mnc},{n.pci},{n.rsrp_dbm},{n.sinr_db},{n.rsrq_db},{n.arfcn},{n.band},'
            f"{n.bw_index},{n.scs_index}"]


def _gstatus(emu: "AtModemEmulator", s: DriveState) -> list[str]:
    c = s.cell
    bw = int(LTE_BW_MHZ[c.bw_index])
    return [
        "!GSTATUS: ",
        f"Current Time:  {int(emu.clock()) + 356}\t\tTemperature: 40",
        f"Reset Counter: {emu.resets + 1}\t\tMode:        ONLINE         ",
        "System mode:   LTE        \tPS state:    Attached     ",
        f"LTE band:      {'B' + str(c.band):<7}\t\tLTE bw:      {bw} MHz  ",
        f"LTE Rx chan:   {c.earfcn}\t\tLTE Tx chan: {c.earfcn + 18000}",
        "LTE CA state:  NOT ASSIGNED",
        "EMM state:     Registered     \tNormal Service ",
        f"RRC state:     {'RRC Connected  ' if s.connected else 'RRC Idle       '}",
        "IMS reg state: No Srv  \t\t",
        "",
        f"PCC RxM RSSI:  {s.rssi_dbm}\t\tRSRP (dBm):  {s.rsrp_dbm}",
        f"PCC RxD RSSI:  {s.rssi_dbm - 2}\t\tRSRP (dBm):  {s.rsrp_dbm - 2}",
        f"Tx Power:      {'0' if s.connected else '--'}\t\tTAC:         {c.tac:04X} ({c.tac})",
        f"RSRQ (dB):     {s.rsrq_db:.1f}\t\tCell ID:     {c.eci:08X} ({c.eci})",
        f"SINR (dB):     {s.sinr_db:5.1f}",
        "",
    ]


def _hcsq(s: DriveState) -> list[str]:
    # MM conversions inverted: rssi = -121+v, rsrp = -141+v, sinr = -20.2+v/5, rsrq = -20+v/2 (SAMPLE H1 shape)
    return [f'^HCSQ: "LTE",{s.rssi_dbm + 121},{s.rsrp_dbm + 141},{round((s.sinr_db + 20.2) * 5)},'
            f"{(s.rsrq_db + 20) * 2}"]


def _sysinfoex(s: DriveState) -> list[str]:
    return ['^SYSINFOEX: 2,3,0,1,0,6,"LTE",101,"LTE"']


Builder = Callable[["AtModemEmulator", DriveState], list[str]]


def _plain(fn: Callable[[DriveState], list[str]]) -> Builder:
    return lambda emu, s: fn(s)


# Vendor commands only: the standard ones (+CSQ, +CESQ, +COPS, +CEREG, +CPIN, identification, SIM, ...) are
# answered by emulator_3gpp.answer for every vendor, except those a vendor's table below lacks.
VENDORS: dict[str, dict[str, Builder]] = {
    "quectel": {'AT+QENG="SERVINGCELL"': _plain(_qeng)},
    "sierra": {"AT!GSTATUS?": _gstatus},
    "huawei": {"AT^HCSQ?": _plain(_hcsq), "AT^SYSINFOEX": _plain(_sysinfoex)},
    "generic": {},
}
# Standard commands a vendor's emulated modem does not answer (ERROR, as a real modem without them): the
# emulated Huawei reports LTE signal through ^HCSQ only (its recorded samples, 02c H1/H2), not +CESQ.
LACKS: dict[str, frozenset[str]] = {"huawei": frozenset({"+CESQ"})}
BOOT_URCS: dict[str, tuple[str, ...]] = {v: PROFILES[v].boot_urcs for v in VENDORS}
FAMILY_VENDOR = {"at-quectel": "quectel", "at-sierra": "sierra", "at-huawei": "huawei", "at-generic": "generic"}


# ---------------------------------------------------------------------------------------------------------

class AtModemEmulator:
    """Answers AT commands on a pty from a DriveTrace. Use as a context manager; `.path` is the tty."""

    def __init__(self, trace: DriveTrace, clock: Callable[[], float], *, vendor: str = "quectel",
                 overrides: Mapping[str, tuple[Sequence[str], str]] | None = None):
        if vendor not in VENDORS:
            raise ValueError(f"unknown vendor {vendor!r} (known: {', '.join(VENDORS)})")
        self.trace = trace
        self.clock = clock
        self.vendor = vendor
        self.profile: Profile = PROFILES[vendor]
        self.overrides = {k.upper(): v for k, v in (overrides or {}).items()}
        self.settings = Settings.power_up(self.profile)
        self.resets = 0
        self.commands_seen: list[str] = []
        self._pending_urcs: list[str] = []
        self._last: DriveState | None = None
        self._inbuf = b""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.master, self.slave = os.openpty()
        # Raw slave: the pty line discipline must neither echo nor translate CR/LF -- the modem does that.
        tty.setraw(self.slave, termios.TCSANOW)
        self.path = os.ttyname(self.slave)
        self._wake_r, self._wake_w = os.pipe()
        self._thread = threading.Thread(target=self._run, name="at-modem-emulator", daemon=True)

    def __enter__(self) -> "AtModemEmulator":
        self._thread.start()
        return self

    @property
    def echo(self) -> bool:
        return self.settings.echo

    @property
    def cereg_n(self) -> int:
        return self.settings.cereg

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._stop.set()
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass
        if self._thread.is_alive():
            self._thread.join(timeout=2.0)
        for fd in (self.master, self.slave, self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass

    # -- loop ------------------------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                r, _, _ = select.select([self.master, self._wake_r], [], [], 0.005)
            except (OSError, ValueError):
                return
            self._tick()
            if self.master in r:
                try:
                    data = os.read(self.master, 4096)
                except OSError:
                    return
                self._feed(data)

    def _tick(self) -> None:
        """Follow the trace: reset/boot transitions, registration URCs, and the URCs of a new state."""
        st = self.trace.state_at(self.clock())
        if st is self._last:
            return
        prev, self._last = self._last, st
        if not st.responding:
            self._pending_urcs.clear()
            self._inbuf = b""
            return
        if prev is not None and not prev.responding:
            # Back from a reset: power-up defaults and the vendor's boot URCs.
            self.resets += 1
            self.settings = Settings.power_up(self.profile)
            for u in BOOT_URCS[self.vendor]:        # a booting modem announces itself at once
                self._write(b"\r\n" + u.encode() + b"\r\n")
        elif prev is not None:
            # Registration or cell changed: the modem says so at once when the TE asked (+CEREG=1/2).
            for u in registration_urcs(prev, st, self.settings):
                self._write(b"\r\n" + u.encode() + b"\r\n")
        # A state's own URCs are held back and written between the echo and the reply of the next command.
        self._pending_urcs.extend(st.urcs)

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                n = os.write(self.master, view)
                view = view[n:]
            except BlockingIOError:
                select.select([], [self.master], [], 0.05)

    def _flush_urcs(self) -> None:
        for u in self._pending_urcs:
            self._write(b"\r\n" + u.encode() + b"\r\n")
        self._pending_urcs.clear()

    def _feed(self, data: bytes) -> None:
        if self._last is None or not self._last.responding:
            return                                   # resetting: input is lost, nothing is echoed
        self._inbuf += data
        while b"\r" in self._inbuf:
            raw, _, rest = self._inbuf.partition(b"\r")
            self._inbuf = rest.lstrip(b"\n")
            self._handle(raw)

    def _handle(self, raw: bytes) -> None:
        cmd = raw.decode("ascii", "replace").strip()
        if not cmd:
            return                                   # a bare CR: nothing to answer (V.250: empty line ignored)
        self.commands_seen.append(cmd)
        if self.settings.echo:
            self._write(raw + b"\r")
        self._flush_urcs()                           # URCs between echo and reply: the hard case
        lines, final = self.reply(cmd)
        out = b""
        if lines:
            out += b"\r\n" + b"\r\n".join(x.encode() for x in lines) + b"\r\n"
        if not self.settings.quiet:
            out += b"\r\n" + self._result(final).encode() + b"\r\n"
        if out:
            self._write(out)

    def _result(self, final: str) -> str:
        """V.250 V0 gives numeric result codes (0 OK, 4 ERROR); +CME ERROR stays as it is."""
        if self.settings.verbose:
            return final
        return {"OK": "0", "ERROR": "4"}.get(final, final)

    def reply(self, cmd: str) -> tuple[list[str], str]:
        """(information lines, final result code) for one command line in the current state: each command of
        the line in turn (V.250 5.2.1), stopping at the first that fails."""
        up = cmd.upper().replace(" ", "")
        if up in self.overrides:
            lines, final = self.overrides[up]
            return list(lines), final
        st = self._last if self._last is not None else self.trace.state_at(self.clock())
        if not up.startswith("AT"):
            return [], "ERROR"
        out: list[str] = []
        for part in split_command_line(cmd):
            pu = part.upper().replace(" ", "")
            builder = VENDORS[self.vendor].get("AT" + pu)
            if builder is not None:
                got: tuple[list[str], str] | None = (builder(self, st), "OK")
            elif any(pu.startswith(x) for x in LACKS.get(self.vendor, ())):
                got = None
            else:
                got = answer(part, self.settings, self.profile, st)
            if got is None:
                return out, "ERROR"                  # a command this modem lacks (V.250: ERROR, line aborted)
            lines, final = got
            out += lines
            if final != "OK":
                return out, final
        return out, "OK"


# ---------------------------------------------------------------------------------------------------------
# ModemManager-shaped JSON source (test double): what mmcli 1.20.4 prints about this emulator's modem (a Quectel
# RM530N-GL on one AT port, as `ctl lab up` runs it under the real daemon) for the same trace. The shapes are
# those of the REAL captures in tests/fixtures/generated/modemmanager (key for key: a unit test compares them):
# compact one-line JSON, sorted keys, every scalar a string, "--" for no value, numbers "%.2f"; no "5g.rssi";
# location tac six hex digits, cid eight, lac "0000". The values are the ones the daemon derives from this
# emulator's replies: LTE rsrp/rsrq from +CESQ (rssi and snr stay "--": an AT modem's +CESQ has neither),
# signal quality from +CSQ (100 x index / 31, truncated: 25 -> 80, as in the capture), tac/cid from +CEREG,
# mcc/mnc from the numeric +COPS; access technology "lte" also with the NR leg (+CEREG reports E-UTRAN).

MM_PREFIX = "/org/freedesktop/ModemManager1"
MM_DEVICE_ID = "3486248a65421b0208a27638064ca3f79e0e0237"    # as the real daemon printed it for this modem


def _mm(v: float | None) -> str:
    return "--" if v is None else f"{v:.2f}"


def _dump(obj: dict) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def mmcli_list(indices: Sequence[int]) -> str:
    """`mmcli -L -J` with the modems Modem/<i>."""
    return _dump({"modem-list": [f"{MM_PREFIX}/Modem/{i}" for i in indices]})


def mmcli_outputs(trace: DriveTrace, t: float, *, index: int = 0, state: str = "registered",
                  device: str = "ctl-virtual-modem-m1") -> dict[str, str | None]:
    """{"modem": ..., "signal": ..., "location": ...} stdout texts of `mmcli -m <index> -J`, `--signal-get -J`,
    `--location-get -J`; all None while the modem resets (ModemManager has dropped the modem object: mmcli
    prints "error: couldn't find modem" on stderr). `state` "disabled": the modem as the daemon re-creates it
    after a reset -- no radio values, signal refresh rate 0, and no location ("error: modem not enabled yet")."""
    s = trace.state_at(t)
    if not s.responding:
        return {"modem": None, "signal": None, "location": None}
    c = s.cell
    p = PROFILES["quectel"]
    enabled = state != "disabled"
    quality = int(100 * max(0, min(31, round((s.rssi_dbm + 113) / 2))) / 31) if enabled else 0
    modem = {"modem": {
        "3gpp": {"5gnr": {"registration-settings": {"drx-cycle": "--", "mico-mode": "--"}}, "enabled-locks": [],
                 "eps": {"initial-bearer": {"dbus-path": "--", "settings": {"apn": "--", "ip-type": "--",
                                                                            "password": "--", "user": "--"}},
                         "ue-mode-operation": "--"},
                 "imei": p.imei, "operator-code": f"{c.mcc}{c.mnc}" if enabled else "--",
                 "operator-name": s.operator_name if enabled else "--",
                 "packet-service-state": "attached" if enabled else "--", "pco": "--",
                 "registration-state": "home" if enabled else "--"},
        "cdma": {"activation-state": "--", "cdma1x-registration-state": "--", "esn": "--",
                 "evdo-registration-state": "--", "meid": "--", "nid": "--", "sid": "--"},
        "dbus-path": f"{MM_PREFIX}/Modem/{index}",
        "generic": {"access-technologies": ["lte"] if enabled else [], "bearers": [], "carrier-configuration": "--",
                    "carrier-configuration-revision": "--", "current-bands": [],
                    "current-capabilities": ["gsm-umts, lte"], "current-modes": "allowed: 2g, 3g, 4g; preferred: none",
                    "device": device, "device-identifier": MM_DEVICE_ID, "drivers": [],
                    "equipment-identifier": p.imei, "hardware-revision": "--", "manufacturer": p.manufacturer,
                    "model": p.model, "own-numbers": [p.sim.msisdn], "plugin": "quectel", "ports": ["tty63 (at)"],
                    "power-state": "on", "primary-port": "tty63", "primary-sim-slot": "--", "revision": p.revision,
                    "signal-quality": {"recent": "yes", "value": str(quality)},
                    "sim": f"{MM_PREFIX}/SIM/{index}", "sim-slots": [], "state": state, "state-failed-reason": "--",
                    "supported-bands": [], "supported-capabilities": ["gsm-umts, lte"],
                    "supported-ip-families": ["ipv4", "ipv6", "ipv4v6"],
                    "supported-modes": ["allowed: 2g, 3g, 4g; preferred: none"], "unlock-required": "--",
                    "unlock-retries": ["sim-pin (3)", "sim-puk (10)", "sim-pin2 (3)", "sim-puk2 (10)"]},
    }}
    signal = {"modem": {"signal": {
        "5g": {"error-rate": "--", "rsrp": "--", "rsrq": "--", "snr": "--"},
        "cdma1x": {"ecio": "--", "error-rate": "--", "rssi": "--"},
        "evdo": {"ecio": "--", "error-rate": "--", "io": "--", "rssi": "--", "sinr": "--"},
        "gsm": {"error-rate": "--", "rssi": "--"},
        "lte": {"error-rate": "--", "rsrp": _mm(s.rsrp_dbm if enabled else None),
                "rsrq": _mm(s.rsrq_db if enabled else None), "rssi": "--", "snr": "--"},
        "refresh": {"rate": "1" if enabled else "0"}, "threshold": {"error-rate": "no", "rssi": "0"},
        "umts": {"ecio": "--", "error-rate": "--", "rscp": "--", "rssi": "--"},
    }}}
    location = {"modem": {"location": {
        "3gpp": {"cid": f"{c.eci:08X}", "lac": "0000", "mcc": str(int(c.mcc)), "mnc": str(int(c.mnc)),
                 "tac": f"{c.tac:06X}"},
        "cdma-bs": {"latitude": "--", "longitude": "--"},
        "gps": {"altitude": "--", "latitude": "--", "longitude": "--", "nmea": [], "utc": "--"},
    }}}
    return {"modem": _dump(modem), "signal": _dump(signal), "location": _dump(location) if enabled else None}
