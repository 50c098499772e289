"""`ctl inventory check --probe`: ask every host of a rack what its role needs, read-only.

Every host ctl logs in to is reached through the SSH layer exactly as a run reaches it (its
login shell, and for a `sudo` account the `sudo -n` rule, are checked at connect:
controller.ssh), then asked, with read-only commands only (every one a `Command` that does not
mutate; the probe refuses to send anything else):

- endpoints: kernel, `net.mptcp.enabled`, the versions of iperf3, mptcpize, ss, nstat, ip and
  python3, and the congestion controls the kernel offers and whether ctl's BPF ones could load
  there (BTF, struct_ops, bpftool; nodes/congestion/driver.py's own probe and check: nothing is
  registered);
- bridges: the shaper's own read commands and parse (dummynet: release, ipfw or dnctl, the
  listing format, the net.inet.ip.dummynet.* limits and the host settings it refuses; dnpipe:
  every link's forwarder answers; tc: the ports' qdiscs);
- every host: the clock offset against this controller (controller.clocksync.measure_clock_offset).

Then each shipped scenario, planned with the rack's role defaults (controller.rack.fit), is
runnable when every host it uses was reached and has what its role needs, its endpoints offer
the congestion controls it asks for, and (mptcp-bittorrent's step 2) its BitTorrent tools are
installed on the hosts that run them. The probe is ok only if every shipped scenario can run.
A virtual rack must be up (`ctl lab up`): its hosts are reached over SSH like any other.
"""
from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from bridges.base import shaper_class
from controller.commands import Command, CommandResult
from controller.errors import CtlError, LabError
from controller.inventory import Inventory, Role
from controller.lab.rack import is_up
from controller.rack.fit import ScenarioFit
from controller.scenarios.mptcp_bittorrent import TOOLS_DIR
from controller.clocksync import measure_clock_offset
from controller.ssh import CommandLog, SSHPool
from nodes.congestion.catalog import ALGORITHMS
from nodes.congestion.driver import CongestionDriver, LoadObject, parse_probe

# (name, argv) of the tools an endpoint runs: iperf3 and mptcpize for traffic, ss and nstat for
# the samplers and counters, ip for addresses and MPTCP endpoints, python3 for the sampler.
TOOLS = (("iperf3", ("iperf3", "--version")), ("mptcpize", ("mptcpize", "--version")), ("ss", ("ss", "-V")),
         ("nstat", ("nstat", "-V")), ("ip", ("ip", "-V")), ("python3", ("python3", "--version")))
NATIVE_MPTCP_IPERF3 = (3, 19)        # iperf3 -m (controller.traffic.iperf3); else `mptcpize run`
MIN_PYTHON = (3, 9)                  # what runs on hosts (CONTRIBUTING: nodes/agent, the sampler)
CLOCK_WARN_S = 0.010                 # the campaign health check's default max_clock_spread
STRUCT_OPS = ("grep", "-c", "-a", "-F", "bpf_struct_ops_tcp_congestion_ops", "/sys/kernel/btf/vmlinux")
_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")
MPTCP_ON = "net.mptcp.enabled = 1 (MPTCP)"
MPTCP_TOOL = "MPTCP for iperf3 and BitTorrent: iperf3 >= 3.19 (-m) or mptcpize"


@dataclass
class Check:
    need: str
    have: str
    ok: bool
    blocking: bool = True            # False: reported, but no scenario depends on it

    def to_json(self) -> dict:
        return {"need": self.need, "have": self.have, "ok": self.ok, "blocking": self.blocking}


@dataclass
class HostProbe:
    host: str
    role: str
    address: str
    reached: bool = False
    error: str | None = None
    access: dict[str, Any] = field(default_factory=dict)
    kernel: str | None = None
    facts: dict[str, Any] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.reached and all(c.ok for c in self.checks if c.blocking)

    def problems(self) -> list[str]:
        if not self.reached:
            return [f"not reached: {(self.error or '').removeprefix(self.host + ': ')}"]
        return [f"needs {c.need}, has {c.have}" for c in self.checks if c.blocking and not c.ok]

    def to_json(self) -> dict:
        return {"host": self.host, "role": self.role, "address": self.address, "reached": self.reached,
                "error": self.error, "access": self.access, "kernel": self.kernel, "facts": self.facts,
                "checks": [c.to_json() for c in self.checks], "ok": self.ok}


@dataclass
class ScenarioVerdict:
    scenario: str
    runs: bool
    reasons: list[str]
    hosts: list[str]

    def to_json(self) -> dict:
        return {"scenario": self.scenario, "runs": self.runs, "reasons": self.reasons, "hosts": self.hosts}


@dataclass
class ProbeReport:
    rack: str
    hosts: dict[str, HostProbe]
    scenarios: list[ScenarioVerdict]
    seconds: float

    @property
    def ok(self) -> bool:
        return all(v.runs for v in self.scenarios)

    def to_json(self) -> dict:
        return {"rack": self.rack, "ok": self.ok, "seconds": round(self.seconds, 3),
                "hosts": {h: p.to_json() for h, p in self.hosts.items()},
                "scenarios": [v.to_json() for v in self.scenarios]}

    def render(self) -> list[str]:
        return render(self)


# ---- what to ask (pure) ------------------------------------------------------------------------

def version_of(text: str) -> str | None:
    """The first version number on the first line a tool printed (`iperf 3.12 (cJSON ...)` -> 3.12)."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    m = _VERSION.search(first)
    return m.group(0) if m else None


def _tuple(version: str | None) -> tuple[int, ...]:
    m = _VERSION.search(version or "")
    return tuple(int(x) for x in m.groups() if x is not None) if m else ()


def endpoint_commands() -> list[Command]:
    out = [Command(("uname", "-r"), timeout=10, check=False, note="kernel"),
           Command(("sysctl", "-n", "net.mptcp.enabled"), timeout=10, check=False, note="MPTCP enabled"),
           *(Command(argv, timeout=10, check=False, note=f"{name} version") for name, argv in TOOLS),
           Command(STRUCT_OPS, timeout=20, check=False, note="BPF struct_ops for TCP congestion control in the BTF")]
    probe = CongestionDriver("probe", "probe").read_commands()[0]
    out.append(Command(probe.argv, timeout=probe.timeout, check=False, note=probe.note))
    return out


def bittorrent_commands(tools_dir: str) -> list[Command]:
    bin_dir = Path(tools_dir) / "node_modules" / ".bin"
    return [Command(("test", "-x", str(bin_dir / name)), timeout=10, check=False, note=f"{name} installed")
            for name in ("webtorrent", "bittorrent-tracker")] + \
           [Command(("node", "--version"), timeout=10, check=False, note="node version")]


def endpoint_checks(p: HostProbe, results: dict[str, CommandResult]) -> None:
    """What an endpoint needs, from the outputs of endpoint_commands (pure)."""
    def out(argv: tuple[str, ...]) -> CommandResult | None:
        return results.get(" ".join(argv))
    uname = out(("uname", "-r"))
    p.kernel = uname.stdout.strip() if uname is not None and uname.ok else None
    mptcp = out(("sysctl", "-n", "net.mptcp.enabled"))
    enabled = mptcp.stdout.strip() if mptcp is not None and mptcp.ok else None
    p.facts["mptcp_enabled"] = enabled
    # MPTCP is what the MPTCP scenarios need of their endpoints (verdicts), not every endpoint
    p.checks.append(Check(MPTCP_ON, enabled if enabled is not None else "no such sysctl (a kernel without MPTCP)",
                          enabled == "1", blocking=False))
    tools: dict[str, str | None] = {}
    for name, argv in TOOLS:
        r = out(argv)
        tools[name] = version_of(r.stdout or r.stderr) if r is not None and r.exit_status == 0 else None
    p.facts["tools"] = tools
    for name in ("iperf3", "ss", "nstat", "ip"):
        p.checks.append(Check(name, tools[name] or "missing", tools[name] is not None))
    native = _tuple(tools["iperf3"]) >= NATIVE_MPTCP_IPERF3
    have = f"iperf3 {tools['iperf3'] or 'missing'}, mptcpize {tools['mptcpize'] or 'missing'}"
    p.checks.append(Check(MPTCP_TOOL, have, native or tools["mptcpize"] is not None, blocking=False))
    py = tools["python3"]
    p.checks.append(Check(f"python3 >= {'.'.join(map(str, MIN_PYTHON))} (sampler, clock)", py or "missing",
                          py is not None and _tuple(py) >= MIN_PYTHON))
    so = out(STRUCT_OPS)
    struct_ops = so is not None and so.exit_status == 0 and so.stdout.strip() not in ("", "0")
    cc = out(CongestionDriver("probe", "probe").read_commands()[0].argv)
    try:
        state = parse_probe(cc.stdout if cc is not None else "")
    except CtlError as exc:
        p.facts["congestion"] = {"error": exc.one_line()}
        p.checks.append(Check("congestion-control probe (python3)", exc.one_line()[:120], False, blocking=False))
        return
    # nodes/congestion/driver.py's own check, as a run makes it before loading (nothing is registered)
    driver = CongestionDriver(p.host, "probe", {n: LoadObject(n, "", "") for n in ALGORITHMS})
    bpf: dict[str, str] = {}
    for name in sorted(ALGORITHMS):
        try:
            driver.check(frozenset({name}), state)
            bpf[name] = "loadable" if struct_ops else "no BPF struct_ops for tcp_congestion_ops in the kernel's BTF"
        except CtlError as exc:
            bpf[name] = exc.one_line().split(": ", 2)[-1]
    p.facts["congestion"] = {"available": state.available, "btf": state.btf, "bpftool": state.bpftool,
                             "struct_ops": struct_ops, "bpf": bpf}
    loadable = sorted(n for n, why in bpf.items() if why == "loadable")
    p.checks.append(Check("BTF, BPF struct_ops, bpftool, kernel >= 6.6 (ctl's BPF congestion controls)",
                          "all there" if loadable else next(iter(bpf.values()), "?"), bool(loadable), blocking=False))


def shaper_checks(p: HostProbe, inv: Inventory, results: list[CommandResult]) -> None:
    """A bridge: its shaper's own parse of its own read commands, and the host settings it refuses."""
    host = inv.hosts[p.host]
    assert host.shaper is not None
    shaper = shaper_class(host.shaper.kind)(inv, p.host)
    kind = host.shaper.kind
    links = sorted(l for l, x in inv.links.items() if x.bridge == p.host)
    p.facts["shaper"] = {"kind": kind, "links": links}
    if not links:
        p.checks.append(Check(f"{kind}: a link to shape", "no link names this bridge", True, blocking=False))
        return
    failed = [r for r in results if r.exit_status != 0]
    try:
        if failed:
            r = failed[0]
            said = " ".join((r.stderr or r.stdout).split())[:160]
            raise CtlError(f"`{' '.join(r.argv)[:80]}` exit {r.exit_status}: {said}")
        state = shaper.parse_state(results)
    except CtlError as exc:
        p.checks.append(Check(f"{kind}: its state readable", exc.one_line(), False))
        return
    details = dict(state.details or {})
    if kind == "dummynet":
        snap = shaper.snapshot(state)
        limits = {k: v for k, v in snap.sysctl.items() if k.startswith("net.inet.ip.dummynet.") and "limit" in k}
        p.kernel = snap.os_release
        p.facts["shaper"].update(release=snap.os_release, tool=details.get("tool"),
                                 listing_format=details.get("listing_format"), limits=limits,
                                 hz=snap.sysctl.get("kern.hz"), warnings=details.get("warnings", []))
        problems = shaper.host_problems(snap)
        p.checks.append(Check("dummynet: ipfw's layer-2 hooks on, dummynet loaded", "; ".join(problems) or "yes",
                              not problems))
        p.checks.append(Check("dummynet: the release (ipfw or dnctl)", snap.os_release or "unknown",
                              snap.major is not None or host.shaper.tool != "auto"))
    else:
        p.facts["shaper"].update(details={k: v for k, v in details.items() if isinstance(v, (str, int, float, dict))})
        p.checks.append(Check(f"{kind}: every link's state readable", "yes", True))


# ---- asking (the shell) ------------------------------------------------------------------------

async def _run(session: Any, commands: list[Command]) -> list[CommandResult]:
    out = []
    for c in commands:
        if c.mutates:   # the probe changes nothing: a mutating command here is a bug
            raise AssertionError(f"probe: {c.argv} mutates")
        out.append(await session.run(c))
    return out


async def _probe_host(pool: SSHPool, inv: Inventory, h: str, extra: list[Command]) -> HostProbe:
    host = inv.hosts[h]
    p = HostProbe(h, host.role.value, host.mgmt.address)
    session = pool.sessions[h]
    try:
        await session.connect()
    except CtlError as exc:
        p.error = exc.one_line()
        return p
    p.reached = True
    t = session.target
    p.access = {"user": t.ssh.user, "sudo": t.ssh.sudo, "route": list(session.route or [])}
    try:
        if host.role is Role.ENDPOINT:
            cmds = endpoint_commands()
            res = await _run(session, cmds + extra)
            endpoint_checks(p, {" ".join(r.argv): r for r in res})
        elif host.role is Role.BRIDGE and host.shaper is not None:
            shaper = shaper_class(host.shaper.kind)(inv, h)
            uname = await _run(session, [Command(("uname", "-r"), timeout=10, check=False, note="kernel")])
            p.kernel = uname[0].stdout.strip() or None
            res = await _run(session, list(shaper.read_commands()))
            shaper_checks(p, inv, res)
            res += await _run(session, extra)
        else:
            res = await _run(session, [Command(("uname", "-r"), timeout=10, check=False, note="kernel"),
                                       Command(("python3", "--version"), timeout=10, check=False, note="python3"),
                                       *extra])
            p.kernel = res[0].stdout.strip() or None
            py = version_of(res[1].stdout or res[1].stderr) if res[1].ok else None
            p.checks.append(Check(f"python3 >= {'.'.join(map(str, MIN_PYTHON))}", py or "missing",
                                  py is not None and _tuple(py) >= MIN_PYTHON, blocking=host.role is Role.MODEM_HOST))
        p.facts["extra"] = {" ".join(r.argv): {"exit": r.exit_status, "out": (r.stdout or r.stderr).strip()[:80]}
                            for r in res if " ".join(r.argv) in {" ".join(c.argv) for c in extra}}
        off = await measure_clock_offset(session, samples=5)
        p.facts["clock"] = {"offset_ms": round(off.offset_s * 1000, 3), "rtt_ms": round(off.rtt_s * 1000, 3),
                            "method": off.method}
        p.checks.append(Check(f"clock within {CLOCK_WARN_S * 1000:g} ms of the controller",
                              f"{off.offset_s * 1000:+.3f} ms (+-{off.rtt_s * 500:.3f} ms)",
                              abs(off.offset_s) <= CLOCK_WARN_S, blocking=False))
    except CtlError as exc:
        p.reached = False
        p.error = exc.one_line()
    return p


def _extra_commands(inv: Inventory, fits: list[ScenarioFit]) -> dict[str, list[Command]]:
    """Scenario-specific read-only commands per host: the BitTorrent tools of mptcp-bittorrent's step 2."""
    out: dict[str, list[Command]] = {}
    for f in fits:
        if f.scenario == "mptcp-bittorrent" and f.ok and f.params.get("step") == "bittorrent":
            tools = str(f.params.get("bt_tools") or TOOLS_DIR)
            hosts = {f.params["seeder"], f.params["leecher"]}
            if f.params.get("tracker") == "global":
                hosts.add(f.params["tracker_host"])
            for h in hosts:
                have = {c.argv for c in out.get(h, [])}
                out.setdefault(h, []).extend(c for c in bittorrent_commands(tools) if c.argv not in have)
    return out


def verdicts(inv: Inventory, fits: list[ScenarioFit], hosts: dict[str, HostProbe]) -> list[ScenarioVerdict]:
    """Which scenarios can run, from the fits and what the hosts said (pure)."""
    out = []
    for f in fits:
        if not f.ok or f.plan is None:
            out.append(ScenarioVerdict(f.scenario, False, [f.reason or "cannot be planned on this rack"], []))
            continue
        used = f.hosts(inv)
        # an unreached host's error is in its own row (and its JSON): here only that it was not reached
        reasons = [f"{h}: {'not reached' if not hosts[h].reached else why}" for h in used if h in hosts
                   for why in hosts[h].problems()]
        mptcp_hosts = {h for h, ep in f.plan.endpoints.items() if ep.mptcp} | set(f.plan.mptcp_hosts) | \
            {h for fl in f.plan.flows if fl.protocol == "mptcp" for h in (fl.client, fl.server)}
        for h in sorted(mptcp_hosts & set(hosts)):
            reasons += [f"{h}: needs {c.need}, has {c.have}" for c in hosts[h].checks
                        if c.need in (MPTCP_ON, MPTCP_TOOL) and not c.ok and hosts[h].reached]
        for h, ep in sorted(f.plan.endpoints.items()):
            cc = (hosts.get(h).facts.get("congestion") or {}) if h in hosts else {}
            for name in sorted(ep.congestion_controls):
                if name in ALGORITHMS:
                    why = (cc.get("bpf") or {}).get(name, "not probed")
                    if why != "loadable":
                        reasons.append(f"{h}: congestion control {name} (BPF): {why}")
                elif "available" in cc and name not in cc["available"]:
                    reasons.append(f"{h}: congestion control {name} not offered by the kernel "
                                   f"({' '.join(cc['available']) or 'none'})")
        for h in used:
            for argv, r in ((hosts[h].facts.get("extra") or {}) if h in hosts else {}).items():
                if r["exit"] != 0 and f.scenario == "mptcp-bittorrent":
                    reasons.append(f"{h}: `{argv}` failed (exit {r['exit']}): the BitTorrent tools (npm ci in "
                                   "nodes/bittorrent, node) are needed there")
        out.append(ScenarioVerdict(f.scenario, not reasons, reasons, used))
    return out


async def _probe(inv: Inventory, fits: list[ScenarioFit], progress: Callable[[str], None] | None) -> ProbeReport:
    t0 = time.monotonic()
    hosts = sorted(h for h, x in inv.hosts.items() if x.role is not Role.SWITCH and inv.ssh_for(h) is not None)
    if progress:
        progress(f"probing {len(hosts)} hosts of rack {inv.name} over SSH (read-only)")
    pool = SSHPool(inv, CommandLog(None), hosts)
    extra = _extra_commands(inv, fits)
    try:
        probes = await asyncio.gather(*(_probe_host(pool, inv, h, extra.get(h, [])) for h in hosts))
    finally:
        await pool.close()
    by_host = {p.host: p for p in probes}
    return ProbeReport(inv.name, by_host, verdicts(inv, fits, by_host), time.monotonic() - t0)


def probe_rack(inv: Inventory, fits: list[ScenarioFit], progress: Callable[[str], None] | None = None) -> ProbeReport:
    if inv.kind == "virtual" and not is_up(inv):
        raise LabError(f"virtual rack {inv.name} is down: `ctl lab up` first (the probe asks its hosts over SSH)")
    return asyncio.run(_probe(inv, fits, progress))


# ---- printing ------------------------------------------------------------------------------------

def _value(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.1f}"
    return str(v) if v not in (None, "") else "?"


def _unit(sysctl: str) -> str:
    return " bytes" if "byte" in sysctl else " slots" if "slot" in sysctl else ""


def _link_details(link: str, d: Any) -> str:
    """One link's back-end details: a dnpipe forwarder (pid, its two ports, uptime) or whatever
    else a back-end put there, key by key."""
    if not isinstance(d, dict):
        return f"{link}: {_value(d)}"
    if {"pid", "a", "b"} <= set(d):
        return (f"{link}: forwarder pid {_value(d.get('pid'))} between {_value(d.get('a'))} and "
                f"{_value(d.get('b'))}, up {_value(d.get('uptime_s'))} s")
    return f"{link}: " + (", ".join(f"{k} {_value(v)}" for k, v in sorted(d.items())) or "nothing")


def shaper_summary(shaper: dict[str, Any]) -> str:
    """A bridge's cell in the probe table: what `facts.shaper` of the JSON holds, for every kind
    (pure: it reads only that dict). dummynet: release, tool, listing format, the
    net.inet.ip.dummynet.* limits and kern.hz; dnpipe: each link's forwarder; tc: the ports whose
    qdiscs ctl would not overwrite; any other back-end detail key by key."""
    what = shaper.get("kind") or "?"
    if shaper.get("release"):
        what += f" {shaper['release']}"
    links = shaper.get("links")
    parts = []
    if links is not None:
        parts.append(f"shapes {', '.join(links)}" if links else "no link to shape")
    if "tool" in shaper or "limits" in shaper:
        lim = shaper.get("limits") or {}
        limits = ", ".join(f"{k.removeprefix('net.inet.ip.dummynet.')} {v}{_unit(k)}"
                           for k, v in sorted(lim.items())) or "no limits read"
        parts.append(f"{_value(shaper.get('tool'))}, {_value(shaper.get('listing_format'))} listing, {limits}, "
                     f"kern.hz {_value(shaper.get('hz'))}{' Hz' if shaper.get('hz') else ''}")
    details = shaper.get("details") or {}
    for key, d in sorted(details.items()):
        if key == "foreign":
            foreign = d if isinstance(d, dict) else {}
            parts.append("; ".join(f"port {port}: {why} (ctl will not overwrite it)"
                                   for port, why in sorted(foreign.items())) or "no foreign qdisc")
        else:
            parts.append(_link_details(key, d))
    return what + (": " + "; ".join(parts) if parts else "")


def _cell(p: HostProbe) -> list[str]:
    tools = p.facts.get("tools") or {}
    cc = p.facts.get("congestion") or {}
    clock = p.facts.get("clock") or {}
    shaper = p.facts.get("shaper") or {}
    if not p.reached:
        what = "not reached"
    elif p.role == "endpoint":
        what = (f"MPTCP {'on' if p.facts.get('mptcp_enabled') == '1' else 'OFF'}; iperf3 {tools.get('iperf3') or '-'}, "
                f"mptcpize {tools.get('mptcpize') or '-'}, ss/nstat {tools.get('ss') or '-'}; BPF cc "
                f"{'yes' if any(v == 'loadable' for v in (cc.get('bpf') or {}).values()) else 'no'}")
        extra = p.facts.get("extra") or {}
        if extra:
            what += f"; BitTorrent tools {'yes' if all(r['exit'] == 0 for r in extra.values()) else 'NO'}"
    elif shaper:
        what = shaper_summary(shaper)
    else:
        what = f"python3 {next((c.have for c in p.checks if c.need.startswith('python3')), '-')}"
    who = f"{p.access.get('user')}@{p.address}" + (" (sudo -n)" if p.access.get("sudo") else "") if p.reached else "-"
    off = f"{clock['offset_ms']:+.2f} ms" if "offset_ms" in clock else "-"
    return [p.host, p.role, who, p.kernel or "-", off, what]


def render(report: ProbeReport) -> list[str]:
    lines = [f"probe of rack {report.rack}: {len(report.hosts)} hosts over SSH in {report.seconds:.1f} s "
             "(read-only: nothing on a host was changed)"]
    rows = [["host", "role", "reached as", "kernel", "clock", "what is there (what is missing: below the host)"]] + \
           [_cell(p) for p in report.hosts.values()]
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    for r in rows:
        lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(r[:5], widths)) + "  " + r[5])
        p = report.hosts.get(r[0])
        if p is not None:
            lines += [f"      {p.host}: {why}" for why in p.problems()]
            lines += [f"      {p.host}: note: {c.need}: {c.have}" for c in p.checks if not c.blocking and not c.ok]
            lines += [f"      {p.host}: note: {w}" for w in (p.facts.get("shaper") or {}).get("warnings") or []]
    lines.append("scenarios (with the rack's role defaults):")
    width = max((len(v.scenario) for v in report.scenarios), default=8)
    for v in report.scenarios:
        if v.runs:
            lines.append(f"  {v.scenario:<{width}}  can run   ({', '.join(v.hosts)})")
        else:
            lines.append(f"  {v.scenario:<{width}}  cannot    {v.reasons[0]}")
            lines += [f"  {'':<{width}}            {why}" for why in v.reasons[1:]]
    cannot = [v.scenario for v in report.scenarios if not v.runs]
    lines.append(f"rack {report.rack} can run every shipped scenario" if not cannot else
                 f"rack {report.rack} cannot run {len(cannot)} of {len(report.scenarios)} shipped scenarios: "
                 + ", ".join(cannot))
    return lines
