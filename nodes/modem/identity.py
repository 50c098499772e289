"""Which modem is which: a modem's identity as each tool prints it, and the choice of the modem a field test
reads among those present (pure; stdlib only, ships in the field logger).

An index (ModemManager's Modem/0) or a device path (/dev/cdc-wdm0, /dev/ttyUSB2) only says where a modem is
now. A reset or a USB re-enumeration moves it: ModemManager drops Modem/0 and creates the same modem as
Modem/1 (tests/fixtures/generated/modemmanager: `list_after_reset.json`), the kernel may give the ports new
numbers. What stays is the modem's identity: its equipment id (IMEI, or MEID), ModemManager's device
identifier (a hash of the hardware's properties) and the physical device (the USB device's sysfs path). The
field logger pins the identity of the modem it found first and from then on finds that modem again by it.

Outputs read here:
* `mmcli -L -J`: {"modem-list": [paths]}; `mmcli -L`: "    /org/freedesktop/ModemManager1/Modem/1 [Quectel]
  RM530N-GL" per modem, or "No modems were found";
* `mmcli -m X -J`: generic.equipment-identifier, generic.device-identifier, generic.device, generic.state,
  dbus-path (nodes.modem.mmcli.modem_fields);
* `qmicli -d DEV -p --dms-get-ids`: "\\tIMEI: '867034040025018'" (libqmi's qmicli-dms.c prints ESN, IMEI,
  MEID, each quoted, "unknown" when absent);
* `AT+CGSN` / `AT+GSN`: the IMEI alone on one line (3GPP TS 27.007 +CGSN without <snt>; V.250 +GSN).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Iterable, Sequence

from nodes.modem import mmcli
from nodes.modem.radio import ParseError

MM_MODEM_PREFIX = "/org/freedesktop/ModemManager1/Modem/"
_PATH_RE = re.compile(r"(/org/freedesktop/ModemManager1/Modem/\d+)")
_QMI_ID_RE = re.compile(r"^\s*(ESN|IMEI|MEID)\s*:\s*'([^']*)'\s*$")
_UNKNOWN = ("", "unknown", "0", "--")


@dataclass(frozen=True)
class ModemIdentity:
    location: str | None            # where it is now: a D-Bus path or a device path
    equipment_id: str | None = None  # IMEI / MEID
    device_id: str | None = None    # ModemManager's device identifier
    device: str | None = None       # the physical device (sysfs path, or a kernel event's uid)
    state: str | None = None        # ModemManager's modem state

    def known(self) -> bool:
        return any((self.equipment_id, self.device_id, self.device))

    def at(self, location: str | None) -> "ModemIdentity":
        return replace(self, location=location)

    def describe(self) -> str:
        parts = [f"equipment id {self.equipment_id}" if self.equipment_id else "",
                 f"device id {self.device_id}" if self.device_id and not self.equipment_id else "",
                 f"device {self.device}" if self.device and not (self.equipment_id or self.device_id) else ""]
        return ", ".join(p for p in parts if p) or "no identity"


def same_modem(a: ModemIdentity, b: ModemIdentity) -> bool:
    """The same hardware: by the strongest identity both carry (equipment id, then device id, then device)."""
    for key in ("equipment_id", "device_id", "device"):
        x, y = getattr(a, key), getattr(b, key)
        if x and y:
            return x == y
    return False


# ---- selectors (the inventory's `device` of an mmcli modem) ---------------------------------------------

def selector_kind(selector: str) -> tuple[str, str]:
    """How an mmcli `device` names its modem: ("any", ""), ("path", D-Bus path), ("index", "0"),
    ("equipment", IMEI/MEID: 14 or more digits, or 14 hex digits), ("device-id", 40 hex digits) or
    ("device", anything else: the physical device as ModemManager prints it)."""
    s = selector.strip()
    if s in ("", "any"):
        return "any", ""
    if s.startswith(MM_MODEM_PREFIX):
        return "path", s
    if s.isdigit() and len(s) < 14:
        return "index", s
    if s.isdigit() or re.fullmatch(r"[0-9A-Fa-f]{14}", s):
        return "equipment", s.upper()
    if re.fullmatch(r"[0-9a-f]{40}", s):
        return "device-id", s
    return "device", s


def matches_selector(selector: str, ident: ModemIdentity) -> bool:
    kind, value = selector_kind(selector)
    if kind == "any":
        return True
    if kind == "path":
        return ident.location == value
    if kind == "index":
        return ident.location == MM_MODEM_PREFIX + value
    if kind == "equipment":
        return (ident.equipment_id or "").upper() == value
    if kind == "device-id":
        return ident.device_id == value
    return ident.device == value


def choose(selector: str, candidates: Sequence[ModemIdentity], pinned: ModemIdentity | None) -> ModemIdentity | None:
    """The modem to read: once one was found (`pinned`), that same modem wherever it is now; before, the first
    that matches the selector. None when it is not among the candidates (yet)."""
    if pinned is not None and pinned.known():
        return next((c for c in candidates if same_modem(c, pinned)), None)
    return next((c for c in candidates if matches_selector(selector, c)), None)


# ---- tool outputs ---------------------------------------------------------------------------------------

def mmcli_modem_paths(text: str) -> list[str]:
    """Modem paths from `mmcli -L -J` or `mmcli -L` ([] for "No modems were found")."""
    t = text.strip()
    if t.startswith("{"):
        try:
            doc = json.loads(t)
        except ValueError:
            raise ParseError("mmcli -L -J: invalid JSON") from None
        paths = doc.get("modem-list") if isinstance(doc, dict) else None
        if not isinstance(paths, list):
            raise ParseError("mmcli -L -J: no modem-list")
        # a modem's path and nothing else: it becomes an argument of the next mmcli
        return [p for p in paths if isinstance(p, str) and _PATH_RE.fullmatch(p)]
    return [m.group(1) for m in (_PATH_RE.search(line) for line in t.splitlines()) if m]


def mmcli_identity(text: str) -> ModemIdentity | None:
    """The identity in `mmcli -m X -J` (or the human layout); None when the output is no modem."""
    for out in mmcli.parse_outputs(text):
        if out["type"] == "modem":
            f = out["fields"]
            return ModemIdentity(f.get("dbus_path"), f.get("equipment_identifier"), f.get("device_identifier"),
                                 f.get("device"), f.get("state"))
    return None


def qmicli_equipment_id(text: str) -> str | None:
    """The IMEI (else the MEID) in `qmicli --dms-get-ids` output."""
    ids: dict[str, str] = {}
    for line in text.splitlines():
        m = _QMI_ID_RE.match(line)
        if m and m.group(2).strip().lower() not in _UNKNOWN:
            ids[m.group(1)] = m.group(2).strip()
    return ids.get("IMEI") or ids.get("MEID")


def at_equipment_id(reply: str) -> str | None:
    """The IMEI in an AT+CGSN / AT+GSN reply (its information line; '+CGSN: ' prefixed on some firmware)."""
    for line in reply.splitlines():
        t = line.strip().strip('"')
        if t.upper().startswith(("+CGSN:", "+GSN:")):
            t = t.split(":", 1)[1].strip().strip('"')
        if re.fullmatch(r"\d{14,17}", t):
            return t
    return None


def candidates_like(path: str, present: Iterable[str]) -> list[str]:
    """Device paths a moved port may now have: the same directory and name stem ('/dev/ttyUSB2' ->
    /dev/ttyUSB*, '/dev/cdc-wdm0' -> /dev/cdc-wdm*), the configured one first, then in numeric order."""
    d, _, name = path.rpartition("/")
    stem = name.rstrip("0123456789")
    if not stem or stem == name:
        return [path] if path in present else []

    def number(p: str) -> int:
        tail = p.rpartition("/")[2][len(stem):]
        return int(tail) if re.fullmatch(r"[0-9]{1,9}", tail) else 1 << 30
    same = [p for p in present if p.rpartition("/")[0] == d and p.rpartition("/")[2].startswith(stem)
            and re.fullmatch(r"[0-9]{1,9}", p.rpartition("/")[2][len(stem):])]
    return sorted(same, key=lambda p: (p != path, number(p)))
