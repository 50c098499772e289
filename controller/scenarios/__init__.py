"""Scenario registry: one module per experiment, each defining `SCENARIO`."""
from __future__ import annotations

import importlib

from controller.errors import ScenarioError

MODULES = {
    "distinct-bottleneck": "controller.scenarios.distinct_bottleneck",
    "shared-bottleneck": "controller.scenarios.shared_bottleneck",
    "rtt-loss-sweep": "controller.scenarios.rtt_loss_sweep",
    "parallel-streams": "controller.scenarios.parallel_streams",
    "mptcp-bittorrent": "controller.scenarios.mptcp_bittorrent",
}


def available() -> list[str]:
    out = []
    for name, mod in MODULES.items():
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name != mod:
                raise
            continue
        out.append(name)
    return out


def get(name: str):
    mod = MODULES.get(name)
    if mod is None:
        raise ScenarioError(f"unknown scenario {name!r} (known: {', '.join(available())})")
    try:
        module = importlib.import_module(mod)
    except ModuleNotFoundError as exc:
        if exc.name == mod:
            raise ScenarioError(f"scenario {name!r} is not available in this build") from None
        raise
    return module.SCENARIO
