"""A stand-in for ModemManager as `mmcli` shows it -- a FAKE for unit tests (the real daemon runs on the
virtual rack: tests/integration/test_field_mm.py). Every output is in the shape the real mmcli 1.20.4 printed
(nodes.modem.emulator.mmcli_outputs / mmcli_list equal the captures in tests/fixtures/generated/modemmanager,
which tests/unit/nodes/test_modem_emulator.py checks), and it behaves as the real daemon did on a modem
reset: the modem object goes away ("error: couldn't find modem", an empty list), then the same modem comes
back at the next index, disabled, and stays disabled until someone runs `mmcli -e`.

`run(argv, timeout)` has the signature of the field logger's command runner (nodes.fieldlog.modemtrack.Run):
(exit status, stdout). `calls` records every mmcli argument list.
"""
from __future__ import annotations

from typing import Callable

from nodes.modem.emulator import MM_PREFIX, field_test_trace, mmcli_list, mmcli_outputs

MMCLI = ("env", "LC_ALL=C", "mmcli")


class FakeModemManager:
    def __init__(self, trace_time: Callable[[], float], *, enabled: bool = False, index: int = 0):
        self.trace = field_test_trace()
        self.trace_time = trace_time
        self.index = index
        self.present = True
        self.enabled = enabled
        self.signal_polling = False
        self.location_3gpp = False
        self.calls: list[tuple[str, ...]] = []

    @property
    def path(self) -> str:
        return f"{MM_PREFIX}/Modem/{self.index}"

    def reset(self) -> None:
        """The modem resets: the daemon drops it."""
        self.present = False

    def reappear(self) -> None:
        """The daemon probed it again: the same modem at the next index, disabled, nothing set up."""
        self.index += 1
        self.present = True
        self.enabled = self.signal_polling = self.location_3gpp = False

    def run(self, argv: tuple[str, ...], timeout_s: float) -> tuple[int | None, str]:
        assert tuple(argv[:3]) == MMCLI, argv
        args = tuple(argv[3:])
        self.calls.append(args)
        if args == ("-L", "-J"):
            return 0, mmcli_list([self.index] if self.present else []) + "\n"
        if args[:1] != ("-m",) or not self.present or args[1] != self.path:
            return 1, ""                                     # stderr: error: couldn't find modem
        rest = args[2:]
        state = "registered" if self.enabled else "disabled"
        out = mmcli_outputs(self.trace, self.trace_time(), index=self.index, state=state)
        if out["modem"] is None:                             # the emulated modem is silent (resetting)
            return 1, ""
        if rest == ("-J",):
            return 0, out["modem"] + "\n"
        if rest == ("-e",):
            self.enabled = True
            return 0, "successfully enabled the modem\n"
        if rest == ("--signal-setup=1",):
            if not self.enabled:
                return 1, ""
            self.signal_polling = True
            return 0, "Successfully setup signal quality information polling\n"
        if rest == ("--location-enable-3gpp",):
            if not self.enabled:
                return 1, ""
            self.location_3gpp = True
            return 0, "successfully setup location gathering\n"
        if rest == ("--signal-get", "-J"):
            if not self.signal_polling:                      # refresh rate 0: every value "--"
                return 0, mmcli_outputs(self.trace, self.trace_time(), index=self.index, state="disabled")["signal"] + "\n"
            return 0, out["signal"] + "\n"
        if rest == ("--location-get", "-J"):
            if not self.enabled or not self.location_3gpp:
                return 1, ""                                 # error: modem not enabled yet
            return 0, (out["location"] or "") + "\n"
        raise AssertionError(f"the fake does not know mmcli {' '.join(args)}")
