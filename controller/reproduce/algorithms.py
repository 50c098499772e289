"""Which congestion controls the rack can run: the seam a reproduction plans the MCubic tables from.

`available_algorithms(inventory)` asks every endpoint the same read-only probe a run's
congestion stage uses (`hostctl probe`: kernel, BTF, bpftool, the kernel's list) and checks that
the controller can build ctl's BPF programs for that kernel; `assess` (pure) turns the answers
into one `AlgorithmStatus` per algorithm: a kernel built-in (runnable where every endpoint lists
it), or one of ctl's BPF programs (runnable where every endpoint can load it). Algorithms appear
here as they become available: a kernel module loaded, a new BPF program in
nodes/congestion/catalog.py, a kernel with BTF.
"""
from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

from controller.commands import run_all
from controller.errors import CtlError
from controller.inventory import Inventory, Role
from controller.settings import state_dir
from controller.ssh import CommandLog, SSHPool
from nodes.congestion.build import LOCAL_BTF, BuildError, build
from nodes.congestion.catalog import ALGORITHMS, KERNEL_BUILTIN, kernel_label
from nodes.congestion.driver import (
    HOSTCTL_SOURCE,
    MIN_KERNEL,
    CongestionDriver,
    CongestionState,
    kernel_version,
    parse_probe,
)


@dataclass(frozen=True)
class AlgorithmStatus:
    name: str
    kind: str          # "kernel": the kernel has it; "bpf": ctl loads its own program per run
    runnable: bool
    reason: str        # how it runs here, or why it cannot
    label: str = ""    # how a reader is shown it where the name alone misleads: "bbr (kernel: v1 here)"

    @property
    def shown(self) -> str:
        return self.label or self.name

    def to_json(self) -> dict:
        return {"name": self.name, "kind": self.kind, "runnable": self.runnable, "reason": self.reason,
                "label": self.shown}

    @staticmethod
    def from_json(d: Mapping) -> "AlgorithmStatus":
        return AlgorithmStatus(str(d["name"]), str(d["kind"]), bool(d["runnable"]), str(d["reason"]),
                               str(d.get("label") or ""))


def _kernel_label(name: str, probed: Mapping[str, CongestionState]) -> str:
    """The kernel's `bbr` with the BBR the endpoints' kernels report (upstream: v1); "" for any other."""
    if name != "bbr":
        return ""
    versions = {s.bbr_version or None for s in probed.values() if name in s.available}
    return kernel_label(name, versions.pop()) if len(versions) == 1 else "bbr (kernel: not the same BBR on every endpoint)"


def assess(states: Mapping[str, CongestionState | str], build_problem: str | None) -> dict[str, AlgorithmStatus]:
    """One status per algorithm (pure). `states`: each endpoint's probe, or why it gave none;
    `build_problem`: why the controller cannot build ctl's BPF programs (None: it can)."""
    probed = {h: s for h, s in states.items() if isinstance(s, CongestionState)}
    silent = {h: s for h, s in states.items() if not isinstance(s, CongestionState)}
    note = ("; not asked: " + ", ".join(f"{h} ({why})" for h, why in sorted(silent.items()))) if silent else ""
    out: dict[str, AlgorithmStatus] = {}
    if not probed:
        why = "not checked: no endpoint answered the probe" + note
        for name in sorted(set(KERNEL_BUILTIN) | set(ALGORITHMS)):
            out[name] = AlgorithmStatus(name, "bpf" if name in ALGORITHMS else "kernel", False, why,
                                        "bbr (the kernel's; which BBR: not checked)" if name == "bbr" else "")
        return out
    kernels = sorted({s.kernel for s in probed.values()})
    listed = sorted({n for s in probed.values() for n in s.available if n not in ALGORITHMS})
    for name in listed:
        missing = sorted(h for h, s in probed.items() if name not in s.available)
        label = _kernel_label(name, probed)
        if missing:
            out[name] = AlgorithmStatus(name, "kernel", False, f"not in the kernel of {', '.join(missing)}" + note,
                                        label)
        else:
            out[name] = AlgorithmStatus(name, "kernel", True, f"built into the kernel ({', '.join(kernels)})" + note,
                                        label)
    for name, alg in sorted(ALGORITHMS.items()):
        problems = []
        for h, s in sorted(probed.items()):
            if not s.btf:
                problems.append(f"{h}: the kernel has no BTF")
            if kernel_version(s.kernel) < MIN_KERNEL:
                problems.append(f"{h}: kernel {s.kernel} is older than {'.'.join(map(str, MIN_KERNEL))}")
            if not s.bpftool:
                problems.append(f"{h}: bpftool is not installed")
        if build_problem:
            problems.append(f"controller: {build_problem}")
        if problems:
            out[name] = AlgorithmStatus(name, "bpf", False, "ctl's BPF program cannot load: " + "; ".join(problems))
        else:
            what = f"variant of {alg.variant_of} for analysis, " if alg.is_variant else ""
            out[name] = AlgorithmStatus(name, "bpf", True, f"ctl's BPF program ({what}{alg.source}, {alg.reference}), "
                                                           "loaded for each run" + note)
    return out


def endpoint_hosts(inv: Inventory) -> list[str]:
    return sorted(h for h, x in inv.hosts.items() if x.role is Role.ENDPOINT)


def probe_over_ssh(inv: Inventory, hosts: Sequence[str]) -> dict[str, CongestionState | str]:
    """The read-only probe on each endpoint (it changes nothing on a host)."""
    async def go() -> dict[str, CongestionState | str]:
        pool = SSHPool(inv, CommandLog(None), hosts)
        out: dict[str, CongestionState | str] = {}
        try:
            connected = await pool.connect_all()
            ok = []
            for h, r in connected.items():
                if r.failed:
                    exc = r.exception
                    out[h] = exc.one_line() if isinstance(exc, CtlError) else repr(exc)
                else:
                    ok.append(h)

            async def one(h: str) -> CongestionState | str:
                drv = CongestionDriver(h, "reproduce-probe")
                try:
                    return drv.parse_state(await run_all(pool[h], drv.read_commands()))
                except CtlError as exc:
                    return exc.one_line()
            for h, st in zip(ok, await asyncio.gather(*(one(h) for h in ok)), strict=True):
                out[h] = st
        finally:
            await pool.close()
        return out
    return asyncio.run(go())


def probe_local(hosts: Sequence[str]) -> dict[str, CongestionState | str]:
    """A virtual rack that is down: its endpoints are namespaces of this machine's kernel, so the
    same probe run here answers for all of them (read-only)."""
    p = subprocess.run([sys.executable, "-c", HOSTCTL_SOURCE, "probe"], capture_output=True, text=True, timeout=60)
    try:
        st: CongestionState | str = parse_probe(p.stdout)
    except CtlError as exc:
        st = exc.one_line()
    return {h: st for h in hosts}


def check_build(inv: Inventory) -> str | None:
    """Why the controller cannot build ctl's BPF programs for the rack (None: it can). A virtual
    rack's kernel is this machine's: the build is made (or reused) now, where every run finds it.
    A physical rack's kernels are built for at their first run; here only the toolchain is checked."""
    if not ALGORITHMS:
        return None
    if inv.kind == "virtual":
        try:
            build(LOCAL_BTF, state_dir() / "congestion")
        except BuildError as exc:
            return str(exc)
        return None
    from shutil import which
    missing = [t for t in ("clang", "bpftool") if which(t) is None and not Path("/usr/sbin", t).exists()]
    return f"{', '.join(missing)} not installed (scripts/setup.sh installs them)" if missing else None


Probe = Callable[[Inventory, Sequence[str]], Mapping[str, CongestionState | str]]


def available_algorithms(inv: Inventory, *, probe: Probe | None = None,
                         build_check: Callable[[Inventory], str | None] | None = None,
                         hosts: Sequence[str] | None = None) -> dict[str, AlgorithmStatus]:
    """Every congestion control the rack can run (and those it cannot, with the reason)."""
    hosts = list(hosts) if hosts is not None else endpoint_hosts(inv)
    states = (probe or probe_over_ssh)(inv, hosts)
    return assess(states, (build_check or check_build)(inv))


def summary_line(statuses: Mapping[str, AlgorithmStatus]) -> str:
    """One line: what runs, what does not, and the variants for analysis apart (never a paper's row)."""
    def variant(name: str) -> bool:
        return name in ALGORITHMS and ALGORITHMS[name].is_variant
    ok = [s.shown for s in statuses.values() if s.runnable and not variant(s.name)]
    no = [s.shown for s in statuses.values() if not s.runnable and not variant(s.name)]
    va = [s.name + ("" if s.runnable else " (not runnable)") for s in statuses.values() if variant(s.name)]
    return (f"runnable: {', '.join(ok) or 'none'}" + (f"; not runnable: {', '.join(no)}" if no else "")
            + (f"; variants for analysis: {', '.join(va)}" if va else ""))


def dumps(statuses: Mapping[str, AlgorithmStatus]) -> str:
    return json.dumps({n: s.to_json() for n, s in statuses.items()}, indent=1)
