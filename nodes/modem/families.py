"""Modem families as data: which commands to run, how to parse each output, how to merge a poll round.

`FAMILIES[modem.family]` is the only place a family name selects behaviour. Each family lists
* `setup`: commands run once after (re)connecting (echo off, ModemManager signal polling, ...);
* `poll`: commands run every sample, in MERGE PRIORITY order (earlier wins a field);
with argv templates for tools run as processes (transport "exec") or AT command strings for families read
over a serial port (transport "serial", see serial_poll.py). Templates use {device}, {baud}, {interface}.

    fam = FAMILIES[modem.family]
    fam.poll_commands(modem)   -> {"signal": ("env", "LC_ALL=C", "mmcli", "-m", "0", "--signal-get", "-J"), ...}
    fam.merge({"signal": stdout, "modem": stdout, "location": None})  -> RadioSample | None

`merge` returns None when no command produced a usable sample -- a silent / resetting modem is a gap in
the timeline, not a row of zeros. Stdlib only.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal, Mapping, Protocol

from nodes.modem import at, mmcli, qmicli, wimax
from nodes.modem.radio import ParseError, RadioSample, merge_samples


class ModemConfig(Protocol):
    """What families need from controller.inventory.Modem (duck-typed: no pydantic on the modem host)."""

    family: str
    device: str
    baud: int
    interface: str | None


Parse = Callable[[str], "RadioSample | None"]


@dataclass(frozen=True)
class PollCommand:
    name: str                       # key of this command's output in `merge(outputs)`
    template: tuple[str, ...]       # argv template (exec) or a 1-tuple holding the AT command (serial)
    parse: Parse

    def render(self, modem: ModemConfig) -> tuple[str, ...]:
        values = {"device": modem.device, "baud": str(modem.baud), "interface": modem.interface or ""}
        return tuple(part.format(**values) for part in self.template)


@dataclass(frozen=True)
class ModemFamily:
    name: str
    transport: Literal["exec", "serial"]
    setup: tuple[PollCommand, ...]
    poll: tuple[PollCommand, ...]
    notes: str = ""
    # Where a poll round's values come from: "modem" (the tool asks the modem this second: AT, QMI, ...) or
    # "daemon" (ModemManager's last values: when a refresh fails it keeps them -- load_values_ready in
    # src/mm-iface-modem-signal.c, 1.20.4, logs "couldn't reload extended signal information" and returns --
    # and its Signal interface carries no time, so a repeated value cannot be told from an unchanged radio).
    read_from: Literal["modem", "daemon"] = "modem"
    daemon_recent: Callable[[str], "bool | None"] | None = None    # the daemon's own freshness flag, if any

    def _rendered(self, cmds: tuple[PollCommand, ...], modem: ModemConfig) -> dict[str, tuple[str, ...] | str]:
        out: dict[str, tuple[str, ...] | str] = {}
        for c in cmds:
            argv = c.render(modem)
            out[c.name] = argv[0] if self.transport == "serial" else argv
        return out

    def setup_commands(self, modem: ModemConfig) -> dict[str, tuple[str, ...] | str]:
        return self._rendered(self.setup, modem)

    def poll_commands(self, modem: ModemConfig) -> dict[str, tuple[str, ...] | str]:
        """name -> argv tuple (exec) or AT command string (serial), in merge-priority order."""
        return self._rendered(self.poll, modem)

    def parse(self, name: str, text: str) -> RadioSample | None:
        cmd = next((c for c in self.poll if c.name == name), None)
        if cmd is None:
            raise KeyError(f"{self.name}: no poll command named {name!r}")
        return cmd.parse(text)

    def merge(self, outputs: Mapping[str, str | None]) -> RadioSample | None:
        """One RadioSample from one poll round; outputs[name] is None for a command that failed/timed out."""
        samples: list[RadioSample | None] = []
        for c in self.poll:
            text = outputs.get(c.name)
            if not text:
                continue
            try:
                samples.append(c.parse(text))
            except ParseError:
                # One garbled reply (e.g. a serial line torn by a reset) must not discard the other commands.
                samples.append(None)
        return merge_samples(samples)

    def provenance(self, outputs: Mapping[str, str | None]) -> dict[str, object]:
        """What a poll round's sample can be vouched for: `read_from`, and for a daemon family its own
        freshness flag (`daemon_recent`, from the first output that says it)."""
        out: dict[str, object] = {"read_from": self.read_from}
        if self.daemon_recent is not None:
            for c in self.poll:
                text = outputs.get(c.name)
                recent = self.daemon_recent(text) if text else None
                if recent is not None:
                    out["daemon_recent"] = recent
                    break
        return out


def serial_poll_argv(family: ModemFamily, modem: ModemConfig, *, python: str = "/usr/bin/python3",
                     timeout_s: float = 2.0) -> tuple[str, ...]:
    """argv that runs one serial poll round on the modem host and prints {name: raw text | null} as JSON."""
    if family.transport != "serial":
        raise ValueError(f"{family.name} is not a serial family")
    argv: list[str] = [python, "-m", "nodes.modem.serial_poll", "--device", modem.device, "--baud", str(modem.baud),
                       "--timeout", str(timeout_s)]
    for c in family.setup:
        argv += ["--setup", c.template[0]]
    for c in family.poll:
        argv += ["--command", f"{c.name}={c.template[0]}"]
    return tuple(argv)


def _at(name: str, command: str, *record_types: str) -> PollCommand:
    return PollCommand(name, (command,), at.sample_of(*record_types))


# mmcli: LC_ALL=C because mmcli formats numbers with the caller's locale ("-67,00" under cs_CZ).
_MMCLI = ("env", "LC_ALL=C", "mmcli", "-m", "{device}")
_QMICLI = ("qmicli", "-d", "{device}", "-p")    # -p: go through qmi-proxy, ModemManager may own the port

FAMILIES: dict[str, ModemFamily] = {
    "mmcli": ModemFamily(
        "mmcli", "exec",
        setup=(
            # ModemManager never enables a modem by itself (NetworkManager does); the field logger runs this
            # only on a modem it finds disabled, and after a reset only if it enabled it (fieldlog/modemtrack).
            PollCommand("enable", _MMCLI + ("-e",), mmcli.parse_sample),
            # Without a refresh rate every extended signal value stays "--" (02a SAMPLE D).
            PollCommand("signal-setup", _MMCLI + ("--signal-setup=1",), mmcli.parse_sample),
            PollCommand("location-enable", _MMCLI + ("--location-enable-3gpp",), mmcli.parse_sample),
        ),
        poll=(
            PollCommand("modem", _MMCLI + ("-J",), mmcli.parse_sample),
            PollCommand("signal", _MMCLI + ("--signal-get", "-J"), mmcli.parse_sample),
            PollCommand("location", _MMCLI + ("--location-get", "-J"), mmcli.parse_sample),
        ),
        notes="device = the modem's equipment id (IMEI), device id, physical device, D-Bus path, index or "
              "'any': the logger pins the modem it finds and follows it across resets (fieldlog/modemtrack)",
        read_from="daemon", daemon_recent=mmcli.daemon_recent,
    ),
    "qmicli": ModemFamily(
        "qmicli", "exec", setup=(),
        poll=(   # one NAS action per qmicli invocation ("error: too many NAS actions requested")
            PollCommand("signal-info", _QMICLI + ("--nas-get-signal-info",), qmicli.parse_sample),
            PollCommand("serving-system", _QMICLI + ("--nas-get-serving-system",), qmicli.parse_sample),
            PollCommand("cell-location", _QMICLI + ("--nas-get-cell-location-info",), qmicli.parse_sample),
            PollCommand("signal-strength", _QMICLI + ("--nas-get-signal-strength",), qmicli.parse_sample),
        ),
        notes="device = /dev/cdc-wdm0",
    ),
    "at-quectel": ModemFamily(
        "at-quectel", "serial",
        setup=(PollCommand("echo-off", ("ATE0",), at.sample_of()),),
        poll=(
            _at("qeng", 'AT+QENG="servingcell"', "qeng-servingcell"),
            _at("cops", "AT+COPS?", "cops"),
            _at("csq", "AT+CSQ", "csq"),
        ),
        notes="device = the AT port, e.g. /dev/ttyUSB2 (not the one ModemManager holds)",
    ),
    "at-sierra": ModemFamily(
        "at-sierra", "serial",
        setup=(PollCommand("echo-off", ("ATE0",), at.sample_of()),),
        poll=(
            _at("gstatus", "AT!GSTATUS?", "gstatus"),
            _at("cops", "AT+COPS?", "cops"),
            _at("csq", "AT+CSQ", "csq"),
        ),
    ),
    "at-huawei": ModemFamily(
        "at-huawei", "serial",
        # +CEREG=2 makes +CEREG? report TAC and cell id: ^HCSQ has no cell identity.
        setup=(PollCommand("echo-off", ("ATE0",), at.sample_of()),
               PollCommand("cereg-mode", ("AT+CEREG=2",), at.sample_of())),
        poll=(
            _at("hcsq", "AT^HCSQ?", "hcsq"),
            _at("sysinfoex", "AT^SYSINFOEX", "sysinfoex"),
            _at("cereg", "AT+CEREG?", "cereg"),
            _at("cops", "AT+COPS?", "cops"),
            _at("csq", "AT+CSQ", "csq"),
        ),
        notes="device = the PCUI port",
    ),
    "at-generic": ModemFamily(
        "at-generic", "serial",
        setup=(PollCommand("echo-off", ("ATE0",), at.sample_of()),
               PollCommand("cereg-mode", ("AT+CEREG=2",), at.sample_of())),
        poll=(
            _at("cesq", "AT+CESQ", "cesq"),
            _at("cereg", "AT+CEREG?", "cereg"),
            _at("cops", "AT+COPS?", "cops"),
            _at("csq", "AT+CSQ", "csq"),
        ),
    ),
    "wimax": ModemFamily(
        "wimax", "exec", setup=(),
        poll=(   # SOURCE/RECON formats only (02d): no recorded real wimaxcu output exists
            PollCommand("link", ("wimaxcu", "status", "link"), wimax.parse_sample),
            PollCommand("connect", ("wimaxcu", "status", "connect"), wimax.parse_sample),
        ),
        notes="Intel WiMAX Network Service; madwimax sticks log instead (wimax.parse_sample on the log)",
        # wimaxcu asks the WiMAX Network Service daemon; whether it answers from a cache nobody here has seen:
        # not vouched for as this second's values
        read_from="daemon",
    ),
}
