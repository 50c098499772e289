"""Every time in a run record's files, declared once: where it sits, how format 2 writes it and
how a reader gets the number back. Pure.

Inside ctl a time is a number (Unix seconds as a float; Unix nanoseconds under a key ending in
`_ns`). Record format 2 writes each declared time as ISO 8601 UTC with microseconds and a `Z`,
`2026-11-27T12:29:46.504719Z` (`controller.results.wire.iso_utc`, the form of summary.json and
`--json` output); reading converts it back to the number (exact to the microsecond). A time under
a key ending in `_ns` is written under the key without it (`time_ns` -> `time`). Durations stay
seconds (keys ending `_s`, `duration`) and are not declared here. Format 1 wrote the numbers
themselves: `decode` passes a number through, so a format-1 line (or a format-1 file a newer ctl
appended format-2 lines to) reads the same.

A path names where a time sits: keys separated by `.`, `*` for every key of a mapping, `[]` after
a step for every element of the list it names, `[N]` for its element N.
"""
from __future__ import annotations

import calendar
import datetime as dt
import math
import re
import time
from typing import Any, Callable

from controller.results.wire import iso_utc, iso_utc_ns

# The one list. processes.jsonl's entries are the manifest's `processes[]` entries.
COMMAND_TIMES: tuple[str, ...] = ("started",)
PROCESS_TIMES: tuple[str, ...] = ("started", "host_start")
MANIFEST_TIMES: tuple[str, ...] = (
    "created", "finished", "figures_drawn", "phases[].t", "errors[].t", "recovery.t",
    "traffic_window.start", "traffic_window.end",
    "startup.planned", "startup.imported", "startup.rack_held", "startup.checked",
    "clock_offsets.*[].measured_at",
    "controller_loop.all.worst_at", "controller_loop.traffic.worst_at", "controller_loop.stalls[].at",
    # iperf3 flows (controller.traffic.iperf3.FlowRun) and BitTorrent downloads (bittorrent.BtDownload)
    "flows[].client_spawned", "flows[].client_started", "flows[].client_exited",
    "flows[].seeder_started", "flows[].seeder_ready", "flows[].first_output", "flows[].done_at",
    "flows[].exited", "flows[].ended_at", "flows[].leecher_lines[][0]",
    "telemetry.snmp_events[].time_ns",
    "field.hosts.*.fetched", "field.hosts.*.starts[].t",
    *(f"processes[].{p}" for p in PROCESS_TIMES),
)
FILES: dict[str, tuple[str, ...]] = {"manifest.json": MANIFEST_TIMES, "commands.jsonl": COMMAND_TIMES,
                                     "processes.jsonl": PROCESS_TIMES}

_SEGMENT = re.compile(r"(\*|[A-Za-z_][A-Za-z0-9_]*)((?:\[\d*\])*)")
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_ISO_MAX = 40           # characters: longer is not one of our times (and is never parsed)
_Step = tuple[str, Any]     # ("key", name) | ("any", None) | ("each", None) | ("index", n)


def _steps(path: str) -> list[_Step]:
    out: list[_Step] = []
    for seg in path.split("."):
        m = _SEGMENT.fullmatch(seg)
        if m is None:
            raise ValueError(f"bad time path {path!r}")
        out.append(("any", None) if m.group(1) == "*" else ("key", m.group(1)))
        for idx in re.findall(r"\[(\d*)\]", m.group(2)):
            out.append(("each", None) if idx == "" else ("index", int(idx)))
    return out


def wire_path(path: str) -> str:
    """The path a declared time has in a format-2 file (a last key `x_ns` is written as `x`)."""
    head, _, last = path.rpartition(".")
    if last.endswith("_ns"):
        last = last[:-3]
    return f"{head}.{last}" if head else last


def _unit(path: str) -> str:
    return "ns" if path.rpartition(".")[2].endswith("_ns") else "s"


_COMPILED: dict[str, list[_Step]] = {}


def _compiled(path: str) -> list[_Step]:
    s = _COMPILED.get(path)
    if s is None:
        s = _COMPILED[path] = _steps(path)
    return s


def _plain(node: Any) -> Any:
    """An object the manifest holds before it is written (a `to_json`, a tuple) as JSON would see it."""
    if isinstance(node, (dict, list)):
        return node
    if isinstance(node, tuple):
        return list(node)
    if hasattr(node, "to_json"):
        return node.to_json()
    return node


def _apply(node: Any, steps: list[_Step], leaf: Callable[[Any], Any], rename: str | None) -> Any:
    """`node` with `leaf` applied to every value `steps` reach; copies only what it changes."""
    node = _plain(node)
    kind, arg = steps[0]
    last = len(steps) == 1
    if kind in ("key", "any"):
        if not isinstance(node, dict):
            return node
        keys = [arg] if kind == "key" else list(node)
        out: dict | None = None
        for k in keys:
            if k not in node:
                continue
            new = leaf(node[k]) if last else _apply(node[k], steps[1:], leaf, rename)
            if last and rename is not None and rename != k:
                base = out if out is not None else node
                out = {(rename if kk == k else kk): (new if kk == k else vv) for kk, vv in base.items()}
            elif new is not node[k]:
                out = dict(node) if out is None else out
                out[k] = new
        return node if out is None else out
    if not isinstance(node, list):
        return node
    idxs = range(len(node)) if kind == "each" else ([arg] if arg < len(node) else [])
    lst: list | None = None
    for i in idxs:
        new = leaf(node[i]) if last else _apply(node[i], steps[1:], leaf, rename)
        if new is not node[i]:
            lst = list(node) if lst is None else lst
            lst[i] = new
    return node if lst is None else lst


def _to_iso(unit: str) -> Callable[[Any], Any]:
    def conv(v: Any) -> Any:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return v            # None, or already a string
        if not math.isfinite(v):
            return None
        return iso_utc_ns(int(v)) if unit == "ns" else iso_utc(float(v))
    return conv


def parse_iso(text: str) -> dt.datetime | None:
    """An ISO 8601 time WITH a zone (`...Z`, `+00:00`), else None."""
    if not isinstance(text, str) or len(text) > _ISO_MAX:
        return None
    try:
        t = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return t if t.tzinfo is not None else None


def iso_seconds(text: str) -> float | None:
    """ISO 8601 with a zone -> Unix seconds (None: not such a time)."""
    t = parse_iso(text)
    return None if t is None else (t - _EPOCH) / dt.timedelta(seconds=1)


def microsecond(seconds: float) -> float:
    """Unix seconds as format 2 keeps them (to the microsecond): a difference of two of these is the
    same whether the times come from memory or from a record read back."""
    t = iso_seconds(iso_utc(seconds))
    assert t is not None
    return t


def _from_iso(unit: str) -> Callable[[Any], Any]:
    def conv(v: Any) -> Any:
        t = parse_iso(v) if isinstance(v, str) else None
        if t is None:
            return v            # a number (format 1), None, or not a time: as it is
        if unit == "ns":
            return (t - _EPOCH) // dt.timedelta(microseconds=1) * 1000
        return (t - _EPOCH) / dt.timedelta(seconds=1)
    return conv


def encode(doc: Any, paths: tuple[str, ...]) -> Any:
    """`doc` as format 2 writes it: every time at `paths` ISO 8601 UTC (a copy where changed)."""
    for p in paths:
        w = wire_path(p)
        doc = _apply(doc, _compiled(p), _to_iso(_unit(p)), w.rpartition(".")[2] if w != p else None)
    return doc


def decode(doc: Any, paths: tuple[str, ...]) -> Any:
    """`doc` as a reader holds it: every time at `paths` the number again (format-1 numbers as they are)."""
    for p in paths:
        w = wire_path(p)
        doc = _apply(doc, _compiled(w), _from_iso(_unit(p)), p.rpartition(".")[2] if w != p else None)
    return doc


# ---- a process's start time on its host ---------------------------------------------------------

_LSTART = "%a %b %d %H:%M:%S %Y"


def lstart_utc(text: str | None) -> float | None:
    """`ps -o lstart=` printed under TZ=UTC0 (`Fri Nov 27 12:29:46 2026`) -> Unix seconds; None
    when it is not that (empty, another layout). ps pads the day with a space; words are rejoined."""
    if not isinstance(text, str) or not text.strip() or len(text) > 64:
        return None
    try:
        return float(calendar.timegm(time.strptime(" ".join(text.split()), _LSTART)))
    except ValueError:
        return None

