"""The congestion-control endpoint driver: makes the algorithms a run asks for available on an
endpoint, and takes back exactly what it loaded (nodes.base.EndpointDriver).

Desired state: the congestion controls the host's connections will use. Kernel built-ins
(reno, cubic, bbr, ...) must be in `tcp_available_congestion_control`; the ones ctl ships
(nodes.congestion.catalog) are loaded from objects built for this host's kernel, through the
host-side program `hostctl` (one constant script, data in argv): registered or shared under
the run's holder id, listed in `tcp_allowed_congestion_control` (so a namespace default can
name them too), and on restore left again, unregistered when the last holder leaves.
Everything here is pure: commands out, parsed state in.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from controller.commands import Command, CommandResult
from controller.errors import ParameterError, ParseError
from nodes.congestion import hostctl
from nodes.congestion.catalog import ALGORITHMS, paper_algorithms, variants

HOSTCTL_SOURCE = open(hostctl.__file__).read()
# bpf_rdonly_cast (6.2) and mptcp_subflow_context.subflow_id (6.6): older kernels fail the build anyway,
# this refuses them first with a clear reason.
MIN_KERNEL = (6, 6)


def hostctl_command(*args: str, note: str, mutates: bool = False, assume: str = "", stdin: str | None = None,
                    check: bool = True) -> Command:
    return Command(("python3", "-c", HOSTCTL_SOURCE, *args), timeout=60, note=note, mutates=mutates,
                   assume=assume, stdin=stdin, check=check)


@dataclass(frozen=True)
class LoadObject:
    """An object built for this host's kernel, and where it is on the host."""

    name: str
    sha256: str
    host_path: str


@dataclass
class CongestionState:
    kernel: str
    btf: bool
    bpftool: str | None
    available: list[str]
    allowed: list[str]
    registered: dict[str, int]
    holders: dict[str, dict]
    boot_id: str = ""
    raw: dict[str, str] = field(default_factory=dict)
    bbr_version: str = ""           # /sys/module/tcp_bbr/version ("" upstream: the kernel's bbr is v1)

    def to_json(self) -> dict:
        return {"kernel": self.kernel, "btf": self.btf, "bpftool": self.bpftool, "available": self.available,
                "allowed": self.allowed, "registered": self.registered, "holders": self.holders,
                "boot_id": self.boot_id, "bbr_version": self.bbr_version, "raw": self.raw}

    def held_by(self, holder: str) -> list[str]:
        return sorted(n for n, e in self.holders.items() if holder in e.get("holders", []))


ASSUMED_PROBE = json.dumps({"ok": True, "kernel": "6.18.0", "arch": "x86_64", "boot_id": "", "btf": True,
                            "bpftool": "/usr/sbin/bpftool", "available": ["reno", "cubic", "bbr"],
                            "allowed": ["reno", "bbr"], "registered": {}, "holders": {}, "bbr_version": ""})


def parse_probe(text: str) -> CongestionState:
    try:
        d = json.loads(text.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise ParseError(f"congestion-control probe: not JSON: {text[:200]!r}") from None
    if not d.get("ok"):
        raise ParseError(f"congestion-control probe failed: {d.get('error')}")
    return CongestionState(str(d.get("kernel", "")), bool(d.get("btf")), d.get("bpftool"), list(d.get("available", [])),
                           list(d.get("allowed", [])), {str(k): int(v) for k, v in (d.get("registered") or {}).items()},
                           dict(d.get("holders") or {}), str(d.get("boot_id", "")), {"probe": text},
                           _bbr_version(d.get("bbr_version")))


def _bbr_version(v: object) -> str:
    """The kernel's BBR module version as a host reported it: digits only (anything else is not one)."""
    s = str(v or "").strip()
    return s if s.isdigit() and len(s) <= 4 else ""


def kernel_version(release: str) -> tuple[int, int]:
    parts = release.split(".")
    try:
        return int(parts[0]), int("".join(c for c in parts[1] if c.isdigit()) or 0)
    except (IndexError, ValueError):
        return (0, 0)


class CongestionDriver:  # implements nodes.base.EndpointDriver[frozenset[str], CongestionState]
    def __init__(self, host: str, holder: str, objects: Mapping[str, LoadObject] | None = None):
        self.host = host
        self.holder = holder
        self.objects = dict(objects or {})

    def read_commands(self) -> list[Command]:
        return [hostctl_command("probe", note="congestion controls: kernel, BPF support, loaded by ctl",
                                assume=ASSUMED_PROBE)]

    def parse_state(self, results: list[CommandResult]) -> CongestionState:
        return parse_probe(results[0].stdout)

    def state_from_record(self, recorded: Mapping[str, Any]) -> CongestionState:
        return parse_probe((recorded.get("raw") or {}).get("probe", ""))

    def check(self, desired: frozenset[str], observed: CongestionState) -> None:
        """Refuse, before anything changes, a congestion control this host cannot run."""
        for name in sorted(desired):
            if name in ALGORITHMS:
                problems = []
                if not observed.btf:
                    problems.append("the kernel has no BTF (/sys/kernel/btf/vmlinux)")
                if kernel_version(observed.kernel) < MIN_KERNEL:
                    problems.append(f"kernel {observed.kernel} is older than "
                                    f"{'.'.join(map(str, MIN_KERNEL))}")
                if not observed.bpftool:
                    problems.append("bpftool is not installed")
                if problems:
                    raise ParameterError(f"{self.host}: congestion control {name} is a BPF program ctl loads, but "
                                         + "; ".join(problems))
                if name not in self.objects:
                    raise ParameterError(f"{self.host}: no {name} object built for kernel {observed.kernel}")
            elif name not in observed.available:
                raise ParameterError(f"{self.host}: congestion control {name} not available (this kernel offers: "
                                     f"{' '.join(observed.available) or 'none'}; ctl can load: "
                                     f"{' '.join(sorted(paper_algorithms()))}; variants for analysis: "
                                     f"{' '.join(sorted(variants()))})")

    def plan(self, desired: frozenset[str], observed: CongestionState) -> list[Command]:
        out = []
        for name in sorted(n for n in desired if n in ALGORITHMS):
            if self.holder in observed.holders.get(name, {}).get("holders", []):
                continue
            o = self.objects[name]
            out.append(hostctl_command("load", name, o.sha256, o.host_path, self.holder, mutates=True,
                                       note=f"load the {name} congestion control (BPF) for this run"))
        return out

    def verify(self, desired: frozenset[str], observed: CongestionState) -> list[str]:
        diffs = []
        for name in sorted(desired):
            if name not in observed.available:
                diffs.append(f"congestion control {name} not available after loading")
            if name in ALGORITHMS:
                entry = observed.holders.get(name, {})
                if self.holder not in entry.get("holders", []):
                    diffs.append(f"{name}: this run is not among its holders")
                elif entry.get("sha256") != self.objects[name].sha256:
                    diffs.append(f"{name}: loaded object {str(entry.get('sha256'))[:16]} is not this run's "
                                 f"{self.objects[name].sha256[:16]}")
        return diffs

    def expected_state(self, before: CongestionState, desired: frozenset[str]) -> CongestionState:
        holders = {k: dict(v) for k, v in before.holders.items()}
        available = list(before.available)
        for name in sorted(n for n in desired if n in ALGORITHMS):
            e = holders.setdefault(name, {"id": 0, "sha256": self.objects[name].sha256, "holders": []})
            e["holders"] = list(e.get("holders", [])) + [self.holder]
            if name not in available:
                available.append(name)
        return CongestionState(before.kernel, before.btf, before.bpftool, available, list(before.allowed),
                               dict(before.registered), holders, before.boot_id, bbr_version=before.bbr_version)

    def plan_restore(self, before: CongestionState, now: CongestionState) -> list[Command]:
        return [hostctl_command("unload", name, self.holder, mutates=True,
                                note=f"this run leaves {name}; unregistered when no other run holds it")
                for name in now.held_by(self.holder)]

    @staticmethod
    def _unregistered(results: list[CommandResult]) -> list[dict]:
        """The unload commands' answers that say the program was unregistered (this run was the
        last to leave it), as hostctl printed them (its last line, a JSON object)."""
        out = []
        for r in results:
            if r.argv[3:4] != ("unload",) or not r.stdout.strip():
                continue
            try:
                d = json.loads(r.stdout.strip().splitlines()[-1])
            except ValueError:
                continue
            if isinstance(d, dict) and d.get("action") == "unregistered":
                out.append(d)
        return out

    @staticmethod
    def _count(v: Any) -> int | None:
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    def conns_left(self, results: list[CommandResult]) -> dict[str, int | None]:
        """From the unload commands' answers: for each program this run was the last to leave,
        the entries its coupling map still held (None: not known)."""
        return {str(d.get("name")): self._count(d.get("conns_left")) for d in self._unregistered(results)}

    def coupling_refused(self, results: list[CommandResult]) -> dict[str, int | None]:
        """From the unload commands' answers: for each program this run was the last to leave,
        the subflows it refused to couple because their slot was a live sibling's (None: not known)."""
        return {str(d.get("name")): self._count(d.get("coupling_refused")) for d in self._unregistered(results)}

    def subflows_reaped(self, results: list[CommandResult]) -> dict[str, int | None]:
        """From the unload commands' answers: for each program this run was the last to leave,
        the subflows it took out of their connection itself because the kernel freed their socket
        without `.release` (None: not known, or an older hostctl)."""
        return {str(d.get("name")): self._count(d.get("subflows_reaped")) for d in self._unregistered(results)}

    def hystart_exits(self, results: list[CommandResult]) -> dict[str, dict[str, int]]:
        """From the unload commands' answers: for each MCubic program this run was the last to
        leave, how often its own HyStart ended slow start, by detector ({"ack_train", "delay"});
        programs without HyStart counters (or an older hostctl) are left out."""
        out = {}
        for d in self._unregistered(results):
            h = d.get("hystart_exits")
            if isinstance(h, dict):
                counts = {k: self._count(h.get(k)) for k in ("ack_train", "delay")}
                if all(v is not None for v in counts.values()):
                    out[str(d.get("name"))] = counts
        return out

    def holders_seen(self, results: list[CommandResult]) -> dict[str, list[str] | None]:
        """From the unload commands' answers: for each program with HyStart counters this run was the
        last to leave, every holder it had while loaded (None: an entry of an older hostctl, unknown)."""
        out: dict[str, list[str] | None] = {}
        for d in self._unregistered(results):
            if isinstance(d.get("hystart_exits"), dict):
                seen = d.get("holders_seen")
                ok = isinstance(seen, list) and all(isinstance(x, str) for x in seen)
                out[str(d.get("name"))] = [str(x) for x in seen] if ok else None
        return out

    def unload_waits(self, results: list[CommandResult]) -> dict[str, dict]:
        """From the unload commands' answers: for each program this run was the last to leave, how
        long hostctl waited for the sockets still running it (`waited_s`), what still ran it at its
        limit (`in_use`: namespace -> TCP state -> sockets, or "default"), whether the kernel still
        kept the program after unregistering it (`lingering`) and its `warning` if any (an older
        hostctl answers none of these: left out)."""
        out = {}
        for d in self._unregistered(results):
            if "waited_s" not in d:
                continue
            entry = {"waited_s": d.get("waited_s"), "in_use": d.get("in_use") if isinstance(d.get("in_use"), dict)
                     else None, "lingering": bool(d.get("lingering"))}
            if isinstance(d.get("warning"), str):
                entry["warning"] = d["warning"]
            out[str(d.get("name"))] = entry
        return out

    def conns_leftovers(self, results: list[CommandResult]) -> dict[str, dict]:
        """From the unload commands' answers: for each program whose coupling map was not empty,
        what hostctl saw of the entries left (`leftovers`: the entries' tokens, counts and slots,
        the program's count of linked subflows, the sockets still running it and which tokens a
        live MPTCP socket still has), as it reported them."""
        return {str(d.get("name")): d["leftovers"] for d in self._unregistered(results)
                if isinstance(d.get("leftovers"), dict)}

    def restored_equal(self, before: CongestionState, after: CongestionState) -> list[str]:
        diffs = []
        if after.held_by(self.holder):
            diffs.append(f"still holding {', '.join(after.held_by(self.holder))}")
        for name in ALGORITHMS:
            others = [h for h in after.holders.get(name, {}).get("holders", []) if h != self.holder]
            # `available` is the kernel's list: an unregistered struct_ops map may linger a moment
            # until its last socket lets go of it, but it is no longer a congestion control.
            if name in after.available and name not in before.available and not others:
                diffs.append(f"{name} is still a congestion control of the kernel")
        return diffs
