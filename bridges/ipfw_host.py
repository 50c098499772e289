"""Parsers for the other FreeBSD outputs the dummynet driver reads: `ipfw -S list` rules, `sysctl`
name/value lines, `freebsd-version`, and the sampler's marked stream of repeated pipe listings.
Pure: text in, frozen dataclasses out; anything unrecognised raises ParseError naming the line."""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from bridges.ipfw_parse import parse_pipe_show
from bridges.ipfw_records import DnListing
from controller.errors import ParseError


@dataclass(frozen=True)
class IpfwRule:
    """One static rule from `ipfw -S list`: `# DISABLED 10000 set 3 pipe 10101 ip from ...`.

    With -S ipfw prints the set of every rule and also lists rules of disabled sets
    (prefixed `# DISABLED `) which plain `ipfw list` hides; both matter to restore a range
    exactly. `body` is the rule text after the set, as ipfw prints it; it is valid input for
    `ipfw add NUMBER set SET <body>`.
    """

    number: int
    set: int
    body: str
    disabled: bool = False

    @property
    def tokens(self) -> tuple[str, ...]:
        return tuple(self.body.split())

    def render(self) -> str:
        return f"{'# DISABLED ' if self.disabled else ''}{self.number:05d} set {self.set} {self.body}"


_RULE_RE = re.compile(r"^(?P<dis># DISABLED )?(?P<nr>\d{5,}) set (?P<set>\d+) (?P<body>\S.*)$")


def parse_ipfw_list(text: str) -> tuple[IpfwRule, ...]:
    """`ipfw -S list` (no counters, no dynamic states) -> rules in listing order."""
    rules = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if not line:
            continue
        m = _RULE_RE.match(line)
        if not m:
            raise ParseError(f"ipfw -S list line {n}: not a rule with its set (was -S given?): {line!r}")
        rules.append(IpfwRule(int(m["nr"]), int(m["set"]), m["body"], bool(m["dis"])))
    return tuple(rules)


_SYSCTL_RE = re.compile(r"^(?P<name>[A-Za-z0-9_%-]+(?:\.[A-Za-z0-9_%-]+)+): ?(?P<value>.*)$")


def parse_sysctl(text: str) -> dict[str, str]:
    """`sysctl a.b c.d` output (`name: value` lines) -> {name: value}."""
    out: dict[str, str] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if not line:
            continue
        m = _SYSCTL_RE.match(line)
        if not m:
            raise ParseError(f"sysctl output line {n}: not `name: value`: {line!r}")
        out[m["name"]] = m["value"].strip()
    return out


_VERSION_RE = re.compile(r"^(?P<major>\d+)\.(?P<minor>\d+)-(?P<rest>[A-Za-z0-9.-]+)$")


def parse_freebsd_version(text: str) -> tuple[str, int, int]:
    """`freebsd-version -u` / `uname -r` output `14.1-RELEASE-p5` -> (text, major, minor)."""
    line = text.strip().splitlines()[0].strip() if text.strip() else ""
    m = _VERSION_RE.match(line)
    if not m:
        raise ParseError(f"not a FreeBSD version string: {text.strip()!r}")
    return line, int(m["major"]), int(m["minor"])


SAMPLE_MARK_RE = re.compile(r"^---ctl-sample (?P<seq>\d+) (?P<epoch>\d+)---$")


@dataclass(frozen=True)
class PipeSample:
    """One `ipfw pipe show` taken by the long-lived sampler, closed by its marker line."""

    seq: int
    epoch: int          # `date +%s` on the host right after the listing (1 s resolution)
    listing: DnListing


class SampleStreamParser:
    """Incremental parser of the sampler's stdout: feed lines, get a PipeSample per marker.

    Lines after the last marker belong to a listing still being printed (or cut short when
    the sampler was stopped) and are never returned as a sample.
    """

    def __init__(self, parse: Callable[[str], DnListing] = parse_pipe_show) -> None:
        self._pending: list[str] = []
        self._parse = parse          # the listing's parser (bridges.dummynet.listing reads both formats)

    def feed(self, line: str) -> PipeSample | None:
        m = SAMPLE_MARK_RE.match(line.rstrip("\r\n").rstrip())
        if not m:
            self._pending.append(line.rstrip("\r\n"))
            return None
        text = "\n".join(self._pending)
        self._pending = []
        try:
            listing = self._parse(text)
        except ParseError as exc:
            raise ParseError(f"sampler sample {m['seq']}: {exc}") from None
        return PipeSample(int(m["seq"]), int(m["epoch"]), listing)

    @property
    def pending_lines(self) -> int:
        return len(self._pending)


def parse_sample_stream(lines: Iterable[str]) -> list[PipeSample]:
    """All complete samples of a captured sampler stream."""
    p = SampleStreamParser()
    out = []
    for line in lines:
        s = p.feed(line)
        if s is not None:
            out.append(s)
    return out
