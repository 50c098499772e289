"""Parse net-snmp `snmpwalk` / `snmpget` / `snmpbulkwalk` text output.

Handles both renderings the same agent value can have (tests/fixtures/recorded/05_snmp_ifmib.md):
numeric OIDs (`iso.3.6.1...`, `-On` `.1.3.6.1...`) as printed on Debian without MIB files,
and symbolic ones (`IF-MIB::ifHCInOctets.2`) as printed where MIBs are loaded; `-Oq`
(`OID value`), `-Ov`/`-Oqv` (value only) and `-Ot` (raw TimeTicks) forms.

Rules that matter for counters (never turn "no data" into 0):
- the exceptions `No Such Object...`, `No Such Instance...` and `No more variables left in
  this MIB View...` exit 0 but carry no value: they become `exception`, `value` None;
- an empty walk (SNMPv1 asked for a Counter64 column) is an empty list, never a zero;
- error text (`Timeout: No Response from ...`, v1 `Error in packet`, MIB loading errors)
  goes to `errors`, lines nobody recognises go to `unparsed` (reported, not dropped).

Transcripts (as in the fixtures) are understood too: `$ command` starts a new run, `rc=N`
is that run's exit status, `# ...` lines are comments.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from controller.errors import ParseError
from controller.parsers import numbers

# Module-qualified names net-snmp prints for well-known nodes without the MIB text loaded
# (SNMPv2-SMI is built in). Only these are turned into numeric OIDs; anything else keeps
# `oid: None` because resolving it would need the MIB file.
_SMI_ROOTS: dict[str, str] = {
    "iso": "1",
    "org": "1.3",
    "dod": "1.3.6",
    "internet": "1.3.6.1",
    "directory": "1.3.6.1.1",
    "mgmt": "1.3.6.1.2",
    "mib-2": "1.3.6.1.2.1",
    "transmission": "1.3.6.1.2.1.10",
    "experimental": "1.3.6.1.3",
    "private": "1.3.6.1.4",
    "enterprises": "1.3.6.1.4.1",
    "security": "1.3.6.1.5",
    "snmpV2": "1.3.6.1.6",
    "snmpDomains": "1.3.6.1.6.1",
    "snmpProxys": "1.3.6.1.6.2",
    "snmpModules": "1.3.6.1.6.3",
    "zeroDotZero": "0.0",
}

EXCEPTIONS: dict[str, str] = {
    "No Such Object available on this agent at this OID": "noSuchObject",
    "No Such Instance currently exists at this OID": "noSuchInstance",
    "No more variables left in this MIB View (It is past the end of the MIB tree)": "endOfMibView",
}

_INT_TYPES = {"Counter32", "Counter64", "Gauge32", "Unsigned32", "INTEGER", "Integer32", "UInteger32"}
# `<oid> = <rest>`; an OID is numeric (`iso.3...`, `.1.3...`, `1.3...`) or `MODULE::name[.index]`.
_OID_TEXT = r"(?:\.?(?:iso|\d+)(?:\.\d+)*|[A-Za-z][\w-]*::[\w-]+(?:\.[^\s=]+)?|[A-Za-z][\w-]*(?:\.\d+)+)"
_VERSION = re.compile(r"NET-SNMP version:? \S+")     # `snmpwalk --version`
_LINE_EQ = re.compile(r"^(?P<oid>" + _OID_TEXT + r") = ?(?P<rest>.*)$")
_LINE_Q = re.compile(r"^(?P<oid>" + _OID_TEXT + r") (?P<rest>.*)$")
_TYPED = re.compile(r"^(?P<type>[A-Za-z][\w-]*(?: Address)?):(?: (?P<value>.*))?$")
_WRONG_TYPE = re.compile(r"^Wrong Type \(should be (?P<expected>[^)]+)\): (?P<rest>.*)$")
_TIMETICKS = re.compile(r"^\((?P<ticks>\d+)\)\s*(?P<text>.*)$")
_ENUM = re.compile(r"^(?P<label>[A-Za-z][\w-]*)\((?P<num>-?\d+)\)$")
_NUM_UNITS = re.compile(r"^(?P<num>-?\d+)(?:\s+(?P<units>\S.*))?$")
_HEX_BYTES = re.compile(r"^(?:[0-9A-Fa-f]{2} ?)+$")
_TIMEOUT = re.compile(r"^Timeout: No Response from (?P<agent>.+?)\.?$")
_CANNOT_FIND = re.compile(r"^Cannot find module \((?P<module>[^)]+)\): (?P<message>.*)$")
_UNKNOWN_OID = re.compile(r"^(?P<name>\S+): Unknown Object Identifier(?: \((?P<message>.*)\))?$")
_REASON = re.compile(r"^Reason: \((?P<reason>\w+)\) (?P<message>.*)$")
_FAILED = re.compile(r"^Failed object: (?P<oid>.+)$")
_RC = re.compile(r"^rc=(?P<rc>-?\d+)$")
# A string value with embedded newlines continues for at most this many lines.
_MAX_CONTINUATION = 64


@dataclass
class VarBind:
    """One `OID = TYPE: value` line.

    oid: numeric, without leading dot, when it can be known without MIB files; else None.
    printed: the OID exactly as printed (None for value-only `-Ov` output).
    type: the SNMP type as printed (None when the output had no type: `-Oq`, `-Ot`,
      an empty string printed as `""`, or an exception).
    value: int for integer-like types and TimeTicks (centiseconds), str for strings
      (quotes removed), contiguous lower-case hex for Hex-STRING, numeric OID string
      for OID values when resolvable; None for exceptions.
    """

    oid: str | None
    printed: str | None
    type: str | None
    value: Any
    text: str | None = None          # rendered remainder (Timeticks "0:02:03.45", Hex-STRING bytes, OID)
    enum: str | None = None          # `up` of `INTEGER: up(1)` (MIB loaded)
    units: str | None = None         # `seconds` of `INTEGER: 5 seconds`
    exception: str | None = None     # noSuchObject | noSuchInstance | endOfMibView
    module: str | None = None        # `IF-MIB` of `IF-MIB::ifHCInOctets.2`
    name: str | None = None          # `ifHCInOctets`
    index: str | None = None         # `2`
    expected_type: str | None = None  # from `Wrong Type (should be X): ...`

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None or k in ("oid", "type", "value")}


@dataclass
class Run:
    command: str | None = None
    exit_status: int | None = None
    varbinds: list[VarBind] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unparsed: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "exit_status": self.exit_status,
            "varbinds": [v.to_json() for v in self.varbinds],
            "errors": self.errors,
            "notes": self.notes,
            "unparsed": self.unparsed,
        }


def numeric_oid(printed: str) -> str | None:
    """`iso.3.6.1.2.1.1.3.0` / `.1.3.6...` / `SNMPv2-SMI::enterprises.534.6` -> `1.3.6...`."""
    text = printed.strip()
    if text.startswith("."):
        text = text[1:]
    if re.fullmatch(r"\d+(\.\d+)*", text):
        return text
    if text.startswith("iso") and re.fullmatch(r"iso(\.\d+)*", text):
        return "1" + text[3:]
    m = re.fullmatch(r"SNMPv2-SMI::([\w-]+)((?:\.\d+)*)", text)
    if m and m.group(1) in _SMI_ROOTS:
        return _SMI_ROOTS[m.group(1)] + m.group(2)
    return None


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        body = text[1:-1]
        return re.sub(r'\\(["\\])', r"\1", body)
    return text


def _closes(body: str) -> bool:
    """`body` ends with an unescaped quote: a `"` after an even number of backslashes (counted, not
    searched for: a search for the pattern started again at every backslash of a run)."""
    if not body.endswith('"'):
        return False
    before = body[:-1]
    return (len(before) - len(before.rstrip("\\"))) % 2 == 0


def _open_quote(text: str) -> bool:
    """A quoted string value that continues on the next line (embedded newline)."""
    return text.startswith('"') and not _closes(text[1:])


def _value_from_untyped(rest: str) -> tuple[Any, str | None]:
    """Values printed without a type (`-Oq`, `-Ot`, empty `""`)."""
    if rest.startswith('"'):
        return _unquote(rest), None
    m = _NUM_UNITS.match(rest)
    if m:
        return numbers.integer(m.group("num"), "snmpwalk: value"), m.group("units")
    return rest, None


def _parse_value(vb: VarBind, rest: str, *, untyped_ok: bool) -> None:
    rest = rest.rstrip()
    wrong = _WRONG_TYPE.match(rest)
    if wrong:
        vb.expected_type = wrong.group("expected")
        rest = wrong.group("rest")
    if rest in EXCEPTIONS:
        vb.exception = EXCEPTIONS[rest]
        vb.value = None
        return
    if rest == '""':
        vb.value = ""
        return
    m = _TYPED.match(rest)
    if m and m.group("type") in _KNOWN_TYPES:
        typ = m.group("type")
        raw = (m.group("value") or "").strip()
        vb.type = typ
        if typ in _INT_TYPES:
            em = _ENUM.match(raw)
            if em:
                vb.value, vb.enum = numbers.integer(em.group("num"), f"{vb.printed or 'value'}"), em.group("label")
                return
            nm = _NUM_UNITS.match(raw)
            if not nm:
                raise ParseError(f"{vb.printed or 'value'}: {typ} value {raw!r} is not a number")
            vb.value = numbers.integer(nm.group("num"), f"{vb.printed or 'value'}")
            vb.units = nm.group("units")
            return
        if typ == "Timeticks":
            tm = _TIMETICKS.match(raw)
            if not tm:
                raise ParseError(f"{vb.printed or 'value'}: Timeticks value {raw!r} lacks the (ticks) number")
            vb.value, vb.text = numbers.integer(tm.group("ticks"), f"{vb.printed or 'value'}"), tm.group("text") or None
            return
        if typ == "STRING":
            vb.value = _unquote(raw)
            return
        if typ == "Hex-STRING":
            vb.text = raw
            vb.value = raw.replace(" ", "").lower()
            return
        if typ == "OID":
            vb.text = raw
            vb.value = numeric_oid(raw) or raw
            return
        vb.value = raw
        return
    if not untyped_ok:
        raise ParseError(f"cannot read value {rest!r}")
    vb.value, vb.units = _value_from_untyped(rest)


_KNOWN_TYPES = {"STRING", "Hex-STRING", "INTEGER", "Integer32", "Gauge32", "Counter32", "Counter64",
                "Timeticks", "OID", "IpAddress", "BITS", "Opaque", "Network Address", "UInteger32",
                "Unsigned32", "NULL", "Float", "Double"}


def _name_parts(vb: VarBind) -> None:
    if vb.printed and "::" in vb.printed:
        module, _, rest = vb.printed.partition("::")
        name, _, index = rest.partition(".")
        vb.module, vb.name, vb.index = module, name, index or None


_QUALIFIED = re.compile(r"[A-Z][\w-]*::[a-z]")


def _looks_like_oid(printed: str) -> bool:
    """A numeric OID of at least two arcs (X.690: every OID has two), `iso.3...`, `.1.3...`, or a
    MIB-qualified name (`IF-MIB::ifName.2`: an ASN.1 module reference starts with a capital, an object
    name with a small letter): not any word before an `=`, nor a number opening a line of prose."""
    n = numeric_oid(printed)
    if n is not None:
        return "." in n
    return printed.startswith((".", "iso")) or bool(_QUALIFIED.match(printed))


def _typed_value(rest: str) -> bool:
    """`STRING: eth0`, `Counter64: 5`...: a value with a known SNMP type (short `-Os` names
    such as `ifName.2 = STRING: eth0` carry no module, but their value says what they are)."""
    tm = _TYPED.match(rest.strip())
    return bool(tm and tm.group("type") in _KNOWN_TYPES) or rest.strip() in EXCEPTIONS


def _varbind_line(line: str) -> VarBind | None:
    m = _LINE_EQ.match(line)
    if m and (_looks_like_oid(m.group("oid")) or _typed_value(m.group("rest"))):
        vb = VarBind(oid=numeric_oid(m.group("oid")), printed=m.group("oid"), type=None, value=None)
        _name_parts(vb)
        _parse_value(vb, m.group("rest"), untyped_ok=True)
        return vb
    m = _LINE_Q.match(line)
    if m and _looks_like_oid(m.group("oid")):
        vb = VarBind(oid=numeric_oid(m.group("oid")), printed=m.group("oid"), type=None, value=None)
        _name_parts(vb)
        _parse_value(vb, m.group("rest"), untyped_ok=True)
        return vb
    # value-only forms (-Ov keeps the type, -Oqv prints the bare value)
    tm = _TYPED.match(line)
    if tm and tm.group("type") in _KNOWN_TYPES:
        vb = VarBind(oid=None, printed=None, type=None, value=None)
        _parse_value(vb, line, untyped_ok=False)
        return vb
    if line.startswith('"') and not _open_quote(line):
        # bare `-Oqv` string; only a complete quoted string counts (prose may start with a quote)
        return VarBind(oid=None, printed=None, type=None, value=_unquote(line))
    if line in EXCEPTIONS:
        return VarBind(oid=None, printed=None, type=None, value=None, exception=EXCEPTIONS[line])
    return None


def _next_closing(lines: list[str]) -> list[int]:
    """For each line index j, the first index >= j of a line that closes an open quoted string (one that
    ends with an unescaped quote), or len(lines): one backward pass, so that finding where a multi-line
    string ends costs no rescan of the lines after it."""
    nxt = [len(lines)] * (len(lines) + 1)
    for j in range(len(lines) - 1, -1, -1):
        nxt[j] = j if _closes(lines[j]) else nxt[j + 1]
    return nxt


def parse(text: str) -> list[Run]:
    runs: list[Run] = [Run()]
    pending_error: dict[str, Any] | None = None
    lines = text.splitlines()
    closing: list[int] | None = None
    i = 0
    while i < len(lines):
        raw = lines[i]
        i += 1
        line = raw.rstrip()
        run = runs[-1]
        if not line.strip():
            continue
        if line.startswith("$ "):
            if run.command is None and not (run.varbinds or run.errors or run.notes or run.unparsed):
                run.command = line[2:].strip()
            else:
                runs.append(Run(command=line[2:].strip()))
            pending_error = None
            continue
        if line.startswith("#"):
            continue
        m = _RC.match(line)
        if m:
            run.exit_status = int(m.group("rc"))
            continue
        m = _TIMEOUT.match(line)
        if m:
            run.errors.append({"kind": "timeout", "agent": m.group("agent"), "message": line})
            continue
        if line == "Error in packet":
            pending_error = {"kind": "error_in_packet", "reason": None, "message": None, "failed_object": None}
            run.errors.append(pending_error)
            continue
        m = _REASON.match(line)
        if m and pending_error is not None:
            pending_error["reason"] = m.group("reason")
            pending_error["message"] = m.group("message")
            continue
        m = _FAILED.match(line)
        if m and pending_error is not None:
            printed = m.group("oid").strip()
            pending_error["failed_object"] = numeric_oid(printed) or printed
            continue
        m = _CANNOT_FIND.match(line)
        if m:
            run.errors.append({"kind": "mib_module_missing", "module": m.group("module"), "message": line})
            continue
        m = _UNKNOWN_OID.match(line)
        if m:
            run.errors.append({"kind": "unknown_oid", "name": m.group("name"), "message": line})
            continue
        if line.startswith(("Created directory: ", "MIB search path: ")) or _VERSION.fullmatch(line):
            run.notes.append(line)
            continue
        vb = _varbind_line(line)
        if vb is not None:
            # Values spanning lines: a quoted string with an embedded newline, or a long
            # Hex-STRING that net-snmp wraps at 16 bytes per line.
            if isinstance(vb.value, str) and vb.type in ("STRING", None) and _open_quote(vb.value):
                if closing is None:
                    closing = _next_closing(lines)
                end = closing[i]                   # the line that closes the string, if any
                if end < len(lines) and end - i < _MAX_CONTINUATION:
                    vb.value = _unquote("\n".join([vb.value, *lines[i:end + 1]]))
                    i = end + 1
                # else: no closing quote nearby -- keep the first line's text as printed
            if vb.type == "Hex-STRING":
                texts, hexes = [vb.text or ""], [vb.value]
                while i < len(lines) and _HEX_BYTES.match(lines[i].strip()) and lines[i].strip():
                    more = lines[i].strip()
                    texts.append(more)
                    hexes.append(more.replace(" ", "").lower())
                    i += 1
                if len(texts) > 1:                 # joined once (a += per line copied the value each time)
                    vb.text = " ".join(t for t in texts if t).strip()
                    vb.value = "".join(hexes)
            run.varbinds.append(vb)
            continue
        run.unparsed.append(line)
    return runs


def to_json(text: str) -> dict[str, Any]:
    """`ctl parse snmpwalk FILE`: {"runs": [{command, exit_status, varbinds, errors, notes, unparsed}]}.

    Plain tool output is one run with `command: None`; a transcript with `$ cmd` lines
    gives one run per command. Each varbind: {oid, printed, type, value, ...} (see VarBind).
    """
    runs = parse(text)
    # A run counts when the tool said something recognisable; a `$ command` alone counts only with its exit
    # status and no unrecognised line under it (an empty walk), so that a `$ ` opening garbage is not output.
    if not any(r.varbinds or r.errors or r.notes or (r.command and r.exit_status is not None and not r.unparsed)
               for r in runs):
        shown = next((r.unparsed[0] for r in runs if r.unparsed), "")
        raise ParseError("snmpwalk: nothing recognisable (no `OID = TYPE: value` line)"
                         + (f"; first line: {shown[:60]!r}" if shown else ""))
    # Bare values (-Oqv: `"text"`, `5`) and untyped `OID value` lines (-Oq) are loose shapes a line of prose
    # takes by chance. When nothing firmer was seen (a typed `OID = TYPE: value`, an error, a note) and such
    # lines are outnumbered by lines no rule knows, the input is refused, saying how many, not printed as parsed.
    unparsed = sum(len(r.unparsed) for r in runs)
    firm = sum(len(r.errors) + len(r.notes) + sum(1 for v in r.varbinds if v.type is not None or v.exception)
               for r in runs)
    loose = sum(len(r.varbinds) for r in runs) - sum(1 for r in runs for v in r.varbinds
                                                      if v.type is not None or v.exception)
    if not firm and unparsed > loose:
        first = next(r.unparsed[0] for r in runs if r.unparsed)
        raise ParseError(f"snmpwalk: {unparsed} lines not recognised against {loose} untyped values: not snmpwalk "
                         f"output (first unrecognised line: {first[:60]!r})")
    return {"runs": [r.to_json() for r in runs], "unparsed_lines": sum(len(r.unparsed) for r in runs)}


def varbinds(text: str) -> list[VarBind]:
    """All varbinds of all runs, in order (for programmatic use)."""
    return [vb for run in parse(text) for vb in run.varbinds]
