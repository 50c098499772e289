"""Models of `ctl inventory check --probe --json`'s `probe`: what each host and shaper said and which
scenarios can run (controller/rack/probe.py ProbeReport.to_json, HostProbe.to_json, Check.to_json,
ScenarioVerdict.to_json). Each field is typed from the line of probe.py that sets it (named in the
docstring). Open as every output model (a later version may add keys); one member stays deliberately
open: a shaper back-end's own parsed details (ProbeShaper.details), whose keys are the back-end's.
"""
from __future__ import annotations

from typing import Any, Literal, Optional, Union

from pydantic import Field

from controller.schemas.base import Open


class ProbeCheck(Open):
    """One thing a host's role needs, and what the host has (probe.py Check)."""
    need: str = Field(description="what the role needs (e.g. `iperf3`, `python3 >= 3.9 (sampler, clock)`)")
    have: str = Field(description="what the host has, in words (a version, `missing`, an offset with its unit)")
    ok: bool = Field(description="the host has it")
    blocking: bool = Field(description="true: a scenario that uses this host cannot run without it; false: reported "
                                       "only (e.g. MPTCP on an endpoint only the MPTCP scenarios need)")


class ProbeAccess(Open):
    """How ctl logged in (probe.py _probe_host: the SSH target and the route the connection took); every
    member absent when the host was not reached."""
    user: Optional[str] = Field(default=None, description="the login ctl used")
    sudo: Optional[bool] = Field(default=None, description="commands that need root go through `sudo -n`")
    route: Optional[list[str]] = Field(default=None, description="the hops of the connection, bastions first; "
                                                                 "empty: direct")


class ProbeCongestion(Open):
    """An endpoint's congestion controls (probe.py endpoint_checks: nodes/congestion/driver.py's probe, read-only)."""
    available: list[str] = Field(description="the congestion controls the kernel offers now "
                                             "(net.ipv4.tcp_available_congestion_control)")
    btf: bool = Field(description="the kernel exposes its BTF (/sys/kernel/btf/vmlinux)")
    bpftool: Optional[str] = Field(description="bpftool's version; null: not installed")
    struct_ops: bool = Field(description="the BTF has BPF struct_ops for tcp_congestion_ops")
    bpf: dict[str, str] = Field(description="each of ctl's BPF congestion controls (`ctl cc list`) -> `loadable`, or "
                                            "why it could not be loaded here; nothing is loaded by the probe")


class ProbeCongestionError(Open):
    """The endpoint's congestion-control probe gave no answer ctl could read (probe.py endpoint_checks)."""
    error: str = Field(description="why, in one line")


class ProbeShaper(Open):
    """A bridge's shaper as its own read commands showed it (probe.py shaper_checks)."""
    kind: str = Field(description="the shaper back-end (dummynet, dnpipe, tc)")
    links: list[str] = Field(description="the inventory links this bridge shapes")
    release: Optional[str] = Field(default=None, description="dummynet: the host's FreeBSD release; null: unknown; "
                                                             "absent: another back-end")
    tool: Optional[str] = Field(default=None, description="dummynet: ipfw or dnctl, by the release; null: unknown")
    listing_format: Optional[str] = Field(default=None, description="dummynet: how `ipfw pipe show` lists pipes "
                                                                    "(modern, classic)")
    limits: Optional[dict[str, str]] = Field(default=None, description="dummynet: the net.inet.ip.dummynet.*limit* "
                                                                       "sysctls -> their values as the host printed "
                                                                       "them")
    hz: Optional[str] = Field(default=None, description="dummynet: kern.hz (ticks per second: the delay's "
                                                        "granularity), as printed; null: not read")
    warnings: Optional[list[str]] = Field(default=None, description="dummynet: host settings ctl warns about")
    details: Optional[dict[str, Union[str, int, float, dict[str, Any]]]] = Field(
        default=None, description="another back-end: its own parsed state (bridges/: dnpipe's forwarder per link, tc's "
                                  "foreign qdiscs per port), deliberately open: the keys are the back-end's; absent for "
                                  "dummynet")


class ProbeCommandAnswer(Open):
    """A command a scenario needs asked of this host, and its answer (probe.py _probe_host `extra`)."""
    exit: Optional[int] = Field(description="its exit status; null: it did not exit (timed out, killed, connection lost)")
    out: str = Field(description="the first 80 characters it printed (stdout, else stderr)")


class ProbeClock(Open):
    """The host's clock against this controller's (controller/clocksync.py measure_clock_offset, 5 samples)."""
    offset_ms: float = Field(description="host minus controller, ms")
    rtt_ms: float = Field(description="the round trip of the best sample, ms (the offset is good to half of it)")
    method: str = Field(description="how it was measured")


class ProbeFacts(Open):
    """What the probe read on a host, by kind of host (probe.py endpoint_checks, shaper_checks, _probe_host);
    a member is absent when the host's role does not read it or the probe stopped before it."""
    mptcp_enabled: Optional[str] = Field(default=None, description="endpoints: net.mptcp.enabled as printed (`1`: "
                                                                   "on); null: no such sysctl")
    tools: Optional[dict[str, Optional[str]]] = Field(default=None, description="endpoints: tool (iperf3, mptcpize, "
                                                                                "ss, nstat, ip, python3) -> its "
                                                                                "version; null: missing")
    congestion: Union[ProbeCongestion, ProbeCongestionError, None] = Field(default=None,
                                                                           description="endpoints: congestion controls")
    shaper: Optional[ProbeShaper] = Field(default=None, description="bridges: the shaper")
    extra: Optional[dict[str, ProbeCommandAnswer]] = Field(default=None, description="the command (argv joined by "
                                                                                     "spaces) -> its answer")
    clock: Optional[ProbeClock] = Field(default=None, description="the clock offset")


class ProbedHost(Open):
    """One host of the rack as the probe found it (probe.py HostProbe.to_json)."""
    host: str = Field(description="its name in the inventory")
    role: Literal["endpoint", "bridge", "modem-host", "switch", "router"] = Field(description="its role in the inventory")
    address: str = Field(description="the management address ctl connects to")
    reached: bool = Field(description="ctl logged in and every question got an answer")
    error: Optional[str] = Field(description="why it was not reached; null: it was")
    access: ProbeAccess = Field(description="how ctl logged in (empty: not reached)")
    kernel: Optional[str] = Field(description="`uname -r` (a dummynet bridge: its FreeBSD release); null: not read")
    facts: ProbeFacts = Field(description="what was read")
    checks: list[ProbeCheck] = Field(description="what the role needs, one check each")
    ok: bool = Field(description="reached, and every blocking check passed")


class ProbeVerdict(Open):
    """Whether a shipped scenario can run on this rack as probed (probe.py ScenarioVerdict)."""
    scenario: str = Field(description="the scenario's name")
    runs: bool = Field(description="every host it uses was reached and has what its role needs")
    reasons: list[str] = Field(description="why it cannot run; empty: it can")
    hosts: list[str] = Field(description="the hosts it uses with the rack's role defaults")


class ProbeReportOut(Open):
    """`inventory check --probe`: what the hosts said (probe.py ProbeReport.to_json)."""
    rack: str = Field(description="the inventory's rack name")
    ok: bool = Field(description="every shipped scenario can run here")
    seconds: float = Field(description="how long the probe took, s")
    hosts: dict[str, ProbedHost] = Field(description="host name -> what the probe found (every host ctl logs in to)")
    scenarios: list[ProbeVerdict] = Field(description="each shipped scenario's verdict")
