"""Declarative scenarios: typed parameters, the roles they need, links, endpoints, flows.

A scenario module defines one `Scenario` value: its parameters (type, unit, default,
allowed range), and pure functions from (parameters, inventory) to a `RunPlan` (desired
link state per pipe, endpoint configuration, flows, what to sample) and from measured
`RunData` to a summary. The runner executes any plan the same way on any rack.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal, Mapping, Sequence

from bridges.base import PipeConfig, PipeKey
from controller.argutil import argv_value, join_negative_values, name_value
from controller.errors import ParameterError, ScenarioError, UsageError
from controller.inventory import Inventory, Role
from controller.traffic.iperf3 import FlowSpec
from controller.units import (
    Conversion,
    format_delay,
    format_percent,
    format_probability,
    format_rate,
    format_rate_arg,
    format_size,
    parse_delay_us,
    parse_duration,
    parse_int,
    parse_probability,
    parse_queue,
    parse_rate,
    parse_size,
)
from nodes.mptcp import EndpointConfig

ParamType = Literal["rate", "duration", "delay", "probability", "size", "queue", "int", "choice", "name", "host",
                    "link", "path"]
# The parameters that name a part of the rack (a host, an inventory link): their defaults follow the
# inventory's `plays` (role_default), and they are never part of the run id.
ROLE_TYPES = ("host", "link")



@dataclass(frozen=True)
class Param:
    name: str
    type: ParamType
    default: Any
    help: str
    min: Any = None
    max: Any = None
    choices: tuple[str, ...] | None = None
    in_run_id: bool = True

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def parse(self, raw: Any) -> Any:
        what = self.flag
        t = self.type
        if raw is None:
            return None
        if t == "rate":
            v = parse_rate(raw, what=what)
        elif t == "duration":
            v = parse_duration(raw, what=what)
        elif t == "delay":
            v = parse_delay_us(raw, what=what)
        elif t == "probability":
            v = parse_probability(raw, what=what)
        elif t == "size":
            v = parse_size(raw, what=what)
        elif t == "queue":
            return parse_queue(raw, what=what)
        elif t == "int":
            v = parse_int(raw, what=what)
        elif t == "path":
            v = argv_value(raw, what)      # it becomes an argument of a remote command
            if not v.startswith("/"):
                raise ParameterError(f"{what}: {raw!r} is not an absolute path")
            return v.rstrip("/") or "/"
        elif t in ("choice", "name", *ROLE_TYPES):
            v = str(raw)
            if self.choices is not None and v not in self.choices:
                raise ParameterError(f"{what}: {raw!r} is not one of {', '.join(self.choices)}")
            if t == "name":
                name_value(v, "cc", what)
            return v
        else:  # pragma: no cover - a programming error in a scenario definition
            raise AssertionError(t)
        if self.min is not None and v < self._bound(self.min):
            raise ParameterError(f"{what}: {raw} is below the minimum {self._bound_text(self.min)}")
        if self.max is not None and v > self._bound(self.max):
            raise ParameterError(f"{what}: {raw} is above the maximum {self._bound_text(self.max)}")
        return v

    def _bound_text(self, b: Any) -> str:
        """A bound in an error: as written when it is text (`5s`, `10G`: it carries its unit), a count
        bare, a number with the parameter's unit (`86400 s`, not `86400`)."""
        return b if isinstance(b, str) or self.type == "int" else self.display(b)

    def _bound(self, b: Any) -> Any:
        """A bound written like a value (`1G`, `10s`) in the parameter's base unit."""
        if isinstance(b, (int, float)) and not isinstance(b, bool):
            return b
        return {"rate": lambda x: parse_rate(x), "duration": lambda x: parse_duration(x),
                "delay": lambda x: parse_delay_us(x), "probability": lambda x: parse_probability(x),
                "size": lambda x: parse_size(x), "int": int, "queue": lambda x: parse_queue(x)}[self.type](b)

    def display(self, raw: Any) -> str:
        """A default or bound as people read it, with its unit (`0.0046 %`, `1 Gbit/s`, `40 ms`);
        `-` for none."""
        if raw is None:
            return "-"
        try:
            v = self._bound(raw)
        except (ParameterError, KeyError, ValueError, TypeError):
            return str(raw)
        t = self.type
        if t == "rate":
            return format_rate(v)
        if t == "delay":
            return f"{v / 1e6:g} s" if v and v % 1_000_000 == 0 else f"{v / 1000:g} ms"
        if t == "duration":
            return f"{v:g} s"
        if t == "probability":
            return format_percent(v)
        if t == "size":
            return format_size(v)
        return str(v)

    def show(self, value: Any) -> str:
        """Canonical short spelling of a parsed value (run ids, tables)."""
        if value is None:
            return "-"
        t = self.type
        if t == "rate":
            return format_rate_arg(value)
        if t == "duration":
            return f"{value:g}s"
        if t == "delay":
            return format_delay(value)
        if t == "probability":
            return format_probability(value)
        if t == "size":
            return format_size(value)
        return str(value)


COMMON_PARAMS = (
    Param("duration", "duration", "30s", "traffic duration", min=1, max=86400, in_run_id=False),
)


# ---- rows several scenarios share (one definition of their type, bounds and run-id role) ----

def role_param(name: str, default: str, help: str) -> Param:
    """A host the experiment uses (never part of the run id): `--NAME HOST` in help."""
    return Param(name, "host", default, help, in_run_id=False)


def link_param(name: str, default: str, help: str) -> Param:
    """An inventory link the experiment uses (never part of the run id): `--NAME LINK` in help."""
    return Param(name, "link", default, help, in_run_id=False)


def players(inv: Inventory, name: str) -> list[tuple[str, str]]:
    """("host" | "link", name) of everything in the inventory that `plays` `name`."""
    return ([("host", h) for h, host in sorted(inv.hosts.items()) if name in host.plays]
            + [("link", l) for l, link in sorted(inv.links.items()) if name in link.plays])


def role_default(p: Param, inv: Inventory | None) -> tuple[Any, str]:
    """The default of a role parameter on this inventory, and why (for `ctl inventory check`).

    A scenario's roles default to the names of the shipped racks (a1, b1, path1, ...). On a rack
    named otherwise, the host or link whose `plays` lists that name takes its place; without one,
    the name itself (the shipped inventories). Two that play one name are refused."""
    if p.type not in ROLE_TYPES or inv is None or not isinstance(p.default, str):
        return p.default, "default"
    found = players(inv, p.default)
    if len(found) > 1:
        raise ScenarioError(f"{p.flag}: {' and '.join(f'{k} {n}' for k, n in found)} both play {p.default!r} in "
                            f"inventory {inv.name}: a role default stands for one host or link")
    if found:
        return found[0][1], f"{found[0][0]} {found[0][1]} plays {p.default}"
    return p.default, "default"


def queue_param(default: str | None, help: str = "bottleneck queue per direction: slots (50) or bytes (64KB)") -> Param:
    return Param("queue", "queue", default, help)


def cc_param(name: str = "cc", default: str = "cubic",
             help: str = "congestion control of the MPTCP connection (what the kernel lists)") -> Param:
    return Param(name, "name", default, help)


def port_base_param(help: str = "first iperf3 port") -> Param:
    return Param("port_base", "int", "5201", help, min=1024, max=65000, in_run_id=False)


@dataclass
class RunPlan:
    links: dict[PipeKey, PipeConfig]
    endpoints: dict[str, EndpointConfig]
    flows: list[FlowSpec]
    sample_ifaces: dict[str, list[str]]    # host -> interfaces its sampler reads
    duration_s: float
    notes: list[str] = field(default_factory=list)
    mptcp_hosts: list[str] = field(default_factory=list)  # hosts whose MPTCP events are monitored
    # Every value changed on its way to the rack (rounded, capped, converted; host settings the
    # experiment raises): `ctl run` warns about each on stderr and the manifest records them.
    conversions: list[Conversion] = field(default_factory=list)
    # A scenario whose traffic is not iperf3 flows (e.g. BitTorrent) supplies its own runner:
    # factory(pool, plan, record) -> object with the TrafficRunner interface (start_servers,
    # run_clients(timeout_s), collect_servers, stop_all(skip_hosts), runs: objects with `spec`
    # (a FlowSpec-like with name/client/server/port) and the fields the summary reads).
    traffic_factory: Callable[[Any, "RunPlan", Any], Any] | None = None  # record: raw_path()/write_raw()

    def to_json(self) -> dict:
        return {"links": {f"{k[0]}.{k[1].value}": v.to_json() for k, v in self.links.items()},
                "endpoints": {h: {"mptcp": e.mptcp, "subflows": e.subflows, "add_addr_accepted": e.add_addr_accepted,
                                  "endpoints": [x.__dict__ for x in e.endpoints], "sysctls": dict(e.sysctls),
                                  "congestion_controls": sorted(e.congestion_controls)}
                              for h, e in self.endpoints.items()},
                "flows": [f.to_json() for f in self.flows], "sample_ifaces": self.sample_ifaces,
                "duration_s": self.duration_s, "notes": self.notes, "mptcp_hosts": self.mptcp_hosts,
                "conversions": [c.to_json() for c in self.conversions]}


@dataclass
class RunData:
    """Everything a scenario's summary may use (pure data, no connections)."""

    inventory: Inventory
    params: dict[str, Any]
    plan: RunPlan
    flows: list[Any]
    points: list[Any]
    nstat: dict[str, tuple[str, str]]
    monitor: dict[str, str]
    window: tuple[float, float]
    record_dir: Path
    # Each endpoint's sysctls as read before the run changed anything (e.g. the host's default
    # congestion control, which connections that choose none run).
    host_sysctls: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    reference: str
    description: str
    params: tuple[Param, ...]
    plan: Callable[[Mapping[str, Any], Inventory], RunPlan]
    summarize: Callable[[Any], dict]
    render: Callable[[dict], str]
    figures: Callable[[Any, dict, Any], list[str]] = lambda data, summary, out: []
    # A run cut short (signal, lost host) is summarized with this over the traffic units that
    # ran to their own end, when they are independent of each other (tests or downloads one
    # after the other); None: concurrent flows cut short are not summarized (controller/run/partial.py).
    summarize_partial: Callable[[Any], dict] | None = None
    # Groups of parameters whose values must all differ (hosts in different roles, links of
    # different paths): the same host as MPTCP client and server is another experiment.
    distinct: tuple[tuple[str, ...], ...] = ()

    def all_params(self) -> tuple[Param, ...]:
        names = {p.name for p in self.params}
        return self.params + tuple(p for p in COMMON_PARAMS if p.name not in names)

    def parse_args(self, argv: Sequence[str], inv: Inventory | None = None) -> tuple[dict[str, Any], dict[str, str]]:
        """Scenario arguments -> (resolved typed parameters, the ones given explicitly, as typed).
        With the inventory, a role not given is the host or link that `plays` its default (role_default)."""
        params = self.all_params()
        parser = _ScenarioParser(prog=f"ctl run {self.name}", add_help=False)
        for p in params:
            parser.add_argument(p.flag, dest=p.name, default=None, action=_Once)
        ns = parser.parse_args(join_negative_values(list(argv)))
        out: dict[str, Any] = {}
        given: dict[str, str] = {}
        for p in params:
            raw = getattr(ns, p.name)
            if raw is not None:
                given[p.name] = raw
            out[p.name] = p.parse(raw if raw is not None else role_default(p, inv)[0])
        check_distinct(self.name, self.distinct, out)
        return out, given

    def run_id_parts(self, given: Mapping[str, str], values: Mapping[str, Any]) -> dict[str, str]:
        by_name = {p.name: p for p in self.all_params()}
        return {k.replace("_", ""): by_name[k].show(values[k]) for k in given if by_name[k].in_run_id}

    def describe_json(self) -> dict:
        """What `describe` says, as data (`ctl scenarios show NAME --json`)."""
        return {"name": self.name, "title": self.title, "reference": self.reference,
                "description": self.description.strip(),
                "parameters": [{"name": p.name, "flag": p.flag, "type": p.type, "default": p.default, "help": p.help,
                                "choices": list(p.choices) if p.choices else None,
                                "min": None if p.min is None else str(p.min),
                                "max": None if p.max is None else str(p.max),
                                # the same values as `describe` shows them, with their units
                                "shown": {"default": p.display(p.default), "min": p.display(p.min),
                                          "max": p.display(p.max)}} for p in self.all_params()]}

    def describe(self) -> str:
        lines = [f"{self.name}: {self.title}", f"  reference: {self.reference}", ""]
        lines += ["  " + l for l in self.description.strip().splitlines()]
        lines += ["", "  parameters:"]
        for p in self.all_params():
            rng = ""
            if p.choices:
                rng = f" (one of {', '.join(p.choices)})"
            elif p.min is not None or p.max is not None:
                lo, hi = (p.display(b) if b is not None else "" for b in (p.min, p.max))
                rng = f" ({lo}..{hi})"
            default = p.display(p.default)   # "-": unset unless given (see the help)
            lines.append(f"    {p.flag:<18} {p.type:<11} default {default:<10} {p.help}{rng}")
        return "\n".join(lines)


def check_distinct(scenario: str, groups: Sequence[Sequence[str]], values: Mapping[str, Any]) -> None:
    """Refuse two parameters of one group naming the same host or link (one line, exit 2)."""
    for group in groups:
        seen: dict[Any, str] = {}
        for name in group:
            v = values.get(name)
            if v is None:
                continue
            if v in seen:
                raise ScenarioError(f"{scenario}: --{seen[v].replace('_', '-')} and --{name.replace('_', '-')} are "
                                    f"both {v!r}; the experiment needs {', '.join('--' + n.replace('_', '-') for n in group)} "
                                    "to be different")
            seen[v] = name


class _Once(argparse.Action):
    """A flag given twice is an error, not "the last one wins"."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        if getattr(namespace, self.dest, None) is not None:
            parser.error(f"{option_string} given twice")
        setattr(namespace, self.dest, values)


class _ScenarioParser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kw: Any):
        super().__init__(*args, allow_abbrev=False, **kw)   # `--dur 5s` is not `--duration 5s`

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


# ---- helpers for plans -------------------------------------------------------------------

def require_host(inv: Inventory, name: str, role: Role, what: str) -> None:
    if name not in inv.hosts:
        raise ScenarioError(f"{what}: host {name!r} is not in inventory {inv.name}, and no host plays it "
                            f"(a host stands for it with `plays: [{name}]`)")
    if inv.hosts[name].role is not role:
        raise ScenarioError(f"{what}: host {name!r} is a {inv.hosts[name].role.value}, not a {role.value}")


def address_on(inv: Inventory, host: str, link: str, what: str) -> tuple[str, str]:
    """(address, interface) of `host` on `link`, or a ScenarioError naming what is missing."""
    for iface in inv.hosts[host].interfaces:
        if iface.link == link and iface.ip:
            return iface.ip, iface.name
    raise ScenarioError(f"{what}: host {host} has no addressed interface on link {link}")


def require_link(inv: Inventory, name: str, what: str) -> None:
    if name not in inv.links:
        raise ScenarioError(f"{what}: link {name!r} is not in inventory {inv.name} "
                            f"(links: {', '.join(sorted(inv.links)) or 'none'}), and no link plays it (a link stands "
                            f"for it with `plays: [{name}]`)")


def bridge_ports(inv: Inventory, link: str) -> tuple[str, str, str]:
    l = inv.links[link]
    return l.bridge, l.a_port, l.b_port
