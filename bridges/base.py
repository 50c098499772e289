"""The link-shaper contract shared by every bridge back-end (Linux tc, dnpipe, dummynet).

A link has two directions, each its own pipe with dummynet semantics: random loss on
arrival (plr), a drop-tail queue bounded in slots or bytes, serialization at `bw`, then a
fixed `delay`. A back-end turns desired pipe states into commands (pure), reads the state
back, verifies it field by field, and restores exactly what it found.

The I/O loop (`apply`, `restore`) lives here once; back-ends only provide pure pieces and
the read commands.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, Callable, ClassVar, Iterable, Mapping, Protocol

from controller.commands import Command, CommandResult, DryRunSession, Session, run_all
from controller.errors import ParameterError, UnsupportedShaping, VerifyError
from controller.registry import Registry
from controller.units import (
    Conversion,
    Queue,
    format_delay,
    format_probability,
    format_rate,
    parse_delay_us,
    parse_probability,
    parse_queue,
    parse_rate,
)


class Direction(str, Enum):
    FORWARD = "forward"  # side a -> side b
    REVERSE = "reverse"  # side b -> side a


DEFAULT_QUEUE = Queue(slots=50)  # dummynet's default


RED_SCALE = 1 << 16  # dummynet holds w_q and max_p in fixed point with 16 fractional bits


def _frac(text: str, name: str, what: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise ParameterError(f"{what}: {name} {text!r} is not a number") from None
    if v != v or v in (float("inf"), float("-inf")):
        raise ParameterError(f"{what}: {name} {text!r} is not a finite number")
    return v


def _slots_or_bytes(text: str, name: str, what: str) -> int:
    if not text.isascii() or not text.isdigit():
        raise ParameterError(f"{what}: {name} {text!r} is not a whole number (slots, or bytes for a byte queue)")
    return int(text)


@dataclass(frozen=True)
class Red:
    """dummynet's RED on a pipe's queue, as `ipfw pipe N config ... red|gred w_q/min_th/max_th/max_p
    [ecn]` sets it: w_q (the averaging weight) and max_p (the drop probability reached at max_th)
    are fractions; min_th and max_th are in the queue's unit, slots or (for a byte queue) bytes.
    gentle: GRED (above max_th the probability rises on to 1 at 2 x max_th instead of jumping to 1).
    ecn: an ECN-capable packet is marked CE instead of dropped (with `ecn` dummynet decides so for
    every packet once the average is above min_th). The checks are ipfw(8)'s."""

    w_q: float
    min_th: int
    max_th: int
    max_p: float
    gentle: bool = False
    ecn: bool = False

    def __post_init__(self) -> None:
        what = "gred" if self.gentle else "red"
        if not 0.0 < self.w_q <= 1.0:
            raise ParameterError(f"{what}: w_q {self.w_q} is outside 0 < w_q <= 1")
        if int(self.w_q * RED_SCALE) == 0:
            raise ParameterError(f"{what}: w_q {self.w_q} is below 1/65536 (0 in dummynet's fixed point)")
        if not 0.0 <= self.max_p <= 1.0:
            raise ParameterError(f"{what}: max_p {self.max_p} is outside 0 <= max_p <= 1")
        if self.max_th <= 0:
            raise ParameterError(f"{what}: max_th must be > 0")
        if self.min_th < 0 or (self.min_th >= self.max_th and not self.ecn) or self.min_th > self.max_th:
            rel = "<=" if self.ecn else "<"
            raise ParameterError(f"{what}: min_th {self.min_th} must be {rel} max_th {self.max_th}")

    @classmethod
    def parse(cls, text: str, *, gentle: bool = False, ecn: bool = False, what: str = "--red") -> "Red":
        """`W_Q/MIN_TH/MAX_TH/MAX_P`, e.g. `0.002/5/15/0.1` (thresholds in the queue's unit)."""
        parts = str(text).split("/")
        if len(parts) != 4:
            raise ParameterError(f"{what}: {text!r} is not W_Q/MIN_TH/MAX_TH/MAX_P (e.g. 0.002/5/15/0.1)")
        return cls(w_q=_frac(parts[0], "w_q", what), min_th=_slots_or_bytes(parts[1], "min_th", what),
                   max_th=_slots_or_bytes(parts[2], "max_th", what), max_p=_frac(parts[3], "max_p", what),
                   gentle=gentle, ecn=ecn)

    def spec(self) -> str:
        """The W_Q/MIN_TH/MAX_TH/MAX_P argument, fractions exact (repr round-trips a float)."""
        return f"{self.w_q!r}/{self.min_th}/{self.max_th}/{self.max_p!r}"

    def describe(self) -> str:
        return f"{'gred' if self.gentle else 'red'} {self.spec()}" + (" ecn" if self.ecn else "")

    def __str__(self) -> str:
        return self.describe()

    def to_json(self) -> dict:
        return {"w_q": self.w_q, "min_th": self.min_th, "max_th": self.max_th, "max_p": self.max_p,
                "gentle": self.gentle, "ecn": self.ecn}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Red":
        return cls(w_q=float(d["w_q"]), min_th=int(d["min_th"]), max_th=int(d["max_th"]), max_p=float(d["max_p"]),
                   gentle=bool(d.get("gentle", False)), ecn=bool(d.get("ecn", False)))


def parse_aqm(spec: str | None) -> "Red | None | bool":
    """`ctl link set`'s queue management: None (unchanged), False (back to drop-tail) or a Red,
    from "droptail" or "red:W/MIN/MAX/P[:ecn]" / "gred:...[:ecn]"."""
    if spec is None:
        return None
    if spec == "droptail":
        return False
    kind, _, rest = spec.partition(":")
    body, _, flag = rest.partition(":")
    if kind not in ("red", "gred") or flag not in ("", "ecn"):
        raise ParameterError(f"queue management {spec!r} is not droptail, red:W/MIN/MAX/P[:ecn] or gred:...")
    return Red.parse(body, gentle=kind == "gred", ecn=flag == "ecn", what=f"--{kind}")


@dataclass(frozen=True)
class PipeConfig:
    """Desired (or observed) state of one direction of a link."""

    bw_bps: int | None = None  # None: unlimited
    delay_us: int = 0
    plr: float = 0.0
    queue: Queue = DEFAULT_QUEUE
    burst_bytes: int | None = None
    mask: str | None = None    # dummynet per-flow queues, e.g. "dst-ip 0xffffffff"
    sched: str | None = None   # dummynet scheduler type: fifo, wf2q+, rr, qfq, fq_codel, fq_pie
    red: Red | None = None     # RED/GRED (optionally marking ECN) instead of plain drop-tail

    def __post_init__(self) -> None:
        if self.bw_bps is not None and self.bw_bps <= 0:
            raise ParameterError(f"bw: {self.bw_bps} bit/s is not positive (omit it for unlimited)")
        if self.delay_us < 0:
            raise ParameterError("delay: negative")
        if not 0.0 <= self.plr <= 1.0:
            raise ParameterError(f"loss: {self.plr} is outside 0..1 (0 %..100 %)")

    @property
    def unlimited(self) -> bool:
        return self.bw_bps is None and self.delay_us == 0 and self.plr == 0.0

    def describe(self) -> str:
        parts = [f"bw {format_rate(self.bw_bps)}", f"delay {format_delay(self.delay_us)}",
                 f"loss {format_probability(self.plr)}", f"queue {self.queue}"]
        if self.burst_bytes is not None:
            parts.append(f"burst {self.burst_bytes}B")
        if self.mask:
            parts.append(f"mask {self.mask}")
        if self.sched:
            parts.append(f"sched {self.sched}")
        if self.red:
            parts.append(self.red.describe())
        return ", ".join(parts)

    def to_json(self) -> dict:
        d = {"bw_bps": self.bw_bps, "delay_us": self.delay_us, "plr": self.plr,
             "queue": self.queue.to_json(), "burst_bytes": self.burst_bytes,
             "mask": self.mask, "sched": self.sched}
        if self.red is not None:  # only then: a drop-tail pipe's record is as before RED existed
            d["red"] = self.red.to_json()
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "PipeConfig":
        return cls(bw_bps=d.get("bw_bps"), delay_us=int(d.get("delay_us", 0)), plr=float(d.get("plr", 0.0)),
                   queue=Queue.from_json(d.get("queue") or DEFAULT_QUEUE.to_json()),
                   burst_bytes=d.get("burst_bytes"), mask=d.get("mask"), sched=d.get("sched"),
                   red=Red.from_json(d["red"]) if d.get("red") else None)

    @classmethod
    def from_args(cls, bw: str | None = None, delay: str | None = None, plr: str | None = None,
                  queue: str | None = None, base: "PipeConfig | None" = None,
                  aqm: str | None = None) -> "PipeConfig":
        """Build from user strings (`20M`, `50ms`, `0.01%`, `50` / `64KB`, parse_aqm's `red:...`);
        unset fields keep `base`."""
        p = base or PipeConfig()
        changes: dict[str, Any] = {}
        if bw is not None:
            changes["bw_bps"] = None if str(bw).lower() in ("0", "unlimited", "none") else parse_rate(bw, what="bw")
        if delay is not None:
            changes["delay_us"] = parse_delay_us(delay, what="delay")
        if plr is not None:
            changes["plr"] = parse_probability(plr, what="loss")
        if queue is not None:
            changes["queue"] = parse_queue(queue, what="queue")
        red = parse_aqm(aqm)
        if red is not None:
            changes["red"] = red or None
        return replace(p, **changes)


PipeKey = tuple[str, Direction]  # (link name, direction)


@dataclass
class ShaperState:
    """What a back-end read from its host: per pipe the observed config (None: not shaped)."""

    pipes: dict[PipeKey, PipeConfig | None]
    raw: dict[str, str] = field(default_factory=dict)      # command text -> output, for the run record
    details: dict[str, Any] = field(default_factory=dict)  # back-end specific parsed objects
    counters: dict[PipeKey, dict[str, int]] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"pipes": {f"{k[0]}.{k[1].value}": (v.to_json() if v else None) for k, v in self.pipes.items()},
                "raw": self.raw, "details": self.details,
                "counters": {f"{k[0]}.{k[1].value}": v for k, v in self.counters.items()}}


@dataclass(frozen=True)
class Capabilities:
    rate: bool = True
    delay: bool = False
    loss: bool = False
    queue_slots: bool = True
    queue_bytes: bool = True
    max_bw_bps: int | None = None
    max_delay_us: int | None = None
    masks: bool = False
    red: bool = False          # RED/GRED with ECN marking on a pipe's queue


@dataclass(frozen=True)
class CounterSample:
    """One sample of a pipe's counters from a shaper's own counter stream."""

    key: PipeKey
    counters: dict[str, int]
    t_ns: int
    host_clock: bool = True   # stamped by the host (the clock offset applies), else on arrival here


@dataclass(frozen=True)
class CounterStream:
    """A long-running command printing samples, and its line parser. `name` names the stream
    in the run record (`raw/<host>/<name>-counters.txt`)."""

    name: str
    argv: tuple[str, ...]
    parse_line: Callable[[str], list[CounterSample]]


class Shaper(Protocol):
    """A link-shaper back-end bound to one bridge host and the links it carries.

    The first seven methods are what every back-end must provide. The hooks after them are
    optional in effect: `ShaperBase` gives each a documented default, and the runner and the
    telemetry call them without asking whether they exist."""

    kind: ClassVar[str]
    host: str

    def capabilities(self) -> Capabilities: ...

    def validate(self, desired: Mapping[PipeKey, PipeConfig]) -> None:
        """Raise UnsupportedShaping / ParameterError before anything is sent."""

    def read_commands(self) -> list[Command]:
        """Read-only commands whose outputs `parse_state` turns into a ShaperState."""

    def parse_state(self, results: list[CommandResult]) -> ShaperState: ...

    def plan(self, desired: Mapping[PipeKey, PipeConfig], observed: ShaperState) -> list[Command]:
        """Commands that take the host from `observed` to `desired` (pure)."""

    def verify(self, desired: Mapping[PipeKey, PipeConfig | None], observed: ShaperState) -> list[str]:
        """Differences by field between desired and observed; empty when equal (pure)."""

    def plan_restore(self, before: ShaperState, now: ShaperState) -> list[Command]:
        """Commands that bring back exactly `before` (pure)."""

    # ---- hooks with a default (ShaperBase) ---------------------------------------------------

    @classmethod
    def queue_limits(cls, inventory: Any, host: str) -> dict[str, int]:
        """The largest queue the back-end can hold, {"slot_limit", "byte_limit"}, for BDP sizing."""

    def conversions(self, desired: Mapping[PipeKey, PipeConfig]) -> list[Conversion]:
        """Values of `desired` this back-end holds differently (a rate or a loss rounded to its
        resolution), one entry each, for the run's warnings and manifest (pure); default none."""

    def metadata_commands(self) -> list[Command] | None:
        """Read-only commands describing the host for the run record; None: the runner's
        generic host metadata (kernel, interfaces) applies."""

    def dry_run_assumptions(self) -> list[str]:
        """What a dry run assumes about this host because the inventory does not say (its
        `facts`), one sentence each, for the one warning line per assumption `ctl run
        --dry-run` prints (pure); default none."""

    def expected_state(self, before: ShaperState, desired: Mapping[PipeKey, PipeConfig]) -> ShaperState:
        """What the host would read back after plan(desired, before) ran (pure; dry runs)."""

    def verify_restore(self, before: ShaperState, now: ShaperState) -> list[str]:
        """Differences beyond the per-direction pipes after a restore (rules, pipes ctl did not
        use, foreign qdiscs); default: none."""

    def counters_probe(self) -> list[dict]:
        """Commands the host's 10 Hz sampler runs each tick ({"name", "argv"}); default none."""

    def parse_counters(self, probe_name: str, text: str) -> dict[PipeKey, dict[str, int]]:
        """Per-pipe counters from one probe's output (for `counters_probe`)."""

    def counter_streams(self, interval_s: float) -> list[CounterStream]:
        """Long-running counter streams of the shaper's own (dnpipe `watch`, an ipfw loop);
        default none."""


class ShaperBase:
    """The defaults of the optional `Shaper` hooks. Back-ends subclass it."""

    kind: ClassVar[str]
    host: str

    # How the two numbers of `queue_limits` are called on the host (named in BDP-queue warnings).
    queue_limit_names: ClassVar[tuple[str, str]] = ("slot limit", "byte limit")

    @classmethod
    def queue_limits(cls, inventory: Any, host: str) -> dict[str, int]:
        return {"slot_limit": 100_000, "byte_limit": 1 << 30}

    def conversions(self, desired: Mapping[PipeKey, PipeConfig]) -> list[Conversion]:
        return []

    def metadata_commands(self) -> list[Command] | None:
        return None

    def dry_run_assumptions(self) -> list[str]:
        return []

    def expected_state(self, before: ShaperState, desired: Mapping[PipeKey, PipeConfig]) -> ShaperState:
        return ShaperState({**before.pipes, **desired}, dict(before.raw), dict(before.details), {})

    def verify_restore(self, before: ShaperState, now: ShaperState) -> list[str]:
        return []

    def counters_probe(self) -> list[dict]:
        return []

    def parse_counters(self, probe_name: str, text: str) -> dict[PipeKey, dict[str, int]]:
        return {}

    def counter_streams(self, interval_s: float) -> list[CounterStream]:
        return []


SHAPERS: Registry = Registry("shaper kind", UnsupportedShaping)
SHAPERS.lazy("tc", "bridges.tc:TcShaper", "Linux tc (tbf + pfifo/bfifo): rate and queue, no delay or loss")
SHAPERS.lazy("dnpipe", "bridges.dnpipe_driver:DnpipeShaper", "the dnpipe forwarder: rate, delay, loss, queue")
SHAPERS.lazy("dummynet", "bridges.dummynet.shaper:DummynetShaper", "FreeBSD ipfw/dummynet pipes")


def register(kind: str):
    """Class decorator of a shaper back-end: names it and registers it (duplicates raise)."""
    def deco(cls: type) -> type:
        cls.kind = kind
        SHAPERS.add(kind, cls)
        return cls
    return deco


def shaper_class(kind: str) -> type:
    return SHAPERS.get(kind)


def registered_kinds() -> list[str]:
    return SHAPERS.names()


def check_capabilities(kind: str, caps: Capabilities, host: str,
                       desired: Mapping[PipeKey, PipeConfig]) -> None:
    """The common part of `validate`: refuse what the back-end cannot do, naming the pipe."""
    for (link, direction), p in desired.items():
        where = f"{host} ({kind}) link {link} {direction.value}"
        if p.delay_us and not caps.delay:
            raise UnsupportedShaping(f"{where}: delay {format_delay(p.delay_us)} requested but the {kind} "
                                     "back-end cannot delay packets (use a dnpipe or dummynet bridge)")
        if p.plr and not caps.loss:
            raise UnsupportedShaping(f"{where}: loss {format_probability(p.plr)} requested but the {kind} "
                                     "back-end cannot drop packets at random")
        if p.queue.bytes is not None and not caps.queue_bytes:
            raise UnsupportedShaping(f"{where}: byte-bounded queue not supported")
        if p.queue.slots is not None and not caps.queue_slots:
            raise UnsupportedShaping(f"{where}: slot-bounded queue not supported")
        if p.bw_bps is not None and caps.max_bw_bps is not None and p.bw_bps > caps.max_bw_bps:
            raise UnsupportedShaping(f"{where}: bw {format_rate(p.bw_bps)} above the back-end's "
                                     f"{format_rate(caps.max_bw_bps)}")
        if caps.max_delay_us is not None and p.delay_us > caps.max_delay_us:
            raise UnsupportedShaping(f"{where}: delay {format_delay(p.delay_us)} above the back-end's "
                                     f"{format_delay(caps.max_delay_us)}")
        if (p.mask or p.sched) and not caps.masks:
            raise UnsupportedShaping(f"{where}: masks / scheduler types need a dummynet bridge")
        if p.red and not caps.red:
            raise UnsupportedShaping(f"{where}: {p.red.describe()} requested but ctl's {kind} driver has no "
                                     "RED/ECN (use a dnpipe or dummynet bridge)")


# A field's name where a person reads it: the loss rate is "loss" everywhere ctl speaks (`--loss`, the scenarios'
# parameter); `plr` stays the key in records and --json, and dummynet's own word in its command lines.
FIELD_NAMES = {"plr": "loss"}


def diff_pipe(want: PipeConfig | None, got: PipeConfig | None, *, label: str,
              bw_tolerance: float = 0.0, fields: Iterable[str] = ("bw_bps", "delay_us", "plr", "queue", "red")) -> list[str]:
    """Field-by-field differences of two pipe states, as human-readable strings."""
    if want is None and got is None:
        return []
    if want is None or got is None:
        return [f"{label}: expected {'unshaped' if want is None else want.describe()}, "
                f"found {'unshaped' if got is None else got.describe()}"]
    out = []
    for f in fields:
        a, b = getattr(want, f), getattr(got, f)
        if f == "bw_bps" and a is not None and b is not None and bw_tolerance:
            if abs(a - b) <= bw_tolerance * a:
                continue
        elif f == "plr" and abs(a - b) <= 1e-9:
            continue
        if a != b:
            show = {"bw_bps": format_rate, "delay_us": format_delay, "plr": format_probability,
                    "red": lambda r: r.describe() if r else "drop-tail"}.get(f, str)
            out.append(f"{label}: {FIELD_NAMES.get(f, f)} expected {show(a)}, found {show(b)}")
    return out


async def read_state(shaper: Shaper, session: Session) -> ShaperState:
    results = await run_all(session, shaper.read_commands())
    state = shaper.parse_state(results)
    # Keep every read command's exact output: the state can be re-parsed from a run record
    # (crash recovery restores from it).
    state.raw.update({" ".join(r.argv): r.stdout for r in results})
    return state


def state_from_record(shaper: Shaper, host: str, recorded: Mapping[str, Any]) -> ShaperState:
    """Re-parse a state saved in a run record (its `raw` outputs) with the shaper's own parser."""
    raw = recorded.get("raw") or {}
    results = []
    for c in shaper.read_commands():
        key = " ".join(c.argv)
        if key not in raw:
            raise ValueError(f"{host}: the record has no output of `{key}`")
        results.append(CommandResult(host, c.argv, 0, raw[key], ""))
    state = shaper.parse_state(results)
    state.raw.update(raw)
    return state


async def apply(shaper: Shaper, session: Session, desired: Mapping[PipeKey, PipeConfig],
                before: ShaperState | None = None) -> tuple[ShaperState, ShaperState]:
    """Validate, read, plan, apply, read back, verify. Returns (before, after)."""
    shaper.validate(desired)
    if before is None:
        before = await read_state(shaper, session)
    await run_all(session, shaper.plan(desired, before))
    after = await read_state(shaper, session)
    diffs = shaper.verify(desired, after)
    if diffs and not isinstance(session, _dry_types()):
        raise VerifyError(session.host, "shaping", diffs)
    return before, after


async def restore(shaper: Shaper, session: Session, before: ShaperState,
                  now: ShaperState | None = None) -> ShaperState:
    """Bring back `before` exactly, then prove it by reading back. `now` replaces the first
    read (a dry run passes the state its apply would have left)."""
    if now is None:
        now = await read_state(shaper, session)
    await run_all(session, shaper.plan_restore(before, now))
    after = await read_state(shaper, session)
    diffs = shaper.verify(before.pipes, after)
    # Back-ends that own more than per-direction pipes (dummynet: rules, pipes ctl did not
    # use) compare the whole range they manage.
    diffs += shaper.verify_restore(before, after)
    if diffs and not isinstance(session, _dry_types()):
        raise VerifyError(session.host, "restore", diffs)
    return after


def shaper_fidelity(before: dict, after: dict) -> dict:
    """How faithfully a shaper kept its schedule during the run, from its own counters where it
    has them (dnpipe: departure lateness; every shaper: drops), as deltas over the run."""
    out = {}
    for key, a in after.items():
        b = before.get(key, {})
        d = {k: a[k] - b.get(k, 0) for k in a if isinstance(a[k], int) and not k.startswith(("queue_", "delay_line"))}
        entry = {k: v for k, v in d.items() if k in ("tx_pkts", "drop_plr_pkts", "drop_queue_pkts",
                                                     "drop_nomem_pkts", "oversize_pkts", "rx_kernel_drops",
                                                     "red_drop_pkts", "marked_pkts")}
        if "tx_late_ns_sum" in d and d.get("tx_pkts"):
            entry["mean_late_us"] = round(d["tx_late_ns_sum"] / d["tx_pkts"] / 1000, 3)
        if "tx_late_ns_max" in a:
            entry["max_late_us_since_start"] = round(a["tx_late_ns_max"] / 1000, 3)
        if entry:
            out[f"{key[0]}.{key[1].value}"] = entry
    return out


def _dry_types() -> tuple[type, ...]:
    return (DryRunSession,)
