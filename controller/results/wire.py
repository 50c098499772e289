"""What leaves ctl for a reader (summary.json, `--json` output, exports): one time format and
the unit of every number. Pure.

Times: ISO 8601 in UTC with a `Z` and microseconds, `2026-11-22T04:18:17.381965Z` (`iso_utc`).
Durations are seconds (a `_s` suffix). Inside ctl, times are Unix seconds (floats) and
telemetry points nanoseconds; `to_wire` turns them into ISO 8601 where they leave, by name:
a number under a key whose last word names an instant (`start`, `end`, `created`, `finished`,
`t`, `time`, ... see `TIME_WORDS`) and that lies in the range of Unix seconds (2001..5138) or
of Unix nanoseconds is such a time. A key ending in `_ns` is a documented machine field (a
metric point's time) and is kept as it is; so is a duration (`_s`, `start_s`: seconds since
the traffic started, never in that range). Floats that are not finite (NaN, infinity: not
JSON) become null.

Units: a field's unit is spelt by its name's last word (`receiver_mbps` -> Mbit/s, `rtt_ms` ->
ms, `bytes_acked` -> bytes); `unit_of` reads it, `units_of` lists the unit of every field of a
summary (summary.json's `units` map).
"""
from __future__ import annotations

import datetime as dt
import math
import re
from typing import Any

# Unix seconds from 2001-09-09 to 5138 (a duration never comes near 1e9 s: 31 years).
_SECONDS = (1e9, 1e11)
_NANOS = (1e18, 1e20)
# The last word of a key that names an instant.
TIME_WORDS = frozenset({"start", "end", "created", "finished", "finish", "started", "ended", "updated", "time",
                        "t", "at", "since", "until", "submitted", "claimed", "deadline", "expires", "begin",
                        "stopped", "modified", "timestamp", "ts", "when", "heartbeat", "seen", "not_before",
                        "claim_until", "from", "to", "ends", "starts"})
_ISO_NAIVE = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?")


def iso_utc(seconds: float) -> str:
    """Unix seconds -> `2026-11-22T04:18:17.381965Z`."""
    t = dt.datetime.fromtimestamp(seconds, dt.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def iso_utc_ns(ns: int) -> str:
    """Unix nanoseconds -> ISO 8601 UTC (microseconds: the sub-microsecond part is dropped)."""
    s, rem = divmod(int(ns), 1_000_000_000)
    t = dt.datetime.fromtimestamp(s, dt.timezone.utc) + dt.timedelta(microseconds=rem // 1000)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def is_time_key(key: str) -> bool:
    k = key.lower()
    if k.endswith("_ns"):
        return False
    return k in TIME_WORDS or k.rsplit("_", 1)[-1] in TIME_WORDS


def wire_time(key: str, value: Any) -> Any:
    """`value` as ISO 8601 when `key` names an instant and `value` is Unix seconds or
    nanoseconds; else `value` unchanged."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not is_time_key(key):
        return value
    if not math.isfinite(value):
        return None
    if _SECONDS[0] <= value < _SECONDS[1]:
        return iso_utc(float(value))
    if _NANOS[0] <= value < _NANOS[1]:
        return iso_utc_ns(int(value))
    return value


def to_wire(obj: Any, key: str = "") -> Any:
    """A JSON-ready copy of `obj` (dicts, lists, scalars) with every time as ISO 8601 (see the
    module doc) and non-finite floats as None. Iterative depth is the document's."""
    if isinstance(obj, dict):
        return {k: to_wire(v, str(k)) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_wire(v, key) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return wire_time(key, obj) if key else obj


def naive_times(obj: Any, path: str = "") -> list[str]:
    """Where `obj` holds a date-time string without a zone, or a number `to_wire` would have
    turned into one (for tests: output that leaves ctl must have neither)."""
    out: list[str] = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += naive_times(v, f"{path}.{k}" if path else str(k))
            if isinstance(v, (int, float)) and not isinstance(v, bool) and wire_time(str(k), v) != v:
                out.append(f"{path}.{k}" if path else str(k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += naive_times(v, f"{path}[{i}]")
    elif isinstance(obj, str) and _ISO_NAIVE.fullmatch(obj.strip()):
        out.append(path)
    return out


# ---- units ------------------------------------------------------------------------------------

# The unit a field's last word (or last two) names. Counts of events are "count".
_SUFFIX_UNITS: tuple[tuple[str, str], ...] = (
    ("_mbps", "Mbit/s"), ("_kbps", "kbit/s"), ("_gbps", "Gbit/s"), ("_bps", "bit/s"), ("_pps", "packets/s"),
    ("_ms", "ms"), ("_us", "us"), ("_ns", "ns"), ("_s", "s"), ("_pct", "%"), ("_pp", "percentage points"),
    ("_bytes", "bytes"), ("_kib", "KiB"), ("_mib", "MiB"), ("_pkts", "packets"), ("_packets", "packets"),
    ("_dbm", "dBm"), ("_db", "dB"), ("_mhz", "MHz"), ("_khz", "kHz"), ("_mps", "m/s"), ("_deg", "degrees"),
    ("_m", "m"), ("_octets", "bytes"), ("_segs", "segments"),
)
_WHOLE_UNITS = {
    "bytes": "bytes", "bytes_received": "bytes", "bytes_sent": "bytes", "bytes_acked": "bytes",
    "bytes_retrans": "bytes", "sender_bytes": "bytes", "seconds": "s", "retransmits": "segments",
    "retrans_total": "segments", "samples": "count", "connections": "count", "starved": "count",
    "jain": "1", "jain_index": "1", "ratio": "1", "ratio_receiver": "1", "mptcp_over_tcp": "1",
    "monitor_connections": "count", "joins_completed": "count", "streams": "count", "repetition": "count",
    "lat": "degrees", "lon": "degrees", "seq": "count", "n": "count", "subflows_added": "count",
    "packets_per_connection": "packets",
    # a unit word alone (`subflows[].mbps`): the suffix rule needs a name before it
    "mbps": "Mbit/s", "kbps": "kbit/s", "gbps": "Gbit/s", "bps": "bit/s", "pps": "packets/s", "ms": "ms",
    "us": "us", "pct": "%",
}


def unit_of(field: str) -> str | None:
    """The unit a field name spells, or None when it names none (a name, a flag, a count of
    something the name does not say)."""
    f = field.rsplit(".", 1)[-1].lower()
    if f in _WHOLE_UNITS:
        return _WHOLE_UNITS[f]
    for suffix, unit in _SUFFIX_UNITS:
        if f.endswith(suffix) and len(f) > len(suffix):
            return unit
    if f.startswith(("rx_bytes", "tx_bytes", "in_octets", "out_octets")):
        return "bytes"
    if f.endswith(("_packets", "_pkts")) or f.startswith(("rx_packets", "tx_packets", "rx_dropped", "tx_dropped")):
        return "packets"
    return None


def units_of(summary: Any) -> dict[str, str]:
    """field name -> unit, for every numeric field anywhere in a summary whose name spells one
    (sorted by name). A name means the same unit wherever it occurs."""
    out: dict[str, str] = {}
    stack = [summary]
    while stack:
        o = stack.pop()
        if isinstance(o, dict):
            for k, v in o.items():
                if isinstance(v, (dict, list)):
                    stack.append(v)
                elif isinstance(v, (int, float)) and not isinstance(v, bool):
                    u = unit_of(str(k))
                    if u is not None:
                        out[str(k)] = u
        elif isinstance(o, list):
            stack.extend(x for x in o if isinstance(x, (dict, list)))
    return dict(sorted(out.items()))
