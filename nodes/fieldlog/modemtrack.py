"""Finding the modem again: poll rounds that follow the modem by its identity, not by where it was.

On a bus or a subway a modem resets and re-enumerates as a matter of course. Where it is changes; what it is
does not (nodes/modem/identity.py). Each tracker here runs one family's poll round (the logger's radio
worker calls `round()` once per tick) and, when the modem is not where it was, finds it again by the
identity it pinned the first time, says so as an event, and goes on:

* `MmcliTracker` (family mmcli): ModemManager drops Modem/N on a reset and creates the same modem as
  Modem/N+1, *disabled* -- it never enables a modem by itself (NetworkManager normally does). The tracker
  lists the modems (`mmcli -L -J`), reads each one's identity (`mmcli -m PATH -J`), takes the one it pinned
  (or, the first time, the one the inventory's `device` names: an index, a D-Bus path, an equipment id, a
  device id or the physical device, or "any"), enables it again if this field test enabled it, runs the
  family's setup again (signal polling, 3GPP location), and polls it by its current path.
* `QmiTracker` (family qmicli): a device path (/dev/cdc-wdm0) that vanished is looked for among the paths
  of the same name stem, by the IMEI `qmicli --dms-get-ids` printed the first time.
* `SerialTracker` (AT families): an AT port that vanished is looked for the same way, by the IMEI of
  AT+CGSN. Other ports are only opened while the configured one is gone or holds another modem, and only
  those of its name stem.
* Both read the IMEI at the path again after any error or gap (a reset, a re-enumeration and a modem
  swapped at the same path all look alike from outside) and every `check_every` (10) rounds, before the
  round's values are used: another modem there is a `modem-changed` event and a gap, never polled as ours.

A round while the modem is away returns no output (the logger records the second as a gap: `modem_ok`
false, no radio point). Events (`modem-found`, `modem-moved`, `modem-changed`, `modem-enabled`, `modem-not-enabled`) go
through `event(kind, fields)`; the logger writes them as `field_event` points of the tick that saw them.
Standard library only (runs on the modem host).
"""
from __future__ import annotations

import glob
import os
from typing import Any, Callable, Dict, List, Optional, Tuple

from nodes.modem.identity import (ModemIdentity, at_equipment_id, candidates_like, choose, mmcli_identity,
                                  mmcli_modem_paths, qmicli_equipment_id, same_modem)
from nodes.modem.mmcli import RADIO_STATES

# Who enables the modem, decided by the first state the tracker meets that says it (ModemManager's
# MMModemState, `mmcli -m N` "state"; ModemManager-enums.h):
# * `disabled`: nobody has enabled it -- this field test enables it, and again after every reset.
# * `enabling`, `disabling` and the radio states (enabled, searching, registered, connecting, connected,
#   disconnecting): someone else is turning it on or off (NetworkManager, a user's `mmcli -e` / `-d`) -- it
#   is left to that manager, also after a reset.
# * `failed` (unusable, e.g. no SIM), `unknown`, `initializing` (being probed) and `locked` (SIM PIN
#   wanted): nobody could have enabled it yet -- no decision; the next state decides (a SIM unlocked by
#   hand turns the modem `disabled`: then this field test enables it).
MANAGED_STATES = frozenset(RADIO_STATES | {"enabling", "disabling"})

Run = Callable[[Tuple[str, ...], float], Tuple[Optional[int], str]]   # argv, timeout -> (exit status, stdout)
RunAll = Callable[[List[Tuple[Tuple[str, ...], float]]], List[Tuple[Optional[int], str]]]
Event = Callable[[str, Dict[str, Any]], None]
Log = Callable[[str], None]
Outputs = Dict[str, Optional[str]]

MMCLI = ("env", "LC_ALL=C", "mmcli")


def _noop(*_a: Any) -> None:
    return None


class _Settings:
    """The family's `{device}` placeholder filled with where the modem is now."""

    def __init__(self, family: str, device: str, baud: int, interface: Optional[str]):
        self.family, self.device, self.baud, self.interface = family, device, baud, interface


class MmcliTracker:
    def __init__(self, family: Any, modem: Any, run: Run, *, event: Event = _noop, log: Log = _noop,
                 poll_timeout_s: float = 0.7, action_timeout_s: float = 20.0, run_all: Optional[RunAll] = None):
        self.family = family
        self.modem = modem
        self.selector = str(modem.device)
        self.run = run
        # The round's queries at once (each mmcli is a D-Bus round trip: together they take the time of one)
        self.run_all: RunAll = run_all or (lambda jobs: [run(a, t) for a, t in jobs])
        self.event = event
        self.log = log
        self.poll_timeout_s = poll_timeout_s
        self.action_timeout_s = action_timeout_s
        self.pinned: Optional[ModemIdentity] = None
        self.where: Optional[str] = None          # the D-Bus path the modem has now (None: not found)
        self.enabled_by_us = False
        # Enabled by someone else? None until a state says (MANAGED_STATES: True; `disabled`: False)
        self.met_enabled: Optional[bool] = None
        self.ready = False                        # setup (signal polling, location) done at `where`
        self.ready_at: Optional[str] = None       # ... at that path (kept while the object is the same)
        self.enable_refused_at: Optional[str] = None

    def _at(self, path: str) -> _Settings:
        return _Settings(self.family.name, path, getattr(self.modem, "baud", 115200), getattr(self.modem, "interface", None))

    def _locate(self) -> Optional[Tuple[ModemIdentity, str]]:
        status, text = self.run(MMCLI + ("-L", "-J"), self.poll_timeout_s)
        if status != 0:
            return None
        try:
            paths = mmcli_modem_paths(text)
        except ValueError:
            return None
        seen = []
        for path in paths:
            st, t = self.run(MMCLI + ("-m", path, "-J"), self.poll_timeout_s)
            ident = mmcli_identity(t) if st == 0 else None
            if ident is not None:
                seen.append((ident.at(path), t))
        pick = choose(self.selector, [i for i, _t in seen], self.pinned)
        return next(((i, t) for i, t in seen if i is pick), None)

    def _found(self, ident: ModemIdentity) -> None:
        if self.pinned is None:
            self.event("modem-found", {"path": ident.location, "detail": "reading modem %s at %s (device %r)"
                                       % (ident.describe(), ident.location, self.selector)})
        elif ident.location != self.pinned.location:
            self.event("modem-moved", {"from_path": self.pinned.location, "path": ident.location,
                                       "detail": "modem %s is now %s (was %s): re-enumerated"
                                       % (ident.describe(), ident.location, self.pinned.location)})
        # The same object at the same path (an answer missed, not a new enumeration) keeps its set-up.
        self.ready = self.ready_at == ident.location and self.pinned is not None and ident.location == self.pinned.location
        self.pinned = ident
        self.where = ident.location

    def _enable(self, ident: ModemIdentity) -> bool:
        """Enable a disabled modem if this field test may: when nobody had enabled it before (the first state
        that says who manages it was `disabled`, see MANAGED_STATES), and after a reset again only if it was
        this field test that enabled it. True when it is enabled now."""
        if self.met_enabled is None:
            self.met_enabled = False
        elif not self.enabled_by_us:
            if self.enable_refused_at != ident.location:
                self.enable_refused_at = ident.location
                self.event("modem-not-enabled", {"path": ident.location, "detail":
                                                 "modem %s is disabled; someone else enabled it (or turned it on "
                                                 "or off) before this field test met it, so it leaves it to its "
                                                 "manager" % ident.describe()})
            return False
        enable = self.family.setup_commands(self._at(ident.location)).get("enable")
        if enable is None:
            return False
        status, _ = self.run(tuple(enable), self.action_timeout_s)
        if status != 0:
            self.log("mmcli: enabling %s failed (exit %s); trying again next round" % (ident.location, status))
            return False
        again = self.enabled_by_us
        self.enabled_by_us = True
        self.event("modem-enabled", {"path": ident.location, "detail": "enabled modem %s at %s %s"
                                     % (ident.describe(), ident.location,
                                        "again after a reset" if again else "(ModemManager does not enable "
                                        "modems by itself)")})
        return True

    def _setup(self, path: str) -> None:
        ok = True
        for name, argv in self.family.setup_commands(self._at(path)).items():
            if name == "enable":
                continue
            status, _ = self.run(tuple(argv), self.action_timeout_s)
            ok = ok and status == 0
        self.ready = ok
        self.ready_at = path if ok else None

    def _poll(self, path: str) -> Dict[str, Tuple[Optional[int], str]]:
        cmds = self.family.poll_commands(self._at(path))
        got = self.run_all([(tuple(argv), self.poll_timeout_s) for argv in cmds.values()])
        return dict(zip(cmds, got))

    def round(self) -> Tuple[Outputs, List[str]]:
        out: Outputs = {c.name: None for c in self.family.poll}
        modem_text: Optional[str] = None
        ident: Optional[ModemIdentity] = None
        polled: Dict[str, Tuple[Optional[int], str]] = {}
        if self.where is not None:
            if self.ready:                           # the usual round: all queries at once
                polled = self._poll(self.where)
                status, text = polled.get("modem", (None, ""))
            else:
                status, text = self.run(MMCLI + ("-m", self.where, "-J"), self.poll_timeout_s)
            if status is None:
                # mmcli ran past its timeout (a busy host, a busy daemon): no answer is not "gone". The modem
                # stays where it was, set up as it was; what the other queries of the round got is kept
                # (ModemManager never gives a path to another object while it runs: it counts up).
                self.log("mmcli: no answer from %s within %g s" % (self.where, self.poll_timeout_s))
                for name, (st, text) in polled.items():
                    out[name] = text if st == 0 and text and name != "modem" else None
                return out, []
            ident = mmcli_identity(text) if status == 0 else None
            if ident is not None and self.pinned is not None and (not self.pinned.known() or same_modem(ident, self.pinned)):
                ident = ident.at(self.where)
                modem_text = text
            else:
                polled = {}
                self.log("mmcli: modem %s not at %s any more" % (self.pinned.describe() if self.pinned else "?",
                                                                 self.where))
                self.where, self.ready, ident = None, False, None
        if ident is None:
            found = self._locate()
            if found is None:
                return out, []
            ident, modem_text = found
            self._found(ident)
        assert ident is not None and ident.location is not None
        if ident.state == "disabled":
            self.ready, self.ready_at, polled = False, None, {}   # what was set up went with the enabled modem
            if not self._enable(ident):
                out["modem"] = modem_text            # the modem as it is (disabled: no radio values)
                return out, []
            status, text = self.run(MMCLI + ("-m", ident.location, "-J"), self.poll_timeout_s)
            modem_text = text if status == 0 else None
            ident = (mmcli_identity(text) or ident).at(ident.location) if status == 0 else ident
        elif self.met_enabled is None and ident.state in MANAGED_STATES:
            self.met_enabled = True                  # enabled (or being enabled / disabled) by someone else
        if not self.ready and ident.state in RADIO_STATES:
            self._setup(ident.location)
            polled = {}
        if not polled:
            polled = self._poll(ident.location)
            polled["modem"] = (0, modem_text or "")
        for name, (status, text) in polled.items():
            out[name] = text if status == 0 and text else None
        out["modem"] = modem_text
        return out, []


class _Recheck:
    """When to read the modem's IMEI again before a round's values are used: after any error or gap (a
    reset, a re-enumeration, a modem swapped at the same path all look like one) and every `every` rounds.
    A round whose identity is due and does not match (or cannot be read) is a gap: its values are not used."""

    def __init__(self, every: int):
        self.every = max(1, int(every))
        self.since = 0
        self.suspect = False
        self.foreign: Optional[str] = None    # the other IMEI found at our path (said once)

    def due(self) -> bool:
        return self.suspect or self.since >= self.every

    def ok(self) -> None:
        self.since, self.suspect, self.foreign = 0, False, None


def _stem_candidates(path: str, present: Callable[[str], List[str]]) -> List[str]:
    d, _, name = path.rpartition("/")
    stem = name.rstrip("0123456789")
    return [c for c in candidates_like(path, present(f"{d}/{stem}*")) if c != path]


class QmiTracker:
    """qmicli by device path, following the modem's IMEI when the path disappears, and checking the IMEI at
    the path (`--dms-get-ids`) after any error or gap and every `check_every` rounds: another modem at the
    same path (a swap, a second modem enumerated first) is never polled as this one."""

    def __init__(self, family: Any, modem: Any, run: Run, *, event: Event = _noop, log: Log = _noop,
                 poll_timeout_s: float = 0.7, present: Callable[[str], List[str]] = lambda pattern: glob.glob(pattern),
                 exists: Callable[[str], bool] = os.path.exists, check_every: int = 10):
        self.family, self.modem, self.run = family, modem, run
        self.event, self.log = event, log
        self.poll_timeout_s = poll_timeout_s
        self.present, self.exists = present, exists
        self.where = str(modem.device)
        self.imei: Optional[str] = None
        self.check = _Recheck(check_every)

    def _ids(self, path: str) -> Optional[str]:
        status, text = self.run(("qmicli", "-d", path, "-p", "--dms-get-ids"), self.poll_timeout_s)
        return qmicli_equipment_id(text) if status == 0 else None

    def _look_elsewhere(self) -> bool:
        """Our IMEI at another path of the same name stem: moved there (True)."""
        for cand in _stem_candidates(self.where, self.present):
            if self._ids(cand) == self.imei:
                self.event("modem-moved", {"from_path": self.where, "path": cand, "detail":
                                           "modem IMEI %s is now %s (was %s)" % (self.imei, cand, self.where)})
                self.where = cand
                self.check.ok()
                return True
        return False

    def round(self) -> Tuple[Outputs, List[str]]:
        out: Outputs = {c.name: None for c in self.family.poll}
        if not self.exists(self.where) and self.imei is not None:
            if not self._look_elsewhere():
                self.check.suspect = True
                return out, []
        for name, argv in self.family.poll_commands(_Settings("qmicli", self.where, 0, None)).items():
            status, text = self.run(tuple(argv), self.poll_timeout_s)
            out[name] = text if status == 0 else None
        got = any(out.values())
        self.check.since += 1
        if self.imei is None:
            if got:
                self.imei = self._ids(self.where)
                if self.imei:
                    self.check.ok()
                    self.event("modem-found", {"path": self.where, "detail": "reading modem IMEI %s at %s"
                                               % (self.imei, self.where)})
            return out, []
        if got and self.check.due():
            ids = self._ids(self.where)
            if ids != self.imei:
                if ids is None:
                    self.log("qmicli: could not read the IMEI at %s; this round's values not used" % self.where)
                    self.check.suspect = True
                else:
                    self._changed(ids)
                return {name: None for name in out}, []
            self.check.ok()
        if not all(v is not None for v in out.values()):
            self.check.suspect = True            # an error or a gap: who answers next is checked first
        return out, []

    def _changed(self, ids: str) -> None:
        if self.check.foreign != ids:
            self.event("modem-changed", {"path": self.where, "detail":
                                         "another modem (IMEI %s) answers at %s, not IMEI %s: not polled as it"
                                         % (ids, self.where, self.imei)})
        self.check.foreign, self.check.suspect = ids, True
        self._look_elsewhere()


class SerialTracker:
    """An AtPoller whose port is looked for again (by the IMEI of AT+CGSN) when its device path vanished, and
    whose IMEI is read again (AT+CGSN on the same port, after the round's queries) after any error, gap or
    reopened port and every `check_every` rounds: another modem at the same port is never polled as this one."""

    def __init__(self, poller: Any, *, event: Event = _noop, log: Log = _noop,
                 identify: Optional[Callable[[str], Optional[str]]] = None,
                 present: Callable[[str], List[str]] = lambda pattern: glob.glob(pattern),
                 exists: Callable[[str], bool] = os.path.exists, check_every: int = 10):
        self.poller = poller
        self.event, self.log = event, log
        self.identify = identify or self._identify
        self.present, self.exists = present, exists
        self.imei: Optional[str] = None
        self.check = _Recheck(check_every)

    def _identify(self, path: str) -> Optional[str]:
        from nodes.modem.serial_poll import AtPort
        try:
            with AtPort(path, self.poller.baud, timeout_s=0.5) as port:
                return at_equipment_id(port.command("AT+CGSN").text)
        except (OSError, TimeoutError, ValueError):
            return None

    def _port_imei(self) -> Optional[str]:
        p = self.poller
        if p.port is None:
            return None
        try:
            return at_equipment_id(p.port.command("AT+CGSN").text)
        except (OSError, TimeoutError):
            return None

    def _look_elsewhere(self) -> bool:
        p = self.poller
        for cand in _stem_candidates(p.path, self.present):
            if self.identify(cand) == self.imei:
                self.event("modem-moved", {"from_path": p.path, "path": cand, "detail":
                                           "AT port of modem IMEI %s is now %s (was %s)" % (self.imei, cand, p.path)})
                p.close()
                p.path = cand
                self.check.suspect = True        # checked again on the port the poller opens there
                return True
        return False

    def round(self) -> Tuple[Outputs, List[str]]:
        p = self.poller
        if p.port is None and not self.exists(p.path) and self.imei is not None:
            self._look_elsewhere()
        reopened = p.port is None
        out = p.poll_once()
        urcs = list(p.last_urcs)
        got = any(v is not None for v in out.values())
        self.check.since += 1
        if reopened:
            self.check.suspect = True
        if self.imei is None:
            if got and p.port is not None:
                self.imei = self._port_imei()
                if self.imei:
                    self.check.ok()
                    self.event("modem-found", {"path": p.path, "detail": "reading modem IMEI %s at %s"
                                               % (self.imei, p.path)})
            return out, urcs
        if got and self.check.due():
            ids = self._port_imei()
            if ids != self.imei:
                if ids is None:
                    self.log("AT: could not read the IMEI at %s; this round's values not used" % p.path)
                    self.check.suspect = True
                else:
                    if self.check.foreign != ids:
                        self.event("modem-changed", {"path": p.path, "detail":
                                                     "another modem (IMEI %s) answers at %s, not IMEI %s: not "
                                                     "polled as it" % (ids, p.path, self.imei)})
                    self.check.foreign, self.check.suspect = ids, True
                    self._look_elsewhere()
                return {name: None for name in out}, []
            self.check.ok()
        if not all(v is not None for v in out.values()):
            self.check.suspect = True
        return out, urcs
