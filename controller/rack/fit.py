"""Which shipped scenarios an inventory can run as it is, and with which hosts and links.

For each registered scenario, its parameters are resolved with no flag given (so every role
takes its default on this rack: the host or link that `plays` the default's name, else the
name itself; controller.scenarios.base.role_default) and the run is prepared exactly as
`ctl run` prepares it (controller.run.prepare.prepare_run: the scenario's plan and every
bridge's own validation). A scenario that cannot be prepared says why, in the words `ctl run`
would use. Pure: nothing is contacted (`ctl inventory check --probe` adds what the hosts have).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from controller import scenarios
from controller.errors import CtlError
from controller.inventory import Inventory, Role
from controller.run.prepare import prepare_run
from controller.scenarios.base import ROLE_TYPES, RunPlan, role_default


@dataclass
class RoleChoice:
    name: str       # the parameter (`client`)
    flag: str       # `--client`
    value: Any      # the host or link it names on this rack
    how: str        # "default" or "host snd plays a1"

    def to_json(self) -> dict:
        return {"param": self.name, "flag": self.flag, "value": self.value, "how": self.how}

    def shown(self) -> str:
        return f"{self.name} {self.value}" + (f" ({self.how.split(' ', 2)[2]})" if self.how != "default" else "")


@dataclass
class ScenarioFit:
    scenario: str
    ok: bool
    reason: str | None = None
    roles: list[RoleChoice] = field(default_factory=list)
    plan: RunPlan | None = None
    params: dict[str, Any] = field(default_factory=dict)

    def hosts(self, inv: Inventory) -> list[str]:
        """The hosts a run of this plan talks to (endpoints, flow ends, sampled hosts, bridges)."""
        if self.plan is None:
            return []
        p = self.plan
        out = set(p.endpoints) | set(p.sample_ifaces)
        for f in p.flows:
            out |= {f.client, f.server}
        out |= {inv.links[k[0]].bridge for k in p.links}
        return sorted(h for h in out if h in inv.hosts and inv.hosts[h].role is not Role.SWITCH)

    def to_json(self) -> dict:
        return {"scenario": self.scenario, "runs": self.ok, "reason": self.reason,
                "roles": [r.to_json() for r in self.roles]}


def scenario_fit(name: str, inv: Inventory) -> ScenarioFit:
    sc = scenarios.get(name)
    roles: list[RoleChoice] = []
    try:
        for p in sc.all_params():
            if p.type in ROLE_TYPES:
                value, how = role_default(p, inv)
                roles.append(RoleChoice(p.name, p.flag, value, how))
        _sc, params, _given, plan = prepare_run(name, [], inv)
    except CtlError as exc:
        return ScenarioFit(name, False, exc.one_line(), roles)
    return ScenarioFit(name, True, None, roles, plan, params)


def all_fits(inv: Inventory) -> list[ScenarioFit]:
    """Every registered scenario on this inventory, in registry order."""
    return [scenario_fit(n, inv) for n in scenarios.names()]
