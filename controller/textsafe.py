"""Text from outside ctl's own code, made safe to print on a terminal or to put in one line.

A value written by someone else (a row of the shared lab database: a campaign name, a note, a
reason, an error; a host's reply) may hold bytes a terminal acts on: ESC and the other C0
controls (cursor moves, colour, window titles, OSC 52 clipboard writes), DEL, the C1 controls
(U+0080-U+009F; U+009B is a one-character CSI on many terminals), the Unicode line and
paragraph separators, and the bidirectional controls (U+061C, U+200E, U+200F, U+202A-U+202E,
U+2066-U+2069: the Unicode Bidi_Control characters), which make a line read differently than
it is stored ("Trojan Source", CVE-2021-42574).

`shown(value)` replaces each of these with a visible escape: `\\x1b`, `\\x9b`, `\\u202e`
(Python's spelling); line feed and tab become `\\n` and `\\t`, so one value is one line.
Everything else, including any other non-ASCII letter, is printed as it is. A backslash is
left alone (so `\\x1b` typed as four characters looks like an escaped ESC; it is harmless).
`has_control(value)` says whether a value holds any of them, for validators that refuse
instead of escaping. One regular expression, one pass: linear in the length of the text.
"""
from __future__ import annotations

import re

# C0 (all, tab and line feed included: one value is printed as one line), DEL, C1, the
# line/paragraph separators and the Bidi_Control characters.
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
# The same, but tab and line feed are text (a multi-line note printed as a block).
CONTROL_BUT_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")

_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escape(m: re.Match[str]) -> str:
    c = m.group()
    if c in _NAMED:
        return _NAMED[c]
    code = ord(c)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shown(value: object, limit: int | None = None) -> str:
    """`value` as text with every control character (see module doc) escaped; at most `limit`
    characters of the original are kept (then `...`). `None` and non-text values are shown
    with str()."""
    text = value if isinstance(value, str) else str(value)
    cut = limit is not None and len(text) > limit
    if cut:
        text = text[:limit]
    return CONTROL.sub(_escape, text) + ("..." if cut else "")


def shown_lines(value: object) -> str:
    """Like `shown`, but line feeds and tabs are kept (a multi-line text printed as a block)."""
    text = value if isinstance(value, str) else str(value)
    return CONTROL_BUT_LINES.sub(_escape, text)


def has_control(value: str, lines: bool = False) -> bool:
    """Whether `value` holds a control character (with `lines`, tab and line feed are allowed)."""
    return (CONTROL_BUT_LINES if lines else CONTROL).search(value) is not None
