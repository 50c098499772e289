"""SNMP IF-MIB polling: raw counters in, trustworthy deltas and rates out.

Two layers:

* `CounterTracker` (pure, no I/O): one per (agent, ifIndex, counter). It turns successive
  raw samples into deltas and rates, and refuses to produce a rate whenever it cannot be
  sure of one (restart, reset, implausible wrap, values the agent had not refreshed yet,
  a time base too uncertain). Every refusal carries a reason.
* `SnmpPoller` (asyncio, pysnmp 7): polls many agents concurrently and hands plain
  `Point`s and `Event`s to a callback or an asyncio.Queue. It knows nothing of InfluxDB.

How rates are timed (the choice, and why)
-----------------------------------------
Agents do not read counters when asked: net-snmp 5.9 serves IF-MIB from a cache that a
timer reloads every ~3 s, phase-locked to the agent's own start (measured on this machine:
reloads at sysUpTime = k*300 + 4..7 cs, independent of when we poll; ifTable and ifXTable
share that cache). Two polls inside one cache period return identical values. Dividing by
the poll interval would report 0 and then a burst of 3x the real rate; both are invented.
Other agents differ (FreeBSD's bsnmpd re-reads an interface's counters on every request), so
each agent's `RefreshModel` comes from its inventory `snmp` section (`refresh_s`,
`refresh_periodic`; firmware-notes/snmp-agents.md).

Therefore:
1. The time base is the agent's sysUpTime (centiseconds), not our poll interval and not
   our clock: the agent's clock is the one its counters run on. Without sysUpTime we fall
   back to the local monotonic clock and say so (`time_base: "local"`).
2. A sample is *fresh* only if it shows a reload: the value changed since the previous poll,
   or another counter read in the SAME request changed (`refreshed=True`; one request sees
   one cache state), or the value has stood still longer than the refresh period (so a
   reload with the same value must have happened: a genuine zero). A fresh value was loaded
   in the bracket (previous poll, this poll], no earlier than one refresh period ago.
3. A rate is computed only from one fresh sample (the anchor) to the next, so the intervals
   tile time without overlap: the sum of rate x interval is exactly the counter increase.
4. Interval length: for a periodic-refresh agent (net-snmp) the reloads are a whole number of
   refresh periods apart. If exactly one multiple of the period fits both brackets the
   interval is that multiple (error: timer jitter only). Otherwise the interval is the
   difference of the sysUpTimes at which the values were first seen, with an uncertainty of
   the bracket widths. If that uncertainty exceeds `max_time_error` of the interval, no rate
   is reported (reason given) and, if the new sample is better timed, it becomes the anchor.
   Polling at an interval that divides the refresh period (1 s, 0.5 s, 3 s) keeps brackets
   narrow; the first sample after a start or a discontinuity has an unknown age (a whole
   period), which is why the first rate after a baseline may be withheld.

Counter semantics
-----------------
* 64-bit counters (ifHC*) wrap at 2**64, 32-bit (ifInDiscards, ifInErrors) at 2**32. A value
  that goes down is a single wrap only if the implied rate fits the interface's ifHighSpeed
  (line rate, 10% slack, over the longest possible interval); otherwise, or when the speed is
  unknown or implausible (the recorded Siemens switch reports ifHighSpeed in bit/s), it is a
  discontinuity: new baseline, no rate. A 32-bit counter whose interval is long enough for two
  wraps at line rate is a discontinuity too (more than one wrap cannot be seen).
* sysUpTime going back, or advancing much less than local time, means the agent restarted
  (or its counters may have been reset): discontinuity. (sysUpTime itself wraps after 497
  days; that is treated as a restart, conservatively.)
* A change of ifCounterDiscontinuityTime is a discontinuity.

Output (plain data, no sink knowledge)
--------------------------------------
Point: measurement "snmp_if", tags {host, ifname, ifindex}, time_ns = local receive time.
  fields, raw (every successful poll): in_octets, out_octets, in_ucast_pkts, out_ucast_pkts
  (Counter64), in_discards, in_errors (Counter32), high_speed_mbps (ifHighSpeed as reported);
  rates (only when computable): in_bps, out_bps, in_pps, out_pps, in_discards_pps,
  in_errors_pps, and rate_interval_s, the agent-time span they cover (one value when all rates
  of the point share it -- the normal case -- else `<rate>_interval_s` per rate).
Event: kind, host, time_ns, message, ifname/ifindex/counters where relevant. Kinds:
  agent_unreachable (timeout), agent_error (auth, view, tooBig, ...), agent_recovered,
  agent_restart, discontinuity (per interface, counters listed, reason), counter_wrap,
  interface_missing, invalid_value. Event.to_point() gives measurement "snmp_event".
An unreachable agent yields an event and no point: never a zero.

Transport: one UDP socket (pysnmp transport domain) per agent on one shared SnmpEngine; GETs
batched per agent (sysUpTime + 8 columns x up to 4 interfaces + 4 canaries), all agents
concurrently, each under its own deadline.
"""
from __future__ import annotations

import asyncio
import hashlib
import inspect
import logging
import math
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from controller.errors import ParameterError

log = logging.getLogger(__name__)

# ---- OIDs (numeric: Debian ships no MIB files) ---------------------------------------------

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


# ---- counter tracking (pure) ---------------------------------------------------------------

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


NET_SNMP = RefreshModel()                           # net-snmp 5.9 IF-MIB cache (3 s timer)
LIVE = RefreshModel(period_cs=0, periodic=False)    # agent reads counters on every request


@dataclass(frozen=True)
class CounterSample:
    """One raw reading of one counter.

    value: the raw counter value as the agent returned it.
    uptime_cs: the agent's sysUpTime read in the same request (None if it has none).
    recv_ns: local wall-clock receive time (ns since the epoch): the point's timestamp.
    mono_ns: local monotonic receive time (ns), for elapsed-time checks (default: recv_ns).
    discontinuity_cs: ifCounterDiscontinuityTime of the row, if the agent provides it.
    """

    value: int
    uptime_cs: int | None
    recv_ns: int
    mono_ns: int | None = None
    discontinuity_cs: int | None = None

    @property
    def mono(self) -> int:
        return self.recv_ns if self.mono_ns is None else self.mono_ns


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
        self._change: tuple[float, float] | None = None   # (agent time, poll gap before it) of the last step
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
        """Agent time of a sample in centiseconds (sysUpTime, else local monotonic)."""
        return float(s.uptime_cs) if s.uptime_cs is not None else s.mono / 1e7

    def _baseline(self, s: CounterSample, reason: str, events: tuple[TrackerEvent, ...] = ()) -> CounterUpdate:
        # The age of a first value is unknown: it may have been loaded a whole period ago.
        self._last = s
        self._anchor = _Anchor(s.value, self._t(s), float(self.refresh.period_cs), s.recv_ns)
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
        local_cs = (s.mono - last.mono) / 1e7
        if s.uptime_cs is not None and last.uptime_cs is not None:
            if s.uptime_cs < last.uptime_cs:
                return self._discontinuity(
                    s, f"agent restart: sysUpTime went back from {last.uptime_cs} to {s.uptime_cs} cs")
            advanced = s.uptime_cs - last.uptime_cs
            # Both clocks measure the same real interval (+- network latency and clock rate).
            if local_cs - advanced > max(200.0, 0.05 * local_cs):
                return self._discontinuity(
                    s, f"agent restart suspected: sysUpTime advanced {advanced / 100:.2f} s "
                       f"in {local_cs / 100:.2f} s of local time")
        if (s.discontinuity_cs is not None and last.discontinuity_cs is not None
                and s.discontinuity_cs != last.discontinuity_cs):
            return self._discontinuity(
                s, f"ifCounterDiscontinuityTime changed from {last.discontinuity_cs} to {s.discontinuity_cs}")

        t_s, t_last = self._t(s), self._t(last)
        period = float(self.refresh.period_cs)
        # Longest real time the step can span: since the previous value was loaded.
        span_s = max(t_s - t_last, 0.0) / 100 + period / 100
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

        # 2b. Does the agent keep to the declared periodic cache? Its values change only at reloads, a
        #     period apart, each seen within one poll gap: two changes seen closer than
        #     period - (gap before the earlier one) - jitter cannot come from that cache (a live agent
        #     declared as net-snmp, say). Then the period grid would time rates wrongly: say so and
        #     fall back to the non-periodic model, whose rates are right but coarser.
        first_change = step != 0 and self._change is None
        if step != 0 and self.refresh.periodic and period > 0:
            if self._change is not None:
                t_prev, gap_prev = self._change
                if t_s - t_prev < period - gap_prev - self.refresh.jitter_cs - 2:
                    self.refresh = replace(self.refresh, periodic=False)
                    events += (TrackerEvent(
                        "refresh_mismatch",
                        f"values changed {(t_s - t_prev) / 100:.2f} s apart, impossible for the declared "
                        f"{period / 100:g} s periodic counter cache: rates now timed without the period grid "
                        f"(right but coarser); the rate just before this may be wrong. Declare the agent's "
                        f"`refresh_s` in the inventory"),)
            self._change = (t_s, max(t_s - t_last, 0.0))

        # 3. Fresh? (see module doc, point 2)
        anchor = self._anchor
        if self.refresh.period_cs == 0:
            w_new = 0.0
        elif step != 0 or refreshed:
            # Loaded after the previous poll read its values, and at most a period ago.
            w_new = t_s - max(t_last, t_s - period)
        elif t_s - anchor.t_cs >= period + self.refresh.jitter_cs:
            # Unchanged for longer than a refresh period: a reload happened with the same
            # value, somewhere in the last period. A genuine standstill.
            w_new = period
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


# ---- plain output records ------------------------------------------------------------------

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


# ---- the poller ----------------------------------------------------------------------------

@dataclass(frozen=True)
class AgentConfig:
    """One agent to poll: inventory host name, address, the inventory's SNMP section.

    `snmp` is controller.inventory.SNMP: secrets are SecretRef references, resolved by
    SnmpPoller.start(). `refresh` describes the agent's counter cache (net-snmp default;
    from_inventory takes it from the inventory's `refresh_s` / `refresh_periodic`).
    """

    host: str
    address: str
    snmp: Any
    refresh: RefreshModel = NET_SNMP


class SnmpAgentError(Exception):
    def __init__(self, message: str, *, timeout: bool = False):
        super().__init__(message)
        self.timeout = timeout


@dataclass
class _Row:
    ifindex: int
    ifname: str


@dataclass
class _AgentState:
    cfg: AgentConfig
    engine: Any = None      # the poller's shared SnmpEngine, once this agent's transport is open
    target: Any = None
    domain: tuple[int, ...] | None = None   # this agent's own UDP transport domain (own socket)
    auth: Any = None
    rows: list[_Row] = field(default_factory=list)
    discovered: bool = False
    trackers: dict[tuple[int, str], CounterTracker] = field(default_factory=dict)
    # (rows of the request, oid) -> last raw value: refresh evidence compares reads made by the
    # same request slot, so a reload between two concurrent requests is never "old news".
    prev_values: dict[tuple[tuple[int, ...], str], int] = field(default_factory=dict)
    all_ifindexes: list[int] = field(default_factory=list)      # every row of the agent's ifName table
    last_change: dict[int, int] = field(default_factory=dict)   # ifIndex -> mono ns its in-octets last moved
    last_uptime_cs: int | None = None
    last_mono_ns: int | None = None
    failures: int = 0
    reported_missing: frozenset[str] = frozenset()
    reported_partial: set[tuple[int, tuple[str, ...]]] = field(default_factory=set)
    reported_dup: frozenset[str] = frozenset()
    discovered_mono: float = 0.0
    max_varbinds: int = 0       # per agent: halved when the agent answers tooBig
    refresh: RefreshModel | None = None   # the model in use when the declared one proved wrong


def _auth_protocols() -> tuple[dict[str, Any], dict[str, Any]]:
    from pysnmp.hlapi.v3arch import asyncio as h
    auth = {"md5": h.USM_AUTH_HMAC96_MD5, "sha": h.USM_AUTH_HMAC96_SHA,
            "sha224": h.USM_AUTH_HMAC128_SHA224, "sha256": h.USM_AUTH_HMAC192_SHA256,
            "sha384": h.USM_AUTH_HMAC256_SHA384, "sha512": h.USM_AUTH_HMAC384_SHA512}
    # net-snmp's AES-192/AES-256 use the Blumenthal key extension (its AES192C/AES256C
    # would be pysnmp's plain CFB192/256 "Cisco" variants).
    priv = {"des": h.USM_PRIV_CBC56_DES, "aes": h.USM_PRIV_CFB128_AES,
            "aes192": h.USM_PRIV_CFB192_AES_BLUMENTHAL, "aes256": h.USM_PRIV_CFB256_AES_BLUMENTHAL}
    return auth, priv


class SnmpPoller:
    """Poll IF-MIB counters of many agents concurrently (pysnmp 7, asyncio).

    SnmpPoller(agents, sink=None, *, interval_s=1.0, max_varbinds=40, canaries=4)
      agents: AgentConfig list (or use SnmpPoller.from_inventory(inv, ...)).
      sink: a callable taking one Point/Event (sync or async) or an asyncio.Queue; every
        output of every round is delivered to it in order. poll_once() also returns them.
      interval_s: round period used by run().
      max_varbinds: varbinds per GET request (4 interfaces + sysUpTime + canaries by default;
        an agent that answers tooBig gets its requests halved).
      canaries: how many extra interfaces' ifHCInOctets to read in each request as evidence
        that the agent reloaded its cache (our own request packets move the counters of the
        interface they arrive on, so some counter in the agent changes at every reload).
      rediscover_s: re-walk ifName this often (new interfaces, renumbering without restart);
        every 30 s while some of the inventory's `interfaces` are missing. 0 = never.

    Lifecycle: `await start()` (resolves secrets, opens one UDP transport per agent on a
    shared SnmpEngine, discovers ifIndex->ifName), then `await poll_once()` or
    `await run(stop_event)`, then `await close()`. Also `async with SnmpPoller(...) as p:`.
    """

    def __init__(self, agents: Sequence[AgentConfig], sink: Sink | None = None, *,
                 interval_s: float = 1.0, max_varbinds: int = 40, canaries: int = 4,
                 rediscover_s: float = 300.0) -> None:
        if interval_s <= 0:
            raise ParameterError("SNMP poll interval must be > 0")
        if max_varbinds < len(COUNTERS) + 4:
            raise ParameterError(f"max_varbinds must be at least {len(COUNTERS) + 4}")
        hosts = [a.host for a in agents]
        if len(hosts) != len(set(hosts)):
            raise ParameterError("SNMP agents: host names repeat")
        self.interval_s = interval_s
        self.max_varbinds = max_varbinds
        self.canary_count = max(0, canaries)
        self.rediscover_s = rediscover_s
        self._sink = sink
        self._agents = {a.host: _AgentState(a, max_varbinds=max_varbinds) for a in agents}
        self._started = False
        # [(engine, {v3 user: fingerprint of its keys})]: usually one engine for everybody
        self._engines: list[tuple[Any, dict[str, str]]] = []
        self._next_domain = 1
        # oid -> ObjectType already resolved against pysnmp's MIB view. pysnmp resolves every
        # varbind of every request through its MIB view unless the ObjectType is already
        # resolved; that lookup was ~40% of a round's CPU (profiled), so resolve each OID once.
        self._objtypes: dict[str, Any] = {}

    @property
    def agents(self) -> list[AgentConfig]:
        """The agents polled, in the order given."""
        return [st.cfg for st in self._agents.values()]

    @classmethod
    def from_inventory(cls, inv: Any, sink: Sink | None = None, *, hosts: Iterable[str] | None = None,
                       refresh: RefreshModel | None = None, **kwargs: Any) -> "SnmpPoller":
        """Every inventory host with an `snmp` section (or just `hosts`), at host.mgmt.address.

        Each agent's counter cache model is the one its `snmp` section declares (`refresh_s`,
        `refresh_periodic`); `refresh` overrides it for every agent."""
        names = sorted(hosts) if hosts is not None else sorted(n for n, h in inv.hosts.items() if h.snmp)
        agents = []
        for name in names:
            h = inv.hosts[name]
            if h.snmp is None:
                raise ParameterError(f"host {name} has no `snmp` section in the inventory")
            agents.append(AgentConfig(name, h.mgmt.address, h.snmp,
                                      refresh if refresh is not None else RefreshModel.from_snmp(h.snmp)))
        return cls(agents, sink, **kwargs)

    # -- lifecycle ------------------------------------------------------------------------

    async def __aenter__(self) -> "SnmpPoller":
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> list[Output]:
        """Resolve credentials, open one transport per agent, discover interfaces.

        Returns (and delivers) the discovery events.

        Credential problems raise ParameterError (naming the host and the reference, never
        the value). Unreachable agents do not: they produce events and are retried each round.
        """
        from pysnmp.hlapi.v3arch import asyncio as h
        auth_p, priv_p = _auth_protocols()
        for st in self._agents.values():
            snmp = st.cfg.snmp
            what = f"host {st.cfg.host} snmp"
            if snmp.version == "2c":
                st.auth = h.CommunityData(snmp.community.resolve(f"{what}.community"), mpModel=1)
            else:
                st.auth = h.UsmUserData(
                    snmp.user,
                    authKey=snmp.auth_key.resolve(f"{what}.auth_key"),
                    privKey=snmp.priv_key.resolve(f"{what}.priv_key"),
                    authProtocol=auth_p[snmp.auth_protocol],
                    privProtocol=priv_p[snmp.priv_protocol])
        self._started = True
        out: list[Output] = []
        results = await asyncio.gather(*(self._guarded(st, self._discover_only) for st in self._agents.values()))
        for r in results:
            out.extend(r)
        await self._deliver(out)
        return out

    async def _open(self, st: _AgentState) -> None:
        """Give the agent its own UDP transport (socket) on the shared engine.

        One SnmpEngine for all agents: pysnmp compiles its MIB modules from source for every
        engine (~0.1 s of CPU each, measured), which would block the event loop for seconds
        with 50 agents. pysnmp keeps one socket per transport *domain*, so each agent gets a
        domain of its own (UDP domain OID + a sequence number): its own socket and source port,
        and its own v3 engine-ID discovery cache entry (keyed by domain and address).
        """
        from pysnmp.carrier.asyncio.dgram import udp
        from pysnmp.hlapi.v3arch import asyncio as h
        engine = self._engine_for(st)
        domain = udp.DOMAIN_NAME + (self._next_domain,)
        self._next_domain += 1
        target_cls = type("AgentUdpTransportTarget", (h.UdpTransportTarget,), {"TRANSPORT_DOMAIN": domain})
        st.target = await target_cls.create(
            (st.cfg.address, st.cfg.snmp.port), timeout=st.cfg.snmp.timeout, retries=st.cfg.snmp.retries)
        st.domain = domain
        st.engine = engine

    def _engine_for(self, st: _AgentState) -> Any:
        """The shared engine, unless this agent's v3 user name is already configured there
        with other keys: pysnmp keys USM users by name, so such an agent needs its own."""
        from pysnmp.hlapi.v3arch import asyncio as h
        user, fp = None, ""
        if st.cfg.snmp.version == "3":
            user = st.cfg.snmp.user
            a = st.auth
            fp = hashlib.sha256(repr((a.authentication_protocol, a.authentication_key, a.privacy_protocol,
                                      a.privacy_key)).encode()).hexdigest()
        for engine, users in self._engines:
            if user is None or users.get(user, fp) == fp:
                if user is not None:
                    users[user] = fp
                return engine
        engine = h.SnmpEngine()
        self._engines.append((engine, {user: fp} if user is not None else {}))
        return engine

    async def _reopen(self, st: _AgentState) -> None:
        """New socket and domain: forgets the agent's v3 engine ID/boots (reinstalled agent)."""
        self._close_transport(st)
        try:
            await self._open(st)
        except Exception as exc:
            log.warning("SNMP %s: cannot reopen transport: %s", st.cfg.host, exc)

    def _close_transport(self, st: _AgentState) -> None:
        if st.domain is not None and st.engine is not None:
            from pysnmp.entity import config
            try:
                transport = config.get_transport(st.engine, st.domain)
                if transport is not None:
                    config.delete_transport(st.engine, st.domain)
                    transport.close_transport()
            except Exception:  # closing must not mask what made us close
                log.debug("closing the SNMP transport of %s failed", st.cfg.host, exc_info=True)
        st.domain = st.engine = st.target = None

    async def close(self) -> None:
        for st in self._agents.values():
            self._close_transport(st)
        for engine, _ in self._engines:
            try:
                engine.close_dispatcher()
            except Exception:
                log.debug("closing the SNMP engine failed", exc_info=True)
        self._engines = []
        self._started = False

    # -- public queries -------------------------------------------------------------------

    @property
    def hosts(self) -> list[str]:
        return list(self._agents)

    def interfaces(self, host: str) -> dict[int, str]:
        """ifIndex -> ifName being polled on `host` (after discovery)."""
        return {r.ifindex: r.ifname for r in self._agents[host].rows}

    # -- rounds ---------------------------------------------------------------------------

    def _deadline(self, st: _AgentState, requests: int) -> float:
        """Per-agent wall-clock budget: pysnmp's own timeout x tries x sequential requests."""
        snmp = st.cfg.snmp
        return snmp.timeout * (snmp.retries + 1) * max(1, requests) + 0.5

    async def poll_once(self) -> list[Output]:
        """One round over all agents, concurrently; a dead agent costs only its own timeout."""
        if not self._started:
            raise RuntimeError("SnmpPoller.start() first")
        results = await asyncio.gather(*(self._guarded(st, self._poll_agent) for st in self._agents.values()))
        out = [o for r in results for o in r]
        await self._deliver(out)
        return out

    async def run(self, stop: asyncio.Event | None = None, *, rounds: int | None = None) -> None:
        """Poll every `interval_s` on a fixed schedule until `stop` is set (or `rounds` done).

        A round that overruns skips the slots it missed rather than bursting to catch up.
        """
        stop = stop or asyncio.Event()
        loop = asyncio.get_running_loop()
        start = loop.time()
        slot = done = 0
        while not stop.is_set() and (rounds is None or done < rounds):
            await self.poll_once()
            done += 1
            now = loop.time()
            # next slot strictly in the future: an overrun skips slots instead of bursting
            slot = max(slot + 1, math.floor((now - start) / self.interval_s) + 1)
            delay = start + slot * self.interval_s - now
            if delay > 0:
                try:
                    await asyncio.wait_for(stop.wait(), timeout=delay)
                except asyncio.TimeoutError:
                    pass

    async def _deliver(self, out: list[Output]) -> None:
        if self._sink is None:
            return
        for item in out:
            if isinstance(self._sink, asyncio.Queue):
                await self._sink.put(item)
            else:
                r = self._sink(item)
                if inspect.isawaitable(r):
                    await r

    async def _guarded(self, st: _AgentState,
                       fn: Callable[[_AgentState, list[Output]], Awaitable[None]]) -> list[Output]:
        """Run one agent's work under its own deadline; failures become events, never zeros.

        `fn` appends to `out` as it goes, so events produced before a failure (an
        agent_restart seen just before the agent stopped answering) are not lost.
        The deadline is only a safety net: pysnmp's own timeout x retries ends a request
        to a dead agent first, and the other agents' requests run concurrently anyway.
        """
        out: list[Output] = []
        # a round: GETs, plus on restart a rediscovery walk and GETs again; discovery pages
        requests = 3 + (0 if st.discovered else 6)
        try:
            await asyncio.wait_for(fn(st, out), timeout=self._deadline(st, requests))
        except (asyncio.TimeoutError, SnmpAgentError) as exc:
            timeout = isinstance(exc, asyncio.TimeoutError) or getattr(exc, "timeout", False)
            st.failures += 1
            msg = (f"no answer from {st.cfg.address}:{st.cfg.snmp.port} within "
                   f"{st.cfg.snmp.timeout:g} s x {st.cfg.snmp.retries + 1} tries"
                   if timeout else f"{st.cfg.address}:{st.cfg.snmp.port}: {exc}")
            kind: EventKind = "agent_unreachable" if timeout else "agent_error"
            log.warning("SNMP %s: %s (%d consecutive)", st.cfg.host, msg, st.failures)
            if st.cfg.snmp.version == "3" and (not timeout or st.failures >= 2):
                # USM state (engine ID, boots/time) is stale after an agent was reinstalled
                # (new engine ID): pysnmp then times out forever instead of rediscovering
                # (measured). A new transport domain makes it rediscover on the next round.
                await self._reopen(st)
            return out + [Event(kind, st.cfg.host, time.time_ns(), f"{msg} ({st.failures} consecutive)")]
        except Exception as exc:  # a pysnmp bug or an unexpected answer: report, keep polling others
            st.failures += 1
            log.exception("SNMP %s: unexpected error", st.cfg.host)
            return out + [Event("agent_error", st.cfg.host, time.time_ns(),
                                f"unexpected {type(exc).__name__}: {exc} ({st.failures} consecutive)")]
        if st.failures and any(isinstance(o, Point) for o in out):
            out.insert(0, Event("agent_recovered", st.cfg.host, time.time_ns(),
                                f"answering again after {st.failures} failed round(s)"))
            st.failures = 0
        return out

    # -- SNMP operations ------------------------------------------------------------------

    async def _get(self, st: _AgentState, oids: Sequence[str]) -> tuple[dict[str, Any], int, int]:
        """GET `oids` in one request -> ({oid: pysnmp value}, recv wall ns, recv mono ns)."""
        from pysnmp.hlapi.v3arch import asyncio as h
        objtypes = []
        for o in oids:
            ot = self._objtypes.get(o)
            if ot is None:
                ot = self._objtypes[o] = h.ObjectType(h.ObjectIdentity(o))
            objtypes.append(ot)
        err_ind, err_status, err_index, vbs = await h.get_cmd(
            st.engine, st.auth, st.target, h.ContextData(), *objtypes, lookupMib=False)
        recv_ns, mono_ns = time.time_ns(), time.monotonic_ns()
        if not err_ind and err_status and int(err_status) == 1:      # tooBig
            # The answer does not fit the agent's message size: smaller requests next round.
            before = st.max_varbinds or self.max_varbinds
            st.max_varbinds = max(len(COUNTERS) + 3, before // 2)
            raise SnmpAgentError(f"agent answered tooBig for {len(oids)} varbinds: "
                                 f"requests reduced to {st.max_varbinds} varbinds")
        self._check(err_ind, err_status, err_index, oids)
        return {str(name): val for name, val in vbs}, recv_ns, mono_ns

    @staticmethod
    def _check(err_ind: Any, err_status: Any, err_index: Any, oids: Sequence[str]) -> None:
        from pysnmp.proto import errind
        if err_ind:
            raise SnmpAgentError(str(err_ind), timeout=isinstance(err_ind, errind.RequestTimedOut))
        if err_status:
            idx = int(err_index) if err_index else 0
            where = f" at {oids[idx - 1]}" if 0 < idx <= len(oids) else ""
            raise SnmpAgentError(f"agent answered {err_status.prettyPrint()}{where}")

    async def _walk(self, st: _AgentState, column: str, max_rows: int = 10_000) -> list[tuple[int, Any]]:
        """GETBULK walk of one table column -> [(ifIndex, value)]; stops at the column's end.

        pysnmp's bulk_walk_cmd is not used: it restarts from the last OID on timeouts and
        has no bound; here every page is one request under the caller's deadline.
        """
        from pysnmp.hlapi.v3arch import asyncio as h
        from pysnmp.proto.rfc1905 import EndOfMibView, NoSuchInstance, NoSuchObject
        prefix = tuple(int(x) for x in column.split("."))
        rows: list[tuple[int, Any]] = []
        cursor = column
        while len(rows) < max_rows:
            err_ind, err_status, err_index, vbs = await h.bulk_cmd(
                st.engine, st.auth, st.target, h.ContextData(), 0, 25,
                h.ObjectType(h.ObjectIdentity(cursor)), lookupMib=False)
            self._check(err_ind, err_status, err_index, [cursor])
            if not vbs:
                break
            for name, val in vbs:
                oid = name.asTuple()
                if isinstance(val, (EndOfMibView, NoSuchObject, NoSuchInstance)) or oid[:len(prefix)] != prefix \
                        or len(oid) != len(prefix) + 1:
                    return rows
                rows.append((oid[-1], val))
                cursor = str(name)
        return rows

    # -- discovery ------------------------------------------------------------------------

    async def _discover_only(self, st: _AgentState, out: list[Output]) -> None:
        if st.engine is None:
            await self._open(st)
        out += await self._discover(st)

    async def _discover(self, st: _AgentState) -> list[Output]:
        """ifIndex -> ifName (walk of ifName), filtered by the inventory's `interfaces`."""
        names = [(idx, bytes(v.asOctets()).decode("utf-8", "replace")) for idx, v in await self._walk(st, IF_NAME)]
        now = time.time_ns()
        out: list[Output] = []
        if not names:
            st.rows, st.discovered = [], False
            return [Event("agent_error", st.cfg.host, now,
                          "ifName (1.3.6.1.2.1.31.1.1.1.1) walk returned nothing: IF-MIB not visible "
                          "(the agent's view? Debian's default view is system-only) or not SNMPv2c/v3")]
        wanted = list(st.cfg.snmp.interfaces)
        by_name: dict[str, list[int]] = {}
        for idx, name in names:
            by_name.setdefault(name, []).append(idx)
        if wanted:
            rows = [_Row(idx, n) for n in wanted for idx in by_name.get(n, [])]
            missing = frozenset(n for n in wanted if n not in by_name)
            if missing and missing != st.reported_missing:
                out.append(Event("interface_missing", st.cfg.host, now,
                                 f"interfaces {sorted(missing)} not in the agent's ifName table "
                                 f"(has {sorted(by_name)})"))
            st.reported_missing = missing
        else:
            rows = [_Row(idx, n) for idx, n in names]
        dup = frozenset(n for n, idxs in by_name.items() if len(idxs) > 1 and (not wanted or n in wanted))
        if dup and dup != st.reported_dup:
            out.append(Event("agent_error", st.cfg.host, now,
                             f"ifName not unique for {sorted(dup)}: each row is polled, tagged by ifindex"))
        st.reported_dup = dup
        old = {r.ifindex: r.ifname for r in st.rows}
        for r in rows:
            if r.ifindex in old and old[r.ifindex] != r.ifname:
                # the same ifIndex now names another interface: its counters are not a continuation
                st.trackers = {k: t for k, t in st.trackers.items() if k[0] != r.ifindex}
                out.append(Event("discontinuity", st.cfg.host, now,
                                 f"ifIndex {r.ifindex} was {old[r.ifindex]!r}, now {r.ifname!r}: new baseline",
                                 r.ifname, r.ifindex, tuple(COUNTERS)))
        polled = {r.ifindex for r in rows}
        st.rows = sorted(rows, key=lambda r: r.ifindex)
        st.all_ifindexes = [idx for idx, _ in names]
        st.trackers = {k: t for k, t in st.trackers.items() if k[0] in polled}
        st.prev_values.clear()       # request slots change with the rows
        st.discovered = True
        st.discovered_mono = time.monotonic()
        log.info("SNMP %s: polling %s", st.cfg.host, ", ".join(f"{r.ifname}({r.ifindex})" for r in st.rows))
        return out

    def _batches(self, st: _AgentState) -> list[tuple[list[_Row], list[str]]]:
        """Rows split into GET requests; each carries sysUpTime and up to `canaries` canary OIDs.

        Canaries are the in-octets of other interfaces, those that moved most recently first
        (the management interface, which our own requests keep moving, soon leads): one of
        them changing proves the agent reloaded its cache, which turns "unchanged" counters
        in the same request into genuine zeros.
        """
        per_row = len(COUNTERS) + 2
        limit = st.max_varbinds or self.max_varbinds
        ncan = min(self.canary_count, max(0, limit - 1 - per_row))
        room = max(1, (limit - 1 - ncan) // per_row)
        order = sorted(st.all_ifindexes, key=lambda i: -st.last_change.get(i, 0))
        out = []
        for i in range(0, len(st.rows), room):
            rows = st.rows[i:i + room]
            mine = {r.ifindex for r in rows}
            oids = [SYS_UPTIME]
            for r in rows:
                oids += [f"{col}.{r.ifindex}" for col, _, _ in COUNTERS.values()]
                oids += [f"{IF_HIGH_SPEED}.{r.ifindex}", f"{IF_COUNTER_DISCONTINUITY}.{r.ifindex}"]
            oids += [f"{IF_HC_IN_OCTETS}.{c}" for c in [c for c in order if c not in mine][:ncan]]
            out.append((rows, oids))
        return out

    # -- one agent, one round -------------------------------------------------------------

    async def _poll_agent(self, st: _AgentState, out: list[Output]) -> None:
        if st.engine is None:
            await self._open(st)
        due = 30.0 if st.reported_missing else self.rediscover_s
        if not st.discovered or (self.rediscover_s and time.monotonic() - st.discovered_mono > due):
            out += await self._discover(st)
            if not st.discovered:
                return
        batches = self._batches(st)
        replies = await asyncio.gather(*(self._get(st, oids) for _, oids in batches))

        restart = self._restart_reason(st, replies)
        if restart is not None:
            now = replies[0][1]
            out.append(Event("agent_restart", st.cfg.host, now, restart))
            for r in st.rows:
                out.append(Event("discontinuity", st.cfg.host, now, f"{restart}: new baseline, no rate",
                                 ifname=r.ifname, ifindex=r.ifindex, counters=tuple(COUNTERS)))
            # ifIndexes may be renumbered by a restart (switches do): rediscover, then take
            # this round's values again as the new baselines.
            st.trackers.clear()
            st.prev_values.clear()
            st.discovered = False
            out += await self._discover(st)
            if not st.discovered:
                return
            batches = self._batches(st)
            replies = await asyncio.gather(*(self._get(st, oids) for _, oids in batches))

        st.last_uptime_cs = max((_uptime(v) for v, _, _ in replies if _uptime(v) is not None), default=None)
        st.last_mono_ns = max(m for _, _, m in replies)
        rediscover = False
        for (rows, oids), (values, recv_ns, mono_ns) in zip(batches, replies):
            refreshed = self._refresh_evidence(st, rows, oids, values, mono_ns)
            uptime = _uptime(values)
            for r in rows:
                point, events, gone = self._row(st, r, values, uptime, recv_ns, mono_ns, refreshed)
                out += events
                if point is not None:
                    out.append(point)
                rediscover |= gone
        if rediscover:
            st.discovered = False   # next round re-walks ifName

    def _restart_reason(self, st: _AgentState, replies: list[tuple[dict[str, Any], int, int]]) -> str | None:
        if st.last_uptime_cs is None or st.last_mono_ns is None:
            return None
        ups = [u for u in (_uptime(v) for v, _, _ in replies) if u is not None]
        if not ups:
            return None
        now_up = min(ups)
        if now_up < st.last_uptime_cs:
            return f"agent restart: sysUpTime went back from {st.last_uptime_cs} to {now_up} cs"
        local_cs = (min(m for _, _, m in replies) - st.last_mono_ns) / 1e7
        advanced = now_up - st.last_uptime_cs
        if local_cs - advanced > max(200.0, 0.05 * local_cs):
            return (f"agent restart suspected: sysUpTime advanced {advanced / 100:.2f} s in "
                    f"{local_cs / 100:.2f} s of local time")
        return None

    @staticmethod
    def _refresh_evidence(st: _AgentState, rows: Sequence[_Row], oids: Sequence[str],
                          values: dict[str, Any], mono_ns: int) -> bool | None:
        """Did any counter in this request change since it was last read? (one request = one cache state)"""
        from pysnmp.proto.rfc1902 import Counter32, Counter64
        seen, changed = False, False
        in_octets = IF_HC_IN_OCTETS + "."
        slot = tuple(r.ifindex for r in rows)
        for oid in oids:
            v = values.get(oid)
            if not isinstance(v, (Counter32, Counter64)):
                continue
            iv = int(v)
            prev = st.prev_values.get((slot, oid))
            if prev is not None:
                seen = True
                if prev != iv:
                    changed = True
                    if oid.startswith(in_octets):
                        st.last_change[int(oid[len(in_octets):])] = mono_ns
            st.prev_values[(slot, oid)] = iv
        return True if changed else (None if not seen else False)

    def _row(self, st: _AgentState, r: _Row, values: dict[str, Any], uptime: int | None,
             recv_ns: int, mono_ns: int, refreshed: bool | None) -> tuple[Point | None, list[Event], bool]:
        from pysnmp.proto.rfc1902 import Counter32, Counter64, Gauge32, TimeTicks
        from pysnmp.proto.rfc1905 import NoSuchInstance, NoSuchObject
        host, events = st.cfg.host, []
        fields: dict[str, int | float] = {}
        speed_v = values.get(f"{IF_HIGH_SPEED}.{r.ifindex}")
        speed = int(speed_v) if isinstance(speed_v, Gauge32) else None
        if speed is not None:
            fields["high_speed_mbps"] = speed
        disc_v = values.get(f"{IF_COUNTER_DISCONTINUITY}.{r.ifindex}")
        disc = int(disc_v) if isinstance(disc_v, TimeTicks) else None
        rates: dict[str, tuple[float, float]] = {}
        missing: list[str] = []
        disc_counters: list[str] = []
        disc_reasons: set[str] = set()
        for fname, (col, bits, kind) in COUNTERS.items():
            v = values.get(f"{col}.{r.ifindex}")
            if isinstance(v, (NoSuchInstance, NoSuchObject)) or v is None:
                missing.append(fname)
                continue
            if not isinstance(v, (Counter32, Counter64)):
                events.append(Event("invalid_value", host, recv_ns,
                                    f"{fname} has type {type(v).__name__}, expected a counter: ignored",
                                    r.ifname, r.ifindex, (fname,)))
                continue
            actual_bits = 64 if isinstance(v, Counter64) else 32
            tr = st.trackers.get((r.ifindex, fname))
            if tr is None or tr.bits != actual_bits:
                tr = CounterTracker(actual_bits, kind, st.refresh or st.cfg.refresh,
                                    name=f"{host}/{r.ifname}/{fname}")
                st.trackers[(r.ifindex, fname)] = tr
            upd = tr.update(CounterSample(int(v), uptime, recv_ns, mono_ns, disc),
                            refreshed=refreshed, speed_mbps=speed)
            fields[fname] = int(v)
            for ev in upd.events:
                if ev.kind == "discontinuity":
                    disc_counters.append(fname)
                    disc_reasons.add(ev.reason)
                elif ev.kind == "refresh_mismatch":
                    if st.refresh is None:      # once per agent; every counter of it changes model
                        st.refresh = tr.refresh
                        for other in st.trackers.values():
                            other.refresh = st.refresh
                        events.append(Event(ev.kind, host, recv_ns, f"{r.ifname} {fname}: {ev.reason}",
                                            r.ifname, r.ifindex, (fname,)))
                else:
                    events.append(Event(ev.kind, host, recv_ns, f"{fname}: {ev.reason}",
                                        r.ifname, r.ifindex, (fname,)))
            if upd.rate is not None and upd.interval_s is not None:
                rate_name, mult = RATE_FIELDS[fname]
                rates[rate_name] = (upd.rate * mult, upd.interval_s)
        if disc_counters:
            events.append(Event("discontinuity", host, recv_ns,
                                 "; ".join(sorted(disc_reasons)) + ": new baseline, no rate",
                                 r.ifname, r.ifindex, tuple(disc_counters)))
        if len(missing) == len(COUNTERS):
            events.append(Event("interface_missing", host, recv_ns,
                                f"ifIndex {r.ifindex} ({r.ifname}) no longer answers: rediscovering",
                                r.ifname, r.ifindex))
            return None, events, True
        if missing and (r.ifindex, tuple(missing)) not in st.reported_partial:
            # reported once per (row, set of missing counters), not every round
            st.reported_partial.add((r.ifindex, tuple(missing)))
            events.append(Event("agent_error", host, recv_ns,
                                f"counters {missing} not available on this row (noSuch*): not reported",
                                r.ifname, r.ifindex, tuple(missing)))
        for name, (rate, _) in rates.items():
            fields[name] = rate
        intervals = {round(iv, 3) for _, iv in rates.values()}
        if len(intervals) == 1:
            fields["rate_interval_s"] = intervals.pop()
        else:
            for name, (_, iv) in rates.items():
                fields[f"{name}_interval_s"] = iv
        tags = {"host": host, "ifname": r.ifname, "ifindex": str(r.ifindex)}
        return Point(MEASUREMENT, tags, fields, recv_ns), events, False


def _uptime(values: dict[str, Any]) -> int | None:
    from pysnmp.proto.rfc1902 import TimeTicks
    v = values.get(SYS_UPTIME)
    return int(v) if isinstance(v, TimeTicks) else None


async def poll_round_time(poller: SnmpPoller, rounds: int = 20, pause_s: float = 0.0) -> list[float]:
    """Wall-clock seconds of `rounds` successive poll_once() calls (poller already started).

    For bench/snmp_bench.py: measures the concurrent round over all of the poller's agents.
    """
    loop = asyncio.get_running_loop()
    times: list[float] = []
    for _ in range(rounds):
        t0 = loop.time()
        await poller.poll_once()
        times.append(loop.time() - t0)
        if pause_s:
            await asyncio.sleep(pause_s)
    return times
