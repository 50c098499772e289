"""The congestion controls of a run: the papers' algorithms that ctl ships as BPF programs are
built for each endpoint's kernel, loaded before traffic, checked on every subflow, and left
again afterwards (nodes.congestion.driver does the per-host work, nodes.congestion.build the
compilation).

Where objects come from: for a virtual rack every endpoint is this machine's kernel, so the
objects are built here against /sys/kernel/btf/vmlinux and used in place (the hosts share the
file system). For a physical rack each distinct kernel's BTF is read from one endpoint
(`base64 /sys/kernel/btf/vmlinux`, read-only), the objects are built on the controller
against it (cached by the BTF's sha256 in the state dir), and copied to the endpoint
(`hostctl put`, sha256-checked) as part of loading. A kernel that cannot do it is refused
before anything changes. The run record names each algorithm, its source, the sha256 of its
source and of the object that ran, the BTF it was built for, and for a variant what it is a
variant of and its reading; when the run is the last to leave a program, how many connection
entries its coupling map still held (0 unless a connection was still closing or the kernel freed a subflow without the program's .release).
"""
from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from controller.commands import Command, run_all
from controller.errors import CtlError, ParameterError, VerifyError
from controller.inventory import Inventory
from controller.settings import state_dir
from nodes.congestion import hostctl
from nodes.congestion.catalog import ALGORITHMS, kernel_label
from nodes.congestion.driver import CongestionDriver, CongestionState, LoadObject, hostctl_command

if TYPE_CHECKING:   # the builder (and its BTF check) is imported only where a run builds: not at every start-up
    from nodes.congestion.build import Build

OBJECTS_ON_HOST = "/run/ctl-cc/objects"
_SAFE = re.compile(r"[^A-Za-z0-9._-]")


# What a dry run lists where a real run puts the object it builds for the host's kernel.
DRY_RUN_SHA256 = "<sha256 of the object ctl builds at run time for this kernel>"
DRY_RUN_OBJECT = "<object ctl builds at run time for this kernel>"


def holder_id(rack: str, state_identity: str, run_id: str) -> str:
    """The id a run holds BPF programs under in a host's /run/ctl-cc/holders.json (pure).

    One kernel may serve several racks (the virtual racks of one machine, or two controllers
    driving endpoints of one host), each with its own state dir, and two of them may start runs
    with the same run id (same second, scenario and parameters): the id names the rack, the
    state dir (`state_identity`, see `state_identity()`) and the run, so no run can take
    another's hold for its own and leave a program registered, or unload it under the other."""
    return "run:" + "/".join(_SAFE.sub("_", part) or "_" for part in (rack, state_identity, run_id))


def state_identity(path: Path) -> str:
    """Which state dir this is, on this machine: its real path and inode, hashed (12 hex digits)."""
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
        ident = f"{real}\0{st.st_dev}\0{st.st_ino}"
    except OSError:
        ident = real                    # not made yet: its path alone
    return hashlib.sha256(ident.encode()).hexdigest()[:12]


def kernel_bbr(wanted: Mapping[str, frozenset[str]], states: Mapping[str, CongestionState]) -> dict[str, dict]:
    """host -> which BBR its kernel's `bbr` is, for the hosts whose connections use it (pure):
    {"version": "3" or None (upstream: no version, BBRv1), "label": "bbr (kernel: v1 here)"}."""
    return {h: {"version": states[h].bbr_version or None, "label": kernel_label("bbr", states[h].bbr_version)}
            for h in sorted(wanted) if "bbr" in wanted[h] and h in states}


def wanted_by_host(endpoints: Mapping[str, Any]) -> dict[str, frozenset[str]]:
    """host -> the congestion controls its connections use (from the plan's EndpointConfigs)."""
    return {h: frozenset(cfg.congestion_controls) for h, cfg in endpoints.items() if cfg.congestion_controls}


DATA_BYTES = 1000   # a subflow counts once it carried data (its handshake acks 1 byte)


def subflow_congestion(points: Iterable[Any], flows: Iterable[Any],
                       data_ports: Mapping[str, set[int]]) -> dict[str, dict[str, list[str]]]:
    """flow -> data subflow -> the congestion controls `ss` showed it running while it carried
    data (sender side), from the run's `subflow` points. Data subflows are those of the data
    connections iperf3 reports (`data_ports`, client ports) and the MPTCP subflows that share
    their token: never the control connection. Samples before data flows are left out: a
    socket is created with the namespace default and switched by iperf3 -C before it sends."""
    wanted = {f.name for f in flows if getattr(f, "cc", None)}
    by_sub: dict[tuple[str, str], list[Any]] = {}
    for p in points:
        if p.measurement != "subflow" or p.tags.get("role") != "client" or p.tags.get("flow") not in wanted:
            continue
        by_sub.setdefault((p.tags["flow"], p.tags["subflow"]), []).append(p)
    out: dict[str, dict[str, list[str]]] = {}
    for flow in sorted(wanted):
        ports = data_ports.get(flow, set())
        subs = {s: pts for (f, s), pts in by_sub.items() if f == flow}
        tokens = {pts[-1].fields.get("mptcp_token") for s, pts in subs.items() if _local_port(s) in ports} - {None, ""}
        for s, pts in sorted(subs.items()):
            if _local_port(s) not in ports and pts[-1].fields.get("mptcp_token") not in tokens:
                continue
            names = sorted({str(p.fields["cc"]) for p in pts
                            if p.fields.get("cc") and int(p.fields.get("bytes_acked") or 0) > DATA_BYTES})
            if names:
                out.setdefault(flow, {})[s] = names
    return out


def _local_port(subflow: str) -> int:
    return int(subflow.split("-")[0].rsplit(":", 1)[1])


def congestion_problems(observed: Mapping[str, Mapping[str, list[str]]], flows: Iterable[Any]) -> list[str]:
    """Data subflows that ran another congestion control than their flow asked for (pure)."""
    problems = []
    for f in flows:
        cc = getattr(f, "cc", None)
        if not cc:
            continue
        subs = observed.get(f.name, {})
        if not subs:
            problems.append(f"flow {f.name}: no data subflow sample shows its congestion control")
        for s, names in sorted(subs.items()):
            if names != [cc]:
                problems.append(f"flow {f.name} subflow {s} used {', '.join(names)}, not {cc}")
    return problems


class CongestionStage:
    """One run's congestion-control drivers, one per endpoint that needs any."""

    def __init__(self, run_id: str, inv: Inventory, endpoints: Mapping[str, Any], sessions: Mapping[str, Any],
                 manifest: dict, *, dry_run: bool, progress: Callable[[str], None]):
        self.holder = holder_id(str(getattr(inv, "name", "") or "rack"), state_identity(state_dir()), run_id)
        self.inv = inv
        self.wanted = wanted_by_host(endpoints)
        self.sessions = sessions
        self.manifest = manifest
        self.dry_run = dry_run
        self.progress = progress
        self.drivers: dict[str, CongestionDriver] = {}
        self.before: dict[str, CongestionState] = {}
        self.uploads: dict[str, list[Command]] = {}
        self.touched: set[str] = set()     # hosts where configure sent a change (marked before sending)

    @property
    def hosts(self) -> list[str]:
        return sorted(self.wanted)

    async def prepare(self) -> None:
        """Probe, build what is needed for each kernel, check: changes nothing on a host."""
        if not self.wanted:
            return
        probes = await asyncio.gather(*(run_all(self.sessions[h], CongestionDriver(h, self.holder).read_commands())
                                        for h in self.hosts))
        states = {h: CongestionDriver(h, self.holder).parse_state(r) for h, r in zip(self.hosts, probes, strict=True)}
        self.before = states
        need = {h: sorted(n for n in self.wanted[h] if n in ALGORITHMS) for h in self.hosts}
        builds: dict[str, Build] = {}
        for h in self.hosts:
            CongestionDriver(h, self.holder, {n: LoadObject(n, "", "") for n in need[h]}).check(self.wanted[h],
                                                                                                states[h])
        if self.dry_run:   # nothing is built or loaded: the listing shows the commands of a real run
            # Placeholders a reader cannot take for values, without quotes of their own in the listing.
            self.drivers = {h: CongestionDriver(h, self.holder, {n: LoadObject(n, DRY_RUN_SHA256, DRY_RUN_OBJECT)
                                                                 for n in need[h]}) for h in self.hosts}
            self.manifest["congestion"] = {"holder": self.holder, "wanted": {h: sorted(v) for h, v in self.wanted.items()},
                                           "algorithms": {}, "hosts": {h: {"before": st.to_json()}
                                                                       for h, st in states.items()}}
            if kernel_bbr(self.wanted, states):
                self.manifest["congestion"]["kernel_bbr"] = kernel_bbr(self.wanted, states)
            return
        for h in self.hosts:
            if need[h]:
                builds[h] = await self._build_for(h, states[h])
        record: dict[str, Any] = {}
        for h in self.hosts:
            objects = {}
            for n in need[h]:
                b = builds[h]
                local = b.object_of(n)
                on_host = str(local) if self.inv.kind == "virtual" else f"{OBJECTS_ON_HOST}/{b.sha256_of(n)}.bpf.o"
                objects[n] = LoadObject(n, b.sha256_of(n), on_host)
                if self.inv.kind != "virtual":
                    data = base64.b64encode(local.read_bytes()).decode()
                    self.uploads.setdefault(h, []).append(hostctl_command(
                        "put", b.sha256_of(n), on_host, mutates=True, stdin=data,
                        note=f"copy the {n} object built for this kernel"))
                alg = ALGORITHMS[n]
                entry = record.setdefault(n, {"source": b.objects[n]["source"],
                                              "source_sha256": b.objects[n]["source_sha256"],
                                              "defines": list(alg.defines),
                                              "object_sha256": b.sha256_of(n), "btf_id": b.btf_id,
                                              "title": alg.title, "reference": alg.reference,
                                              "variant_of": alg.variant_of, "reading": alg.reading, "hosts": []})
                if alg.specification:
                    entry["specification"] = alg.specification
                    entry["differences"] = list(alg.differences)
                entry["hosts"].append(h)
            self.drivers[h] = CongestionDriver(h, self.holder, objects)
        self.manifest["congestion"] = {
            "holder": self.holder, "wanted": {h: sorted(v) for h, v in self.wanted.items()},
            "algorithms": record, "hosts": {h: {"before": st.to_json()} for h, st in states.items()}}
        kbbr = kernel_bbr(self.wanted, states)
        if kbbr:
            self.manifest["congestion"]["kernel_bbr"] = kbbr

    async def _build_for(self, host: str, state: CongestionState) -> Build:
        dest = state_dir() / "congestion"
        if self.inv.kind == "virtual":
            return await asyncio.to_thread(_build_or_refuse, host, Path("/sys/kernel/btf/vmlinux"), dest, None)
        r = await self.sessions[host].run(Command(("base64", "-w0", "/sys/kernel/btf/vmlinux"), timeout=120,
                                                  note="this kernel's BTF, to build the congestion controls for it",
                                                  assume=""))
        if not r.stdout:
            raise ParameterError(f"{host}: could not read /sys/kernel/btf/vmlinux")
        data = base64.b64decode(r.stdout)
        btf = dest / "btf" / f"{hashlib.sha256(data).hexdigest()[:16]}.btf"
        btf.parent.mkdir(parents=True, exist_ok=True)
        if not btf.exists():
            btf.write_bytes(data)
        uname = await self.sessions[host].run(Command(("uname", "-m"), timeout=10, assume="x86_64"))
        from nodes.congestion.build import ARCHES
        return await asyncio.to_thread(_build_or_refuse, host, btf, dest, ARCHES.get(uname.stdout.strip(), "x86"))

    async def configure(self) -> dict[str, CongestionState]:
        async def one(h: str) -> CongestionState:
            drv = self.drivers[h]
            todo = self.uploads.get(h, []) + drv.plan(self.wanted[h], self.before[h])
            if todo or self.before[h].held_by(self.holder):
                self.touched.add(h)     # mark first, then change: an interruption mid-load still restores it
            await run_all(self.sessions[h], todo)
            if self.dry_run:
                return drv.expected_state(self.before[h], self.wanted[h])
            # Nothing to change: the state read before (this run, moments ago) is what is verified.
            st = drv.parse_state(await run_all(self.sessions[h], drv.read_commands())) if todo else self.before[h]
            diffs = drv.verify(self.wanted[h], st)
            if diffs:
                raise VerifyError(h, "congestion controls", diffs)
            return st
        after = await asyncio.gather(*(one(h) for h in self.hosts))
        for h, st in zip(self.hosts, after, strict=True):
            self.manifest["congestion"]["hosts"][h]["applied"] = st.to_json()
        loaded = sorted({n for h in self.hosts for n in self.wanted[h] if n in ALGORITHMS})
        if loaded:
            self.progress("congestion controls loaded (BPF): " + ", ".join(loaded))
        return dict(zip(self.hosts, after, strict=True))

    async def restore_host(self, h: str, problems: list[str]) -> None:
        drv = self.drivers.get(h)
        if drv is None or h not in self.before:
            return
        if h not in self.touched:
            # This run loaded nothing here (only the kernel's own algorithms, or what it holds
            # already): nothing to undo, and the state read before the run is its record, as a
            # configure with nothing to change verifies that state (no probe on the rack's path).
            # The record says that it was not read again (`read_back` false), not that it was.
            self.manifest["congestion"]["hosts"][h]["restored"] = self.before[h].to_json()
            self.manifest["congestion"]["hosts"][h]["read_back"] = False
            return
        if self.dry_run:
            now = drv.expected_state(self.before[h], self.wanted[h])
        else:
            now = drv.parse_state(await run_all(self.sessions[h], drv.read_commands()))
        todo = drv.plan_restore(self.before[h], now)
        answers = await run_all(self.sessions[h], todo)
        left = drv.conns_left(answers)
        if self.dry_run:
            return
        self._record_conns_left(h, left, drv.conns_leftovers(answers))
        self._record_refused(h, drv.coupling_refused(answers))
        self._record_reaped(h, drv.subflows_reaped(answers))
        self._record_unload_waits(h, drv.unload_waits(answers))
        hystart = drv.hystart_exits(answers)
        if hystart:
            # MCubic's own HyStart exits (the kernel's TcpExtTCPHystart* count only its Cubic)
            self.manifest["congestion"]["hosts"][h]["hystart_exits"] = hystart
            # who else held the program while it counted (controller/results/hystart.py attributes by it)
            self.manifest["congestion"]["hosts"][h]["holders_seen"] = drv.holders_seen(answers)
        # Read back after a change; with nothing to undo, what was just read is the proof.
        after = drv.parse_state(await run_all(self.sessions[h], drv.read_commands())) if todo else now
        diffs = drv.restored_equal(self.before[h], after)
        if diffs:
            problems.append(f"{h}: congestion controls: " + "; ".join(diffs))
        self.manifest["congestion"]["hosts"][h]["restored"] = after.to_json()
        self.manifest["congestion"]["hosts"][h]["read_back"] = True


    def _record_conns_left(self, h: str, left: Mapping[str, int | None],
                           leftovers: Mapping[str, Any] | None = None) -> None:
        """What each program's coupling map still held when this run, its last holder, unloaded
        it (hostctl waits up to 15 s for closing connections; every connection gone: 0). Above 0
        is a warning on the run, not a restore failure: a connection still closing (an MPTCP
        peer that closed with data in flight can keep its subflows probing for about a minute)
        or a subflow the kernel freed without the program's .release (the BPF how-to). What hostctl saw of such entries (their
        slots, the sockets of the host still running the algorithm) is kept beside the count,
        `conns_leftovers`, so the record tells which case it was."""
        left = self._record_counts(h, "conns_left", left, lambda name, n: (
            f"{h}: {name}: {n} connection entr{'y' if n == 1 else 'ies'} still in its coupling map "
            f"{hostctl.CONNS_WAIT_S:.0f} s after the traffic (a connection still closing, or a subflow "
            "the kernel freed without the program's .release: conns_leftovers in the record "
            "tells which; docs/howto/bpf-congestion-control.md)"))
        kept = {n: v for n, v in (leftovers or {}).items() if n in left}
        if kept:
            self.manifest["congestion"]["hosts"][h]["conns_leftovers"] = kept

    def _record_unload_waits(self, h: str, waits: Mapping[str, dict]) -> None:
        for msg in record_unload_waits(self.manifest["congestion"], h, waits):
            self.progress("warning: " + msg)

    def _record_reaped(self, h: str, reaped: Mapping[str, int | None]) -> None:
        """Subflows a coupled program took out of their connection itself because the kernel freed
        their socket without `.release` (nodes/congestion/bpf/ctl_cc.h): recorded per program
        beside conns_left. Not a warning: the map stayed honest; the count says how often."""
        self._record_counts(h, "subflows_reaped", reaped)

    def _record_refused(self, h: str, refused: Mapping[str, int | None]) -> None:
        """Subflows a coupled program refused to couple (their slot, subflow id modulo 8, was a
        live sibling's): recorded per program, and a warning on the run when any."""
        self._record_counts(h, "coupling_refused", refused, lambda name, n: (
            f"{h}: {name}: {n} subflow{'' if n == 1 else 's'} ran uncoupled: its slot (subflow id "
            "modulo 8) was held by a live sibling of the same connection"))

    def _record_counts(self, h: str, key: str, counts: Mapping[str, int | None],
                       warning: Callable[[str, int], str] | None = None) -> dict[str, int | None]:
        kept, warnings = record_counts(self.manifest["congestion"], h, key, counts, warning)
        for msg in warnings:
            self.progress("warning: " + msg)
        return kept


def record_counts(cong: dict, h: str, key: str, counts: Mapping[str, int | None],
                  warning: Callable[[str, int], str] | None = None) -> tuple[dict[str, int | None], list[str]]:
    """A count per program that hostctl reported when host `h` unloaded them, for the coupled
    programs only (bbr3 has no coupling map), recorded as cong["hosts"][h][key]; with `warning`,
    one line per non-zero count (program name, count -> text), appended to cong["warnings"].
    Returns (the counts recorded, the new warnings). Nothing recorded when no coupled program
    was unloaded here (another run still holds what this host used)."""
    kept = {n: v for n, v in counts.items() if n not in ALGORITHMS or ALGORITHMS[n].coupled}
    if not kept:
        return kept, []
    cong["hosts"][h][key] = dict(kept)
    new = [warning(name, n) for name, n in sorted(kept.items()) if n] if warning is not None else []
    if new:
        cong.setdefault("warnings", []).extend(new)
    return kept, new


def record_unload_waits(cong: dict, h: str, waits: Mapping[str, dict]) -> list[str]:
    """How long the last holder's unload on host `h` waited for sockets still running each program,
    and what still ran it at the limit (hostctl then unregisters anyway and says so), recorded per
    program as cong["hosts"][h]["unload"]; each program's warning (something still ran it, or the
    kernel kept the program) is appended to cong["warnings"] as the run's. Returns the new warnings."""
    if not waits:
        return []
    cong["hosts"][h]["unload"] = dict(waits)
    new = [f"{h}: {name}: {w['warning']}" for name, w in sorted(waits.items()) if w.get("warning")]
    if new:
        cong.setdefault("warnings", []).extend(new)
    return new


def _build_or_refuse(host: str, btf: Path, dest: Path, arch: str | None) -> Build:
    from nodes.congestion.build import BuildError, build
    try:
        return build(btf, dest, arch=arch)
    except BuildError as exc:
        raise ParameterError(f"{host}: cannot build the BPF congestion controls for its kernel: {exc}") from None


async def recover_congestion(manifest: Mapping[str, Any], sessions: Mapping[str, Any], problems: list[str]) -> None:
    """After a dead controller: leave every algorithm the interrupted run held (pure of the run
    object: everything comes from its record)."""
    cong = manifest.get("congestion") or {}
    holder = cong.get("holder")
    if not holder:
        return
    for h in sorted(cong.get("hosts", {})):
        if h not in sessions:
            continue
        drv = CongestionDriver(h, holder)
        try:
            st = drv.parse_state(await run_all(sessions[h], drv.read_commands()))
            await run_all(sessions[h], drv.plan_restore(st, st))
        except CtlError as exc:
            problems.append(f"{h}: congestion controls: {exc.one_line()}")
