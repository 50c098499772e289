"""Lab operations used by the CLI and the runner: bring up, check status over real SSH."""
from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Iterable

from controller.commands import Command
from controller.errors import CtlError, LabError
from controller.inventory import Inventory
from controller.lab.rack import LabState, proc_alive, check_owner, is_up, lab_up, managed_influx, owned_state, read_state
from controller.settings import PROJECT_ROOT
from controller.ssh import CommandLog, SSHPool

DNPIPE_BUILD = PROJECT_ROOT / "bridges" / "dnpipe" / "build" / "dnpipe"


def dnpipe_binary_for(inv: Inventory) -> str | None:
    """The forwarder binary the virtual rack's dnpipe bridges run (built by scripts/setup.sh)."""
    kinds = {h.shaper.kind for h in inv.hosts.values() if h.shaper is not None}
    if "dnpipe" not in kinds:
        return None
    for h in inv.hosts.values():
        if h.shaper is not None and h.shaper.kind == "dnpipe" and Path(str(h.shaper.binary)).is_absolute():
            if not Path(str(h.shaper.binary)).exists():
                raise LabError(f"dnpipe binary {h.shaper.binary} is missing: run scripts/setup.sh")
            return str(h.shaper.binary)
    if not DNPIPE_BUILD.exists():
        raise LabError(f"{DNPIPE_BUILD} is missing: run scripts/setup.sh (it builds the dnpipe forwarder)")
    return str(DNPIPE_BUILD)


def lab_up_cli(inv: Inventory) -> LabState:
    return lab_up(inv, dnpipe_binary=dnpipe_binary_for(inv))


def ensure_lab(inv: Inventory, needed: Iterable[str] = ()) -> bool:
    """`ctl run` brings a virtual rack up if it is down. Returns True when it built it.

    A rack that is up but was built from an older inventory (hosts this run needs are not
    in it) is not rebuilt behind the user's back: that would cut whatever runs on it."""
    if inv.kind != "virtual":
        return False
    built = False
    if not is_up(inv, owned_state(inv)):
        lab_up_cli(inv)
        built = True
    st = read_state(inv)
    assert inv.virtual is not None and st is not None
    have = {ns.removeprefix(inv.virtual.netns_prefix + "-") for ns in st.namespaces}
    missing = sorted(set(needed) - have)
    if missing:
        raise LabError(f"virtual rack {inv.name} was built from an older version of its inventory and has no "
                       f"host {', '.join(missing)}: run `ctl lab down` and `ctl lab up`")
    return built


async def _ssh_check(inv: Inventory, hosts: list[str]) -> dict[str, str]:
    pool = SSHPool(inv, CommandLog(), hosts)
    out: dict[str, str] = {}

    async def one(h: str) -> None:
        try:
            r = await pool[h].run(Command(("uname", "-n"), timeout=5, note="lab status"))
            out[h] = f"ssh ok ({r.stdout.strip()})" if r.ok else f"ssh command failed: {r.stderr.strip()}"
        except CtlError as exc:
            out[h] = f"ssh FAILED: {exc.one_line()}"
    try:
        await asyncio.gather(*(one(h) for h in hosts))
    finally:
        await pool.close()
    return out


def lab_status(inv: Inventory) -> dict:
    st = read_state(inv)
    status: dict = {"inventory": inv.name, "up": False}
    if st is None:
        return status
    status["namespaces"] = st.namespaces
    status["state_dir"] = st.state_dir
    try:
        check_owner(inv, st)
    except LabError as exc:
        status["owner_problem"] = exc.one_line()
    procs = {f"{p['name']}@{p['host']}": proc_alive(p["pid"], p.get("start_time")) for p in st.processes}
    status["processes"] = procs
    hosts = sorted(h for h in st.ssh_hosts if h in inv.hosts)   # not the bastion: it has no lab role
    status["hosts"] = asyncio.run(_ssh_check(inv, hosts)) if hosts else {}
    server = managed_influx(inv)
    if server is not None:
        status["influxdb"] = f"{server.url} {'healthy' if server.health() else 'NOT answering'}"
    status["up"] = is_up(inv) and all(v.startswith("ssh ok") for v in status["hosts"].values()) and \
        (server is None or server.health())
    return status
