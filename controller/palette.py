"""One palette and one vocabulary for every figure of ctl (pure data, no matplotlib).

Colours are keyed by what a series *is*, never by its position in a plot: a congestion
control (`algorithm_style`) or a role (`role_style`: TCP and MPTCP as protocols, the two
hosts of parallel-streams, a path). So one algorithm has one colour in a run's figures, a
campaign's and a whole reproduction report's. The base colours are Okabe & Ito's
colour-blind-safe set ("Color Universal Design", 2008) and Paul Tol's muted and light schemes
(https://personal.sron.nl/~pault/, "Colour schemes", 2021); fourteen algorithms cannot all be
told apart by colour alone under every colour-vision deficiency, so each also has its own
marker and bar hatch, and variants of one algorithm share its hue family (the MCubic readings
are reds, the BBRs purples). An algorithm not listed gets a colour from a reserved set chosen
by a checksum of its name: the same in every figure and every process.

`label` turns the identifiers of summaries and parameters into what a reader of a paper
expects: `share_pct` -> "share of the bottleneck (%)", `cc = bbr` -> "congestion control: BBR
(kernel)". Kernel `bbr` is never called BBRv3: ctl's `bbr` is the endpoints' own kernel's BBR,
which upstream is BBRv1; "BBRv3" is ctl's `bbr3` (its BPF program after the IETF draft), and a
figure's caption says both (`algorithm_note`).
"""
from __future__ import annotations

import re
import zlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Style:
    color: str          # "#rrggbb"
    marker: str         # a matplotlib marker
    hatch: str          # a matplotlib hatch for bars ("" = none)
    name: str           # how a legend names it


# Algorithm key -> (colour, marker, hatch, display name). Keys are the names the kernel registers
# (nodes/congestion/catalog.py for ctl's own, the kernel's for cubic, reno, bbr, vegas).
_ALGORITHMS: dict[str, tuple[str, str, str, str]] = {
    "cubic": ("#0072B2", "o", "", "Cubic"),                        # Okabe-Ito blue
    "reno": ("#56B4E9", "v", "..", "Reno"),                         # Okabe-Ito sky blue
    "vegas": ("#88CCEE", "<", "\\\\", "Vegas"),                     # Tol cyan
    "lia": ("#E69F00", "s", "//", "LIA"),                           # Okabe-Ito orange
    "olia": ("#999933", "^", "\\\\", "OLIA"),                       # Tol olive
    "balia": ("#009E73", "D", "xx", "BALIA"),                       # Okabe-Ito bluish green
    "balia_floor": ("#44AA99", "d", "++", "BALIA (floor)"),         # Tol teal
    "wvegas": ("#DDCC77", "P", "--", "wVegas"),                     # Tol sand
    "mcubic": ("#D55E00", "*", "", "MCubic"),                       # Okabe-Ito vermillion
    "mcubic_wrap": ("#CC6677", "X", "//", "MCubic (wrap)"),         # Tol rose
    "mcubic_stretch": ("#882255", "p", "\\\\", "MCubic (stretch)"), # Tol wine
    "mcubic_nohs": ("#EE8866", "h", "..", "MCubic (no HyStart)"),   # Tol light orange
    "cubic314": ("#4477AA", ">", "||", "Cubic 3.14 (BPF)"),            # Tol blue: Linux 3.14's Cubic, not the kernel's
    "bbr": ("#CC79A7", "H", "oo", "BBR (kernel)"),                  # Okabe-Ito reddish purple
    "bbr3": ("#332288", "8", "OO", "BBRv3"),                        # Tol indigo
}

# Roles: series that are not one algorithm (a protocol running the hosts' default, a host, a path).
_ROLES: dict[str, tuple[str, str, str, str]] = {
    "tcp": ("#4D4D4D", "o", "", "TCP"),
    "mptcp": ("#AA3377", "s", "//", "MPTCP"),
    "x1": ("#117733", "o", "", "x1 (existing)"),
    "m0": ("#BBCC33", "s", "//", "m0 (new)"),
    "path1": ("#000000", "", "", "path 1"),
    "path2": ("#777777", "", "", "path 2"),
}
# Reference marks: not colours of data but of what data is compared with.
PAPER = Style("#000000", "_", "", "paper")
MODEL = Style("#000000", "D", "", "model")
CAPACITY = Style("#555555", "", "", "capacity")
# Series of a field run (controller.field.figures) that are not an algorithm: what each panel of a
# modem host's timeline measures and the marks on it (Paul Tol's "bright" and "vibrant" schemes,
# none of them an algorithm's colour).
FIELD: dict[str, Style] = {
    "quality": Style("#4477AA", "", "", "radio quality"),
    "download": Style("#228833", "", "", "download rate"),
    "peers": Style("#AA4499", "", "", "active peers"),
    "handover": Style("#CC3311", "", "", "handover"),
    "no_reply": Style("#EE7733", "", "", "no ping reply"),
    "gap": Style("#BBBBBB", "", "", "not logged"),
}
# An algorithm or role ctl does not list: one of these, by checksum of its name.
_SPARE = ("#77AADD", "#FFAABB", "#AAAA00", "#44BB99", "#99DDFF", "#EEDD88", "#BBBBBB")
_SPARE_MARKERS = ("o", "s", "^", "v", "D", "P", "X")

# How rows, series and parameters are written elsewhere -> the palette's key.
_ALIASES = {"bbr1": "bbr", "bbrv1": "bbr", "bbrv3": "bbr3", "bbr_v3": "bbr3", "cubic_tcp": "cubic",
            "new_reno": "reno", "newreno": "reno"}


def algorithm_key(name: str) -> str:
    """`MCubic` -> `mcubic`, `BALIA floor` -> `balia_floor`, `wVegas` -> `wvegas`, `BBRv3` -> `bbr3`; a
    row's label in parentheses is not part of the name (`bbr (kernel: v1 here)` -> `bbr`, `bbr3 (BBRv3
    after draft-ietf-ccwg-bbr-06, BPF)` -> `bbr3`), so a labelled row keeps its algorithm's colour."""
    text = str(name).strip()
    cut = text.find(" (")
    if cut > 0 and text.endswith(")"):
        text = text[:cut]
    k = re.sub(r"[\s\-]+", "_", text.lower())
    k = re.sub(r"_?\((kernel|bpf)\)$", "", k)
    return _ALIASES.get(k, k)


def _spare(key: str) -> tuple[str, str, str, str]:
    i = zlib.crc32(key.encode()) % len(_SPARE)
    return _SPARE[i], _SPARE_MARKERS[i], "", key


def algorithm_style(name: str) -> Style:
    """The style of a congestion control, by any spelling of its name."""
    key = algorithm_key(name)
    return Style(*(_ALGORITHMS.get(key) or _ROLES.get(key) or _spare(key)))


def role_style(role: str) -> Style:
    """The style of a role: `tcp`/`mptcp` (a protocol), a host of parallel-streams, a path."""
    key = algorithm_key(role)
    return Style(*(_ROLES.get(key) or _ALGORITHMS.get(key) or _spare(key)))


def style(name: str) -> Style:
    """A series named by an algorithm or a role (rows of a reproduction table are either)."""
    key = algorithm_key(name)
    if key in _ALGORITHMS:
        return algorithm_style(key)
    return role_style(key)


def host_styles(hosts: list[str] | tuple[str, ...]) -> dict[str, Style]:
    """Styles of hosts drawn together (a field run's modem hosts): each a host's role style
    (`role_style`: by its name's checksum, the same in every figure), and a host whose colour
    another host of the set already has (sorted by name) takes the next free one of the
    reserved set, so two hosts in one figure never share a colour (up to the set's size)."""
    out: dict[str, Style] = {}
    used: set[str] = set()
    for h in sorted(hosts):
        st = role_style(h)
        if st.color in used:
            free = [i for i, c in enumerate(_SPARE) if c not in used]
            if free:
                i = free[0]
                st = Style(_SPARE[i], _SPARE_MARKERS[i], "", st.name)
        used.add(st.color)
        out[h] = st
    return out


def known_algorithms() -> tuple[str, ...]:
    return tuple(_ALGORITHMS)


def known_roles() -> tuple[str, ...]:
    return tuple(_ROLES)


# ---- words ------------------------------------------------------------------------------------

# Summary metrics and parameters -> a human label with its unit.
_LABELS = {
    "share_pct": "share of the bottleneck (%)",
    "throughput_mbps": "receiver goodput (Mbit/s)",
    "total_mbps": "total receiver goodput (Mbit/s)",
    "sender_mbps": "sender rate (Mbit/s)",
    "bridge_forward_mbps": "forwarded by the bridge (Mbit/s)",
    "mbps": "throughput (Mbit/s)",
    "jain_index": "Jain's fairness index",
    "ratio": "MPTCP / TCP throughput at the sender",
    "retransmits": "retransmitted segments",
    "rtt": "RTT",
    "delay": "one-way delay",
    "delay1": "path 1 one-way delay",
    "delay2": "path 2 one-way delay",
    "loss": "random loss",
    "cc": "congestion control",
    "bw": "bottleneck rate",
    "link1": "link 1 rate",
    "link2": "link 2 rate",
    "queue": "queue",
    "streams": "m0's connections",
    "base_streams": "x1's connections",
    "duration": "duration",
    "tracker": "tracker",
    "step": "step",
    "download_s": "download time (s)",
    "x1_share_pct": "x1's share of the bottleneck (%)",
    "m0_share_pct": "m0's share of the bottleneck (%)",
}
_UNIT_SUFFIXES = (("_mbps", "Mbit/s"), ("_pct", "%"), ("_ms", "ms"), ("_s", "s"), ("_bytes", "B"),
                  ("_kbps", "kbit/s"), ("_db", "dB"))


def label(key: str) -> str:
    """A summary metric or parameter as a reader writes it, with its unit where it has one."""
    key = str(key).lstrip("-").replace("-", "_")
    if key in _LABELS:
        return _LABELS[key]
    for suffix, unit in _UNIT_SUFFIXES:
        if key.endswith(suffix) and len(key) > len(suffix):
            return f"{key[: -len(suffix)].replace('_', ' ')} ({unit})"
    return key.replace("_", " ")


def value_label(key: str, value: str) -> str:
    """`cc = bbr` -> "congestion control: BBR (kernel)"; `rtt = 40ms` -> "RTT: 40ms"."""
    key = str(key).lstrip("-").replace("-", "_")
    shown = algorithm_style(value).name if key == "cc" else str(value)
    return f"{label(key)}: {shown}"


def algorithm_note(names: list[str] | tuple[str, ...] | set[str]) -> str | None:
    """What a caption must say when a BBR is in a figure: the kernel's BBR is not BBRv3, and the
    figure's "BBRv3" is ctl's bbr3, not Google's Linux BBRv3."""
    keys = {algorithm_key(n) for n in names}
    notes = []
    if "bbr" in keys:
        notes.append("BBR (kernel) is the endpoints' own kernel's BBR: upstream Linux ships BBRv1, not BBRv3")
    if "bbr3" in keys:
        notes.append("BBRv3 is ctl's bbr3, a BPF program after the IETF CCWG's BBR draft, not Google's Linux BBRv3 "
                     "(the draft's revision and how bbr3 differs from it: `ctl cc list`)")
    return "; ".join(notes) or None
