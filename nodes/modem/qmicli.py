"""libqmi `qmicli` NAS output: --nas-get-signal-info, --nas-get-serving-system, --nas-get-cell-location-info,
--nas-get-signal-strength (and --wds-get-current-settings, raw only).

`to_json(text)` splits a transcript at the "[/dev/cdc-wdm0] Successfully got ..." headers (or shell
prompts), recognises each command by its header -- or, when the header was not pasted, by its structure --
and normalizes it through the table `COMMANDS`. Lines that are not the tool's output (shell prompts, GLib
warnings, libqmi's verbose log, a serial console's echo, stray text ahead of a headerless body) are set
aside by shape (`NOISE`) and listed in the result's "skipped" with their line numbers; only input with
nothing recognisable left is an error (naming its first line).

Format facts that shape the parser (02b): qmicli indents with TABs, which pasted copies turned into 2 or 8
spaces, so nesting is tracked by *relative* indentation; values are single-quoted, but the unit sits inside
the quotes in signal info ("'-5 dB'") and outside in cell location info ("'-11.6' dB"); 5G values can be
'n/a' (raw -32768); HDR SINR is printed as "SINR (8): '9.0 dB'" and is NOT an LTE value; MNC is printed
with %u ("MNC: '1'" for "01"). Stdlib only.
"""
from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

from nodes.modem.radio import (
    ParseError, RadioSample, cell_identity, integer, lte_band, merge_samples, number, split_plmn,
)

MISSING = ("n/a", "N/A", "", "unavailable", "unknown")
# Nesting deeper than this is not qmicli's (it nests 4 levels): refused, so that the tree (and the
# recursion that renders it) stays shallow whatever the input.
MAX_DEPTH = 32
KV_QUOTED_RE = re.compile(r"^(?P<key>.+?):\s+'(?P<val>[^']*)'(?P<extra>.*)$")
KV_PLAIN_RE = re.compile(r"^(?P<key>[^:]+?):\s+(?P<val>.+)$")


@dataclass
class Node:
    key: str
    value: str | None = None
    extra: str | None = None
    children: list["Node"] = field(default_factory=list)

    def child(self, key: str) -> "Node | None":
        # The first child of each key, indexed once per list length (the recognisers ask the same wide
        # node again and again; a scan per question would be quadratic).
        cached = self.__dict__.get("_first")
        if cached is None or cached[0] != len(self.children):
            first: dict[str, Node] = {}
            for c in self.children:
                first.setdefault(c.key, c)
            cached = self.__dict__["_first"] = (len(self.children), first)
        return cached[1].get(key)

    def get(self, *path: str) -> str | None:
        node: Node | None = self
        for p in path:
            node = node.child(p) if node else None
        return node.value if node else None

    def to_json(self) -> Any:
        if not self.children:
            if self.extra:
                return {"value": self.value, "extra": self.extra}
            return self.value
        out: dict[str, Any] = {}
        if self.value is not None:
            out["value"] = self.value
        if self.extra:
            out["extra"] = self.extra
        nxt: dict[str, int] = {}          # a repeated key's next number: "#2", "#3", ... (one dict probe each)
        for c in self.children:
            k = c.key
            if k in out:
                n = nxt.get(c.key, 2)
                while f"{c.key} #{n}" in out:
                    n += 1
                k, nxt[c.key] = f"{c.key} #{n}", n + 1
            out[k] = c.to_json()
        return out


def _parse_line(s: str) -> Node:
    m = KV_QUOTED_RE.match(s)
    if m:
        return Node(m.group("key").strip(), m.group("val"), m.group("extra").strip() or None)
    if s.endswith(":"):
        return Node(s[:-1].strip())
    m = KV_PLAIN_RE.match(s)
    if m:
        # e.g. the source's "SINR (%u): N/A'" (stray quote) or wds "IP Family: IPv4"
        return Node(m.group("key").strip(), m.group("val").strip().strip("'"))
    return Node(s.strip())            # section without a colon: "Intrafrequency LTE Info"


def _header(s: str) -> tuple[str, str] | None:
    """"[/dev/cdc-wdm0] Successfully got ..." -> (device, rest): the bracket's content and the text
    after it, both stripped; None when `s` is not of that shape (split logic, not a backtracking pattern)."""
    if not s.startswith("["):
        return None
    close = s.find("]")
    if close < 0:
        return None
    device, rest = s[1:close].strip(), s[close + 1:]
    if not device or not rest[:1].isspace():
        return None
    return device, rest.strip()


def _tree_nodes(lines: list[tuple[int, str]]) -> tuple[list[tuple[int, int, Node]], list[Node]]:
    """Each non-blank line as (index in `lines`, indent, node) with the node's children filled in, and the
    top-level nodes. A node's children are the lines after it up to the next one indented no deeper, so
    they do not depend on where the tree starts: the headerless search in _recognise reuses them."""
    root = Node("")
    stack: list[tuple[int, Node]] = [(-1, root)]
    out: list[tuple[int, int, Node]] = []
    for i, (n, line) in enumerate(lines):
        if not line.strip():
            continue
        expanded = line.expandtabs(8)
        indent = len(expanded) - len(expanded.lstrip())
        node = _parse_line(expanded.strip())
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if len(stack) > MAX_DEPTH:
            raise ParseError(f"qmicli: line {n}: nested more than {MAX_DEPTH} levels deep: not qmicli output")
        stack[-1][1].children.append(node)
        stack.append((indent, node))
        out.append((i, indent, node))
    return out, root.children


def build_tree(lines: list[str]) -> Node:
    return Node("", children=_tree_nodes(list(enumerate(lines, 1)))[1])


def _n(v: str | None) -> float | None:
    return number(v, missing=MISSING)


def _kw(s: RadioSample) -> dict[str, Any]:
    return {k: getattr(s, k) for k in s.__dataclass_fields__}


# ---------------------------------------------------------------------------------------------------------
# Normalizers per command

def signal_info_sample(root: Node) -> RadioSample | None:
    def leg(sec: str, tech: str) -> RadioSample | None:
        n = root.child(sec)
        if n is None:
            return None
        s = RadioSample(technology=tech, rssi_dbm=_n(n.get("RSSI")), rsrq_db=_n(n.get("RSRQ")),
                        rsrp_dbm=_n(n.get("RSRP")), snr_db=_n(n.get("SNR")), ecio_db=_n(n.get("ECIO")),
                        rscp_dbm=_n(n.get("RSCP")))
        return None if s.is_empty() or all(
            getattr(s, k) is None for k in ("rssi_dbm", "rsrq_db", "rsrp_dbm", "snr_db", "ecio_db", "rscp_dbm")
        ) else s

    lte, nr = leg("LTE", "lte"), leg("5G", "nr5g")
    if lte and nr:
        s: RadioSample | None = RadioSample(**{**_kw(lte), "technology": "nr5g-nsa", "secondary": (nr,)})
    elif nr:
        s = RadioSample(**{**_kw(nr), "technology": "nr5g-sa"})
    else:
        s = lte or leg("WCDMA", "umts") or leg("GSM", "gsm") or leg("HDR", "evdo") or leg("CDMA", "cdma")
    return None if s is None else RadioSample(**{**_kw(s), "source": "qmicli:signal-info"})


QMI_RADIO = {"lte": "lte", "umts": "umts", "gsm": "gsm", "cdma-1x": "cdma", "cdma-1xevdo": "evdo",
             "td-scdma": "umts", "5gnr": "nr5g", "none": None}


def _radios(node: Node | None) -> list[str]:
    return [c.value for c in (node.children if node else []) if c.value]


def technology_from_radios(radios: list[str]) -> str | None:
    r = {x.lower() for x in radios}
    if "5gnr" in r and "lte" in r:
        return "nr5g-nsa"
    if "5gnr" in r:
        return "nr5g-sa"
    for x in radios:
        t = QMI_RADIO.get(x.lower())
        if t:
            return t
    return None


def signal_strength_sample(root: Node) -> RadioSample | None:
    """Older per-RAT lists: "RSSI:" then "Network 'lte': '-62 dBm'". "SINR (8)" and "IO" are HDR
    (EV-DO) values and "ECIO" for lte is meaningless: neither is taken as an LTE value."""
    def net(sec: str) -> dict[str, str]:
        n = root.child(sec)
        out: dict[str, str] = {}
        for c in (n.children if n else []):
            m = re.match(r"^Network '([^']+)'$", c.key)
            if m and c.value is not None:
                out[m.group(1)] = c.value
        return out

    current = net("Current")
    radio = next(iter(current), None)
    tech = QMI_RADIO.get(radio or "", None)
    if radio is None:
        return None
    s = RadioSample(technology=tech, rssi_dbm=_n(net("RSSI").get(radio) or current.get(radio)),
                    rsrq_db=_n(net("RSRQ").get(radio)), snr_db=_n(net("SNR").get(radio)),
                    rsrp_dbm=_n(net("RSRP").get(radio)),
                    ecio_db=_n(net("ECIO").get(radio)) if tech in ("umts", "cdma", "evdo") else None,
                    source="qmicli:signal-strength")
    return s


QMI_REGISTRATION = {"not-registered": "not-registered", "not-registered-searching": "searching",
                    "registration-denied": "denied", "unknown": "unknown"}


def _mnc(mnc: str | None, pcs: str | None) -> str | None:
    v = integer(mnc)
    if v is None:
        return None
    # qmicli prints %u: the PCS-digit flag says whether the MNC has three digits (02b SOURCE note).
    return f"{v:03d}" if (pcs or "").lower() == "yes" else f"{v:02d}"


def serving_system_sample(root: Node) -> RadioSample | None:
    reg = root.get("Registration state")
    roaming = root.get("Roaming status")
    if reg == "registered":
        registration = "registered" if roaming is None else "home" if roaming == "off" else "roaming"
    else:
        registration = QMI_REGISTRATION.get(reg or "", None)
    tech = technology_from_radios(_radios(root.child("Radio interfaces")))
    full = root.child("Full operator code info")
    plmn = root.child("Current PLMN")
    mcc_n = integer((full or plmn).get("MCC") if (full or plmn) else None)
    mnc = _mnc(full.get("MNC"), full.get("MNC with PCS digit")) if full else \
        _mnc(plmn.get("MNC"), None) if plmn else None
    cell = root.get("3GPP cell ID")
    return RadioSample(
        technology=tech, registration=registration,
        mcc=None if mcc_n is None else f"{mcc_n:03d}", mnc=mnc,
        operator_name=plmn.get("Description") if plmn else None,
        tac=integer(root.get("LTE tracking area code")), lac=integer(root.get("3GPP location area code")),
        **cell_identity(cell, base=10, technology=tech), source="qmicli:serving-system",
    )


def _band_from_extra(extra: str | None) -> str | None:
    m = re.search(r"E-UTRA band (\d+)", extra or "")
    return lte_band(m.group(1)) if m else None


def cell_location_sample(root: Node) -> RadioSample | None:
    intra = root.child("Intrafrequency LTE Info")
    if intra is None:
        return None
    serving_pci = integer(intra.get("Serving Cell ID"))     # QMI's "Serving Cell ID" is the PCI
    serving = None
    for c in intra.children:
        if c.key.startswith("Cell [") and integer(c.get("Physical Cell ID")) == serving_pci:
            serving = c
    mcc, mnc = split_plmn(intra.get("PLMN"))
    earfcn_node = intra.child("EUTRA Absolute RF Channel Number")
    idle = intra.get("UE In Idle")
    return RadioSample(
        technology="lte", mcc=mcc, mnc=mnc, tac=integer(intra.get("Tracking Area Code")),
        **cell_identity(intra.get("Global Cell ID"), base=10, technology="lte"),
        pci=serving_pci, arfcn=integer(earfcn_node.value) if earfcn_node else None,
        band=_band_from_extra(earfcn_node.extra) if earfcn_node else None,
        rsrp_dbm=_n(serving.get("RSRP")) if serving else None, rsrq_db=_n(serving.get("RSRQ")) if serving else None,
        rssi_dbm=_n(serving.get("RSSI")) if serving else None,
        connection={"yes": "idle", "no": "connected"}.get((idle or "").lower()),
        source="qmicli:cell-location-info",
    )


def _none(root: Node) -> RadioSample | None:
    return None


@dataclass(frozen=True)
class Command:
    name: str            # output type
    option: str          # qmicli option that produces it
    header: str          # text after "[dev] " in the success line
    sample: Callable[[Node], RadioSample | None]
    looks_like: Callable[[Node], bool]


COMMANDS: tuple[Command, ...] = (
    Command("signal-info", "--nas-get-signal-info", "Successfully got signal info", signal_info_sample,
            lambda r: any(r.child(s) and (r.child(s).child("RSRP") or r.child(s).child("RSSI"))  # type: ignore[union-attr]
                          for s in ("LTE", "5G", "WCDMA", "GSM"))),
    Command("serving-system", "--nas-get-serving-system", "Successfully got serving system", serving_system_sample,
            lambda r: r.child("Registration state") is not None),
    Command("cell-location-info", "--nas-get-cell-location-info", "Successfully got cell location info",
            cell_location_sample, lambda r: r.child("Intrafrequency LTE Info") is not None),
    Command("signal-strength", "--nas-get-signal-strength", "Successfully got signal strength",
            signal_strength_sample, lambda r: r.child("Current") is not None),
    Command("wds-current-settings", "--wds-get-current-settings", "Current settings retrieved", _none,
            lambda r: r.child("IP Family") is not None),
)
PRIORITY = ("signal-info", "serving-system", "cell-location-info", "signal-strength")


# ---------------------------------------------------------------------------------------------------------
# Noise: what a capture from the field holds besides qmicli's own output. Each kind is recognised by
# its shape and set aside with its line number (the result's "skipped"), never parsed as a value.

# colours in a pasted prompt; an OSC title ends at BEL and never spans another ESC (so that each ESC
# starts at most one scan to the next: linear)
ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*\x07")
# A shell prompt, with or without the command typed after it: "$ ", "# ", "root@OpenWrt:~# ",
# "user@host:~/x$ qmicli ...", "~ # " (busybox ash), "PS C:\\> ", or the command echoed alone.
PROMPT_RE = re.compile(r"^\s*(?:[$#>]\s|[$#>]$|[^\s@]*@\S*\s?[$#>](?:\s|$)|~[^\s:]*\s?[$#](?:\s|$)|PS [A-Z]:\\\S*>)"
                       r"|^\s*(?:sudo\s+)?qmicli\s")
NOISE: tuple[tuple[str, re.Pattern[str]], ...] = (
    # GLib's log lines on stderr: "(qmicli:1234): GLib-WARNING **: ..." or "** (qmicli:1234): WARNING **: ..."
    ("glib-log", re.compile(r"^(?:\*\*\s*)?\([\w.-]+:\d+\):\s*[\w-]*(?:WARNING|CRITICAL|ERROR|Message|INFO|DEBUG)\b"
                            r"|^\*\*\s*(?:[\w-]*-)?(?:WARNING|CRITICAL|ERROR|Message|INFO|DEBUG)\b"
                            r"|^[\w-]+-(?:WARNING|CRITICAL|ERROR|Message|INFO|DEBUG)\s*\*\*")),
    # qmicli --verbose / libqmi debug lines: "[19 Jun 2017, 12:34:56] [Debug] ..." or "[...] -Warning ** ..."
    ("qmi-log", re.compile(r"^\[\d{1,2} \w{3} \d{4},? [\d:]+\]\s")),
    # an AT command typed into the wrong tty and echoed, or a modem's unsolicited result
    ("serial-echo", re.compile(r"^(?:AT\S*|[+^][A-Z]{2,}\d*:.*|RDY|OK|ERROR)$", re.I)),
    ("sudo", re.compile(r"^\[sudo\] password for ")),
    # script(1)'s typescript header and trailer
    ("typescript", re.compile(r"^Script (?:started|done) on ")),
)
# The success line's device: a device node or a qrtr/mbim URI ("[qrtr://0] Successfully got ...").
DEVICE_RE = re.compile(r"^(?:/dev/\S+|[a-z]+://\S*|\S*cdc-wdm\d+)$")


def _noise(line: str) -> str | None:
    """The kind of noise a line is, or None when it may be qmicli's output."""
    s = line.strip()
    if PROMPT_RE.match(line):
        return "shell-prompt"
    for kind, rx in NOISE:
        if rx.match(s):
            return kind
    return None


@dataclass
class _Chunk:
    device: str | None
    header: str | None
    header_line: int | None
    body: list[tuple[int, str]] = field(default_factory=list)     # (line number, text)
    errors: list[str] = field(default_factory=list)


def _split(text: str) -> tuple[list[_Chunk], list[dict[str, Any]]]:
    """Cut a transcript into one chunk per command output, and the noise lines set aside
    ({"line", "text", "why"}, 1-based line numbers)."""
    outs: list[_Chunk] = []
    skipped: list[dict[str, Any]] = []
    cur: _Chunk | None = None
    for n, raw in enumerate(text.splitlines(), 1):
        line = ANSI_RE.sub("", raw)
        s = line.strip()
        kind = _noise(line) if s else None
        if kind == "shell-prompt":
            skipped.append({"line": n, "text": raw, "why": kind})
            cur = None                              # a prompt ends the previous command's output
            continue
        h = _header(s)
        if h and DEVICE_RE.match(h[0]):
            cur = _Chunk(h[0], h[1].rstrip(":").strip(), n)
            outs.append(cur)
            continue
        if kind is not None:
            skipped.append({"line": n, "text": raw, "why": kind})
            continue
        if s.startswith("error:"):
            if cur is None:
                cur = _Chunk(None, None, None)
                outs.append(cur)
            cur.errors.append(s)
            continue
        if cur is None:
            if not s:
                continue
            cur = _Chunk(None, None, None)
            outs.append(cur)
        cur.body.append((n, line))
    return outs, skipped


def _recognise(chunk: _Chunk) -> tuple[Command | None, Node, list[tuple[int, str]]]:
    """Which command printed the chunk, its tree, and the leading lines that are not its output.

    A chunk under a success header is that command's output whole. A chunk without one (the header
    was not pasted, or stray text came first) is recognised by its structure; stray lines ahead of
    the structure are found by dropping leading lines until what is left is recognised."""
    lone = _lone_words(chunk.body)
    lone_set = set(lone)
    body = [x for x in chunk.body if x not in lone_set]
    nodes, top = _tree_nodes(body)
    if chunk.header:
        root = Node("", children=top)
        cmd = next((c for c in COMMANDS if chunk.header.startswith(c.header)), None)
        return cmd or next((c for c in COMMANDS if c.looks_like(root)), None), root, lone
    found = _first_recognised_start(nodes)
    if found is not None:
        start, cmd, children = found
        return cmd, Node("", children=children), sorted(lone + [x for x in body[:start] if x[1].strip()])
    return None, Node("", children=top), sorted(lone + [x for x in body if x[1].strip()])


def _first_recognised_start(nodes: list[tuple[int, int, Node]]) -> tuple[int, Command, list[Node]] | None:
    """The fewest leading lines to drop so that a command recognises the rest: (index of the first line
    kept, the command, the rest's top-level nodes), or None.

    One pass from the last line back (linear): the rest starting at line j has as top-level nodes j and
    those after it indented no deeper than every line between; adding j in front removes from the front
    the ones indented deeper than j (a monotonic stack). The predicates ask for the first top-level node
    of a key, kept per key in the same front-removal order."""
    stack: deque[tuple[int, Node]] = deque()              # (indent, node), front = first top-level node
    by_key: dict[str, deque[Node]] = {}
    found: tuple[int, Command, list[Node]] | None = None
    view = _TopLevel(by_key)
    for i, indent, node in reversed(nodes):
        while stack and stack[0][0] > indent:
            _, gone = stack.popleft()
            by_key[gone.key].popleft()
            if not by_key[gone.key]:
                del by_key[gone.key]
        stack.appendleft((indent, node))
        by_key.setdefault(node.key, deque()).appendleft(node)
        cmd = next((c for c in COMMANDS if c.looks_like(view)), None)  # type: ignore[arg-type]
        if cmd is not None:
            found = (i, cmd, [nd for _, nd in stack])
    return found


class _TopLevel:
    """What the `looks_like` predicates ask of a root (its first child of a key), over _first_recognised_start's
    per-key queues, without building the root."""

    def __init__(self, by_key: dict[str, deque[Node]]):
        self._by_key = by_key

    def child(self, key: str) -> Node | None:
        q = self._by_key.get(key)
        return q[0] if q else None


def _indent(text: str) -> int:
    expanded = text.expandtabs(8)
    return len(expanded) - len(expanded.lstrip())


def _lone_words(body: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Lines that cannot be qmicli's: every line it prints has a colon ("Key: 'value'", "Section:")
    except a section name such as "Intrafrequency LTE Info", which is followed by its indented members."""
    out = []
    filled = [x for x in body if x[1].strip()]
    for i, (n, text) in enumerate(filled):
        nxt = filled[i + 1][1] if i + 1 < len(filled) else None
        if ":" not in text and (nxt is None or _indent(nxt) <= _indent(text)):
            out.append((n, text))
    return out


def _walk(node: Node) -> list[Node]:
    out: list[Node] = []
    for c in node.children:
        out.append(c)
        out.extend(_walk(c))
    return out


def parse_outputs(text: str, skipped: list[dict[str, Any]] | None = None,
                  unrecognised: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Every command output in `text`. Lines that are not qmicli's output are appended to `skipped`
    (when given); ParseError (naming a line) when a success header names a command this parser does
    not know -- or, given `unrecognised` (`ctl parse --partial`), that header is set aside there and
    its lines skipped -- and when nothing in the input is recognisable."""
    chunks, noise = _split(text)
    aside: list[dict[str, Any]] = list(noise)
    outputs: list[dict[str, Any]] = []
    lines: list[str] | None = None
    for chunk in chunks:
        cmd, root, stray = _recognise(chunk)
        aside.extend({"line": n, "text": t, "why": "not qmicli output"} for n, t in stray)
        if chunk.errors and cmd is None:
            outputs.append({"type": "error", "device": chunk.device, "fields": {"errors": chunk.errors},
                            "sample": None})
            continue
        if cmd is None:
            if chunk.header is not None:
                exc = ParseError(f"qmicli: line {chunk.header_line}: unknown output {chunk.header[:80]!r} "
                                 f"(known: {', '.join(c.header for c in COMMANDS)})")
                if unrecognised is None:
                    raise exc
                if lines is None:
                    lines = text.splitlines()
                unrecognised.append({"line": chunk.header_line, "text": lines[(chunk.header_line or 1) - 1],
                                     "why": exc.one_line()})
                lone = set(stray)
                aside.extend({"line": n, "text": t, "why": "under an unknown header"} for n, t in chunk.body
                             if t.strip() and (n, t) not in lone)
            continue                                   # stray text only: set aside above
        if cmd.name == "wds-current-settings":
            # Keys are right-aligned ("   IP Family: IPv4"): indentation means nothing here, so flatten.
            fields_ = {c.key: c.value for c in _walk(root)}
        else:
            fields_ = root.to_json() if root.children else {}
        outputs.append({"type": cmd.name, "device": chunk.device, "fields": fields_, "sample": cmd.sample(root)})
    if not outputs and aside:
        first = min(aside, key=lambda x: x["line"])
        raise ParseError(f"qmicli: line {first['line']}: no qmicli output recognised "
                         f"(first line {first['text'].strip()[:80]!r}: {first['why']})")
    if skipped is not None:
        skipped.extend(sorted(aside, key=lambda x: x["line"]))
    return outputs


def parse_sample(text: str) -> RadioSample | None:
    outs = parse_outputs(text)
    return merge_samples([o["sample"] for t in PRIORITY for o in outs if o["type"] == t])


def to_json(text: str, unrecognised: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """All outputs, the merged sample, and `skipped`: the lines set aside as not qmicli's output
    (line number, text, and why: shell-prompt, glib-log, qmi-log, serial-echo, sudo, not qmicli output).
    `unrecognised`: see parse_outputs."""
    skipped: list[dict[str, Any]] = []
    outs = parse_outputs(text, skipped, unrecognised)
    if not outs:
        raise ParseError("qmicli: empty input")
    merged = merge_samples([o["sample"] for t in PRIORITY for o in outs if o["type"] == t])
    return {"tool": "qmicli",
            "outputs": [{**o, "sample": None if o["sample"] is None else o["sample"].to_json()} for o in outs],
            "sample": None if merged is None else merged.to_json(), "skipped": skipped}
