"""The endpoint-driver contract: what the runner and recovery need of a driver that changes
an endpoint host's state for a run (MPTCP path manager and sysctls today; congestion-control
programs next).

Like a shaper, a driver reads the host's state, plans the commands that reach the desired
state (pure), verifies the read-back, and afterwards restores exactly what it read.
`Desired` and `State` are the driver's own types (JSON-serialisable through `to_json`).
"""
from __future__ import annotations

from typing import Any, Mapping, Protocol, TypeVar

from controller.commands import Command, CommandResult

Desired = TypeVar("Desired")
State = TypeVar("State")


class EndpointDriver(Protocol[Desired, State]):
    host: str

    def read_commands(self) -> list[Command]:
        """Read-only commands whose outputs `parse_state` turns into a State."""

    def parse_state(self, results: list[CommandResult]) -> State: ...

    def state_from_record(self, recorded: Mapping[str, Any]) -> State:
        """The State a run record saved (`to_json`), for recovery after a dead controller."""

    def check(self, desired: Desired, observed: State) -> None:
        """Raise a UsageError (exit 2) when the host cannot do `desired`: before any change."""

    def plan(self, desired: Desired, observed: State) -> list[Command]:
        """Commands from `observed` to `desired` (pure)."""

    def verify(self, desired: Desired, observed: State) -> list[str]:
        """Differences between desired and read-back state, by field; empty when equal."""

    def expected_state(self, before: State, desired: Desired) -> State:
        """What the host would read back after plan(desired, before) ran (pure; dry runs)."""

    def plan_restore(self, before: State, now: State) -> list[Command]:
        """Commands that bring back exactly `before` (pure)."""

    def restored_equal(self, before: State, after: State) -> list[str]:
        """Differences left after a restore; empty when the host is as it was."""
