"""Current rates while a run goes on (pure): per flow and per link, from the points the run's
samplers already produce. No new remote command: this only reads `subflow` and `iface`
points as the telemetry hub collects them.

- A flow's rate: the bytes its sockets moved over the last `WINDOW_S`, seen on the flow's
  client host (each socket once): per socket the larger of what was acknowledged (the client
  sends: iperf3) and what was received (the client receives: a BitTorrent leecher), summed
  over the flow's sockets (MPTCP subflows, parallel streams).
- A link's rate per direction: bytes leaving the link's bridge port towards that direction's
  receivers (`tx_bytes` of the b port: a->b; of the a port: b->a), the same definition the
  run summaries use (controller.results.summary.link_throughput).

Rates are differences of counters between the newest sample and the newest one at least
`WINDOW_S` older, so the 10 Hz sampling jitter does not show; a counter that went back
(a socket reused, an interface reset) gives no rate rather than a wrong one.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from controller.telemetry.points import Point

WINDOW_S = 1.0
KEEP_S = 3.0          # samples older than this (behind the newest) are dropped
STALE_S = 1.5         # a series with no sample this long before `now` has stopped moving data


@dataclass(frozen=True)
class LinkRate:
    link: str
    forward_bps: float | None     # a -> b
    reverse_bps: float | None     # b -> a


class _Series:
    """(time_ns, counter) samples of one counter, the last KEEP_S of them."""

    __slots__ = ("samples",)

    def __init__(self) -> None:
        self.samples: deque[tuple[int, int]] = deque()

    def add(self, t_ns: int, value: int) -> None:
        if self.samples and t_ns <= self.samples[-1][0]:
            return
        self.samples.append((t_ns, value))
        while self.samples and self.samples[0][0] < t_ns - int(KEEP_S * 1e9):
            self.samples.popleft()

    def rate_bps(self, now_ns: int) -> float | None:
        """bit/s over the last WINDOW_S (None: too few samples; 0.0: the series went quiet)."""
        if not self.samples:
            return None
        t1, v1 = self.samples[-1]
        if now_ns - t1 > int(STALE_S * 1e9):
            return 0.0
        older = [(t, v) for t, v in self.samples if t <= t1 - int(WINDOW_S * 1e9)]
        if not older:
            return None
        t0, v0 = older[-1]
        if v1 < v0 or t1 <= t0:
            return None
        return (v1 - v0) * 8 / ((t1 - t0) / 1e9)


class LiveRates:
    """Fed with a run's points as they come (`add`), answers the current rates (`flows`, `links`).

    `flow_clients` maps each flow name to its client host; `links` maps each link name to
    (bridge host, a port, b port)."""

    def __init__(self, flow_clients: Mapping[str, str], links: Mapping[str, tuple[str, str, str]]):
        self.flow_clients = dict(flow_clients)
        self.links = dict(links)
        self._ports = {(bridge, port): (link, "forward" if port == b else "reverse")
                       for link, (bridge, a, b) in self.links.items() for port in (a, b)}
        self._socket: dict[tuple[str, str, str], _Series] = {}   # (flow, subflow, counter) -> series
        self._iface: dict[tuple[str, str], _Series] = {}         # (link, direction) -> tx_bytes series
        self.newest_ns = 0

    def add(self, points: Iterable[Point]) -> None:
        for p in points:
            if p.measurement == "subflow":
                flow = p.tags.get("flow", "")
                if self.flow_clients.get(flow) != p.tags.get("host") or p.tags.get("role") != "client":
                    continue
                for counter in ("bytes_acked", "bytes_received"):
                    v = p.fields.get(counter)
                    if isinstance(v, int):
                        self._socket.setdefault((flow, p.tags.get("subflow", ""), counter), _Series()).add(p.time_ns, v)
            elif p.measurement == "iface":
                key = self._ports.get((p.tags.get("host", ""), p.tags.get("iface", "")))
                v = p.fields.get("tx_bytes")
                if key is None or not isinstance(v, int):
                    continue
                self._iface.setdefault(key, _Series()).add(p.time_ns, v)
            else:
                continue
            self.newest_ns = max(self.newest_ns, p.time_ns)

    def flow_bps(self, flow: str, now_ns: int) -> float | None:
        """The flow's rate now (None: no socket of it sampled long enough yet)."""
        per_socket: dict[str, list[float]] = {}
        for (f, sub, _counter), series in self._socket.items():
            if f != flow:
                continue
            r = series.rate_bps(now_ns)
            if r is not None:
                per_socket.setdefault(sub, []).append(r)
        if not per_socket:
            return None
        return sum(max(rs) for rs in per_socket.values())

    def flows(self, names: Sequence[str], now_ns: int) -> dict[str, float | None]:
        return {n: self.flow_bps(n, now_ns) for n in names}

    def link_rates(self, now_ns: int) -> list[LinkRate]:
        out = []
        for link in self.links:
            fwd = self._iface.get((link, "forward"))
            rev = self._iface.get((link, "reverse"))
            out.append(LinkRate(link, fwd.rate_bps(now_ns) if fwd else None, rev.rate_bps(now_ns) if rev else None))
        return out
