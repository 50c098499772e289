"""Scenario registry: one module per experiment, each defining `SCENARIO`.

A new experiment is a module here and one `SCENARIOS.lazy(...)` line below.
"""
from __future__ import annotations

from controller.errors import ScenarioError
from controller.registry import Registry

SCENARIOS: Registry = Registry("scenario", ScenarioError)
SCENARIOS.lazy("distinct-bottleneck", "controller.scenarios.distinct_bottleneck:SCENARIO")
SCENARIOS.lazy("shared-bottleneck", "controller.scenarios.shared_bottleneck:SCENARIO")
SCENARIOS.lazy("rtt-loss-sweep", "controller.scenarios.rtt_loss_sweep:SCENARIO")
SCENARIOS.lazy("parallel-streams", "controller.scenarios.parallel_streams:SCENARIO")
SCENARIOS.lazy("mptcp-bittorrent", "controller.scenarios.mptcp_bittorrent:SCENARIO")


def names() -> list[str]:
    """Every registered scenario, available in this build or not."""
    return SCENARIOS.names()


def available() -> list[str]:
    return SCENARIOS.available()


def get(name: str):
    return SCENARIOS.get(name)
