"""What every command shares: the inventory it works on, JSON output."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from controller.inventory import Inventory, load_inventory, resolve_inventory_path


def inventory_of(args: argparse.Namespace) -> Inventory:
    """The rack a command works on: --inventory > $CTL_INVENTORY > inventory/virtual.yaml."""
    return load_inventory(resolve_inventory_path(args.inventory))


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, sort_keys=False, default=str)
    sys.stdout.write("\n")
