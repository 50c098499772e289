"""Command-line helpers shared by the CLI and the scenario parameter parser, and the one
validator of values that become arguments of commands (local or remote).

Every value that ends up as an element of an argv (an interface name, a congestion control,
a user, a device or a path) is checked here: `argv_value` for any value, `name_value` for a
value that must also match the pattern of its kind. Patterns are matched in full
(`re.fullmatch`: a trailing newline never passes, as it would with `re.match("...$")`).
"""
from __future__ import annotations

import ipaddress
import re

from controller.errors import ParameterError

_NEGATIVE = re.compile(r"^-[\d.]")

# The kinds of names ctl accepts, each matched in full after `argv_value`.
NAME_PATTERNS: dict[str, str] = {
    # Linux (IFNAMSIZ 16, so 15 characters) and FreeBSD interface names; `.`, `..` refused below
    "interface": r"[A-Za-z0-9_.:][A-Za-z0-9_.:-]{0,14}",
    # inventory names of hosts, links, segments and the rack (also netns and file names)
    "name": r"[a-z][a-z0-9-]{0,30}",
    # a congestion control as the kernel lists it (`cubic`, `bbr`, `mptcp_olia`)
    "cc": r"[a-z0-9_]{2,16}",
    # a login name (POSIX portable user names; FreeBSD and Debian accept these)
    "user": r"[A-Za-z_][A-Za-z0-9_.-]{0,31}",
}
_NOT_NAMES = {"interface": {".", ".."}}


def join_negative_values(argv: list[str]) -> list[str]:
    """`--bw -1M` -> `--bw=-1M`: argparse would read `-1M` as an option and say 'expected one
    argument'; joined, the value reaches its own parser and gets a real error message."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("--") and "=" not in a and i + 1 < len(argv) and _NEGATIVE.match(argv[i + 1]):
            out.append(f"{a}={argv[i + 1]}")
            i += 2
            continue
        out.append(a)
        i += 1
    return out


def _shown(text: str) -> str:
    return repr(text[:40]) + ("..." if len(text) > 40 else "")


def argv_value(value: str, what: str) -> str:
    """A value that becomes one element of a remote command's argv, checked: not empty, no
    leading `-` (the tool would read it as an option), no NUL, line break or other control
    character. Raises ParameterError naming `what`."""
    text = str(value)
    if not text:
        raise ParameterError(f"{what}: empty value")
    if text.startswith("-"):
        raise ParameterError(f"{what}: {_shown(text)} starts with '-' (it would be read as an option)")
    if any(ord(c) < 32 or 127 <= ord(c) < 160 for c in text):
        raise ParameterError(f"{what}: {_shown(text)} holds a control character or a line break")
    return text


def name_value(value: str, kind: str, what: str) -> str:
    """A full match of the pattern of `kind` (see NAME_PATTERNS), and `argv_value`."""
    text = str(value)
    if not re.fullmatch(NAME_PATTERNS[kind], text) or text in _NOT_NAMES.get(kind, ()):
        raise ParameterError(f"{what}: {_shown(text)} is not a valid name ({kind} names match "
                             f"{NAME_PATTERNS[kind]})")
    return argv_value(text, what)


def host_port_value(value: str, what: str, default_port: int | None = None) -> str:
    """`HOST:PORT` (an IP address, `[v6]` or a host name, and a port 1..65535) that becomes an
    argument of a command, e.g. gpspipe's `127.0.0.1:2947`."""
    text = argv_value(value, what)
    m = re.fullmatch(r"\[([0-9A-Fa-f:.]+)\](?::([0-9]{1,5}))?|([A-Za-z0-9][A-Za-z0-9.-]*)(?::([0-9]{1,5}))?", text)
    if not m:
        raise ParameterError(f"{what}: {_shown(text)} is not HOST:PORT")
    host, port = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
    if m.group(1):
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ParameterError(f"{what}: {_shown(host)} is not an IPv6 address") from None
    if port is None and default_port is None:
        raise ParameterError(f"{what}: {_shown(text)} needs a port (HOST:PORT)")
    if port is not None and not 1 <= int(port) <= 65535:
        raise ParameterError(f"{what}: port {port} is outside 1..65535")
    return text
