"""controller.textsafe: every terminal control in a value from outside is escaped, nothing else."""
from __future__ import annotations

import unicodedata

import pytest

from controller.textsafe import has_control, shown, shown_lines

# Every character the module must escape, listed from the standards, not from the module:
# C0, DEL, C1, U+2028/U+2029, and Unicode's Bidi_Control set (PropList.txt).
BIDI_CONTROL = [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
CONTROLS = [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0), 0x2028, 0x2029, *BIDI_CONTROL]


@pytest.mark.parametrize("code", CONTROLS)
def test_every_control_is_escaped(code):
    text = f"a{chr(code)}b"
    out = shown(text)
    assert chr(code) not in out
    assert out.startswith("a\\") and out.endswith("b")
    assert has_control(text)


def test_escapes_are_spelled_like_python():
    assert shown("\x1b[2Jx") == "\\x1b[2Jx"
    assert shown("\x9b31m") == "\\x9b31m"
    assert shown("evil\u202etxt.exe") == "evil\\u202etxt.exe"
    assert shown("two\nlines\tand\r") == "two\\nlines\\tand\\r"


def test_the_output_holds_no_control_at_all():
    everything = "".join(chr(c) for c in range(0x3000))
    out = shown(everything)
    assert not has_control(out)
    # every remaining character is printable or an ordinary space
    assert all(unicodedata.category(c) not in ("Cc",) for c in out)


def test_ordinary_text_is_unchanged():
    for text in ("2026 autumn sweep", "캠페인 노트", "naïve – “quoted” ✓", "back\\slash", ""):
        assert shown(text) == text
        assert not has_control(text)


def test_lines_variant_keeps_line_feed_and_tab_only():
    assert shown_lines("a\nb\tc\x1b]0;t\x07") == "a\nb\tc\\x1b]0;t\\x07"
    assert shown_lines("x\u2028y\r") == "x\\u2028y\\r"
    assert has_control("a\nb") and not has_control("a\nb", lines=True)


def test_limit_and_non_text():
    assert shown("abcdef", limit=3) == "abc..."
    assert shown("\x1b" * 10, limit=2) == "\\x1b\\x1b..."
    assert shown(None) == "None" and shown(42) == "42"
