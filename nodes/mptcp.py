"""Linux MPTCP endpoint driver: path-manager limits and endpoints, sysctls, congestion control.

Like a shaper: read the host's state, plan the commands that reach the desired state
(pure), apply, read back and verify, and afterwards restore exactly what was there
(limits, the endpoint list with ids and flags, every sysctl it changed).

The in-kernel path manager is configured the way that gives exactly one subflow per path
(measured on these kernels): `signal` endpoints for the server's other-path addresses on
the server only, and `limits subflows N add_addr_accepted N` on both ends.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

from controller.commands import Command, CommandResult
from controller.errors import ParameterError, ParseError
from controller.parsers import ip_mptcp
from nodes.congestion.catalog import ALGORITHMS

FLAGS = ("signal", "subflow", "backup", "fullmesh")


@dataclass(frozen=True, order=True)
class MptcpEndpoint:
    address: str
    dev: str | None = None
    flags: tuple[str, ...] = ()
    id: int | None = None
    port: int | None = None

    def same_as(self, other: "MptcpEndpoint") -> bool:
        """Equal apart from the id the kernel assigns."""
        return (self.address, self.dev, tuple(sorted(self.flags)), self.port) == \
            (other.address, other.dev, tuple(sorted(other.flags)), other.port)

    def add_argv(self, with_id: bool) -> tuple[str, ...]:
        argv = ["ip", "mptcp", "endpoint", "add", self.address]
        if self.dev:
            argv += ["dev", self.dev]
        if with_id and self.id is not None:
            argv += ["id", str(self.id)]
        if self.port is not None:
            argv += ["port", str(self.port)]
        argv += sorted(self.flags)
        return tuple(argv)


@dataclass(frozen=True)
class EndpointConfig:
    """Desired MPTCP state of one endpoint host."""

    mptcp: bool = True                 # False: a plain-TCP host; its MPTCP state is left alone
    subflows: int = 2
    add_addr_accepted: int = 2
    endpoints: tuple[MptcpEndpoint, ...] = ()
    sysctls: Mapping[str, str] = field(default_factory=dict)
    congestion_controls: frozenset[str] = frozenset()
    # Keys of `sysctls` set only where the kernel has them (newer knobs, e.g. MPTCP's SYN
    # fallback on 6.12+); elsewhere they are recorded as absent and left alone.
    optional_sysctls: frozenset[str] = frozenset()

    def wanted_sysctls(self, available: Mapping[str, str] | None = None) -> dict[str, str]:
        want = {**({"net.mptcp.enabled": "1"} if self.mptcp else {}), **self.sysctls}
        if available is not None:
            want = {k: v for k, v in want.items() if k in available or k not in self.optional_sysctls}
        return want


@dataclass
class EndpointState:
    mptcp_enabled: bool
    subflows: int
    add_addr_accepted: int
    endpoints: list[MptcpEndpoint]
    sysctls: dict[str, str]
    cc_available: list[str]
    cc_allowed: list[str]
    raw: dict[str, str] = field(default_factory=dict)
    # Read in a dry run: the values are what the dry run assumed (DRY_RUN_*), not the host's.
    assumed: bool = False

    def to_json(self) -> dict:
        out = {"mptcp_enabled": self.mptcp_enabled, "limits": {"subflows": self.subflows,
                                                             "add_addr_accepted": self.add_addr_accepted},
               "endpoints": [e.__dict__ for e in self.endpoints], "sysctls": self.sysctls,
               "cc_available": self.cc_available, "cc_allowed": self.cc_allowed, "raw": self.raw}
        return {**out, "assumed": True} if self.assumed else out


# Read and recorded, never set or restored by this driver: the kernel-wide congestion-control
# lists change when BPF algorithms load (nodes.congestion.driver owns what it adds to them,
# and another rack sharing the kernel may load its own meanwhile).
UNMANAGED = ("net.ipv4.tcp_available_congestion_control", "net.ipv4.tcp_allowed_congestion_control")
# What a dry run assumes it read where a host cannot be asked: Linux's defaults (net/ipv4/
# tcp.c tcp_init_mem/sysctl_tcp_rmem/wmem, net/mptcp/ctrl.c, the path manager's limits), and
# for any other key a placeholder that says the value is read at run time. A restore step
# built from them says so in its note (DRY_RUN_NOTE): a dry run never prints a made-up value
# as if it were the host's.
DRY_RUN_SYSCTLS = {"net.ipv4.tcp_congestion_control": "cubic",
                   "net.ipv4.tcp_available_congestion_control": "reno cubic",
                   "net.ipv4.tcp_allowed_congestion_control": "reno cubic",
                   "net.mptcp.enabled": "1",
                   "net.ipv4.tcp_rmem": "4096 131072 6291456",
                   "net.ipv4.tcp_wmem": "4096 16384 4194304"}
DRY_RUN_UNKNOWN = "<value read before the run>"
DRY_RUN_LIMITS = "add_addr_accepted 0 subflows 2"
DRY_RUN_NOTE = " (assumed: Linux's defaults, read from the host at run time)"
BASE_SYSCTLS = ("net.mptcp.enabled", "net.ipv4.tcp_available_congestion_control",
                "net.ipv4.tcp_allowed_congestion_control", "net.ipv4.tcp_congestion_control")


def parse_sysctl_lines(text: str) -> dict[str, str]:
    """`sysctl a b` output (`a = v` per line) -> {a: v}; values keep their inner spacing normalised."""
    out = {}
    for line in text.splitlines():
        if " = " in line:
            k, v = line.split(" = ", 1)
            out[k.strip()] = " ".join(v.split())
        elif line.strip().endswith(" ="):
            out[line.strip()[:-2].strip()] = ""
    return out


def parse_limits(text: str) -> tuple[int, int]:
    """(subflows, add_addr_accepted) from `ip mptcp limits show` (text, even with -j on iproute2 6.1)."""
    lim = ip_mptcp.parse_limits(text)
    if lim.subflows is None or lim.add_addr_accepted is None:
        raise ParseError(f"ip mptcp limits show: incomplete output {text!r}")
    return lim.subflows, lim.add_addr_accepted


def parse_endpoints(text: str) -> list[MptcpEndpoint]:
    return [MptcpEndpoint(address=e.address, dev=e.dev, flags=tuple(f for f in FLAGS if getattr(e, f)),
                          id=e.id, port=e.port) for e in ip_mptcp.parse_endpoints(text)]


class MptcpEndpointDriver:  # implements nodes.base.EndpointDriver[EndpointConfig, EndpointState]
    """Driver for one Linux MPTCP endpoint host."""

    def __init__(self, host: str, extra_sysctls: Iterable[str] = ()):
        self.host = host
        self.sysctl_keys = tuple(dict.fromkeys((*BASE_SYSCTLS, *extra_sysctls)))

    def read_commands(self) -> list[Command]:
        return [
            Command(("ip", "-j", "mptcp", "endpoint", "show"), timeout=10, note="MPTCP endpoints", assume="[]"),
            Command(("ip", "mptcp", "limits", "show"), timeout=10, note="MPTCP limits", assume=DRY_RUN_LIMITS),
            # check=False: a key this kernel lacks is reported on stderr and left out of stdout;
            # check() then says which (optional keys are simply skipped).
            Command(("sysctl", *self.sysctl_keys), timeout=10, check=False, note="sysctls",
                    assume="\n".join(f"{k} = {DRY_RUN_SYSCTLS.get(k, DRY_RUN_UNKNOWN)}" for k in self.sysctl_keys)),
        ]

    def parse_state(self, results: list[CommandResult]) -> EndpointState:
        eps = parse_endpoints(results[0].stdout)
        subflows, accepted = parse_limits(results[1].stdout)
        sysctls = parse_sysctl_lines(results[2].stdout)
        raw = {" ".join(r.argv): r.stdout for r in results}
        return EndpointState(
            mptcp_enabled=sysctls.get("net.mptcp.enabled") == "1", subflows=subflows, add_addr_accepted=accepted,
            endpoints=eps, sysctls=sysctls,
            cc_available=sysctls.get("net.ipv4.tcp_available_congestion_control", "").split(),
            cc_allowed=sysctls.get("net.ipv4.tcp_allowed_congestion_control", "").split(), raw=raw,
            assumed=any(r.dry_run for r in results))

    def state_from_record(self, recorded: Mapping[str, object]) -> EndpointState:
        """Re-parse a state saved in a run record (crash recovery)."""
        raw = recorded.get("raw") or {}
        results = []
        for c in self.read_commands():
            key = " ".join(c.argv)
            if key not in raw:  # type: ignore[operator]
                raise ValueError(f"{self.host}: the record has no output of `{key}`")
            results.append(CommandResult(self.host, c.argv, 0, raw[key], ""))  # type: ignore[index]
        return self.parse_state(results)

    def expected_state(self, before: EndpointState, desired: EndpointConfig) -> EndpointState:
        """What the host would read back after plan(desired, before) ran (pure; for dry runs)."""
        sysctls = {**before.sysctls, **desired.wanted_sysctls(before.sysctls)}
        if not desired.mptcp:
            return EndpointState(before.mptcp_enabled, before.subflows, before.add_addr_accepted,
                                 list(before.endpoints), sysctls, before.cc_available, before.cc_allowed)
        eps = list(before.endpoints) if _same_endpoints(desired.endpoints, before.endpoints) else [
            MptcpEndpoint(e.address, e.dev, e.flags, i + 1, e.port) for i, e in enumerate(desired.endpoints)]
        return EndpointState(True, desired.subflows, desired.add_addr_accepted, eps, sysctls,
                             before.cc_available, before.cc_allowed)

    def check(self, desired: EndpointConfig, observed: EndpointState) -> None:
        """Refuse what this host cannot do, before anything is changed."""
        for k in desired.sysctls:
            if k not in observed.sysctls and k not in desired.optional_sysctls:
                raise ParameterError(f"{self.host}: sysctl {k} does not exist on this host")
        if desired.subflows > 8 or desired.add_addr_accepted > 8:
            raise ParameterError(f"{self.host}: MPTCP limits above the kernel maximum of 8")
        default = desired.sysctls.get("net.ipv4.tcp_congestion_control")
        if default and default != observed.sysctls.get("net.ipv4.tcp_congestion_control") \
                and default not in observed.cc_available and default not in ALGORITHMS:
            # ctl's BPF programs are loaded before the endpoints are configured
            raise ParameterError(f"{self.host}: {default} cannot be the default congestion control: the kernel "
                                 f"has {' '.join(observed.cc_available) or 'none listed'}")

    def plan(self, desired: EndpointConfig, observed: EndpointState) -> list[Command]:
        out: list[Command] = []
        changes = [f"{k}={v}" for k, v in desired.wanted_sysctls(observed.sysctls).items()
                   if observed.sysctls.get(k) != v]
        if changes:
            out.append(Command(("sysctl", "-w", *changes), mutates=True, note="MPTCP and socket sysctls"))
        if not desired.mptcp:
            return out
        if (observed.subflows, observed.add_addr_accepted) != (desired.subflows, desired.add_addr_accepted):
            out.append(Command(("ip", "mptcp", "limits", "set", "subflows", str(desired.subflows),
                                "add_addr_accepted", str(desired.add_addr_accepted)), mutates=True,
                               note="path-manager limits"))
        if not _same_endpoints(desired.endpoints, observed.endpoints):
            if observed.endpoints:
                out.append(Command(("ip", "mptcp", "endpoint", "flush"), mutates=True,
                                   note="remove endpoints that would add subflows"))
            for e in desired.endpoints:
                out.append(Command(e.add_argv(with_id=False), mutates=True, note="path-manager endpoint"))
        return out

    def verify(self, desired: EndpointConfig, observed: EndpointState) -> list[str]:
        diffs = []
        for k, v in desired.wanted_sysctls(observed.sysctls).items():
            if observed.sysctls.get(k) != v:
                diffs.append(f"sysctl {k} expected {v}, found {observed.sysctls.get(k)}")
        if not desired.mptcp:
            return diffs
        if (observed.subflows, observed.add_addr_accepted) != (desired.subflows, desired.add_addr_accepted):
            diffs.append(f"limits expected subflows {desired.subflows} add_addr_accepted "
                         f"{desired.add_addr_accepted}, found {observed.subflows} / {observed.add_addr_accepted}")
        if not _same_endpoints(desired.endpoints, observed.endpoints):
            diffs.append(f"endpoints expected {[e.add_argv(False)[4:] for e in desired.endpoints]}, "
                         f"found {[e.add_argv(True)[4:] for e in observed.endpoints]}")
        return diffs

    def plan_restore(self, before: EndpointState, now: EndpointState) -> list[Command]:
        out: list[Command] = []
        if [(e.address, e.dev, e.flags, e.id, e.port) for e in now.endpoints] != \
                [(e.address, e.dev, e.flags, e.id, e.port) for e in before.endpoints]:
            if now.endpoints:
                out.append(Command(("ip", "mptcp", "endpoint", "flush"), mutates=True, note="restore endpoints"))
            for e in before.endpoints:
                out.append(Command(e.add_argv(with_id=True), mutates=True, note="restore endpoint"))
        assumed = DRY_RUN_NOTE if before.assumed else ""
        if (now.subflows, now.add_addr_accepted) != (before.subflows, before.add_addr_accepted):
            out.append(Command(("ip", "mptcp", "limits", "set", "subflows", str(before.subflows),
                                "add_addr_accepted", str(before.add_addr_accepted)), mutates=True,
                               note="restore limits" + assumed))
        changed = [k for k in self.sysctl_keys
                   if k in before.sysctls and now.sysctls.get(k) != before.sysctls[k] and k not in UNMANAGED]
        if changed:
            assumed = assumed if any(before.sysctls[k] != DRY_RUN_UNKNOWN for k in changed) else ""
            out.append(Command(("sysctl", "-w", *(f"{k}={before.sysctls[k]}" for k in changed)), mutates=True,
                               note="restore sysctls" + assumed))
        return out

    def restored_equal(self, before: EndpointState, after: EndpointState) -> list[str]:
        diffs = []
        def key(e: MptcpEndpoint) -> tuple:
            return (e.id, e.address, e.dev, tuple(sorted(e.flags)), e.port)
        if sorted(map(key, after.endpoints), key=str) != sorted(map(key, before.endpoints), key=str):
            diffs.append("endpoints not restored")  # both lists are in the record (before / restored)
        if (after.subflows, after.add_addr_accepted) != (before.subflows, before.add_addr_accepted):
            diffs.append("limits not restored")
        for k in self.sysctl_keys:
            if k in UNMANAGED:
                continue
            if before.sysctls.get(k) != after.sysctls.get(k):
                diffs.append(f"sysctl {k} not restored ({before.sysctls.get(k)} -> {after.sysctls.get(k)})")
        return diffs


def _same_endpoints(a: Iterable[MptcpEndpoint], b: Iterable[MptcpEndpoint]) -> bool:
    la, lb = sorted(a, key=lambda e: (e.address, e.dev or "")), sorted(b, key=lambda e: (e.address, e.dev or ""))
    return len(la) == len(lb) and all(x.same_as(y) for x, y in zip(la, lb))


def metadata_commands(ifaces: Iterable[str]) -> list[Command]:
    """Read-only facts for the run record: kernel, tools, sysctls, addresses, offloads."""
    cmds = [
        Command(("uname", "-a"), timeout=10, note="kernel"),
        Command(("iperf3", "--version"), timeout=10, check=False, note="iperf3 version"),
        Command(("mptcpize", "--version"), timeout=10, check=False, note="mptcpize version"),
        Command(("ip", "-V"), timeout=10, check=False, note="iproute2 version"),
        Command(("sysctl", "net.mptcp", "net.ipv4.tcp_congestion_control", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem",
                 "net.core.rmem_max", "net.core.wmem_max", "net.ipv4.tcp_no_metrics_save",
                 "net.ipv4.tcp_available_congestion_control", "net.ipv4.tcp_allowed_congestion_control"),
                timeout=10, check=False, note="sysctls"),
        Command(("ip", "-j", "addr", "show"), timeout=10, note="addresses"),
        Command(("ip", "-j", "route", "show", "table", "all"), timeout=10, check=False, note="routes"),
        Command(("ip", "-j", "rule", "show"), timeout=10, check=False, note="policy rules"),
        Command(("tc", "-j", "qdisc", "show"), timeout=10, check=False, note="qdiscs"),
    ]
    for i in ifaces:
        cmds.append(Command(("ethtool", "-k", i), timeout=10, check=False, note=f"offloads of {i}"))
    return cmds
