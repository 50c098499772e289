"""IF-MIB counter tracking (pure, no I/O): raw samples in, deltas and rates out, or a refusal
with its reason; and the plain Point and Event records the poller emits (the package
docstring explains the timing and the counter semantics).
"""
from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

from controller.errors import ParameterError


SYS_UPTIME = "1.3.6.1.2.1.1.3.0"


IF_NAME = "1.3.6.1.2.1.31.1.1.1.1"


IF_HC_IN_OCTETS = "1.3.6.1.2.1.31.1.1.1.6"


IF_HC_IN_UCAST = "1.3.6.1.2.1.31.1.1.1.7"


IF_HC_OUT_OCTETS = "1.3.6.1.2.1.31.1.1.1.10"


IF_HC_OUT_UCAST = "1.3.6.1.2.1.31.1.1.1.11"


IF_HIGH_SPEED = "1.3.6.1.2.1.31.1.1.1.15"


IF_COUNTER_DISCONTINUITY = "1.3.6.1.2.1.31.1.1.1.19"


IF_IN_DISCARDS = "1.3.6.1.2.1.2.2.1.13"


IF_IN_ERRORS = "1.3.6.1.2.1.2.2.1.14"


# field name -> (column OID, counter bits, unit kind)
COUNTERS: dict[str, tuple[str, int, Literal["octets", "packets"]]] = {
    "in_octets": (IF_HC_IN_OCTETS, 64, "octets"),
    "out_octets": (IF_HC_OUT_OCTETS, 64, "octets"),
    "in_ucast_pkts": (IF_HC_IN_UCAST, 64, "packets"),
    "out_ucast_pkts": (IF_HC_OUT_UCAST, 64, "packets"),
    "in_discards": (IF_IN_DISCARDS, 32, "packets"),
    "in_errors": (IF_IN_ERRORS, 32, "packets"),
}


# counter field -> (rate field, multiplier): octets/s x 8 = bit/s
RATE_FIELDS: dict[str, tuple[str, int]] = {
    "in_octets": ("in_bps", 8),
    "out_octets": ("out_bps", 8),
    "in_ucast_pkts": ("in_pps", 1),
    "out_ucast_pkts": ("out_pps", 1),
    "in_discards": ("in_discards_pps", 1),
    "in_errors": ("in_errors_pps", 1),
}


MEASUREMENT = "snmp_if"


EVENT_MEASUREMENT = "snmp_event"


# Anything above 1.6 Tbit/s is not a real port today; the recorded Siemens switch reports
# ifHighSpeed in bit/s (10000000 "Mbit/s" for a 10 Mbit/s port).
MAX_PLAUSIBLE_SPEED_MBPS = 1_600_000


# Smallest Ethernet frame on the wire: 64 bytes + 8 preamble + 12 inter-frame gap.
MIN_WIRE_FRAME_BYTES = 84


WRAP_SLACK = 1.10


@dataclass(frozen=True)
class RefreshModel:
    """How an agent refreshes the counter values it serves.

    period_cs: values may be up to this old (centiseconds); 0 = the agent reads live values.
    periodic: reloads happen on a fixed timer every `period_cs` (net-snmp), so two reloads
      are a whole number of periods apart; False = on demand / unknown schedule.
    jitter_cs: timer jitter tolerated on the periodic schedule (measured: +-2 cs).
    max_time_error: largest tolerated uncertainty of a rate's interval, as a fraction of it.
    """

    period_cs: int = 300
    periodic: bool = True
    jitter_cs: int = 5
    max_time_error: float = 0.10

    def __post_init__(self) -> None:
        if self.period_cs < 0 or self.jitter_cs < 0 or not 0 < self.max_time_error < 1:
            raise ParameterError("RefreshModel: period_cs, jitter_cs >= 0 and 0 < max_time_error < 1")


    @classmethod
    def from_snmp(cls, snmp: Any) -> "RefreshModel":
        """The model an inventory `snmp` section declares (refresh_s, refresh_periodic)."""
        period_cs = round(snmp.refresh_s * 100)
        return cls(period_cs=period_cs, periodic=bool(snmp.refresh_periodic) and period_cs > 0)


# net-snmp 5.9 IF-MIB cache: reloaded by a 3 s repeating alarm, and on demand when a request finds it
# older than 3 s (agent/helpers/cache_handler.c: netsnmp_cache_check_and_reload on every GET). On a quiet
# agent the alarm reloads at the expiry and the values change on the 3 s grid; when the agent runs late,
# a request reloads at the expiry and the late alarm again right after: check 2b sees two changes closer
# than the period and the tracker drops the grid (refresh_mismatch), as it must.
NET_SNMP = RefreshModel()


LIVE = RefreshModel(period_cs=0, periodic=False)    # agent reads counters on every request


@dataclass(frozen=True)
class CounterSample:
    """One raw reading of one counter.

    value: the raw counter value as the agent returned it.
    uptime_cs: the agent's sysUpTime read in the same request (None if it has none).
    recv_ns: local wall-clock receive time (ns since the epoch): the point's timestamp.
    mono_ns: local monotonic receive time (ns), for elapsed-time checks (default: recv_ns).
    discontinuity_cs: ifCounterDiscontinuityTime of the row, if the agent provides it.
    sent_mono_ns: local monotonic time (ns) the request was sent (default: mono_ns). The agent
      read its values somewhere between sending and receipt; on a loaded controller the reply
      can wait seconds in the event loop before it is taken in (3.7 s measured), so the receipt
      time alone overstates the time that passed at the agent.
    """

    value: int
    uptime_cs: int | None
    recv_ns: int
    mono_ns: int | None = None
    discontinuity_cs: int | None = None
    sent_mono_ns: int | None = None

    @property
    def mono(self) -> int:
        return self.recv_ns if self.mono_ns is None else self.mono_ns

    @property
    def sent_mono(self) -> int:
        return self.mono if self.sent_mono_ns is None else min(self.sent_mono_ns, self.mono)


def least_elapsed_cs(sent_mono_ns: int, prev_recv_mono_ns: int) -> float:
    """The least real time (cs) between an agent's answers to two requests: from the receipt of
    the earlier answer to the sending of the later request (each answer was made in its
    request's [sent, received] window). Never less than 0."""
    return max(0.0, (sent_mono_ns - prev_recv_mono_ns) / 1e7)


def restart_suspected(advanced_cs: float, least_cs: float) -> bool:
    """sysUpTime advanced clearly less than the least real time that passed: the agent restarted
    (or its clock stopped) in between. Slack: 2 s or 5 %, for clock rate and tick rounding."""
    return least_cs - advanced_cs > max(200.0, 0.05 * least_cs)


@dataclass(frozen=True)
class TrackerEvent:
    kind: Literal["counter_wrap", "discontinuity", "invalid_value", "refresh_mismatch"]
    reason: str


@dataclass(frozen=True)
class CounterUpdate:
    """What one sample yields.

    delta: counter increase over the rate's interval (None when there is no rate).
    rate: increase per second over `interval_s` (None: not computable, see `reason`).
    time_base: "sysuptime" (agent clock), "local" (our monotonic clock) or None.
    """

    value: int
    delta: int | None = None
    rate: float | None = None
    interval_s: float | None = None
    time_base: Literal["sysuptime", "local"] | None = None
    reason: str | None = None
    events: tuple[TrackerEvent, ...] = ()


@dataclass
class _Anchor:
    value: int
    t_cs: float          # agent time (sysUpTime or local) at which the value was first seen
    w_cs: float          # the value was loaded in (t_cs - w_cs, t_cs]
    recv_ns: int


class CounterTracker:
    """Deltas and rates for one counter of one interface of one agent (see module doc)."""

    def __init__(self, bits: Literal[32, 64], kind: Literal["octets", "packets"] = "octets",
                 refresh: RefreshModel = NET_SNMP, name: str = "") -> None:
        if bits not in (32, 64):
            raise ParameterError(f"counter bits must be 32 or 64, not {bits}")
        self.bits = bits
        self.kind = kind
        self.refresh = refresh
        self.name = name
        self._mod = 1 << bits
        self._last: CounterSample | None = None
        self._anchor: _Anchor | None = None
        self._pending = 0          # increase since the anchor not yet covered by a rate
        self._change: tuple[float, float] | None = None   # (agent time, earliest load time) of the last step
        self._rated = False        # a rate (or a confirmed zero) since the baseline

    # -- helpers ------------------------------------------------------------------------

    def reset(self) -> None:
        """Forget everything: the next sample is a new baseline."""
        self._last = None
        self._anchor = None
        self._pending = 0
        self._change = None
        self._rated = False

    @staticmethod
    def _t(s: CounterSample) -> float:
        """Agent time of a sample in centiseconds (sysUpTime, else local monotonic receipt)."""
        return float(s.uptime_cs) if s.uptime_cs is not None else s.mono / 1e7

    @staticmethod
    def _reply_cs(s: CounterSample) -> float:
        """How much earlier than `_t(s)` the agent may have read the value (cs). On the agent's
        own clock (sysUpTime read in the same request) nothing; on the local clock the value was
        read somewhere between the request's sending and the reply's receipt, so the whole round
        trip (seconds when the reply waited in a busy controller) is uncertainty of its time."""
        return 0.0 if s.uptime_cs is not None else (s.mono - s.sent_mono) / 1e7

    def _baseline(self, s: CounterSample, reason: str, events: tuple[TrackerEvent, ...] = ()) -> CounterUpdate:
        # The age of a first value is unknown: it may have been loaded a whole period ago.
        self._last = s
        self._anchor = _Anchor(s.value, self._t(s), float(self.refresh.period_cs) + self._reply_cs(s), s.recv_ns)
        self._pending = 0
        self._change = None
        self._rated = False
        return CounterUpdate(value=s.value, reason=reason, events=events)

    def _discontinuity(self, s: CounterSample, reason: str,
                       extra: tuple[TrackerEvent, ...] = ()) -> CounterUpdate:
        return self._baseline(s, f"discontinuity: {reason}",
                              extra + (TrackerEvent("discontinuity", reason),))

    def max_rate(self, speed_mbps: int | None) -> float | None:
        """Highest plausible increase per second at this ifHighSpeed, or None if unknown."""
        if not speed_mbps or speed_mbps <= 0 or speed_mbps > MAX_PLAUSIBLE_SPEED_MBPS:
            return None
        bps = speed_mbps * 1e6
        per_s = bps / 8 if self.kind == "octets" else bps / (8 * MIN_WIRE_FRAME_BYTES)
        return per_s * WRAP_SLACK

    # -- the state machine --------------------------------------------------------------

    def update(self, s: CounterSample, *, refreshed: bool | None = None,
               speed_mbps: int | None = None) -> CounterUpdate:
        """Feed one sample.

        refreshed: True if the agent demonstrably reloaded its values since the previous
          sample (another counter read in the same request changed); None/False: no evidence.
        speed_mbps: the interface's ifHighSpeed, for wrap plausibility.
        """
        if not 0 <= s.value < self._mod:
            # An agent bug (or a 64-bit value fed to a 32-bit tracker). Not a sample.
            return CounterUpdate(value=s.value, reason=f"value {s.value} outside Counter{self.bits} range",
                                 events=(TrackerEvent("invalid_value",
                                                      f"value {s.value} outside Counter{self.bits} range"),))
        last = self._last
        if last is None or self._anchor is None:
            return self._baseline(s, "first sample (baseline)")

        # 1. Same counter epoch? (agent restart, counter reset)
        if (s.uptime_cs is None) != (last.uptime_cs is None):
            return self._discontinuity(s, "sysUpTime appeared or disappeared: time base changed")
        if s.uptime_cs is not None and last.uptime_cs is not None:
            if s.uptime_cs < last.uptime_cs:
                return self._discontinuity(
                    s, f"agent restart: sysUpTime went back from {last.uptime_cs} to {s.uptime_cs} cs")
            advanced = s.uptime_cs - last.uptime_cs
            # Compared with the least real time that passed between the two readings, not with
            # the gap between receipts: a reply that waited in a busy controller is not a restart.
            least = least_elapsed_cs(s.sent_mono, last.mono)
            if restart_suspected(advanced, least):
                return self._discontinuity(
                    s, f"agent restart suspected: sysUpTime advanced {advanced / 100:.2f} s while at least "
                       f"{least / 100:.2f} s passed here")
        if (s.discontinuity_cs is not None and last.discontinuity_cs is not None
                and s.discontinuity_cs != last.discontinuity_cs):
            return self._discontinuity(
                s, f"ifCounterDiscontinuityTime changed from {last.discontinuity_cs} to {s.discontinuity_cs}")

        t_s, t_last = self._t(s), self._t(last)
        # On the local clock a value was read up to a round trip before its receipt (_reply_cs).
        r_s, r_last = self._reply_cs(s), self._reply_cs(last)
        period = float(self.refresh.period_cs)
        # Longest real time the step can span: since the previous value was loaded.
        span_s = max(t_s - t_last, 0.0) / 100 + (period + r_last) / 100
        max_rate = self.max_rate(speed_mbps)
        speed_note = (f"ifHighSpeed {speed_mbps} Mbit/s is implausible"
                      if speed_mbps and speed_mbps > MAX_PLAUSIBLE_SPEED_MBPS else "interface speed unknown")

        # 2. The step since the previous sample, with wrap handling.
        events: tuple[TrackerEvent, ...] = ()
        step = s.value - last.value
        if self.bits == 32 and max_rate is not None and max_rate * span_s >= self._mod:
            return self._discontinuity(
                s, f"{span_s:.1f} s since the previous value: a Counter32 at {speed_mbps} Mbit/s "
                   f"could have wrapped more than once")
        if step < 0:
            wrapped = step + self._mod
            if max_rate is None:
                return self._discontinuity(
                    s, f"counter went down ({last.value} -> {s.value}) and {speed_note}: "
                       f"cannot tell a wrap from a reset")
            if wrapped > max_rate * span_s:
                return self._discontinuity(
                    s, f"counter went down ({last.value} -> {s.value}); as a Counter{self.bits} wrap that "
                       f"is {wrapped} in at most {span_s:.1f} s, more than {speed_mbps} Mbit/s allows: reset")
            step = wrapped
            events = (TrackerEvent("counter_wrap",
                                   f"Counter{self.bits} wrapped ({last.value} -> {s.value}, +{wrapped})"),)

        # 2b. Does the agent keep to the declared periodic cache? Its values change only at reloads at
        #     least a period apart (net-snmp re-arms its alarm when it runs, so a late one only makes
        #     the next interval longer). Each reload lies after the read before the poll that saw it,
        #     and a period after the earliest time the previous reload can have had: a change seen
        #     before that bound cannot come from that cache (a live agent declared as net-snmp; or
        #     net-snmp itself when a request found the cache expired before its late alarm ran and
        #     both reloaded). The bound is carried from change to change, so a long poll gap before one
        #     change does not hide it. Then the period grid would time rates wrongly: say so and fall
        #     back to the non-periodic model, whose rates are right but coarser.
        first_change = step != 0 and self._change is None
        if step != 0 and self.refresh.periodic and period > 0:
            earliest = max(t_last - r_last, 0.0)
            if self._change is not None:
                t_prev, earliest_prev = self._change
                bound = earliest_prev + period - self.refresh.jitter_cs - 2
                if t_s < bound:
                    self.refresh = replace(self.refresh, periodic=False)
                    events += (TrackerEvent(
                        "refresh_mismatch",
                        f"values changed {(t_s - t_prev) / 100:.2f} s apart, impossible for the declared "
                        f"{period / 100:g} s periodic counter cache (the previous reload was at the earliest "
                        f"{(t_s - earliest_prev) / 100:.2f} s before this read): rates now timed without the "
                        f"period grid (right but coarser); the rate just before this may be wrong. Declare "
                        f"the agent's `refresh_s` in the inventory"),)
                else:
                    earliest = max(earliest, bound)
            self._change = (t_s, earliest)

        # 3. Fresh? (see module doc, point 2)
        anchor = self._anchor
        if self.refresh.period_cs == 0:
            w_new = r_s           # read when asked: somewhere in the request's round trip
        elif step != 0 or refreshed:
            # Loaded after the previous poll read its values, and at most a period before this read.
            w_new = t_s - max(t_last - r_last, t_s - r_s - period)
        elif (t_s - r_s) - anchor.t_cs >= period + self.refresh.jitter_cs:
            # Unchanged for longer than a refresh period: a reload happened with the same
            # value, somewhere in the last period. A genuine standstill.
            w_new = period + r_s
        else:
            self._last = s
            return CounterUpdate(
                value=s.value, events=events,
                reason=f"unchanged for {(t_s - anchor.t_cs) / 100:.2f} s, within the agent's "
                       f"{period / 100:.0f} s refresh period (cached value): no rate")

        if first_change and not self._rated and self.refresh.periodic and period > 0:
            # The first change since the baseline, no rate yet: one sighting cannot confirm the
            # periodic model (2b needs two), and a rate timed on the period grid from a baseline of
            # unknown age is wrong if the model is. Start the rates here; the next change confirms
            # or refutes it. (Once rates flow, re-anchoring would break their tiling: not done.)
            self._anchor = _Anchor(s.value, t_s, w_new, s.recv_ns)
            self._pending = 0
            self._last = s
            return CounterUpdate(value=s.value, events=events,
                                 reason="first change since the baseline: re-anchored on this sample, "
                                        "rates start at the next change")

        # 4. The interval between the anchor's load and this value's load.
        total = self._pending + step
        lo = (t_s - w_new) - anchor.t_cs
        hi = t_s - (anchor.t_cs - anchor.w_cs)
        interval_cs, err_cs = t_s - anchor.t_cs, max(anchor.w_cs, w_new)
        if self.refresh.periodic and period > 0:
            j = self.refresh.jitter_cs
            n_lo, n_hi = max(1, math.ceil((lo - j) / period)), math.floor((hi + j) / period)
            if n_lo == n_hi:
                interval_cs, err_cs = n_lo * period, float(j)
        base: Literal["sysuptime", "local"] = "sysuptime" if s.uptime_cs is not None else "local"
        if interval_cs <= 0:
            self._last = s
            self._pending = total
            return CounterUpdate(value=s.value, events=events, reason="no agent time elapsed since the anchor")
        if err_cs > self.refresh.max_time_error * interval_cs:
            reason = (f"time base uncertain: +-{err_cs / 100:.2f} s over {interval_cs / 100:.2f} s "
                      f"(limit {self.refresh.max_time_error:.0%}): no rate")
            self._last = s
            if w_new < anchor.w_cs:
                # A better-timed start for the next rate; this stretch gets no rate.
                self._anchor = _Anchor(s.value, t_s, w_new, s.recv_ns)
                self._pending = 0
                reason += "; re-anchored on this better-timed sample"
            else:
                self._pending = total
            return CounterUpdate(value=s.value, events=events, reason=reason)

        self._anchor = _Anchor(s.value, t_s, w_new, s.recv_ns)
        self._pending = 0
        self._last = s
        self._rated = True
        return CounterUpdate(value=s.value, delta=total, rate=total / (interval_cs / 100),
                             interval_s=interval_cs / 100, time_base=base, events=events)


@dataclass(frozen=True)
class Point:
    """One measurement: measurement "snmp_if", tags {host, ifname, ifindex}, fields, time_ns."""

    measurement: str
    tags: dict[str, str]
    fields: dict[str, int | float | str]
    time_ns: int

    def to_dict(self) -> dict[str, Any]:
        return {"measurement": self.measurement, "tags": dict(self.tags), "fields": dict(self.fields),
                "time_ns": self.time_ns}


EventKind = Literal["agent_unreachable", "agent_error", "agent_recovered", "agent_restart",
                    "counter_wrap", "discontinuity", "interface_missing", "invalid_value", "refresh_mismatch"]


@dataclass(frozen=True)
class Event:
    """Something a reader of the numbers must know (never carries secrets)."""

    kind: EventKind
    host: str
    time_ns: int
    message: str
    ifname: str | None = None
    ifindex: int | None = None
    counters: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "host": self.host, "time_ns": self.time_ns, "message": self.message,
                "ifname": self.ifname, "ifindex": self.ifindex, "counters": list(self.counters)}

    def to_point(self) -> Point:
        """The event as a point (measurement "snmp_event") for sinks that only store points."""
        tags = {"host": self.host, "kind": self.kind}
        if self.ifname is not None:
            tags["ifname"] = self.ifname
        if self.ifindex is not None:
            tags["ifindex"] = str(self.ifindex)
        fields: dict[str, int | float | str] = {"message": self.message}
        if self.counters:
            fields["counters"] = ",".join(self.counters)
        return Point(EVENT_MEASUREMENT, tags, fields, self.time_ns)


Output = Point | Event


Sink = Callable[[Output], Awaitable[None] | None] | asyncio.Queue
