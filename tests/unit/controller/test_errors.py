"""Every deliberate error is one line on stderr, and never carries a terminal control from the
values inside it (a host's output, a file, a row of the lab database)."""
from __future__ import annotations

from controller.errors import CtlError, UsageError


def test_one_line_escapes_terminal_controls():
    e = UsageError("campaign '\x1b]0;owned\x07x\u202e' failed:\nsee\tlog \x9b2J")
    line = e.one_line()
    assert "\n" not in line and "\x1b" not in line and "\x9b" not in line and "\u202e" not in line
    assert "\\x1b" in line and "\\u202e" in line and "see log" in line


def test_an_empty_message_names_the_error():
    assert CtlError("").one_line() == "CtlError"
