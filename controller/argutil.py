"""Command-line helpers shared by the CLI and the scenario parameter parser."""
from __future__ import annotations

import re

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
