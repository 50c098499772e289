"""Everything about a run that can be refused before the rack is touched (pure of the rack)."""
from __future__ import annotations

from typing import Any

from bridges.base import shaper_class
from controller import scenarios
from controller.inventory import Inventory
from controller.scenarios.base import RunPlan, Scenario


def prepare_run(scenario_name: str, rest: list[str], inv: Inventory) -> tuple[Scenario, dict[str, Any],
                                                                              dict[str, str], RunPlan]:
    """Scenario, parameters, plan and each bridge's validation of its shaping: what `ctl run`
    and a campaign's `plan`/`submit` refuse before anything on the rack changes. The plan's
    `conversions` gain what each bridge's back-end would hold differently from the plan (a rate
    or a loss rounded to its resolution), after the scenario's own (queues, socket buffers)."""
    scenario = scenarios.get(scenario_name)
    params, given = scenario.parse_args(rest, inv)
    plan = scenario.plan(params, inv)
    by_bridge: dict[str, dict] = {}
    for key, cfg in plan.links.items():
        by_bridge.setdefault(inv.links[key[0]].bridge, {})[key] = cfg
    for bridge, desired in by_bridge.items():
        kind = inv.hosts[bridge].shaper.kind  # type: ignore[union-attr]
        shaper = shaper_class(kind)(inv, bridge)
        shaper.validate(desired)
        plan.conversions.extend(c for c in shaper.conversions(desired) if c not in plan.conversions)
    return scenario, params, given, plan


def dry_run_assumptions(inv: Inventory, plan: RunPlan) -> list[str]:
    """What a dry run of `plan` assumes about its bridges because the inventory does not say
    (e.g. a dummynet bridge's release without `facts.os_release`): `ctl run --dry-run` prints
    each as one warning line, so an assumption is never silent."""
    out: list[str] = []
    for bridge in sorted({inv.links[key[0]].bridge for key in plan.links}):
        kind = inv.hosts[bridge].shaper.kind  # type: ignore[union-attr]
        out += shaper_class(kind)(inv, bridge).dry_run_assumptions()
    return out
