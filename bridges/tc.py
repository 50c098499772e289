"""Linux tc shaper: rate + bounded drop-tail queue (tbf with a pfifo/bfifo child).

Direction forward (a -> b) is shaped on the egress of the bridge's b port, reverse on the
egress of its a port. This back-end cannot delay or drop at random (no netem on these
kernels); asking for either is an UnsupportedShaping error before anything is sent.

ctl only ever builds one form, `root 1: tbf` + `10: pfifo|bfifo` under `1:1`, and only
replaces what it can restore exactly: a port's default qdisc (removing ours brings the
default back) or that same ctl form. Any other root qdisc is left alone and the run
refused.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Mapping

from bridges.base import (
    Capabilities,
    Direction,
    PipeConfig,
    PipeKey,
    ShaperBase,
    ShaperState,
    check_capabilities,
    diff_pipe,
    register,
)
from controller.commands import Command, CommandResult
from controller.errors import UnsupportedShaping
from controller.inventory import Inventory
from controller.parsers import tc as tc_parser
from controller.parsers.tc import Qdisc
from controller.units import Conversion, Queue

# Qdiscs a port has when nobody configured it; deleting the root qdisc returns to them.
# (A root pfifo is not among them: someone configured it, and deleting it would not restore it.)
DEFAULT_KINDS = frozenset({"noqueue", "pfifo_fast", "mq", "fq_codel", "fq"})
ETH_OVERHEAD = 14
MTU = 1500


def tbf_burst_bytes(bw_bps: int) -> int:
    """The smallest burst that still lets tbf reach its rate: 1 ms of bytes, at least two
    full frames. Dummynet has no burst at all; a small one keeps the two comparable."""
    return max(2 * (MTU + ETH_OVERHEAD), -(-bw_bps // 8 // 1000))


@register("tc")
class TcShaper(ShaperBase):
    """Shaper for a Linux bridge host with tbf (see module doc)."""

    kind = "tc"

    def __init__(self, inventory: Inventory, host: str):
        self.inventory = inventory
        self.host = host
        self.links = {n: l for n, l in sorted(inventory.links.items()) if l.bridge == host}

    # ---- pure pieces --------------------------------------------------------------------

    def capabilities(self) -> Capabilities:
        return Capabilities(rate=True, delay=False, loss=False, queue_slots=True, queue_bytes=True,
                            max_bw_bps=100 * 10**9)

    def port(self, key: PipeKey) -> str:
        link = self.links[key[0]]
        return link.b_port if key[1] is Direction.FORWARD else link.a_port

    def pipes(self) -> list[PipeKey]:
        return [(n, d) for n in self.links for d in Direction]

    def validate(self, desired: Mapping[PipeKey, PipeConfig]) -> None:
        for key in desired:
            if key[0] not in self.links:
                raise UnsupportedShaping(f"{self.host}: link {key[0]} is not on this bridge")
        check_capabilities(self.kind, self.capabilities(), self.host, desired)

    def conversions(self, desired: Mapping[PipeKey, PipeConfig]) -> list[Conversion]:
        """tc keeps a rate in whole bytes per second: a rate that is not a multiple of 8 bit/s is
        held rounded down (which is also what verify() accepts as read back)."""
        out = []
        for key, want in desired.items():
            if want.bw_bps is not None and want.bw_bps % 8:
                held = want.bw_bps // 8 * 8
                out.append(Conversion(f"rate of {key[0]} {key[1].value} on {self.host} (tc, {self.port(key)})",
                                      f"{want.bw_bps:,} bit/s", f"{held:,} bit/s ({held // 8:,} B/s)",
                                      "tc holds rates in whole bytes per second, rounded down"))
        return out

    def read_commands(self) -> list[Command]:
        ports = sorted({self.port(k) for k in self.pipes()})
        return [Command(("tc", "-j", "-s", "qdisc", "show", "dev", p), timeout=10,
                        note=f"read shaping of {p}", assume="[]") for p in ports]

    def parse_state(self, results: list[CommandResult]) -> ShaperState:
        by_port: dict[str, list[Qdisc]] = {}
        raw: dict[str, str] = {}
        for r in results:
            port = r.argv[-1]
            by_port[port] = tc_parser.parse(r.stdout, dev=port) if r.stdout.strip() else []
            raw[" ".join(r.argv)] = r.stdout
        pipes: dict[PipeKey, PipeConfig | None] = {}
        counters: dict[PipeKey, dict[str, int]] = {}
        foreign: dict[str, str] = {}
        for key in self.pipes():
            port = self.port(key)
            config, ctrs, problem = interpret_qdiscs(by_port.get(port, []))
            pipes[key] = config
            if ctrs:
                counters[key] = ctrs
            if problem:
                foreign[port] = problem
        return ShaperState(pipes, raw, {"foreign": foreign}, counters)

    def plan(self, desired: Mapping[PipeKey, PipeConfig], observed: ShaperState) -> list[Command]:
        foreign = observed.details.get("foreign", {})
        out: list[Command] = []
        for key, want in desired.items():
            port = self.port(key)
            if port in foreign:
                raise UnsupportedShaping(f"{self.host}: port {port} has a qdisc ctl did not create "
                                         f"({foreign[port]}); ctl will not overwrite what it cannot restore")
            have = observed.pipes.get(key)
            if want.bw_bps is None:
                if have is not None:
                    out.append(self._delete(port, key))
                continue
            out += self._install(port, key, want)
        return out

    def _delete(self, port: str, key: PipeKey) -> Command:
        return Command(("tc", "qdisc", "del", "dev", port, "root"), mutates=True,
                       note=f"{key[0]} {key[1].value}: back to the default qdisc")

    def _install(self, port: str, key: PipeKey, want: PipeConfig) -> list[Command]:
        assert want.bw_bps is not None
        burst = want.burst_bytes or tbf_burst_bytes(want.bw_bps)
        # tbf needs a limit; its default child is replaced at once by the bounded fifo.
        limit = want.queue.bytes if want.queue.bytes is not None else (want.queue.slots or 50) * (MTU + ETH_OVERHEAD)
        note = f"{key[0]} {key[1].value}: {want.describe()}"
        child = (("pfifo", "limit", str(want.queue.slots)) if want.queue.slots is not None
                 else ("bfifo", "limit", str(want.queue.bytes)))
        return [
            Command(("tc", "qdisc", "replace", "dev", port, "root", "handle", "1:", "tbf", "rate",
                     f"{want.bw_bps}bit", "burst", str(burst), "limit", str(limit)), mutates=True, note=note),
            Command(("tc", "qdisc", "replace", "dev", port, "parent", "1:1", "handle", "10:", *child),
                    mutates=True, note=note),
        ]

    def verify(self, desired: Mapping[PipeKey, PipeConfig | None], observed: ShaperState) -> list[str]:
        out: list[str] = []
        for key, want in desired.items():
            if want is not None and want.bw_bps is None:
                want = None  # unlimited: no qdisc of ours
            got = observed.pipes.get(key)
            if want is not None and got is not None and want.bw_bps is not None and got.bw_bps is not None \
                    and got.bw_bps == want.bw_bps // 8 * 8:
                # tc keeps rates in whole bytes/s: the rate it holds is the request rounded down to
                # a multiple of 8 bit/s, which is what the kernel enforces (recorded as read back).
                got = replace(got, bw_bps=want.bw_bps)
            out += diff_pipe(want, got, label=f"{key[0]} {key[1].value} ({self.port(key)})",
                             fields=("bw_bps", "queue"))
        return out

    def verify_restore(self, before: ShaperState, now: ShaperState) -> list[str]:
        """A port that holds a qdisc ctl cannot read as its own after restore is not restored."""
        was = before.details.get("foreign", {})
        return [f"port {p}: {what} after restore" for p, what in now.details.get("foreign", {}).items()
                if was.get(p) != what]

    def plan_restore(self, before: ShaperState, now: ShaperState) -> list[Command]:
        out: list[Command] = []
        was_foreign = before.details.get("foreign", {})
        now_foreign = now.details.get("foreign", {})
        for key in self.pipes():
            port = self.port(key)
            if port in was_foreign:
                continue  # never touched (plan refuses such a port)
            was, is_ = before.pipes.get(key), now.pipes.get(key)
            # A qdisc that was not there before and is not ctl's complete form is ctl's own
            # change cut short (e.g. the controller died between `tbf 1:` and its fifo): the
            # rack lock means nothing else ran here. Restoring `before` removes or replaces it.
            half_applied = port in now_foreign
            if was is None:
                if is_ is not None or half_applied:
                    out.append(self._delete(port, key))
            elif was != is_ or half_applied:
                out += self._install(port, key, was)
        return _dedupe(out)

    def expected_state(self, before: ShaperState, desired: Mapping[PipeKey, PipeConfig]) -> ShaperState:
        """What the host would read back after plan(desired, before) ran (pure; for dry runs)."""
        pipes = dict(before.pipes)
        for key, want in desired.items():
            pipes[key] = None if want.bw_bps is None else replace(
                want, burst_bytes=want.burst_bytes or tbf_burst_bytes(want.bw_bps))
        return ShaperState(pipes, dict(before.raw), dict(before.details), {})

    def counters_probe(self) -> list[dict]:
        """What the bridge's sampler runs each tick: one `tc -s` read of every shaped port."""
        return [{"name": f"qdisc:{p}", "argv": ["tc", "-j", "-s", "qdisc", "show", "dev", p]}
                for p in sorted({self.port(k) for k in self.pipes()})]

    def parse_counters(self, probe_name: str, text: str) -> dict[PipeKey, dict[str, int]]:
        port = probe_name.split(":", 1)[1]
        _, ctrs, _ = interpret_qdiscs(tc_parser.parse(text, dev=port) if text.strip() else [])
        return {k: ctrs for k in self.pipes() if self.port(k) == port and ctrs}


def _dedupe(commands: list[Command]) -> list[Command]:
    """Both directions of a port map to one qdisc tree: say each command once."""
    seen: set[tuple[str, ...]] = set()
    out = []
    for c in commands:
        if c.argv not in seen:
            seen.add(c.argv)
            out.append(c)
    return out


def interpret_qdiscs(qdiscs: list[Qdisc]) -> tuple[PipeConfig | None, dict[str, int], str | None]:
    """(config, counters, problem) of one port's qdiscs; config None = unshaped default."""
    qdiscs = [q for q in qdiscs if not q.ingress]  # ingress/clsact do not shape what leaves the port
    roots = [q for q in qdiscs if q.root]
    if not roots:
        return None, {}, None
    root = roots[0]
    if all(q.kind in DEFAULT_KINDS for q in qdiscs):
        return None, {}, None
    if root.kind != "tbf" or root.handle != "1:":
        return None, {}, f"root {root.kind} {root.handle}"
    children = [q for q in qdiscs if q.parent == "1:1"]
    if len(children) != 1 or children[0].kind not in ("pfifo", "bfifo") or children[0].handle != "10:" \
            or len(qdiscs) != 2:
        return None, {}, f"tbf with unexpected children ({','.join(q.kind for q in qdiscs)})"
    child = children[0]
    queue = (Queue(slots=int(child.options["limit_packets"])) if child.kind == "pfifo"
             else Queue(bytes=int(child.options["limit_bytes"])))
    config = PipeConfig(bw_bps=int(root.options["rate_bps"]), queue=queue,
                        burst_bytes=int(root.options.get("burst_bytes") or 0) or None)
    ctrs: dict[str, int] = {}
    if root.stats is not None and child.stats is not None:
        ctrs = {"tx_bytes": root.stats.bytes, "tx_pkts": root.stats.packets,
                "drop_queue_pkts": child.stats.drops, "queue_bytes": child.stats.backlog_bytes,
                "queue_pkts": child.stats.qlen, "overlimits": root.stats.overlimits}
    return config, ctrs, None
