"""Pull tool output out of the recorded fixture files, without changing a byte of it.

The .md fixtures hold samples as fenced blocks under "## " headings; the generated/*.txt
captures are shell transcripts ("$ command" lines followed by that command's stdout).
Tests use these helpers so that every sample is parsed exactly as it was recorded.
"""
from __future__ import annotations

from tests.support.shipped import TESTS

FIXTURES = TESTS / "fixtures"
RECORDED = FIXTURES / "recorded"
RECORDED_GENERATED = RECORDED / "generated"
TC_GENERATED = FIXTURES / "generated" / "tc"


def read_recorded(name: str) -> str:
    """A file under recorded/ (e.g. "04_linux_mptcp.md" or "generated/nstat_mptcp.client.txt")."""
    return (RECORDED / name).read_text()


def sections(md_name: str) -> dict[str, str]:
    """"## " heading -> the text under it (up to the next "## " heading)."""
    out: dict[str, str] = {}
    heading: str | None = None
    body: list[str] = []
    for line in read_recorded(md_name).splitlines(keepends=True):
        if line.startswith("## "):
            if heading is not None:
                out[heading] = "".join(body)
            heading, body = line[3:].strip(), []
        elif heading is not None:
            body.append(line)
    if heading is not None:
        out[heading] = "".join(body)
    return out


def fenced_blocks(md_name: str, heading_contains: str) -> list[str]:
    """The fenced code blocks of the one section whose heading contains `heading_contains`."""
    matches = [text for heading, text in sections(md_name).items() if heading_contains in heading]
    if len(matches) != 1:
        raise LookupError(f"{md_name}: {len(matches)} sections match {heading_contains!r}")
    blocks: list[str] = []
    current: list[str] | None = None
    for line in matches[0].splitlines(keepends=True):
        if line.startswith("```"):
            if current is None:
                current = []
            else:
                blocks.append("".join(current))
                current = None
        elif current is not None:
            current.append(line)
    if current is not None:
        raise LookupError(f"{md_name}: unterminated fence under {heading_contains!r}")
    return blocks


def fenced_block(md_name: str, heading_contains: str) -> str:
    blocks = fenced_blocks(md_name, heading_contains)
    if len(blocks) != 1:
        raise LookupError(f"{md_name}: {len(blocks)} fenced blocks under {heading_contains!r}")
    return blocks[0]


def transcript(text: str) -> list[tuple[str, str]]:
    """Split a "$ command" transcript into (command, output) pairs; output keeps every byte."""
    pairs: list[tuple[str, list[str]]] = []
    for line in text.splitlines(keepends=True):
        if line.startswith("$ "):
            pairs.append((line[2:].rstrip("\n"), []))
        elif pairs:
            pairs[-1][1].append(line)
    return [(cmd, "".join(lines)) for cmd, lines in pairs]


def command_output(text: str, command_startswith: str, index: int = 0) -> str:
    """The output of the `index`-th command in a transcript that starts with the given text."""
    outs = [out for cmd, out in transcript(text) if cmd.startswith(command_startswith)]
    if len(outs) <= index:
        raise LookupError(f"no command #{index} starting with {command_startswith!r}")
    return outs[index]
