"""MCubic's own HyStart exits in a run's summary, with whose they are (pure).

mcubic.bpf.c counts how often its HyStart ended slow start (`ctl_hystart_train`, `ctl_hystart_delay`:
global counters of the loaded program). hostctl reads them when the last holder unloads the program
(nodes/congestion/hostctl.py `hystart_exits`), and the run record keeps them per host that unloaded it
(`congestion.hosts.<host>.hystart_exits`). The counters are the program's, not a socket's or a host's:
every connection that ran that program while it was loaded adds to them. A BPF congestion control is
kernel-wide: on the virtual rack all hosts are namespaces of one kernel and share one program, and two
runs (two racks, two checkouts) that ask for the same program at once share it too (hostctl's holders).

So a count is given as a sender's only when it can be nobody else's:
- the program was loaded for this run: no holder had it when the run read the host before loading it;
- no other holder held it while it was loaded: hostctl's `holders_seen` (every holder since it was
  registered, reported at the unload) is this run's holder alone;
- no other sender of this run ran it on the same kernel (same boot id). When others did, the count is
  given with the hosts it covers (this run's, together), never as one sender's.
Otherwise the summary says "kernel-wide, shared with <n> other holders" (or why it was not read) and gives
no number. `attach_own_hystart` puts this into `sender_counters.<host>.own_hystart_exits` once the
run's restore (the unload) has happened.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from nodes.congestion.catalog import ALGORITHMS

OWN_HYSTART_DEFINITION = (
    "own_hystart_exits: for a sender whose flows run one of ctl's mcubic builds with HyStart, the program's own "
    "counts of slow starts its HyStart ended (ack_train, delay; mcubic.bpf.c's counters, read by hostctl when the "
    "program is unloaded: whole run), with `attribution`. They are the loaded program's, i.e. every connection that "
    "ran it while it was loaded; given only when that is this run: loaded for this run and held by no other holder "
    "meanwhile (hostctl's holders_seen), `hosts` naming the senders of this run whose connections they count (one "
    "kernel: the virtual rack's hosts share one program). Otherwise null, and `attribution` says why (kernel-wide, "
    "shared with other holders; or not read)")


def own_hystart(name: str) -> bool:
    """ctl's mcubic builds with HyStart (all but mcubic_nohs: -DMC_NOHS)."""
    a = next((x for x in ALGORITHMS.values() if name in (x.name, x.trace_name)), None)
    return a is not None and a.source == "mcubic.bpf.c" and "MC_NOHS" not in a.defines


def _holders(state: Any, algorithm: str) -> list[str]:
    if not isinstance(state, Mapping):
        return []
    entry = (state.get("holders") or {}).get(algorithm)
    names = entry.get("holders") if isinstance(entry, Mapping) else None
    return [str(x) for x in names] if isinstance(names, list) else []


def attribution(congestion: Mapping[str, Any] | None, host: str, algorithm: str,
                runs: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """Whose `algorithm`'s own HyStart exits are, as seen from sender `host` (module doc). `congestion`:
    the run record's `congestion` section; `runs`: each sender host of this run -> the congestion
    controls its flows run. Returns {program, ack_train, delay, attribution[, hosts][, other_holders]}."""
    out: dict[str, Any] = {"program": algorithm, "ack_train": None, "delay": None}
    hosts = (congestion or {}).get("hosts") or {}
    me = (congestion or {}).get("holder")
    if host not in hosts or not me:
        out["attribution"] = "not read: this run did not load ctl's programs on this host"
        return out

    def boot(h: str) -> str:
        return str(((hosts.get(h) or {}).get("before") or {}).get("boot_id") or "")
    kernel = [h for h in sorted(hosts) if h == host or (boot(host) and boot(h) == boot(host))]
    counts, seen, read_on = None, None, None
    others: set[str] = set()
    for h in kernel:
        rec = hosts[h] or {}
        for st in ("before", "applied", "restored"):
            others.update(_holders(rec.get(st), algorithm))
        exits = (rec.get("hystart_exits") or {}).get(algorithm)
        if isinstance(exits, Mapping) and counts is None:
            counts, read_on = exits, h
            seen = (rec.get("holders_seen") or {}).get(algorithm)
            others.update(str(x) for x in seen or [])
    others.discard(me)
    if others:
        out["other_holders"] = len(others)
        out["attribution"] = (f"kernel-wide, shared with {len(others)} other holder{'s' if len(others) != 1 else ''} "
                              "(another run held the program while it counted): no per-sender number")
        return out
    if counts is None:
        out["attribution"] = ("not read: this run did not unload the program (its restore did not reach the "
                              "unload, or hostctl did not report the counters)")
        return out
    if seen is None:
        out["attribution"] = (f"not attributed: {read_on}'s hostctl did not say which holders the program had "
                              "(an entry registered by an older ctl): no per-sender number")
        return out
    senders = [h for h in kernel if algorithm in runs.get(h, ())] or [host]
    out.update(ack_train=counts.get("ack_train"), delay=counts.get("delay"), hosts=senders)
    if senders == [host]:
        out["attribution"] = f"{host}'s: loaded for this run, no other holder, no other sender of this run on its kernel"
    else:
        out["attribution"] = (f"this run's senders {', '.join(senders)} together (one kernel, one program): not "
                              f"{host}'s alone")
    return out


def attach_own_hystart(summary: dict | None, congestion: Mapping[str, Any] | None) -> dict | None:
    """Add `own_hystart_exits` (algorithm -> attribution) to each sender of `summary["sender_counters"]`
    whose flows run an mcubic build with HyStart (`hystart_not_counted_for` lists its flows' algorithms
    other than Linux's cubic); returns `summary`. Call it once the run's restore has happened."""
    senders = (summary or {}).get("sender_counters")
    if not isinstance(senders, dict):
        return summary
    runs = {h: [a for a in (e or {}).get("hystart_not_counted_for") or [] if isinstance(a, str)]
            for h, e in senders.items()}
    for h, e in senders.items():
        mine = [a for a in runs[h] if own_hystart(a)]
        if mine and isinstance(e, dict):
            e["own_hystart_exits"] = {a: attribution(congestion, h, a, runs) for a in mine}
    return summary


def own_hystart_text(entry: Mapping[str, Any]) -> str:
    """The sender's own HyStart exits for the terminal line: `mcubic's own HyStart train 2, delay 1` (with
    the hosts when they are several), or why there is no number."""
    parts = []
    for a, x in (entry.get("own_hystart_exits") or {}).items():
        if x.get("ack_train") is None:
            parts.append(f"{a}'s own HyStart: {x.get('attribution')}")
        else:
            whose = "" if len(x.get("hosts") or []) <= 1 else f" ({' + '.join(x['hosts'])} together)"
            parts.append(f"{a}'s own HyStart train {x['ack_train']}, delay {x['delay']}{whose}")
    return "; ".join(parts)
