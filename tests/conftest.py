"""Shared fixtures. Integration tests get one real virtual rack per session (see support/rack.py)."""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent
if str(PROJECT) not in sys.path:
    sys.path.insert(0, str(PROJECT))

from tests.support.rack import (TestRack, free_mgmt_octet, make_state_dir, sweep_stale_test_racks,  # noqa: E402
                                write_test_inventory)

REQUIRED = ("ip", "tc", "sshd", "iperf3", "mptcpize", "ethtool", "ss", "nstat", "ssh-keygen")


def _integration_prerequisites() -> list[str]:
    problems = []
    if os.geteuid() != 0:
        problems.append("not root")
    for tool in REQUIRED:
        if shutil.which(tool) is None and not Path("/usr/sbin", tool).exists():
            problems.append(f"{tool} missing")
    if not (PROJECT / ".state" / "bin" / "influxd").exists():
        problems.append("influxd not built (.state/bin/influxd)")
    if not (PROJECT / "bridges" / "dnpipe" / "build" / "dnpipe").exists():
        problems.append("dnpipe not built")
    return problems


@pytest.fixture(scope="session")
def rack(tmp_path_factory: pytest.TempPathFactory) -> TestRack:
    """A running virtual rack (prefix ctlt, management 10.251.0.0/24, InfluxDB on :18086)."""
    problems = _integration_prerequisites()
    if problems:
        # Not a skip: these tests are part of the suite; scripts/setup.sh provides all of it.
        pytest.fail("integration prerequisites missing: " + ", ".join(problems) + " (run scripts/setup.sh)")
    from controller import lab
    from controller.inventory import load_inventory
    base = tmp_path_factory.mktemp("rack")
    state = make_state_dir(base / "state")
    os.environ["CTL_STATE_DIR"] = str(state)
    os.environ.pop("CTL_INFLUX_TOKEN", None)
    # Unique per session: concurrent test sessions on one machine never share a rack.
    sweep_stale_test_racks()
    prefix = f"t{os.getpid() % 100000:05d}"
    octet = free_mgmt_octet()
    inv_path = write_test_inventory(base / "vtest.yaml", prefix=prefix, mgmt_octet=octet,
                                    influx_port=18000 + octet)
    inv = load_inventory(inv_path)
    from controller.labops import lab_up_cli
    lab_up_cli(inv)
    runs = base / "runs"
    runs.mkdir()
    r = TestRack(inv_path, state, runs, prefix, inv)
    try:
        yield r
    finally:
        lab.lab_down(inv)
        shutil.rmtree(Path("/run/ctl") / prefix, ignore_errors=True)
