"""dnpipe shaper: the dummynet-faithful userspace pipe of the virtual rack (bridges/dnpipe/).

One `dnpipe run` process per link forwards between the bridge host's two ports; each
direction is a pipe with dummynet semantics (loss on arrival, drop-tail queue bounded in
slots or bytes, serialization at bw, then the fixed delay). This driver configures it
through `dnpipe ctl --control SOCK ...` over SSH like any other back-end: plan (pure),
apply, read back (`show`, JSON), verify every field exactly, restore what it found.

The forwarder starts with dummynet's defaults (unlimited, no delay, no loss, 50 slots):
that state reads back as "unshaped". A pipe may run dummynet's RED/GRED, marking ECN-capable
packets CE with `ecn` (PipeConfig.red; the forwarder's `--red/--gred/--ecn`, read back from
`show`'s "aqm").
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from bridges.base import (
    Capabilities,
    CounterSample,
    CounterStream,
    Direction,
    PipeConfig,
    PipeKey,
    Red,
    ShaperBase,
    ShaperState,
    check_capabilities,
    diff_pipe,
    register,
)
from controller.commands import Command, CommandResult
from controller.errors import ParseError, UnsupportedShaping
from controller.inventory import Inventory
from controller.units import Queue

DEFAULT = PipeConfig()  # what a fresh forwarder runs with: dummynet's defaults
MAX_BW = 10 * 10**9
MAX_DELAY_US = 10_000_000
MAX_SLOTS = 100_000
MIN_QUEUE_BYTES, MAX_QUEUE_BYTES = 1500, 64 * 1024 * 1024


def _dir(d: Direction) -> str:
    return d.value  # the forwarder names them forward / reverse too


@register("dnpipe")
class DnpipeShaper(ShaperBase):
    """Shaper for a Linux bridge host running one dnpipe forwarder per link."""

    kind = "dnpipe"

    def __init__(self, inventory: Inventory, host: str):
        self.inventory = inventory
        self.host = host
        spec = inventory.hosts[host].shaper
        assert spec is not None and spec.kind == "dnpipe"
        self.binary = str(spec.binary)
        self.control_dir = Path(str(spec.control_dir))
        self.links = {n: l for n, l in sorted(inventory.links.items()) if l.bridge == host}

    def socket(self, link: str) -> str:
        return str(self.control_dir / f"{link}.sock")

    def ctl(self, link: str, *args: str) -> tuple[str, ...]:
        return (self.binary, "ctl", "--control", self.socket(link), *args)

    # ---- pure pieces --------------------------------------------------------------------

    def capabilities(self) -> Capabilities:
        return Capabilities(rate=True, delay=True, loss=True, queue_slots=True, queue_bytes=True,
                            max_bw_bps=MAX_BW, max_delay_us=MAX_DELAY_US, red=True)

    def pipes(self) -> list[PipeKey]:
        return [(n, d) for n in self.links for d in Direction]

    def validate(self, desired: Mapping[PipeKey, PipeConfig]) -> None:
        for (link, d), p in desired.items():
            if link not in self.links:
                raise UnsupportedShaping(f"{self.host}: link {link} is not on this bridge")
            where = f"{self.host} (dnpipe) link {link} {d.value}"
            if p.queue.slots is not None and p.queue.slots > MAX_SLOTS:
                raise UnsupportedShaping(f"{where}: queue {p.queue.slots} slots above the forwarder's {MAX_SLOTS}")
            if p.queue.bytes is not None and not MIN_QUEUE_BYTES <= p.queue.bytes <= MAX_QUEUE_BYTES:
                raise UnsupportedShaping(f"{where}: queue {p.queue.bytes} bytes outside "
                                         f"{MIN_QUEUE_BYTES}..{MAX_QUEUE_BYTES}")
            if p.red is not None:
                limit, unit = (MAX_SLOTS, "slots") if p.queue.slots is not None else (MAX_QUEUE_BYTES, "bytes")
                if p.red.max_th > limit:
                    raise UnsupportedShaping(f"{where}: {p.red.describe()}: max_th {p.red.max_th} {unit} is above "
                                             f"the forwarder's {limit} (thresholds are in the queue's unit)")
            if p.burst_bytes:
                raise UnsupportedShaping(f"{where}: dnpipe has no burst (like dummynet's default of 0)")
        check_capabilities(self.kind, self.capabilities(), self.host, desired)

    def read_commands(self) -> list[Command]:
        return [Command(self.ctl(link, "show"), timeout=10, note=f"read pipes of {link}",
                        assume=json.dumps(_assumed_show())) for link in self.links]

    def parse_state(self, results: list[CommandResult]) -> ShaperState:
        pipes: dict[PipeKey, PipeConfig | None] = {}
        counters: dict[PipeKey, dict[str, int]] = {}
        details: dict[str, Any] = {}
        for r, link in zip(results, self.links):
            data = parse_show(r.stdout)
            details[link] = {"pid": data.get("pid"), "a": data.get("a"), "b": data.get("b"),
                             "uptime_s": data.get("uptime_s"), "cpu_ns": _cpu_ns(data)}
            for d in Direction:
                pipe = data["pipes"][_dir(d)]
                cfg = config_of(pipe["config"])
                pipes[(link, d)] = None if cfg == DEFAULT else cfg
                counters[(link, d)] = {k: int(v) for k, v in pipe.get("counters", {}).items()}
        return ShaperState(pipes, {" ".join(r.argv): r.stdout for r in results}, details, counters)

    def set_argv(self, link: str, d: Direction | None, p: PipeConfig, clear_red: bool = False) -> tuple[str, ...]:
        """`clear_red`: the pipe runs RED now and `p` has none (back to drop-tail)."""
        q = ("--queue-slots", str(p.queue.slots)) if p.queue.slots is not None else \
            ("--queue-bytes", str(p.queue.bytes))
        if p.red is not None:
            aqm: tuple[str, ...] = ("--gred" if p.red.gentle else "--red", p.red.spec()) + \
                (("--ecn", "1") if p.red.ecn else ())
        else:
            aqm = ("--aqm", "droptail") if clear_red else ()
        return self.ctl(link, "set", "--dir", "both" if d is None else _dir(d), "--bw", str(p.bw_bps or 0),
                        "--delay-us", str(p.delay_us), "--plr", repr(float(p.plr)), *q, *aqm)

    def plan(self, desired: Mapping[PipeKey, PipeConfig], observed: ShaperState) -> list[Command]:
        out: list[Command] = []
        for link in self.links:
            want = {d: desired.get((link, d)) for d in Direction}
            have = {d: observed.pipes.get((link, d)) or DEFAULT for d in Direction}
            todo = {d: w for d, w in want.items() if w is not None and w != have[d]}
            if not todo:
                continue
            if len(todo) == 2 and todo[Direction.FORWARD] == todo[Direction.REVERSE]:
                p = todo[Direction.FORWARD]
                clear = any(h.red is not None for h in have.values())
                out.append(Command(self.set_argv(link, None, p, clear_red=clear), mutates=True,
                                   note=f"{link} both: {p.describe()}"))
                continue
            for d, p in todo.items():
                out.append(Command(self.set_argv(link, d, p, clear_red=have[d].red is not None), mutates=True,
                                   note=f"{link} {d.value}: {p.describe()}"))
        return out

    def verify(self, desired: Mapping[PipeKey, PipeConfig | None], observed: ShaperState) -> list[str]:
        out: list[str] = []
        for key, want in desired.items():
            got = observed.pipes.get(key)
            if want is not None and want == DEFAULT:
                want = None
            out += diff_pipe(want, got, label=f"{key[0]} {key[1].value}")
        return out

    def plan_restore(self, before: ShaperState, now: ShaperState) -> list[Command]:
        desired = {k: (before.pipes.get(k) or DEFAULT) for k in self.pipes()}
        return self.plan(desired, now)

    def expected_state(self, before: ShaperState, desired: Mapping[PipeKey, PipeConfig]) -> ShaperState:
        """What the host would read back after plan(desired, before) ran (pure; for dry runs)."""
        pipes = dict(before.pipes)
        pipes.update({k: (None if v == DEFAULT else v) for k, v in desired.items()})
        return ShaperState(pipes, dict(before.raw), dict(before.details), {})

    queue_limit_names = ("the forwarder's slot maximum", "the forwarder's byte maximum")

    @classmethod
    def queue_limits(cls, inventory: Inventory, host: str) -> dict[str, int]:
        return {"slot_limit": MAX_SLOTS, "byte_limit": MAX_QUEUE_BYTES}

    def counter_streams(self, interval_s: float) -> list[CounterStream]:
        """One `watch` process per link: a JSON line of counters per interval, host-stamped. The
        forwarder's CPU time (`cpu_ns`, the whole process: both directions, every thread) goes with
        each direction's counters as `proc_cpu_ns` (absent from a forwarder older than the field)."""
        out = []
        for i, link in enumerate(self.links):
            def parse_line(line: str, link: str = link) -> list[CounterSample]:
                data = json.loads(line)
                t = int(data["t_ns"])
                cpu = _cpu_ns(data)
                extra = {"proc_cpu_ns": cpu} if cpu is not None else {}
                return [CounterSample((link, d), {**{k: int(v) for k, v in data["pipes"][_dir(d)].items()}, **extra},
                                      t) for d in Direction]
            out.append(CounterStream(f"shaper{i}", self.ctl(link, "watch", "--interval-ms",
                                                            str(max(1, round(interval_s * 1000)))), parse_line))
        return out

    def metadata_commands(self) -> list[Command]:
        host = self.inventory.hosts[self.host]
        cmds = [Command(("uname", "-a"), timeout=10, note="kernel"),
                Command((self.binary, "--version"), timeout=10, check=False, note="dnpipe version")]
        for i in host.interfaces:
            cmds.append(Command(("ethtool", "-k", i.name), timeout=10, check=False, note=f"offloads of {i.name}"))
        cmds.append(Command(("ip", "-j", "-s", "link", "show"), timeout=10, check=False, note="ports and counters"))
        return cmds


def parse_show(text: str) -> dict:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ParseError(f"dnpipe show: not JSON: {exc}") from None
    if data.get("version") != 1 or "pipes" not in data:
        raise ParseError(f"dnpipe show: unexpected document (version {data.get('version')!r})")
    return data


def _cpu_ns(data: Mapping[str, Any]) -> int | None:
    """The forwarder process's CPU time in ns from `show` / `watch` (None: not there, or not a
    non-negative integer)."""
    v = data.get("cpu_ns")
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def config_of(c: Mapping[str, Any]) -> PipeConfig:
    queue = Queue(slots=int(c["queue_slots"])) if c.get("queue_slots") is not None else \
        Queue(bytes=int(c["queue_bytes"]))
    bw = int(c["bw_bps"])
    a = c.get("aqm")  # absent (or null) on a drop-tail pipe and from forwarders before RED
    red = None
    if a:
        if a.get("type") not in ("red", "gred"):
            raise ParseError(f"dnpipe show: unknown aqm type {a.get('type')!r}")
        red = Red(w_q=float(a["w_q"]), min_th=int(a["min_th"]), max_th=int(a["max_th"]), max_p=float(a["max_p"]),
                  gentle=a["type"] == "gred", ecn=bool(a.get("ecn")))
    return PipeConfig(bw_bps=bw or None, delay_us=int(c["delay_us"]), plr=float(c["plr"]), queue=queue, red=red)


def _assumed_show() -> dict:
    """What a dry run assumes a forwarder at its defaults prints."""
    pipe = {"config": {"bw_bps": 0, "delay_us": 0, "plr": 0, "queue_slots": 50, "queue_bytes": None},
            "counters": {}}
    return {"version": 1, "pid": 0, "a": "", "b": "", "uptime_s": 0, "pipes": {"forward": pipe, "reverse": pipe}}
