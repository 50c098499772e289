"""The congestion-control stage's restore (controller/run/congestion.py CongestionStage).

Contract: a host where the run loaded nothing (its flows use the kernel's own algorithms) has
nothing to undo: the restore sends it no command (no probe on the rack's path after the
traffic) and records the state read before the run as its `restored`, with `read_back` false (the
record does not claim a read it did not make); a host where the run
loaded a BPF algorithm has it left (a real run probes the host first and reads it back after). The sessions
are ctl's DryRunSession (they record each command and answer what a real host is assumed to
print), as `ctl run --dry-run` lists a real run's commands.
"""
from __future__ import annotations

import asyncio

from controller.commands import DryRunSession
from controller.inventory import load_inventory
from controller.run.congestion import CongestionStage
from nodes.mptcp import EndpointConfig
from tests.support.shipped import VIRTUAL, no_state_dir


def _stage(wanted: dict[str, set[str]]) -> tuple[CongestionStage, list, dict]:
    with no_state_dir():
        inv = load_inventory(VIRTUAL)
        log: list = []
        manifest: dict = {}
        endpoints = {h: EndpointConfig(mptcp=False, congestion_controls=frozenset(ccs)) for h, ccs in wanted.items()}
        stage = CongestionStage("r1", inv, endpoints, {h: DryRunSession(h, log) for h in wanted}, manifest,
                                dry_run=True, progress=lambda m: None)
    return stage, log, manifest


def _hostctl(log: list, host: str) -> list[str]:
    return [r.argv[3] for r in log if r.host == host and r.argv[:2] == ("python3", "-c")]


def test_a_host_running_only_the_kernels_algorithms_gets_no_command_at_restore():
    stage, log, manifest = _stage({"a1": {"cubic"}, "a2": {"mcubic"}})

    async def run() -> list[str]:
        await stage.prepare()
        await stage.configure()
        assert _hostctl(log, "a2")[-1] == "load" and "load" not in _hostctl(log, "a1")
        del log[:]
        problems: list[str] = []
        for h in stage.hosts:
            await stage.restore_host(h, problems)
        return problems

    with no_state_dir():
        assert asyncio.run(run()) == []
    assert _hostctl(log, "a1") == []                          # cubic: nothing loaded, nothing sent
    hosts = manifest["congestion"]["hosts"]
    assert hosts["a1"]["restored"] == hosts["a1"]["before"] and hosts["a1"]["read_back"] is False
    assert _hostctl(log, "a2") == ["unload"]     # mcubic: left (a real run probes first; a dry run
    #                                              plans from the state the load would have left)
    assert stage.touched == {"a2"}


def test_a_dry_runs_load_names_what_a_real_run_puts_there():
    """The dry run's `load` line carries placeholders that say the object is built at run time and
    need no quoting of their own (they printed `'<... the host'"'"'s kernel>'`; issue 22 audit)."""
    from controller.run.congestion import DRY_RUN_OBJECT, DRY_RUN_SHA256
    stage, log, _ = _stage({"a2": {"mcubic"}})

    async def run() -> None:
        await stage.prepare()
        await stage.configure()

    with no_state_dir():
        asyncio.run(run())
    (load,) = [r for r in log if r.host == "a2" and r.argv[:2] == ("python3", "-c") and r.argv[3] == "load"]
    assert load.argv[5:7] == (DRY_RUN_SHA256, DRY_RUN_OBJECT)
    assert all("run time" in p and "'" not in p for p in (DRY_RUN_SHA256, DRY_RUN_OBJECT))
