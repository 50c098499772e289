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
   back to the local monotonic clock and say so (`time_base: "local"`); the agent then read
   its value somewhere in the request's round trip (sent, received], so that round trip widens
   the value's bracket (point 2): a reply that waited seconds in a busy controller gives no
   rate ("time base uncertain") instead of a rate over the wrong interval.
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
* sysUpTime going back, or advancing much less than the least local time that can have passed
  (from the previous answer's receipt to this request's sending), means the agent restarted
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

Modules: `counters` (the pure tracker and the output records), `poller` (the asyncio
poller over pysnmp), `threaded` (a poller on a loop and thread of its own, as a run uses it:
the run's busy sampler loop must not delay its replies). May import the base only; the run's telemetry hub consumes it.
"""
