"""ipfw rules and counters as data (pure): canonical rule tokens (for comparing what is
installed with what was planned), the pipe a rule feeds, per-pipe counters, the counter stream
over a `pipe show` sampling loop, and a pipe's printed configuration as one comparable string.
"""
from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence

from bridges.base import CounterSample, CounterStream, PipeKey
from bridges.ipfw_host import IpfwRule, SampleStreamParser
from bridges.dummynet.listing import read_pipes
from bridges.ipfw_records import DnListing, DnObject


def pipe_counters(listing: DnListing, pipes: Mapping[int, PipeKey]) -> dict[PipeKey, dict[str, int]]:
    """Per-pipe packets, bytes, drops and queue occupancy summed over the pipe's flows (pure).

    Counters belong to flow instances: dummynet deletes idle instances
    (net.inet.ip.dummynet.expire=1), so totals restart from 0 after an idle period; a
    consumer computing rates must treat a decrease as a reset.
    """
    out: dict[PipeKey, dict[str, int]] = {}
    for obj in listing.objects:
        if obj.link is not None and obj.link.number in pipes:
            out[pipes[obj.link.number]] = obj.totals()
    return out


_NO_REORDER = {"not", "!", "or", "{", "}", "(", ")", "|"}


def canonical_rule(tokens: Sequence[str]) -> tuple:
    """Rule tokens with the options after `to ADDR` sorted (recv/xmit/via keep their argument),
    so that ipfw printing options in another order does not read as a difference. Rules with
    boolean operators are compared token by token."""
    toks = list(tokens)
    comment = None
    if "//" in toks:
        i = toks.index("//")
        comment = " ".join(toks[i + 1:])
        toks = toks[:i]
    if "all" in toks[:4]:
        toks = [("ip" if t == "all" and k < 4 else t) for k, t in enumerate(toks)]
    if _NO_REORDER & set(toks) or "to" not in toks:
        return (tuple(toks), comment)
    t = toks.index("to")
    head, opts = toks[:t + 2], toks[t + 2:]
    groups: list[tuple[str, ...]] = []
    j = 0
    while j < len(opts):
        if opts[j] in ("recv", "xmit", "via") and j + 1 < len(opts):
            groups.append((opts[j], opts[j + 1]))
            j += 2
        else:
            groups.append((opts[j],))
            j += 1
    return (tuple(head), tuple(sorted(groups)), comment)


def rule_pipe(tokens: Sequence[str]) -> int | None:
    """The pipe a rule sends to (`[prob P] pipe N ...`), or None."""
    toks = list(tokens[2:]) if list(tokens[:1]) == ["prob"] else list(tokens)
    if len(toks) >= 2 and toks[0] == "pipe" and toks[1].isdigit():
        return int(toks[1])
    return None


TERMINATING = {"allow", "accept", "pass", "permit", "deny", "drop", "reject", "reset", "reset6", "unreach",
                "unreach6", "skipto", "pipe", "queue", "divert", "fwd", "forward", "nat", "netgraph", "call",
                "abort", "abort6"}


def listing_stream(name: str, argv: tuple[str, ...], counters_of: Callable[[DnListing], Mapping[PipeKey, dict[str, int]]]
                   ) -> CounterStream:
    """A counter stream over a sampler that prints `pipe show` listings between marker lines."""
    parser = SampleStreamParser(lambda text: read_pipes(text).listing)   # modern or classic

    def parse_line(line: str) -> list[CounterSample]:
        sample = parser.feed(line)
        if sample is None:
            return []
        t = time.time_ns()
        return [CounterSample(key, ctrs, t, host_clock=False) for key, ctrs in counters_of(sample.listing).items()]
    return CounterStream(name, argv, parse_line)


def rules_by_number(rules: Iterable[IpfwRule]) -> dict[int, list[IpfwRule]]:
    out: dict[int, list[IpfwRule]] = defaultdict(list)
    for r in rules:
        out[r.number].append(r)
    return dict(out)


def pipe_signature(obj: DnObject | None) -> str | None:
    """A pipe's configuration as printed, without the traffic-dependent numbers."""
    if obj is None:
        return None
    parts = [obj.link.render() if obj.link else ""]
    fs = obj.flowset
    if fs is not None:
        parts.append(f"q{fs.fs_nr} {fs.queue_text} plr {fs.plr_text or 0} buckets {fs.buckets} sched {fs.sched_nr} "
                     f"weight {fs.weight} lmax {fs.lmax} pri {fs.pri} {fs.qm}"
                     + (f" {fs.red.render().strip()}" if fs.red else "")
                     + (f" {fs.codel.render()}" if fs.codel else "") + (f" {fs.pie.render()}" if fs.pie else ""))
    if obj.flowset_mask:
        parts.append(obj.flowset_mask.render().strip())
    if obj.sched is not None:
        parts.append(f"sched {obj.sched.sched_nr} {obj.sched.type} flags 0x{obj.sched.flags:x}")
    if obj.sched_mask:
        parts.append(obj.sched_mask.render().strip())
    if obj.sched_params:
        parts.append(obj.sched_params.render().strip())
    if obj.profile:
        parts.append(obj.profile.render().strip())
    return " | ".join(" ".join(p.split()) for p in parts)
