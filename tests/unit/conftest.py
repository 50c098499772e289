"""Fixtures shared by the unit tests: the shipped inventories, loaded once per module."""
from __future__ import annotations

import pytest

from controller.inventory import Inventory, load_inventory
from tests.support.shipped import INVENTORIES, no_state_dir


@pytest.fixture
def tmp_state_dir(tmp_path, monkeypatch):
    """CTL_STATE_DIR in the test's own temporary directory (ctl exports it before loading an
    inventory; virtual.yaml uses ${CTL_STATE_DIR})."""
    state = tmp_path / "state"
    monkeypatch.setenv("CTL_STATE_DIR", str(state))
    return state


@pytest.fixture(scope="module")
def invs() -> dict[str, Inventory]:
    """`inventory/virtual.yaml` and `inventory/lab-rack.example.yaml`, keyed "virtual" and "lab-rack"."""
    with no_state_dir():
        yield {k: load_inventory(p) for k, p in INVENTORIES.items()}
