"""The shipped inventories and recorded run data, as unit tests load them.

`no_state_dir()` points CTL_STATE_DIR at a path that does not exist, so that what a
developer's running virtual rack left in `.state/` (addresses, keys, a lab built from an
older inventory) cannot leak into a pure test.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INVENTORIES = {"virtual": ROOT / "inventory" / "virtual.yaml",
               "lab-rack": ROOT / "inventory" / "lab-rack.example.yaml"}
RECORDED_RUNS = ROOT / "tests" / "fixtures" / "generated" / "runs"


@contextmanager
def no_state_dir() -> Iterator[None]:
    mp = pytest.MonkeyPatch()
    mp.setenv("CTL_STATE_DIR", "/nonexistent-ctl-state")
    try:
        yield
    finally:
        mp.undo()
