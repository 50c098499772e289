"""Command-line helpers shared by the CLI and the scenario parameter parser."""
from __future__ import annotations

import re

from controller.errors import ParameterError

_NEGATIVE = re.compile(r"^-[\d.]")


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


def argv_value(value: str, what: str) -> str:
    """A value that becomes one element of a remote command's argv, checked: not empty, no
    leading `-` (the tool would read it as an option), no NUL, line break or other control
    character. Raises ParameterError naming `what`."""
    text = str(value)
    if not text:
        raise ParameterError(f"{what}: empty value")
    if text.startswith("-"):
        raise ParameterError(f"{what}: {text[:40]!r} starts with '-' (it would be read as an option)")
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise ParameterError(f"{what}: {text[:40]!r} holds a control character or a line break")
    return text
