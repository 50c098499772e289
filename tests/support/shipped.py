"""The shipped inventories and recorded run data, as unit tests load them.

`no_state_dir()` points CTL_STATE_DIR at a path that does not exist, so that what a
developer's running virtual rack left in `.state/` (addresses, keys, a lab built from an
older inventory) cannot leak into a pure test.
"""
from __future__ import annotations

import json
import shutil
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
# A field run, recorded by ctl on the virtual rack's modem hosts.
RECORDED_FIELD_RUN = ROOT / "tests" / "fixtures" / "generated" / "field" / "iperf3-m2"


def recorded_runs(*extra: Path) -> dict[Path, str]:
    """The recorded run directories (every tests/fixtures/generated/runs/SCENARIO/CASE, then
    `extra`) -> their run ids, from their manifests."""
    dirs = [*sorted(RECORDED_RUNS.glob("*/*")), *extra]
    return {d: json.loads((d / "manifest.json").read_text())["run_id"]
            for d in dirs if (d / "manifest.json").is_file()}


def isolated_ctl(monkeypatch: Any, tmp: Path, runs: Path | None = None) -> Path:
    """ctl's environment for a test that runs commands in-process: its own state directory, runs
    directory (`runs`, default tmp/runs), the shipped virtual inventory, no config file, no lab
    database. Returns the runs directory."""
    runs = runs if runs is not None else tmp / "runs"
    monkeypatch.setenv("CTL_STATE_DIR", str(tmp / "state"))
    monkeypatch.setenv("CTL_RUNS_DIR", str(runs))
    monkeypatch.setenv("CTL_INVENTORY", str(VIRTUAL))
    monkeypatch.delenv("CTL_CONFIG", raising=False)
    monkeypatch.delenv("CTL_DATABASE_URL", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp / "config"))     # no config file
    return runs


def json_cli(capsys: Any) -> Any:
    """call(*argv, code=0): `ctl ARGV --json` in-process (after isolated_ctl); asserts its exit status
    and returns the parsed document."""
    from controller.cli import main

    def call(*argv: str, code: int = 0) -> dict:
        got = main([*argv, "--json"])
        out, err = capsys.readouterr()
        assert got == code, (argv, got, err)
        return json.loads(out)
    return call


def copy_runs(runs: dict[Path, str], root: Path) -> Path:
    """The runs under their run ids in `root`, as a runs directory holds them."""
    for d, rid in runs.items():
        shutil.copytree(d, root / rid)
    return root
VIRTUAL = INVENTORIES["virtual"]
LAB = INVENTORIES["lab-rack"]
SEEDS = ROOT.parent / "shared" / "seeds"     # the papers (Korean), beside the checkout as the suite runs


def paper_seeds(prefix: str = "") -> list[Path]:
    """The papers' texts whose file names start with `prefix` (`003_`: the MCubic paper), sorted;
    the test is skipped, saying why, when the papers are not beside this checkout (a clone made
    elsewhere): what it checks against them cannot be checked there."""
    found = sorted(SEEDS.glob(prefix + "*.txt")) if SEEDS.is_dir() else []
    if not found:
        pytest.skip(f"the papers are not beside this checkout ({SEEDS}): the quotes cannot be checked here")
    return found


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
