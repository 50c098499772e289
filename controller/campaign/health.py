"""The health check before every run (talks to the hosts, changes nothing): SSH reachable,
clocks within bounds, every shaper at the inventory's baseline."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from bridges.base import PipeConfig, diff_pipe, read_state, shaper_class
from controller.campaign.spec import HealthSpec
from controller.errors import CtlError
from controller.inventory import Role
from controller.clocksync import ClockEcho, measure_clock_offset
from controller.ssh import CommandLog, SSHPool
from controller.units import format_delay


@dataclass
class HealthResult:
    ok: bool
    reasons: list[str]
    details: dict


def plan_hosts(plan: Any, inv: Any) -> list[str]:
    """Hosts a run will talk to (the runner's own selection): endpoints, sampled hosts, flow
    ends, and the bridges of every shaped link; switches are not SSH hosts."""
    hosts = set(plan.endpoints) | set(plan.sample_ifaces)
    for f in plan.flows:
        hosts |= {f.client, f.server}
    for (link, _d) in plan.links:
        hosts.add(inv.links[link].bridge)
    return sorted(h for h in hosts if inv.hosts[h].role is not Role.SWITCH)


def baseline_problems(inv: Any, bridge: str, state: Any) -> list[str]:
    """Differences between a bridge's shaping and the inventory's baseline (unshaped when the
    link has none), pipe by pipe; only the fields a baseline sets are compared."""
    out = []
    foreign = (state.details or {}).get("foreign") or {}
    for port, what in sorted(foreign.items()):
        out.append(f"{bridge}: port {port} has a qdisc ctl did not create ({what})")
    for (link, direction), got in sorted(state.pipes.items(), key=lambda kv: (kv[0][0], kv[0][1].value)):
        label = f"{bridge} {link} {direction.value}"
        base = inv.links[link].baseline if link in inv.links else None
        if base is None or all(getattr(base, f) is None for f in ("bw", "delay", "plr", "queue")):
            if got is not None and not got.unlimited:
                out.append(f"{label}: expected unshaped (baseline), found {got.describe()}")
            continue
        want = PipeConfig.from_args(base.bw, base.delay, base.plr, base.queue)
        if got is None:
            got = PipeConfig()
        fields = [f for f, v in (("bw_bps", base.bw), ("delay_us", base.delay), ("plr", base.plr),
                                 ("queue", base.queue)) if v is not None]
        out += diff_pipe(want, got, label=label, fields=fields)
    return out


def clock_spread(offsets: dict[str, Any], bound_s: float) -> tuple[str, float, float, str, str]:
    """The spread of the hosts' clock offsets against `bound_s` (pure): each offset is known to
    +-rtt/2 (ClockOffset.rtt_s), so the spread between the two extreme hosts is known to the sum
    of their halves. "ok": measured within the bound; "over": above the bound even at the far end
    of the uncertainty (the clocks do differ by more); "unclear": measured above the bound but
    within the uncertainty of it (a loaded host or controller: measure again).
    Returns (verdict, spread_s, uncertainty_s, the host ahead, the host behind)."""
    hi = max(offsets, key=lambda h: offsets[h].measured_s)
    lo = min(offsets, key=lambda h: offsets[h].measured_s)
    spread = offsets[hi].measured_s - offsets[lo].measured_s
    unc = (offsets[hi].rtt_s + offsets[lo].rtt_s) / 2
    verdict = "ok" if spread <= bound_s else ("over" if spread - unc > bound_s else "unclear")
    return verdict, spread, unc, hi, lo


async def health_check(inv: Any, hosts: Sequence[str], spec: HealthSpec, log_path: Path | None,
                       pool: SSHPool | None = None) -> HealthResult:
    """`pool`: the caller's, left open (the run that follows takes its connections over)."""
    reasons: list[str] = []
    details: dict[str, Any] = {"hosts": {}, "clock": {}, "shapers": {}}
    log = CommandLog(log_path)
    own = pool is None
    if pool is None:
        pool = SSHPool(inv, log, hosts)
    else:
        pool.set_log(log)
    try:
        connected = await pool.connect_all()
        reachable = []
        for h, r in connected.items():
            if r.failed:
                msg = r.exception.one_line() if isinstance(r.exception, CtlError) else repr(r.exception)
                details["hosts"][h] = msg
                reasons.append(f"{h} unreachable over SSH: {msg}")
            else:
                details["hosts"][h] = "ok"
                reachable.append(h)
        # On the caller's pool (a campaign's, kept between runs) the echo stays open for the run
        # that follows and the next check (ClockEcho.kept); on a pool of its own it is closed.
        async def offsets(samples: int) -> dict[str, Any]:
            offs = await asyncio.gather(*((measure_clock_offset(pool[h], samples) if own else
                                           ClockEcho.kept(pool[h]).offset(samples)) for h in reachable),
                                        return_exceptions=True)
            return dict(zip(reachable, offs, strict=True))
        # A spread measured above the bound but within the measurement's own uncertainty is measured
        # once more, with twice the exchanges, before it counts: a loaded moment must not pause an
        # overnight campaign, and clocks that do differ still do on the second measurement.
        for attempt, samples in enumerate((spec.clock_samples, 2 * spec.clock_samples)):
            got = await offsets(samples)
            measured = {h: o for h, o in got.items() if not isinstance(o, BaseException)}
            verdict = clock_spread(measured, spec.max_clock_spread_s)[0] if len(measured) >= 2 else "ok"
            if verdict != "unclear" or attempt == 1:
                break
            details["clock_remeasured"] = True
        for h, o in got.items():
            if isinstance(o, BaseException):
                details["clock"][h] = {"error": str(o)}
                reasons.append(f"{h}: clock offset not measurable: {o}")
            else:
                details["clock"][h] = o.to_json()
        if len(measured) >= 2:
            verdict, spread, unc, hi, lo = clock_spread(measured, spec.max_clock_spread_s)
            details["clock_spread_s"], details["clock_spread_uncertainty_s"] = spread, unc
            if verdict != "ok":
                reasons.append(f"clocks differ by {format_delay(int(spread * 1e6))} +- {format_delay(int(unc * 1e6))} "
                               f"between {hi} and {lo} (bound {spec.max_clock_spread}"
                               + ("; measured twice" if details.get("clock_remeasured") else "") + ")")
        if spec.shapers_at_baseline:
            bridges = [b for b in hosts if inv.hosts[b].shaper is not None and b in reachable]
            states = await asyncio.gather(*(read_state(shaper_class(inv.hosts[b].shaper.kind)(inv, b), pool[b])
                                            for b in bridges), return_exceptions=True)   # every bridge at once
            for b, st in zip(bridges, states, strict=True):
                if isinstance(st, CtlError):
                    reasons.append(f"{b}: shaping not readable: {st.one_line()}")
                    continue
                if isinstance(st, BaseException):
                    raise st
                details["shapers"][b] = {f"{k[0]}.{k[1].value}": (v.to_json() if v else None)
                                         for k, v in st.pipes.items()}
                reasons += baseline_problems(inv, b, st)
    finally:
        if own:
            await pool.close()
        log.close()
    return HealthResult(not reasons, reasons, details)


# ==== progress telemetry ===========================================================================
