"""Helpers shared by the scenarios of issue 6 (pure: inventory and measured data in, values out).

- addresses: which address pair makes a connection take a given link;
- socket buffers sized to a path's bandwidth-delay product (the per-namespace TCP autotuning
  limits; ctl records them in the plan and restores them after the run);
- the 1-BDP bottleneck queue within what each bridge back-end can hold;
- rates over a time window from iperf3 intervals, subflow samples and interface counters.
"""
from __future__ import annotations

import math
import statistics
from typing import Any, Iterable, Mapping, Sequence

from bridges.base import shaper_class
from bridges.dummynet.queues import queue_for_bdp
from controller.inventory import Inventory
from controller.results.summary import counter_rate
from controller.units import Conversion, Queue, bdp_bytes, format_bytes

# Linux's own first two values of tcp_rmem / tcp_wmem (min, default); ctl raises only the max.
TCP_RMEM_MIN_DEFAULT = (4096, 131072)
TCP_WMEM_MIN_DEFAULT = (4096, 16384)
MIB = 1 << 20


# ---- addresses and links ------------------------------------------------------------------------


# ---- socket buffers and queues ----------------------------------------------------------------

def tcp_buffer_sysctls(need_bytes: int) -> dict[str, str]:
    """tcp_rmem / tcp_wmem whose maximum lets autotuning reach `need_bytes` of window.

    Linux grants about half of a receive buffer to the window (tcp_adv_win_scale, or the
    measured scaling ratio), and a sender keeps every unacknowledged byte: both maxima get
    twice the need, rounded up to MiB, never below 32 MiB (this machine's own default max
    for tcp_rmem). Values are what `sysctl` prints (single spaces) so they verify exactly."""
    top = max(32 * MIB, -(-2 * need_bytes // MIB) * MIB)
    return {"net.ipv4.tcp_rmem": f"{TCP_RMEM_MIN_DEFAULT[0]} {TCP_RMEM_MIN_DEFAULT[1]} {top}",
            "net.ipv4.tcp_wmem": f"{TCP_WMEM_MIN_DEFAULT[0]} {TCP_WMEM_MIN_DEFAULT[1]} {top}"}


def window_need(bw_bps: int, rtt_us: int, queue: Queue, mtu: int = 1500) -> int:
    """Bytes a single flow can have in flight: the path's BDP plus the bottleneck queue."""
    q = queue.bytes if queue.bytes is not None else (queue.slots or 0) * mtu
    return bdp_bytes(bw_bps, rtt_us) + q


def queue_limits(inv: Inventory, bridge: str) -> dict[str, int]:
    """How big a queue the bridge's back-end can hold (slots, bytes), for queue_for_bdp."""
    return _shaper_of(inv, bridge).queue_limits(inv, bridge)


def _shaper_of(inv: Inventory, bridge: str) -> type:
    shaper = inv.hosts[bridge].shaper
    return shaper_class(shaper.kind if shaper is not None else "tc")


def bdp_queue(inv: Inventory, bridge: str, bw_bps: int, rtt_us: int, factor: float = 1.0, *,
              what: str = "bottleneck queue", conversions: list[Conversion] | None = None) -> Queue:
    """`factor` x the BDP within what the bridge's back-end holds; each rounding or cap is
    appended to `conversions`, naming the bridge and its limit."""
    cls = _shaper_of(inv, bridge)
    names = getattr(cls, "queue_limit_names", ("slot limit", "byte limit"))
    return queue_for_bdp(bw_bps, rtt_us, factor, what=what, limits_of=f"{bridge} ({cls.kind})", limit_names=names,
                         conversions=conversions, **queue_limits(inv, bridge))


def buffer_conversion(hosts: Sequence[str], sysctls: Mapping[str, str], need_bytes: int) -> Conversion:
    """The socket-buffer maxima a plan sets on its endpoints, as an entry of the plan's conversions:
    the researcher did not ask for them, they replace the hosts' own values for the run."""
    top = int(sysctls["net.ipv4.tcp_rmem"].split()[-1])
    return Conversion(f"socket buffers of {', '.join(hosts)}",
                      "the hosts' own net.ipv4.tcp_rmem / tcp_wmem maxima",
                      f"{format_bytes(top)} for the run (restored after it)",
                      f"so autotuning can reach a window of BDP + bottleneck queue = {format_bytes(need_bytes)}; "
                      "Linux gives about half of a buffer to the window, and ctl never sets less than 32 MiB")


# Linux (6.12+) gives up MPTCP on a connection whose MP_CAPABLE SYN was retransmitted
# `syn_retrans_before_tcp_fallback` (2) times, 1 s apart, and then calls the path a
# "blackhole": MPTCP stays off for new connections of that host for `blackhole_timeout`
# (3600 s). A cold path answers after ARP + SYN = 2 RTTs, so from 500 ms of RTT on the first
# connection of a run can fall back to TCP (seen on the virtual rack at 800 ms one-way) and
# take MPTCP away for an hour. On such paths ctl lets the SYN wait as long as plain TCP
# does and switches the blackhole heuristic off on the MPTCP client (recorded, restored).
LONG_RTT_US = 500_000


# Kernel 6.12+ knobs: set where they exist (optional sysctls), absent and harmless before.
LONG_PATH_KEYS = ("net.mptcp.syn_retrans_before_tcp_fallback", "net.mptcp.blackhole_timeout")


def mptcp_long_path_sysctls(rtt_us: int) -> dict[str, str]:
    if rtt_us < LONG_RTT_US:
        return {}
    return dict(zip(LONG_PATH_KEYS, ("6", "0")))


def long_path_conversions(host: str, rtt_us: int) -> list[Conversion]:
    """mptcp_long_path_sysctls as an entry of the plan's conversions (none below LONG_RTT_US)."""
    if rtt_us < LONG_RTT_US:
        return []
    return [Conversion(f"MPTCP fallback on {host}",
                       "the kernel's net.mptcp.syn_retrans_before_tcp_fallback (2) and blackhole_timeout (3600 s), "
                       "where it has them (Linux 6.12+)",
                       "6 SYN retransmissions and no blackhole detection, for the run (restored after it)",
                       f"on a path of {rtt_us / 1000:g} ms RTT (from {LONG_RTT_US // 1000} ms on) a first MP_CAPABLE "
                       "SYN can be retransmitted twice, and Linux would fall back to TCP and keep MPTCP off for an "
                       "hour")]


# ---- rates over windows -------------------------------------------------------------------------

def interval_rate(intervals: Sequence[tuple[float, float, float]], lo: float, hi: float) -> float | None:
    """Mean bit/s of iperf3 intervals (start s, end s, bit/s) over [lo, hi] (same time base),
    each interval weighted by its overlap with the window."""
    num = den = 0.0
    for s, e, bps in intervals:
        ov = min(e, hi) - max(s, lo)
        if ov > 0:
            num += bps * ov
            den += ov
    return num / den if den > 0 else None


def iface_counter_rate(points: Iterable[Any], host: str, iface: str, field: str, lo: float, hi: float) -> float | None:
    """Mean bit/s of an interface byte counter (`rx_bytes` / `tx_bytes`) across [lo, hi] (epoch s)."""
    lo_ns, hi_ns = int(lo * 1e9), int(hi * 1e9)
    samples = sorted((p.time_ns, int(p.fields[field])) for p in points
                     if p.measurement == "iface" and p.tags.get("host") == host and p.tags.get("iface") == iface
                     and field in p.fields and lo_ns <= p.time_ns <= hi_ns)
    rate = counter_rate(samples)
    return None if rate is None else rate * 8


def iface_series(points: Iterable[Any], host: str, iface: str, field: str = "rx_bps") -> list[tuple[float, float]]:
    return sorted((p.time_ns / 1e9, float(p.fields[field])) for p in points
                  if p.measurement == "iface" and p.tags.get("host") == host and p.tags.get("iface") == iface
                  and field in p.fields)


def stats(values: Sequence[float]) -> dict[str, float | int | None]:
    xs = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not xs:
        return {"n": 0, "mean": None, "median": None, "min": None, "max": None, "stdev": None}
    return {"n": len(xs), "mean": round(statistics.fmean(xs), 3), "median": round(statistics.median(xs), 3),
            "min": round(min(xs), 3), "max": round(max(xs), 3),
            "stdev": round(statistics.stdev(xs), 3) if len(xs) > 1 else 0.0}


def pct(x: float | None, of: float) -> float | None:
    return None if x is None or not of else round(100.0 * x / of, 2)


def paper_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> dict:
    """The table of the paper this run fills, as data for summary.json (render prints it)."""
    return {"title": title, "columns": list(columns), "rows": [list(r) for r in rows]}


def pipe_window(points: Iterable[Any], bridge: str, link: str, direction: str, lo: float, hi: float
                ) -> list[Mapping[str, Any]]:
    """The `pipe` samples (their fields, in time order) of one direction of a bridge's link within
    [lo, hi] s (shapers that stream pipe counters: dnpipe, dummynet)."""
    lo_ns, hi_ns = int(lo * 1e9), int(hi * 1e9)
    pts = sorted(((p.time_ns, p.fields) for p in points
                  if p.measurement == "pipe" and p.tags.get("host") == bridge and p.tags.get("link") == link
                  and p.tags.get("direction") == direction and lo_ns <= p.time_ns <= hi_ns),
                 key=lambda tf: tf[0])
    return [f for _, f in pts]


def pipe_ends(points: Iterable[Any], bridge: str, link: str, direction: str, lo: float, hi: float
              ) -> tuple[Mapping[str, Any], Mapping[str, Any]] | None:
    """The first and last `pipe` samples (their fields) of one direction of a bridge's link within
    [lo, hi] s; None with fewer than two."""
    pts = pipe_window(points, bridge, link, direction, lo, hi)
    if len(pts) < 2:
        return None
    return pts[0], pts[-1]
