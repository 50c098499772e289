"""`ctl link reset` (pure part): the baseline each link returns to (the inventory's
`baseline`, defaults for what it leaves out, unshaped without one), grouped per bridge, and
what is refused before anything is touched; the subcommands take only their own options."""
from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from bridges.base import Direction, PipeConfig
from controller.errors import CtlError
from controller.inventory import load_inventory
from controller.rack.links import baseline_config, render_reset, reset_plan
from controller.units import parse_queue
from tests.support.ctl_fork import ForkServer
from tests.support.shipped import ROOT, VIRTUAL, no_state_dir


@pytest.fixture(scope="module")
def inv_with_baseline(tmp_path_factory):
    data = yaml.safe_load(VIRTUAL.read_text())
    data["links"]["path2"]["baseline"] = {"bw": "50M", "delay": "5ms"}
    p = tmp_path_factory.mktemp("inv") / "v.yaml"
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    with no_state_dir():
        return load_inventory(p)


def test_baseline_config(inv_with_baseline):
    inv = inv_with_baseline
    assert baseline_config(inv, "path1") == PipeConfig()            # no baseline: unshaped
    b = baseline_config(inv, "path2")
    assert (b.bw_bps, b.delay_us, b.plr, b.queue) == (50_000_000, 5000, 0.0, PipeConfig().queue)


def test_reset_plan_groups_links_by_bridge(inv_with_baseline):
    plan = reset_plan(inv_with_baseline, ["path1", "path2", "lp1", "lp2"])
    assert sorted(plan) == ["br1", "br2", "br4"]
    assert set(plan["br4"]) == {(l, d) for l in ("lp1", "lp2") for d in Direction}
    assert plan["br2"][("path2", Direction.REVERSE)].bw_bps == 50_000_000


def test_unknown_link_and_an_impossible_baseline_are_refused(inv_with_baseline, tmp_path):
    with pytest.raises(CtlError, match="unknown link 'path9'"):
        reset_plan(inv_with_baseline, ["path9"])
    data = yaml.safe_load(VIRTUAL.read_text())
    data["hosts"]["br2"]["shaper"] = {"kind": "tc"}                   # tbf cannot delay
    data["links"]["path2"]["baseline"] = {"delay": "5ms"}
    p = tmp_path / "tc.yaml"
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    with no_state_dir():
        inv = load_inventory(p)
    with pytest.raises(CtlError, match="cannot delay"):
        reset_plan(inv, ["path2"])


def test_render_reset():
    shaped = PipeConfig(bw_bps=20_000_000, delay_us=50_000).to_json()
    text = render_reset([{"bridge": "br2", "before": {"path2.forward": shaped, "path2.reverse": None},
                          "after": {"path2.forward": None, "path2.reverse": None}}])
    assert text.splitlines() == [f"path2.forward    br2     unshaped (was {PipeConfig.from_json(shaped).describe()})",
                                 "path2.reverse    br2     unshaped (unchanged)"]
    assert parse_queue("50") == PipeConfig().queue


@pytest.mark.parametrize("argv, message", [
    (["link", "reset"], "give one LINK or --all"),
    (["link", "reset", "path1", "--all"], "give one LINK or --all"),
    (["link", "reset", "path9"], "unknown link 'path9'"),
    (["link", "reset", "path1", "--bw", "1M"], "unrecognized arguments: --bw 1M"),
    (["link", "set", "path1", "--pings", "3"], "unrecognized arguments: --pings 3"),
    (["link", "measure", "path1", "--delay", "1ms"], "unrecognized arguments: --delay 1ms"),
    (["link", "show", "path1", "--all"], "unrecognized arguments: --all"),
    (["link", "frobnicate"], "invalid choice: 'frobnicate'"),
])
def test_each_subcommand_has_only_its_own_options(argv, message, tmp_path, fork_server):
    """Each `python -m controller` forked from a server that imported ctl once (tests/support/ctl_fork.py;
    the first case also runs in a fresh interpreter below, with the same outcome)."""
    env = {"CTL_STATE_DIR": str(tmp_path / "state"), "PATH": "/usr/bin:/bin"}
    p = fork_server.run([*argv, "--inventory", str(VIRTUAL)], env, ROOT, timeout=60, text=True)
    assert p.returncode == 2 and message in p.stderr and p.stderr.count("\n") == 1, p.stderr
    assert not (tmp_path / "state" / "link-changes.jsonl").exists()
    if argv == ["link", "reset"]:
        fresh = subprocess.run([sys.executable, "-m", "controller", *argv, "--inventory", str(VIRTUAL)], cwd=ROOT,
                               capture_output=True, text=True, env=env, timeout=60)
        assert (fresh.returncode, fresh.stdout, fresh.stderr) == (p.returncode, p.stdout, p.stderr)
        assert not (tmp_path / "state").exists()


@pytest.fixture(scope="module")
def fork_server(tmp_path_factory):
    base = tmp_path_factory.mktemp("link-fork")
    server = ForkServer(base, {"PATH": "/usr/bin:/bin"}).start()
    try:
        yield server
        assert server.written_by_server() == []
    finally:
        server.stop()
