"""The shipped inventories and recorded run data, as unit tests load them.

`no_state_dir()` points CTL_STATE_DIR at a path that does not exist, so that what a
developer's running virtual rack left in `.state/` (addresses, keys, a lab built from an
older inventory) cannot leak into a pure test.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
FIXTURES = TESTS / "fixtures"
INVENTORIES = {"virtual": ROOT / "inventory" / "virtual.yaml",
               "lab-rack": ROOT / "inventory" / "lab-rack.example.yaml"}
RECORDED_RUNS = ROOT / "tests" / "fixtures" / "generated" / "runs"
VIRTUAL = INVENTORIES["virtual"]
LAB = INVENTORIES["lab-rack"]


@contextmanager
def no_state_dir() -> Iterator[None]:
    mp = pytest.MonkeyPatch()
    mp.setenv("CTL_STATE_DIR", "/nonexistent-ctl-state")
    try:
        yield
    finally:
        mp.undo()


def summarized(scenario: Any, run_dir: Path) -> tuple[Any, dict]:
    """A recorded run rebuilt from its record, and the scenario's summary of it."""
    from controller.run.replay import load_run
    with no_state_dir():
        data = load_run(run_dir)
        return data, scenario.summarize(data)
