"""Parser for iputils `ping` output (verified on iputils 20221126, tests/fixtures/generated/ping/).

Per-reply lines print the RTT with 3 significant digits ("time=50.2 ms"); the summary line
"rtt min/avg/max/mdev = 50.187/50.201/50.223/0.013 ms" has microsecond resolution, so RTT
statistics come from the summary and only the jitter (mean absolute difference of
consecutive replies, RFC 3550's estimator without smoothing) from the per-reply times,
with the resolution they have.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from controller.errors import ParseError
from controller.parsers import numbers

_REPLY = re.compile(r"^\d+ bytes from (?P<src>[^:]+): icmp_seq=(?P<seq>\d+) ttl=(?P<ttl>\d+) time=(?P<t>[\d.]+) ms")
_STATS = re.compile(r"^(?P<tx>\d+) packets transmitted, (?P<rx>\d+) received,(?: \+(?P<err>\d+) errors,)?"
                    r"(?: \+(?P<dup>\d+) duplicates,)? (?P<loss>[\d.]+)% packet loss(?:, time (?P<time>\d+)ms)?")
_RTT = re.compile(r"^rtt min/avg/max/mdev = (?P<min>[\d.]+)/(?P<avg>[\d.]+)/(?P<max>[\d.]+)/(?P<mdev>[\d.]+) ms")
_HEAD = re.compile(r"^PING (?P<dst>\S+) \((?P<addr>[^)]+)\)")


@dataclass(frozen=True)
class PingResult:
    destination: str | None
    transmitted: int
    received: int
    loss_percent: float
    replies: tuple[tuple[int, float], ...]     # (icmp_seq, rtt ms as printed)
    rtt_min_ms: float | None
    rtt_avg_ms: float | None
    rtt_max_ms: float | None
    rtt_mdev_ms: float | None

    @property
    def jitter_ms(self) -> float | None:
        """Mean |RTT(i) - RTT(i-1)| over consecutive replies (None with fewer than 2)."""
        rtts = [t for _, t in sorted(self.replies)]
        if len(rtts) < 2:
            return None
        return sum(abs(b - a) for a, b in zip(rtts, rtts[1:])) / (len(rtts) - 1)


def parse(text: str) -> PingResult:
    dest = None
    replies: list[tuple[int, float]] = []
    stats = rtt = None
    for line in text.splitlines():
        line = line.strip()
        if m := _HEAD.match(line):
            dest = m["addr"]
        elif m := _REPLY.match(line):
            replies.append((numbers.integer(m["seq"], "ping: icmp_seq"), numbers.finite(m["t"], "ping: time")))
        elif m := _STATS.match(line):
            stats = m
        elif m := _RTT.match(line):
            rtt = m
    if stats is None:
        raise ParseError("ping: no statistics line (was ping interrupted before it finished?)")
    return PingResult(dest, numbers.integer(stats["tx"], "ping: transmitted"), numbers.integer(stats["rx"], "ping: received"),
                      numbers.finite(stats["loss"], "ping: loss"), tuple(replies),
                      *(numbers.finite(rtt[k], f"ping: rtt {k}") if rtt else None for k in ("min", "avg", "max", "mdev")))


def to_json(text: str) -> dict[str, Any]:
    r = parse(text)
    d = asdict(r)
    d["replies"] = [{"icmp_seq": s, "rtt_ms": t} for s, t in r.replies]
    d["jitter_ms"] = r.jitter_ms
    return d
